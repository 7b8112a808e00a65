//! external-dns v0.23's `source/istio_gateway_test.go` and `istio_virtualservice_test.go` rules, one test
//! each, then extdns's own: failing objects and incremental evaluation. Objects are written as the YAML an
//! API server would hold and loaded through the manifest loader (the live informer's ingest path).

use extdns_informer::index::Ref;
use extdns_informer::{ChangeSet, ClusterStore, ObjectKey, ResourceKind};
use extdns_source::pipeline::testing::{Flags, alpha, check_against_full, evaluate_ok, load_yaml, rendered};
use extdns_source::template::TemplateKind;
use extdns_source::{Pipeline, PipelineConfig, Source, SourceExt};
use futures::executor::block_on;

use super::*;

fn config(f: &Flags) -> IstioSourceConfig {
    IstioSourceConfig::new(f.config())
}

/// A store holding the objects of `yaml`, keeping the fields `flags`' template reads.
fn cluster(flags: &Flags, yaml: &str) -> ClusterStore {
    load_yaml(
        yaml,
        flags.load_options(&[TemplateKind::IstioGateway, TemplateKind::VirtualService]),
    )
}

/// `source`'s records over `store`, rendered and sorted; no object may fail.
fn records(source: &dyn Source, store: &ClusterStore) -> Vec<String> {
    rendered(&evaluate_ok(source, store))
}

/// The records the Gateway source makes of `yaml` under `flags`.
fn gateways(flags: Flags, yaml: &str) -> Vec<String> {
    records(&IstioGatewaySource::new(config(&flags)), &cluster(&flags, yaml))
}

/// The records the VirtualService source makes of `yaml` under `flags`.
fn virtual_services(flags: Flags, yaml: &str) -> Vec<String> {
    records(&VirtualServiceSource::new(config(&flags)), &cluster(&flags, yaml))
}

fn none() -> Flags {
    Flags::default()
}

/// The ingress gateway's LoadBalancer Service, selecting `istio: ingressgateway`, at `lb` (IPs and
/// hostnames) in `istio-system`.
fn ingress_gateway_service(name: &str, lb: &[&str]) -> String {
    let entries: Vec<String> = lb
        .iter()
        .map(|a| match a.parse::<std::net::IpAddr>() {
            Ok(_) => format!("{{ip: {a}}}"),
            Err(_) => format!("{{hostname: {a}}}"),
        })
        .collect();
    format!(
        "apiVersion: v1\nkind: Service\nmetadata: {{name: {name}, namespace: istio-system}}\n\
         spec: {{type: LoadBalancer, selector: {{istio: ingressgateway, app: {name}}}}}\n\
         status: {{loadBalancer: {{ingress: [{}]}}}}\n---\n",
        entries.join(", ")
    )
}

/// An Istio Gateway `ns/name` selecting `istio: ingressgateway`, with one server of `hosts` and
/// `annotations` (`key: value` lines).
fn gateway(ns: &str, name: &str, hosts: &[&str], annotations: &[(&str, &str)]) -> String {
    format!(
        "apiVersion: networking.istio.io/v1\nkind: Gateway\nmetadata:\n  name: {name}\n  namespace: {ns}\n  \
         annotations: {{{}}}\nspec:\n  selector: {{istio: ingressgateway}}\n  servers:\n  - port: {{number: 80, \
         name: http, protocol: HTTP}}\n    hosts: [{}]\n---\n",
        pairs(annotations),
        quoted(hosts)
    )
}

/// A VirtualService `ns/name` with `hosts`, `gateways` and `annotations`.
fn virtual_service(ns: &str, name: &str, hosts: &[&str], gateways: &[&str], annotations: &[(&str, &str)]) -> String {
    format!(
        "apiVersion: networking.istio.io/v1beta1\nkind: VirtualService\nmetadata:\n  name: {name}\n  \
         namespace: {ns}\n  annotations: {{{}}}\nspec:\n  hosts: [{}]\n  gateways: [{}]\n---\n",
        pairs(annotations),
        quoted(hosts),
        quoted(gateways)
    )
}

fn pairs(annotations: &[(&str, &str)]) -> String {
    let p: Vec<String> = annotations.iter().map(|(k, v)| format!("{k:?}: {v:?}")).collect();
    p.join(", ")
}

fn quoted(items: &[&str]) -> String {
    let q: Vec<String> = items.iter().map(|i| format!("{i:?}")).collect();
    q.join(", ")
}

const LB: &str = "8.8.8.8";

// ------------------------------------------------------------------------------------------ istio-gateway

#[test]
fn gateway_hosts_point_at_the_ip_of_the_selected_service() {
    let yaml = ingress_gateway_service("lb", &[LB]) + &gateway("default", "gw", &["foo.bar.com"], &[]);
    assert_eq!(gateways(none(), &yaml), ["foo.bar.com A 8.8.8.8"]);
}

#[test]
fn gateway_hosts_point_at_the_hostname_of_the_selected_service_as_a_cname() {
    let yaml = ingress_gateway_service("lb", &["lb.com"]) + &gateway("default", "gw", &["foo.bar.com"], &[]);
    assert_eq!(gateways(none(), &yaml), ["foo.bar.com CNAME lb.com"]);
}

#[test]
fn gateway_host_namespace_prefix_is_dropped_and_bare_wildcard_skipped() {
    let yaml = ingress_gateway_service("lb", &[LB])
        + &gateway("default", "gw", &["ns/foo.bar.com", "*", "*/*", "", "*.wild.com"], &[]);
    assert_eq!(
        gateways(none(), &yaml),
        ["*.wild.com A 8.8.8.8", "foo.bar.com A 8.8.8.8"]
    );
}

#[test]
fn gateway_takes_the_addresses_of_every_selected_service() {
    let yaml = ingress_gateway_service("lb1", &[LB, "lb.com"])
        + &ingress_gateway_service("lb2", &["127.0.0.1", "elb.com"])
        + &gateway("default", "gw", &["foo.bar.com"], &[]);
    assert_eq!(
        gateways(none(), &yaml),
        ["foo.bar.com A 127.0.0.1,8.8.8.8", "foo.bar.com CNAME elb.com,lb.com"]
    );
}

#[test]
fn gateway_external_ips_of_a_service_replace_its_load_balancer() {
    let yaml = "apiVersion: v1\nkind: Service\nmetadata: {name: lb, namespace: istio-system}\n\
                spec: {type: LoadBalancer, selector: {istio: ingressgateway}, externalIPs: [1.1.1.1, 2.2.2.2]}\n\
                status: {loadBalancer: {ingress: [{ip: 8.8.8.8}]}}\n---\n"
        .to_string()
        + &gateway("default", "gw", &["foo.bar.com"], &[]);
    assert_eq!(gateways(none(), &yaml), ["foo.bar.com A 1.1.1.1,2.2.2.2"]);
}

#[test]
fn gateway_selector_must_be_a_subset_of_the_service_selector() {
    let other = "apiVersion: v1\nkind: Service\nmetadata: {name: other, namespace: istio-system}\n\
                 spec: {type: LoadBalancer, selector: {istio: egressgateway}}\n\
                 status: {loadBalancer: {ingress: [{ip: 9.9.9.9}]}}\n---\n";
    let yaml = other.to_string() + &gateway("default", "gw", &["foo.bar.com"], &[]);
    assert!(
        gateways(none(), &yaml).is_empty(),
        "no Service selects istio=ingressgateway"
    );
    let yaml =
        other.to_string() + &ingress_gateway_service("lb", &[LB]) + &gateway("default", "gw", &["foo.bar.com"], &[]);
    assert_eq!(gateways(none(), &yaml), ["foo.bar.com A 8.8.8.8"]);
}

#[test]
fn gateway_without_selector_selects_every_service() {
    let yaml = ingress_gateway_service("lb", &[LB])
        + "apiVersion: v1\nkind: Service\nmetadata: {name: plain, namespace: apps}\nspec: {type: LoadBalancer}\n\
           status: {loadBalancer: {ingress: [{ip: 9.9.9.9}]}}\n---\n\
           apiVersion: networking.istio.io/v1alpha3\nkind: Gateway\nmetadata: {name: gw, namespace: default}\n\
           spec: {servers: [{hosts: [foo.bar.com]}]}\n";
    assert_eq!(gateways(none(), &yaml), ["foo.bar.com A 8.8.8.8,9.9.9.9"]);
}

#[test]
fn gateway_without_targets_publishes_nothing() {
    let yaml = gateway("default", "gw", &["foo.bar.com"], &[]);
    assert!(gateways(none(), &yaml).is_empty());
}

#[test]
fn gateway_target_annotation_replaces_the_service_addresses() {
    let target = alpha("target");
    let yaml = ingress_gateway_service("lb", &[LB])
        + &gateway("default", "gw", &["foo.bar.com"], &[(&target, "gateway-target.com")]);
    assert_eq!(gateways(none(), &yaml), ["foo.bar.com CNAME gateway-target.com"]);
}

/// An Ingress `ns/name` with a load balancer at `lb`.
fn ingress(ns: &str, name: &str, lb: &str) -> String {
    format!(
        "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {{name: {name}, namespace: {ns}}}\n\
         status: {{loadBalancer: {{ingress: [{{hostname: {lb}}}]}}}}\n---\n"
    )
}

#[test]
fn gateway_ingress_annotation_points_at_the_ingress_load_balancer_in_the_same_namespace() {
    let key = "external-dns.alpha.kubernetes.io/ingress";
    let yaml = ingress_gateway_service("lb", &[LB])
        + &ingress("default", "ingress1", "ingress.example.com")
        + &gateway("default", "gw", &["foo.bar.com"], &[(key, "ingress1")]);
    assert_eq!(gateways(none(), &yaml), ["foo.bar.com CNAME ingress.example.com"]);
}

#[test]
fn gateway_ingress_annotation_names_an_ingress_of_another_namespace() {
    let key = "external-dns.alpha.kubernetes.io/ingress";
    let yaml = ingress("ingress-ns", "ingress1", "ingress.example.com")
        + &gateway("default", "gw", &["foo.bar.com"], &[(key, "ingress-ns/ingress1")]);
    assert_eq!(gateways(none(), &yaml), ["foo.bar.com CNAME ingress.example.com"]);
}

#[test]
fn gateway_ingress_annotation_is_read_at_external_dns_default_prefix_whatever_the_configured_one() {
    let (ga, legacy) = (
        "external-dns.kubernetes.io/ingress",
        "external-dns.alpha.kubernetes.io/ingress",
    );
    let yaml = ingress_gateway_service("lb", &[LB])
        + &ingress("default", "ga", "ga.example.com")
        + &ingress("default", "legacy", "legacy.example.com")
        + &gateway("default", "both", &["both.bar.com"], &[(ga, "ga"), (legacy, "legacy")])
        + &gateway("default", "legacy-only", &["legacy.bar.com"], &[(legacy, "legacy")]);
    // Both prefixes read (extdns's default, external-dns with --enable-legacy-annotation-prefix).
    assert_eq!(
        gateways(none(), &yaml),
        [
            "both.bar.com CNAME ga.example.com",
            "legacy.bar.com CNAME legacy.example.com"
        ]
    );
    // One prefix: the legacy key is not read, and a custom prefix still reads external-dns's default key.
    for prefix in ["external-dns.kubernetes.io/", "custom.example.org/"] {
        let mut config = config(&none());
        config.common.annotations = extdns_source::Annotations::with_prefix(prefix).expect("prefix");
        let got = records(&IstioGatewaySource::new(config), &cluster(&none(), &yaml));
        assert_eq!(
            got,
            ["both.bar.com CNAME ga.example.com", "legacy.bar.com A 8.8.8.8"],
            "{prefix}"
        );
    }
}

#[test]
fn gateway_target_annotation_wins_over_the_ingress_annotation() {
    let (key, target) = ("external-dns.alpha.kubernetes.io/ingress", alpha("target"));
    let yaml = ingress("default", "ingress1", "ingress.example.com")
        + &gateway(
            "default",
            "gw",
            &["foo.bar.com"],
            &[(key, "ingress1"), (&target, "1.2.3.4")],
        );
    assert_eq!(gateways(none(), &yaml), ["foo.bar.com A 1.2.3.4"]);
}

#[test]
fn gateway_whose_ingress_is_not_found_fails_and_others_still_publish() {
    let key = "external-dns.alpha.kubernetes.io/ingress";
    let yaml = ingress_gateway_service("lb", &[LB])
        + &gateway("default", "broken", &["a.bar.com"], &[(key, "missing")])
        + &gateway("default", "bad-ref", &["b.bar.com"], &[(key, "a/b/c")])
        + &gateway("default", "fine", &["c.bar.com"], &[]);
    let flags = none();
    let out =
        block_on(IstioGatewaySource::new(config(&flags)).evaluate_all(&cluster(&flags, &yaml))).expect("evaluates");
    let names: Vec<&str> = out.endpoints.iter().map(|e| e.dns_name.as_str()).collect();
    assert_eq!(names, ["c.bar.com"]);
    let failed: Vec<String> = out.failed.iter().map(|(k, _)| k.name.clone()).collect();
    assert_eq!(failed, ["bad-ref", "broken"]);
    let why = out
        .failed
        .why(&ObjectKey::new(ResourceKind::IstioGateway, "default", "broken"));
    assert!(why.is_some_and(|w| w.contains("default/missing")), "{why:?}");
}

#[test]
fn gateway_hostname_annotation_adds_names_unless_ignored() {
    let hostname = alpha("hostname");
    let yaml = ingress_gateway_service("lb", &[LB])
        + &gateway(
            "default",
            "gw",
            &["foo.bar.com"],
            &[(&hostname, "a.example.org, b.example.org")],
        );
    assert_eq!(
        gateways(none(), &yaml),
        [
            "a.example.org A 8.8.8.8",
            "b.example.org A 8.8.8.8",
            "foo.bar.com A 8.8.8.8"
        ]
    );
    let ignoring = Flags {
        ignore_hostname_annotation: true,
        ..none()
    };
    assert_eq!(gateways(ignoring, &yaml), ["foo.bar.com A 8.8.8.8"]);
}

#[test]
fn gateway_ttl_set_identifier_and_provider_specific_annotations_apply() {
    let (ttl, set, ps) = (alpha("ttl"), alpha("set-identifier"), alpha("aws-weight"));
    let yaml = ingress_gateway_service("lb", &[LB])
        + &gateway(
            "default",
            "gw",
            &["foo.bar.com"],
            &[(&ttl, "1m"), (&set, "blue"), (&ps, "10")],
        );
    assert_eq!(
        gateways(none(), &yaml),
        ["foo.bar.com A 8.8.8.8 ttl=60 aws/weight=10 set=blue"]
    );
}

#[test]
fn gateway_template_names_a_gateway_without_hosts_or_adds_when_combined() {
    let yaml = ingress_gateway_service("lb", &[LB])
        + &gateway("default", "no-hosts", &[], &[])
        + &gateway("default", "hosts", &["foo.bar.com"], &[]);
    let template = Flags {
        fqdn_template: Some("{{.Name}}.ext-dns.test.com"),
        ..none()
    };
    assert_eq!(
        gateways(template, &yaml),
        ["foo.bar.com A 8.8.8.8", "no-hosts.ext-dns.test.com A 8.8.8.8"]
    );
    let combined = Flags {
        fqdn_template: Some("{{.Name}}.ext-dns.test.com"),
        combine: true,
        ..none()
    };
    assert_eq!(
        gateways(combined, &yaml),
        [
            "foo.bar.com A 8.8.8.8",
            "hosts.ext-dns.test.com A 8.8.8.8",
            "no-hosts.ext-dns.test.com A 8.8.8.8"
        ]
    );
}

#[test]
fn gateway_template_reads_the_servers_hosts() {
    let yaml = ingress_gateway_service("lb", &[LB]) + &gateway("default", "gw", &["*"], &[]);
    let template = Flags {
        fqdn_template: Some(
            "{{range .Spec.Servers}}{{range .Hosts}}{{if ne . \"*\"}}{{.}}{{else}}any{{end}}{{end}}{{end}}.{{.Namespace}}.example.org",
        ),
        ..none()
    };
    assert_eq!(gateways(template, &yaml), ["any.default.example.org A 8.8.8.8"]);
}

#[test]
fn gateway_filters_annotation_label_controller_and_namespace_apply() {
    let controller = alpha("controller");
    let yaml = ingress_gateway_service("lb", &[LB])
        + &gateway("default", "plain", &["plain.com"], &[])
        + &gateway(
            "default",
            "public",
            &["public.com"],
            &[("kubernetes.io/ingress.class", "public")],
        )
        + &gateway("default", "mine", &["mine.com"], &[(&controller, "dns-controller")])
        + &gateway("default", "theirs", &["theirs.com"], &[(&controller, "other")])
        + &gateway("other", "elsewhere", &["elsewhere.com"], &[]);
    let filtered = Flags {
        annotation_filter: "kubernetes.io/ingress.class=public",
        ..none()
    };
    assert_eq!(gateways(filtered, &yaml), ["public.com A 8.8.8.8"]);
    let all = gateways(none(), &yaml);
    assert!(
        all.iter().any(|r| r.starts_with("mine.com")),
        "dns-controller is ours: {all:?}"
    );
    assert!(
        !all.iter().any(|r| r.starts_with("theirs.com")),
        "another controller's: {all:?}"
    );
    let labelled = Flags {
        label_filter: "team=a",
        ..none()
    };
    assert!(gateways(labelled, &yaml).is_empty());
    // `--namespace` scopes the Services read too: the ingress gateway's lives in istio-system.
    let scoped = Flags {
        namespace: Some("other"),
        ..none()
    };
    assert!(gateways(scoped, &yaml).is_empty());
    let scoped = Flags {
        namespace: Some("istio-system"),
        ..none()
    };
    let yaml = yaml + &gateway("istio-system", "gw", &["system.com"], &[]);
    assert_eq!(gateways(scoped, &yaml), ["system.com A 8.8.8.8"]);
}

#[test]
fn gateway_records_name_the_gateway_as_external_dns_labels_them() {
    let yaml = ingress_gateway_service("lb", &[LB]) + &gateway("default", "gw", &["foo.bar.com"], &[]);
    let flags = none();
    let out =
        block_on(IstioGatewaySource::new(config(&flags)).evaluate_all(&cluster(&flags, &yaml))).expect("evaluates");
    assert_eq!(out.endpoints[0].resource().as_deref(), Some("gateway/default/gw"));
}

#[test]
fn gateway_records_of_several_gateways_merge_by_name() {
    let target = alpha("target");
    let yaml = gateway("a", "gw", &["foo.bar.com"], &[(&target, "1.1.1.1")])
        + &gateway("b", "gw", &["foo.bar.com"], &[(&target, "2.2.2.2")]);
    assert_eq!(gateways(none(), &yaml), ["foo.bar.com A 1.1.1.1,2.2.2.2"]);
}

// ----------------------------------------------------------------------------------- istio-virtualservice

/// Whether a VirtualService in `vs_ns` exported to `export_to` binds to a Gateway in `gw_ns` with the
/// server host `gw_host`, for `vs_host`.
fn binds_case(vs_ns: &str, export_to: &[&str], gw_ns: &str, gw_host: &str, vs_host: &str) -> bool {
    use extdns_informer::view::{IstioGateway, Meta, VirtualService};
    let meta = |ns: &str| Meta {
        name: "x".into(),
        namespace: ns.into(),
        ..Meta::default()
    };
    let vs = VirtualService {
        meta: meta(vs_ns),
        export_to: export_to.iter().map(|s| s.to_string()).collect(),
        ..VirtualService::default()
    };
    let gw = IstioGateway {
        meta: meta(gw_ns),
        hosts: vec![gw_host.to_string()],
        ..IstioGateway::default()
    };
    hosts::binds(&vs, &gw, vs_host)
}

#[test]
fn virtual_service_binds_by_the_gateway_hosts_wildcards() {
    assert!(binds_case("ns", &[], "ns", "*", "foo.bar"), "matching host *");
    assert!(
        binds_case("ns", &[], "ns", "*.foo.bar", "baz.foo.bar"),
        "matching host *.<domain>"
    );
    assert!(
        !binds_case("ns", &[], "ns", "*.foo.bar", "foo.bar"),
        "not matching host *.<domain>"
    );
    assert!(!binds_case("ns", &[], "ns", "*.foo.bar", "bazfoo.bar"));
    assert!(!binds_case("ns", &[], "ns", "foo.bar", "baz.foo.bar"));
    assert!(binds_case("ns", &[], "ns", "*/*", "foo.bar"), "matching host */*");
}

#[test]
fn virtual_service_binds_by_the_gateway_hosts_namespaces() {
    assert!(
        binds_case("myns", &[], "gwns", "myns/*", "foo.bar"),
        "matching host <namespace>/*"
    );
    assert!(binds_case("ns", &[], "ns", "./*", "foo.bar"), "matching host ./*");
    assert!(
        !binds_case("myns", &[], "gwns", "./*", "foo.bar"),
        "not matching host ./*"
    );
    assert!(
        !binds_case("myns", &[], "gwns", "other/*", "foo.bar"),
        "not matching host <namespace>/*"
    );
    assert!(
        !binds_case("myns", &[], "gwns", "a/b/*", "foo.bar"),
        "an invalid host binds nothing"
    );
}

#[test]
fn virtual_service_binds_only_where_it_is_exported() {
    assert!(
        binds_case("myns", &["*"], "gwns", "*", "foo.bar"),
        "matching exportTo *"
    );
    assert!(
        binds_case("myns", &["gwns"], "gwns", "*", "foo.bar"),
        "matching exportTo <namespace>"
    );
    assert!(
        !binds_case("myns", &["other"], "gwns", "*", "foo.bar"),
        "not matching exportTo <namespace>"
    );
    assert!(
        !binds_case("myns", &["."], "gwns", "*", "foo.bar"),
        "not matching exportTo ."
    );
    assert!(binds_case("ns", &["."], "ns", "*", "foo.bar"));
}

#[test]
fn virtual_service_hosts_point_at_the_targets_of_the_gateways_they_bind_to() {
    let yaml = ingress_gateway_service("lb", &[LB, "lb.com"])
        + &gateway("istio-system", "gw", &["*.bar.com"], &[])
        + &virtual_service(
            "apps",
            "vs",
            &["foo.bar.com", "foo.other.com", "*", ""],
            &["istio-system/gw"],
            &[],
        );
    assert_eq!(
        virtual_services(none(), &yaml),
        ["foo.bar.com A 8.8.8.8", "foo.bar.com CNAME lb.com"],
        "foo.other.com is not a host of the Gateway"
    );
}

#[test]
fn virtual_service_gateway_without_namespace_is_in_its_own_and_mesh_is_ignored() {
    let yaml = ingress_gateway_service("lb", &[LB])
        + &gateway("apps", "gw", &["*"], &[])
        + &virtual_service("apps", "vs", &["apps/foo.bar.com"], &["mesh", "gw", "missing"], &[]);
    assert_eq!(virtual_services(none(), &yaml), ["foo.bar.com A 8.8.8.8"]);
}

#[test]
fn virtual_service_without_gateways_publishes_nothing() {
    let yaml = ingress_gateway_service("lb", &[LB]) + &virtual_service("apps", "vs", &["foo.bar.com"], &["mesh"], &[]);
    assert!(virtual_services(none(), &yaml).is_empty());
}

#[test]
fn virtual_service_with_two_gateways_takes_both_targets_once() {
    let target = alpha("target");
    let yaml = gateway("istio-system", "gw1", &["*"], &[(&target, "1.1.1.1")])
        + &gateway("istio-system", "gw2", &["*"], &[(&target, "1.1.1.1,2.2.2.2")])
        + &virtual_service(
            "apps",
            "vs",
            &["foo.bar.com"],
            &["istio-system/gw1", "istio-system/gw2"],
            &[],
        );
    assert_eq!(virtual_services(none(), &yaml), ["foo.bar.com A 1.1.1.1,2.2.2.2"]);
}

#[test]
fn virtual_service_target_annotation_replaces_the_gateways_targets() {
    let target = alpha("target");
    let yaml = ingress_gateway_service("lb", &[LB])
        + &gateway("istio-system", "gw", &["other.com"], &[])
        + &virtual_service(
            "apps",
            "vs",
            &["foo.bar.com"],
            &["istio-system/gw"],
            &[(&target, "vs-target.com")],
        );
    assert_eq!(virtual_services(none(), &yaml), ["foo.bar.com CNAME vs-target.com"]);
}

#[test]
fn virtual_service_gateway_ingress_annotation_gives_the_targets() {
    let key = "external-dns.alpha.kubernetes.io/ingress";
    let yaml = ingress_gateway_service("lb", &[LB])
        + &ingress("istio-system", "ingress1", "ingress.example.com")
        + &gateway("istio-system", "gw", &["*"], &[(key, "ingress1")])
        + &virtual_service("apps", "vs", &["foo.bar.com"], &["istio-system/gw"], &[]);
    assert_eq!(
        virtual_services(none(), &yaml),
        ["foo.bar.com CNAME ingress.example.com"]
    );
}

#[test]
fn virtual_service_hostname_annotation_is_restricted_by_the_gateway_hosts() {
    let hostname = alpha("hostname");
    let yaml = ingress_gateway_service("lb", &[LB])
        + &gateway("istio-system", "gw", &["*.bar.com"], &[])
        + &virtual_service(
            "apps",
            "vs",
            &["foo.bar.com"],
            &["istio-system/gw"],
            &[(&hostname, "a.bar.com,b.other.com")],
        );
    assert_eq!(
        virtual_services(none(), &yaml),
        ["a.bar.com A 8.8.8.8", "foo.bar.com A 8.8.8.8"]
    );
    let ignoring = Flags {
        ignore_hostname_annotation: true,
        ..none()
    };
    assert_eq!(virtual_services(ignoring, &yaml), ["foo.bar.com A 8.8.8.8"]);
}

#[test]
fn virtual_service_ttl_and_provider_specific_annotations_apply() {
    let (ttl, ps) = (alpha("ttl"), alpha("cloudflare-proxied"));
    let yaml = ingress_gateway_service("lb", &[LB])
        + &gateway("istio-system", "gw", &["*"], &[])
        + &virtual_service(
            "apps",
            "vs",
            &["foo.bar.com"],
            &["istio-system/gw"],
            &[(&ttl, "300"), (&ps, "true")],
        );
    assert_eq!(
        virtual_services(none(), &yaml),
        ["foo.bar.com A 8.8.8.8 ttl=300 cloudflare/proxied=true"]
    );
}

#[test]
fn virtual_service_template_names_point_at_the_gateways_even_with_a_target_annotation() {
    let target = alpha("target");
    let yaml = ingress_gateway_service("lb", &[LB])
        + &gateway("istio-system", "gw", &["*.ext-dns.test.com"], &[])
        + &virtual_service("apps", "vs", &[], &["istio-system/gw"], &[(&target, "vs-target.com")])
        + &virtual_service("apps", "restricted", &[], &["istio-system/gw"], &[]);
    let template = Flags {
        fqdn_template: Some("{{.Name}}.ext-dns.test.com,{{.Name}}.other.com"),
        ..none()
    };
    assert_eq!(
        virtual_services(template, &yaml),
        ["restricted.ext-dns.test.com A 8.8.8.8", "vs.ext-dns.test.com A 8.8.8.8"]
    );
}

#[test]
fn virtual_service_with_an_invalid_gateway_reference_fails_alone() {
    let yaml = ingress_gateway_service("lb", &[LB])
        + &gateway("istio-system", "gw", &["*"], &[])
        + &virtual_service("apps", "bad", &["bad.bar.com"], &["a/b/c"], &[])
        + &virtual_service("apps", "good", &["good.bar.com"], &["istio-system/gw"], &[]);
    let flags = none();
    let out =
        block_on(VirtualServiceSource::new(config(&flags)).evaluate_all(&cluster(&flags, &yaml))).expect("evaluates");
    let names: Vec<&str> = out.endpoints.iter().map(|e| e.dns_name.as_str()).collect();
    assert_eq!(names, ["good.bar.com"]);
    assert!(
        out.failed
            .contains(&ObjectKey::new(ResourceKind::VirtualService, "apps", "bad"))
    );
    assert_eq!(out.endpoints[0].resource().as_deref(), Some("virtualservice/apps/good"));
}

#[test]
fn virtual_service_filters_and_namespace_scope_apply() {
    let yaml = ingress_gateway_service("lb", &[LB])
        + &gateway("istio-system", "gw", &["*"], &[])
        + &virtual_service(
            "apps",
            "public",
            &["public.com"],
            &["istio-system/gw"],
            &[("class", "public")],
        )
        + &virtual_service("apps", "private", &["private.com"], &["istio-system/gw"], &[]);
    let filtered = Flags {
        annotation_filter: "class in (public)",
        ..none()
    };
    assert_eq!(virtual_services(filtered, &yaml), ["public.com A 8.8.8.8"]);
    // The Gateway lives outside `--namespace`: external-dns's informer does not see it.
    let scoped = Flags {
        namespace: Some("apps"),
        ..none()
    };
    assert!(virtual_services(scoped, &yaml).is_empty());
}

// ---------------------------------------------------------------------------------------- incremental

/// Both sources, through the pipeline's incremental path, against full evaluations.
fn check(before: &str, after: &str, changes: &ChangeSet, context: &str) {
    let (b, a) = (cluster(&none(), before), cluster(&none(), after));
    let p = Pipeline::new(
        vec![
            Box::new(IstioGatewaySource::new(config(&none()))),
            Box::new(VirtualServiceSource::new(config(&none()))),
        ],
        PipelineConfig::default(),
    );
    block_on(check_against_full(&p, &b, &a, changes, context));
}

fn service_change(name: &str, labels_before_and_after: &[(&str, &str)]) -> ChangeSet {
    let mut c = ChangeSet::of(ObjectKey::new(ResourceKind::Service, "istio-system", name));
    c.announce(
        labels_before_and_after
            .iter()
            .map(|(k, v)| Ref::Selects(ResourceKind::Service, (*k).into(), (*v).into())),
    );
    c
}

#[test]
fn a_service_leaving_a_gateway_selector_re_evaluates_the_gateway_and_its_virtual_services() {
    let rest = gateway("istio-system", "gw", &["*.bar.com"], &[])
        + &virtual_service("apps", "vs", &["foo.bar.com"], &["istio-system/gw"], &[]);
    let before = ingress_gateway_service("lb", &[LB]) + &rest;
    let after = "apiVersion: v1\nkind: Service\nmetadata: {name: lb, namespace: istio-system}\n\
                 spec: {type: LoadBalancer, selector: {app: other}}\n\
                 status: {loadBalancer: {ingress: [{ip: 8.8.8.8}]}}\n---\n"
        .to_string()
        + &rest;
    let changes = service_change("lb", &[("istio", "ingressgateway"), ("app", "lb"), ("app", "other")]);
    check(&before, &after, &changes, "selector changed away");
    check(&after, &before, &changes, "selector changed back");
    let store = cluster(&none(), &after);
    let affected = VirtualServiceSource::new(config(&none())).affected(&store, &changes);
    assert_eq!(
        affected.map(|a| a.into_iter().map(|k| k.name).collect::<Vec<_>>()),
        Some(vec!["vs".to_string()])
    );
}

#[test]
fn a_service_change_affects_only_the_gateways_selecting_it() {
    let other = "apiVersion: networking.istio.io/v1\nkind: Gateway\nmetadata: {name: egress, namespace: istio-system}\n\
                 spec: {selector: {istio: egressgateway}, servers: [{hosts: [out.com]}]}\n---\n";
    let yaml = ingress_gateway_service("lb", &[LB]) + &gateway("istio-system", "gw", &["foo.bar.com"], &[]) + other;
    let store = cluster(&none(), &yaml);
    let changes = service_change("lb", &[("istio", "ingressgateway"), ("app", "lb")]);
    let affected = IstioGatewaySource::new(config(&none())).affected(&store, &changes);
    assert_eq!(
        affected.map(|a| a.into_iter().map(|k| k.name).collect::<Vec<_>>()),
        Some(vec!["gw".to_string()])
    );
    let before = yaml.replace("8.8.8.8", "9.9.9.9");
    check(&before, &yaml, &changes, "load balancer address changed");
}

#[test]
fn an_ingress_or_gateway_change_re_evaluates_what_reads_it() {
    let key = "external-dns.alpha.kubernetes.io/ingress";
    let rest = gateway("istio-system", "gw", &["*"], &[(key, "ingress1")])
        + &virtual_service("apps", "vs", &["foo.bar.com"], &["istio-system/gw"], &[]);
    let before = ingress("istio-system", "ingress1", "old.example.com") + &rest;
    let after = ingress("istio-system", "ingress1", "new.example.com") + &rest;
    let changes = ChangeSet::of(ObjectKey::new(ResourceKind::Ingress, "istio-system", "ingress1"));
    check(&before, &after, &changes, "Ingress load balancer changed");

    let before = ingress_gateway_service("lb", &[LB])
        + &gateway("istio-system", "gw", &["*.bar.com"], &[])
        + &virtual_service("apps", "vs", &["foo.bar.com"], &["istio-system/gw"], &[]);
    let after = before.replace("*.bar.com", "*.other.com");
    let changes = ChangeSet::of(ObjectKey::new(ResourceKind::IstioGateway, "istio-system", "gw"));
    check(&before, &after, &changes, "Gateway hosts changed");
    let gone = ingress_gateway_service("lb", &[LB])
        + &virtual_service("apps", "vs", &["foo.bar.com"], &["istio-system/gw"], &[]);
    check(&before, &gone, &changes, "Gateway deleted");
}
