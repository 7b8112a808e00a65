//! Records of objects the sources could not evaluate are kept as they are.
//!
//! When a template, an annotation or a target of one object is broken, the source publishes nothing for it
//! this sync. Planning from that would delete the object's records, taking its names offline because of a
//! typo. Instead every change that would touch a record whose `resource` label names such an object is held
//! back, until the object evaluates again (or is deleted: a deleted object is not "failed", so its records go).
//! An object failing in part (a DNSEndpoint with one bad entry among good ones) keeps only the records of
//! its failing parts; its other records follow what it asks for.
//!
//! It runs on the plan's changes, before the deletion guard ([`crate::guard`]). A record names its object
//! by the `resource` label external-dns writes; that label is read back into the object's key here, where
//! the records come in, and compared as a key.

use std::collections::HashSet;

use extdns_endpoint::Change;
use extdns_informer::{ObjectKey, ResourceKind};
use extdns_source::{Failures, Held};

/// Takes out of `changes` the deletes and updates of records owned by an object in `failed` (by the
/// `resource` label of the current record), and the creates at the names of those records (a create there
/// would collide with the record that stays). Of an object failing in part only the records its failing
/// parts name are held; an update it still asks for itself goes through.
pub(crate) fn hold_records_of_failed_objects(failed: &Failures, changes: &mut Vec<Change>) -> Vec<Change> {
    if failed.is_empty() {
        return Vec::new();
    }
    let of_failed = |c: &Change| {
        let Some(record) = c.previous() else {
            return false;
        };
        let Some(object) = record.resource().and_then(|r| ObjectKey::from_resource_label(&r)) else {
            return false;
        };
        // A label names a traefik.io router whether it was written for it or for its legacy twin.
        let held = failed.held(&object).or_else(|| match object.kind {
            ResourceKind::Traefik(t) => {
                let twin = ObjectKey::new(ResourceKind::Traefik(t.legacy_twin()?), &object.namespace, &object.name);
                failed.held(&twin)
            }
            _ => None,
        });
        match held {
            None => false,
            Some(Held::All) => true,
            Some(Held::Part(part)) => {
                let published = matches!(c, Change::Update { new, .. } if new.resource() == record.resource());
                part.keeps(&record.dns_name, &record.record_type, published)
            }
        }
    };
    let held_names: HashSet<String> = changes
        .iter()
        .filter(|c| of_failed(c))
        .filter_map(Change::previous)
        .map(|e| e.dns_name.to_ascii_lowercase())
        .collect();
    if held_names.is_empty() {
        return Vec::new();
    }
    let (held, kept): (Vec<Change>, Vec<Change>) = std::mem::take(changes).into_iter().partition(|c| {
        of_failed(c) || matches!(c, Change::Create(e) if held_names.contains(&e.dns_name.to_ascii_lowercase()))
    });
    *changes = kept;
    held
}

#[cfg(test)]
mod tests {
    use super::*;
    use extdns_endpoint::{Endpoint, RecordType, label};
    use extdns_informer::ResourceKind;
    use extdns_source::HeldRecords;

    fn a(name: &str, ip: &str, resource: &str) -> Endpoint {
        let e = Endpoint::new(name, RecordType::A, [ip]).with_label(label::OWNER, "me");
        if resource.is_empty() {
            e
        } else {
            e.with_label(label::RESOURCE, resource)
        }
    }

    fn failed(keys: &[&str]) -> Failures {
        keys.iter().filter_map(|k| ObjectKey::from_resource_label(k)).collect()
    }

    #[test]
    fn deletes_and_updates_of_a_failed_objects_records_are_held_and_the_rest_kept() {
        let mut changes = vec![
            Change::Create(a("new.example.org", "192.0.2.1", "service/default/new")),
            Change::Delete(a("web.example.org", "192.0.2.2", "service/default/web")),
            Change::update(
                a("api.example.org", "192.0.2.3", "service/default/web"),
                a("api.example.org", "192.0.2.4", "service/default/web"),
            ),
            Change::update(
                a("db.example.org", "192.0.2.5", "service/default/db"),
                a("db.example.org", "192.0.2.6", "service/default/db"),
            ),
            Change::Delete(a("old.example.org", "192.0.2.7", "service/default/old")),
        ];
        let held = hold_records_of_failed_objects(&failed(&["service/default/web"]), &mut changes);
        let names = |cs: &[Change]| -> Vec<String> { cs.iter().map(|c| c.endpoint().dns_name.clone()).collect() };
        assert_eq!(names(&held), vec!["web.example.org", "api.example.org"]);
        assert_eq!(
            names(&changes),
            vec!["new.example.org", "db.example.org", "old.example.org"]
        );
    }

    #[test]
    fn a_failed_legacy_traefik_routers_records_are_held_by_the_label_it_shares_with_traefik_io() {
        use extdns_informer::view::TraefikKind;
        let mut changes = vec![
            Change::Delete(a("old.example.org", "192.0.2.2", "ingressroute/apps/web")),
            Change::Delete(a("other.example.org", "192.0.2.3", "ingressroute/apps/other")),
        ];
        let mut failed = Failures::new();
        let legacy = ResourceKind::Traefik(TraefikKind::LegacyIngressRoute);
        failed.insert(ObjectKey::new(legacy, "apps", "web"), Some("does not decode".into()));
        let held = hold_records_of_failed_objects(&failed, &mut changes);
        assert_eq!(held.len(), 1);
        assert_eq!(held[0].endpoint().dns_name, "old.example.org");
        assert_eq!(changes.len(), 1);
    }

    #[test]
    fn a_create_at_the_name_of_a_held_record_is_held_too() {
        let cname = Endpoint::new("web.example.org", RecordType::Cname, ["lb.example.net"])
            .with_label(label::RESOURCE, "service/default/web");
        let mut changes = vec![
            Change::Delete(a("Web.example.org", "192.0.2.2", "service/default/web")),
            Change::Create(cname),
            Change::Create(a("other.example.org", "192.0.2.9", "service/default/other")),
        ];
        let held = hold_records_of_failed_objects(&failed(&["service/default/web"]), &mut changes);
        assert_eq!(held.len(), 2);
        assert_eq!(changes.len(), 1);
        assert_eq!(changes[0].endpoint().dns_name, "other.example.org");
    }

    #[test]
    fn every_record_of_a_failed_kind_is_held_listed_or_not() {
        use extdns_informer::view::RouteKind;
        let mut changes = vec![
            Change::Delete(a("db.example.org", "192.0.2.2", "tcproute/apps/db")),
            Change::Delete(a("never-seen.example.org", "192.0.2.3", "tcproute/other/gone")),
            Change::Delete(a("web.example.org", "192.0.2.4", "httproute/apps/web")),
        ];
        let mut failed = Failures::new();
        failed.insert_kind(ResourceKind::Route(RouteKind::Tcp), "TCPRoute unavailable".into());
        let held = hold_records_of_failed_objects(&failed, &mut changes);
        assert_eq!(held.len(), 2, "{held:?}");
        assert_eq!(changes.len(), 1);
        assert_eq!(changes[0].endpoint().dns_name, "web.example.org");
    }

    #[test]
    fn records_without_a_resource_label_and_no_failed_objects_change_nothing() {
        let original = vec![
            Change::Delete(a("bare.example.org", "192.0.2.2", "")),
            Change::Delete(a("web.example.org", "192.0.2.3", "service/default/web")),
        ];
        let mut changes = original.clone();
        assert!(hold_records_of_failed_objects(&failed(&["service/default/bare"]), &mut changes).is_empty());
        assert_eq!(changes, original);
        assert!(hold_records_of_failed_objects(&Failures::new(), &mut changes).is_empty());
        assert_eq!(changes, original);
    }

    /// The `resource` label of the records of the DNSEndpoint `ns/web`, which [`partly_failed`] fails in part.
    const WEB: &str = "crd/ns/web";

    fn partly_failed(held: HeldRecords) -> Failures {
        let mut failed = Failures::new();
        let object = ObjectKey::new(ResourceKind::DnsEndpoint, "ns", "web");
        failed.insert_part(object, Some("spec.endpoints[1] is skipped".into()), held);
        failed
    }

    #[test]
    fn of_an_object_failing_in_part_only_the_failing_parts_records_are_held() {
        let updated = |name: &str| Change::update(a(name, "192.0.2.1", WEB), a(name, "192.0.2.9", WEB));
        let mut changes = vec![
            Change::Delete(a("Bad.example.org.", "192.0.2.2", WEB)),
            updated("good.example.org"),
            Change::Delete(a("gone.example.org", "192.0.2.3", WEB)),
            Change::Create(a("new.example.org", "192.0.2.4", WEB)),
            // The same name, another type: not the skipped entry's record.
            Change::Delete(
                Endpoint::new("bad.example.org", RecordType::Txt, ["\"x\""]).with_label(label::RESOURCE, WEB),
            ),
        ];
        let mut held = HeldRecords::new();
        held.name("bad.example.org", Some(RecordType::A));
        let kept = hold_records_of_failed_objects(&partly_failed(held), &mut changes);
        let names = |cs: &[Change]| -> Vec<String> { cs.iter().map(|c| c.endpoint().dns_name.clone()).collect() };
        assert_eq!(names(&kept), ["Bad.example.org"]);
        assert_eq!(
            names(&changes),
            [
                "good.example.org",
                "gone.example.org",
                "new.example.org",
                "bad.example.org"
            ]
        );
    }

    #[test]
    fn a_part_of_unknown_type_holds_every_type_at_its_name() {
        let mut changes = vec![
            Change::Delete(a("bad.example.org", "192.0.2.2", WEB)),
            Change::Delete(
                Endpoint::new("bad.example.org", RecordType::Txt, ["\"x\""]).with_label(label::RESOURCE, WEB),
            ),
            Change::Delete(a("other.example.org", "192.0.2.3", WEB)),
        ];
        let mut held = HeldRecords::new();
        held.name("bad.example.org", None);
        let kept = hold_records_of_failed_objects(&partly_failed(held), &mut changes);
        assert_eq!(kept.len(), 2);
        assert_eq!(changes.len(), 1);
    }

    #[test]
    fn a_part_without_a_usable_name_holds_what_the_object_no_longer_publishes() {
        let mut changes = vec![
            Change::Delete(a("was.example.org", "192.0.2.2", WEB)),
            Change::update(
                a("still.example.org", "192.0.2.1", WEB),
                a("still.example.org", "192.0.2.9", WEB),
            ),
            // Another object's record at a name this one owned: not this object's own update.
            Change::update(
                a("taken.example.org", "192.0.2.5", WEB),
                a("taken.example.org", "192.0.2.6", "crd/ns/other"),
            ),
            Change::Delete(a("theirs.example.org", "192.0.2.7", "crd/ns/other")),
        ];
        let mut held = HeldRecords::new();
        held.uncovered();
        let kept = hold_records_of_failed_objects(&partly_failed(held), &mut changes);
        let names = |cs: &[Change]| -> Vec<String> { cs.iter().map(|c| c.endpoint().dns_name.clone()).collect() };
        assert_eq!(names(&kept), ["was.example.org", "taken.example.org"]);
        assert_eq!(names(&changes), ["still.example.org", "theirs.example.org"]);
    }
}
