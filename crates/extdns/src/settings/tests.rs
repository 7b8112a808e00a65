use super::*;
use extdns_informer::{KindOverrides, ResourceKind};
use extdns_source::{PREFIX_ALPHA, PREFIX_GA};
use std::collections::HashMap;

/// The flags of `extdns ARGS...`, for every child's tests; a command line that does not parse is a bug
/// of the test.
pub(super) fn test_flags<'a>(args: impl IntoIterator<Item = &'a str>) -> Flags {
    let args: Vec<&str> = std::iter::once("extdns").chain(args).collect();
    match crate::flags::try_parse_from(&args) {
        Ok(cli) => cli.flags,
        Err(e) => panic!("{args:?}: {e}"),
    }
}

/// An environment of `pairs` only, as the settings read variables.
pub(super) fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let vars: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    move |k| vars.get(k).cloned()
}

/// The flags of `extdns --source=service --provider=PROVIDER ARGS...`, for the providers' tests.
pub(super) fn provider_flags(provider: &str, args: &[&str]) -> Flags {
    let provider = format!("--provider={provider}");
    test_flags(
        ["--source=service", provider.as_str()]
            .into_iter()
            .chain(args.iter().copied()),
    )
}

fn flags<S: AsRef<str>>(args: &[S]) -> Flags {
    test_flags(args.iter().map(AsRef::as_ref))
}

fn sources_err<S: AsRef<str>>(args: &[S]) -> String {
    sources(&flags(args)).err().map(|e| e.0).unwrap_or_default()
}

/// `--source=service` and `arg` are refused by the source checks with a message that starts with `start`
/// and holds each of `words`.
fn refused(arg: &str, start: &str, words: &[&str]) {
    let e = sources_err(&["--source=service", arg]);
    assert!(
        e.starts_with(start) && words.iter().all(|w| e.contains(w)),
        "{arg}: {e}"
    );
}

/// `--source=service` and `arg` pass the source checks.
fn accepted(arg: &str) {
    assert_eq!(sources_ok(&flags(&["--source=service", arg])), None, "{arg}");
}

fn controller_err<S: AsRef<str>>(args: &[S]) -> String {
    controller(&flags(args)).err().map(|e| e.0).unwrap_or_default()
}

/// No error, or the one the settings were refused with.
fn sources_ok(f: &Flags) -> Option<ValidationError> {
    sources(f).err()
}

fn controller_ok(f: &Flags) -> Option<ValidationError> {
    controller(f).err()
}

const RFC2136: &[&str] = &[
    "--source=service",
    "--provider=rfc2136",
    "--rfc2136-host=127.0.0.1",
    "--rfc2136-zone=example.com",
    "--rfc2136-tsig-keyname=k",
    "--rfc2136-tsig-secret=c2VjcmV0",
];

/// The service source and the in-memory provider, then `extra`.
fn inmemory_with(extra: &[&str]) -> Vec<String> {
    ["--source=service", "--provider=inmemory"]
        .iter()
        .chain(extra)
        .map(|s| s.to_string())
        .collect()
}

fn rfc2136_with(extra: &[&str]) -> Vec<String> {
    RFC2136.iter().chain(extra).map(|s| s.to_string()).collect()
}

/// Asserts `extdns --source=service --provider=inmemory EXTRA...` is refused with an error starting
/// `expected`.
fn assert_refused(extra: &[&str], expected: &str) {
    let e = controller_err(&inmemory_with(extra));
    assert!(e.starts_with(expected), "{e}");
}

/// The settings of `extdns --source=service --provider=inmemory EXTRA...`.
fn inmemory(extra: &[&str]) -> Result<Settings, ValidationError> {
    controller(&flags(&inmemory_with(extra)))
}

/// The TXT registry's configuration `s` holds; panics naming the registry it holds instead.
fn txt_registry(s: &Settings) -> &TxtRegistryConfig {
    match &s.registry {
        RegistrySettings::Txt(config) => config,
        other => panic!("expected the TXT registry, got {other:?}"),
    }
}

/// The CRD registry's configuration `s` holds; panics naming the registry it holds instead.
fn crd_registry(s: &Settings) -> &extdns_registry_crd::CrdRegistryConfig {
    match &s.registry {
        RegistrySettings::Crd(config) => config,
        other => panic!("expected the CRD registry, got {other:?}"),
    }
}

#[test]
fn events_are_off_unless_asked_for_and_need_the_api_server() -> Result<(), ValidationError> {
    let none = inmemory(&[])?;
    assert!(!none.events.any());
    let some = inmemory(&["--events-emit=RecordReady", "--events-emit=RecordError"])?;
    assert_eq!(some.events, extdns_controller::EventsConfig::new(true, false, true));
    assert_refused(
        &["--manifests=x.yaml", "--events-emit=RecordError"],
        "--events-emit needs the API server",
    );
    Ok(())
}

#[test]
fn provider_cache_time_and_txt_cache_interval_keep_the_records_for_the_longer_of_the_two() -> Result<(), ValidationError>
{
    let interval = |extra: &[&str]| -> Result<Duration, ValidationError> {
        let args: Vec<&str> = ["--source=service", "--provider=inmemory"]
            .iter()
            .chain(extra)
            .copied()
            .collect();
        Ok(controller(&flags(&args))?.controller.records_cache_interval)
    };
    assert_eq!(interval(&[])?, Duration::ZERO);
    assert_eq!(interval(&["--provider-cache-time=1m"])?, Duration::from_secs(60));
    assert_eq!(interval(&["--txt-cache-interval=2m"])?, Duration::from_secs(120));
    assert_eq!(
        interval(&["--provider-cache-time=3m", "--txt-cache-interval=2m"])?,
        Duration::from_secs(180)
    );
    // Without the TXT registry only the provider's cache applies.
    assert_eq!(
        interval(&["--registry=noop", "--provider-cache-time=1m", "--txt-cache-interval=2m"])?,
        Duration::from_secs(60)
    );
    Ok(())
}

#[test]
fn a_plain_configuration_is_valid() {
    assert_eq!(sources_ok(&flags(&["--source=service"])), None);
    assert_eq!(controller_ok(&flags(&inmemory_with(&[]))), None);
    assert_eq!(controller_ok(&flags(RFC2136)), None);
}

#[test]
fn ignore_hostname_annotation_requires_an_fqdn_template() {
    let e = sources_err(&["--source=service", "--ignore-hostname-annotation"]);
    assert_eq!(e, "--ignore-hostname-annotation requires at least one --fqdn-template");
    let ok = flags(&[
        "--source=service",
        "--ignore-hostname-annotation",
        "--fqdn-template={{.Name}}.example.com",
    ]);
    assert_eq!(sources_ok(&ok), None);
}

#[test]
fn unsupported_sources_are_a_clear_startup_error() {
    assert_eq!(
        sources_err(&["--source=service", "--source=unstructured"]),
        "source unstructured is not supported by extdns yet"
    );
}

#[test]
fn the_node_source_reads_the_node_flags_and_the_fqdn_target_template() -> Result<(), ValidationError> {
    let s = sources(&flags(&[
        "--source=node",
        "--no-exclude-unschedulable",
        "--expose-internal-ipv6",
        "--fqdn-template={{.Name}}.nodes.example.org",
        "--fqdn-target-template={{.Name}}.example.org:192.0.2.1",
    ]))?;
    assert_eq!(s.enabled, vec![EnabledSource::Node]);
    assert!(!s.node.exclude_unschedulable && s.node.expose_internal_ipv6);
    assert!(s.node.common.fqdn_template.is_some() && s.node.fqdn_target_template.is_some());
    assert!(
        sources(&flags(&["--source=node"]))?.node.exclude_unschedulable,
        "excluded by default"
    );
    let e = sources_err(&["--source=node", "--fqdn-template={{.Spec.Nope}}.example.org"]);
    assert!(e.contains("Spec.Nope") && e.contains("Node"), "{e}");
    Ok(())
}

#[test]
fn the_pod_source_reads_the_pod_flags_and_keeps_the_annotations_it_filters_on() -> Result<(), ValidationError> {
    let s = sources(&flags(&[
        "--source=pod",
        "--ignore-non-host-network-pods",
        "--pod-source-domain=pods.example.org",
        "--compatibility=kops-dns-controller",
        "--annotation-filter=team.example.org/dns=public",
    ]))?;
    assert_eq!(s.enabled, vec![EnabledSource::Pod]);
    assert!(s.pod.ignore_non_host_network_pods && s.pod.kops_dns_controller);
    assert_eq!(s.pod.pod_source_domain.as_deref(), Some("pods.example.org"));
    let kept = &s.load_options.pod_annotation_prefixes;
    for key in [
        "external-dns.alpha.kubernetes.io/hostname",
        "dns.alpha.kubernetes.io/external",
        "team.example.org/dns",
    ] {
        assert!(kept.keeps(key), "{key}");
    }
    assert!(!kept.keeps("team.example.org/other"));
    let service_only = sources(&flags(&[
        "--source=service",
        "--annotation-filter=team.example.org/dns=public",
    ]))?;
    assert!(
        !service_only
            .load_options
            .pod_annotation_prefixes
            .keeps("team.example.org/dns"),
        "without the pod source Pods keep only the prefixes"
    );
    let templated = sources(&flags(&[
        "--source=pod",
        "--fqdn-template={{.Status.PodIP}}.example.org",
    ]))?;
    assert!(templated.pod.common.fqdn_template.is_some());
    Ok(())
}

#[test]
fn the_crd_source_reads_the_configured_group_and_kind() -> Result<(), ValidationError> {
    let default = sources(&flags(&["--source=crd"]))?;
    assert_eq!(default.enabled, vec![EnabledSource::Crd]);
    assert_eq!(
        default.load_options.overrides,
        KindOverrides::new(),
        "the default needs no override"
    );
    let nginx = controller(&flags(&[
        "--source=crd",
        "--provider=inmemory",
        "--crd-source-apiversion=externaldns.nginx.org/v1",
        "--label-filter=team=a",
    ]))?;
    let r = nginx
        .sources
        .load_options
        .overrides
        .api_resource(ResourceKind::DnsEndpoint);
    assert_eq!(
        (r.group.as_str(), r.version.as_str(), r.kind.as_str(), r.plural.as_str()),
        ("externaldns.nginx.org", "v1", "DNSEndpoint", "dnsendpoints")
    );
    let ClusterSettings::ApiServer(kube) = &nginx.cluster else {
        panic!("the API server is the default cluster");
    };
    assert_eq!(kube.live.overrides, nginx.sources.load_options.overrides);
    assert_eq!(nginx.sources.crd.label_filter.to_string(), "team=a");
    let e = sources_err(&["--source=crd", "--crd-source-apiversion=a/b/c"]);
    assert!(e.starts_with("--crd-source-apiversion"), "{e}");
    Ok(())
}

#[test]
fn ingress_class_and_a_class_annotation_filter_are_refused_together() {
    assert_eq!(
        sources_err(&[
            "--source=ingress",
            "--ingress-class=nginx",
            "--annotation-filter=kubernetes.io/ingress.class in (nginx)"
        ]),
        "--ingress-class is mutually exclusive with the kubernetes.io/ingress.class annotation filter"
    );
    let ok = flags(&[
        "--source=ingress",
        "--ingress-class=nginx",
        "--ingress-class=public",
        "--ignore-ingress-tls-spec",
        "--annotation-filter=team=dns",
    ]);
    assert_eq!(sources_ok(&ok), None);
}

#[test]
fn selectors_must_parse() {
    refused(
        "--label-filter=a in (b",
        "--label-filter \"a in (b\" is not a valid selector",
        &[],
    );
    refused("--annotation-filter=a=b=c", "--annotation-filter", &[]);
    refused("--gateway-label-filter=in in in", "--gateway-label-filter", &[]);
    accepted("--label-filter=app in (a,b),!skip");
}

/// external-dns #6610: an invalid `--label-filter` or `--annotation-filter` stops the start (exit 2, one line
/// naming the flag), the annotation filter being a structured label selector (no `!=`, `>`, `<`).
#[test]
fn filter_validation_6610_invalid_filters_are_startup_errors() {
    refused(
        "--annotation-filter=team!=dns",
        "--annotation-filter \"team!=dns\" is not a valid selector",
        &["\"!=\""],
    );
    refused("--annotation-filter=n>1", "--annotation-filter", &["\">\""]);
    refused("--label-filter=-bad=x", "--label-filter", &["\"-bad\""]);
    accepted("--label-filter=team!=dns,n>1");
    accepted("--annotation-filter=team=dns,env in (a,b),!skip");
}

/// external-dns #6703: `--enable-legacy-annotation-prefix` adds the legacy prefix after `--annotation-prefix`;
/// without `--annotation-prefix` extdns reads both prefixes anyway.
#[test]
fn legacy_annotation_prefix_6703_the_flag_picks_the_prefixes_read() -> Result<(), ValidationError> {
    let prefixes = |args: &[&str]| -> Result<Vec<String>, ValidationError> {
        let s = sources(&flags(&[&["--source=service"], args].concat()))?;
        Ok(s.service.common.annotations.prefixes().to_vec())
    };
    let both = [PREFIX_GA.to_string(), PREFIX_ALPHA.to_string()];
    assert_eq!(prefixes(&[])?, both);
    assert_eq!(prefixes(&["--enable-legacy-annotation-prefix"])?, both);
    assert_eq!(prefixes(&["--no-enable-legacy-annotation-prefix"])?, both);
    assert_eq!(
        prefixes(&["--annotation-prefix=dns.example.org/"])?,
        ["dns.example.org/"]
    );
    let custom = [
        "--annotation-prefix=dns.example.org/",
        "--enable-legacy-annotation-prefix=true",
    ];
    assert_eq!(prefixes(&custom)?, ["dns.example.org/", PREFIX_ALPHA]);
    // Pods keep the annotations of every prefix read.
    let s = sources(&flags(&[&["--source=service"], &custom[..]].concat()))?;
    assert_eq!(
        s.load_options.pod_annotation_prefixes,
        PodAnnotationPrefixes::new(["dns.example.org/", PREFIX_ALPHA])
    );
    accepted("--annotation-prefix=external-dns.alpha.kubernetes.io/");
    let e = sources_err(&[
        "--source=service",
        "--annotation-prefix=external-dns.alpha.kubernetes.io/",
        "--enable-legacy-annotation-prefix",
    ]);
    assert!(
        e.starts_with("--enable-legacy-annotation-prefix cannot be used with --annotation-prefix"),
        "{e}"
    );
    Ok(())
}

#[test]
fn annotation_prefix_must_end_with_a_slash() {
    refused("--annotation-prefix=example.com", "", &["--annotation-prefix", "'/'"]);
    refused("--annotation-prefix=", "", &["--annotation-prefix", "empty"]);
    accepted("--annotation-prefix=example.com/");
}

#[test]
fn templates_must_parse() {
    refused(
        "--fqdn-template={{.Name",
        "--fqdn-template is not a valid template",
        &[],
    );
    refused(
        "--fqdn-target-template={{end}}",
        "--fqdn-target-template is not a valid template",
        &[],
    );
}

#[test]
fn networks_must_parse() {
    refused(
        "--target-net-filter=10.0.0.0/33",
        "",
        &["--target-net-filter", "10.0.0.0/33"],
    );
    refused("--exclude-target-net=nope", "", &["--exclude-target-net"]);
    refused("--nat64-networks=64:ff9b::/64", "", &["--nat64-networks", "/96"]);
    refused("--nat64-networks=10.0.0.0/96", "", &["--nat64-networks"]);
    accepted("--nat64-networks=64:ff9b::/96");
}

#[test]
fn create_ptr_requires_ptr_to_be_managed() {
    refused(
        "--create-ptr",
        "--create-ptr requires PTR in --managed-record-types",
        &[],
    );
    let ok = flags(&[
        "--source=service",
        "--create-ptr",
        "--managed-record-types=A",
        "--managed-record-types=PTR",
    ]);
    assert_eq!(sources_ok(&ok), None);
}

#[test]
fn provider_is_required_by_the_controller_only() {
    let f = flags(&["--source=service"]);
    assert_eq!(sources_ok(&f), None);
    assert!(controller_err(&["--source=service"]).starts_with("--provider is required"));
}

#[test]
fn kube_client_rates_must_be_positive() {
    let e = controller_err(&inmemory_with(&["--kube-api-qps=0"]));
    assert_eq!(e, "--kube-api-qps must be greater than 0 (got 0)");
    let e = controller_err(&inmemory_with(&["--kube-api-burst=-1"]));
    assert_eq!(e, "--kube-api-burst must be greater than 0 (got -1)");
}

#[test]
fn txt_prefix_and_suffix_are_mutually_exclusive() {
    let e = controller_err(&inmemory_with(&["--txt-prefix=a-", "--txt-suffix=-b"]));
    assert_eq!(e, "--txt-prefix and --txt-suffix are mutually exclusive");
}

#[test]
fn txt_owner_id_must_not_be_empty() {
    assert_refused(&["--txt-owner-id="], "--txt-owner-id must not be empty");
    let ok = flags(&inmemory_with(&["--txt-owner-id=", "--registry=noop"]));
    assert_eq!(controller_ok(&ok), None);
}

#[test]
fn regex_domain_filters_must_compile() {
    assert_refused(&["--regex-domain-filter=(a"], "--regex-domain-filter");
}

#[test]
fn rfc2136_gss_tsig_is_refused() {
    let e = controller_err(&rfc2136_with(&["--rfc2136-gss-tsig"]));
    assert!(e.starts_with("Kerberos/GSS-TSIG is not supported by extdns"), "{e}");
}

#[test]
fn rfc2136_batch_size_must_be_at_least_one() {
    let e = controller_err(&rfc2136_with(&["--rfc2136-batch-change-size=0"]));
    assert_eq!(e, "--rfc2136-batch-change-size must be at least 1 (got 0)");
}

#[test]
fn rfc2136_needs_a_host_and_a_zone() {
    let e = controller_err(&["--source=service", "--provider=rfc2136", "--rfc2136-zone=example.com"]);
    assert_eq!(e, "--rfc2136-host is required with --provider=rfc2136");
    let e = controller_err(&["--source=service", "--provider=rfc2136", "--rfc2136-host=ns1"]);
    assert!(
        e.starts_with("--rfc2136-zone is required with --provider=rfc2136"),
        "{e}"
    );
}

#[test]
fn rfc2136_checks_apply_only_to_the_rfc2136_provider() {
    let f = flags(&inmemory_with(&["--rfc2136-gss-tsig", "--rfc2136-batch-change-size=0"]));
    assert_eq!(controller_ok(&f), None);
}

#[test]
fn provider_settings_do_not_affect_the_source_checks() {
    let f = flags(&[
        "--source=service",
        "--provider=rfc2136",
        "--rfc2136-gss-tsig",
        "--txt-prefix=a",
        "--txt-suffix=b",
    ]);
    assert_eq!(sources_ok(&f), None);
}

#[test]
fn manifests_are_required_by_the_preview() {
    let e = endpoints(&flags(&["--source=service"]))
        .err()
        .map(|e| e.0)
        .unwrap_or_default();
    assert!(e.starts_with("extdns endpoints needs --manifests"), "{e}");
    let ok = endpoints(&flags(&["--source=service", "--manifests=x"]));
    assert_eq!(ok.err(), None);
}

#[test]
fn the_plan_owner_id_is_the_registry_ownership_owner_id() -> Result<(), ValidationError> {
    let s = inmemory(&["--txt-owner-id=blue"])?;
    let config = txt_registry(&s);
    assert_eq!(config.ownership.owner_id(), "blue");
    assert_eq!(s.controller.plan.owner_id, "blue");
    let noop = inmemory(&["--registry=noop"])?;
    assert!(matches!(noop.registry, RegistrySettings::Noop));
    assert_eq!(noop.controller.plan.owner_id, "");
    Ok(())
}

#[test]
fn txt_encryption_settings_are_checked_with_the_flags() {
    assert_refused(
        &["--txt-encrypt-enabled"],
        "--txt-encrypt-enabled needs --txt-encrypt-aes-key",
    );
    assert_refused(
        &["--txt-encrypt-enabled", "--txt-encrypt-aes-key=short"],
        "--txt-encrypt-aes-key",
    );
    let noop = flags(&inmemory_with(&["--registry=noop", "--txt-encrypt-enabled"]));
    assert_eq!(controller_ok(&noop), None);
}

#[test]
fn unsupported_providers_and_registries_are_left_to_the_wiring() -> Result<(), ValidationError> {
    let s = controller(&flags(&["--source=service", "--provider=linode", "--registry=aws-sd"]))?;
    assert!(
        matches!(s.provider, ProviderSettings::Unsupported("linode")),
        "{:?}",
        s.provider
    );
    assert_eq!(s.registry.name(), "aws-sd");
    Ok(())
}

#[test]
fn the_crd_registry_owns_as_the_txt_owner_id_in_its_namespace() -> Result<(), ValidationError> {
    let s = inmemory(&["--registry=crd", "--txt-owner-id=blue", "--crd-registry-namespace=dns"])?;
    let config = crd_registry(&s);
    assert_eq!((config.owner_id.as_str(), config.namespace.as_str()), ("blue", "dns"));
    assert_eq!(s.controller.plan.owner_id, "blue");
    let default = inmemory(&["--registry=crd"])?;
    assert_eq!(
        crd_registry(&default).namespace,
        "",
        "the controller's own, found with the client"
    );
    assert_refused(
        &["--registry=crd", "--txt-owner-id=a b"],
        "--txt-owner-id: the owner id \"a b\" cannot be a Kubernetes label value",
    );
    Ok(())
}

#[test]
fn the_crd_registry_hands_over_and_the_noop_registry_refuses_to() -> Result<(), ValidationError> {
    let s = inmemory(&["--registry=crd", "--txt-owner-id=green", "--txt-adopt-from-owner=blue"])?;
    let config = crd_registry(&s);
    assert_eq!(config.adopt_from.as_deref(), Some("blue"));
    assert_eq!(s.controller.plan.adopt_from.as_deref(), Some("blue"));
    let s = inmemory(&["--registry=crd", "--txt-owner-id=blue", "--txt-release-to-owner=green"])?;
    assert_eq!(s.controller.plan.release_to.as_deref(), Some("green"));
    let e = controller_err(&inmemory_with(&[
        "--registry=crd",
        "--txt-owner-id=blue",
        "--txt-adopt-from-owner=blue",
    ]));
    assert!(e.contains("--txt-adopt-from-owner=\"blue\""), "{e}");
    let e = controller_err(&inmemory_with(&["--registry=noop", "--txt-release-to-owner=green"]));
    assert!(
        e.contains("need --registry=txt, crd or dynamodb, not --registry=noop"),
        "{e}"
    );
    Ok(())
}

#[test]
fn events_lift_the_kube_request_timeout() -> Result<(), ValidationError> {
    let timeout = |args: &[&str]| -> Result<Option<Duration>, ValidationError> {
        match controller(&flags(args))?.cluster {
            ClusterSettings::ApiServer(kube) => Ok(kube.client.request_timeout),
            other => panic!("expected the API server, got {other:?}"),
        }
    };
    let base = ["--source=service", "--provider=inmemory"];
    assert_eq!(timeout(&base)?, Some(Duration::from_secs(30)));
    assert_eq!(timeout(&[&base[..], &["--events"]].concat())?, None);
    assert_eq!(
        timeout(&[&base[..], &["--kube-api-request-timeout=0s"]].concat())?,
        None
    );
    Ok(())
}

#[test]
fn label_filters_become_server_side_selectors() -> Result<(), ValidationError> {
    let s = inmemory(&["--label-filter=app=web"])?;
    let ClusterSettings::ApiServer(kube) = &s.cluster else {
        panic!("expected the API server, got {:?}", s.cluster);
    };
    assert_eq!(
        kube.live
            .label_selectors
            .get(&ResourceKind::Service)
            .map(String::as_str),
        Some("app=web")
    );
    assert!(!kube.live.label_selectors.contains_key(&ResourceKind::Gateway));
    Ok(())
}

/// The Istio sources read the Services their Gateways select and the Ingresses they name whatever their
/// labels, as external-dns does: the label filter then stays off those kinds' watches.
#[test]
fn the_istio_sources_keep_services_and_ingresses_unfiltered_by_the_api_server() -> Result<(), ValidationError> {
    let args = [
        "--source=istio-gateway",
        "--source=service",
        "--provider=inmemory",
        "--label-filter=app=web",
    ];
    let s = controller(&flags(&args))?;
    let ClusterSettings::ApiServer(kube) = &s.cluster else {
        panic!("expected the API server, got {:?}", s.cluster);
    };
    assert!(!kube.live.label_selectors.contains_key(&ResourceKind::Service));
    assert!(!kube.live.label_selectors.contains_key(&ResourceKind::Ingress));
    assert!(
        kube.live
            .label_selectors
            .contains_key(&ResourceKind::Route(RouteKind::Http))
    );
    Ok(())
}

/// external-dns runs `--fqdn-target-template` on Traefik routers; extdns does not, so it refuses the pair.
#[test]
fn fqdn_target_template_is_refused_beside_traefik_proxy() {
    let args = [
        "--source=traefik-proxy",
        "--provider=inmemory",
        "--fqdn-target-template={{.Name}}.example.org:192.0.2.1",
    ];
    let err = controller(&flags(&args)).err().map(|e| e.0).unwrap_or_default();
    assert!(err.contains("traefik-proxy"), "{err}");
}

#[test]
fn only_an_explicit_min_event_sync_interval_bounds_incremental_writes() -> Result<(), ValidationError> {
    let config = |extra: &[&str]| -> Result<ControllerConfig, ValidationError> {
        let args: Vec<&str> = ["--source=service", "--provider=inmemory", "--events"]
            .iter()
            .chain(extra)
            .copied()
            .collect();
        Ok(controller(&flags(&args))?.controller)
    };
    let default = config(&[])?;
    assert_eq!(default.min_event_sync_interval, Duration::from_secs(5));
    assert_eq!(default.min_incremental_write_interval, Duration::ZERO);
    let set = config(&["--min-event-sync-interval=5s"])?;
    assert_eq!(set.min_incremental_write_interval, Duration::from_secs(5));
    let set = config(&["--min-event-sync-interval=2s"])?;
    assert_eq!(
        (set.min_event_sync_interval, set.min_incremental_write_interval),
        (Duration::from_secs(2), Duration::from_secs(2))
    );
    Ok(())
}

#[test]
fn the_provider_write_rate_reaches_every_provider() -> Result<(), ValidationError> {
    let provider = |args: &[&str]| -> Result<ProviderSettings, ValidationError> {
        let args: Vec<&str> = ["--source=service"].iter().chain(args).copied().collect();
        Ok(controller(&flags(&args))?.provider)
    };
    let two = Rate::per_second(2.0);
    match provider(&["--provider=inmemory", "--provider-write-rate=2"])? {
        ProviderSettings::InMemory { write_rate, .. } => assert_eq!(write_rate, two),
        other => panic!("{other:?}"),
    }
    match provider(&["--provider=inmemory"])? {
        ProviderSettings::InMemory { write_rate, .. } => assert_eq!(write_rate, None),
        other => panic!("{other:?}"),
    }
    let rfc = [
        "--provider=rfc2136",
        "--rfc2136-host=127.0.0.1",
        "--rfc2136-zone=example.org",
        "--rfc2136-insecure",
        "--provider-write-rate=2",
    ];
    match provider(&rfc)? {
        ProviderSettings::Rfc2136(config) => assert_eq!(config.write_rate, two),
        other => panic!("{other:?}"),
    }
    for bad in ["-1", "NaN", "inf"] {
        let e = controller_err(&[
            "--source=service",
            "--provider=inmemory",
            &format!("--provider-write-rate={bad}"),
        ]);
        assert!(e.starts_with("--provider-write-rate="), "{bad}: {e}");
    }
    Ok(())
}

/// `--txt-ownership` (issue 50): TXT records by default; ownership on the records only where the provider
/// keeps metadata, any other provider refused at startup by name.
#[test]
fn txt_ownership_metadata_is_refused_by_a_provider_without_record_metadata() -> Result<(), ValidationError> {
    let s = inmemory(&[])?;
    let config = txt_registry(&s);
    assert_eq!(config.store, extdns_registry::OwnershipStore::Txt);
    assert_refused(
        &["--txt-ownership=metadata"],
        "--txt-ownership=metadata: provider inmemory keeps no metadata",
    );
    let e = controller_err(&rfc2136_with(&["--txt-ownership=metadata"]));
    assert!(e.contains("provider rfc2136"), "{e}");
    Ok(())
}

fn provider_with(args: &[&str]) -> Result<ProviderSettings, ValidationError> {
    let flags = test_flags(["--source=service"].iter().chain(args).copied());
    let env = env_of(&[("CF_API_TOKEN", "tok")]);
    Ok(controller_with_env(&flags, &env)?.provider)
}

#[test]
fn the_request_rate_sets_each_cloud_s_account_rate_and_zero_keeps_the_documented_one() {
    let cloudflare = |args: &[&str]| match provider_with(&[&["--provider=cloudflare"], args].concat()) {
        Ok(ProviderSettings::Cloudflare(c)) => c.api.requests,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        cloudflare(&[]),
        Some(extdns_provider_cloudflare::API_LIMIT),
        "the documented limit by default"
    );
    assert_eq!(
        cloudflare(&["--provider-request-rate=2"]),
        extdns_provider::pace::Rate::per_second(2.0)
    );
    match provider_with(&["--provider=aws", "--provider-request-rate=20"]) {
        Ok(ProviderSettings::Aws(c)) => assert_eq!(c.api.requests, extdns_provider_aws::AwsConfig::account_rate(20.0)),
        other => panic!("{other:?}"),
    }
    for bad in ["-1", "NaN"] {
        let arg = format!("--provider-request-rate={bad}");
        let e = provider_with(&["--provider=inmemory", &arg]).expect_err("refused");
        assert!(e.0.starts_with("--provider-request-rate="), "{e}");
    }
}

/// `--provider-reread-interval` (issue 50): the clouds rate-limited per account read their zones whole once
/// an hour by default, the others every sync; the flag sets it, and the longest of the caches wins.
#[test]
fn the_rate_limited_clouds_read_their_zones_hourly_and_the_others_every_sync() {
    let interval = |args: &[&str]| {
        let flags = test_flags(["--source=service"].iter().chain(args).copied());
        let env = env_of(&[("CF_API_TOKEN", "tok")]);
        controller_with_env(&flags, &env)
            .map(|s| s.controller.records_cache_interval)
            .map_err(|e| e.to_string())
    };
    let hour = Ok(extdns_wiring::CLOUD_REREAD_INTERVAL);
    assert_eq!(interval(&["--provider=aws"]), hour);
    assert_eq!(interval(&["--provider=cloudflare"]), hour);
    assert_eq!(interval(&["--provider=inmemory"]), Ok(Duration::ZERO));
    assert_eq!(
        interval(&["--provider=inmemory", "--provider-reread-interval=10m"]),
        Ok(Duration::from_secs(600))
    );
    assert_eq!(
        interval(&["--provider=aws", "--provider-reread-interval=0s"]),
        Ok(Duration::ZERO),
        "0s reads every sync"
    );
    assert_eq!(
        interval(&[
            "--provider=aws",
            "--provider-reread-interval=0s",
            "--provider-cache-time=2m"
        ]),
        Ok(Duration::from_secs(120)),
        "the longest of the caches wins"
    );
}

// --- ambassador-host source ---

/// `--source=ambassador-host` is accepted (it was refused before extdns had the source), and the Service a
/// Host's annotation names is read whatever its labels, as external-dns reads it: the label filter then
/// stays off the Service watch, and applies to Hosts on the API server.
#[test]
fn the_ambassador_host_source_is_enabled_and_keeps_services_unfiltered() -> Result<(), ValidationError> {
    let s = sources(&flags(&["--source=ambassador-host"]))?;
    assert_eq!(s.enabled, vec![EnabledSource::AmbassadorHost]);
    let args = [
        "--source=ambassador-host",
        "--provider=inmemory",
        "--label-filter=app=web",
    ];
    let s = controller(&flags(&args))?;
    let ClusterSettings::ApiServer(kube) = &s.cluster else {
        panic!("expected the API server, got {:?}", s.cluster);
    };
    assert!(!kube.live.label_selectors.contains_key(&ResourceKind::Service));
    assert_eq!(
        kube.live
            .label_selectors
            .get(&ResourceKind::AmbassadorHost)
            .map(String::as_str),
        Some("app=web")
    );
    Ok(())
}

#[test]
fn the_shared_owner_ttl_is_never_under_three_intervals() {
    let ttl = |args: &[&str]| {
        let flags = test_flags(["--source=service", "--provider=inmemory"].iter().chain(args).copied());
        shared_names(&flags).owner_ttl
    };
    assert_eq!(ttl(&[]), Duration::from_secs(600));
    assert_eq!(ttl(&["--shared-owner-ttl=5m"]), Duration::from_secs(300));
    // A long interval starts as before: the TTL is raised, not refused.
    assert_eq!(ttl(&["--interval=1h"]), Duration::from_secs(3 * 3600));
    assert_eq!(
        ttl(&["--interval=1m", "--shared-owner-ttl=1m"]),
        Duration::from_secs(180)
    );
}
