//! The source pipeline: what happens to the endpoints of all sources before the plan sees them,
//! in external-dns's order, because each step depends on the previous one:
//!
//! 1. **multi-source**: every source in flag order, concatenated; `--default-targets` replace the targets of
//!    endpoints that have none (of all endpoints with `--force-default-targets`);
//! 2. **dedup**: invalid endpoints are dropped with a warning and counted, targets of multi-target endpoints
//!    are sorted and deduplicated, and exact duplicates (type, name, set identifier, targets) are dropped,
//!    the first one winning and absorbing the others' object references;
//! 3. **nat64**: an AAAA target inside a `--nat64-networks` prefix adds an A record for its embedded IPv4;
//! 4. **target filter**: `--target-net-filter` / `--exclude-target-net`; an endpoint left without targets
//!    is dropped;
//! 5. **PTR** (when PTR records are managed): reverse records for A/AAAA endpoints that opt in;
//! 6. **post-processor**: `--min-ttl` fills unset TTLs, provider-specific properties of other providers are
//!    removed and the rest sorted by name, `--prefer-alias` marks CNAMEs as aliases.
//!
//! A source that fails fails the whole pipeline ([`crate::pipeline`]): the controller must not plan from a
//! partial view.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::net::{IpAddr, Ipv4Addr};

use extdns_endpoint::{
    Endpoint, ProviderSpecific, RecordType, Target, TargetKind, TargetNetFilter, Targets, Ttl, validate_endpoint,
};
use extdns_informer::ObjectKey;
use ipnet::Ipv6Net;

use super::PipelineOutput;
use crate::annotations::legacy_cloudflare_property;

/// The pipeline flags.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct PipelineConfig {
    /// `--default-targets`.
    pub default_targets: Vec<Target>,
    /// `--force-default-targets`: replace the targets of every endpoint, not only of those without.
    pub force_default_targets: bool,
    /// `--target-net-filter` and `--exclude-target-net`.
    pub target_net_filter: TargetNetFilter,
    /// `--nat64-networks`; each must be a /96 (others are ignored with a warning).
    pub nat64_networks: Vec<Ipv6Net>,
    /// PTR is among the managed record types: the PTR step runs.
    pub manage_ptr: bool,
    /// `--create-ptr`: A/AAAA endpoints get PTR records unless their `record-type` says otherwise.
    pub create_ptr: bool,
    /// `--min-ttl`: the TTL of endpoints that set none.
    pub min_ttl: Ttl,
    /// `--provider`: provider-specific properties of other providers are dropped.
    pub provider: String,
    /// `--prefer-alias`.
    pub prefer_alias: bool,
}

/// Endpoints, each with the index of the source that made it (in the pipeline's source names): two vectors
/// rather than one of pairs, so a source's endpoints move in as they are, not copied into pairs.
#[derive(Debug, Default)]
pub(crate) struct Tagged {
    pub(crate) sources: Vec<usize>,
    pub(crate) endpoints: Vec<Endpoint>,
}

impl Tagged {
    /// Appends what source `source` made.
    pub(crate) fn extend(&mut self, source: usize, endpoints: Vec<Endpoint>) {
        self.sources.extend(std::iter::repeat_n(source, endpoints.len()));
        if self.endpoints.is_empty() {
            self.endpoints = endpoints;
        } else {
            self.endpoints.extend(endpoints);
        }
    }

    fn push(&mut self, source: usize, endpoint: Endpoint) {
        self.sources.push(source);
        self.endpoints.push(endpoint);
    }
}

impl FromIterator<(usize, Endpoint)> for Tagged {
    fn from_iter<I: IntoIterator<Item = (usize, Endpoint)>>(iter: I) -> Self {
        let (sources, endpoints) = iter.into_iter().unzip();
        Tagged { sources, endpoints }
    }
}

/// Steps 1 (default targets) to 6 on endpoints already collected, each tagged with the index of its source
/// in `names`; what steps 2 and 4 drop is counted in `out`.
pub(crate) fn process(c: &PipelineConfig, tagged: Tagged, names: &[&str], out: &mut PipelineOutput) {
    let tagged = apply_default_targets(tagged, &c.default_targets, c.force_default_targets);
    let mut eps = dedup(tagged, names, out);
    if !c.nat64_networks.is_empty() {
        eps = nat64(eps, &c.nat64_networks);
    }
    if c.target_net_filter.is_configured() {
        eps = filter_targets(eps, &c.target_net_filter);
    }
    if c.manage_ptr {
        eps = add_ptr_records(eps, c.create_ptr);
    }
    post_process(&mut eps, c);
    out.endpoints = eps;
}

/// Step 1's default targets. An endpoint that is replaced keeps its name, TTL, provider-specific
/// properties, set identifier, labels and object references; its type follows the new targets.
fn apply_default_targets(tagged: Tagged, defaults: &[Target], force: bool) -> Tagged {
    if defaults.is_empty() {
        return tagged;
    }
    let mut kept_own = 0usize;
    let mut out = Tagged::default();
    for (src, e) in tagged.sources.into_iter().zip(tagged.endpoints) {
        if !force && !e.targets.is_empty() {
            kept_own += 1;
            out.push(src, e);
            continue;
        }
        for mut d in Endpoint::for_hostname(
            &e.dns_name,
            defaults,
            e.record_ttl,
            &e.provider_specific,
            &e.set_identifier,
        ) {
            d.labels = e.labels.clone();
            d.ref_objects = e.ref_objects.clone();
            out.push(src, d);
        }
    }
    if kept_own > 0 {
        tracing::warn!(
            endpoints = kept_own,
            "sources provided targets for some endpoints; the default targets apply only to endpoints without \
             targets unless they are forced on all"
        );
    }
    out
}

/// Step 2. Validation, target normalisation and exact-duplicate removal, counting what is dropped.
/// Works in place: at 100,000 endpoints, moving them between vectors costs more than the checks.
fn dedup(tagged: Tagged, names: &[&str], out: &mut PipelineOutput) -> Vec<Endpoint> {
    let source_name = |i: usize| names.get(i).copied().unwrap_or("unknown").to_string();
    let Tagged {
        sources,
        endpoints: mut tagged,
    } = tagged;
    let mut keep = vec![true; tagged.len()];
    for (i, (src, e)) in sources.iter().zip(tagged.iter_mut()).enumerate() {
        if let Err(reason) = validate_endpoint(e) {
            let objects: Vec<String> = e.ref_objects.iter().map(ToString::to_string).collect();
            tracing::warn!(
                endpoint = %e,
                source = %source_name(*src),
                objects = ?objects,
                "dropping invalid endpoint: {reason}"
            );
            *out.invalid
                .entry((e.record_type.to_string(), source_name(*src)))
                .or_default() += 1;
            // The objects that asked for a record that cannot be written: what they published before stays
            // (of an object failing in part already, a skipped DNSEndpoint entry, the records at this name
            // too).
            let why = format!("the {} record {} is invalid: {reason}", e.record_type, e.dns_name);
            for object in e.ref_objects.iter() {
                match out.failed.held(object) {
                    Some(crate::Held::All) => {}
                    Some(crate::Held::Part(_)) => {
                        let mut held = crate::HeldRecords::new();
                        held.name(&e.dns_name, Some(e.record_type.clone()));
                        out.failed
                            .insert_part(ObjectKey::clone(object), Some(why.clone()), held);
                    }
                    None => {
                        *out.failed_by_source.entry(source_name(*src)).or_default() += 1;
                        out.failed.insert(ObjectKey::clone(object), Some(why.clone()));
                    }
                }
            }
            keep[i] = false;
            continue;
        }
        if e.targets.len() > 1 {
            e.targets.normalize();
        }
    }

    // (duplicate, first occurrence) pairs: the first wins and absorbs the duplicate's object references.
    let mut duplicates: Vec<(usize, usize)> = Vec::new();
    {
        type Key<'a> = (&'a RecordType, &'a str, &'a str, &'a [Target]);
        let mut seen: HashMap<Key<'_>, usize> = HashMap::with_capacity(tagged.len());
        for (i, e) in tagged.iter().enumerate() {
            if !keep[i] {
                continue;
            }
            let key: Key<'_> = (&e.record_type, &e.dns_name, &e.set_identifier, &e.targets.0);
            match seen.entry(key) {
                Entry::Occupied(first) => duplicates.push((i, *first.get())),
                Entry::Vacant(slot) => {
                    slot.insert(i);
                }
            }
        }
    }
    for (dup, first) in duplicates {
        keep[dup] = false;
        let e = &mut tagged[dup];
        *out.deduplicated
            .entry((e.record_type.to_string(), source_name(sources[dup])))
            .or_default() += 1;
        let mut refs = std::mem::take(&mut e.ref_objects);
        // external-dns keeps the first with its labels: it keeps naming what it named, or nothing.
        tagged[first].ref_objects.append(&mut refs);
    }
    let mut kept = keep.into_iter();
    tagged.retain(|_| kept.next().unwrap_or(true));
    tagged
}

/// Step 3. AAAA targets inside a NAT64 /96 yield an extra A endpoint with the embedded IPv4 addresses,
/// appended after all others. A non-address target (an alias AAAA) cannot be translated and is skipped.
fn nat64(mut eps: Vec<Endpoint>, nets: &[Ipv6Net]) -> Vec<Endpoint> {
    let mut extra = Vec::new();
    for e in &eps {
        if e.record_type != RecordType::Aaaa {
            continue;
        }
        let mut v4 = Vec::new();
        for t in e.targets.iter() {
            let TargetKind::Ipv6(ip) = t.kind() else {
                tracing::warn!(endpoint = %e, target = %t, "NAT64: AAAA target is not an IPv6 address, skipped");
                continue;
            };
            if nets.iter().any(|n| n.contains(&ip)) {
                let o = ip.octets();
                v4.push(Target::from(Ipv4Addr::new(o[12], o[13], o[14], o[15])));
            }
        }
        if !v4.is_empty() {
            let mut a = e.clone();
            a.record_type = RecordType::A;
            a.targets = Targets(v4);
            extra.push(a);
        }
    }
    eps.extend(extra);
    eps
}

/// Step 4. Keep targets the filter admits; drop endpoints left with none.
fn filter_targets(eps: Vec<Endpoint>, filter: &TargetNetFilter) -> Vec<Endpoint> {
    eps.into_iter()
        .filter_map(|mut e| {
            e.targets.retain(|t| filter.matches(t));
            if e.targets.is_empty() {
                tracing::debug!(endpoint = %e.dns_name, record_type = %e.record_type, "no target left after target-net filter");
                None
            } else {
                Some(e)
            }
        })
        .collect()
}

/// The reverse-lookup name of an address, without the trailing dot.
pub fn reverse_name(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            format!("{}.{}.{}.{}.in-addr.arpa", o[3], o[2], o[1], o[0])
        }
        IpAddr::V6(v6) => {
            let mut s = String::with_capacity(72);
            for b in v6.octets().iter().rev() {
                s.push(char::from_digit(u32::from(b & 0xf), 16).unwrap_or('0'));
                s.push('.');
                s.push(char::from_digit(u32::from(b >> 4), 16).unwrap_or('0'));
                s.push('.');
            }
            s.push_str("ip6.arpa");
            s
        }
    }
}

/// Step 5 (PTR records). `record-type` on an A/AAAA endpoint decides (PTR, any case, opts in; anything else opts
/// out) and is consumed; otherwise `--create-ptr` decides. Wildcards never get PTRs. One PTR endpoint per
/// address, targets in first-seen order, TTL the smallest seen (an unset TTL wins), appended last.
fn add_ptr_records(mut eps: Vec<Endpoint>, create_ptr: bool) -> Vec<Endpoint> {
    // Reverse name → (position, hostnames, ttl).
    type Ptr = (usize, Vec<String>, Ttl);
    let mut ptrs: HashMap<String, Ptr> = HashMap::new();
    for e in &mut eps {
        let is_address = matches!(e.record_type, RecordType::A | RecordType::Aaaa);
        let opt = e.provider_specific.remove("record-type");
        if !is_address {
            if let Some(v) = opt {
                tracing::warn!(endpoint = %e, value = %v, "record-type only applies to A and AAAA records; ignored");
            }
            continue;
        }
        let enabled = opt.map_or(create_ptr, |v| v.eq_ignore_ascii_case("PTR"));
        if !enabled || e.dns_name.starts_with('*') {
            continue;
        }
        for t in e.targets.iter() {
            let Some(ip) = t.ip() else { continue };
            let next = ptrs.len();
            let entry = ptrs
                .entry(reverse_name(ip))
                .or_insert_with(|| (next, Vec::new(), e.record_ttl));
            if !entry.1.contains(&e.dns_name) {
                entry.1.push(e.dns_name.clone());
            }
            entry.2 = entry.2.min(e.record_ttl);
        }
    }
    let mut ptrs: Vec<(String, Ptr)> = ptrs.into_iter().collect();
    ptrs.sort_by_key(|(_, (pos, _, _))| *pos);
    eps.extend(
        ptrs.into_iter()
            .map(|(name, (_, hosts, ttl))| Endpoint::new(&name, RecordType::Ptr, hosts).with_ttl(ttl)),
    );
    eps
}

/// The provider-specific properties a provider keeps: its own (`<provider>/...`), the unprefixed ones and
/// extdns's own (`extdns/...`: the shared-name mark, which the registry reads and takes off before any
/// provider sees the record); everything when no provider is set. Sorted by name. For cloudflare, properties under their v0.22 names
/// (the annotation key: a DNSEndpoint written for v0.22) are first renamed to the canonical ones, a
/// canonical property already set winning, as external-dns v0.23 does (#6731); only for cloudflare, as
/// there (another provider drops them with the other foreign properties).
pub fn retain_provider_properties(ps: &mut ProviderSpecific, provider: &str) {
    if provider == "cloudflare" {
        canonical_cloudflare_names(ps);
    }
    if !provider.is_empty() {
        let kept = |name: &str, owner: &str| name.strip_prefix(owner).is_some_and(|r| r.starts_with('/'));
        ps.0.retain(|p| !p.name.contains('/') || kept(&p.name, provider) || kept(&p.name, "extdns"));
    }
    ps.sort_by_name();
}

fn canonical_cloudflare_names(ps: &mut ProviderSpecific) {
    if !ps.0.iter().any(|p| legacy_cloudflare_property(&p.name).is_some()) {
        return;
    }
    let mut set: Vec<String> =
        ps.0.iter()
            .filter(|p| legacy_cloudflare_property(&p.name).is_none())
            .map(|p| p.name.clone())
            .collect();
    ps.0.retain_mut(|p| match legacy_cloudflare_property(&p.name) {
        None => true,
        Some(canonical) if set.iter().any(|s| s == canonical) => {
            tracing::debug!(property = %p.name, canonical, "ignored: the canonical property is set");
            false
        }
        Some(canonical) => {
            tracing::debug!(property = %p.name, canonical, "renamed to its canonical name");
            p.name = canonical.to_string();
            set.push(p.name.clone());
            true
        }
    });
}

/// Step 6.
fn post_process(eps: &mut [Endpoint], c: &PipelineConfig) {
    for e in eps {
        if c.min_ttl.is_configured() && !e.record_ttl.is_configured() {
            e.record_ttl = c.min_ttl;
        }
        retain_provider_properties(&mut e.provider_specific, &c.provider);
        if c.prefer_alias && e.record_type == RecordType::Cname && e.provider_specific.get("alias").is_none() {
            e.provider_specific.set("alias", "true");
        }
    }
}

/// Why a `--nat64-networks` value is refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Nat64Error {
    /// Not a network in CIDR notation.
    #[error("is not a CIDR (expected an IPv6 /96 such as 64:ff9b::/96)")]
    NotCidr(#[source] ipnet::AddrParseError),
    /// A network, but not an IPv6 /96: only a /96 embeds an IPv4 address in its last 32 bits.
    #[error("must be an IPv6 /96 prefix such as 64:ff9b::/96")]
    NotV6Slash96,
}

/// One NAT64 prefix as written (`64:ff9b::/96`): an IPv6 /96, blanks around it ignored.
pub fn nat64_prefix(value: &str) -> Result<Ipv6Net, Nat64Error> {
    match value.trim().parse::<ipnet::IpNet>().map_err(Nat64Error::NotCidr)? {
        ipnet::IpNet::V6(v6) if v6.prefix_len() == 96 => Ok(v6),
        _ => Err(Nat64Error::NotV6Slash96),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nat64_prefix_is_an_ipv6_slash_96() {
        assert_eq!(nat64_prefix(" 64:ff9b::/96 ").map(|n| n.prefix_len()).ok(), Some(96));
        assert!(matches!(nat64_prefix("64:ff9b::"), Err(Nat64Error::NotCidr(_))));
        assert!(matches!(nat64_prefix("64:ff9b::/64"), Err(Nat64Error::NotV6Slash96)));
        assert!(matches!(nat64_prefix("10.0.0.0/8"), Err(Nat64Error::NotV6Slash96)));
    }
    use std::collections::BTreeMap;

    use async_trait::async_trait;
    use extdns_informer::{ClusterStore, ObjectKey, ResourceKind};

    use crate::{Evaluation, Failures, ObjectEndpoints, Objects, Pipeline, Source, SourceError};

    /// A source's endpoints as one object's.
    fn one_object(endpoints: Vec<Endpoint>) -> Vec<ObjectEndpoints> {
        vec![ObjectEndpoints {
            object: ObjectKey::new(ResourceKind::Service, "test", "all"),
            endpoints,
        }]
    }

    /// A source that gives the same evaluation (or the same error) every time.
    struct Fixed {
        name: &'static str,
        result: Result<Vec<Endpoint>, String>,
        kinds: Vec<ResourceKind>,
        failed: Failures,
    }

    impl Fixed {
        fn new(name: &'static str, endpoints: Vec<Endpoint>) -> Self {
            Fixed {
                name,
                result: Ok(endpoints),
                kinds: vec![],
                failed: Failures::new(),
            }
        }

        fn watching(mut self, kinds: Vec<ResourceKind>) -> Self {
            self.kinds = kinds;
            self
        }

        /// Reports the objects `failed` could not be evaluated, next to its endpoints.
        fn failing(mut self, failed: Failures) -> Self {
            self.failed = failed;
            self
        }
    }

    #[async_trait]
    impl Source for Fixed {
        fn name(&self) -> &str {
            self.name
        }
        fn watched_kinds(&self) -> Vec<ResourceKind> {
            self.kinds.clone()
        }
        async fn evaluate(&self, _cluster: &ClusterStore, _: Objects<'_>) -> Result<Evaluation, SourceError> {
            let endpoints = self.result.clone().map_err(|message| SourceError::Other {
                source_name: self.name.into(),
                message,
            })?;
            Ok(Evaluation::new(one_object(endpoints), self.failed.clone()))
        }
    }

    fn src(name: &'static str, eps: Vec<Endpoint>) -> Box<dyn Source> {
        Box::new(Fixed::new(name, eps))
    }

    #[tokio::test]
    async fn a_source_reading_an_unavailable_kind_publishes_nothing_and_holds_its_kinds_the_others_publish() {
        use extdns_informer::view::RouteKind;
        use extdns_informer::{Unavailable, UnavailableReason};
        let tcp = ResourceKind::Route(RouteKind::Tcp);
        let store = ClusterStore::new();
        let absent = Unavailable {
            reason: UnavailableReason::CrdAbsent,
            api_version: "gateway.networking.k8s.io/v1".into(),
            status: 404,
            missing: "CRD tcproutes.gateway.networking.k8s.io".into(),
        };
        store.set_unavailable(tcp, Some(absent));
        let routes = Fixed::new("gateway-tcproute", vec![a("db.example.org", &["192.0.2.1"])])
            .watching(vec![tcp, ResourceKind::Gateway]);
        let services =
            Fixed::new("service", vec![a("web.example.org", &["192.0.2.2"])]).watching(vec![ResourceKind::Service]);
        let out = Pipeline::new(vec![Box::new(routes), Box::new(services)], PipelineConfig::default())
            .evaluate(&store, None)
            .await
            .expect("no source error");
        assert_eq!(summary(&out), vec!["web.example.org A 192.0.2.2"]);
        assert!(
            out.failed.contains(&ObjectKey::new(tcp, "any", "route")),
            "every TCPRoute is held"
        );
        assert!(
            !out.failed
                .contains(&ObjectKey::new(ResourceKind::Service, "test", "all"))
        );
        let why = out.failed.why(&ObjectKey::new(tcp, "a", "b")).unwrap_or_default();
        assert!(why.contains("TCPRoute unavailable: crd_absent"), "{why}");
        assert_eq!(out.failed_by_source.get("gateway-tcproute"), Some(&2));
    }

    fn ep(name: &str, t: RecordType, targets: &[&str]) -> Endpoint {
        Endpoint::new(name, t, targets.iter().copied())
    }

    fn a(name: &str, targets: &[&str]) -> Endpoint {
        ep(name, RecordType::A, targets)
    }

    async fn run(sources: Vec<Box<dyn Source>>, config: PipelineConfig) -> Result<PipelineOutput, SourceError> {
        Pipeline::new(sources, config)
            .evaluate(&ClusterStore::new(), None)
            .await
    }

    /// [`run`] with one source of `endpoints`.
    async fn run_one(endpoints: Vec<Endpoint>, config: PipelineConfig) -> Result<PipelineOutput, SourceError> {
        run(vec![src("s", endpoints)], config).await
    }

    fn summary(out: &PipelineOutput) -> Vec<String> {
        out.endpoints
            .iter()
            .map(|e| format!("{} {} {}", e.dns_name, e.record_type, e.targets.join(",")))
            .collect()
    }

    fn key(t: &str, s: &str) -> (String, String) {
        (t.to_string(), s.to_string())
    }

    #[tokio::test]
    async fn failed_objects_of_every_source_and_of_invalid_endpoints_are_reported() -> Result<(), SourceError> {
        let bad_object = ObjectKey::new(ResourceKind::Service, "ns", "bad");
        let bad = a("bad.example.com", &["lb.example.net"]).with_ref_object(bad_object.clone());
        let out = run(
            vec![
                src("plain", vec![a("ok.example.com", &["10.0.0.1"]), bad]),
                Box::new(
                    Fixed::new("failing", vec![a("x.example.com", &["10.0.0.2"])]).failing(
                        ["service/ns/web", "httproute/ns/shop"]
                            .iter()
                            .filter_map(|f| ObjectKey::from_resource_label(f))
                            .collect(),
                    ),
                ),
            ],
            PipelineConfig::default(),
        )
        .await?;
        assert_eq!(
            summary(&out),
            vec!["ok.example.com A 10.0.0.1", "x.example.com A 10.0.0.2"]
        );
        let failed: Vec<String> = out.failed.iter().map(|(k, _)| k.resource_label()).collect();
        assert_eq!(failed, vec!["service/ns/bad", "service/ns/web", "httproute/ns/shop"]);
        assert_eq!(out.failed_by_source.get("plain"), Some(&1));
        assert_eq!(out.failed_by_source.get("failing"), Some(&2));
        // Why the invalid endpoint's object failed is known (for its Warning event); the others' is not.
        let why = out.failed.why(&bad_object).unwrap_or_default();
        assert!(why.starts_with("the A record bad.example.com is invalid: "), "{why}");
        assert_eq!(out.failed.iter().filter(|(_, why)| why.is_some()).count(), 1);
        Ok(())
    }

    #[tokio::test]
    async fn an_invalid_record_of_an_object_failing_in_part_is_held_too() -> Result<(), SourceError> {
        let label = |e: Endpoint| e.with_ref_object(ObjectKey::new(ResourceKind::Service, "test", "all"));
        // The one object fails in part: a skipped DNSEndpoint entry at `held.example.com`.
        let mut held = crate::HeldRecords::new();
        held.name("held.example.com", Some(RecordType::A));
        let mut failed = Failures::new();
        failed.insert_part(ObjectKey::new(ResourceKind::Service, "test", "all"), None, held);
        let partly = Fixed::new(
            "partly",
            vec![
                label(a("ok.example.com", &["10.0.0.1"])),
                label(a("bad.example.com", &["lb.example.net"])),
            ],
        )
        .failing(failed);
        let out = run(vec![Box::new(partly)], PipelineConfig::default()).await?;
        assert_eq!(summary(&out), vec!["ok.example.com A 10.0.0.1"]);
        let object = ObjectKey::new(ResourceKind::Service, "test", "all");
        let Some(crate::Held::Part(held)) = out.failed.held(&object) else {
            panic!("still failing in part: {:?}", out.failed);
        };
        assert!(held.keeps("held.example.com", &RecordType::A, false));
        assert!(
            held.keeps("bad.example.com", &RecordType::A, false),
            "the invalid record's name is added"
        );
        assert!(!held.keeps("ok.example.com", &RecordType::A, false));
        assert_eq!(out.failed_by_source.get("partly"), Some(&1), "one object, counted once");
        Ok(())
    }

    #[tokio::test]
    async fn every_source_is_named_in_the_failed_counts_even_with_none() -> Result<(), SourceError> {
        let out = run(vec![src("plain", vec![])], PipelineConfig::default()).await?;
        assert!(out.failed.is_empty());
        assert_eq!(out.failed_by_source.get("plain"), Some(&0));
        Ok(())
    }

    #[test]
    fn long_warning_values_are_cut_with_an_ellipsis() {
        let long = "x".repeat(5000);
        let short = crate::shorten(&long);
        assert_eq!(short.chars().count(), crate::WARN_VALUE_MAX + 1);
        assert!(short.ends_with('…'));
        assert_eq!(crate::shorten("web.example.org"), "web.example.org");
        // Cut on a character boundary, never inside a multi-byte character.
        let wide = "ü".repeat(300);
        assert_eq!(crate::shorten(&wide).chars().count(), crate::WARN_VALUE_MAX + 1);
    }

    // ---------------------------------------------------------------------------------- multi-source

    #[tokio::test]
    async fn sources_run_in_flag_order_and_are_concatenated() -> Result<(), SourceError> {
        let out = run(
            vec![
                src("service", vec![a("b.example.com", &["1.1.1.1"])]),
                src("crd", vec![a("a.example.com", &["2.2.2.2"])]),
            ],
            PipelineConfig::default(),
        )
        .await?;
        assert_eq!(
            summary(&out),
            vec!["b.example.com A 1.1.1.1", "a.example.com A 2.2.2.2"]
        );
        Ok(())
    }

    #[tokio::test]
    async fn a_failing_source_fails_the_pipeline() {
        let failing = Box::new(Fixed {
            result: Err("boom".into()),
            ..Fixed::new("crd", vec![])
        });
        let out = run(
            vec![src("service", vec![a("a.example.com", &["1.1.1.1"])]), failing],
            PipelineConfig::default(),
        )
        .await;
        assert!(
            matches!(out, Err(SourceError::Other { ref message, .. }) if message == "boom"),
            "{out:?}"
        );
    }

    #[test]
    fn watched_kinds_are_the_union_of_the_sources() {
        let p = Pipeline::new(
            vec![
                Box::new(Fixed::new("x", vec![]).watching(vec![ResourceKind::Service, ResourceKind::Pod])),
                Box::new(Fixed::new("y", vec![]).watching(vec![ResourceKind::Pod, ResourceKind::Node])),
            ],
            PipelineConfig::default(),
        );
        assert_eq!(
            p.watched_kinds(),
            vec![ResourceKind::Service, ResourceKind::Pod, ResourceKind::Node]
        );
    }

    #[tokio::test]
    async fn default_targets_fill_endpoints_without_targets_and_rederive_the_type() -> Result<(), SourceError> {
        let empty = ep("a.example.com", RecordType::Cname, &[])
            .with_ttl(Ttl(60))
            .with_label("resource", "crd/ns/a");
        let config = PipelineConfig {
            default_targets: vec!["1.2.3.4".into(), "2001:db8::1".into(), "lb.example.com".into()],
            ..PipelineConfig::default()
        };
        let out = run(vec![src("crd", vec![empty, a("b.example.com", &["9.9.9.9"])])], config).await?;
        assert_eq!(
            summary(&out),
            vec![
                "a.example.com A 1.2.3.4",
                "a.example.com AAAA 2001:db8::1",
                "a.example.com CNAME lb.example.com",
                "b.example.com A 9.9.9.9"
            ]
        );
        assert!(
            out.endpoints[..3]
                .iter()
                .all(|e| e.record_ttl == Ttl(60) && e.resource().as_deref() == Some("crd/ns/a"))
        );
        Ok(())
    }

    #[tokio::test]
    async fn force_default_targets_replaces_every_endpoints_targets() -> Result<(), SourceError> {
        let config = PipelineConfig {
            default_targets: vec!["lb.example.com".into()],
            force_default_targets: true,
            ..PipelineConfig::default()
        };
        let out = run(vec![src("crd", vec![a("b.example.com", &["9.9.9.9"])])], config).await?;
        assert_eq!(summary(&out), vec!["b.example.com CNAME lb.example.com"]);
        Ok(())
    }

    // ---------------------------------------------------------------------------------------- dedup

    #[tokio::test]
    async fn invalid_endpoints_are_dropped_and_counted_per_type_and_source() -> Result<(), SourceError> {
        let mut alias = ProviderSpecific::default();
        alias.set("alias", "true");
        let bad_srv = ep("_x._tcp.example.com", RecordType::Srv, &["0 50 80 host"]);
        let srv_alias = ep("_y._tcp.example.com", RecordType::Srv, &["0 50 80 host."]).with_provider_specific(alias);
        let out = run(
            vec![
                src(
                    "service",
                    vec![
                        a("bad.example.com", &["lb.example.com"]),
                        a("ok.example.com", &["1.1.1.1"]),
                        bad_srv,
                    ],
                ),
                src("crd", vec![srv_alias]),
            ],
            PipelineConfig::default(),
        )
        .await?;
        assert_eq!(summary(&out), vec!["ok.example.com A 1.1.1.1"]);
        let expected: BTreeMap<_, _> = [
            (key("A", "service"), 1),
            (key("SRV", "service"), 1),
            (key("SRV", "crd"), 1),
        ]
        .into_iter()
        .collect();
        assert_eq!(out.invalid, expected);
        Ok(())
    }

    #[tokio::test]
    async fn duplicates_are_dropped_first_wins_and_object_refs_merge() -> Result<(), SourceError> {
        let r = |n: &str| ObjectKey::new(ResourceKind::Service, "d", n);
        let first = a("x.example.com", &["2.2.2.2", "1.1.1.1"])
            .with_ttl(Ttl(60))
            .with_ref_object(r("one"));
        // Same identity (targets compare after sorting; TTL is not part of it).
        let dup = a("x.example.com", &["1.1.1.1", "2.2.2.2", "1.1.1.1"])
            .with_ttl(Ttl(300))
            .with_ref_object(r("two"));
        let other_set = a("x.example.com", &["1.1.1.1", "2.2.2.2"]).with_set_identifier("blue");
        let other_targets = a("x.example.com", &["1.1.1.1"]);
        let out = run(
            vec![
                src("service", vec![first, dup, other_set, other_targets]),
                src("crd", vec![a("x.example.com", &["1.1.1.1"])]),
            ],
            PipelineConfig::default(),
        )
        .await?;
        assert_eq!(out.endpoints.len(), 3);
        assert_eq!(out.endpoints[0].targets.0, vec!["1.1.1.1", "2.2.2.2"]);
        assert_eq!(out.endpoints[0].record_ttl, Ttl(60));
        assert_eq!(out.endpoints[0].ref_objects.len(), 2);
        assert_eq!(out.endpoints[1].set_identifier, "blue");
        let expected: BTreeMap<_, _> = [(key("A", "service"), 1), (key("A", "crd"), 1)].into_iter().collect();
        assert_eq!(out.deduplicated, expected);
        Ok(())
    }

    /// The service source's `first` and an ingress's duplicate of it, through the dedup: one record left.
    async fn deduplicated_with_an_ingress_copy(first: Endpoint) -> Result<Endpoint, SourceError> {
        let ingress = ObjectKey::new(ResourceKind::Ingress, "a", "web");
        let copy = a("x.example.com", &["192.0.2.1"]).with_ref_object(ingress);
        let sources = vec![src("service", vec![first]), src("ingress", vec![copy])];
        let mut out = run(sources, PipelineConfig::default()).await?;
        assert_eq!(out.endpoints.len(), 1);
        assert_eq!(out.endpoints[0].ref_objects.len(), 2, "both objects referenced");
        Ok(out.endpoints.remove(0))
    }

    /// external-dns keeps the first endpoint with its labels: its `resource`, or its lack of one. Here the
    /// first keeps naming its object, even where the object absorbed sorts before it, or keeps naming none
    /// (a target-template record).
    #[tokio::test]
    async fn a_duplicate_of_another_source_leaves_the_record_named_as_the_first() -> Result<(), SourceError> {
        let service = ObjectKey::new(ResourceKind::Service, "z", "web");
        let named = a("x.example.com", &["192.0.2.1"]).with_ref_object(service);
        let mut templated = named.clone();
        templated.ref_objects.reference_only();
        let kept = deduplicated_with_an_ingress_copy(named).await?;
        assert_eq!(kept.resource().as_deref(), Some("service/z/web"));
        assert_eq!(deduplicated_with_an_ingress_copy(templated).await?.resource(), None);
        Ok(())
    }

    #[tokio::test]
    async fn single_targets_are_not_reordered_and_different_types_are_not_duplicates() -> Result<(), SourceError> {
        let out = run_one(
            vec![
                ep("x.example.com", RecordType::Txt, &["v"]),
                ep("x.example.com", RecordType::Cname, &["v"]),
            ],
            PipelineConfig::default(),
        )
        .await?;
        assert_eq!(out.endpoints.len(), 2);
        assert!(out.deduplicated.is_empty());
        Ok(())
    }

    // ---------------------------------------------------------------------------------------- nat64

    #[tokio::test]
    async fn nat64_adds_an_a_record_for_embedded_ipv4() -> Result<(), SourceError> {
        let net: Ipv6Net = "64:ff9b::/96".parse().map_err(|_| SourceError::Other {
            source_name: "t".into(),
            message: "net".into(),
        })?;
        let aaaa = ep("x.example.com", RecordType::Aaaa, &["64:ff9b::c000:221", "2001:db8::1"]).with_ttl(Ttl(30));
        let out = run_one(
            vec![aaaa, ep("y.example.com", RecordType::Aaaa, &["2001:db8::2"])],
            PipelineConfig {
                nat64_networks: vec![net],
                ..PipelineConfig::default()
            },
        )
        .await?;
        assert_eq!(
            summary(&out),
            vec![
                "x.example.com AAAA 2001:db8::1,64:ff9b::c000:221",
                "y.example.com AAAA 2001:db8::2",
                "x.example.com A 192.0.2.33"
            ]
        );
        assert_eq!(out.endpoints[2].record_ttl, Ttl(30));
        Ok(())
    }

    #[test]
    fn nat64_networks_must_be_slash_96() {
        let nets: Vec<Ipv6Net> = ["64:ff9b::/96", "64:ff9b::/64"]
            .iter()
            .filter_map(|s| s.parse().ok())
            .collect();
        let p = Pipeline::new(
            vec![],
            PipelineConfig {
                nat64_networks: nets,
                ..PipelineConfig::default()
            },
        );
        assert_eq!(p.config().nat64_networks.len(), 1);
    }

    // -------------------------------------------------------------------------------- target filter

    /// The default configuration with `target_net_filter`.
    fn filtering(target_net_filter: TargetNetFilter) -> PipelineConfig {
        PipelineConfig {
            target_net_filter,
            ..PipelineConfig::default()
        }
    }

    /// `--target-net-filter` and `--exclude-target-net`.
    fn net_filter(include: &[&str], exclude: &[&str]) -> Result<TargetNetFilter, SourceError> {
        TargetNetFilter::new(include, exclude).map_err(|e| SourceError::Other {
            source_name: "t".into(),
            message: e.to_string(),
        })
    }

    #[tokio::test]
    async fn target_filter_removes_excluded_targets_and_empty_endpoints() -> Result<(), SourceError> {
        let exclude = net_filter(&[], &["10.0.0.0/8"])?;
        let out = run_one(
            vec![
                a("x.example.com", &["10.1.2.3", "34.1.2.3"]),
                a("y.example.com", &["10.9.9.9"]),
                ep("z.example.com", RecordType::Cname, &["lb.example.com"]),
            ],
            filtering(exclude),
        )
        .await?;
        assert_eq!(
            summary(&out),
            vec!["x.example.com A 34.1.2.3", "z.example.com CNAME lb.example.com"]
        );

        let include = net_filter(&["10.0.0.0/8"], &[])?;
        let out = run_one(
            vec![
                a("x.example.com", &["10.1.2.3", "34.1.2.3"]),
                ep("z.example.com", RecordType::Cname, &["lb.example.com"]),
            ],
            filtering(include),
        )
        .await?;
        assert_eq!(summary(&out), vec!["x.example.com A 10.1.2.3"]);
        Ok(())
    }

    // ------------------------------------------------------------------------------------------ ptr

    fn with_record_type(e: Endpoint, v: &str) -> Endpoint {
        let mut ps = e.provider_specific.clone();
        ps.set("record-type", v);
        e.with_provider_specific(ps)
    }

    #[test]
    fn reverse_names_for_v4_and_v6() {
        assert_eq!(
            reverse_name("192.0.2.33".parse().unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED))),
            "33.2.0.192.in-addr.arpa"
        );
        let v6: IpAddr = "2001:db8::1".parse().unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED));
        assert_eq!(
            reverse_name(v6),
            "1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa"
        );
    }

    /// PTR records managed (`--managed-record-types` with PTR) and created for every A/AAAA (`--create-ptr`).
    fn ptr_config(manage_ptr: bool, create_ptr: bool) -> PipelineConfig {
        PipelineConfig {
            manage_ptr,
            create_ptr,
            ..PipelineConfig::default()
        }
    }

    fn ptrs(out: &PipelineOutput) -> Vec<&Endpoint> {
        out.endpoints
            .iter()
            .filter(|e| e.record_type == RecordType::Ptr)
            .collect()
    }

    #[tokio::test]
    async fn create_ptr_adds_reverse_records_grouping_hostnames_per_address() -> Result<(), SourceError> {
        let eps = vec![
            a("x.example.com", &["192.0.2.1", "192.0.2.2"]).with_ttl(Ttl(300)),
            a("y.example.com", &["192.0.2.1"]).with_ttl(Ttl(60)),
            a("*.example.com", &["192.0.2.1"]),
            ep("v6.example.com", RecordType::Aaaa, &["2001:db8::1"]),
            ep("c.example.com", RecordType::Cname, &["x.example.com"]),
        ];
        let out = run_one(eps, ptr_config(true, true)).await?;
        let ptrs = ptrs(&out);
        assert_eq!(ptrs.len(), 3);
        assert_eq!(ptrs[0].dns_name, "1.2.0.192.in-addr.arpa");
        assert_eq!(ptrs[0].targets.0, vec!["x.example.com", "y.example.com"]);
        assert_eq!(ptrs[0].record_ttl, Ttl(60));
        assert_eq!(ptrs[1].dns_name, "2.2.0.192.in-addr.arpa");
        assert!(ptrs[2].dns_name.ends_with(".ip6.arpa"));
        assert_eq!(ptrs[2].record_ttl, Ttl(0), "an unset TTL wins");
        // PTR records come after all others.
        assert!(out.endpoints[..5].iter().all(|e| e.record_type != RecordType::Ptr));
        Ok(())
    }

    #[tokio::test]
    async fn record_type_annotation_opts_in_and_out_and_is_consumed() -> Result<(), SourceError> {
        let eps = vec![
            with_record_type(a("in.example.com", &["192.0.2.1"]), "ptr"),
            with_record_type(a("out.example.com", &["192.0.2.2"]), "none"),
            with_record_type(ep("c.example.com", RecordType::Cname, &["in.example.com"]), "ptr"),
        ];
        let out = run_one(eps.clone(), ptr_config(true, false)).await?;
        let names: Vec<&str> = ptrs(&out).iter().map(|e| e.dns_name.as_str()).collect();
        assert_eq!(names, vec!["1.2.0.192.in-addr.arpa"]);
        assert!(
            out.endpoints
                .iter()
                .all(|e| e.provider_specific.get("record-type").is_none())
        );

        let out = run_one(eps.clone(), ptr_config(true, true)).await?;
        assert_eq!(ptrs(&out).len(), 1, "opt-out beats --create-ptr");

        let out = run_one(eps, ptr_config(false, true)).await?;
        assert!(ptrs(&out).is_empty(), "no PTRs unless PTR is managed");
        assert_eq!(out.endpoints[0].provider_specific.get("record-type"), Some("ptr"));
        Ok(())
    }

    // ------------------------------------------------------------------------------- post-processor

    #[tokio::test]
    async fn min_ttl_fills_only_unset_ttls() -> Result<(), SourceError> {
        let out = run_one(
            vec![
                a("x.example.com", &["1.1.1.1"]),
                a("y.example.com", &["1.1.1.1"]).with_ttl(Ttl(10)),
            ],
            PipelineConfig {
                min_ttl: Ttl(60),
                ..PipelineConfig::default()
            },
        )
        .await?;
        assert_eq!(out.endpoints[0].record_ttl, Ttl(60));
        assert_eq!(
            out.endpoints[1].record_ttl,
            Ttl(10),
            "min-ttl is a default, not a clamp"
        );
        Ok(())
    }

    /// The properties `names`, each set to `v`.
    fn props(names: &[&str]) -> ProviderSpecific {
        let pairs: Vec<(&str, &str)> = names.iter().map(|n| (*n, "v")).collect();
        valued(&pairs)
    }

    /// The properties `pairs` (name, value), set in order.
    fn valued(pairs: &[(&str, &str)]) -> ProviderSpecific {
        let mut ps = ProviderSpecific::default();
        for (name, value) in pairs {
            ps.set(*name, *value);
        }
        ps
    }

    fn names(ps: &ProviderSpecific) -> Vec<&str> {
        ps.iter().map(|p| p.name.as_str()).collect()
    }

    #[test]
    fn retain_provider_properties_keeps_own_and_unprefixed_sorted() {
        let all = [
            "webhook/x",
            "aws/weight",
            "alias",
            "record-type",
            "external-dns.kubernetes.io/cloudflare-proxied",
            "awsx/y",
        ];
        let mut ps = props(&all);
        retain_provider_properties(&mut ps, "aws");
        assert_eq!(names(&ps), vec!["alias", "aws/weight", "record-type"]);
        let mut ps = props(&all);
        retain_provider_properties(&mut ps, "webhook");
        assert_eq!(names(&ps), vec!["alias", "record-type", "webhook/x"]);
        let mut ps = props(&all);
        retain_provider_properties(&mut ps, "cloudflare");
        assert_eq!(names(&ps), vec!["alias", "cloudflare/proxied", "record-type"]);
        let mut ps = props(&all);
        retain_provider_properties(&mut ps, "");
        assert_eq!(names(&ps).first(), Some(&"alias"));
        assert_eq!(ps.iter().count(), all.len());
    }

    /// external-dns v0.23 (#6731): for cloudflare, v0.22 names (a DNSEndpoint's `providerSpecific` written
    /// with annotation keys) become the canonical ones, the canonical one winning where both are set; other
    /// providers do not rename them.
    #[test]
    fn cloudflare_provider_specific_6731_legacy_names_are_renamed_for_cloudflare_only() {
        let mut ps = valued(&[
            ("external-dns.kubernetes.io/cloudflare-proxied", "false"),
            ("cloudflare/proxied", "true"),
            ("cloudflare-record-comment", "old"),
            ("dns.example.org/cloudflare-tags", "a,b"),
        ]);
        let mut cf = ps.clone();
        retain_provider_properties(&mut cf, "cloudflare");
        let got: Vec<(&str, &str)> = cf.iter().map(|p| (p.name.as_str(), p.value.as_str())).collect();
        assert_eq!(
            got,
            vec![
                ("cloudflare/proxied", "true"),
                ("cloudflare/record-comment", "old"),
                ("cloudflare/tags", "a,b")
            ]
        );
        retain_provider_properties(&mut ps, "");
        assert!(ps.get("external-dns.kubernetes.io/cloudflare-proxied").is_some());
    }

    #[tokio::test]
    async fn post_processor_applies_provider_retention() -> Result<(), SourceError> {
        let e = a("x.example.com", &["1.1.1.1"]).with_provider_specific(props(&["webhook/x", "aws/weight"]));
        let out = run_one(
            vec![e],
            PipelineConfig {
                provider: "aws".into(),
                ..PipelineConfig::default()
            },
        )
        .await?;
        assert_eq!(names(&out.endpoints[0].provider_specific), vec!["aws/weight"]);
        Ok(())
    }

    #[tokio::test]
    async fn the_shared_name_mark_reaches_the_registry_whatever_the_provider() -> Result<(), SourceError> {
        // extdns's own properties are read by the registry, never sent: no provider's retention drops them.
        let mut e = a("x.example.com", &["1.1.1.1"]).with_provider_specific(props(&["aws/weight"]));
        extdns_endpoint::shared::mark(&mut e);
        let out = run_one(
            vec![e],
            PipelineConfig {
                provider: "rfc2136".into(),
                ..PipelineConfig::default()
            },
        )
        .await?;
        assert!(extdns_endpoint::shared::is_shared(&out.endpoints[0]));
        assert_eq!(names(&out.endpoints[0].provider_specific), vec!["extdns/shared"]);
        Ok(())
    }

    #[tokio::test]
    async fn prefer_alias_marks_cnames_without_an_alias_property() -> Result<(), SourceError> {
        let mut no_alias = ProviderSpecific::default();
        no_alias.set("alias", "false");
        let eps = vec![
            ep("c.example.com", RecordType::Cname, &["lb.example.com"]).with_provider_specific(props(&["aws/weight"])),
            ep("d.example.com", RecordType::Cname, &["lb.example.com"]).with_provider_specific(no_alias),
            a("x.example.com", &["1.1.1.1"]),
        ];
        let out = run_one(
            eps,
            PipelineConfig {
                prefer_alias: true,
                provider: "aws".into(),
                ..PipelineConfig::default()
            },
        )
        .await?;
        assert_eq!(names(&out.endpoints[0].provider_specific), vec!["aws/weight", "alias"]);
        assert_eq!(out.endpoints[1].provider_specific.get("alias"), Some("false"));
        assert!(out.endpoints[2].provider_specific.is_empty());
        Ok(())
    }

    #[tokio::test]
    async fn ptr_records_get_the_min_ttl_and_are_not_filtered() -> Result<(), SourceError> {
        let filter = net_filter(&["192.0.2.0/24"], &[])?;
        let out = run_one(
            vec![a("x.example.com", &["192.0.2.1"])],
            PipelineConfig {
                min_ttl: Ttl(120),
                target_net_filter: filter,
                ..ptr_config(true, true)
            },
        )
        .await?;
        assert_eq!(
            summary(&out),
            vec!["x.example.com A 192.0.2.1", "1.2.0.192.in-addr.arpa PTR x.example.com"]
        );
        assert!(out.endpoints.iter().all(|e| e.record_ttl == Ttl(120)));
        Ok(())
    }
}
