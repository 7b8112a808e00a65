//! The command line: external-dns's flag names, defaults and value syntax, so a Deployment's arguments work
//! unchanged.
//!
//! Conventions shared by every flag (applied in [`command`], so no flag can forget them):
//! - every flag can also come from `EXTERNAL_DNS_<NAME>` (upper case, `-` → `_`); a repeatable flag's
//!   environment value is split on newlines, as kingpin does (only the environment's: a value given on the
//!   command line, such as a multi-line `--fqdn-template` from a Helm block scalar, is one value); an empty
//!   variable counts as unset;
//! - booleans are `--flag` / `--no-flag` (and `--flag=true|false`); the last occurrence wins;
//! - repeatable flags accumulate; giving one replaces its default;
//! - durations use Go syntax (`1m`, `30s`, `1h30m`, `500ms`);
//! - enumerated values are checked while parsing, so a typo fails before anything starts.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::builder::{BoolishValueParser, PossibleValue, PossibleValuesParser};
use clap::{ArgAction, Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};

use extdns_endpoint::go_duration as duration;

/// The value name that marks a boolean flag; [`command`] gives those the `--flag` / `--no-flag` syntax.
const BOOL: &str = "BOOL";

/// The environment variable prefix external-dns reads flags from.
pub const ENV_PREFIX: &str = "EXTERNAL_DNS_";

/// An enumerated flag value: its variants, their command-line spellings, and clap's parsing from them.
macro_rules! names {
    ($(#[$meta:meta])* pub enum $ty:ident { $($variant:ident = $name:literal,)* }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $ty {
            $(#[doc = concat!("`", $name, "`.")] $variant,)*
        }

        impl $ty {
            /// Every value, in the order `--help` lists them.
            pub const ALL: &[$ty] = &[$($ty::$variant,)*];

            /// The command-line spelling.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($ty::$variant => $name,)*
                }
            }
        }

        impl ValueEnum for $ty {
            fn value_variants<'a>() -> &'a [Self] {
                Self::ALL
            }

            fn to_possible_value(&self) -> Option<PossibleValue> {
                Some(PossibleValue::new(self.as_str()))
            }
        }

        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

#[derive(Debug, Clone, Parser)]
#[command(
    name = "extdns",
    version = env!("EXTDNS_LONG_VERSION"),
    about = "Keeps DNS records in step with a Kubernetes cluster; a drop-in replacement for external-dns.",
    long_about = "Keeps DNS records in step with a Kubernetes cluster; a drop-in replacement for external-dns.\n\n\
        Without a subcommand extdns runs the controller: it watches the cluster and syncs the DNS provider. \
        `extdns endpoints` prints what the sources would publish from manifest files, without touching DNS. \
        `extdns plan` prints what the next sync would change in the zone, without writing. \
        `extdns webhook-conformance` checks a webhook provider server against the protocol.",
    after_help = "Boolean flags: --flag sets, --no-flag clears. Every flag can also be set from the environment \
        variable EXTERNAL_DNS_<FLAG> (upper case, '-' as '_').",
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true
)]
/// The whole command line: a subcommand, or the controller's flags.
pub struct Cli {
    /// `None` runs the controller.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// The controller's flags (also accepted, and ignored, next to a subcommand's).
    #[command(flatten)]
    pub flags: Flags,
}

// One value per process, parsed once: boxing the large variant would buy nothing.
/// extdns's subcommands; external-dns has none.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Subcommand)]
pub enum Command {
    /// Print the endpoints the sources produce from manifest files (a dry preview; no cluster, no DNS).
    #[command(
        long_about = "Loads Kubernetes objects from files or directories (multi-document YAML, JSON, `kind: List`), \
            runs the configured sources over them exactly as the controller would, and prints the endpoints. \
            Accepts every controller flag, so the arguments of a Deployment can be pasted; flags that only \
            matter to providers or registries are accepted and ignored.",
        after_help = "Example: extdns endpoints --manifests examples/ --source=service --source=gateway-httproute"
    )]
    Endpoints(EndpointsArgs),
    /// Print what the next sync would change in the live zone (a dry run; nothing is written).
    #[command(
        long_about = "Reads the cluster (the API server, or --manifests) and the zone (through the provider and \
            the TXT registry) and prints the changes the next sync would make, with the controller's own \
            planning: ownership, --policy, the hold of failing objects' records and the deletion guard. \
            Takes every controller flag, so the arguments of a Deployment (extdns's or external-dns's) can \
            be pasted. Exits 0 when nothing would change, 2 when something would, 1 on error.",
        after_help = "Example: extdns plan --source=service --provider=rfc2136 --rfc2136-host=... --txt-owner-id=default"
    )]
    Plan(PlanArgs),
    /// Check a webhook provider server against the webhook protocol (writes and then removes test records).
    #[command(
        long_about = "Drives a running webhook provider server through external-dns's webhook protocol: \
            negotiation, reading, adjusting, creating, updating and deleting records of every type extdns \
            manages under one zone, then removes what it wrote. Prints one line per named check (PASS or FAIL \
            with the reason) and exits 0 when every check passes, 1 when one fails.",
        after_help = "Example: extdns webhook-conformance --url http://127.0.0.1:8888 --zone example.org"
    )]
    WebhookConformance(WebhookConformanceArgs),
    /// The built-in DNS server's DNSSEC keys: the DS records for the parent zones, or a Secret of new keys.
    #[command(subcommand)]
    Dnssec(DnssecCommand),
    /// Say why a DNS name or an object's names are (or are not) in DNS (a dry run; nothing is written).
    #[command(
        long_about = "Reads the cluster (the API server, or --manifests) and the zone as `extdns plan` does, runs \
            one dry-run sync and explains one DNS name (www.example.org) or one object's names \
            (service/NAMESPACE/NAME, ingress/..., httproute/..., dnsendpoint/...): the objects asking for each \
            name, the zone it maps to, the owner of what the zone holds, and why the next sync would or would \
            not publish it (filtered by which flag, conflicting with which object or owner, invalid, held). \
            Takes every controller flag. Exits 0 when everything asked is published or will be, 3 when \
            something is not, 1 on error (docs/explain.md).",
        after_help = "Example: extdns explain www.example.org --source=service --provider=rfc2136 --rfc2136-host=... \
            --txt-owner-id=default"
    )]
    Explain(ExplainArgs),
}

/// `extdns explain`'s arguments: what to explain, an output format and every controller flag.
#[derive(Debug, Clone, Args)]
pub struct ExplainArgs {
    /// A DNS name (www.example.org) or an object (service/NAMESPACE/NAME, ingress/..., httproute/...,
    /// dnsendpoint/...).
    #[arg(value_name = "NAME|OBJECT", required = true)]
    pub target: String,
    /// How to print: text, or JSON with the field names docs/explain.md documents.
    #[arg(long, short = 'o', value_enum, default_value_t = OutputFormat::Table, help_heading = "Output")]
    pub output: OutputFormat,
    /// Every controller flag, so a Deployment's arguments can be pasted.
    #[command(flatten)]
    pub flags: Flags,
}

/// `extdns dnssec`'s commands (docs/dnssec.md).
#[derive(Debug, Clone, Subcommand)]
pub enum DnssecCommand {
    /// Print the DS record of each signed zone, to give its parent (reads the keys, never makes them).
    #[command(
        long_about = "Reads the signed zones' keys where the controller keeps them (the Secret of \
            --dns-server-dnssec-secret, on the API server or in --manifests) and prints each zone's DS record \
            as a zone-file line for its parent. Takes every controller flag, so a Deployment's arguments can be \
            pasted.",
        after_help = "Example: extdns dnssec ds --provider=dns-server --source=service --dns-server-zone=example.org \
            --dns-server-dnssec-zone=example.org"
    )]
    Ds(DnssecArgs),
    /// Print a Secret (JSON, which kubectl reads as YAML) with new keys for the signed zones, for --manifests.
    Secret(DnssecArgs),

    /// Start a key rollover of the signed zones (writes the request into the key Secret), or say the
    /// parent's DS was swapped to the new key (--ds-swapped); prints where each rollover is.
    #[command(
        long_about = "Writes a rollover request for each zone given (--zone, or every signed zone) into the key             Secret; the controller's replicas then publish a new key, sign with it once it has propagated, and             log its DS for the parent. After the parent's DS is swapped to it, run this again with --ds-swapped;             the old key leaves once the parent's DS TTL has passed. Prints each zone's rollover state. Takes             every controller flag, so a Deployment's arguments can be pasted.",
        after_help = "Example: extdns dnssec rollover --zone example.org --provider=dns-server --source=service             --dns-server-zone=example.org --dns-server-dnssec-zone=example.org"
    )]
    Rollover(RolloverArgs),
}

/// `extdns dnssec rollover`'s arguments.
#[derive(Debug, Clone, Args)]
pub struct RolloverArgs {
    /// The parent's DS now names the new key: the old key may leave after the parent's DS TTL.
    #[arg(long, value_name = BOOL, action = ArgAction::Set, default_value = "false", help_heading = "Output")]
    pub ds_swapped: bool,
    /// The zones and every controller flag.
    #[command(flatten)]
    pub dnssec: DnssecArgs,
}

/// `extdns dnssec`'s arguments: the zones asked about and every controller flag.
#[derive(Debug, Clone, Args)]
pub struct DnssecArgs {
    /// Only these signed zones (repeatable); every --dns-server-dnssec-zone by default.
    #[arg(long = "zone", id = "dnssec-zone", value_name = "ZONE", help_heading = "Output")]
    pub zone: Vec<String>,
    /// Every controller flag, so a Deployment's arguments can be pasted.
    #[command(flatten)]
    pub flags: Flags,
}

/// `extdns webhook-conformance`'s arguments.
#[derive(Debug, Clone, Args)]
pub struct WebhookConformanceArgs {
    /// Base URL of the webhook server to check.
    #[arg(long, value_name = "URL", required = true)]
    pub url: String,
    /// Zone to write the test records under (default: the first domain of the server's domain filter, else
    /// example.org).
    #[arg(long, value_name = "ZONE")]
    pub zone: Option<String>,
}

/// `extdns endpoints`'s arguments: an output format and every controller flag.
#[derive(Debug, Clone, Args)]
pub struct EndpointsArgs {
    /// How to print the endpoints: an aligned table, or a JSON array with external-dns's field names.
    #[arg(long, short = 'o', value_enum, default_value_t = OutputFormat::Table, help_heading = "Output")]
    pub output: OutputFormat,
    /// Every controller flag, so a Deployment's arguments can be pasted.
    #[command(flatten)]
    pub flags: Flags,
}

/// `extdns plan`'s arguments: an output format and every controller flag.
#[derive(Debug, Clone, Args)]
pub struct PlanArgs {
    /// How to print the changes: an aligned table, or JSON with each change's old and new record.
    #[arg(long, short = 'o', value_enum, default_value_t = OutputFormat::Table, help_heading = "Output")]
    pub output: OutputFormat,
    /// Every controller flag, so a Deployment's arguments can be pasted.
    #[command(flatten)]
    pub flags: Flags,
}

names! {
    /// How `extdns endpoints` and `extdns plan` print.
    pub enum OutputFormat {
        Table = "table",
        Json = "json",
    }
}

/// Every controller flag, grouped as external-dns groups them.
#[derive(Debug, Clone, Args)]
pub struct Flags {
    /// The Kubernetes client.
    #[command(flatten)]
    pub kube: KubeFlags,
    /// What every source shares.
    #[command(flatten)]
    pub sources: SourceFlags,
    /// The service source.
    #[command(flatten)]
    pub service: ServiceFlags,
    /// The Gateway API route sources.
    #[command(flatten)]
    pub gateway: GatewayFlags,
    /// The crd source.
    #[command(flatten)]
    pub crd: CrdFlags,
    /// The ingress source.
    #[command(flatten)]
    pub ingress: IngressFlags,
    // --- contour-httpproxy and openshift-route sources ---
    /// The openshift-route source.
    #[command(flatten)]
    pub openshift: OpenShiftFlags,
    /// The provider and the domains it manages.
    #[command(flatten)]
    pub provider: ProviderFlags,
    /// The registry (ownership).
    #[command(flatten)]
    pub registry: RegistryFlags,
    /// The loop: interval, events, dry run, logs, metrics.
    #[command(flatten)]
    pub control: ControlFlags,
    /// Leader election among replicas.
    #[command(flatten)]
    pub leader: LeaderFlags,
    /// The webhook provider and server.
    #[command(flatten)]
    pub webhook: WebhookFlags,
    /// The in-memory provider.
    #[command(flatten)]
    pub inmemory: InMemoryFlags,
    /// The RFC 2136 provider.
    #[command(flatten)]
    pub rfc2136: Rfc2136Flags,
    /// The PowerDNS provider.
    #[command(flatten)]
    pub pdns: PdnsFlags,
    /// The Route53 provider.
    #[command(flatten)]
    pub aws: AwsFlags,
    /// The CoreDNS provider.
    #[command(flatten)]
    pub coredns: CorednsFlags,
    /// The Cloudflare provider.
    #[command(flatten)]
    pub cloudflare: CloudflareFlags,
    /// The Pi-hole provider.
    #[command(flatten)]
    pub pihole: PiholeFlags,
    /// The Google Cloud DNS provider.
    #[command(flatten)]
    pub google: GoogleFlags,
    /// The Azure DNS and Azure Private DNS providers.
    #[command(flatten)]
    pub azure: AzureFlags,
    /// The built-in authoritative DNS server (`--provider=dns-server`).
    #[command(flatten)]
    pub dns_server: DnsServerFlags,
    /// extdns's own: objects from files instead of an API server.
    #[command(flatten)]
    pub offline: OfflineFlags,
    /// The pod source.
    #[command(flatten)]
    pub pod: PodFlags,
    /// The traefik-proxy source.
    #[command(flatten)]
    pub traefik: TraefikFlags,
}

// ------------------------------------------------------------------------------------------- Kubernetes

/// How extdns reaches the API server.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Kubernetes")]
pub struct KubeFlags {
    /// The Kubernetes API server URL; found from the kubeconfig or the in-cluster environment when empty.
    #[arg(long, value_name = "URL", default_value = "")]
    pub server: String,
    /// The kubeconfig file; the default locations or the in-cluster configuration when empty.
    #[arg(long, value_name = "PATH", default_value = "")]
    pub kubeconfig: String,
    /// Timeout of one request to the API server; 0 disables it (forced to 0 with --events).
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = duration::parse)]
    pub kube_api_request_timeout: Duration,
    /// Deprecated: use --kube-api-request-timeout. A value other than 30s overrides it.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = duration::parse)]
    pub request_timeout: Duration,
    /// Requests per second to the API server (must be > 0).
    #[arg(long, value_name = "QPS", default_value_t = 5, allow_negative_numbers = true)]
    pub kube_api_qps: i32,
    /// Burst of requests to the API server (must be > 0).
    #[arg(long, value_name = "N", default_value_t = 10, allow_negative_numbers = true)]
    pub kube_api_burst: i32,
}

impl KubeFlags {
    /// The request timeout in effect: the deprecated `--request-timeout` wins when it differs from its
    /// default, as in external-dns.
    pub fn effective_request_timeout(&self) -> Duration {
        if self.request_timeout != Duration::from_secs(30) {
            self.request_timeout
        } else {
            self.kube_api_request_timeout
        }
    }
}

// ---------------------------------------------------------------------------------------------- Sources

/// What every source shares: which sources, their scope, templates and target handling.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Sources")]
pub struct SourceFlags {
    /// The sources of endpoints (repeatable): service, ingress, gateway-httproute, gateway-grpcroute, gateway-tlsroute,
    /// gateway-tcproute, gateway-udproute, ...
    #[arg(long, value_name = "SOURCE", value_enum, required = true)]
    pub source: Vec<SourceName>,
    /// Only read objects of this namespace (all namespaces when empty).
    #[arg(long, value_name = "NAMESPACE", default_value = "")]
    pub namespace: String,
    /// A label selector matched against objects' annotations (e.g. `team=dns,!skip`).
    #[arg(long, value_name = "SELECTOR", default_value = "")]
    pub annotation_filter: String,
    /// A label selector matched against objects' labels.
    #[arg(long, value_name = "SELECTOR", default_value = "")]
    pub label_filter: String,
    /// Read annotations under this prefix only (must end with '/'). When not given, extdns reads both
    /// `external-dns.kubernetes.io/` and `external-dns.alpha.kubernetes.io/` (the first wins).
    #[arg(long, value_name = "PREFIX")]
    pub annotation_prefix: Option<String>,
    /// Also read `external-dns.alpha.kubernetes.io/` after --annotation-prefix, which wins where both are set
    /// (external-dns v0.23's migration aid). Without --annotation-prefix extdns reads both prefixes anyway.
    #[arg(long, value_name = BOOL, action = ArgAction::Set, default_value = "false")]
    pub enable_legacy_annotation_prefix: bool,
    /// Legacy hostname semantics for Services without hostname annotations: mate, molecule,
    /// kops-dns-controller.
    #[arg(long, value_name = "MODE", default_value = "", hide_possible_values = true,
          value_parser = PossibleValuesParser::new(["", "mate", "molecule", "kops-dns-controller"]))]
    pub compatibility: String,
    /// A Go template producing hostnames for objects without hostname annotations (repeatable; the values
    /// are joined with ',').
    #[arg(long, value_name = "TEMPLATE")]
    pub fqdn_template: Vec<String>,
    /// A Go template producing targets: read only by sources extdns does not have; a value is refused.
    #[arg(long, value_name = "TEMPLATE", default_value = "")]
    pub target_template: String,
    /// A Go template producing `hostname:target` pairs (service, node and pod sources).
    #[arg(long, value_name = "TEMPLATE", default_value = "")]
    pub fqdn_target_template: String,
    /// Add the template hostnames to the annotation hostnames instead of using them only as a fallback.
    #[arg(long, value_name = BOOL, action = ArgAction::Set, default_value = "false")]
    pub combine_fqdn_annotation: bool,
    /// Ignore hostname annotations (needs at least one --fqdn-template).
    #[arg(long, value_name = BOOL, action = ArgAction::Set, default_value = "false")]
    pub ignore_hostname_annotation: bool,
    /// Never read the target annotation: publish the addresses objects have (the internal view of a split
    /// horizon, as a ClusterDNSProvider's config; docs/multi-provider.md). extdns only.
    #[arg(long, value_name = BOOL, action = ArgAction::Set, default_value = "false")]
    pub ignore_target_annotation: bool,
    /// Targets for endpoints that have none (repeatable; applies to every source).
    #[arg(long, value_name = "TARGET")]
    pub default_targets: Vec<String>,
    /// Replace every endpoint's targets with --default-targets (legacy behaviour).
    #[arg(long, value_name = BOOL, action = ArgAction::Set, default_value = "false")]
    pub force_default_targets: bool,
    /// Mark CNAME endpoints without an alias property as alias records (provider-specific `alias=true`).
    #[arg(long, value_name = BOOL, action = ArgAction::Set, default_value = "false")]
    pub prefer_alias: bool,
    /// Keep only targets inside these networks (repeatable CIDR).
    #[arg(long, value_name = "CIDR")]
    pub target_net_filter: Vec<String>,
    /// Drop targets inside these networks (repeatable CIDR).
    #[arg(long, value_name = "CIDR")]
    pub exclude_target_net: Vec<String>,
    /// NAT64 /96 prefixes: an AAAA target inside one also yields an A record of the embedded IPv4 address.
    #[arg(long, value_name = "CIDR")]
    pub nat64_networks: Vec<String>,
    /// TTL for endpoints that set none (a default, not a floor).
    #[arg(long, value_name = "DURATION", default_value = "0s", value_parser = duration::parse)]
    pub min_ttl: Duration,
    /// Publish PTR records for A/AAAA endpoints (needs PTR in --managed-record-types).
    #[arg(long, value_name = BOOL, action = ArgAction::Set, default_value = "false")]
    pub create_ptr: bool,
}

names! {
    /// Every `--source` name external-dns knows. extdns implements some of them; the others parse, and are
    /// refused at startup with a clear message rather than as an unknown value.
    pub enum SourceName {
        Service = "service",
        GatewayHttpRoute = "gateway-httproute",
        GatewayGrpcRoute = "gateway-grpcroute",
        GatewayTlsRoute = "gateway-tlsroute",
        GatewayTcpRoute = "gateway-tcproute",
        GatewayUdpRoute = "gateway-udproute",
        Ingress = "ingress",
        Node = "node",
        Pod = "pod",
        IstioGateway = "istio-gateway",
        IstioVirtualService = "istio-virtualservice",
        AmbassadorHost = "ambassador-host",
        ContourHttpProxy = "contour-httpproxy",
        GlooProxy = "gloo-proxy",
        TraefikProxy = "traefik-proxy",
        OpenshiftRoute = "openshift-route",
        SkipperRouteGroup = "skipper-routegroup",
        KongTcpIngress = "kong-tcpingress",
        F5VirtualServer = "f5-virtualserver",
        F5TransportServer = "f5-transportserver",
        Crd = "crd",
        Unstructured = "unstructured",
        Connector = "connector",
        Fake = "fake",
        Empty = "empty",
    }
}

// --------------------------------------------------------------------------------------- Service source

/// The service source's flags.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Service source")]
pub struct ServiceFlags {
    /// Only these Service types (repeatable): ClusterIP, NodePort, LoadBalancer, ExternalName. All types
    /// when not given (or when one value is empty).
    #[arg(long, value_name = "TYPE",
          value_parser = PossibleValuesParser::new(["", "ClusterIP", "NodePort", "LoadBalancer", "ExternalName"]))]
    pub service_type_filter: Vec<String>,
    /// Also publish the ClusterIP of ClusterIP Services.
    #[arg(long, value_name = BOOL, action = ArgAction::Set, default_value = "false")]
    pub publish_internal_services: bool,
    /// Headless Services: publish the Pods' host IPs instead of their Pod IPs.
    #[arg(long, value_name = BOOL, action = ArgAction::Set, default_value = "false")]
    pub publish_host_ip: bool,
    /// Headless Services: also publish addresses that are not ready.
    #[arg(long, value_name = BOOL, action = ArgAction::Set, default_value = "false")]
    pub always_publish_not_ready_addresses: bool,
    /// Resolve load balancer hostnames to A/AAAA records.
    #[arg(long, value_name = BOOL, action = ArgAction::Set, default_value = "false")]
    pub resolve_service_load_balancer_hostname: bool,
    /// With --events, also sync on EndpointSlice changes (extdns always does; accepted for compatibility).
    #[arg(long, value_name = BOOL, action = ArgAction::Set, default_value = "false")]
    pub listen_endpoint_events: bool,
    /// Also use nodes' IPv6 InternalIP addresses (the node source, NodePort Services).
    #[arg(long, value_name = BOOL, action = ArgAction::Set, default_value = "false")]
    pub expose_internal_ipv6: bool,
    /// Skip unschedulable nodes (the node source, NodePort targets).
    #[arg(long, value_name = BOOL, action = ArgAction::Set, default_value = "true")]
    pub exclude_unschedulable: bool,
}

// ------------------------------------------------------------------------------------- Gateway sources

/// The Gateway API route sources' flags.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Gateway API sources")]
pub struct GatewayFlags {
    /// Only routes attached to Gateways of this name.
    #[arg(long, value_name = "NAME", default_value = "")]
    pub gateway_name: String,
    /// Only routes attached to Gateways of this namespace.
    #[arg(long, value_name = "NAMESPACE", default_value = "")]
    pub gateway_namespace: String,
    /// A label selector on Gateways.
    #[arg(long, value_name = "SELECTOR", default_value = "")]
    pub gateway_label_filter: String,
    /// Accept routes attached to ListenerSets.
    #[arg(long, value_name = BOOL, action = ArgAction::Set, default_value = "false")]
    pub gateway_listener_sets: bool,
}

/// The crd source's flags.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "DNSEndpoint (crd) source")]
pub struct CrdFlags {
    /// The API version (`group/version`) of the DNSEndpoint objects to read; any group, as external-dns up
    /// to v0.20 read it (e.g. externaldns.nginx.org/v1).
    #[arg(long, value_name = "GROUP/VERSION", default_value = "externaldns.k8s.io/v1alpha1")]
    pub crd_source_apiversion: String,
    /// The kind of the DNSEndpoint objects to read.
    #[arg(long, value_name = "KIND", default_value = "DNSEndpoint")]
    pub crd_source_kind: String,
}

/// The ingress source's flags.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Ingress source")]
pub struct IngressFlags {
    /// Only Ingresses of this class (repeatable): `spec.ingressClassName`, or the
    /// `kubernetes.io/ingress.class` annotation when that is unset.
    #[arg(long, value_name = "CLASS")]
    pub ingress_class: Vec<String>,
    /// Do not publish the hosts of `spec.tls`.
    #[arg(long, value_name = BOOL, action = ArgAction::Set, default_value = "false")]
    pub ignore_ingress_tls_spec: bool,
    /// Do not publish the hosts of `spec.rules`.
    #[arg(long, value_name = BOOL, action = ArgAction::Set, default_value = "false")]
    pub ignore_ingress_rules_spec: bool,
}

// ------------------------------------------------------------------------------------------ Pod source

/// The pod source's flags.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Pod source")]
pub struct PodFlags {
    /// Publish the annotations' names only of Pods on the host network.
    #[arg(long, value_name = BOOL, action = ArgAction::Set, default_value = "false")]
    pub ignore_non_host_network_pods: bool,
    /// Also publish every Pod as `<name>.<domain>` at its IP.
    #[arg(long, value_name = "DOMAIN", default_value = "")]
    pub pod_source_domain: String,
}

// --- contour-httpproxy and openshift-route sources ---

/// The openshift-route source's flags (the contour-httpproxy source has none of its own).
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "OpenShift Route source")]
pub struct OpenShiftFlags {
    /// If source is openshift-route then you can pass the ingress controller name. Based on this name
    /// external-dns will select the respective router from the route status and map that
    /// routerCanonicalHostname to the route host while creating a CNAME record.
    #[arg(long, value_name = "NAME")]
    pub openshift_router_name: Option<String>,
}

/// The traefik-proxy source's flags.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Traefik source")]
pub struct TraefikFlags {
    /// Enable legacy listeners on Resources under the traefik.containo.us API Group.
    #[arg(long, value_name = BOOL, action = ArgAction::Set, default_value = "false")]
    pub traefik_enable_legacy: bool,
    /// Disable listeners on Resources under the traefik.io API Group.
    #[arg(long, value_name = BOOL, action = ArgAction::Set, default_value = "false")]
    pub traefik_disable_new: bool,
    /// Traefik's own Service, as namespace/name: routers without a target annotation publish its load
    /// balancer addresses, followed as they change (external-dns publishes such routers nowhere). extdns
    /// only.
    #[arg(long, value_name = "NAMESPACE/NAME", default_value = "")]
    pub traefik_service: String,
}

// ------------------------------------------------------------------------------------------- Providers

/// Which provider, which of its zones and records, and how changes are batched.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Providers and domains")]
pub struct ProviderFlags {
    /// The DNS provider (required by the controller, unless --dns-provider-crds).
    #[arg(long, value_name = "PROVIDER", value_enum)]
    pub provider: Option<ProviderName>,
    /// Take the providers from DNSProvider and ClusterDNSProvider objects (externaldns.k8s.io/v1alpha1),
    /// one pipeline each over one set of informers; these flags are every provider's defaults
    /// (docs/multi-provider.md). extdns only.
    #[arg(long, value_name = BOOL, action = ArgAction::Set, default_value = "false")]
    pub dns_provider_crds: bool,
    /// Manage only names under these domains (repeatable).
    #[arg(long, value_name = "DOMAIN")]
    pub domain_filter: Vec<String>,
    /// Never manage names under these domains (repeatable).
    #[arg(long, value_name = "DOMAIN")]
    pub exclude_domains: Vec<String>,
    /// Manage only names matching this regular expression (overrides --domain-filter).
    #[arg(long, value_name = "REGEX", default_value = "")]
    pub regex_domain_filter: String,
    /// Never manage names matching this regular expression.
    #[arg(long, value_name = "REGEX", default_value = "")]
    pub regex_domain_exclusion: String,
    /// Only zones with these names, whatever the other zone filters say: read only by the Azure providers.
    #[arg(long, value_name = "NAME")]
    pub zone_name_filter: Vec<String>,
    /// Only zones with these ids (repeatable; provider-dependent).
    #[arg(long, value_name = "ID")]
    pub zone_id_filter: Vec<String>,
    /// The record types to manage (repeatable).
    #[arg(long, value_name = "TYPE", default_values = ["A", "AAAA", "CNAME"])]
    pub managed_record_types: Vec<String>,
    /// Record types never to manage (repeatable; wins over --managed-record-types).
    #[arg(long, value_name = "TYPE")]
    pub exclude_record_types: Vec<String>,
    /// Reuse the provider's records for this long between full syncs (extdns's own writes folded in), then read them again; 0s reads every sync.
    #[arg(long, value_name = "DURATION", default_value = "0s", value_parser = duration::parse)]
    pub provider_cache_time: Duration,
    /// Read the provider's zones whole again this often, jittered by a tenth; between reads extdns plans from the records it read with its own writes folded in, so a record changed behind its back is repaired at the next read (default: 1h for aws, cloudflare, google, azure and azure-private-dns, whose APIs are rate-limited per account; 0s, every sync, for the others). extdns only.
    #[arg(long, value_name = "DURATION", value_parser = duration::parse)]
    pub provider_reread_interval: Option<Duration>,
    /// Changes per provider batch (providers that batch).
    #[arg(long, value_name = "N", default_value_t = 200, allow_negative_numbers = true)]
    pub batch_change_size: i32,
    /// Whether `--batch-change-size` was given (command line or environment) rather than defaulted: only
    /// then does it override the batch size Cloudflare's zone plans allow.
    #[arg(skip)]
    pub batch_change_size_explicit: bool,
    /// Pause between provider batches.
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = duration::parse)]
    pub batch_change_interval: Duration,
    /// Most write requests a second to the provider, however fast the cluster changes (0: only the provider's own API limit, which --provider-request-rate sets for the cloud providers; none for the others). extdns only.
    #[arg(long, value_name = "PER_SECOND", default_value_t = 0.0)]
    pub provider_write_rate: f64,
    /// Most requests a second one cloud account takes from extdns, writes included, every provider with its credentials together (0: the cloud's documented limit: Route53 5 a second per account, Cloudflare 1,200 per 5 minutes per token, Azure 250 reads per 10 s and 200 writes per 20 s per subscription, Google 600 a minute per project). extdns only.
    #[arg(long, value_name = "PER_SECOND", default_value_t = 0.0)]
    pub provider_request_rate: f64,
    /// CA certificate for providers that use TLS.
    #[arg(long, value_name = "PATH", default_value = "")]
    pub tls_ca: String,
    /// Client certificate for providers that use TLS.
    #[arg(long, value_name = "PATH", default_value = "")]
    pub tls_client_cert: String,
    /// Client certificate key for providers that use TLS.
    #[arg(long, value_name = "PATH", default_value = "")]
    pub tls_client_cert_key: String,
}

names! {
    /// Every `--provider` name external-dns knows. The name is also the prefix the pipeline keeps
    /// provider-specific properties by.
    pub enum ProviderName {
        Alibabacloud = "alibabacloud",
        Aws = "aws",
        AwsSd = "aws-sd",
        Azure = "azure",
        AzureDns = "azure-dns",
        AzurePrivateDns = "azure-private-dns",
        Civo = "civo",
        Cloudflare = "cloudflare",
        Coredns = "coredns",
        DnsServer = "dns-server",
        Dnsimple = "dnsimple",
        Exoscale = "exoscale",
        Godaddy = "godaddy",
        Google = "google",
        Inmemory = "inmemory",
        Linode = "linode",
        Ns1 = "ns1",
        Oci = "oci",
        Ovh = "ovh",
        Pdns = "pdns",
        Pihole = "pihole",
        Rfc2136 = "rfc2136",
        Scaleway = "scaleway",
        Skydns = "skydns",
        Webhook = "webhook",
    }
}

// ---------------------------------------------------------------------------------- Policy and registry

/// The registry and its ownership records.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Policy and registry")]
pub struct RegistryFlags {
    /// What the controller may change: sync (create, update, delete), upsert-only (no deletes),
    /// create-only.
    #[arg(long, value_name = "POLICY", value_enum, default_value_t = PolicyName::Sync)]
    pub policy: PolicyName,
    /// How ownership of records is stored (noop by default with --provider=dns-server, whose zones are
    /// extdns's alone).
    #[arg(long, value_name = "REGISTRY", value_enum, default_value_t = RegistryName::Txt)]
    pub registry: RegistryName,
    /// Whether `--registry` was given (command line or environment) rather than defaulted: with
    /// `--provider=dns-server` the default is `noop`.
    #[arg(skip)]
    pub registry_explicit: bool,
    /// This instance's owner id in ownership records (must not be empty).
    #[arg(long, value_name = "ID", default_value = "default")]
    pub txt_owner_id: String,
    /// Prefix of the ownership TXT record's first label; may contain %{record_type}.
    #[arg(long, value_name = "PREFIX", default_value = "")]
    pub txt_prefix: String,
    /// Suffix of the ownership TXT record's first label; may contain %{record_type}.
    #[arg(long, value_name = "SUFFIX", default_value = "")]
    pub txt_suffix: String,
    /// Replaces a leading '*' label in ownership TXT names.
    #[arg(long, value_name = "STRING", default_value = "")]
    pub txt_wildcard_replacement: String,
    /// Encrypt ownership TXT values (AES-256-GCM).
    #[arg(long, value_name = BOOL, action = ArgAction::Set, default_value = "false")]
    pub txt_encrypt_enabled: bool,
    /// The 32-byte key for TXT encryption, raw or standard base64.
    #[arg(long, value_name = "KEY", default_value = "")]
    pub txt_encrypt_aes_key: String,
    /// Take over the records owned by this previous owner id.
    #[arg(long, value_name = "ID", default_value = "")]
    pub migrate_from_txt_owner: String,
    /// Cache the registry's records for this long (0s disables the cache).
    #[arg(long, value_name = "DURATION", default_value = "0s", value_parser = duration::parse)]
    pub txt_cache_interval: Duration,
    /// DynamoDB registry region.
    #[arg(long, value_name = "REGION", default_value = "")]
    pub dynamodb_region: String,
    /// DynamoDB registry table.
    #[arg(long, value_name = "TABLE", default_value = "external-dns")]
    pub dynamodb_table: String,
    /// Namespace of the CRD registry's DNSRecord objects (the controller's own when empty).
    #[arg(long, value_name = "NAMESPACE", default_value = "")]
    pub crd_registry_namespace: String,
    // --txt-ownership (issue 50): the one flag of ownership kept on the records themselves.
    /// Where the TXT registry writes ownership: txt, a TXT record beside each record as external-dns
    /// writes it; metadata, on the record itself (Cloudflare comment, Azure record-set metadata), one
    /// record per record. Either way migrates what the other wrote (docs/ownership-metadata.md).
    #[arg(long, value_name = "STORE", value_enum, default_value_t = OwnershipStoreName::Txt)]
    pub txt_ownership: OwnershipStoreName,
    // Hand-over between owners in two phases (issue 47): docs/migration.md.
    /// Hand this instance's records over to this owner id: they are no longer updated or deleted, and
    /// each ownership record says it is released (phase 1 of a hand-over).
    #[arg(long, value_name = "ID", default_value = "")]
    pub txt_release_to_owner: String,
    /// Take over the records this owner id released to us (--txt-release-to-owner) that are identical
    /// to what this instance would write (phase 2 of a hand-over).
    #[arg(long, value_name = "ID", default_value = "")]
    pub txt_adopt_from_owner: String,
    // --shared-owner-ttl (issue 47): shared names, docs/shared-names.md.
    /// An owner of shared names whose heartbeat is older than this is dead: the other owners prune its
    /// targets. Raised to three --interval when shorter.
    #[arg(long, value_name = "DURATION", default_value = "10m0s", value_parser = duration::parse)]
    pub shared_owner_ttl: Duration,
}

names! {
    /// `--txt-ownership`: where the TXT registry writes ownership.
    pub enum OwnershipStoreName {
        Txt = "txt",
        Metadata = "metadata",
    }
}

names! {
    /// `--policy`: how far the plan may change records extdns owns.
    pub enum PolicyName {
        Sync = "sync",
        UpsertOnly = "upsert-only",
        CreateOnly = "create-only",
    }
}

names! {
    /// `--registry`: how ownership of records is kept.
    pub enum RegistryName {
        Txt = "txt",
        Noop = "noop",
        AwsSd = "aws-sd",
        Dynamodb = "dynamodb",
        Crd = "crd",
    }
}

// ------------------------------------------------------------------------------ Control loop and logging

/// The loop, its logs and its metrics.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Control loop, logging and metrics")]
pub struct ControlFlags {
    /// Time between two syncs.
    #[arg(long, value_name = "DURATION", default_value = "1m0s", value_parser = duration::parse)]
    pub interval: Duration,
    /// Minimum time between two full syncs triggered by cluster events; set explicitly, also between two incremental writes.
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = duration::parse)]
    pub min_event_sync_interval: Duration,
    /// Whether `--min-event-sync-interval` was given (command line or environment) rather than defaulted:
    /// only then does it bound incremental writes too.
    #[arg(skip)]
    pub min_event_sync_interval_explicit: bool,
    /// Sync once and exit. With --provider=dns-server: sync once, then keep answering those records (no
    /// further syncs) until interrupted.
    #[arg(long, value_name = BOOL, action = ArgAction::Set, default_value = "false")]
    pub once: bool,
    /// Plan and log the changes but send nothing to the provider.
    #[arg(long, value_name = BOOL, action = ArgAction::Set, default_value = "false")]
    pub dry_run: bool,
    /// Also sync shortly after cluster changes, not only every --interval.
    #[arg(long, value_name = BOOL, action = ArgAction::Set, default_value = "false")]
    pub events: bool,
    /// Hold back every delete of a sync that would delete more than this percentage of the records extdns owns
    /// in a zone (creates and updates still apply); 100 disables the guard. extdns only.
    #[arg(long, value_name = "PERCENT", default_value_t = 50,
          value_parser = clap::value_parser!(u8).range(0..=100))]
    pub deletion_guard_percent: u8,
    /// The deletion guard never holds back fewer deletes than this in a zone. extdns only.
    #[arg(long, value_name = "COUNT", default_value_t = 10)]
    pub deletion_guard_min: usize,
    /// Emit Kubernetes Events of these kinds (repeatable): RecordReady, RecordDeleted, RecordError.
    #[arg(long, value_name = "KIND",
          value_parser = PossibleValuesParser::new(["RecordReady", "RecordDeleted", "RecordError"]))]
    pub events_emit: Vec<String>,
    /// Log format.
    #[arg(long, value_name = "FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// Log level.
    #[arg(long, value_name = "LEVEL", value_enum, default_value_t = LogLevel::Info)]
    pub log_level: LogLevel,
    /// Address of the /metrics and /healthz HTTP listener.
    #[arg(long, value_name = "ADDR", default_value = ":7979")]
    pub metrics_address: String,
    /// Write each object's names' outcome onto it: a condition on Services, an annotation on Ingresses and
    /// Gateway API routes (leader only, when it changes, rate-limited). extdns only; off by default: a
    /// Service status write reaches every watcher of Services (each node's kube-proxy), and external-dns's
    /// RBAC grants no `patch`.
    #[arg(long, value_name = BOOL, action = ArgAction::Set, default_value = "false")]
    pub status_updates: bool,
}

// ----------------------------------------------------------------------------------- Leader election

/// kube-scheduler's flag names and defaults (external-dns has no leader election). extdns only.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Leader election")]
pub struct LeaderFlags {
    /// Run several replicas: only the one holding a coordination.k8s.io Lease writes DNS.
    #[arg(long, value_name = BOOL, action = ArgAction::Set, default_value = "false")]
    pub leader_elect: bool,
    /// How long followers wait after the lease last changed before taking it over.
    #[arg(long, value_name = "DURATION", default_value = "15s", value_parser = duration::parse)]
    pub leader_elect_lease_duration: Duration,
    /// How long the leader keeps writing without a successful renewal; shorter than the lease duration.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = duration::parse)]
    pub leader_elect_renew_deadline: Duration,
    /// Time between two attempts to acquire or renew the lease.
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = duration::parse)]
    pub leader_elect_retry_period: Duration,
    /// Name of the Lease.
    #[arg(long, value_name = "NAME", default_value = "extdns")]
    pub leader_elect_resource_name: String,
    /// Namespace of the Lease (the pod's own when empty: its service-account namespace, else POD_NAMESPACE,
    /// else default).
    #[arg(long, value_name = "NAMESPACE", default_value = "")]
    pub leader_elect_resource_namespace: String,
}

names! {
    /// `--log-format`.
    pub enum LogFormat {
        Text = "text",
        Json = "json",
    }
}

names! {
    /// external-dns's (logrus) level names, least verbose first. Panic and fatal log only errors: extdns
    /// has no more severe level.
    pub enum LogLevel {
        Panic = "panic",
        Fatal = "fatal",
        Error = "error",
        Warning = "warning",
        Info = "info",
        Debug = "debug",
        Trace = "trace",
    }
}

// -------------------------------------------------------------------------------------------- Webhook

/// The webhook provider client and `--webhook-server`.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Webhook provider")]
pub struct WebhookFlags {
    /// Base URL of the webhook provider.
    #[arg(long, value_name = "URL", default_value = "http://localhost:8888")]
    pub webhook_provider_url: String,
    /// Client: with the write timeout, the timeout of each request (their sum). Server: the time to read a
    /// request, body included (0 = none).
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = duration::parse)]
    pub webhook_provider_read_timeout: Duration,
    /// Client: with the read timeout, the timeout of each request (their sum). Server: the time from a
    /// request's headers to its response written (0 = none).
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = duration::parse)]
    pub webhook_provider_write_timeout: Duration,
    /// Server: the time to read a request's headers (0 = the read timeout).
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = duration::parse)]
    pub webhook_provider_read_header_timeout: Duration,
    /// Server: how long a keep-alive connection waits for its next request (0 = the read timeout).
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = duration::parse)]
    pub webhook_provider_idle_timeout: Duration,
    /// Largest request or response body in bytes (0 = no limit).
    #[arg(
        long,
        value_name = "BYTES",
        default_value_t = 33_554_432,
        allow_negative_numbers = true
    )]
    pub webhook_provider_max_body_size: i64,
    /// Serve the selected provider over the webhook protocol instead of running the controller.
    #[arg(long, value_name = BOOL, action = ArgAction::Set, default_value = "false")]
    pub webhook_server: bool,
    /// Address the webhook server listens on (external-dns always uses 127.0.0.1:8888).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8888")]
    pub webhook_server_address: String,
}

// ------------------------------------------------------------------------------------------- InMemory

/// The in-memory provider's flags.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "In-memory provider")]
pub struct InMemoryFlags {
    /// Zones of the in-memory provider (repeatable).
    #[arg(long, value_name = "ZONE")]
    pub inmemory_zone: Vec<String>,
}

// -------------------------------------------------------------------------------------------- RFC2136

/// The RFC 2136 provider's flags.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "RFC2136 provider")]
pub struct Rfc2136Flags {
    /// DNS server host(s) to send updates to (repeatable).
    #[arg(id = "rfc2136-host", long, value_name = "HOST")]
    pub host: Vec<String>,
    /// DNS server port.
    #[arg(id = "rfc2136-port", long, value_name = "PORT", default_value_t = 0)]
    pub port: u16,
    /// Zones to manage (repeatable).
    #[arg(id = "rfc2136-zone", long, value_name = "ZONE")]
    pub zone: Vec<String>,
    /// Send updates without TSIG.
    #[arg(id = "rfc2136-insecure", long, value_name = BOOL, action = ArgAction::Set, default_value = "false")]
    pub insecure: bool,
    /// TSIG key name.
    #[arg(id = "rfc2136-tsig-keyname", long, value_name = "NAME", default_value = "")]
    pub tsig_keyname: String,
    /// TSIG secret (base64).
    #[arg(id = "rfc2136-tsig-secret", long, value_name = "SECRET", default_value = "")]
    pub tsig_secret: String,
    /// TSIG algorithm (e.g. hmac-sha256).
    #[arg(id = "rfc2136-tsig-secret-alg", long, value_name = "ALG", default_value = "")]
    pub tsig_secret_alg: String,
    /// Read records with zone transfers (AXFR).
    #[arg(id = "rfc2136-axfr", long, value_name = BOOL, action = ArgAction::Set, default_value = "false")]
    pub axfr: bool,
    /// Deprecated: same as --rfc2136-axfr.
    #[arg(id = "rfc2136-tsig-axfr", long, value_name = BOOL, action = ArgAction::Set, default_value = "false")]
    pub tsig_axfr: bool,
    /// Smallest TTL of records written.
    #[arg(id = "rfc2136-min-ttl", long, value_name = "DURATION", default_value = "0s", value_parser = duration::parse)]
    pub min_ttl: Duration,
    /// GSS-TSIG (Kerberos) authentication; not supported by extdns.
    #[arg(id = "rfc2136-gss-tsig", long, value_name = BOOL, action = ArgAction::Set, default_value = "false")]
    pub gss_tsig: bool,
    /// Kerberos user name (GSS-TSIG).
    #[arg(id = "rfc2136-kerberos-username", long, value_name = "USER", default_value = "")]
    pub kerberos_username: String,
    /// Kerberos password (GSS-TSIG).
    #[arg(id = "rfc2136-kerberos-password", long, value_name = "PASSWORD", default_value = "")]
    pub kerberos_password: String,
    /// Kerberos realm (GSS-TSIG).
    #[arg(id = "rfc2136-kerberos-realm", long, value_name = "REALM", default_value = "")]
    pub kerberos_realm: String,
    /// Changes per DNS UPDATE message (≥ 1).
    #[arg(
        id = "rfc2136-batch-change-size",
        long,
        value_name = "N",
        default_value_t = 50,
        allow_negative_numbers = true
    )]
    pub batch_change_size: i32,
    /// Talk to the server over DNS-over-TLS.
    #[arg(id = "rfc2136-use-tls", long, value_name = BOOL, action = ArgAction::Set, default_value = "false")]
    pub use_tls: bool,
    /// Do not verify the server's TLS certificate.
    #[arg(id = "rfc2136-skip-tls-verify", long, value_name = BOOL, action = ArgAction::Set, default_value = "false")]
    pub skip_tls_verify: bool,
    /// How to spread updates over several --rfc2136-host: random, round-robin, disabled.
    #[arg(id = "rfc2136-load-balancing-strategy", long, value_name = "STRATEGY", value_enum,
          default_value_t = LoadBalancingStrategy::Disabled)]
    pub load_balancing_strategy: LoadBalancingStrategy,
}

names! {
    /// `--rfc2136-load-balancing-strategy`: which server of `--rfc2136-host` gets each request.
    pub enum LoadBalancingStrategy {
        Random = "random",
        RoundRobin = "round-robin",
        Disabled = "disabled",
    }
}

// ------------------------------------------------------------------------------------------- PowerDNS

/// The PowerDNS provider's flags.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "PowerDNS provider")]
pub struct PdnsFlags {
    /// PowerDNS API URL.
    #[arg(
        id = "pdns-server",
        long,
        value_name = "URL",
        default_value = "http://localhost:8081"
    )]
    pub server: String,
    /// PowerDNS server id.
    #[arg(id = "pdns-server-id", long, value_name = "ID", default_value = "localhost")]
    pub server_id: String,
    /// PowerDNS API key.
    #[arg(id = "pdns-api-key", long, value_name = "KEY", default_value = "")]
    pub api_key: String,
    /// Do not verify the PowerDNS API's TLS certificate.
    #[arg(id = "pdns-skip-tls-verify", long, value_name = BOOL, action = ArgAction::Set, default_value = "false")]
    pub skip_tls_verify: bool,
}

// ------------------------------------------------------------------------------------------------ AWS

/// The Route53 provider's flags.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "AWS provider")]
pub struct AwsFlags {
    /// Only public or private hosted zones (all when empty).
    #[arg(id = "aws-zone-type", long, value_name = "TYPE", default_value = "",
          value_parser = PossibleValuesParser::new(["", "public", "private"]))]
    pub zone_type: String,
    /// Only hosted zones with these tags (repeatable `key=value`).
    #[arg(id = "aws-zone-tags", long, value_name = "TAG")]
    pub zone_tags: Vec<String>,
    /// AWS profile to take credentials from (one; given twice, refused).
    #[arg(id = "aws-profile", long, value_name = "PROFILE")]
    pub profile: Vec<String>,
    /// IAM role to assume with the credentials found.
    #[arg(id = "aws-assume-role", long, value_name = "ARN", default_value = "")]
    pub assume_role: String,
    /// External id when assuming the role (needs --aws-assume-role).
    #[arg(id = "aws-assume-role-external-id", long, value_name = "ID", default_value = "")]
    pub assume_role_external_id: String,
    /// Changes per Route53 batch.
    #[arg(
        id = "aws-batch-change-size",
        long,
        value_name = "N",
        default_value_t = 1000,
        allow_negative_numbers = true
    )]
    pub batch_change_size: i32,
    /// Bytes per Route53 batch.
    #[arg(
        id = "aws-batch-change-size-bytes",
        long,
        value_name = "N",
        default_value_t = 32000,
        allow_negative_numbers = true
    )]
    pub batch_change_size_bytes: i32,
    /// Record values per Route53 batch.
    #[arg(
        id = "aws-batch-change-size-values",
        long,
        value_name = "N",
        default_value_t = 1000,
        allow_negative_numbers = true
    )]
    pub batch_change_size_values: i32,
    /// Pause between Route53 batches.
    #[arg(id = "aws-batch-change-interval", long, value_name = "DURATION", default_value = "1s",
          value_parser = duration::parse)]
    pub batch_change_interval: Duration,
    /// Default of evaluate-target-health for alias records.
    #[arg(id = "aws-evaluate-target-health", long, value_name = BOOL, action = ArgAction::Set, default_value = "true")]
    pub evaluate_target_health: bool,
    /// Retries of failed AWS API calls.
    #[arg(
        id = "aws-api-retries",
        long,
        value_name = "N",
        default_value_t = 3,
        allow_negative_numbers = true
    )]
    pub api_retries: i32,
    /// Publish CNAMEs instead of alias records.
    #[arg(id = "aws-prefer-cname", long, value_name = BOOL, action = ArgAction::Set, default_value = "false")]
    pub prefer_cname: bool,
    /// Cache the hosted zone list for this long (0s disables the cache).
    #[arg(id = "aws-zones-cache-duration", long, value_name = "DURATION", default_value = "0s",
          value_parser = duration::parse)]
    pub zones_cache_duration: Duration,
    /// Let --domain-filter also match parent zones.
    #[arg(id = "aws-zone-match-parent", long, value_name = BOOL, action = ArgAction::Set, default_value = "false")]
    pub zone_match_parent: bool,
}

// -------------------------------------------------------------------------------------------- CoreDNS

/// The CoreDNS provider's flags.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "CoreDNS provider")]
pub struct CorednsFlags {
    /// etcd key prefix of CoreDNS records.
    #[arg(id = "coredns-prefix", long, value_name = "PREFIX", default_value = "/skydns/")]
    pub prefix: String,
    /// Only touch etcd entries that carry this instance's owner id.
    #[arg(id = "coredns-strictly-owned", long, value_name = BOOL, action = ArgAction::Set, default_value = "false")]
    pub strictly_owned: bool,
}

// ----------------------------------------------------------------------------------------- Cloudflare

/// The Cloudflare provider's flags.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Cloudflare provider")]
pub struct CloudflareFlags {
    /// Proxy records through Cloudflare unless their cloudflare-proxied property says otherwise.
    #[arg(id = "cloudflare-proxied", long, value_name = BOOL, action = ArgAction::Set, default_value = "false")]
    pub proxied: bool,
    /// Manage Cloudflare custom hostnames (not supported by extdns).
    #[arg(id = "cloudflare-custom-hostnames", long, value_name = BOOL, action = ArgAction::Set, default_value = "false")]
    pub custom_hostnames: bool,
    /// Minimum TLS version of custom hostnames (not supported: a value other than the default is refused).
    #[arg(
        id = "cloudflare-custom-hostnames-min-tls-version",
        long,
        value_name = "VERSION",
        default_value = "1.0"
    )]
    pub custom_hostnames_min_tls_version: String,
    /// Certificate authority of custom hostnames (not supported: a value other than the default is refused).
    #[arg(
        id = "cloudflare-custom-hostnames-certificate-authority",
        long,
        value_name = "CA",
        default_value = "none"
    )]
    pub custom_hostnames_certificate_authority: String,
    /// Records per page when listing a zone's records (1..5000).
    #[arg(
        id = "cloudflare-dns-records-per-page",
        long,
        value_name = "N",
        default_value_t = 100,
        allow_negative_numbers = true
    )]
    pub dns_records_per_page: i32,
    /// Use Cloudflare's regional services (not supported by extdns).
    #[arg(id = "cloudflare-regional-services", long, value_name = BOOL, action = ArgAction::Set, default_value = "false")]
    pub regional_services: bool,
    /// Default region key of regional hostnames (not supported: a value is refused).
    #[arg(id = "cloudflare-region-key", long, value_name = "KEY", default_value = "")]
    pub region_key: String,
    /// Comment written on records that have none of their own.
    #[arg(id = "cloudflare-record-comment", long, value_name = "TEXT", default_value = "")]
    pub record_comment: String,
    /// The longest record comment the zones' plan takes: 100 (Free, fits every plan) or 500 (Pro,
    /// Business, Enterprise); --txt-ownership=metadata shares it with the record's own comment.
    #[arg(
        id = "cloudflare-record-comment-limit",
        long,
        value_name = "CHARACTERS",
        default_value_t = 100
    )]
    pub record_comment_limit: usize,
}

// --------------------------------------------------------------------------------------- Google Cloud DNS

/// The Google Cloud DNS provider's flags.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Google Cloud DNS provider")]
pub struct GoogleFlags {
    /// The project of the managed zones; asked of the metadata server when empty (on GCE and GKE).
    #[arg(id = "google-project", long, value_name = "PROJECT", default_value = "")]
    pub project: String,
    /// Most additions plus deletions in one Cloud DNS change (0: no limit but Cloud DNS's own).
    #[arg(
        id = "google-batch-change-size",
        long,
        value_name = "N",
        default_value_t = 1000,
        allow_negative_numbers = true
    )]
    pub batch_change_size: i64,
    /// The pause between two Cloud DNS changes.
    #[arg(id = "google-batch-change-interval", long, value_name = "DURATION", default_value = "1s", value_parser = duration::parse)]
    pub batch_change_interval: Duration,
    /// Manage only public or only private zones (empty: both).
    #[arg(
        id = "google-zone-visibility",
        long,
        value_name = "public|private",
        default_value = ""
    )]
    pub zone_visibility: String,
}

// -------------------------------------------------------------------------------------------- Azure

/// The Azure DNS and Azure Private DNS providers' flags.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Azure DNS and Azure Private DNS providers")]
pub struct AzureFlags {
    /// The azure.json with the tenant, subscription, resource group and credentials.
    #[arg(
        id = "azure-config-file",
        long,
        value_name = "FILE",
        default_value = "/etc/kubernetes/azure.json"
    )]
    pub config_file: String,
    /// The resource group of the zones (overrides the file's resourceGroup).
    #[arg(id = "azure-resource-group", long, value_name = "GROUP", default_value = "")]
    pub resource_group: String,
    /// The subscription of the zones (overrides the file's subscriptionId).
    #[arg(id = "azure-subscription-id", long, value_name = "ID", default_value = "")]
    pub subscription_id: String,
    /// The client id of a user-assigned managed identity (overrides the file's userAssignedIdentityID).
    #[arg(
        id = "azure-user-assigned-identity-client-id",
        long,
        value_name = "ID",
        default_value = ""
    )]
    pub user_assigned_identity_client_id: String,
    /// How long the zone list is reused (0s: read it every sync).
    #[arg(id = "azure-zones-cache-duration", long, value_name = "DURATION", default_value = "0s", value_parser = duration::parse)]
    pub zones_cache_duration: Duration,
    /// Retries of a throttled or failed Azure call (0: the SDK's default of 3; negative: none).
    #[arg(
        id = "azure-maxretries-count",
        long,
        value_name = "N",
        default_value_t = 3,
        allow_negative_numbers = true
    )]
    pub maxretries_count: i64,
}

// -------------------------------------------------------------------------------------------- Pi-hole

/// The Pi-hole provider's flags (Pi-hole v6's REST API).
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Pi-hole provider")]
pub struct PiholeFlags {
    /// The base URL of the Pi-hole web server (required with --provider=pihole).
    #[arg(id = "pihole-server", long, value_name = "URL", default_value = "")]
    pub server: String,
    /// The Pi-hole web interface's password (or an app password), if it has one.
    #[arg(id = "pihole-password", long, value_name = "PASSWORD", default_value = "")]
    pub password: String,
    /// Do not verify the TLS certificate of the Pi-hole web server.
    #[arg(id = "pihole-tls-skip-verify", long, value_name = BOOL, action = ArgAction::Set, default_value = "false")]
    pub tls_skip_verify: bool,
}

// ---------------------------------------------------------------------------------- Built-in DNS server

/// `--provider=dns-server`: the zones extdns answers for itself. extdns only. Checked and typed in
/// `settings::dns_server`.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Built-in DNS server (extdns only)")]
pub struct DnsServerFlags {
    /// Address to answer DNS on, UDP and TCP (repeatable; port 0 picks a free port, logged at startup).
    #[arg(long, value_name = "ADDR:PORT", default_values = ["0.0.0.0:1053"])]
    pub dns_server_listen: Vec<String>,
    /// A zone to serve authoritatively (repeatable; required with --provider=dns-server).
    #[arg(long, value_name = "ZONE")]
    pub dns_server_zone: Vec<String>,
    /// Apex NS name of the zones it is inside, with its glue address if in-zone (repeatable; ns1.<zone> by
    /// default).
    #[arg(long, value_name = "NAME[=IP]")]
    pub dns_server_ns: Vec<String>,
    /// The SOA's mailbox (RNAME) for every zone; hostmaster.<zone> when empty.
    #[arg(long, value_name = "NAME", default_value = "")]
    pub dns_server_soa_rname: String,
    /// The SOA's refresh: how often secondaries check the serial.
    #[arg(long, value_name = "DURATION", default_value = "1h0m0s", value_parser = duration::parse)]
    pub dns_server_soa_refresh: Duration,
    /// The SOA's retry: how soon a secondary retries a failed refresh.
    #[arg(long, value_name = "DURATION", default_value = "10m0s", value_parser = duration::parse)]
    pub dns_server_soa_retry: Duration,
    /// The SOA's expire: how long a secondary keeps answering without reaching this server.
    #[arg(long, value_name = "DURATION", default_value = "168h0m0s", value_parser = duration::parse)]
    pub dns_server_soa_expire: Duration,
    /// The SOA's minimum: how long resolvers cache a negative answer (NXDOMAIN, NODATA).
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = duration::parse)]
    pub dns_server_soa_minimum: Duration,
    /// TTL of records whose endpoint sets none.
    #[arg(long, value_name = "DURATION", default_value = "1m0s", value_parser = duration::parse)]
    pub dns_server_ttl: Duration,
    /// A secondary allowed to transfer the zones (AXFR, IXFR), sent NOTIFY on every change; with /KEY-NAME
    /// its transfers must be signed with that --dns-server-tsig-key (repeatable; port 53 by default).
    #[arg(long, value_name = "ADDR[:PORT][/KEY-NAME]")]
    pub dns_server_secondary: Vec<String>,
    /// A TSIG key (repeatable); ALGORITHM is hmac-sha1, hmac-sha224, hmac-sha256, hmac-sha384 or
    /// hmac-sha512.
    /// Pass secrets as EXTERNAL_DNS_DNS_SERVER_TSIG_KEY (one key a line).
    #[arg(long, value_name = "NAME:ALGORITHM:BASE64-SECRET")]
    pub dns_server_tsig_key: Vec<String>,

    // --- DNSSEC signing (docs/dnssec.md) ---
    /// A --dns-server-zone to sign with DNSSEC (repeatable). Its key is read from --dns-server-dnssec-secret,
    /// or generated on first start and kept there, so every replica signs with the same key.
    #[arg(long, value_name = "ZONE")]
    pub dns_server_dnssec_zone: Vec<String>,
    /// The algorithm of keys generated for signed zones: ECDSAP256SHA256 (13) or ED25519 (15). A key
    /// already in the Secret keeps its own.
    #[arg(long, value_name = "ALGORITHM", default_value = "ECDSAP256SHA256")]
    pub dns_server_dnssec_algorithm: String,
    /// The Secret the signed zones' keys are kept in, in the controller's namespace (`NAMESPACE/NAME` for
    /// another); with --manifests it is read from the manifest files.
    #[arg(long, value_name = "[NAMESPACE/]NAME", default_value = "extdns-dnssec-keys")]
    pub dns_server_dnssec_secret: String,
    /// How long a new signature is valid; signatures are renewed once less than half of it remains.
    #[arg(long, value_name = "DURATION", default_value = "336h0m0s", value_parser = duration::parse)]
    pub dns_server_dnssec_validity: Duration,
    // ---- on the internet: response rate limiting, cookies, DNS over TLS
    /// Response rate limiting of UDP answers: `auto` (on unless every --dns-server-listen address is
    /// loopback), `on` or `off`.
    #[arg(long, value_name = "auto|on|off", default_value = "auto")]
    pub dns_server_rrl: String,
    /// UDP answers of one class about one name allowed to one client prefix (/24, /56) a second.
    #[arg(long, value_name = "N", default_value = "20", value_parser = clap::value_parser!(u32).range(1..))]
    pub dns_server_rrl_responses_per_second: u32,
    /// How long a prefix that went over the rate stays limited once it is quiet.
    #[arg(long, value_name = "DURATION", default_value = "15s", value_parser = duration::parse)]
    pub dns_server_rrl_window: Duration,
    /// Every Nth rate-limited answer is sent truncated (TC), so a real client retries over TCP; the rest
    /// are dropped (0: all dropped, 1: all truncated).
    #[arg(long, value_name = "N", default_value = "2")]
    pub dns_server_rrl_slip: u32,
    /// Answer DNS cookies (RFC 7873, RFC 9018); a client with a valid server cookie is not rate limited.
    #[arg(long, value_name = BOOL, action = ArgAction::Set, default_value = "true")]
    pub dns_server_cookies: bool,
    /// The server cookies' secret, 32 hexadecimal digits, the same on every replica; one drawn per process
    /// when empty. Pass it as EXTERNAL_DNS_DNS_SERVER_COOKIE_SECRET.
    #[arg(long, value_name = "HEX", default_value = "")]
    pub dns_server_cookie_secret: String,
    /// Address to answer DNS over TLS on (repeatable), when --dns-server-tls-cert-file is given.
    #[arg(long, value_name = "ADDR:PORT", default_values = ["0.0.0.0:853"])]
    pub dns_server_tls_listen: Vec<String>,
    /// The DNS-over-TLS certificate chain (PEM); with --dns-server-tls-key-file it turns DoT on. Both files
    /// are read again when they change.
    #[arg(long, value_name = "FILE", default_value = "")]
    pub dns_server_tls_cert_file: String,
    /// The DNS-over-TLS private key (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(long, value_name = "FILE", default_value = "")]
    pub dns_server_tls_key_file: String,

    // ---- DNSSEC key rollover (docs/dnssec.md)
    /// How long a change of the signed zone takes to reach every server that answers for it (secondaries
    /// included); a rollover waits it out at each step, with --dns-server-dnssec-key-check-interval added.
    #[arg(long, value_name = "DURATION", default_value = "1h0m0s", value_parser = duration::parse)]
    pub dns_server_dnssec_propagation_delay: Duration,
    /// The largest TTL of any record of a signed zone: a rollover keeps the old key this long after the
    /// new one signs.
    #[arg(long, value_name = "DURATION", default_value = "24h0m0s", value_parser = duration::parse)]
    pub dns_server_dnssec_max_zone_ttl: Duration,
    /// The TTL of the DS records at the parent: a rollover keeps the old key this long after the DS swap.
    #[arg(long, value_name = "DURATION", default_value = "24h0m0s", value_parser = duration::parse)]
    pub dns_server_dnssec_parent_ds_ttl: Duration,
    /// How often each replica reads the key Secret for a rollover asked for or due to move on.
    #[arg(long, value_name = "DURATION", default_value = "1m0s", value_parser = duration::parse)]
    pub dns_server_dnssec_key_check_interval: Duration,

    // ---- the UDP workers (issue 49: the tail)
    /// Threads answering UDP on each listen address, each with a socket of its own (SO_REUSEPORT on
    /// Linux); 0: one per CPU the process may use, at most 8.
    #[arg(long, value_name = "N", default_value = "0")]
    pub dns_server_udp_workers: usize,
}

// ------------------------------------------------------------------------------------ extdns's own flags

/// extdns's own flags.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Offline cluster (extdns only)")]
pub struct OfflineFlags {
    /// Read Kubernetes objects from these files or directories instead of an API server (repeatable).
    #[arg(long, value_name = "PATH")]
    pub manifests: Vec<PathBuf>,
}

// ------------------------------------------------------------------------------------------- parsing

/// The command with extdns's conventions applied to every flag: environment variables, `--no-` booleans,
/// newline-separated environment lists, last-wins repetition of single-valued flags.
pub fn command() -> clap::Command {
    apply_conventions(Cli::command()).mut_subcommand("endpoints", |sub| sub.mut_arg("manifests", |a| a.required(true)))
}

fn apply_conventions(cmd: clap::Command) -> clap::Command {
    cmd.args_override_self(true)
        .mut_args(|arg| {
            let Some(long) = arg.get_long().map(str::to_owned) else {
                return arg;
            };
            let is_bool = arg.get_value_names().is_some_and(|v| v.iter().any(|n| n == BOOL));
            let repeatable = matches!(arg.get_action(), ArgAction::Append);
            let mut arg = arg;
            if is_bool {
                arg = arg
                    .num_args(0..=1)
                    .require_equals(true)
                    .default_missing_value("true")
                    .hide_possible_values(true)
                    .value_parser(BoolishValueParser::new());
            }
            if arg.get_default_values().iter().all(|v| v.is_empty()) {
                arg = arg.hide_default_value(true);
            }
            let env = env_name(&long);
            let value = std::env::var_os(&env);
            // kingpin treats an empty variable as unset; clap would hand the empty string to the parser.
            // A repeatable flag's multi-line value is handed over line by line (`split_environment_lists`);
            // clap must not also read it whole, at any level of the command tree.
            let multi_line = repeatable && value.as_ref().is_some_and(|v| v.to_string_lossy().contains('\n'));
            if !value.is_some_and(|v| v.is_empty()) && !multi_line {
                arg = arg.env(env).hide_env_values(true);
            }
            arg
        })
        .mut_subcommands(apply_conventions)
}

/// The long names of every repeatable flag anywhere in the command tree, each once.
fn repeatable_flags(cmd: &clap::Command, out: &mut Vec<String>) {
    for arg in cmd.get_arguments() {
        if matches!(arg.get_action(), ArgAction::Append)
            && let Some(long) = arg.get_long()
            && !out.iter().any(|l| l == long)
        {
            out.push(long.to_string());
        }
    }
    for sub in cmd.get_subcommands() {
        repeatable_flags(sub, out);
    }
}

/// kingpin's list values from the environment: a repeatable flag's `EXTERNAL_DNS_<FLAG>` holding several
/// lines is one value per line. clap's own value delimiter would split command-line values too (a
/// multi-line `--fqdn-template` would become several templates), so the lines are handed over as
/// `--flag=line` arguments instead, appended where the parser ends (inside the subcommand when there is
/// one) and only when the command line does not give the flag, which wins over the environment. A value
/// without a newline is left to clap's own environment handling.
fn split_environment_lists(cmd: &clap::Command, args: &mut Vec<OsString>, env: impl Fn(&str) -> Option<OsString>) {
    let mut repeatable = Vec::new();
    repeatable_flags(cmd, &mut repeatable);
    let end = args.iter().position(|a| a == "--").unwrap_or(args.len());
    let mut extra: Vec<OsString> = Vec::new();
    for long in repeatable {
        let Some(value) = env(&env_name(&long)) else { continue };
        let Some(value) = value.to_str().filter(|v| v.contains('\n')) else {
            continue;
        };
        let flag = format!("--{long}");
        let given = args.iter().take(end).skip(1).any(|a| {
            a.to_str()
                .is_some_and(|a| a == flag || a.strip_prefix(flag.as_str()).is_some_and(|r| r.starts_with('=')))
        });
        if !given {
            extra.extend(value.split('\n').map(|line| OsString::from(format!("{flag}={line}"))));
        }
    }
    args.splice(end..end, extra);
}

/// `EXTERNAL_DNS_<FLAG>` for a flag's long name.
pub fn env_name(long: &str) -> String {
    format!("{ENV_PREFIX}{}", long.to_ascii_uppercase().replace('-', "_"))
}

/// The long names of every boolean flag anywhere in the command tree.
fn bool_flags(cmd: &clap::Command, out: &mut Vec<String>) {
    for arg in cmd.get_arguments() {
        if arg.get_value_names().is_some_and(|v| v.iter().any(|n| n == BOOL))
            && let Some(long) = arg.get_long()
        {
            out.push(long.to_string());
        }
    }
    for sub in cmd.get_subcommands() {
        bool_flags(sub, out);
    }
}

/// kingpin's negated booleans: `--no-<flag>` becomes `--<flag>=false` for every boolean flag.
fn rewrite_negations(cmd: &clap::Command, args: Vec<OsString>) -> Vec<OsString> {
    let mut bools = Vec::new();
    bool_flags(cmd, &mut bools);
    let mut after_double_dash = false;
    args.into_iter()
        .map(|a| {
            if after_double_dash {
                return a;
            }
            if a == "--" {
                after_double_dash = true;
                return a;
            }
            match a.to_str().and_then(|s| s.strip_prefix("--no-")) {
                Some(name) if bools.iter().any(|b| b == name) => OsString::from(format!("--{name}=false")),
                _ => a,
            }
        })
        .collect()
}

/// Parse a command line (the first item is the program name).
pub fn try_parse_from<I, T>(args: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString>,
{
    let mut cmd = command();
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    crate::foreign_flags::check(&args)?;
    let mut args = rewrite_negations(&cmd, args);
    split_environment_lists(&cmd, &mut args, |name| std::env::var_os(name));
    let matches = cmd.try_get_matches_from_mut(args)?;
    let mut cli = Cli::from_arg_matches(&matches).map_err(|e| e.with_cmd(&cmd))?;
    cli.flags.control.min_event_sync_interval_explicit = matches
        .value_source("min_event_sync_interval")
        .is_some_and(|s| s != clap::parser::ValueSource::DefaultValue);
    cli.flags.registry.registry_explicit = matches
        .value_source("registry")
        .is_some_and(|s| s != clap::parser::ValueSource::DefaultValue);
    cli.flags.provider.batch_change_size_explicit = matches
        .value_source("batch_change_size")
        .is_some_and(|s| s != clap::parser::ValueSource::DefaultValue);
    Ok(cli)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split_with(args: &[&str], env: &[(&str, &str)]) -> Vec<String> {
        let mut args: Vec<OsString> = args.iter().map(OsString::from).collect();
        split_environment_lists(&command(), &mut args, |name| {
            env.iter().find(|(k, _)| *k == name).map(|(_, v)| OsString::from(v))
        });
        args.iter().map(|a| a.to_string_lossy().into_owned()).collect()
    }

    #[test]
    fn environment_lists_become_one_argument_per_line_unless_the_command_line_gives_the_flag() {
        let env = [
            ("EXTERNAL_DNS_SERVICE_TYPE_FILTER", "NodePort\nExternalName"),
            ("EXTERNAL_DNS_SOURCE", "service"),
        ];
        assert_eq!(
            split_with(&["extdns", "endpoints", "--output", "json"], &env),
            [
                "extdns",
                "endpoints",
                "--output",
                "json",
                "--service-type-filter=NodePort",
                "--service-type-filter=ExternalName"
            ]
        );
        assert_eq!(
            split_with(&["extdns", "--service-type-filter=LoadBalancer"], &env),
            ["extdns", "--service-type-filter=LoadBalancer"]
        );
    }

    #[test]
    fn a_multi_line_value_on_the_command_line_is_one_value() {
        let f = flags(&[
            "--source=service",
            "--fqdn-template",
            "{{if .Name}}\n{{.Name}}.example.com\n{{end}}",
        ]);
        assert_eq!(f.sources.fqdn_template.len(), 1);
    }

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        try_parse_from(std::iter::once("extdns").chain(args.iter().copied()))
    }

    fn flags(args: &[&str]) -> Flags {
        match parse(args) {
            Ok(cli) => cli.flags,
            Err(e) => panic!("{args:?}: {e}"),
        }
    }

    #[test]
    fn the_command_definition_is_consistent() {
        command().debug_assert();
    }

    #[test]
    fn defaults_follow_external_dns() {
        let f = flags(&["--source=service"]);
        assert_eq!(f.kube.kube_api_request_timeout, Duration::from_secs(30));
        assert_eq!((f.kube.kube_api_qps, f.kube.kube_api_burst), (5, 10));
        assert_eq!(f.sources.annotation_prefix, None);
        assert_eq!(f.provider.managed_record_types, vec!["A", "AAAA", "CNAME"]);
        assert_eq!(f.provider.batch_change_size, 200);
        assert_eq!(f.registry.policy, PolicyName::Sync);
        assert_eq!(f.registry.registry, RegistryName::Txt);
        assert_eq!(f.registry.txt_owner_id, "default");
        assert_eq!(f.registry.dynamodb_table, "external-dns");
        assert_eq!(f.control.interval, Duration::from_secs(60));
        assert_eq!(f.control.min_event_sync_interval, Duration::from_secs(5));
        assert!(!f.control.min_event_sync_interval_explicit);
        assert_eq!(
            (f.control.deletion_guard_percent, f.control.deletion_guard_min),
            (50, 10)
        );
        assert_eq!(f.control.log_level, LogLevel::Info);
        assert_eq!(f.control.log_format, LogFormat::Text);
        assert_eq!(f.control.metrics_address, ":7979");
        assert_eq!(f.webhook.webhook_provider_url, "http://localhost:8888");
        assert_eq!(f.webhook.webhook_provider_max_body_size, 33_554_432);
        assert_eq!(f.rfc2136.batch_change_size, 50);
        assert_eq!(f.rfc2136.load_balancing_strategy, LoadBalancingStrategy::Disabled);
        assert_eq!(f.pdns.server, "http://localhost:8081");
        assert_eq!(f.coredns.prefix, "/skydns/");
        assert!(f.service.exclude_unschedulable);
        assert!(f.aws.evaluate_target_health);
        assert!(!f.control.dry_run);
    }

    #[test]
    fn list_flags_are_repeatable_and_keep_flag_order() {
        let f = flags(&[
            "--source=service",
            "--source",
            "gateway-httproute",
            "--domain-filter=a.com",
        ]);
        assert_eq!(
            f.sources.source,
            vec![SourceName::Service, SourceName::GatewayHttpRoute]
        );
        assert_eq!(f.provider.domain_filter, vec!["a.com"]);
    }

    #[test]
    fn giving_a_list_flag_replaces_its_default() {
        let f = flags(&[
            "--source=service",
            "--managed-record-types=A",
            "--managed-record-types=SRV",
        ]);
        assert_eq!(f.provider.managed_record_types, vec!["A", "SRV"]);
    }

    #[test]
    fn fqdn_template_values_keep_their_newlines_on_the_command_line() {
        let f = flags(&[
            "--source=service",
            "--fqdn-template={{range .Spec.Ports}}\n{{.Port}}.a.com,\n{{end}}",
        ]);
        assert_eq!(
            f.sources.fqdn_template,
            vec!["{{range .Spec.Ports}}\n{{.Port}}.a.com,\n{{end}}"]
        );
    }

    #[test]
    fn fqdn_template_values_keep_their_commas() {
        let f = flags(&["--source=service", "--fqdn-template={{.Name}}.a.com,{{.Name}}.b.com"]);
        assert_eq!(f.sources.fqdn_template, vec!["{{.Name}}.a.com,{{.Name}}.b.com"]);
    }

    #[test]
    fn booleans_accept_flag_and_no_flag_forms() {
        assert!(flags(&["--source=service", "--dry-run"]).control.dry_run);
        assert!(
            !flags(&["--source=service", "--dry-run", "--no-dry-run"])
                .control
                .dry_run
        );
        assert!(
            !flags(&["--source=service", "--no-exclude-unschedulable"])
                .service
                .exclude_unschedulable
        );
        assert!(
            flags(&[
                "--source=service",
                "--no-exclude-unschedulable",
                "--exclude-unschedulable"
            ])
            .service
            .exclude_unschedulable
        );
        assert!(
            !flags(&["--source=service", "--exclude-unschedulable=false"])
                .service
                .exclude_unschedulable
        );
    }

    #[test]
    fn a_boolean_does_not_swallow_the_next_argument() {
        assert!(parse(&["--source=service", "--dry-run", "false"]).is_err());
        let f = flags(&["--dry-run", "--source=service"]);
        assert!(f.control.dry_run);
    }

    #[test]
    fn no_prefix_of_a_value_flag_is_unknown() {
        assert!(parse(&["--source=service", "--no-namespace"]).is_err());
    }

    #[test]
    fn single_valued_flags_take_the_last_occurrence() {
        let f = flags(&["--source=service", "--namespace=a", "--namespace=b"]);
        assert_eq!(f.sources.namespace, "b");
    }

    #[test]
    fn durations_use_go_syntax() {
        let f = flags(&[
            "--source=service",
            "--interval=1h30m",
            "--min-ttl=500ms",
            "--txt-cache-interval",
            "2m",
        ]);
        assert_eq!(f.control.interval, Duration::from_secs(5400));
        assert_eq!(f.sources.min_ttl, Duration::from_millis(500));
        assert_eq!(f.registry.txt_cache_interval, Duration::from_secs(120));
        assert!(parse(&["--source=service", "--interval=10"]).is_err());
    }

    #[test]
    fn enumerated_values_are_checked_while_parsing() {
        for bad in [
            &["--source=services"][..],
            &["--source=service", "--provider=route53"],
            &["--source=service", "--policy=delete-all"],
            &["--source=service", "--registry=etcd"],
            &["--source=service", "--log-format=xml"],
            &["--source=service", "--log-level=warn"],
            &["--source=service", "--compatibility=dns-controller"],
            &["--source=service", "--rfc2136-load-balancing-strategy=first"],
            &["--source=service", "--service-type-filter=Headless"],
            &["--source=service", "--events-emit=RecordCreated"],
        ] {
            assert!(parse(bad).is_err(), "{bad:?} should be rejected");
        }
        let f = flags(&[
            "--source=gateway-udproute",
            "--provider=rfc2136",
            "--policy=upsert-only",
            "--registry=noop",
            "--log-level=warning",
            "--compatibility=kops-dns-controller",
            "--rfc2136-load-balancing-strategy=round-robin",
            "--service-type-filter=ExternalName",
        ]);
        assert_eq!(f.provider.provider, Some(ProviderName::Rfc2136));
        assert_eq!(f.registry.policy, PolicyName::UpsertOnly);
        assert_eq!(f.control.log_level, LogLevel::Warning);
        assert_eq!(f.sources.compatibility, "kops-dns-controller");
        assert_eq!(f.rfc2136.load_balancing_strategy, LoadBalancingStrategy::RoundRobin);
    }

    #[test]
    fn an_empty_service_type_filter_entry_is_accepted() {
        let f = flags(&["--source=service", "--service-type-filter="]);
        assert_eq!(f.service.service_type_filter, vec![""]);
    }

    #[test]
    fn unknown_flags_are_rejected() {
        let err = parse(&["--source=service", "--no-such-flag"]).err().map(|e| e.kind());
        assert_eq!(err, Some(clap::error::ErrorKind::UnknownArgument));
    }

    #[test]
    fn source_is_required() {
        let err = parse(&[]).err().map(|e| e.kind());
        assert_eq!(err, Some(clap::error::ErrorKind::MissingRequiredArgument));
        let err = parse(&["endpoints", "--manifests=x"]).err().map(|e| e.kind());
        assert_eq!(err, Some(clap::error::ErrorKind::MissingRequiredArgument));
    }

    #[test]
    fn manifests_are_required_by_the_endpoints_command_only() {
        let err = parse(&["endpoints", "--source=service"]).err().map(|e| e.kind());
        assert_eq!(err, Some(clap::error::ErrorKind::MissingRequiredArgument));
        assert!(parse(&["--source=service"]).is_ok());
    }

    #[test]
    fn the_endpoints_subcommand_takes_every_controller_flag() {
        let cli = match parse(&[
            "endpoints",
            "--manifests=examples",
            "--source=service",
            "--provider=pdns",
            "--pdns-api-key=x",
            "--output=json",
        ]) {
            Ok(cli) => cli,
            Err(e) => panic!("{e}"),
        };
        let Some(Command::Endpoints(args)) = cli.command else {
            panic!("expected the endpoints subcommand")
        };
        assert_eq!(args.output, OutputFormat::Json);
        assert_eq!(args.flags.offline.manifests, vec![PathBuf::from("examples")]);
        assert_eq!(args.flags.provider.provider, Some(ProviderName::Pdns));
    }

    #[test]
    fn every_flag_has_its_external_dns_environment_variable() {
        let cmd = command();
        let mut checked = 0;
        let mut check = |c: &clap::Command| {
            for arg in c.get_arguments() {
                if let Some(long) = arg.get_long() {
                    let expected = format!("EXTERNAL_DNS_{}", long.to_uppercase().replace('-', "_"));
                    if std::env::var_os(&expected).is_some_and(|v| v.is_empty()) {
                        continue;
                    }
                    assert_eq!(
                        arg.get_env().and_then(|e| e.to_str()),
                        Some(expected.as_str()),
                        "--{long}"
                    );
                    checked += 1;
                }
            }
        };
        check(&cmd);
        for sub in cmd.get_subcommands() {
            check(sub);
        }
        assert!(checked > 200, "only {checked} flags checked");
    }

    #[test]
    fn deprecated_request_timeout_overrides_when_changed() {
        let f = flags(&["--source=service", "--kube-api-request-timeout=10s"]);
        assert_eq!(f.kube.effective_request_timeout(), Duration::from_secs(10));
        let f = flags(&[
            "--source=service",
            "--kube-api-request-timeout=10s",
            "--request-timeout=1m",
        ]);
        assert_eq!(f.kube.effective_request_timeout(), Duration::from_secs(60));
    }

    #[test]
    fn docs_flags_md_lists_every_flag() -> Result<(), std::io::Error> {
        let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/flags.md"))?;
        let cmd = command();
        let mut missing = Vec::new();
        for arg in cmd
            .get_arguments()
            .chain(cmd.get_subcommands().flat_map(|s| s.get_arguments()))
        {
            if let Some(long) = arg.get_long() {
                let is_bool = arg.get_value_names().is_some_and(|v| v.iter().any(|n| n == BOOL));
                let shown = if is_bool {
                    format!("`--[no-]{long}`")
                } else {
                    format!("--{long}=")
                };
                if !docs.contains(&shown) {
                    missing.push(long.to_string());
                }
            }
        }
        assert!(missing.is_empty(), "docs/flags.md does not document: {missing:?}");
        Ok(())
    }

    #[test]
    fn source_names_print_as_given() {
        assert_eq!(SourceName::GatewayHttpRoute.to_string(), "gateway-httproute");
        assert_eq!(ProviderName::AzurePrivateDns.to_string(), "azure-private-dns");
    }
}
