//! The flags, checked and interpreted once: every template, selector, filter and network
//! is parsed here and nowhere else, and the rest of the binary wires trait objects from the result, never
//! from argv. Each check fails with one line that names the flags and what to do, before anything
//! connects anywhere, so a bad Deployment fails fast and plainly.
//!
//! One function per command: [`endpoints`] reads what the sources and the pipeline need; [`controller`]
//! adds what only the controller reads (provider, registry, Kubernetes client), so `extdns endpoints`
//! accepts a Deployment's arguments without caring about its provider settings.
//!
//! Each child module turns the flags of one area (a provider, a source, the registry, the client, leader
//! election) into that area's configuration type; this module puts them together. Children share only the
//! helpers here, never each other, so one provider's flags can be read without reading another's.

pub mod aws;
pub mod azure;
pub mod cloudflare;
pub mod coredns;
mod crd;
pub mod dns_server;
mod f5;
pub mod fleet;
mod gateway;
pub mod google;
mod ingress;
mod kube;
pub mod leader;
mod node;
pub(crate) mod pdns;
pub mod pihole;
mod pipeline;
mod pod;
mod registry;
mod rfc2136;
mod service;
mod traefik;
mod unsupported;
pub mod webhook;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use extdns_controller::{ControllerConfig, DeletionGuard};
use extdns_endpoint::{DomainFilter, RecordType};
use extdns_informer::PodAnnotationPrefixes;
use extdns_informer::manifests::LoadOptions;
use extdns_informer::view::{F5Kind, RouteKind};
use extdns_plan::{PlanConfig, Policy};
use extdns_provider::pace::Rate;
use extdns_provider::{Batching, ZoneSelection};
use extdns_registry::TxtRegistryConfig;
use extdns_source::template::{TemplateKind, TemplateUse, template_fields};
use extdns_source::{AnnotationError, Annotations, FqdnTemplate, Selector, SourceConfig};
use extdns_source_istio::IstioSourceConfig;
use extdns_source_service::ServiceSourceConfig;
// --- contour-httpproxy and openshift-route sources ---
use extdns_source_openshift::RouteSourceConfig;

pub use extdns_wiring::{
    ClusterSettings, EnabledSource, KubeSettings, ProviderSettings, RegistrySettings, Settings, SourceSettings,
};

pub use self::leader::LeaderSettings;
pub use self::webhook::WebhookServerSettings;
use crate::flags::{Flags, ProviderName, RegistryName, SourceName};

/// A configuration extdns refuses to start with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
#[non_exhaustive]
pub struct ValidationError(pub String);

fn fail<T>(message: impl Into<String>) -> Result<T, ValidationError> {
    Err(ValidationError(message.into()))
}

/// A rate flag in requests a second (`--provider-write-rate`, `--provider-request-rate`): 0 is `None`, what
/// `zero` says the provider does then; anything else must be a positive number.
fn rate(flag: &str, per_second: f64, requests: &str, zero: &str) -> Result<Option<Rate>, ValidationError> {
    if per_second == 0.0 {
        return Ok(None);
    }
    match Rate::per_second(per_second) {
        Some(rate) => Ok(Some(rate)),
        None => fail(format!(
            "{flag}={per_second}: want a positive number of {requests} a second (0 for {zero})"
        )),
    }
}

/// The zones a cloud provider manages, the same flags for every one: the domain filters and
/// `--zone-id-filter` as the providers that match it as written take it, the values given, empty ones
/// dropped (Route53 then strips its `/hostedzone/` prefix).
fn zones(flags: &Flags, domain_filter: &DomainFilter) -> ZoneSelection {
    ZoneSelection {
        domain_filter: domain_filter.clone(),
        zone_ids: flags
            .provider
            .zone_id_filter
            .iter()
            .filter(|z| !z.is_empty())
            .cloned()
            .collect(),
    }
}

/// How a provider batches its writes, from its batch size flag (named in the error; at least 1 when
/// `positive`, else 0 means the API's own limit) and its batch interval flag.
fn batching(
    size_flag: &str,
    size: impl Into<i64>,
    interval: std::time::Duration,
    positive: bool,
) -> Result<Batching, ValidationError> {
    Ok(Batching::new(count(size_flag, size, positive)?, interval))
}

/// A count flag as the configuration's type: at least 1 when `positive`, else at least 0.
fn count<T: TryFrom<i64>>(flag: &str, value: impl Into<i64>, positive: bool) -> Result<T, ValidationError> {
    let value = value.into();
    match T::try_from(value) {
        Ok(v) if value >= i64::from(positive) => Ok(v),
        _ if positive => fail(format!("{flag} must be at least 1 (got {value})")),
        _ => fail(format!("{flag} must not be negative (got {value})")),
    }
}

/// A variable of `env` as providers read one: trimmed, unset when empty.
fn env_value(env: Env<'_>, name: &str) -> Option<String> {
    env(name).map(|v| v.trim().to_string()).filter(|v| !v.is_empty())
}

fn invalid(message: impl Into<String>) -> ValidationError {
    ValidationError(message.into())
}

/// The source `--source` names, in the form the wiring builds it from; `None` for the other external-dns
/// names, which parse but are refused.
fn enabled_source(name: SourceName) -> Option<EnabledSource> {
    Some(match name {
        SourceName::Service => EnabledSource::Service,
        SourceName::GatewayHttpRoute => EnabledSource::Route(RouteKind::Http),
        SourceName::GatewayGrpcRoute => EnabledSource::Route(RouteKind::Grpc),
        SourceName::GatewayTlsRoute => EnabledSource::Route(RouteKind::Tls),
        SourceName::GatewayTcpRoute => EnabledSource::Route(RouteKind::Tcp),
        SourceName::GatewayUdpRoute => EnabledSource::Route(RouteKind::Udp),
        SourceName::Ingress => EnabledSource::Ingress,
        SourceName::Crd => EnabledSource::Crd,
        SourceName::Node => EnabledSource::Node,
        SourceName::Pod => EnabledSource::Pod,
        SourceName::F5VirtualServer => EnabledSource::F5(F5Kind::VirtualServer),
        SourceName::F5TransportServer => EnabledSource::F5(F5Kind::TransportServer),
        // --- contour-httpproxy and openshift-route sources ---
        SourceName::ContourHttpProxy => EnabledSource::ContourHttpProxy,
        SourceName::OpenshiftRoute => EnabledSource::OpenShiftRoute,
        SourceName::IstioGateway => EnabledSource::IstioGateway,
        SourceName::IstioVirtualService => EnabledSource::IstioVirtualService,
        SourceName::TraefikProxy => EnabledSource::Traefik,
        // --- ambassador-host source ---
        SourceName::AmbassadorHost => EnabledSource::AmbassadorHost,
        _ => return None,
    })
}

/// `extdns endpoints`: the sources over manifest files.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct EndpointsSettings {
    /// What the sources and the pipeline read.
    pub sources: SourceSettings,
    /// `--manifests`: the files and directories objects are loaded from.
    pub manifests: Vec<PathBuf>,
}

/// The settings of `extdns endpoints`: the source checks, and manifests given.
pub fn endpoints(flags: &Flags) -> Result<EndpointsSettings, ValidationError> {
    let sources = sources(flags)?;
    if flags.offline.manifests.is_empty() {
        return fail("extdns endpoints needs --manifests PATH (files or directories of Kubernetes objects)");
    }
    Ok(EndpointsSettings {
        sources,
        manifests: flags.offline.manifests.clone(),
    })
}

/// What the sources and the source pipeline read (both commands).
pub fn sources(flags: &Flags) -> Result<SourceSettings, ValidationError> {
    unsupported::sources(flags)?;
    let s = &flags.sources;
    if s.source.is_empty() {
        return fail("at least one --source is required");
    }
    let mut enabled = Vec::new();
    for &name in &s.source {
        let Some(source) = enabled_source(name) else {
            if let Some(why) = unsupported::source_refusal(name) {
                return fail(why);
            }
            return fail(format!("source {name} is not supported by extdns yet"));
        };
        if !enabled.contains(&source) {
            enabled.push(source);
        }
    }
    let fqdn_template = FqdnTemplate::parse(&s.fqdn_template)
        .map_err(|e| invalid(format!("--fqdn-template is not a valid template: {e}")))?
        .map(Arc::new);
    if s.ignore_hostname_annotation && fqdn_template.is_none() {
        return fail("--ignore-hostname-annotation requires at least one --fqdn-template");
    }
    let manage_ptr = flags.provider.managed_record_types.iter().any(|t| t == "PTR");
    if s.create_ptr && !manage_ptr {
        return fail("--create-ptr requires PTR in --managed-record-types (e.g. --managed-record-types=PTR)");
    }
    let annotations = match (&s.annotation_prefix, s.enable_legacy_annotation_prefix) {
        (Some(prefix), false) => Annotations::with_prefix(prefix),
        (Some(prefix), true) => Annotations::with_legacy_prefix(prefix),
        // Both prefixes, the GA one first: what the legacy flag asks for, extdns's default.
        (None, _) => Ok(Annotations::default()),
    }
    .map_err(|e| match e {
        AnnotationError::UnderLegacyPrefix(_) => invalid(e.to_string()),
        _ => invalid(format!("--annotation-prefix: {e}")),
    })?;
    let annotations = if s.ignore_target_annotation {
        annotations.ignoring_targets()
    } else {
        annotations
    };
    let mut load_options = LoadOptions::default();
    load_options.pod_annotation_prefixes = PodAnnotationPrefixes::new(annotations.prefixes().to_vec());
    let mut common = SourceConfig::default();
    common.namespace = non_empty(&s.namespace);
    common.annotation_filter = Selector::parse_structured(&s.annotation_filter).map_err(|e| {
        invalid(format!(
            "--annotation-filter {:?} is not a valid selector: {e}",
            s.annotation_filter
        ))
    })?;
    common.label_filter = selector("--label-filter", &s.label_filter)?;
    common.annotations = annotations;
    common.fqdn_template = fqdn_template;
    common.combine_fqdn_annotation = s.combine_fqdn_annotation;
    common.ignore_hostname_annotation = s.ignore_hostname_annotation;
    let service = service::config(flags, common.clone())?;
    let crd = crd::config(flags, &common, &mut load_options.overrides)?;
    load_options.template_fields = kept_template_fields(&enabled, &common, &service)?;
    let ingress = ingress::config(flags, common.clone())?;
    let node = node::config(flags, common.clone(), &service);
    let pod = pod::config(flags, common.clone(), &service);
    if enabled.contains(&EnabledSource::Pod) {
        load_options.pod_annotation_prefixes = pod::kept_annotations(&pod);
    }
    let f5 = f5::config(&enabled, &service, common.clone())?;
    // --- contour-httpproxy and openshift-route sources ---
    let contour = common.clone();
    let router = flags.openshift.openshift_router_name.as_deref().and_then(non_empty);
    let openshift = RouteSourceConfig::new(common.clone(), router);
    let istio = IstioSourceConfig::new(common.clone());
    let traefik = traefik::config(flags, &enabled, &service, common.clone())?;
    // --- ambassador-host source ---
    let ambassador = common.clone();
    let gateway = gateway::config(flags, common)?;
    let pipeline = pipeline::config(flags, manage_ptr)?;
    Ok(SourceSettings {
        enabled,
        service,
        gateway,
        ingress,
        crd,
        f5,
        contour,
        openshift,
        istio,
        pipeline,
        traefik,
        load_options,
        node,
        pod,
        // --- ambassador-host source ---
        ambassador,
    })
}

/// What the informer keeps for the templates: the fields they read, checked against the kinds they run
/// on (external-dns runs `--fqdn-template` on Services, routes, Ingresses, Nodes and Pods,
/// `--fqdn-target-template` on Services, Nodes and Pods).
fn kept_template_fields(
    enabled: &[EnabledSource],
    common: &SourceConfig,
    service: &ServiceSourceConfig,
) -> Result<extdns_informer::TemplateFields, ValidationError> {
    // The crd source runs no template (external-dns: `fqdn-template=false`).
    let kinds: Vec<TemplateKind> = enabled
        .iter()
        .filter_map(|e| match e {
            EnabledSource::Service => Some(TemplateKind::Service),
            EnabledSource::Route(r) => Some(TemplateKind::Route(*r)),
            EnabledSource::Ingress => Some(TemplateKind::Ingress),
            EnabledSource::Crd => None,
            EnabledSource::Node => Some(TemplateKind::Node),
            EnabledSource::Pod => Some(TemplateKind::Pod),
            // external-dns's F5 template records take their targets from --target-template only, which
            // extdns refuses: --fqdn-template never reaches them (docs/migration.md).
            EnabledSource::F5(_) => None,
            // --- contour-httpproxy and openshift-route sources ---
            EnabledSource::ContourHttpProxy => Some(TemplateKind::HttpProxy),
            EnabledSource::OpenShiftRoute => Some(TemplateKind::OpenShiftRoute),
            EnabledSource::IstioGateway => Some(TemplateKind::IstioGateway),
            EnabledSource::IstioVirtualService => Some(TemplateKind::VirtualService),
            // Runs no template: without --target-template (refused) external-dns's makes no record of it.
            EnabledSource::Traefik => None,
            // --- ambassador-host source ---
            // Runs no template: external-dns's ambassador-host source has none (`fqdn-template=false`).
            EnabledSource::AmbassadorHost => None,
        })
        .collect();
    let target_kinds: Vec<TemplateKind> = kinds
        .iter()
        .copied()
        .filter(|k| matches!(k, TemplateKind::Service | TemplateKind::Node | TemplateKind::Pod))
        .collect();
    let mut uses = Vec::new();
    if let Some(t) = &common.fqdn_template {
        uses.push(TemplateUse::new("--fqdn-template", t, &kinds));
    }
    if let Some(t) = &service.fqdn_target_template {
        uses.push(TemplateUse::new("--fqdn-target-template", t, &target_kinds));
    }
    template_fields(&uses).map_err(|e| invalid(e.to_string()))
}

/// Everything the controller reads: [`sources`] plus provider, registry and client settings.
pub fn controller(flags: &Flags) -> Result<Settings, ValidationError> {
    controller_with_env(flags, &process_env)
}

/// [`controller`], with the environment variables providers read credentials and endpoints from taken from
/// `env` rather than the process (one provider object's Secret, `--dns-provider-crds`).
pub fn controller_with_env(flags: &Flags, env: Env<'_>) -> Result<Settings, ValidationError> {
    if flags.provider.dns_provider_crds {
        return fail(
            "--dns-provider-crds takes the providers from DNSProvider and ClusterDNSProvider objects; this command \
             needs one provider from the flags",
        );
    }
    let sources = sources(flags)?;
    let k = &flags.kube;
    for (flag, value) in [
        ("--kube-api-qps", k.kube_api_qps),
        ("--kube-api-burst", k.kube_api_burst),
    ] {
        if value <= 0 {
            return fail(format!("{flag} must be greater than 0 (got {value})"));
        }
    }
    let Some(provider_name) = flags.provider.provider else {
        return fail("--provider is required (e.g. --provider=rfc2136 or --provider=inmemory)");
    };
    unsupported::providers(flags)?;
    let p = &flags.provider;
    let domain_filter = domain_filter(flags)?;
    let r = &flags.registry;
    let registry_name = effective_registry(flags);
    if !r.txt_prefix.is_empty() && !r.txt_suffix.is_empty() {
        return fail("--txt-prefix and --txt-suffix are mutually exclusive");
    }
    if registry_name != RegistryName::Noop && r.txt_owner_id.is_empty() {
        return fail(format!(
            "--txt-owner-id must not be empty with --registry={}",
            registry_name.as_str()
        ));
    }
    let provider = match provider_name {
        ProviderName::Inmemory => ProviderSettings::InMemory {
            zones: flags.inmemory.inmemory_zone.clone(),
            write_rate: None,
        },
        ProviderName::Rfc2136 => ProviderSettings::Rfc2136(Box::new(rfc2136::config(flags)?)),
        ProviderName::Aws => ProviderSettings::Aws(Box::new(aws::config(flags, &domain_filter, env)?)),
        ProviderName::Pdns => ProviderSettings::Pdns(Box::new(pdns::config(flags, &domain_filter)?)),
        ProviderName::Coredns | ProviderName::Skydns => {
            ProviderSettings::Coredns(Box::new(coredns::config(flags, &domain_filter, env)?))
        }
        ProviderName::Cloudflare => {
            ProviderSettings::Cloudflare(Box::new(cloudflare::config(flags, &domain_filter, env)?))
        }
        ProviderName::Google => ProviderSettings::Google(Box::new(google::config(flags, &domain_filter, env)?)),
        ProviderName::Azure | ProviderName::AzureDns => ProviderSettings::Azure(Box::new(azure::config(
            flags,
            extdns_provider_azure::Kind::Public,
            &domain_filter,
            env,
        )?)),
        ProviderName::AzurePrivateDns => ProviderSettings::Azure(Box::new(azure::config(
            flags,
            extdns_provider_azure::Kind::Private,
            &domain_filter,
            env,
        )?)),
        ProviderName::Pihole => ProviderSettings::Pihole(Box::new(pihole::config(flags, &domain_filter)?)),
        ProviderName::DnsServer => ProviderSettings::DnsServer(Arc::new(dns_server::config(flags)?)),
        ProviderName::Webhook => ProviderSettings::Webhook(Box::new(webhook::config(flags)?)),
        other => ProviderSettings::Unsupported(other.as_str()),
    };
    let mut provider = provider;
    provider.set_write_rate(rate(
        "--provider-write-rate",
        p.provider_write_rate,
        "write requests",
        "no limit",
    )?);
    // The request budget of one cloud account, which every pipeline of the account shares
    // (`extdns_provider::budget`); unset, each cloud's documented limit stays.
    let documented = "the cloud's documented limit";
    if rate(
        "--provider-request-rate",
        p.provider_request_rate,
        "requests",
        documented,
    )?
    .is_some()
    {
        provider.set_request_rate(p.provider_request_rate);
    }
    let managed_types = record_types(&p.managed_record_types);
    let excluded_types = record_types(&p.exclude_record_types);
    // A hand-over (docs/migration.md) rewrites ownership records: TXT records, a DNSRecord in place
    // (--registry=crd) or a DynamoDB item in place (--registry=dynamodb).
    let handing_over = !r.txt_release_to_owner.is_empty() || !r.txt_adopt_from_owner.is_empty();
    if handing_over
        && !matches!(
            registry_name,
            RegistryName::Txt | RegistryName::Crd | RegistryName::Dynamodb
        )
    {
        return Err(invalid(format!(
            "--txt-release-to-owner and --txt-adopt-from-owner need --registry=txt, crd or dynamodb, not \
             --registry={}",
            registry_name.as_str()
        )));
    }
    let registry = match registry_name {
        RegistryName::Txt => {
            let mut config = TxtRegistryConfig::new(registry::ownership(flags)?);
            config.managed_types = managed_types.clone();
            config.excluded_types = excluded_types.clone();
            config.store = registry::store(flags, &provider)?;
            config.shared = shared_names(flags);
            RegistrySettings::Txt(Box::new(config))
        }
        RegistryName::Noop => RegistrySettings::Noop,
        RegistryName::Crd => RegistrySettings::Crd(registry::crd(flags)?),
        RegistryName::Dynamodb => RegistrySettings::Dynamodb(Box::new(registry::dynamodb(
            flags,
            &managed_types,
            &excluded_types,
            env,
        )?)),
        other => RegistrySettings::Unsupported(other.as_str()),
    };
    let policy: Policy = r
        .policy
        .as_str()
        .parse()
        .map_err(|e| invalid(format!("--policy: {e}")))?;
    let plan = PlanConfig {
        policy,
        managed_types,
        excluded_types,
        domain_filter,
        owner_id: registry.owner_id().to_string(),
        old_owner_id: non_empty(&r.migrate_from_txt_owner),
        release_to: non_empty(&r.txt_release_to_owner),
        adopt_from: non_empty(&r.txt_adopt_from_owner),
    };
    let c = &flags.control;
    let controller = ControllerConfig {
        interval: c.interval,
        min_event_sync_interval: c.min_event_sync_interval,
        min_incremental_write_interval: if c.min_event_sync_interval_explicit {
            c.min_event_sync_interval
        } else {
            Duration::ZERO
        },
        events: c.events,
        dry_run: c.dry_run,
        plan,
        deletion_guard: DeletionGuard::new(c.deletion_guard_percent, c.deletion_guard_min),
        // The one cache of provider records is the controller's: it serves both `--provider-cache-time` (any
        // registry) and the TXT registry's `--txt-cache-interval`; the longer of the two wins, as each alone
        // would keep the records at least that long.
        records_cache_interval: flags
            .provider
            .provider_cache_time
            .max(match registry_name {
                RegistryName::Txt | RegistryName::Dynamodb => r.txt_cache_interval,
                _ => Duration::ZERO,
            })
            .max(
                p.provider_reread_interval
                    .unwrap_or_else(|| provider.default_reread_interval()),
            ),
    };
    let leader = leader::config(&flags.leader)?;
    if leader.is_some() && c.once {
        return fail("--leader-elect and --once exclude each other: a single sync has nothing to share");
    }
    if leader.is_some() && !flags.offline.manifests.is_empty() {
        return fail("--leader-elect needs the API server for its Lease; it cannot be used with --manifests");
    }
    let events = events(flags);
    if events.any() && !flags.offline.manifests.is_empty() {
        return fail("--events-emit needs the API server to send the events to; it cannot be used with --manifests");
    }
    let cluster = if flags.offline.manifests.is_empty() {
        ClusterSettings::ApiServer(Box::new(kube::config(flags, &sources)))
    } else {
        ClusterSettings::Manifests(flags.offline.manifests.clone())
    };
    Ok(Settings {
        sources,
        provider,
        registry,
        controller,
        cluster,
        once: c.once,
        metrics_address: c.metrics_address.clone(),
        leader,
        events,
        // Manifests have no API server to write to.
        status_updates: c.status_updates && flags.offline.manifests.is_empty(),
    })
}

/// The warnings of a command that builds a provider, logged once logging is up: a deprecated spelling, a
/// registry the provider cannot hold.
pub fn log_warnings(flags: &Flags) {
    match flags.provider.provider {
        Some(ProviderName::Rfc2136) if flags.rfc2136.tsig_axfr => {
            tracing::warn!("--rfc2136-tsig-axfr is deprecated: use --rfc2136-axfr");
        }
        Some(ProviderName::Pihole) if effective_registry(flags) == RegistryName::Txt => {
            tracing::warn!(
                "--registry=txt with --provider=pihole: Pi-hole stores no TXT records, so every change that \
                 needs an ownership record is refused; run --registry=noop as external-dns's Pi-hole \
                 tutorial says"
            );
        }
        _ => {}
    }
}

/// `--events-emit`: the kinds of Kubernetes Events to emit.
fn events(flags: &Flags) -> extdns_controller::EventsConfig {
    let wants = |kind: &str| flags.control.events_emit.iter().any(|k| k == kind);
    extdns_controller::EventsConfig::new(wants("RecordReady"), wants("RecordDeleted"), wants("RecordError"))
}

/// `--registry`, or its default: `noop` with `--provider=dns-server` (the zones it serves are extdns's alone,
/// so there is nobody to tell its records from), `txt` otherwise, as external-dns.
fn effective_registry(flags: &Flags) -> RegistryName {
    if !flags.registry.registry_explicit && flags.provider.provider == Some(ProviderName::DnsServer) {
        RegistryName::Noop
    } else {
        flags.registry.registry
    }
}

/// `--domain-filter`, `--exclude-domains` and their regular-expression forms, as one filter.
pub fn domain_filter(flags: &Flags) -> Result<DomainFilter, ValidationError> {
    let p = &flags.provider;
    DomainFilter::from_flags(
        &p.domain_filter,
        &p.exclude_domains,
        &p.regex_domain_filter,
        &p.regex_domain_exclusion,
    )
    .map_err(|e| invalid(format!("--regex-domain-filter/--regex-domain-exclusion: {e}")))
}

/// `--tls-ca`, `--tls-client-cert` and `--tls-client-cert-key`, with the provider's own skip-verify flag.
fn tls_options(flags: &Flags, skip_verify: bool) -> extdns_provider::TlsOptions {
    let p = &flags.provider;
    extdns_provider::TlsOptions {
        skip_verify,
        ca_file: tls_path(&p.tls_ca),
        client_cert: tls_path(&p.tls_client_cert),
        client_key: tls_path(&p.tls_client_cert_key),
    }
}

fn selector(flag: &str, value: &str) -> Result<Selector, ValidationError> {
    Selector::parse(value).map_err(|e| invalid(format!("{flag} {value:?} is not a valid selector: {e}")))
}

fn record_types(values: &[String]) -> Vec<RecordType> {
    values.iter().map(|v| RecordType::from(v.as_str())).collect()
}

fn non_empty(s: &str) -> Option<String> {
    if s.is_empty() { None } else { Some(s.to_string()) }
}

/// Reads one environment variable: the process's or a test's.
pub type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// One variable of the process environment, where providers read credentials and endpoints as
/// external-dns does.
fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// A `--tls-*` file flag: unset when empty, as external-dns reads them.
fn tls_path(s: &str) -> Option<PathBuf> {
    (!s.trim().is_empty()).then(|| PathBuf::from(s.trim()))
}

/// The shared names' settings (issue 47, docs/shared-names.md): `--shared-owner-ttl`, and the heartbeat
/// every `--interval`. A TTL under three intervals would prune live owners between two heartbeats: it is
/// raised to three intervals rather than refused, so a long `--interval` without shared names starts as before.
fn shared_names(flags: &Flags) -> extdns_registry::SharedConfig {
    let every = flags.control.interval;
    extdns_registry::SharedConfig::new(flags.registry.shared_owner_ttl.max(every * 3), every)
}

#[cfg(test)]
mod tests;
