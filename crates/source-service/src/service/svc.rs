//! One Service being worked on: what every one of its names shares (TTL, provider-specific properties,
//! its key, the addresses its type exposes), and the checks every name and address goes
//! through. The type-specific targets (headless, NodePort, compatibility modes) build on it.

use std::cell::{Cell, OnceCell};
use std::sync::Arc;

use extdns_endpoint::{Endpoint, ProviderSpecific, RecordType, Target, TargetKind, Ttl, validate_dns_name};
use extdns_informer::view::Service;
use extdns_informer::{ObjectKey, StrMap};

use crate::context::{Ctx, SplitTargets};

/// Whether a Pod's labels satisfy a Service's `spec.selector` (every pair present; empty selects all).
pub(crate) fn selector_matches(selector: &StrMap, labels: &StrMap) -> bool {
    selector.iter().all(|(k, v)| labels.get(k) == Some(v))
}

/// One Service being worked on, with what every one of its names shares. Targets are computed at most
/// once per Service, however many names it has, so warnings about them appear once too.
pub(crate) struct Svc<'c> {
    pub svc: &'c Service,
    /// The Service's key, shared by all its endpoints (their `resource` label is rendered from it).
    pub object: Arc<ObjectKey>,
    /// `namespace/name`, naming the Service in warnings; rendered for the first one.
    id: OnceCell<String>,
    pub ttl: Ttl,
    pub provider_specific: ProviderSpecific,
    pub set_identifier: String,
    /// The Service's `target` annotation (empty: none).
    pub target_override: Vec<Target>,
    cluster_ip: OnceCell<Vec<Target>>,
    load_balancer: OnceCell<Vec<Target>>,
    /// The `target` annotation has a target no provider can write: no name of the Service is published.
    pub unwritable_target: bool,
    /// Something this Service asks for could not be evaluated (a template, a name, a target): its records
    /// are then kept as they are rather than planned from a partial result.
    failed: Cell<bool>,
    /// Why the Service failed, for its Warning event, when one field says it all.
    pub why: Option<String>,
}

impl<'c> Svc<'c> {
    pub fn new(ctx: &Ctx<'_>, svc: &'c Service, object: &ObjectKey) -> Self {
        let annotations = &ctx.cfg.common.annotations;
        let a = &svc.meta.annotations;
        let ttl = annotations.ttl(a, object);
        let id = || id_of(object);
        let (provider_specific, set_identifier) = annotations.provider_specific(a);
        let mut target_override = annotations.targets(a);
        if target_override.iter().any(|t| t.is_empty()) {
            tracing::warn!(
                service = id(),
                field = "target annotation",
                "skipping empty items of the target annotation"
            );
            target_override.retain(|t| !t.is_empty());
        }
        // A target that is neither an address nor a host name cannot be written by any provider: publishing
        // it would fail at the provider, so the Service is not evaluated and its records are kept.
        let unwritable = target_override.iter().find(|t| t.kind() == TargetKind::Other);
        if let Some(t) = unwritable {
            tracing::warn!(
                service = id(),
                field = "target annotation",
                value = %extdns_source::shorten(t.as_str()),
                "the target is neither an IP address nor a host name; the Service's records are kept as they are"
            );
        }
        let unwritable_target = unwritable.is_some();
        let why = unwritable.map(|t| {
            format!(
                "target annotation: {:?} is neither an IP address nor a host name",
                extdns_source::shorten(t.as_str())
            )
        });
        Svc {
            svc,
            object: Arc::new(object.clone()),
            id: OnceCell::new(),
            ttl,
            provider_specific,
            set_identifier,
            target_override,
            cluster_ip: OnceCell::new(),
            load_balancer: OnceCell::new(),
            unwritable_target,
            failed: Cell::new(unwritable_target),
            why,
        }
    }

    /// Mark the Service as not evaluated this sync (the warning that says why is the caller's).
    pub fn fail(&self) {
        self.failed.set(true);
    }

    /// `namespace/name`, naming the Service in warnings.
    pub fn id(&self) -> &str {
        self.id.get_or_init(|| id_of(&self.object))
    }

    /// The endpoints for one name with these targets: A, AAAA and CNAME by the targets' families.
    /// Targets come out sorted and deduplicated, as every record of this source does (see [`crate::merge`]).
    pub fn emit(&self, hostname: &str, targets: &[Target]) -> Vec<Endpoint> {
        let mut eps = Endpoint::for_hostname(
            hostname,
            targets,
            self.ttl,
            &self.provider_specific,
            &self.set_identifier,
        );
        for e in &mut eps {
            e.targets.normalize();
        }
        eps
    }

    /// Like [`Svc::emit`] for addresses already split by family, sorted and deduplicated (node addresses):
    /// no splitting or sorting again.
    pub fn emit_split(&self, hostname: &str, targets: &SplitTargets) -> Vec<Endpoint> {
        let mut out = Vec::with_capacity(2);
        for (rt, list) in [(RecordType::A, &targets.v4), (RecordType::Aaaa, &targets.v6)] {
            if !list.is_empty() {
                out.push(self.record_sorted(hostname, rt, list.clone()));
            }
        }
        out
    }

    /// Like [`Svc::record`] for a name already validated and owned (no second copy of it).
    pub fn record_named(&self, name: String, record_type: RecordType, targets: Vec<Target>) -> Endpoint {
        let mut e = self.record("", record_type, targets);
        e.dns_name = name;
        e
    }

    /// A single endpoint of a given type carrying the Service's TTL, set identifier and provider-specific properties
    /// (headless and SRV records, which are not split by target family).
    pub fn record(&self, name: &str, record_type: RecordType, targets: Vec<Target>) -> Endpoint {
        let mut e = self.record_sorted(name, record_type, targets);
        e.targets.normalize();
        e
    }

    /// [`Svc::record`] for targets already sorted and deduplicated.
    fn record_sorted(&self, name: &str, record_type: RecordType, targets: Vec<Target>) -> Endpoint {
        Endpoint::new(name, record_type, targets)
            .with_ttl(self.ttl)
            .with_set_identifier(self.set_identifier.clone())
            .with_provider_specific(self.provider_specific.clone())
    }

    /// Keep a value of a field that must be an IP address; warn (naming the field) and drop it otherwise.
    pub fn ip(&self, value: &str, field: impl FnOnce() -> String) -> Option<Target> {
        let target = Target::from(value);
        if !target.is_ip() {
            tracing::warn!(service = self.id(), field = %field(), value, "skipping target: not an IP address");
            return None;
        }
        Some(target)
    }

    /// Whether something the Service asks for could not be evaluated (see [`Svc::fail`]).
    pub fn failed(&self) -> bool {
        self.failed.get()
    }

    pub fn cluster_ip(&self) -> &[Target] {
        self.cluster_ip.get_or_init(|| match self.svc.cluster_ip.as_deref() {
            None | Some("") | Some("None") => Vec::new(),
            Some(ip) => self.ip(ip, || "spec.clusterIP".into()).into_iter().collect(),
        })
    }

    pub fn external_ips(&self) -> Vec<Target> {
        let ips = self.svc.external_ips.iter().enumerate();
        ips.filter_map(|(i, ip)| self.ip(ip, || format!("spec.externalIPs[{i}]")))
            .collect()
    }

    pub fn load_balancer(&self, ctx: &Ctx<'_>) -> &[Target] {
        self.load_balancer.get_or_init(|| {
            if !self.svc.external_ips.is_empty() {
                return self.external_ips();
            }
            let mut targets = Vec::new();
            for (i, ingress) in self.svc.load_balancer_ingress.iter().enumerate() {
                if let Some(ip) = ingress.ip.as_deref().filter(|ip| !ip.is_empty()) {
                    targets.extend(self.ip(ip, || format!("status.loadBalancer.ingress[{i}].ip")));
                }
                let Some(host) = ingress.hostname.as_deref().filter(|h| !h.is_empty()) else {
                    continue;
                };
                if !ctx.cfg.resolve_load_balancer_hostname {
                    targets.push(Target::from(host));
                    continue;
                }
                match ctx.resolved.get(host) {
                    Some(Ok(ips)) => targets.extend(ips.iter().cloned()),
                    Some(Err(e)) => {
                        self.fail();
                        tracing::warn!(
                            service = self.id(),
                            field = %format_args!("status.loadBalancer.ingress[{i}].hostname"),
                            value = host,
                            error = %e,
                            "could not resolve the load balancer hostname; the Service's records are kept as they are"
                        )
                    }
                    None => {}
                }
            }
            targets
        })
    }

    /// A name without its trailing dot, if it can be a DNS name; a warning naming the Service and `field`
    /// otherwise.
    pub fn valid_name<'h>(&self, hostname: &'h str, field: &str) -> Option<&'h str> {
        let name = hostname.strip_suffix('.').unwrap_or(hostname);
        if name.is_empty() {
            tracing::warn!(service = self.id(), field, "skipping an empty hostname");
            return None;
        }
        if let Err(e) = validate_dns_name(name) {
            self.fail();
            tracing::warn!(
                service = self.id(),
                field,
                value = %extdns_source::shorten(name),
                "skipping hostname: {e}; the Service's records are kept as they are"
            );
            return None;
        }
        Some(name)
    }
}

/// `namespace/name`: what names a Service in warnings.
fn id_of(object: &ObjectKey) -> String {
    format!("{}/{}", object.namespace, object.name)
}
