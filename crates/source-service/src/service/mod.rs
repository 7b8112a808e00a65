//! The endpoints of one Service, in external-dns's order: names from the annotations, else from the
//! compatibility mode, else (or also, with `--combine-fqdn-annotation`) from the templates; targets from the
//! `target` annotation, else from what the Service's type exposes.
//!
//! [`svc`] holds what every name of a Service shares; [`headless`], [`nodeport`] and [`compat`] build the
//! type-specific targets on it, and this module puts them together.

mod compat;
mod headless;
mod nodeport;
mod svc;

use std::borrow::Cow;
use std::cell::OnceCell;

use extdns_endpoint::{Endpoint, Target};
use extdns_informer::ObjectKey;
use extdns_informer::view::Service;
use extdns_source::annotations::key;
use extdns_source::template::target_endpoints;

use crate::SOURCE_NAME;
use crate::context::{Ctx, SplitTargets};
use headless::Member;
use svc::Svc;

#[cfg(test)]
pub(crate) use compat::MATE_HOSTNAME;

/// The targets of one Service that take a look at other objects, computed at most once however many names
/// the Service has (so warnings about them appear once too).
#[derive(Default)]
struct Cached<'c> {
    node_port: OnceCell<Cow<'c, SplitTargets>>,
    headless: OnceCell<Vec<Member>>,
}

/// external-dns's `generateEndpoints`: the endpoints for one name of the Service. `internal` is set for
/// names from the `internal-hostname` annotation; `field` names where the name came from, for warnings.
fn generate<'c>(
    ctx: &'c Ctx<'_>,
    s: &Svc<'_>,
    cached: &Cached<'c>,
    hostname: &str,
    internal: bool,
    field: &str,
) -> Vec<Endpoint> {
    let Some(hostname) = s.valid_name(hostname, field) else {
        return Vec::new();
    };
    if s.unwritable_target {
        return Vec::new();
    }
    if !s.target_override.is_empty() {
        return s.emit(hostname, &s.target_override);
    }
    let svc = s.svc;
    match svc.service_type.as_str() {
        "LoadBalancer" if internal => s.emit(hostname, s.cluster_ip()),
        "LoadBalancer" => s.emit(hostname, s.load_balancer(ctx)),
        "ClusterIP" if svc.is_headless() => {
            let members = cached.headless.get_or_init(|| headless::members(ctx, s));
            headless::endpoints(s, hostname, members)
        }
        "ClusterIP" if internal || ctx.cfg.publish_internal_services => s.emit(hostname, s.cluster_ip()),
        "NodePort" => {
            let targets = cached.node_port.get_or_init(|| nodeport::targets(ctx, s));
            let mut eps = s.emit_split(hostname, targets);
            eps.extend(nodeport::srv_records(s, hostname));
            eps
        }
        "ExternalName" if !svc.external_ips.is_empty() => s.emit(hostname, &s.external_ips()),
        "ExternalName" => match svc.external_name.as_deref().filter(|n| !n.is_empty()) {
            Some(name) => s.emit(hostname, &[Target::from(name)]),
            None => Vec::new(),
        },
        _ => Vec::new(),
    }
}

/// Every endpoint one Service (`object`) asks for (before the merge across Services), appended to `out`.
/// `Err` when the Service could not be evaluated, with why when one field says it all.
pub(crate) fn endpoints(
    ctx: &Ctx<'_>,
    svc: &Service,
    object: &ObjectKey,
    out: &mut Vec<Endpoint>,
) -> Result<(), Option<String>> {
    let cfg = ctx.cfg;
    let common = &cfg.common;
    let s = Svc::new(ctx, svc, object);
    let cached = Cached::default();
    let start = out.len();
    let none_yet = |out: &Vec<Endpoint>| out.len() == start;

    if !common.ignore_hostname_annotation {
        let a = &svc.meta.annotations;
        for h in common.annotations.hostnames(a) {
            out.extend(generate(ctx, &s, &cached, &h, false, key::HOSTNAME));
        }
        for h in common.annotations.internal_hostnames(a) {
            out.extend(generate(ctx, &s, &cached, &h, true, key::INTERNAL_HOSTNAME));
        }
    }

    if none_yet(out)
        && let Some(mode) = cfg.compatibility
    {
        out.extend(referencing_only(compat::endpoints(ctx, &s, mode)));
    }

    if none_yet(out) || common.combine_fqdn_annotation {
        if let Some(t) = cfg.fqdn_target_template.as_deref() {
            out.extend(referencing_only(target_template_endpoints(&s, t, &common.annotations)));
        }
        if let Some(t) = common.fqdn_template.as_deref()
            && (none_yet(out) || common.combine_fqdn_annotation)
        {
            match t.execute(svc, SOURCE_NAME, &common.annotations) {
                Ok(hosts) => {
                    for h in hosts {
                        out.extend(generate(ctx, &s, &cached, &h, false, "FQDN template"));
                    }
                }
                Err(e) => {
                    s.fail();
                    tracing::warn!(
                        service = s.id(),
                        field = "FQDN template",
                        "template failed: {e}; the Service's records are kept as they are"
                    )
                }
            }
        }
    }

    let failed = if s.failed() { Err(s.why.clone()) } else { Ok(()) };
    if none_yet(out) {
        tracing::debug!(service = s.id(), "no endpoints could be generated");
        return failed;
    }
    // One key shared by every endpoint of the Service, and the only place it is named: the `resource`
    // label of every record naming it is rendered from it.
    for e in &mut out[start..] {
        e.ref_objects.insert(std::sync::Arc::clone(&s.object));
    }
    failed
}

/// Marks records that name none of their objects, as external-dns writes those of `--compatibility` and
/// `--fqdn-target-template` without a `resource` label (the Service is still theirs for Events). A drop-in
/// replacement writes the same ownership TXT values and resolves the same conflicts with them.
fn referencing_only(mut eps: Vec<Endpoint>) -> Vec<Endpoint> {
    for e in &mut eps {
        e.ref_objects.reference_only();
    }
    eps
}

/// `--fqdn-target-template` on the Service ([`target_endpoints`]); a template that fails on it fails the
/// Service (its records are kept as they are).
fn target_template_endpoints(
    s: &Svc<'_>,
    template: &extdns_source::template::FqdnTemplate,
    prefixes: &extdns_source::annotations::Annotations,
) -> Vec<Endpoint> {
    match target_endpoints(template, s.svc, &s.id(), SOURCE_NAME, prefixes) {
        Ok(endpoints) => endpoints,
        Err(e) => {
            s.fail();
            tracing::warn!(
                service = s.id(),
                field = "FQDN target template",
                "template failed: {e}; the Service's records are kept as they are"
            );
            Vec::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::IpAddr;
    use std::sync::Arc;

    use extdns_endpoint::label;
    use extdns_informer::{ClusterStore, ObjectKey, ResourceKind};
    use extdns_source::resolver::StaticResolver;
    use extdns_source::{Objects, Source, SourceError};

    use extdns_source::pipeline::testing::template;

    use crate::testutil::*;
    use crate::{ServiceSource, ServiceSourceConfig};

    fn cfg() -> ServiceSourceConfig {
        ServiceSourceConfig::default()
    }

    fn one(s: Sv) -> ClusterStore {
        cluster_of(vec![s.build()])
    }

    /// What `cfg` publishes for `s` alone, as [`show`] lines.
    fn published(cfg: ServiceSourceConfig, s: Sv) -> Vec<String> {
        show(&run(cfg, &one(s)))
    }

    // ------------------------------------------------------------------------------------ domain names

    #[test]
    fn hostname_annotation_names_the_records() {
        let eps = run(
            cfg(),
            &one(Sv::lb("default", "web")
                .a("hostname", "web.example.com")
                .ingress_ip("1.2.3.4")),
        );
        assert_eq!(show(&eps), owned(&["web.example.com A 1.2.3.4"]));
    }

    #[test]
    fn hostname_annotation_is_read_under_the_ga_prefix_too() {
        let eps = run(
            cfg(),
            &one(Sv::lb("default", "web")
                .g("hostname", "web.example.com")
                .ingress_ip("1.2.3.4")),
        );
        assert_eq!(show(&eps), owned(&["web.example.com A 1.2.3.4"]));
    }

    #[test]
    fn hostname_annotation_under_the_ga_prefix_wins_over_alpha() {
        let s = Sv::lb("default", "web")
            .a("hostname", "alpha.example.com")
            .g("hostname", "ga.example.com");
        assert_eq!(
            published(cfg(), s.ingress_ip("1.2.3.4")),
            owned(&["ga.example.com A 1.2.3.4"])
        );
    }

    #[test]
    fn hostname_annotation_is_a_comma_separated_list_without_spaces() {
        let s = Sv::lb("default", "web")
            .a("hostname", " a.example.com , b.example.com.")
            .ingress_ip("1.2.3.4");
        assert_eq!(
            published(cfg(), s),
            owned(&["a.example.com A 1.2.3.4", "b.example.com A 1.2.3.4"])
        );
    }

    #[test]
    fn hostname_and_internal_hostname_annotations_both_name_records() {
        let s = Sv::lb("default", "web")
            .a("hostname", "pub.example.com")
            .a("internal-hostname", "int.example.com")
            .ingress_ip("1.2.3.4");
        assert_eq!(
            published(cfg(), s),
            owned(&["int.example.com A 10.96.0.10", "pub.example.com A 1.2.3.4"])
        );
    }

    #[test]
    fn ignore_hostname_annotation_ignores_hostname_and_internal_hostname() {
        let s = Sv::lb("default", "web")
            .a("hostname", "a.example.com")
            .a("internal-hostname", "i.example.com");
        let c = sharing(|c| c.ignore_hostname_annotation = true);
        assert!(run(c, &one(s.ingress_ip("1.2.3.4"))).is_empty());
    }

    #[test]
    fn service_without_any_name_publishes_nothing() {
        assert!(run(cfg(), &one(Sv::lb("default", "web").ingress_ip("1.2.3.4"))).is_empty());
    }

    // ------------------------------------------------------------------------------------ targets

    #[test]
    fn target_annotation_overrides_the_type_targets() {
        let s = Sv::lb("default", "web")
            .a("hostname", "web.example.com")
            .a("target", "5.6.7.8")
            .ingress_ip("1.2.3.4");
        assert_eq!(published(cfg(), s), owned(&["web.example.com A 5.6.7.8"]));
    }

    #[test]
    fn target_annotation_is_split_into_a_aaaa_and_cname() {
        let s = Sv::new("default", "web", "ClusterIP")
            .g("hostname", "web.example.com")
            .g("target", "1.2.3.4, 2001:db8::1, lb.example.com.");
        assert_eq!(
            published(cfg(), s),
            owned(&[
                "web.example.com A 1.2.3.4",
                "web.example.com AAAA 2001:db8::1",
                "web.example.com CNAME lb.example.com"
            ])
        );
    }

    #[test]
    fn load_balancer_internal_hostname_uses_the_cluster_ip() {
        let s = Sv::lb("default", "web")
            .a("internal-hostname", "int.example.com")
            .ingress_ip("1.2.3.4");
        assert_eq!(published(cfg(), s), owned(&["int.example.com A 10.96.0.10"]));
    }

    #[test]
    fn load_balancer_internal_hostname_with_cluster_ip_none_has_no_targets() {
        let s = Sv::lb("default", "web")
            .cluster_ip("None")
            .a("internal-hostname", "int.example.com");
        assert!(run(cfg(), &one(s.ingress_ip("1.2.3.4"))).is_empty());
    }

    #[test]
    fn load_balancer_external_ips_win_over_the_ingress() {
        let s = Sv::lb("default", "web")
            .a("hostname", "web.example.com")
            .external_ips(&["8.8.8.8", "2001:db8::8"]);
        assert_eq!(
            published(cfg(), s.ingress_ip("1.2.3.4")),
            owned(&["web.example.com A 8.8.8.8", "web.example.com AAAA 2001:db8::8"])
        );
    }

    #[test]
    fn load_balancer_ingress_ips_and_hostnames_are_all_targets() {
        let s = Sv::lb("default", "web")
            .a("hostname", "web.example.com")
            .ingress_ip("1.2.3.4")
            .ingress_ip("2001:db8::1")
            .ingress_host("lb.cloud.example");
        assert_eq!(
            published(cfg(), s),
            owned(&[
                "web.example.com A 1.2.3.4",
                "web.example.com AAAA 2001:db8::1",
                "web.example.com CNAME lb.cloud.example"
            ])
        );
    }

    fn resolving_source() -> ServiceSource {
        let ips: Vec<IpAddr> = ["10.1.1.1", "2001:db8::5"]
            .iter()
            .filter_map(|s| s.parse().ok())
            .collect();
        let resolver = StaticResolver::new()
            .with("lb.cloud.example", ips)
            .fail("broken.cloud.example", "timeout");
        let c = configured(|c| c.resolve_load_balancer_hostname = true);
        ServiceSource::new(c, Arc::new(resolver))
    }

    #[test]
    fn resolve_service_load_balancer_hostname_publishes_its_addresses() {
        let s = Sv::lb("default", "web")
            .a("hostname", "web.example.com")
            .ingress_host("lb.cloud.example");
        let eps = run_with(&resolving_source(), &one(s));
        assert_eq!(
            show(&eps),
            owned(&["web.example.com A 10.1.1.1", "web.example.com AAAA 2001:db8::5"])
        );
    }

    #[test]
    fn resolve_failure_gives_zero_targets_for_that_hostname_only() {
        let s = Sv::lb("default", "web")
            .a("hostname", "web.example.com")
            .ingress_host("unknown.cloud.example")
            .ingress_host("broken.cloud.example")
            .ingress_host("lb.cloud.example")
            .ingress_ip("1.2.3.4");
        assert_eq!(
            show(&run_with(&resolving_source(), &one(s))),
            owned(&["web.example.com A 1.2.3.4,10.1.1.1", "web.example.com AAAA 2001:db8::5"])
        );
    }

    #[test]
    fn cluster_ip_service_publishes_nothing_by_default() {
        let s = Sv::new("default", "web", "ClusterIP")
            .cluster_ip("10.96.0.1")
            .a("hostname", "web.example.com");
        assert!(run(cfg(), &one(s)).is_empty());
    }

    #[test]
    fn publish_internal_services_publishes_the_cluster_ip() {
        let s = Sv::new("default", "web", "ClusterIP")
            .cluster_ip("10.96.0.1")
            .a("hostname", "web.example.com");
        let c = configured(|c| c.publish_internal_services = true);
        assert_eq!(published(c, s), owned(&["web.example.com A 10.96.0.1"]));
    }

    #[test]
    fn cluster_ip_internal_hostname_publishes_the_cluster_ip() {
        let s = Sv::new("default", "web", "ClusterIP")
            .cluster_ip("10.96.0.1")
            .g("internal-hostname", "i.example.com");
        assert_eq!(published(cfg(), s), owned(&["i.example.com A 10.96.0.1"]));
    }

    #[test]
    fn external_name_service_publishes_a_cname_to_its_external_name() {
        let s = Sv::new("default", "db", "ExternalName")
            .external_name("db.rds.example.")
            .a("hostname", "db.example.com");
        assert_eq!(published(cfg(), s), owned(&["db.example.com CNAME db.rds.example"]));
    }

    #[test]
    fn external_name_service_with_external_ips_publishes_them() {
        let s = Sv::new("default", "db", "ExternalName")
            .external_name("db.rds.example")
            .external_ips(&["1.1.1.1"])
            .a("hostname", "db.example.com");
        assert_eq!(published(cfg(), s), owned(&["db.example.com A 1.1.1.1"]));
    }

    // ------------------------------------------------------------------------------------ records

    #[test]
    fn records_carry_the_resource_label_and_refer_to_the_service() {
        let s = Sv::lb("team", "web")
            .a("hostname", "web.example.com")
            .ingress_ip("1.2.3.4");
        let eps = run(cfg(), &one(s));
        assert_eq!(
            eps[0].label(label::RESOURCE),
            None,
            "rendered where the record is written"
        );
        assert_eq!(eps[0].resource().as_deref(), Some("service/team/web"));
        let refs: Vec<&ObjectKey> = eps[0].ref_objects.iter().map(|k| &**k).collect();
        assert_eq!(refs, vec![&ObjectKey::new(ResourceKind::Service, "team", "web")]);
    }

    #[test]
    fn services_sharing_a_name_are_merged_and_the_first_resource_owns_it() {
        let a = Sv::lb("default", "b-web")
            .a("hostname", "web.example.com")
            .a("ttl", "300")
            .ingress_ip("2.2.2.2");
        let b = Sv::lb("default", "a-web")
            .a("hostname", "web.example.com")
            .a("ttl", "60")
            .ingress_ip("1.1.1.1");
        let eps = run(cfg(), &cluster_of(vec![a.build(), b.build()]));
        assert_eq!(show(&eps), owned(&["web.example.com A 1.1.1.1,2.2.2.2 ttl=60"]));
        assert_eq!(eps[0].resource().as_deref(), Some("service/default/a-web"));
        assert_eq!(eps[0].ref_objects.len(), 2);
    }

    #[test]
    fn ttl_annotation_sets_the_record_ttl() {
        let s = Sv::lb("default", "web")
            .a("hostname", "web.example.com")
            .g("ttl", "10m")
            .ingress_ip("1.2.3.4");
        assert_eq!(published(cfg(), s), owned(&["web.example.com A 1.2.3.4 ttl=600"]));
    }

    #[test]
    fn invalid_ttl_annotation_leaves_the_ttl_unset() {
        let s = Sv::lb("default", "web")
            .a("hostname", "web.example.com")
            .a("ttl", "soon")
            .ingress_ip("1.2.3.4");
        assert_eq!(published(cfg(), s), owned(&["web.example.com A 1.2.3.4"]));
    }

    #[test]
    fn set_identifier_and_provider_specific_annotations_are_carried() {
        let s = Sv::lb("default", "web")
            .a("hostname", "web.example.com")
            .a("set-identifier", "blue")
            .a("aws-weight", "10")
            .a("alias", "true")
            .ingress_host("lb.cloud.example");
        let eps = run(cfg(), &one(s));
        assert_eq!(show(&eps), owned(&["web.example.com CNAME lb.cloud.example id=blue"]));
        assert_eq!(eps[0].provider_specific.get("aws/weight"), Some("10"));
        assert_eq!(eps[0].provider_specific.get("alias"), Some("true"));
    }

    // ------------------------------------------------------------------------------------ bad input

    #[test]
    fn unparsable_ip_is_skipped_and_the_rest_kept() {
        let s = Sv::lb("default", "web")
            .a("hostname", "web.example.com")
            .ingress_ip("1.2.3.999")
            .ingress_ip("01.2.3.4")
            .ingress_ip("5.6.7.8");
        assert_eq!(published(cfg(), s), owned(&["web.example.com A 5.6.7.8"]));
    }

    #[test]
    fn unparsable_cluster_ip_gives_no_targets() {
        let s = Sv::lb("default", "web")
            .cluster_ip("not-an-ip")
            .a("internal-hostname", "i.example.com");
        assert!(run(cfg(), &one(s)).is_empty());
    }

    #[test]
    fn hostname_with_a_label_over_63_characters_is_skipped() {
        let long = format!("{}.example.com", "a".repeat(64));
        let s = Sv::lb("default", "web")
            .a("hostname", &format!("{long},ok.example.com"))
            .ingress_ip("1.2.3.4");
        assert_eq!(published(cfg(), s), owned(&["ok.example.com A 1.2.3.4"]));
    }

    #[test]
    fn hostname_over_253_characters_is_skipped() {
        let long = vec!["a".repeat(60); 5].join(".");
        let s = Sv::lb("default", "web")
            .a("hostname", &format!("ok.example.com,{long}"))
            .ingress_ip("1.2.3.4");
        assert_eq!(published(cfg(), s), owned(&["ok.example.com A 1.2.3.4"]));
    }

    #[test]
    fn empty_hostname_items_are_skipped() {
        let s = Sv::lb("default", "web")
            .a("hostname", "a.example.com,,")
            .ingress_ip("1.2.3.4");
        assert_eq!(published(cfg(), s), owned(&["a.example.com A 1.2.3.4"]));
    }

    #[test]
    fn one_bad_service_does_not_affect_the_others() {
        let bad = Sv::lb("default", "bad")
            .a("hostname", &"x".repeat(70))
            .a("ttl", "-1")
            .ingress_ip("bogus");
        let good = Sv::lb("default", "good")
            .a("hostname", "good.example.com")
            .ingress_ip("1.2.3.4");
        let eps = run(cfg(), &cluster_of(vec![bad.build(), good.build()]));
        assert_eq!(show(&eps), owned(&["good.example.com A 1.2.3.4"]));
    }

    // ------------------------------------------------------------------------------------ templates

    fn with_template(t: &str, combine: bool, ignore: bool) -> ServiceSourceConfig {
        sharing(|c| {
            c.fqdn_template = Some(template(t));
            c.combine_fqdn_annotation = combine;
            c.ignore_hostname_annotation = ignore;
        })
    }

    #[test]
    fn fqdn_template_names_services_without_hostname_annotation() {
        let plain = Sv::lb("shop", "web").ingress_ip("1.2.3.4");
        let named = Sv::lb("shop", "api")
            .a("hostname", "api.example.com")
            .ingress_ip("1.2.3.5");
        let eps = run(
            with_template("{{.Name}}.{{.Namespace}}.example.com", false, false),
            &cluster_of(vec![plain.build(), named.build()]),
        );
        assert_eq!(
            show(&eps),
            owned(&["api.example.com A 1.2.3.5", "web.shop.example.com A 1.2.3.4"])
        );
        assert!(eps.iter().all(|e| e.resource().is_some()));
    }

    #[test]
    fn fqdn_template_output_is_a_comma_separated_list() {
        let s = Sv::lb("shop", "web").ingress_ip("1.2.3.4");
        let eps = run(
            with_template("{{.Name}}.a.example.com., {{.Name}}.b.example.com", false, false),
            &one(s),
        );
        assert_eq!(
            show(&eps),
            owned(&["web.a.example.com A 1.2.3.4", "web.b.example.com A 1.2.3.4"])
        );
    }

    #[test]
    fn combine_fqdn_annotation_adds_template_names_to_annotation_names() {
        let s = Sv::lb("shop", "api")
            .a("hostname", "api.example.com")
            .ingress_ip("1.2.3.5");
        assert_eq!(
            published(with_template("{{.Name}}.svc.example.com", true, false), s),
            owned(&["api.example.com A 1.2.3.5", "api.svc.example.com A 1.2.3.5"])
        );
    }

    #[test]
    fn ignore_hostname_annotation_uses_the_template_instead() {
        let s = Sv::lb("shop", "api")
            .a("hostname", "api.example.com")
            .ingress_ip("1.2.3.5");
        assert_eq!(
            published(with_template("{{.Name}}.tmpl.example.com", false, true), s),
            owned(&["api.tmpl.example.com A 1.2.3.5"])
        );
    }

    #[test]
    fn fqdn_template_names_get_the_type_targets_and_srv_records() {
        let s = Sv::new("default", "web", "NodePort").port(None, Some(30080));
        let mut c = one(s);
        c.add(node("n1", &[("ExternalIP", "34.0.0.1")]));
        let eps = run(with_template("{{.Name}}.example.com", false, false), &c);
        assert_eq!(
            show(&eps),
            owned(&[
                "_web._tcp.web.example.com SRV 0 50 30080 web.example.com.",
                "web.example.com A 34.0.0.1"
            ])
        );
    }

    #[test]
    fn fqdn_template_that_fails_skips_only_that_service() {
        // `.Spec.Missing` is not a field of a Service: execution fails for every Service, but the
        // annotated one does not need the template.
        let named = Sv::lb("shop", "api")
            .a("hostname", "api.example.com")
            .ingress_ip("1.2.3.5");
        let plain = Sv::lb("shop", "web").ingress_ip("1.2.3.4");
        let c = cluster_of(vec![plain.build(), named.build()]);
        let eps = run(with_template("{{.Spec.Missing.Deeper}}.example.com", false, false), &c);
        assert_eq!(show(&eps), owned(&["api.example.com A 1.2.3.5"]));
    }

    #[test]
    fn a_service_the_template_fails_on_is_reported_failed_and_the_others_are_not() {
        let two = Sv::lb("shop", "two")
            .cluster_ips(&["10.0.0.1", "fd00::1"])
            .ingress_ip("1.2.3.4");
        let one = Sv::lb("shop", "one").cluster_ips(&["10.0.0.2"]).ingress_ip("1.2.3.5");
        let c = cluster_of(vec![two.build(), one.build()]);
        let (eps, failed) = evaluate(
            with_template(
                "{{if index .Spec.ClusterIPs 1}}{{.Name}}.example.com{{end}}",
                false,
                false,
            ),
            &c,
        );
        assert_eq!(show(&eps), owned(&["two.example.com A 1.2.3.4"]));
        assert_eq!(failed, vec!["service/shop/one"]);
    }

    #[test]
    fn an_unwritable_target_annotation_fails_the_service_and_publishes_none_of_its_names() {
        let bad = Sv::lb("shop", "bad")
            .a("hostname", "bad.example.com,also.example.com")
            .a("target", "1.2.3.4/24")
            .ingress_ip("1.2.3.4");
        let good = Sv::lb("shop", "good")
            .a("hostname", "good.example.com")
            .a("target", "lb.example.net")
            .ingress_ip("1.2.3.5");
        let (eps, failed) = evaluate(cfg(), &cluster_of(vec![bad.build(), good.build()]));
        assert_eq!(show(&eps), owned(&["good.example.com CNAME lb.example.net"]));
        assert_eq!(failed, vec!["service/shop/bad"]);
    }

    #[test]
    fn an_unwritable_target_annotation_is_named_as_why_the_service_failed() -> Result<(), SourceError> {
        let bad = Sv::lb("shop", "bad")
            .a("hostname", "bad.example.com")
            .a("target", "1.2.3.4/24")
            .ingress_ip("1.2.3.4");
        let out = futures::executor::block_on(source(cfg()).evaluate(&one(bad), Objects::All))?;
        assert_eq!(
            out.failed.why(&ObjectKey::new(ResourceKind::Service, "shop", "bad")),
            Some("target annotation: \"1.2.3.4/24\" is neither an IP address nor a host name")
        );
        Ok(())
    }

    #[test]
    fn an_invalid_hostname_annotation_fails_the_service_but_its_valid_names_are_published() {
        let s = Sv::lb("shop", "web")
            .a("hostname", &format!("web.example.com,{}.example.com", "x".repeat(64)))
            .ingress_ip("1.2.3.4");
        let (eps, failed) = evaluate(cfg(), &one(s));
        assert_eq!(show(&eps), owned(&["web.example.com A 1.2.3.4"]));
        assert_eq!(failed, vec!["service/shop/web"]);
    }

    #[test]
    fn without_nodes_only_the_services_reading_nodes_fail() {
        use extdns_informer::{ResourceKind, Unavailable, UnavailableReason};
        let c = cluster_of(vec![
            Sv::lb("shop", "lb")
                .a("hostname", "lb.example.com")
                .ingress_ip("1.2.3.4")
                .build(),
            Sv::new("shop", "np", "NodePort")
                .a("hostname", "np.example.com")
                .build(),
            Sv::new("shop", "name", "ExternalName")
                .a("hostname", "alias.example.com")
                .external_name("target.example.org")
                .build(),
            Sv::new("shop", "db", "ClusterIP")
                .a("hostname", "db.example.com")
                .a("endpoints-type", "NodeExternalIP")
                .headless()
                .build(),
        ]);
        let forbidden = Unavailable {
            reason: UnavailableReason::Forbidden,
            api_version: "v1".into(),
            status: 403,
            missing: "RBAC rule".into(),
        };
        c.set_unavailable(ResourceKind::Node, Some(forbidden));
        let (eps, failed) = evaluate(cfg(), &c);
        assert_eq!(
            show(&eps),
            owned(&["alias.example.com CNAME target.example.org", "lb.example.com A 1.2.3.4"])
        );
        assert_eq!(failed, vec!["service/shop/db", "service/shop/np"]);
    }

    #[test]
    fn an_undecodable_service_is_reported_failed() {
        let mut c = one(Sv::lb("shop", "web")
            .a("hostname", "web.example.com")
            .ingress_ip("1.2.3.4"));
        c.add_undecodable(extdns_informer::ResourceKind::Service, "shop", "broken");
        let (eps, failed) = evaluate(cfg(), &c);
        assert_eq!(show(&eps), owned(&["web.example.com A 1.2.3.4"]));
        assert_eq!(failed, vec!["service/shop/broken"]);
    }

    #[test]
    fn fqdn_template_with_an_invalid_name_skips_that_name() {
        let s = Sv::lb("shop", "web")
            .label("long", &"x".repeat(63))
            .ingress_ip("1.2.3.4");
        let eps = run(
            with_template(
                "{{.Name}}.example.com,{{index .Labels \"long\"}}x.example.com",
                false,
                false,
            ),
            &one(s),
        );
        assert_eq!(show(&eps), owned(&["web.example.com A 1.2.3.4"]));
    }

    #[test]
    fn fqdn_target_template_publishes_host_target_pairs_without_labels() {
        let s = Sv::lb("shop", "web").ingress_ip("1.2.3.4");
        let c = ServiceSourceConfig {
            fqdn_target_template: Some(template(
                "{{.Name}}.example.com:{{.Spec.ClusterIP}},{{.Name}}.example.com:alias.example.net.",
            )),
            ..with_template("{{.Name}}.fallback.example.com", false, false)
        };
        let eps = run(c, &one(s));
        assert_eq!(
            show(&eps),
            owned(&[
                "web.example.com A 10.96.0.10",
                "web.example.com CNAME alias.example.net"
            ])
        );
        // external-dns writes these without a `resource` label, the Service still theirs for Events.
        assert!(
            eps.iter()
                .all(|e| e.labels_as_written().is_empty() && e.resource().is_none())
        );
        let web = ObjectKey::new(ResourceKind::Service, "shop", "web");
        assert!(eps.iter().all(|e| e.ref_objects.contains(&web)));
    }

    /// external-dns writes the compatibility modes' records without a `resource` label (§6.8 of the
    /// behaviour reference), the Service still theirs for Events.
    #[test]
    fn compatibility_records_name_no_object_but_reference_their_service() {
        let s = Sv::lb("default", "web")
            .ann(super::MATE_HOSTNAME, "web.example.com")
            .ingress_ip("1.2.3.4");
        let c = configured(|c| c.compatibility = Some(crate::Compatibility::Mate));
        let eps = run(c, &one(s));
        assert_eq!(show(&eps), owned(&["web.example.com A 1.2.3.4"]));
        assert_eq!(eps[0].resource(), None);
        assert!(eps[0].labels_as_written().is_empty());
        let web = ObjectKey::new(ResourceKind::Service, "default", "web");
        assert!(eps[0].ref_objects.contains(&web));
    }

    /// A target-template record and an annotated Service's record at one name, as external-dns resolves
    /// them (`source/service.go`; §6.2 steps 3 and 6 of the behaviour reference): the template's record has
    /// no `resource` label, so the sort by that label puts it before `service/default/a`, and in the merge
    /// the first keeps its labels and TTL: one A record with both targets, no TTL and no `resource`, though
    /// its Service `z` sorts after `a`. Both Services are referenced, for Events.
    #[test]
    fn a_target_template_record_owns_a_name_it_shares_with_an_annotated_service() {
        let templated = Sv::lb("default", "z").ingress_ip("192.0.2.9");
        let annotated = Sv::lb("default", "a")
            .a("hostname", "x.example.com")
            .a("ttl", "60")
            .ingress_ip("192.0.2.1");
        let c = ServiceSourceConfig {
            fqdn_target_template: Some(template("x.example.com:{{.Spec.ClusterIP}}")),
            ..cfg()
        };
        let eps = run(c, &cluster_of(vec![annotated.build(), templated.build()]));
        assert_eq!(show(&eps), owned(&["x.example.com A 10.96.0.10,192.0.2.1"]));
        assert_eq!(eps[0].resource(), None);
        assert!(eps[0].labels_as_written().is_empty());
        assert_eq!(eps[0].ref_objects.len(), 2);
    }

    #[test]
    fn fqdn_target_template_is_combined_with_annotations_only_with_combine() {
        let s = Sv::lb("shop", "web")
            .a("hostname", "web.example.com")
            .ingress_ip("1.2.3.4");
        let target = Some(template("{{.Name}}.internal.example.com:{{.Spec.ClusterIP}}"));
        let alone = configured(|c| c.fqdn_target_template = target.clone());
        assert_eq!(published(alone, s.clone()), owned(&["web.example.com A 1.2.3.4"]));
        let mut combined = configured(|c| c.fqdn_target_template = target);
        combined.common.combine_fqdn_annotation = true;
        assert_eq!(
            published(combined, s),
            owned(&["web.example.com A 1.2.3.4", "web.internal.example.com A 10.96.0.10"])
        );
    }
}
