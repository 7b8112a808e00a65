//! The plan's rules (external-dns's planner: ownership, policies, conflicts between sources), one test each.

use extdns_endpoint::{Changes, DomainFilter, Endpoint, ProviderSpecific, RecordType, Ttl, label};

use crate::{NotOwned, OwnerMismatch, PlanConfig, PlanOutcome, Policy, calculate, calculate_owned};

const OWNER: &str = "me";

fn a(name: &str, targets: &[&str]) -> Endpoint {
    Endpoint::new(name, RecordType::A, targets.iter().copied())
}

fn aaaa(name: &str, targets: &[&str]) -> Endpoint {
    Endpoint::new(name, RecordType::Aaaa, targets.iter().copied())
}

fn cname(name: &str, target: &str) -> Endpoint {
    Endpoint::new(name, RecordType::Cname, [target])
}

fn txt(name: &str, value: &str) -> Endpoint {
    Endpoint::new(name, RecordType::Txt, [value])
}

fn ours(e: Endpoint) -> Endpoint {
    e.with_label(label::OWNER, OWNER)
}

fn theirs(e: Endpoint) -> Endpoint {
    e.with_label(label::OWNER, "someone-else")
}

/// A current record, written for the object `r` names (its `resource` label as read back).
fn res(e: Endpoint, r: &str) -> Endpoint {
    e.with_label(label::RESOURCE, r)
}

/// A desired record of the object `r` names, as a source makes it: the object, no label.
fn of(e: Endpoint, r: &str) -> Endpoint {
    match extdns_endpoint::ObjectKey::from_resource_label(r) {
        Some(object) => e.with_ref_object(object),
        None => e,
    }
}

fn config() -> PlanConfig {
    PlanConfig {
        owner_id: OWNER.to_string(),
        ..PlanConfig::default()
    }
}

/// The plan's whole outcome, with no domain filter; the same whether the plan copies the records it
/// creates or moves them.
fn outcome(cfg: &PlanConfig, current: &[Endpoint], desired: &[Endpoint]) -> PlanOutcome {
    let copied = calculate(cfg, current, desired, &DomainFilter::default());
    let moved = calculate_owned(cfg, current, desired.to_vec(), &DomainFilter::default());
    assert_eq!(copied, moved, "moving the created records changes the plan");
    copied
}

fn plan(cfg: &PlanConfig, current: &[Endpoint], desired: &[Endpoint]) -> Changes {
    outcome(cfg, current, desired).changes.into_iter().collect()
}

/// `x.example.com` as A `1.1.1.1` and AAAA `2001:db8::1`.
fn x_a_and_aaaa() -> [Endpoint; 2] {
    [
        a("x.example.com", &["1.1.1.1"]),
        aaaa("x.example.com", &["2001:db8::1"]),
    ]
}

/// `x.example.com` A `1.1.1.1` with a configured TTL.
fn x_ttl(seconds: i64) -> Endpoint {
    a("x.example.com", &["1.1.1.1"]).with_ttl(Ttl(seconds))
}

/// The plan with one current record, ours, and one desired.
fn plan_one(current: Endpoint, desired: Endpoint) -> Changes {
    plan(&config(), &[ours(current)], &[desired])
}

fn names(eps: &[Endpoint]) -> Vec<String> {
    eps.iter()
        .map(|e| format!("{} {}", e.dns_name, e.record_type))
        .collect()
}

// --- creates ---

#[test]
fn a_desired_record_at_a_free_name_is_created() {
    let c = plan(&config(), &[], &[a("new.example.com", &["1.1.1.1"])]);
    assert_eq!(names(&c.create), ["new.example.com A"]);
    assert!(c.update_new.is_empty() && c.delete.is_empty());
}

#[test]
fn creates_are_not_owner_filtered() {
    // Desired endpoints carry no owner label; the registry adds ours when it writes.
    let c = plan(&config(), &[], &[a("new.example.com", &["1.1.1.1"])]);
    assert_eq!(c.create.len(), 1);
    assert_eq!(c.create[0].owner(), None);
}

#[test]
fn a_new_type_at_a_name_we_own_is_created() {
    let current = [ours(a("x.example.com", &["1.1.1.1"]))];
    let desired = x_a_and_aaaa();
    let c = plan(&config(), &current, &desired);
    assert_eq!(names(&c.create), ["x.example.com AAAA"]);
    assert!(c.update_new.is_empty());
}

#[test]
fn no_create_at_a_name_held_by_another_owner() {
    let current = [theirs(a("x.example.com", &["1.1.1.1"]))];
    let desired = x_a_and_aaaa();
    let out = outcome(&config(), &current, &desired);
    assert!(changes_of(&out).create.is_empty());
    assert_eq!(
        out.owner_mismatches,
        [OwnerMismatch {
            record_type: "A".into(),
            owner: OWNER.into(),
            foreign_owner: "someone-else".into(),
            domain: "example.com".into(),
        }]
    );
}

#[test]
fn no_create_at_a_name_with_an_unowned_record() {
    let current = [a("x.example.com", &["1.1.1.1"]).with_set_identifier("")];
    let desired = [aaaa("x.example.com", &["2001:db8::1"])];
    let out = outcome(&config(), &current, &desired);
    assert!(changes_of(&out).create.is_empty());
    assert_eq!(out.owner_mismatches.len(), 1);
    assert_eq!(out.owner_mismatches[0].foreign_owner, "");
}

#[test]
fn owner_mismatch_names_the_set_identifier_when_there_is_no_owner() {
    let current = [a("x.example.com", &["1.1.1.1"]).with_set_identifier("blue")];
    let desired = [aaaa("x.example.com", &["2001:db8::1"]).with_set_identifier("blue")];
    let out = outcome(&config(), &current, &desired);
    assert_eq!(out.owner_mismatches[0].foreign_owner, "blue");
}

#[test]
fn owner_mismatch_domain_keeps_two_label_names_whole() {
    let current = [theirs(a("example.com", &["1.1.1.1"]))];
    let desired = [aaaa("example.com", &["2001:db8::1"])];
    let out = outcome(&config(), &current, &desired);
    assert_eq!(out.owner_mismatches[0].domain, "example.com");
}

#[test]
fn creates_wait_until_every_record_at_the_name_is_ours() {
    let current = [
        ours(a("x.example.com", &["1.1.1.1"])),
        theirs(txt("x.example.com", "\"v=spf1\"")),
    ];
    let cfg = PlanConfig {
        managed_types: vec![RecordType::A, RecordType::Aaaa, RecordType::Txt],
        ..config()
    };
    let desired = x_a_and_aaaa();
    let c = plan(&cfg, &current, &desired);
    assert!(c.create.is_empty());
}

#[test]
fn without_an_owner_id_creates_are_never_blocked() {
    let current = [theirs(a("x.example.com", &["1.1.1.1"]))];
    let desired = x_a_and_aaaa();
    let cfg = PlanConfig {
        owner_id: String::new(),
        ..config()
    };
    let out = outcome(&cfg, &current, &desired);
    assert_eq!(names(&changes_of(&out).create), ["x.example.com AAAA"]);
    assert!(out.owner_mismatches.is_empty());
}

#[test]
fn records_of_other_owners_the_plan_looked_at_are_counted_as_not_owned() {
    let current = [
        ours(a("mine.example.com", &["1.1.1.1"])),
        theirs(a("x.example.com", &["1.1.1.2"])),
        a("manual.example.com", &["1.1.1.3"]),
        // Not looked at: a type extdns does not manage, a name outside the domain filter.
        theirs(txt("x.example.com", "\"v=spf1\"")),
        theirs(a("x.example.net", &["1.1.1.4"])),
    ];
    let cfg = PlanConfig {
        domain_filter: DomainFilter::new(&["example.com"], &[]),
        ..config()
    };
    // The cluster asks for `x`, whose A record is somebody else's.
    let desired = [a("mine.example.com", &["1.1.1.1"]), a("x.example.com", &["1.1.1.9"])];
    let out = outcome(&cfg, &current, &desired);
    assert!(out.changes.is_empty(), "{:?}", out.changes);
    assert_eq!(out.not_owned, NotOwned { records: 2, wanted: 1 });
    let noop = PlanConfig {
        owner_id: String::new(),
        ..cfg
    };
    assert_eq!(outcome(&noop, &current, &[]).not_owned, NotOwned::default());
}

// --- deletes ---

#[test]
fn an_owned_record_no_longer_desired_is_deleted() {
    let c = plan(&config(), &[ours(a("old.example.com", &["1.1.1.1"]))], &[]);
    assert_eq!(names(&c.delete), ["old.example.com A"]);
}

#[test]
fn a_record_owned_by_another_owner_is_never_deleted() {
    let c = plan(&config(), &[theirs(a("old.example.com", &["1.1.1.1"]))], &[]);
    assert!(c.delete.is_empty());
}

#[test]
fn a_record_owned_by_nobody_is_never_deleted() {
    let c = plan(&config(), &[a("old.example.com", &["1.1.1.1"])], &[]);
    assert!(c.delete.is_empty());
}

#[test]
fn an_owned_type_no_longer_desired_at_a_name_is_deleted() {
    let current = x_a_and_aaaa().map(ours);
    let c = plan(&config(), &current, &[a("x.example.com", &["1.1.1.1"])]);
    assert_eq!(names(&c.delete), ["x.example.com AAAA"]);
}

#[test]
fn deletes_are_deduplicated_by_key() {
    let current = [
        ours(a("old.example.com", &["1.1.1.1"])),
        ours(a("old.example.com", &["2.2.2.2"])),
    ];
    let c = plan(&config(), &current, &[]);
    assert_eq!(c.delete.len(), 1);
    assert_eq!(c.delete[0].targets.0, ["1.1.1.1"]);
}

#[test]
fn without_an_owner_id_everything_not_desired_is_deleted() {
    let cfg = PlanConfig {
        owner_id: String::new(),
        ..config()
    };
    let current = [
        theirs(a("x.example.com", &["1.1.1.1"])),
        a("y.example.com", &["2.2.2.2"]),
    ];
    let c = plan(&cfg, &current, &[]);
    assert_eq!(names(&c.delete), ["x.example.com A", "y.example.com A"]);
}

// --- updates ---

#[test]
fn changed_targets_update_an_owned_record() {
    let current = [ours(a("x.example.com", &["1.1.1.1"]))];
    let c = plan(&config(), &current, &[a("x.example.com", &["2.2.2.2"])]);
    assert_eq!(c.update_old, current);
    assert_eq!(c.update_new.len(), 1);
    assert_eq!(c.update_new[0].targets.0, ["2.2.2.2"]);
}

#[test]
fn update_copies_the_owner_label_from_the_current_record() {
    let c = plan_one(
        a("x.example.com", &["1.1.1.1"]),
        of(a("x.example.com", &["2.2.2.2"]), "service/default/x"),
    );
    assert_eq!(c.update_new[0].owner(), Some(OWNER));
    assert_eq!(c.update_new[0].resource().as_deref(), Some("service/default/x"));
}

#[test]
fn a_record_owned_by_another_owner_is_never_updated() {
    let current = [theirs(a("x.example.com", &["1.1.1.1"]))];
    let c = plan(&config(), &current, &[a("x.example.com", &["2.2.2.2"])]);
    assert!(c.update_old.is_empty() && c.update_new.is_empty());
}

#[test]
fn a_record_owned_by_nobody_is_never_updated() {
    let current = [a("x.example.com", &["1.1.1.1"])];
    let c = plan(&config(), &current, &[a("x.example.com", &["2.2.2.2"])]);
    assert!(c.update_old.is_empty() && c.update_new.is_empty());
}

#[test]
fn same_targets_in_another_order_or_case_are_no_update() {
    let current = [ours(Endpoint::new(
        "x.example.com",
        RecordType::Cname,
        ["LB.example.com"],
    ))];
    let c = plan(&config(), &current, &[cname("x.example.com", "lb.example.com")]);
    assert!(c.update_new.is_empty());
    let c = plan_one(
        a("y.example.com", &["2.2.2.2", "1.1.1.1"]),
        a("y.example.com", &["1.1.1.1", "2.2.2.2"]),
    );
    assert!(c.update_new.is_empty());
}

#[test]
fn a_configured_ttl_that_differs_updates_the_record() {
    let c = plan_one(x_ttl(300), x_ttl(60));
    assert_eq!(c.update_new.len(), 1);
    assert_eq!(c.update_new[0].record_ttl, Ttl(60));
}

#[test]
fn an_unset_ttl_never_updates_the_record() {
    let c = plan_one(x_ttl(300), a("x.example.com", &["1.1.1.1"]));
    assert!(c.update_new.is_empty());
}

fn ps(pairs: &[(&str, &str)]) -> ProviderSpecific {
    let mut p = ProviderSpecific::default();
    for (k, v) in pairs {
        p.set(*k, *v);
    }
    p
}

#[test]
fn a_changed_provider_specific_value_updates_the_record() {
    let c = plan_one(
        a("x.example.com", &["1.1.1.1"]).with_provider_specific(ps(&[("aws/weight", "10")])),
        a("x.example.com", &["1.1.1.1"]).with_provider_specific(ps(&[("aws/weight", "20")])),
    );
    assert_eq!(c.update_new.len(), 1);
}

#[test]
fn a_provider_specific_property_only_on_the_current_record_updates_it() {
    let c = plan_one(
        a("x.example.com", &["1.1.1.1"]).with_provider_specific(ps(&[("txt/force-update", "true")])),
        a("x.example.com", &["1.1.1.1"]),
    );
    assert_eq!(c.update_new.len(), 1);
}

#[test]
fn a_provider_specific_property_only_on_the_desired_record_updates_it() {
    let c = plan_one(
        a("x.example.com", &["1.1.1.1"]),
        a("x.example.com", &["1.1.1.1"]).with_provider_specific(ps(&[("alias", "true")])),
    );
    assert_eq!(c.update_new.len(), 1);
}

#[test]
fn provider_specific_order_does_not_matter() {
    let c = plan_one(
        a("x.example.com", &["1.1.1.1"]).with_provider_specific(ps(&[("a", "1"), ("b", "2")])),
        a("x.example.com", &["1.1.1.1"]).with_provider_specific(ps(&[("b", "2"), ("a", "1")])),
    );
    assert!(c.update_new.is_empty());
}

/// external-dns #6671: with `--migrate-from-txt-owner`, identical records must be updated too, or their
/// ownership records keep the old owner (the registry's `issue_6671` test writes such an update).
#[test]
fn issue_6671_migrating_from_an_old_owner_updates_every_owned_record_identical_ones_too() {
    let cfg = PlanConfig {
        old_owner_id: Some("old".into()),
        ..config()
    };
    // The TXT registry has already rewritten owner=old to ours.
    let current = [ours(a("x.example.com", &["1.1.1.1"]))];
    let c = plan(&cfg, &current, &[a("x.example.com", &["1.1.1.1"])]);
    assert_eq!(c.update_new.len(), 1);
    assert_eq!(c.update_new[0].owner(), Some(OWNER));
    let without = plan(&config(), &current, &[a("x.example.com", &["1.1.1.1"])]);
    assert!(without.update_new.is_empty());
}

#[test]
fn identical_records_need_no_change() {
    let c = plan_one(x_ttl(300), x_ttl(300));
    assert!(c.is_empty());
}

// --- rows: names and set identifiers ---

#[test]
fn names_are_compared_case_insensitively_and_without_trailing_dot() {
    let c = plan_one(a("X.Example.COM.", &["1.1.1.1"]), a("x.example.com", &["1.1.1.1"]));
    assert!(c.is_empty(), "{c:?}");
}

#[test]
fn unicode_names_match_their_punycode_form() {
    let c = plan_one(
        a("xn--bcher-kva.example.com", &["1.1.1.1"]),
        a("bücher.example.com", &["1.1.1.1"]),
    );
    assert!(c.is_empty(), "{c:?}");
}

#[test]
fn set_identifiers_make_separate_rows() {
    let current = [ours(a("x.example.com", &["1.1.1.1"]).with_set_identifier("blue"))];
    let desired = [
        a("x.example.com", &["1.1.1.1"]).with_set_identifier("blue"),
        a("x.example.com", &["2.2.2.2"]).with_set_identifier("green"),
    ];
    let c = plan(&config(), &current, &desired);
    assert_eq!(c.create.len(), 1);
    assert_eq!(c.create[0].set_identifier, "green");
    assert!(c.update_new.is_empty());
}

#[test]
fn a_foreign_record_in_another_set_does_not_block_a_create() {
    let current = [theirs(a("x.example.com", &["1.1.1.1"]).with_set_identifier("blue"))];
    let desired = [a("x.example.com", &["2.2.2.2"]).with_set_identifier("green")];
    assert_eq!(plan(&config(), &current, &desired).create.len(), 1);
}

// --- conflict resolution ---

#[test]
fn cname_candidates_are_discarded_when_mixed_with_other_types() {
    let desired = [
        cname("x.example.com", "lb.example.com"),
        a("x.example.com", &["1.1.1.1"]),
    ];
    let c = plan(&config(), &[], &desired);
    assert_eq!(names(&c.create), ["x.example.com A"]);
}

#[test]
fn a_current_cname_is_deleted_when_another_type_takes_its_name() {
    let current = [ours(cname("x.example.com", "lb.example.com"))];
    let desired = [
        cname("x.example.com", "lb.example.com"),
        a("x.example.com", &["1.1.1.1"]),
    ];
    let c = plan(&config(), &current, &desired);
    assert_eq!(names(&c.delete), ["x.example.com CNAME"]);
    assert_eq!(names(&c.create), ["x.example.com A"]);
}

#[test]
fn a_and_aaaa_candidates_coexist() {
    let desired = x_a_and_aaaa();
    let c = plan(&config(), &[], &desired);
    assert_eq!(names(&c.create), ["x.example.com A", "x.example.com AAAA"]);
}

#[test]
fn of_two_cname_candidates_the_lesser_target_is_created() {
    let desired = [
        cname("x.example.com", "b.example.com"),
        cname("x.example.com", "a.example.com"),
    ];
    let c = plan(&config(), &[], &desired);
    assert_eq!(c.create.len(), 1);
    assert_eq!(c.create[0].targets.0, ["a.example.com"]);
}

#[test]
fn of_two_candidates_the_one_with_fewer_targets_is_created() {
    let desired = [
        a("x.example.com", &["1.1.1.1", "2.2.2.2"]),
        a("x.example.com", &["9.9.9.9"]),
    ];
    let c = plan(&config(), &[], &desired);
    assert_eq!(c.create[0].targets.0, ["9.9.9.9"]);
}

#[test]
fn the_resource_holding_a_record_keeps_it() {
    let current = [res(
        ours(a("x.example.com", &["5.5.5.5", "6.6.6.6"])),
        "service/default/holder",
    )];
    let desired = [
        of(a("x.example.com", &["1.1.1.1"]), "service/default/newcomer"),
        of(a("x.example.com", &["5.5.5.5", "6.6.6.6"]), "service/default/holder"),
    ];
    let c = plan(&config(), &current, &desired);
    assert!(c.is_empty(), "{c:?}");
}

#[test]
fn when_the_holding_resource_is_gone_the_create_rule_picks_the_update() {
    let current = [res(ours(a("x.example.com", &["5.5.5.5"])), "service/default/gone")];
    let desired = [
        of(a("x.example.com", &["3.3.3.3", "4.4.4.4"]), "service/default/b"),
        of(a("x.example.com", &["2.2.2.2"]), "service/default/a"),
    ];
    let c = plan(&config(), &current, &desired);
    assert_eq!(c.update_new[0].resource().as_deref(), Some("service/default/a"));
}

/// A desired record of the Service `r` names that names no object, as the service source makes the records
/// of `--fqdn-target-template` and `--compatibility` (external-dns writes them without a `resource`).
fn referencing(e: Endpoint, r: &str) -> Endpoint {
    let mut e = of(e, r);
    e.ref_objects.reference_only();
    e
}

/// A target-template CNAME and an annotated Service's CNAME at one name, resolved as external-dns's
/// `ResolveUpdate` does (`plan/conflict.go`; behaviour reference §9.4): the candidate whose `resource` label
/// equals the current record's wins, a missing label compared as empty, else the least targets. The record
/// written without `resource` stays the template's though the annotated Service's target is the lesser;
/// the record the annotated Service holds stays its own though the template's target is the lesser.
#[test]
fn a_record_written_without_resource_stays_with_the_candidate_naming_no_object() {
    let templated = |target| referencing(cname("x.example.com", target), "service/default/z");
    let annotated = |target| of(cname("x.example.com", target), "service/default/a");

    let current = [ours(cname("x.example.com", "t.example.net"))];
    let c = plan(
        &config(),
        &current,
        &[annotated("a.example.net"), templated("u.example.net")],
    );
    assert_eq!(c.update_new.len(), 1, "{c:?}");
    assert_eq!(c.update_new[0].targets.0, ["u.example.net"]);
    assert_eq!(c.update_new[0].resource(), None);

    let current = [res(ours(cname("x.example.com", "b.example.net")), "service/default/a")];
    let c = plan(
        &config(),
        &current,
        &[templated("a.example.net"), annotated("b.example.net")],
    );
    assert!(c.is_empty(), "{c:?}");
}

// --- policies ---

/// The plan under `policy` of a scene that holds one of each change: a record gone from the desired ones, one
/// with a new target, one new.
fn plan_under(policy: Policy) -> Changes {
    let cfg = PlanConfig { policy, ..config() };
    let current = [
        ours(a("old.example.com", &["1.1.1.1"])),
        ours(a("x.example.com", &["1.1.1.1"])),
    ];
    let desired = [a("x.example.com", &["2.2.2.2"]), a("new.example.com", &["3.3.3.3"])];
    plan(&cfg, &current, &desired)
}

#[test]
fn upsert_only_never_deletes() {
    let c = plan_under(Policy::UpsertOnly);
    assert!(c.delete.is_empty());
    assert_eq!((c.create.len(), c.update_new.len()), (1, 1));
}

#[test]
fn create_only_never_updates_or_deletes() {
    let c = plan_under(Policy::CreateOnly);
    assert!(c.delete.is_empty() && c.update_new.is_empty() && c.update_old.is_empty());
    assert_eq!(names(&c.create), ["new.example.com A"]);
}

// --- filters ---

#[test]
fn unmanaged_record_types_are_ignored() {
    assert!(
        plan_one(
            txt("x.example.com", "\"hello\""),
            Endpoint::new("x.example.com", RecordType::Mx, ["10 mail.example.com"])
        )
        .is_empty()
    );
}

#[test]
fn managed_types_are_exact_strings() {
    let cfg = PlanConfig {
        managed_types: vec![RecordType::from("a")],
        ..config()
    };
    assert!(plan(&cfg, &[], &[a("x.example.com", &["1.1.1.1"])]).is_empty());
}

#[test]
fn extra_managed_types_are_planned() {
    let cfg = PlanConfig {
        managed_types: vec![RecordType::Txt],
        ..config()
    };
    let c = plan(
        &cfg,
        &[ours(txt("x.example.com", "\"old\""))],
        &[txt("x.example.com", "\"new\"")],
    );
    assert_eq!(c.update_new.len(), 1);
}

#[test]
fn excluded_types_win_over_managed_types() {
    let cfg = PlanConfig {
        excluded_types: vec![RecordType::Aaaa],
        ..config()
    };
    let desired = x_a_and_aaaa();
    let c = plan(&cfg, &[ours(aaaa("y.example.com", &["2001:db8::2"]))], &desired);
    assert_eq!(names(&c.create), ["x.example.com A"]);
    assert!(c.delete.is_empty());
}

#[test]
fn records_outside_the_domain_filter_are_ignored() {
    let cfg = PlanConfig {
        domain_filter: DomainFilter::new(&["example.com"], &[]),
        ..config()
    };
    let current = [ours(a("old.example.org", &["1.1.1.1"]))];
    let desired = [a("x.example.com", &["1.1.1.1"]), a("x.example.org", &["1.1.1.1"])];
    let c = plan(&cfg, &current, &desired);
    assert_eq!(names(&c.create), ["x.example.com A"]);
    assert!(c.delete.is_empty());
}

#[test]
fn records_outside_the_provider_filter_are_ignored() {
    let provider = DomainFilter::new(&["example.com"], &[]);
    let out = calculate(
        &config(),
        &[ours(a("old.example.org", &["1.1.1.1"]))],
        &[a("x.example.com", &["1.1.1.1"]), a("x.example.org", &["1.1.1.1"])],
        &provider,
    );
    assert_eq!(names(&changes_of(&out).create), ["x.example.com A"]);
    assert!(changes_of(&out).delete.is_empty());
}

#[test]
fn both_domain_filters_must_match() {
    let cfg = PlanConfig {
        domain_filter: DomainFilter::new(&["example.com"], &[]),
        ..config()
    };
    let provider = DomainFilter::new(&["a.example.com"], &[]);
    let desired = [a("x.a.example.com", &["1.1.1.1"]), a("x.b.example.com", &["1.1.1.1"])];
    let out = calculate(&cfg, &[], &desired, &provider);
    assert_eq!(names(&changes_of(&out).create), ["x.a.example.com A"]);
}

// --- output ---

#[test]
fn changes_are_sorted_by_name_type_and_set_identifier() {
    let desired = [
        a("b.example.com", &["1.1.1.1"]),
        aaaa("a.example.com", &["2001:db8::1"]),
        a("a.example.com", &["1.1.1.1"]).with_set_identifier("z"),
        a("a.example.com", &["1.1.1.1"]),
    ];
    let c = plan(&config(), &[], &desired);
    let got: Vec<_> = c
        .create
        .iter()
        .map(|e| (e.dns_name.as_str(), e.record_type.as_str(), e.set_identifier.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("a.example.com", "A", ""),
            ("a.example.com", "A", "z"),
            ("a.example.com", "AAAA", ""),
            ("b.example.com", "A", "")
        ]
    );
}

#[test]
fn update_pairs_stay_aligned_after_sorting() {
    let current = [
        ours(a("b.example.com", &["1.1.1.1"])),
        ours(a("a.example.com", &["1.1.1.1"])),
    ];
    let desired = [a("b.example.com", &["2.2.2.2"]), a("a.example.com", &["3.3.3.3"])];
    let c = plan(&config(), &current, &desired);
    assert_eq!(names(&c.update_old), names(&c.update_new));
    assert_eq!(c.update_new[0].targets.0, ["3.3.3.3"]);
}

#[test]
fn the_last_current_record_of_a_type_is_compared() {
    let current = [
        ours(a("x.example.com", &["1.1.1.1"])),
        ours(a("x.example.com", &["2.2.2.2"])),
    ];
    let c = plan(&config(), &current, &[a("x.example.com", &["2.2.2.2"])]);
    assert!(c.update_new.is_empty(), "{c:?}");
    let c = plan(&config(), &current, &[a("x.example.com", &["1.1.1.1"])]);
    assert_eq!(c.update_old.len(), 1);
    assert_eq!(c.update_old[0].targets.0, ["2.2.2.2"]);
}

#[test]
fn many_rows_are_planned_independently() {
    let current: Vec<Endpoint> = (0..1000)
        .map(|i| {
            ours(a(
                &format!("r{i}.example.com"),
                &[&format!("10.0.{}.{}", i / 256, i % 256)],
            ))
        })
        .collect();
    let mut desired: Vec<Endpoint> = current
        .iter()
        .map(|e| Endpoint {
            labels: Default::default(),
            ..e.clone()
        })
        .collect();
    desired[10].targets.0 = vec!["192.0.2.1".into()];
    desired.remove(500);
    desired.push(a("new.example.com", &["192.0.2.2"]));
    let c = plan(&config(), &current, &desired);
    assert_eq!(names(&c.update_new), ["r10.example.com A"]);
    assert_eq!(names(&c.delete), ["r500.example.com A"]);
    assert_eq!(names(&c.create), ["new.example.com A"]);
}

/// The plan's changes in external-dns's four-list shape, which the assertions here read best in.
fn changes_of(out: &PlanOutcome) -> Changes {
    out.changes.iter().cloned().collect()
}

// --- no rewrite without a cause (issue 47, item 8) ---

/// `x.example.com` A 1.1.1.1 published by the Services `a` and `b` alike, merged as the dedup merges them:
/// `first` named, the other referenced.
fn published_by_both(first: &str, second: &str) -> Endpoint {
    of(of(a("x.example.com", &["1.1.1.1"]), first), second)
}

#[test]
fn a_restart_listing_the_objects_of_a_name_in_another_order_rewrites_nothing() {
    let current = [res(ours(a("x.example.com", &["1.1.1.1"])), "service/default/b")];
    let desired = [published_by_both("service/default/a", "service/default/b")];
    let c = plan(&config(), &current, &desired);
    assert!(c.is_empty(), "{c:?}");
}

#[test]
fn an_update_keeps_naming_the_object_the_ownership_record_names() {
    // A forced update (an ownership record written again, as a take-over from external-dns's old format
    // does) and a TTL change: the record still names `b`, which still publishes it.
    let mut current = res(ours(a("x.example.com", &["1.1.1.1"])), "service/default/b");
    current.provider_specific.set("txt/force-update", "true");
    let mut desired = published_by_both("service/default/a", "service/default/b");
    desired.record_ttl = Ttl(60);
    let c = plan(&config(), &[current], &[desired]);
    assert_eq!(c.update_new.len(), 1, "{c:?}");
    let new = &c.update_new[0];
    assert_eq!(new.resource().as_deref(), Some("service/default/b"));
    assert_eq!(new.ref_objects.len(), 2, "both objects still get the record's Events");
}

#[test]
fn an_update_names_the_first_object_once_the_named_one_no_longer_publishes_the_name() {
    let current = res(ours(a("x.example.com", &["1.1.1.1"])), "service/default/gone");
    let mut desired = published_by_both("service/default/a", "service/default/b");
    desired.record_ttl = Ttl(60);
    let c = plan(&config(), &[current], &[desired]);
    assert_eq!(c.update_new[0].resource().as_deref(), Some("service/default/a"));
}

// --- hand-over between owners in two phases (issue 47, item 6) ---

/// A record owned by `owner` (not us), as the registry reads it.
fn owned_by(e: Endpoint, owner: &str) -> Endpoint {
    e.with_label(label::OWNER, owner)
}

fn released_to(e: Endpoint, to: &str) -> Endpoint {
    e.with_label(label::RELEASED_TO, to)
}

#[test]
fn a_releaser_neither_updates_nor_deletes_and_writes_the_release_once() {
    let cfg = PlanConfig {
        release_to: Some("new".into()),
        ..config()
    };
    let current = [
        ours(a("moved.example.com", &["1.1.1.1"])),
        ours(a("gone.example.com", &["2.2.2.2"])),
        released_to(ours(a("done.example.com", &["3.3.3.3"])), "new"),
    ];
    let desired = [
        a("moved.example.com", &["9.9.9.9"]),
        a("done.example.com", &["3.3.3.3"]),
        a("fresh.example.com", &["4.4.4.4"]),
    ];
    let c = plan(&cfg, &current, &desired);
    assert!(c.delete.is_empty(), "{c:?}");
    let marked: Vec<(&str, &str, Option<&str>)> = c
        .update_new
        .iter()
        .map(|e| {
            (
                e.dns_name.as_str(),
                e.targets.0[0].as_str(),
                e.label(label::RELEASED_TO),
            )
        })
        .collect();
    assert_eq!(
        marked,
        [
            ("gone.example.com", "2.2.2.2", Some("new")),
            ("moved.example.com", "1.1.1.1", Some("new"))
        ],
        "records unchanged, the release written"
    );
    assert_eq!(c.create.len(), 1, "creates go on: {c:?}");
}

#[test]
fn a_release_taken_back_is_cleared_from_the_ownership_record() {
    let current = [released_to(ours(a("x.example.com", &["1.1.1.1"])), "new")];
    let c = plan(&config(), &current, &[a("x.example.com", &["1.1.1.1"])]);
    assert_eq!(c.update_new.len(), 1, "{c:?}");
    assert_eq!(c.update_new[0].label(label::RELEASED_TO), None);
}

#[test]
fn an_adopter_takes_over_only_released_records_identical_to_its_own() {
    let cfg = PlanConfig {
        adopt_from: Some("old".into()),
        ..config()
    };
    let current = [
        res(
            released_to(owned_by(a("same.example.com", &["1.1.1.1"]), "old"), OWNER),
            "service/default/web",
        ),
        released_to(owned_by(a("differs.example.com", &["2.2.2.2"]), "old"), OWNER),
        owned_by(a("kept.example.com", &["3.3.3.3"]), "old"),
        released_to(owned_by(a("elsewhere.example.com", &["4.4.4.4"]), "old"), "another"),
    ];
    let desired = [
        of(a("same.example.com", &["1.1.1.1"]), "service/default/web"),
        a("differs.example.com", &["9.9.9.9"]),
        a("kept.example.com", &["3.3.3.3"]),
        a("elsewhere.example.com", &["4.4.4.4"]),
    ];
    let c = plan(&cfg, &current, &desired);
    assert!(c.create.is_empty() && c.delete.is_empty(), "{c:?}");
    assert_eq!(c.update_new.len(), 1, "{c:?}");
    let (old, new) = (&c.update_old[0], &c.update_new[0]);
    assert_eq!(old.owner(), Some("old"));
    assert_eq!(new.owner(), Some(OWNER));
    assert_eq!(new.label(label::RELEASED_TO), None);
    assert_eq!(
        (new.dns_name.as_str(), &new.targets),
        ("same.example.com", &old.targets)
    );
    assert_eq!(new.resource().as_deref(), Some("service/default/web"));
    // Without the flag nothing of theirs is touched.
    assert!(plan(&config(), &current, &desired).is_empty());
}

#[test]
fn an_adopter_never_deletes_a_released_record_it_does_not_ask_for() {
    let cfg = PlanConfig {
        adopt_from: Some("old".into()),
        ..config()
    };
    let current = [released_to(owned_by(a("x.example.com", &["1.1.1.1"]), "old"), OWNER)];
    assert!(plan(&cfg, &current, &[]).is_empty());
}
