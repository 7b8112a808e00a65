//! The flags, checked and interpreted once (§4 "Validation"): every template, selector, filter and network
//! is parsed here and nowhere else, and the rest of the binary wires trait objects from the result, never
//! from argv. Each check fails with one line that names the flags and what to do, before anything
//! connects anywhere, so a bad Deployment fails fast and plainly.
//!
//! One function per command: [`endpoints`] reads what the sources and the pipeline need; [`controller`]
//! adds what only the controller reads (provider, registry, Kubernetes client), so `extdns endpoints`
//! accepts a Deployment's arguments without caring about its provider settings.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use extdns_controller::{ControllerConfig, DeletionGuard};
use extdns_endpoint::{DomainFilter, NetworkList, RecordType, Target, TargetNetFilter, Ttl};
use extdns_informer::manifests::LoadOptions;
use extdns_informer::view::RouteKind;
use extdns_informer::{KindOverrides, LiveOptions, PodAnnotationPrefixes, ResourceKind};
use extdns_plan::{PlanConfig, Policy};
use extdns_provider::pace::Rate;
use extdns_provider_rfc2136::{LoadBalancing, Rfc2136Config, TlsOptions};
use extdns_registry::{Ownership, OwnershipConfig, RegistryError, TxtRegistryConfig};
use extdns_source::template::{TemplateKind, TemplateUse, template_fields};
use extdns_source::wrappers::PipelineConfig;
use extdns_source::{Annotations, FqdnTemplate, Selector, SourceConfig};
use extdns_source_crd::CrdSourceConfig;
use extdns_source_gateway::GatewaySourceConfig;
use extdns_source_ingress::{INGRESS_CLASS_ANNOTATION, IngressSourceConfig};
use extdns_source_service::{ConfigError as ServiceConfigError, ServiceSourceConfig};
use ipnet::Ipv6Net;

use crate::flags::{Compatibility, Flags, LoadBalancingStrategy, ProviderName, RegistryName, SourceName};

/// A configuration extdns refuses to start with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
#[non_exhaustive]
pub struct ValidationError(pub String);

fn fail<T>(message: impl Into<String>) -> Result<T, ValidationError> {
    Err(ValidationError(message.into()))
}

/// `--provider-write-rate`: a number of requests a second; 0 is no limit of extdns's own.
fn write_rate(per_second: f64) -> Result<Option<Rate>, ValidationError> {
    if per_second == 0.0 {
        return Ok(None);
    }
    match Rate::per_second(per_second) {
        Some(rate) => Ok(Some(rate)),
        None => fail(format!(
            "--provider-write-rate={per_second}: want a positive number of write requests a second (0 for no limit)"
        )),
    }
}

fn invalid(message: impl Into<String>) -> ValidationError {
    ValidationError(message.into())
}

/// A source `--source` enables, in the form the wiring builds it from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnabledSource {
    Service,
    Route(RouteKind),
    Ingress,
    Crd,
}

impl EnabledSource {
    /// The sources extdns implements; the other external-dns names parse but are refused.
    fn from_name(name: SourceName) -> Option<EnabledSource> {
        Some(match name {
            SourceName::Service => EnabledSource::Service,
            SourceName::GatewayHttpRoute => EnabledSource::Route(RouteKind::Http),
            SourceName::GatewayGrpcRoute => EnabledSource::Route(RouteKind::Grpc),
            SourceName::GatewayTlsRoute => EnabledSource::Route(RouteKind::Tls),
            SourceName::GatewayTcpRoute => EnabledSource::Route(RouteKind::Tcp),
            SourceName::GatewayUdpRoute => EnabledSource::Route(RouteKind::Udp),
            SourceName::Ingress => EnabledSource::Ingress,
            SourceName::Crd => EnabledSource::Crd,
            _ => return None,
        })
    }
}

/// What the sources and the source pipeline read; both commands build their pipeline from it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SourceSettings {
    /// In `--source` order, each once (external-dns would run a repeated name twice and deduplicate).
    pub enabled: Vec<EnabledSource>,
    /// The service source's configuration; its `common` part is shared with `gateway` (same template).
    pub service: ServiceSourceConfig,
    pub gateway: GatewaySourceConfig,
    pub ingress: IngressSourceConfig,
    pub crd: CrdSourceConfig,
    pub pipeline: PipelineConfig,
    /// Whether load balancer hostnames are looked up, so a resolver is needed at all.
    pub resolve_load_balancer_hostname: bool,
    /// How manifest files are read: Pods keep the annotations under the prefixes the sources read.
    pub load_options: LoadOptions,
}

impl SourceSettings {
    /// What every source shares.
    pub fn common(&self) -> &SourceConfig {
        &self.service.common
    }
}

/// `extdns endpoints`: the sources over manifest files.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct EndpointsSettings {
    pub sources: SourceSettings,
    pub manifests: Vec<PathBuf>,
}

/// The controller: the sources, the provider, the registry, the loop and the cluster view.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Settings {
    pub sources: SourceSettings,
    pub provider: ProviderSettings,
    pub registry: RegistrySettings,
    /// The loop's knobs and the plan's configuration, whose owner id is the registry's.
    pub controller: ControllerConfig,
    pub cluster: ClusterSettings,
    pub once: bool,
    pub metrics_address: String,
    /// `--leader-elect`: the Lease the replicas share; `None` for a single replica.
    pub leader: Option<crate::settings_leader::LeaderSettings>,
    /// `--events-emit`: which Kubernetes Events to emit; nothing by default.
    pub events: extdns_controller::EventsConfig,
}

/// The provider and its configuration. Providers extdns does not implement are refused when the provider
/// is built, as before any check of this module existed (a run-time failure, not a usage error).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ProviderSettings {
    InMemory {
        zones: Vec<String>,
        write_rate: Option<Rate>,
    },
    Rfc2136 {
        config: Box<Rfc2136Config>,
        /// The deprecated spelling was used; warned about once logging is up.
        deprecated_tsig_axfr: bool,
    },
    Aws(Box<extdns_provider_aws::AwsConfig>),
    Pdns {
        config: Box<extdns_provider_pdns::PdnsConfig>,
    },
    Coredns(Box<extdns_provider_coredns::CorednsConfig>),
    Cloudflare(Box<extdns_provider_cloudflare::CloudflareConfig>),
    /// `--provider=webhook`: the records live behind a webhook server.
    Webhook(Box<extdns_provider_webhook::WebhookConfig>),
    Unsupported(ProviderName),
}

impl ProviderSettings {
    /// `--provider-write-rate`, for whichever provider this is.
    fn set_write_rate(&mut self, rate: Option<Rate>) {
        match self {
            ProviderSettings::InMemory { write_rate, .. } => *write_rate = rate,
            ProviderSettings::Rfc2136 { config, .. } => config.write_rate = rate,
            ProviderSettings::Aws(config) => config.write_rate = rate,
            ProviderSettings::Pdns { config } => config.write_rate = rate,
            ProviderSettings::Coredns(config) => config.write_rate = rate,
            ProviderSettings::Cloudflare(config) => config.write_rate = rate,
            ProviderSettings::Webhook(config) => config.write_rate = rate,
            ProviderSettings::Unsupported(_) => {}
        }
    }

    /// external-dns's name of the provider.
    pub fn name(&self) -> &'static str {
        match self {
            ProviderSettings::InMemory { .. } => ProviderName::Inmemory.as_str(),
            ProviderSettings::Rfc2136 { .. } => ProviderName::Rfc2136.as_str(),
            ProviderSettings::Aws(_) => ProviderName::Aws.as_str(),
            ProviderSettings::Pdns { .. } => ProviderName::Pdns.as_str(),
            ProviderSettings::Coredns(_) => ProviderName::Coredns.as_str(),
            ProviderSettings::Cloudflare(_) => ProviderName::Cloudflare.as_str(),
            ProviderSettings::Webhook(_) => ProviderName::Webhook.as_str(),
            ProviderSettings::Unsupported(name) => name.as_str(),
        }
    }
}

/// The registry, with the validated ownership for the TXT one.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum RegistrySettings {
    Txt(Box<TxtRegistryConfig>),
    Noop,
    Unsupported(RegistryName),
}

impl RegistrySettings {
    /// external-dns's name of the registry.
    pub fn name(&self) -> &'static str {
        match self {
            RegistrySettings::Txt(_) => RegistryName::Txt.as_str(),
            RegistrySettings::Noop => RegistryName::Noop.as_str(),
            RegistrySettings::Unsupported(name) => name.as_str(),
        }
    }
}

/// Where the controller reads the cluster from.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ClusterSettings {
    /// Objects loaded from files (read with [`SourceSettings::load_options`]).
    Manifests(Vec<PathBuf>),
    ApiServer(KubeSettings),
}

/// The Kubernetes client and what the live view watches.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct KubeSettings {
    pub kubeconfig: Option<PathBuf>,
    /// Kept as given: a URL that does not parse fails when the client is built, as it always has.
    pub server: Option<String>,
    /// Bounds connecting and sending; none with `--events`, whose watches stay quiet for minutes.
    pub request_timeout: Option<Duration>,
    pub live: LiveOptions,
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
    crate::settings_unsupported::sources(flags)?;
    let s = &flags.sources;
    if s.source.is_empty() {
        return fail("at least one --source is required");
    }
    let mut enabled = Vec::new();
    for &name in &s.source {
        let Some(source) = EnabledSource::from_name(name) else {
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
    let annotations = match &s.annotation_prefix {
        Some(prefix) => Annotations::with_prefix(prefix).map_err(|e| invalid(format!("--annotation-prefix: {e}")))?,
        None => Annotations::default(),
    };
    let mut load_options = LoadOptions::default();
    load_options.pod_annotation_prefixes = PodAnnotationPrefixes::new(annotations.prefixes().to_vec());
    let mut common = SourceConfig::default();
    common.namespace = non_empty(&s.namespace);
    common.annotation_filter = selector("--annotation-filter", &s.annotation_filter)?;
    common.label_filter = selector("--label-filter", &s.label_filter)?;
    common.annotations = annotations;
    common.fqdn_template = fqdn_template;
    common.combine_fqdn_annotation = s.combine_fqdn_annotation;
    common.ignore_hostname_annotation = s.ignore_hostname_annotation;
    let service = service_config(flags, common.clone())?;
    let crd = crd_config(flags, &common, &mut load_options.overrides)?;
    load_options.template_fields = kept_template_fields(&enabled, &common, &service)?;
    let ingress = ingress_config(flags, common.clone())?;
    let g = &flags.gateway;
    let mut gateway = GatewaySourceConfig::default();
    gateway.common = common;
    gateway.gateway_name = non_empty(&g.gateway_name);
    gateway.gateway_namespace = non_empty(&g.gateway_namespace);
    gateway.gateway_label_filter = selector("--gateway-label-filter", &g.gateway_label_filter)?;
    gateway.listener_sets = g.gateway_listener_sets;
    let target_net_filter = TargetNetFilter::new(&s.target_net_filter, &s.exclude_target_net).map_err(|e| {
        let flag = match e.list() {
            NetworkList::Exclude => "--exclude-target-net",
            _ => "--target-net-filter",
        };
        invalid(format!("{flag}: {e}"))
    })?;
    let nat64_networks = s
        .nat64_networks
        .iter()
        .map(|n| parse_nat64(n))
        .collect::<Result<Vec<_>, _>>()?;
    let mut pipeline = PipelineConfig::default();
    pipeline.default_targets = s.default_targets.iter().map(Target::from).collect();
    pipeline.force_default_targets = s.force_default_targets;
    pipeline.target_net_filter = target_net_filter;
    pipeline.nat64_networks = nat64_networks;
    pipeline.manage_ptr = manage_ptr;
    pipeline.create_ptr = s.create_ptr;
    pipeline.min_ttl = Ttl(i64::try_from(s.min_ttl.as_secs()).unwrap_or(i64::MAX));
    pipeline.provider = flags
        .provider
        .provider
        .map(|p| p.as_str().to_string())
        .unwrap_or_default();
    pipeline.prefer_alias = s.prefer_alias;
    Ok(SourceSettings {
        enabled,
        service,
        gateway,
        ingress,
        crd,
        pipeline,
        resolve_load_balancer_hostname: flags.service.resolve_service_load_balancer_hostname,
        load_options,
    })
}

/// The crd source's scope, and the group, version and kind its objects are read as when not external-dns's
/// default (`--crd-source-apiversion`, `--crd-source-kind`). The resource is the kind in lower case plus
/// `s`, as external-dns up to v0.20 addressed it; the live view corrects it by discovery.
fn crd_config(
    flags: &Flags,
    common: &SourceConfig,
    overrides: &mut KindOverrides,
) -> Result<CrdSourceConfig, ValidationError> {
    let c = &flags.crd;
    let api_version = c.crd_source_apiversion.as_str();
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    if version.is_empty() || version.contains('/') || c.crd_source_kind.is_empty() {
        return fail(format!(
            "--crd-source-apiversion {api_version:?} and --crd-source-kind {:?} must name a group/version and a kind",
            c.crd_source_kind
        ));
    }
    let spec = ResourceKind::DnsEndpoint.spec();
    if group != spec.group || !spec.versions.contains(&version) || c.crd_source_kind != spec.name {
        let plural = format!("{}s", c.crd_source_kind.to_ascii_lowercase());
        overrides.set_resource(ResourceKind::DnsEndpoint, api_version, &c.crd_source_kind, &plural);
    }
    Ok(CrdSourceConfig {
        namespace: common.namespace.clone(),
        annotation_filter: common.annotation_filter.clone(),
        label_filter: common.label_filter.clone(),
    })
}

/// What the informer keeps for the templates: the fields they read, checked against the kinds they run
/// on (external-dns runs `--fqdn-template` on Services and routes, `--fqdn-target-template` on Services).
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
        })
        .collect();
    let service_only: &[TemplateKind] = if enabled.contains(&EnabledSource::Service) {
        &[TemplateKind::Service]
    } else {
        &[]
    };
    let mut uses = Vec::new();
    if let Some(t) = &common.fqdn_template {
        uses.push(TemplateUse::new("--fqdn-template", t, &kinds));
    }
    if let Some(t) = &service.fqdn_target_template {
        uses.push(TemplateUse::new("--fqdn-target-template", t, service_only));
    }
    template_fields(&uses).map_err(|e| invalid(e.to_string()))
}

/// The ingress source's configuration on top of `common`. As external-dns, `--ingress-class` and an
/// `--annotation-filter` on `kubernetes.io/ingress.class` are refused together.
fn ingress_config(flags: &Flags, common: SourceConfig) -> Result<IngressSourceConfig, ValidationError> {
    let i = &flags.ingress;
    if !i.ingress_class.is_empty() && common.annotation_filter.has_key(INGRESS_CLASS_ANNOTATION) {
        return fail("--ingress-class is mutually exclusive with the kubernetes.io/ingress.class annotation filter");
    }
    Ok(IngressSourceConfig::new(
        common,
        i.ingress_class.clone(),
        i.ignore_ingress_tls_spec,
        i.ignore_ingress_rules_spec,
    ))
}

/// The service source's configuration on top of `common`.
fn service_config(flags: &Flags, common: SourceConfig) -> Result<ServiceSourceConfig, ValidationError> {
    let sv = &flags.service;
    let fqdn_target_template = FqdnTemplate::parse(std::slice::from_ref(&flags.sources.fqdn_target_template))
        .map_err(|e| invalid(format!("--fqdn-target-template is not a valid template: {e}")))?
        .map(Arc::new);
    let mut config = ServiceSourceConfig::default();
    config.common = common;
    config.service_type_filter = sv.service_type_filter.clone();
    config.publish_internal_services = sv.publish_internal_services;
    config.publish_host_ip = sv.publish_host_ip;
    config.always_publish_not_ready_addresses = sv.always_publish_not_ready_addresses;
    config.resolve_load_balancer_hostname = sv.resolve_service_load_balancer_hostname;
    config.expose_internal_ipv6 = sv.expose_internal_ipv6;
    config.exclude_unschedulable = sv.exclude_unschedulable;
    config.compatibility = flags.sources.compatibility().map(|c| match c {
        Compatibility::Mate => extdns_source_service::Compatibility::Mate,
        Compatibility::Molecule => extdns_source_service::Compatibility::Molecule,
        Compatibility::KopsDnsController => extdns_source_service::Compatibility::KopsDnsController,
    });
    config.fqdn_target_template = fqdn_target_template;
    config.validate().map_err(|e| match e {
        ServiceConfigError::UnknownServiceType(_) => invalid(format!("--service-type-filter: {e}")),
        ServiceConfigError::UnknownCompatibility(_) => invalid(format!("--compatibility: {e}")),
        _ => invalid(e.to_string()),
    })?;
    Ok(config)
}

/// One `--nat64-networks` value: an IPv6 /96 prefix.
fn parse_nat64(value: &str) -> Result<Ipv6Net, ValidationError> {
    let net: ipnet::IpNet = value.trim().parse().map_err(|_| {
        invalid(format!(
            "--nat64-networks {value:?} is not a CIDR (expected an IPv6 /96 such as 64:ff9b::/96)"
        ))
    })?;
    match net {
        ipnet::IpNet::V6(v6) if v6.prefix_len() == 96 => Ok(v6),
        _ => Err(invalid(format!(
            "--nat64-networks {value:?} must be an IPv6 /96 prefix such as 64:ff9b::/96"
        ))),
    }
}

/// Everything the controller reads: [`sources`] plus provider, registry and client settings.
pub fn controller(flags: &Flags) -> Result<Settings, ValidationError> {
    let sources = sources(flags)?;
    let k = &flags.kube;
    if k.kube_api_qps <= 0 {
        return fail(format!(
            "--kube-api-qps must be greater than 0 (got {})",
            k.kube_api_qps
        ));
    }
    if k.kube_api_burst <= 0 {
        return fail(format!(
            "--kube-api-burst must be greater than 0 (got {})",
            k.kube_api_burst
        ));
    }
    let Some(provider_name) = flags.provider.provider else {
        return fail("--provider is required (e.g. --provider=rfc2136 or --provider=inmemory)");
    };
    crate::settings_unsupported::providers(flags)?;
    let p = &flags.provider;
    let domain_filter = DomainFilter::from_flags(
        &p.domain_filter,
        &p.exclude_domains,
        &p.regex_domain_filter,
        &p.regex_domain_exclusion,
    )
    .map_err(|e| invalid(format!("--regex-domain-filter/--regex-domain-exclusion: {e}")))?;
    let r = &flags.registry;
    if !r.txt_prefix.is_empty() && !r.txt_suffix.is_empty() {
        return fail("--txt-prefix and --txt-suffix are mutually exclusive");
    }
    if r.registry != RegistryName::Noop && r.txt_owner_id.is_empty() {
        return fail(format!(
            "--txt-owner-id must not be empty with --registry={}",
            r.registry.as_str()
        ));
    }
    let provider = match provider_name {
        ProviderName::Inmemory => ProviderSettings::InMemory {
            zones: flags.inmemory.inmemory_zone.clone(),
            write_rate: None,
        },
        ProviderName::Rfc2136 => rfc2136(flags)?,
        ProviderName::Aws => crate::settings_aws::aws(flags, &domain_filter, &|k| std::env::var(k).ok())?,
        ProviderName::Pdns => crate::settings_pdns::pdns(flags, &domain_filter)?,
        ProviderName::Coredns | ProviderName::Skydns => crate::settings_coredns::coredns(flags, &domain_filter)?,
        ProviderName::Cloudflare => crate::settings_cloudflare::cloudflare(flags, &domain_filter)?,
        ProviderName::Webhook => crate::settings_webhook::client(flags)?,
        other => ProviderSettings::Unsupported(other),
    };
    let mut provider = provider;
    provider.set_write_rate(write_rate(p.provider_write_rate)?);
    let managed_types = record_types(&p.managed_record_types);
    let excluded_types = record_types(&p.exclude_record_types);
    let registry = match r.registry {
        RegistryName::Txt => {
            let mut config = TxtRegistryConfig::new(ownership(flags)?);
            config.managed_types = managed_types.clone();
            config.excluded_types = excluded_types.clone();
            RegistrySettings::Txt(Box::new(config))
        }
        RegistryName::Noop => RegistrySettings::Noop,
        other => RegistrySettings::Unsupported(other),
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
        owner_id: match &registry {
            RegistrySettings::Txt(config) => config.ownership.owner_id().to_string(),
            _ => String::new(),
        },
        old_owner_id: non_empty(&r.migrate_from_txt_owner),
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
        records_cache_interval: flags.provider.provider_cache_time.max(match r.registry {
            RegistryName::Txt => r.txt_cache_interval,
            _ => Duration::ZERO,
        }),
    };
    let leader = crate::settings_leader::leader(&flags.leader)?;
    if leader.is_some() && c.once {
        return fail("--leader-elect and --once exclude each other: a single sync has nothing to share");
    }
    if leader.is_some() && !flags.offline.manifests.is_empty() {
        return fail("--leader-elect needs the API server for its Lease; it cannot be used with --manifests");
    }
    let wants = |kind: &str| c.events_emit.iter().any(|k| k == kind);
    let events =
        extdns_controller::EventsConfig::new(wants("RecordReady"), wants("RecordDeleted"), wants("RecordError"));
    if events.any() && !flags.offline.manifests.is_empty() {
        return fail("--events-emit needs the API server to send the events to; it cannot be used with --manifests");
    }
    let cluster = if flags.offline.manifests.is_empty() {
        ClusterSettings::ApiServer(kube(flags, &sources))
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
    })
}

/// `--provider=rfc2136` from external-dns's `--rfc2136-*` flags (and the shared `--tls-*` ones). The
/// provider checks the rest (TSIG key and algorithm, TLS files) when it is built.
fn rfc2136(flags: &Flags) -> Result<ProviderSettings, ValidationError> {
    let f = &flags.rfc2136;
    if f.gss_tsig {
        return fail("Kerberos/GSS-TSIG is not supported by extdns (--rfc2136-gss-tsig); use TSIG keys instead");
    }
    let Ok(batch_change_size @ 1..) = usize::try_from(f.batch_change_size) else {
        return fail(format!(
            "--rfc2136-batch-change-size must be at least 1 (got {})",
            f.batch_change_size
        ));
    };
    if f.host.iter().all(|h| h.trim().is_empty()) {
        return fail("--rfc2136-host is required with --provider=rfc2136");
    }
    if f.zone.iter().all(|z| z.trim().is_empty()) {
        return fail("--rfc2136-zone is required with --provider=rfc2136: name every zone extdns may update");
    }
    let path = |s: &str| (!s.trim().is_empty()).then(|| PathBuf::from(s.trim()));
    let config = Rfc2136Config {
        hosts: f.host.clone(),
        port: f.port,
        zones: f.zone.clone(),
        insecure: f.insecure,
        tsig_keyname: f.tsig_keyname.clone(),
        tsig_secret: f.tsig_secret.clone(),
        tsig_secret_alg: f.tsig_secret_alg.clone(),
        axfr: f.effective_axfr(),
        min_ttl: f.min_ttl,
        batch_change_size,
        gss_tsig: f.gss_tsig,
        load_balancing: match f.load_balancing_strategy {
            LoadBalancingStrategy::Random => LoadBalancing::Random,
            LoadBalancingStrategy::RoundRobin => LoadBalancing::RoundRobin,
            LoadBalancingStrategy::Disabled => LoadBalancing::Disabled,
        },
        tls: f.use_tls.then(|| TlsOptions {
            skip_verify: f.skip_tls_verify,
            ca_file: path(&flags.provider.tls_ca),
            client_cert: path(&flags.provider.tls_client_cert),
            client_key: path(&flags.provider.tls_client_cert_key),
        }),
        ..Rfc2136Config::default()
    };
    Ok(ProviderSettings::Rfc2136 {
        config: Box::new(config),
        deprecated_tsig_axfr: f.tsig_axfr,
    })
}

/// The TXT registry's ownership settings, validated; errors name the flag at fault.
fn ownership(flags: &Flags) -> Result<Ownership, ValidationError> {
    let r = &flags.registry;
    let mut config = OwnershipConfig::default();
    config.owner_id = r.txt_owner_id.clone();
    config.prefix = r.txt_prefix.clone();
    config.suffix = r.txt_suffix.clone();
    config.wildcard_replacement = r.txt_wildcard_replacement.clone();
    config.encrypt_enabled = r.txt_encrypt_enabled;
    config.encrypt_aes_key = non_empty(&r.txt_encrypt_aes_key);
    config.migrate_from_owner = non_empty(&r.migrate_from_txt_owner);
    Ownership::new(config).map_err(|e| {
        invalid(match e {
            RegistryError::EmptyOwnerId => "--txt-owner-id must not be empty".to_string(),
            RegistryError::PrefixAndSuffix => {
                "--txt-prefix and --txt-suffix are mutually exclusive; set only one".to_string()
            }
            RegistryError::InvalidKey(e) => format!("--txt-encrypt-aes-key: {e}"),
            RegistryError::EncryptionWithoutKey => {
                "--txt-encrypt-enabled needs --txt-encrypt-aes-key (32 bytes, raw or standard base64)".to_string()
            }
            other => other.to_string(),
        })
    })
}

/// The client settings and what the live view watches beyond the kinds: the namespaces and the server-side
/// label selectors, so objects the sources would drop anyway are neither sent nor stored.
fn kube(flags: &Flags, sources: &SourceSettings) -> KubeSettings {
    let k = &flags.kube;
    let common = sources.common();
    let gateway = &sources.gateway;
    let mut label_selectors = BTreeMap::new();
    if !common.label_filter.is_everything() {
        let selector = common.label_filter.to_string();
        label_selectors.insert(ResourceKind::Service, selector.clone());
        label_selectors.insert(ResourceKind::Ingress, selector.clone());
        for kind in [
            RouteKind::Http,
            RouteKind::Grpc,
            RouteKind::Tls,
            RouteKind::Tcp,
            RouteKind::Udp,
        ] {
            label_selectors.insert(ResourceKind::Route(kind), selector.clone());
        }
    }
    if !gateway.gateway_label_filter.is_everything() {
        label_selectors.insert(ResourceKind::Gateway, gateway.gateway_label_filter.to_string());
    }
    let timeout = k.effective_request_timeout();
    let mut live = LiveOptions::default();
    live.namespace = common.namespace.clone();
    live.gateway_namespace = gateway.gateway_namespace.clone();
    live.label_selectors = label_selectors;
    live.pod_annotation_prefixes = sources.load_options.pod_annotation_prefixes.clone();
    live.template_fields = sources.load_options.template_fields.clone();
    live.pods_on_demand = true;
    live.overrides = sources.load_options.overrides.clone();
    KubeSettings {
        kubeconfig: (!k.kubeconfig.is_empty()).then(|| PathBuf::from(&k.kubeconfig)),
        server: non_empty(&k.server),
        request_timeout: (!timeout.is_zero() && !flags.control.events).then_some(timeout),
        live,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flags::try_parse_from;

    fn flags<S: AsRef<str>>(args: &[S]) -> Flags {
        match try_parse_from(std::iter::once("extdns").chain(args.iter().map(AsRef::as_ref))) {
            Ok(cli) => cli.flags,
            Err(e) => panic!("{:?}: {e}", args.iter().map(AsRef::as_ref).collect::<Vec<_>>()),
        }
    }

    fn sources_err<S: AsRef<str>>(args: &[S]) -> String {
        sources(&flags(args)).err().map(|e| e.0).unwrap_or_default()
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

    fn rfc2136_with(extra: &[&str]) -> Vec<String> {
        RFC2136.iter().chain(extra).map(|s| s.to_string()).collect()
    }

    #[test]
    fn events_are_off_unless_asked_for_and_need_the_api_server() -> Result<(), ValidationError> {
        let none = controller(&flags(&["--source=service", "--provider=inmemory"]))?;
        assert!(!none.events.any());
        let some = controller(&flags(&[
            "--source=service",
            "--provider=inmemory",
            "--events-emit=RecordReady",
            "--events-emit=RecordError",
        ]))?;
        assert_eq!(some.events, extdns_controller::EventsConfig::new(true, false, true));
        let e = controller_err(&[
            "--source=service",
            "--provider=inmemory",
            "--manifests=x.yaml",
            "--events-emit=RecordError",
        ]);
        assert!(e.starts_with("--events-emit needs the API server"), "{e}");
        Ok(())
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
            ProviderSettings::Rfc2136 { config, .. } => assert_eq!(config.write_rate, two),
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

    #[test]
    fn provider_cache_time_and_txt_cache_interval_keep_the_records_for_the_longer_of_the_two()
    -> Result<(), ValidationError> {
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
        assert_eq!(
            controller_ok(&flags(&["--source=service", "--provider=inmemory"])),
            None
        );
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
            sources_err(&["--source=service", "--source=node"]),
            "source node is not supported by extdns yet"
        );
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
        let e = sources_err(&["--source=service", "--label-filter=a in (b"]);
        assert!(
            e.starts_with("--label-filter \"a in (b\" is not a valid selector"),
            "{e}"
        );
        let e = sources_err(&["--source=service", "--annotation-filter=a=b=c"]);
        assert!(e.starts_with("--annotation-filter"), "{e}");
        let e = sources_err(&["--source=service", "--gateway-label-filter=in in in"]);
        assert!(e.starts_with("--gateway-label-filter"), "{e}");
        assert_eq!(
            sources_ok(&flags(&["--source=service", "--label-filter=app in (a,b),!skip"])),
            None
        );
    }

    #[test]
    fn annotation_prefix_must_end_with_a_slash() {
        let e = sources_err(&["--source=service", "--annotation-prefix=example.com"]);
        assert!(e.contains("--annotation-prefix") && e.contains("'/'"), "{e}");
        let e = sources_err(&["--source=service", "--annotation-prefix="]);
        assert!(e.contains("--annotation-prefix") && e.contains("empty"), "{e}");
        assert_eq!(
            sources_ok(&flags(&["--source=service", "--annotation-prefix=example.com/"])),
            None
        );
    }

    #[test]
    fn templates_must_parse() {
        let e = sources_err(&["--source=service", "--fqdn-template={{.Name"]);
        assert!(e.starts_with("--fqdn-template is not a valid template"), "{e}");
        let e = sources_err(&["--source=service", "--fqdn-target-template={{end}}"]);
        assert!(e.starts_with("--fqdn-target-template is not a valid template"), "{e}");
    }

    #[test]
    fn networks_must_parse() {
        let e = sources_err(&["--source=service", "--target-net-filter=10.0.0.0/33"]);
        assert!(e.contains("--target-net-filter") && e.contains("10.0.0.0/33"), "{e}");
        let e = sources_err(&["--source=service", "--exclude-target-net=nope"]);
        assert!(e.contains("--exclude-target-net"), "{e}");
        let e = sources_err(&["--source=service", "--nat64-networks=64:ff9b::/64"]);
        assert!(e.contains("--nat64-networks") && e.contains("/96"), "{e}");
        let e = sources_err(&["--source=service", "--nat64-networks=10.0.0.0/96"]);
        assert!(e.contains("--nat64-networks"), "{e}");
        assert_eq!(
            sources_ok(&flags(&["--source=service", "--nat64-networks=64:ff9b::/96"])),
            None
        );
    }

    #[test]
    fn create_ptr_requires_ptr_to_be_managed() {
        let e = sources_err(&["--source=service", "--create-ptr"]);
        assert!(
            e.starts_with("--create-ptr requires PTR in --managed-record-types"),
            "{e}"
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
        let e = controller_err(&["--source=service", "--provider=inmemory", "--kube-api-qps=0"]);
        assert_eq!(e, "--kube-api-qps must be greater than 0 (got 0)");
        let e = controller_err(&["--source=service", "--provider=inmemory", "--kube-api-burst=-1"]);
        assert_eq!(e, "--kube-api-burst must be greater than 0 (got -1)");
    }

    #[test]
    fn txt_prefix_and_suffix_are_mutually_exclusive() {
        let e = controller_err(&[
            "--source=service",
            "--provider=inmemory",
            "--txt-prefix=a-",
            "--txt-suffix=-b",
        ]);
        assert_eq!(e, "--txt-prefix and --txt-suffix are mutually exclusive");
    }

    #[test]
    fn txt_owner_id_must_not_be_empty() {
        let e = controller_err(&["--source=service", "--provider=inmemory", "--txt-owner-id="]);
        assert!(e.starts_with("--txt-owner-id must not be empty"), "{e}");
        let ok = flags(&[
            "--source=service",
            "--provider=inmemory",
            "--txt-owner-id=",
            "--registry=noop",
        ]);
        assert_eq!(controller_ok(&ok), None);
    }

    #[test]
    fn regex_domain_filters_must_compile() {
        let e = controller_err(&["--source=service", "--provider=inmemory", "--regex-domain-filter=(a"]);
        assert!(e.starts_with("--regex-domain-filter"), "{e}");
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
        let f = flags(&[
            "--source=service",
            "--provider=inmemory",
            "--rfc2136-gss-tsig",
            "--rfc2136-batch-change-size=0",
        ]);
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
        let s = controller(&flags(&[
            "--source=service",
            "--provider=inmemory",
            "--txt-owner-id=blue",
        ]))?;
        let RegistrySettings::Txt(config) = &s.registry else {
            panic!("expected the TXT registry, got {:?}", s.registry);
        };
        assert_eq!(config.ownership.owner_id(), "blue");
        assert_eq!(s.controller.plan.owner_id, "blue");
        let noop = controller(&flags(&["--source=service", "--provider=inmemory", "--registry=noop"]))?;
        assert!(matches!(noop.registry, RegistrySettings::Noop));
        assert_eq!(noop.controller.plan.owner_id, "");
        Ok(())
    }

    #[test]
    fn txt_encryption_settings_are_checked_with_the_flags() {
        let e = controller_err(&["--source=service", "--provider=inmemory", "--txt-encrypt-enabled"]);
        assert!(
            e.starts_with("--txt-encrypt-enabled needs --txt-encrypt-aes-key"),
            "{e}"
        );
        let e = controller_err(&[
            "--source=service",
            "--provider=inmemory",
            "--txt-encrypt-enabled",
            "--txt-encrypt-aes-key=short",
        ]);
        assert!(e.starts_with("--txt-encrypt-aes-key"), "{e}");
        let noop = flags(&[
            "--source=service",
            "--provider=inmemory",
            "--registry=noop",
            "--txt-encrypt-enabled",
        ]);
        assert_eq!(controller_ok(&noop), None);
    }

    #[test]
    fn unsupported_providers_and_registries_are_left_to_the_wiring() -> Result<(), ValidationError> {
        let s = controller(&flags(&["--source=service", "--provider=linode", "--registry=crd"]))?;
        assert!(
            matches!(s.provider, ProviderSettings::Unsupported(ProviderName::Linode)),
            "{:?}",
            s.provider
        );
        assert_eq!(s.registry.name(), "crd");
        Ok(())
    }

    #[test]
    fn events_lift_the_kube_request_timeout() -> Result<(), ValidationError> {
        let timeout = |args: &[&str]| -> Result<Option<Duration>, ValidationError> {
            match controller(&flags(args))?.cluster {
                ClusterSettings::ApiServer(kube) => Ok(kube.request_timeout),
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
        let s = controller(&flags(&[
            "--source=service",
            "--provider=inmemory",
            "--label-filter=app=web",
        ]))?;
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
}
