//! The `external-dns` annotations every source reads (docs/sources/service.md, "Annotations and their prefix").
//!
//! Users migrating from external-dns have objects annotated under either prefix: its documentation and
//! releases before 0.22 used `external-dns.alpha.kubernetes.io/`, external-dns 0.22 reads `external-dns.kubernetes.io/`.
//! So by default both are read, and when an object carries the same key under both, the GA value wins (it is
//! the one external-dns itself would act on). `--annotation-prefix` narrows reading to exactly one prefix;
//! `--enable-legacy-annotation-prefix` (external-dns v0.23, #6703) adds the alpha prefix back after it.
//! Whenever two prefixes are read, a key set under both with different values is warned about once.

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::sync::{Arc, Mutex};

pub use extdns_endpoint::go_duration::{DurationError, parse_nanos as parse_go_duration};
use extdns_endpoint::{ProviderSpecific, Target, Ttl};
use extdns_informer::view::MetaRef;
use extdns_informer::{ObjectKey, ResourceKind, StrMap};

/// The prefix external-dns 0.22 reads by default.
pub const PREFIX_GA: &str = "external-dns.kubernetes.io/";
/// The prefix of external-dns before 0.22, still the one most manifests carry.
pub const PREFIX_ALPHA: &str = "external-dns.alpha.kubernetes.io/";

/// Keys (without prefix) with a meaning shared by all sources.
pub mod key {
    /// Names to publish the object under.
    pub const HOSTNAME: &str = "hostname";
    /// Names to publish the object's internal addresses under.
    pub const INTERNAL_HOSTNAME: &str = "internal-hostname";
    /// Targets that replace the object's own.
    pub const TARGET: &str = "target";
    /// The records' TTL.
    pub const TTL: &str = "ttl";
    /// Which controller may publish the object (`dns-controller` only).
    pub const CONTROLLER: &str = "controller";
    /// Tells apart records of one name for routing policies.
    pub const SET_IDENTIFIER: &str = "set-identifier";
    /// Publish an alias instead of a CNAME where the provider has one.
    pub const ALIAS: &str = "alias";
    /// The record type to publish for a hostname target.
    pub const RECORD_TYPE: &str = "record-type";
    /// Which addresses of a NodePort Service to publish (`public` or `private`).
    pub const ACCESS: &str = "access";
    /// Which endpoints a headless Service publishes (`NodeExternalIP`, ...).
    pub const ENDPOINTS_TYPE: &str = "endpoints-type";
    /// Where a route's hostnames come from (the route, or the annotation only).
    pub const GATEWAY_HOSTNAME_SOURCE: &str = "gateway-hostname-source";
    /// Where an Ingress's hostnames come from (its rules, or the annotation only).
    pub const INGRESS_HOSTNAME_SOURCE: &str = "ingress-hostname-source";
    /// `"true"`: the object's names are shared names, published together with the same names of other
    /// clusters (issue 47, docs/shared-names.md).
    pub const SHARED: &str = "shared";
}

/// The only controller value (besides none) under which an object is ours.
pub const CONTROLLER_VALUE: &str = "dns-controller";

/// The largest TTL accepted from an annotation (a signed 32-bit second count, as DNS allows).
const TTL_MAX: i64 = 2_147_483_647;

/// Which of an object's names count, by its `*-hostname-source` annotation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostnameSource {
    /// No annotation: every source of names the object's kind has.
    All,
    /// `annotation-only`: only the hostname annotation.
    AnnotationOnly,
    /// `defined-hosts-only`: only the names the object's spec defines.
    DefinedHostsOnly,
}

/// An annotation prefix that cannot be a prefix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AnnotationError {
    /// `--annotation-prefix=`.
    #[error("the annotation prefix must not be empty")]
    EmptyPrefix,
    /// A prefix without its trailing `/`.
    #[error("the annotation prefix {0:?} must end with '/'")]
    NoSlash(String),
    /// The legacy prefix added after a prefix that itself starts with it: every legacy key would also be
    /// read as a key of the configured prefix (external-dns v0.23 refuses the combination too).
    #[error(
        "--enable-legacy-annotation-prefix cannot be used with --annotation-prefix {0}, which starts with the \
         legacy prefix {PREFIX_ALPHA}"
    )]
    UnderLegacyPrefix(String),
}

/// A TTL annotation value that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TtlError {
    /// The value does not parse.
    #[error(transparent)]
    Duration(#[from] DurationError),
    /// A TTL outside what DNS allows.
    #[error("TTL must be between 1 and {TTL_MAX} seconds, got {seconds}")]
    OutOfRange {
        /// The value, in seconds.
        seconds: i128,
    },
}

/// Which annotation prefixes are read, in order of precedence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Annotations {
    prefixes: Vec<String>,
    /// The prefix conflicts already warned about, shared by every clone (each source holds one), so a
    /// conflict is one warning for the process, not one per source and sync.
    warned: WarnedConflicts,
    /// `--ignore-target-annotation`: the `target` annotation is never read (the internal view of a split
    /// horizon publishes the addresses objects have, not what they ask the public to use).
    ignore_targets: bool,
}

impl Default for Annotations {
    /// Both prefixes, the GA one first so it wins.
    fn default() -> Self {
        Annotations::read(vec![PREFIX_GA.to_string(), PREFIX_ALPHA.to_string()])
    }
}

/// One key set under two read prefixes with different values: the value under the higher-precedence
/// prefix is used, the other ignored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrefixConflict<'a> {
    /// The full key whose value is used.
    pub used_key: &'a str,
    /// Its value.
    pub used_value: &'a str,
    /// The full key whose value is ignored.
    pub ignored_key: &'a str,
    /// Its value.
    pub ignored_value: &'a str,
}

/// The set of conflicts warned about (object, keys, values): a conflict is reported when first seen and
/// again only if its values change. Equality ignores it: it is a log's memory, not configuration.
#[derive(Clone, Default)]
struct WarnedConflicts(Arc<Mutex<HashSet<String>>>);

impl WarnedConflicts {
    /// Whether `conflict` is new (and remembers it).
    fn first_time(&self, conflict: String) -> bool {
        // A poisoned lock only means another thread panicked while inserting; the set is still usable.
        let mut seen = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        seen.insert(conflict)
    }
}

impl PartialEq for WarnedConflicts {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for WarnedConflicts {}

impl fmt::Debug for WarnedConflicts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("WarnedConflicts")
    }
}

impl Annotations {
    fn read(prefixes: Vec<String>) -> Self {
        Annotations {
            prefixes,
            warned: WarnedConflicts::default(),
            ignore_targets: false,
        }
    }

    /// These annotations with `target` never read (`--ignore-target-annotation`, extdns only).
    pub fn ignoring_targets(mut self) -> Self {
        self.ignore_targets = true;
        self
    }

    fn checked(prefix: &str) -> Result<&str, AnnotationError> {
        if prefix.is_empty() {
            return Err(AnnotationError::EmptyPrefix);
        }
        if !prefix.ends_with('/') {
            return Err(AnnotationError::NoSlash(prefix.to_string()));
        }
        Ok(prefix)
    }

    /// Read only `prefix` (the `--annotation-prefix` flag).
    pub fn with_prefix(prefix: &str) -> Result<Self, AnnotationError> {
        Ok(Annotations::read(vec![Annotations::checked(prefix)?.to_string()]))
    }

    /// Read `prefix`, then the legacy `external-dns.alpha.kubernetes.io/` (`--annotation-prefix` with
    /// `--enable-legacy-annotation-prefix`): `prefix` wins where both are set, as in external-dns v0.23.
    /// A prefix starting with the legacy one is refused, as external-dns refuses it.
    pub fn with_legacy_prefix(prefix: &str) -> Result<Self, AnnotationError> {
        let prefix = Annotations::checked(prefix)?;
        if prefix.starts_with(PREFIX_ALPHA) {
            return Err(AnnotationError::UnderLegacyPrefix(prefix.to_string()));
        }
        Ok(Annotations::read(vec![prefix.to_string(), PREFIX_ALPHA.to_string()]))
    }

    /// The prefixes read, highest precedence first.
    pub fn prefixes(&self) -> &[String] {
        &self.prefixes
    }

    /// The value of `key` (given without prefix) under the first read prefix that has it.
    pub fn get<'a>(&self, a: &'a StrMap, key: &str) -> Option<&'a str> {
        self.get_with_prefix(a, key).map(|(_, v)| v)
    }

    /// Like [`Annotations::get`], also returning the prefix the value was found under.
    ///
    /// One pass over the object's few annotations, comparing in place: sources look up several keys per
    /// object per sync, and building `<prefix><key>` strings for each lookup showed in the profiles.
    fn get_with_prefix<'a, 's>(&'s self, a: &'a StrMap, key: &str) -> Option<(&'s str, &'a str)> {
        let mut best: Option<(usize, &'a str)> = None;
        for (k, v) in a.iter() {
            let Some(head) = k.strip_suffix(key) else { continue };
            if let Some(rank) = self.prefixes.iter().position(|p| p == head)
                && best.is_none_or(|(b, _)| rank < b)
            {
                best = Some((rank, v));
            }
        }
        best.map(|(rank, v)| (self.prefixes[rank].as_str(), v))
    }

    /// The value an annotation filter sees for the full key `key`: under the highest-precedence prefix,
    /// the value the sources read (a key set only under a lower prefix is seen there too, as external-dns
    /// v0.23 copies legacy keys to the configured prefix before any filter runs); any other key as set.
    pub fn filter_value<'a>(&self, a: &'a StrMap, key: &str) -> Option<&'a str> {
        match (self.prefixes.len() > 1)
            .then(|| key.strip_prefix(self.prefixes[0].as_str()))
            .flatten()
        {
            Some(rest) => self.get(a, rest),
            None => a.get(key),
        }
    }

    /// The annotations as external-dns v0.23 hands them to templates with `--enable-legacy-annotation-prefix`
    /// (#6703): a key set only under a lower-precedence prefix is added under the first one, with the value
    /// the sources read; every key as set stays. `None` when nothing is added (one prefix read, or no such
    /// key), so the caller uses the annotations as they are.
    pub fn with_copies(&self, a: &StrMap) -> Option<StrMap> {
        let (first, lower) = self.prefixes.split_first()?;
        let mut added: Vec<(String, &str)> = Vec::new();
        for (key, _) in a.iter() {
            let Some(rest) = lower.iter().find_map(|p| key.strip_prefix(p.as_str())) else {
                continue;
            };
            let copy = format!("{first}{rest}");
            if a.contains_key(&copy) || added.iter().any(|(k, _)| *k == copy) {
                continue;
            }
            if let Some(value) = self.get(a, rest) {
                added.push((copy, value));
            }
        }
        if added.is_empty() {
            return None;
        }
        Some(a.iter().chain(added.iter().map(|(k, v)| (k.as_str(), *v))).collect())
    }

    /// The keys set under two read prefixes with different values, in key order. Empty (without looking)
    /// when one prefix is read.
    pub fn conflicts<'a>(&'a self, a: &'a StrMap) -> Vec<PrefixConflict<'a>> {
        let mut out = Vec::new();
        if self.prefixes.len() < 2 {
            return out;
        }
        for (ignored_key, ignored_value) in a.iter() {
            // Only a key under a lower-precedence prefix can be overridden.
            let Some((rank, rest)) = self
                .prefixes
                .iter()
                .enumerate()
                .skip(1)
                .find_map(|(i, p)| ignored_key.strip_prefix(p.as_str()).map(|rest| (i, rest)))
            else {
                continue;
            };
            let Some((prefix, used_value)) = self.get_with_prefix(a, rest) else {
                continue;
            };
            if prefix != self.prefixes[rank] && used_value != ignored_value {
                let used_key = a
                    .iter()
                    .map(|(k, _)| k)
                    .find(|k| k.strip_prefix(prefix) == Some(rest))
                    .unwrap_or(ignored_key);
                out.push(PrefixConflict {
                    used_key,
                    used_value,
                    ignored_key,
                    ignored_value,
                });
            }
        }
        out
    }

    /// Warns about each of the object's [`Annotations::conflicts`] the first time it is seen, naming the
    /// object, both keys and both values: sources evaluate an object at every sync, and the warning is
    /// for the person who set the two values, once. Costs one pass over the object's annotations when
    /// two prefixes are read, nothing otherwise.
    pub fn warn_conflicts<'a>(&self, kind: ResourceKind, meta: impl Into<MetaRef<'a>>) {
        let meta = meta.into();
        for c in self.conflicts(meta.annotations) {
            let object = ObjectKey::new(kind, meta.namespace, meta.name);
            let seen = format!(
                "{object}\n{}\n{}\n{}\n{}",
                c.used_key, c.used_value, c.ignored_key, c.ignored_value
            );
            if self.warned.first_time(seen) {
                tracing::warn!(
                    object = %object,
                    "ignoring annotation {}={:?} because {}={:?} is set (the prefix read first wins)",
                    c.ignored_key,
                    crate::shorten(c.ignored_value),
                    c.used_key,
                    crate::shorten(c.used_value),
                );
            }
        }
    }

    /// Whether `key` (a full annotation key) is under one of the read prefixes.
    pub fn is_ours(&self, key: &str) -> bool {
        self.prefixes.iter().any(|p| key.starts_with(p.as_str()))
    }

    /// A `*-hostname-source` annotation (`key`: `gateway-hostname-source`, `ingress-hostname-source`):
    /// [`HostnameSource::All`] when absent, the value itself when it is neither known value (matched in any
    /// case): each source decides what an unknown value means.
    pub fn hostname_source<'a>(&self, a: &'a StrMap, key: &str) -> Result<HostnameSource, &'a str> {
        match self.get(a, key) {
            None => Ok(HostnameSource::All),
            Some(v) if v.eq_ignore_ascii_case("annotation-only") => Ok(HostnameSource::AnnotationOnly),
            Some(v) if v.eq_ignore_ascii_case("defined-hosts-only") => Ok(HostnameSource::DefinedHostsOnly),
            Some(v) => Err(v),
        }
    }

    /// The `hostname` annotation: every space removed, then split on ','. Empty items stay (as external-dns
    /// does: a trailing comma yields an empty hostname); an absent annotation yields nothing.
    pub fn hostnames(&self, a: &StrMap) -> Vec<String> {
        self.get(a, key::HOSTNAME).map(split_list).unwrap_or_default()
    }

    /// The `internal-hostname` annotation, parsed like [`Annotations::hostnames`].
    pub fn internal_hostnames(&self, a: &StrMap) -> Vec<String> {
        self.get(a, key::INTERNAL_HOSTNAME).map(split_list).unwrap_or_default()
    }

    /// The `target` annotation: spaces removed, split on ',', one trailing '.' trimmed per item. An empty
    /// annotation means "no override", but empty items of a non-empty one are kept.
    pub fn targets(&self, a: &StrMap) -> Vec<Target> {
        if self.ignore_targets {
            return Vec::new();
        }
        match self.get(a, key::TARGET) {
            Some(v) if !v.is_empty() => split_list(v)
                .into_iter()
                .map(|mut t| {
                    if t.ends_with('.') {
                        t.pop();
                    }
                    Target::from(t)
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The `ttl` annotation: integer seconds or a Go duration (`10m`, `1h30m`, `1.5h`; fractions of a second
    /// truncated), within 1..=2147483647. Anything else is a warning naming `object` and the annotation, and
    /// the TTL stays unset so the provider default applies. `object` is only rendered for that warning.
    pub fn ttl(&self, a: &StrMap, object: impl std::fmt::Display) -> Ttl {
        let Some((prefix, value)) = self.get_with_prefix(a, key::TTL) else {
            return Ttl(0);
        };
        match parse_ttl(value) {
            Ok(secs) => Ttl(secs),
            Err(reason) => {
                tracing::warn!(
                    %object,
                    annotation = %format_args!("{prefix}{}", key::TTL),
                    value,
                    "ignoring invalid TTL annotation: {reason}"
                );
                Ttl(0)
            }
        }
    }

    /// Provider-specific properties and the set identifier. `alias` comes first (only for the exact
    /// value `true`), then `record-type`, then the prefixed keys sorted by name; the post-processor sorts the
    /// whole list again, so only determinism matters here.
    pub fn provider_specific(&self, a: &StrMap) -> (ProviderSpecific, String) {
        let mut ps = ProviderSpecific::default();
        if self.get(a, key::ALIAS) == Some("true") {
            ps.set("alias", "true");
        }
        if let Some(v) = self.get(a, key::RECORD_TYPE) {
            ps.set("record-type", v);
        }
        let set_identifier = self.get(a, key::SET_IDENTIFIER).unwrap_or_default().to_string();

        // Key without prefix → (prefix, value), the first prefix in precedence order winning.
        let mut ours: BTreeMap<&str, (&str, &str)> = BTreeMap::new();
        for p in self.prefixes.iter().rev() {
            for (k, v) in a.iter() {
                if let Some(rest) = k.strip_prefix(p.as_str()) {
                    ours.insert(rest, (p.as_str(), v));
                }
            }
        }
        for (rest, (_, value)) in ours {
            if let Some(x) = rest.strip_prefix("aws-") {
                ps.set(format!("aws/{x}"), value);
            } else if let Some(x) = rest.strip_prefix("scw-") {
                ps.set(format!("scw/{x}"), value);
            } else if let Some(x) = rest.strip_prefix("webhook-") {
                ps.set(format!("webhook/{x}"), value);
            } else if let Some(x) = rest.strip_prefix("coredns-") {
                ps.set(format!("coredns/{x}"), value);
            } else if rest == "azure-tags" {
                ps.set("azure/tags", value);
            } else if let Some(name) = rest.strip_prefix("cloudflare-").and_then(cloudflare_property) {
                ps.set(name, value);
            } else if let Some(name) = extdns_endpoint::shared::annotation_property(rest, value) {
                ps.set(name, value);
            }
        }
        (ps, set_identifier)
    }

    /// Whether the `controller` annotation lets us manage the object: absent, or `dns-controller`.
    pub fn controller_allows(&self, a: &StrMap) -> bool {
        self.get(a, key::CONTROLLER).is_none_or(|v| v == CONTROLLER_VALUE)
    }
}

/// The Cloudflare properties, by the attribute of their annotation (`<prefix>cloudflare-<attribute>`), and
/// their names since external-dns v0.23 (#6731): independent of the annotation prefix, as they are part of
/// the DNSEndpoint API. Only these exact attributes count (v0.22 also took `cloudflare-proxied-x`).
const CLOUDFLARE_PROPERTIES: [(&str, &str); 5] = [
    ("proxied", "cloudflare/proxied"),
    ("custom-hostname", "cloudflare/custom-hostname"),
    ("region-key", "cloudflare/region-key"),
    ("record-comment", "cloudflare/record-comment"),
    ("tags", "cloudflare/tags"),
];

fn cloudflare_property(attribute: &str) -> Option<&'static str> {
    CLOUDFLARE_PROPERTIES
        .iter()
        .find(|(a, _)| *a == attribute)
        .map(|(_, name)| *name)
}

/// The canonical name of a Cloudflare property written the v0.22 way, the annotation key under any prefix
/// (`external-dns.kubernetes.io/cloudflare-proxied`) or bare (`cloudflare-proxied`); `None` for any other
/// name, a canonical one included (external-dns v0.23, #6731).
pub fn legacy_cloudflare_property(name: &str) -> Option<&'static str> {
    let attribute = name.rsplit_once('/').map_or(name, |(_, a)| a);
    let canonical = cloudflare_property(attribute.strip_prefix("cloudflare-")?)?;
    (canonical != name).then_some(canonical)
}

/// kOps dns-controller's annotations, read with `--compatibility=kops-dns-controller` (by the service and
/// pod sources), whatever `--annotation-prefix` says.
pub mod kops {
    /// Names published at the public addresses (a Service's load balancer, a Pod's Node).
    pub const EXTERNAL: &str = "dns.alpha.kubernetes.io/external";
    /// Names published at the internal addresses (a Service's cluster IP, a Pod's IP).
    pub const INTERNAL: &str = "dns.alpha.kubernetes.io/internal";
}

/// A hostname annotation's value as external-dns's `SplitHostnameAnnotation` reads it: every space removed,
/// then split on ','; empty items stay. Also for annotations outside the extdns prefixes (kOps's
/// `dns.alpha.kubernetes.io/external` and `/internal`).
pub fn split_list(v: &str) -> Vec<String> {
    if v.contains(' ') {
        v.replace(' ', "").split(',').map(str::to_string).collect()
    } else {
        v.split(',').map(str::to_string).collect()
    }
}

/// Parse a TTL as external-dns does: a Go duration first, then integer seconds; the result truncated to
/// whole seconds and checked against 1..=2147483647.
///
/// A plain integer is tried first: the result is the same (Go's duration parser rejects a number without
/// a unit, except "0", which is out of range either way), and the common `"300"` then builds no error.
pub fn parse_ttl(value: &str) -> Result<i64, TtlError> {
    let secs = match value.parse::<i64>() {
        Ok(s) => i128::from(s),
        Err(_) => parse_go_duration(value)? / 1_000_000_000,
    };
    match i64::try_from(secs) {
        Ok(s) if (1..=TTL_MAX).contains(&s) => Ok(s),
        _ => Err(TtlError::OutOfRange { seconds: secs }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> StrMap {
        pairs.iter().copied().collect()
    }

    fn ga(k: &str) -> String {
        format!("{PREFIX_GA}{k}")
    }

    fn alpha(k: &str) -> String {
        format!("{PREFIX_ALPHA}{k}")
    }

    /// The provider-specific properties and the set identifier the default prefixes read from `pairs`.
    fn provider_specific(pairs: &[(&str, &str)]) -> (ProviderSpecific, String) {
        Annotations::default().provider_specific(&map(pairs))
    }

    /// Checks that `ps` holds exactly `expected`.
    fn holds(ps: &ProviderSpecific, expected: &[(&str, &str)]) {
        for (name, value) in expected {
            assert_eq!(ps.get(name), Some(*value), "{name}");
        }
        assert_eq!(ps.iter().count(), expected.len(), "{ps:?}");
    }

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn both_prefixes_are_read_by_default() {
        let ann = Annotations::default();
        assert_eq!(
            ann.get(&map(&[(&alpha("hostname"), "a.example.com")]), "hostname"),
            Some("a.example.com")
        );
        assert_eq!(
            ann.get(&map(&[(&ga("hostname"), "b.example.com")]), "hostname"),
            Some("b.example.com")
        );
    }

    #[test]
    fn ga_prefix_wins_when_both_are_present() {
        let a = map(&[
            (&alpha("hostname"), "alpha.example.com"),
            (&ga("hostname"), "ga.example.com"),
        ]);
        assert_eq!(Annotations::default().hostnames(&a), strings(&["ga.example.com"]));
    }

    #[test]
    fn annotation_prefix_restricts_reading_to_that_prefix() -> Result<(), AnnotationError> {
        let a = map(&[(&alpha("hostname"), "alpha.example.com")]);
        assert_eq!(Annotations::with_prefix(PREFIX_GA)?.get(&a, "hostname"), None);
        assert_eq!(
            Annotations::with_prefix(PREFIX_ALPHA)?.get(&a, "hostname"),
            Some("alpha.example.com")
        );
        let custom = Annotations::with_prefix("dns.example.org/")?;
        assert_eq!(custom.get(&map(&[("dns.example.org/ttl", "5")]), "ttl"), Some("5"));
        assert!(custom.is_ours("dns.example.org/ttl"));
        assert!(!custom.is_ours(&ga("ttl")));
        Ok(())
    }

    #[test]
    fn annotation_prefix_must_be_non_empty_and_end_with_a_slash() {
        assert_eq!(Annotations::with_prefix(""), Err(AnnotationError::EmptyPrefix));
        assert_eq!(
            Annotations::with_prefix("example.org"),
            Err(AnnotationError::NoSlash("example.org".into()))
        );
    }

    #[test]
    fn is_ours_recognises_both_default_prefixes_only() {
        let ann = Annotations::default();
        assert!(ann.is_ours(&ga("hostname")));
        assert!(ann.is_ours(&alpha("target")));
        assert!(!ann.is_ours("kubernetes.io/ingress.class"));
    }

    #[test]
    fn hostnames_have_all_spaces_removed_and_split_on_commas() {
        let a = map(&[(&ga("hostname"), " a.example.com, b.exa mple.com ,c.example.com.")]);
        assert_eq!(
            Annotations::default().hostnames(&a),
            strings(&["a.example.com", "b.example.com", "c.example.com."])
        );
    }

    #[test]
    fn hostname_list_with_trailing_comma_keeps_an_empty_item() {
        let a = map(&[(&ga("hostname"), "a.example.com,")]);
        assert_eq!(Annotations::default().hostnames(&a), strings(&["a.example.com", ""]));
    }

    #[test]
    fn absent_hostname_annotation_yields_no_hostnames() {
        assert!(Annotations::default().hostnames(&map(&[])).is_empty());
        assert!(
            Annotations::default()
                .internal_hostnames(&map(&[(&ga("hostname"), "a.com")]))
                .is_empty()
        );
    }

    #[test]
    fn internal_hostnames_are_parsed_like_hostnames() {
        let a = map(&[(&alpha("internal-hostname"), "i.example.com, j.example.com")]);
        assert_eq!(
            Annotations::default().internal_hostnames(&a),
            strings(&["i.example.com", "j.example.com"])
        );
    }

    #[test]
    fn targets_trim_one_trailing_dot_and_keep_empty_items() {
        let a = map(&[(&ga("target"), "lb.example.com.., 1.2.3.4,")]);
        assert_eq!(
            Annotations::default().targets(&a),
            strings(&["lb.example.com.", "1.2.3.4", ""])
        );
    }

    #[test]
    fn empty_target_annotation_is_ignored() {
        assert!(Annotations::default().targets(&map(&[(&ga("target"), "")])).is_empty());
        assert!(Annotations::default().targets(&map(&[])).is_empty());
        let target = map(&[(&ga("target"), "198.51.100.7")]);
        assert_eq!(Annotations::default().targets(&target).len(), 1);
        assert!(
            Annotations::default().ignoring_targets().targets(&target).is_empty(),
            "--ignore-target-annotation"
        );
    }

    #[test]
    fn ttl_accepts_integer_seconds() {
        let ann = Annotations::default();
        assert_eq!(ann.ttl(&map(&[(&ga("ttl"), "60")]), "service default/web"), Ttl(60));
        assert_eq!(
            ann.ttl(&map(&[(&alpha("ttl"), "2147483647")]), "service default/web"),
            Ttl(2_147_483_647)
        );
    }

    #[test]
    fn ttl_accepts_go_durations_and_truncates_fractions() {
        let ann = Annotations::default();
        let ttl = |v: &str| ann.ttl(&map(&[(&ga("ttl"), v)]), "service default/web");
        assert_eq!(ttl("10m"), Ttl(600));
        assert_eq!(ttl("1h30m"), Ttl(5400));
        assert_eq!(ttl("1.5h"), Ttl(5400));
        assert_eq!(ttl("90s"), Ttl(90));
        assert_eq!(ttl("1.9s"), Ttl(1));
        assert_eq!(ttl("2500ms"), Ttl(2));
        assert_eq!(ttl(".5m"), Ttl(30));
    }

    #[test]
    fn ttl_out_of_range_or_unparsable_is_unset() {
        let ann = Annotations::default();
        let ttl = |v: &str| ann.ttl(&map(&[(&ga("ttl"), v)]), "service default/web");
        for bad in [
            "0",
            "-5",
            "2147483648",
            "500ms",
            "-10m",
            "abc",
            "10x",
            "",
            " 60",
            "1.5",
            "h",
            "9999999999999h",
        ] {
            assert_eq!(ttl(bad), Ttl(0), "{bad:?} should be rejected");
        }
        assert_eq!(ann.ttl(&map(&[]), "service default/web"), Ttl(0));
    }

    #[test]
    fn ttl_errors_explain_the_problem() {
        let message = |v: &str| parse_ttl(v).err().map(|e| e.to_string()).unwrap_or_default();
        assert_eq!(parse_ttl("0"), Err(TtlError::OutOfRange { seconds: 0 }));
        assert!(message("0").contains("between 1 and 2147483647"));
        assert_eq!(
            parse_ttl("10x"),
            Err(TtlError::Duration(DurationError::UnknownUnit {
                input: "10x".into(),
                unit: "x".into()
            }))
        );
        assert!(message("10x").contains("unknown unit \"x\""));
        assert!(message("1.5").contains("missing unit"));
    }

    #[test]
    fn go_duration_parser_matches_go_semantics() {
        assert_eq!(parse_go_duration("0"), Ok(0));
        assert_eq!(parse_go_duration("-1.5s"), Ok(-1_500_000_000));
        assert_eq!(parse_go_duration("+2m"), Ok(120_000_000_000));
        assert_eq!(parse_go_duration("1h2m3s4ms5us6ns"), Ok(3_723_004_005_006));
        assert_eq!(parse_go_duration("3µs"), Ok(3_000));
        assert_eq!(parse_go_duration("1.000000001s"), Ok(1_000_000_001));
        assert!(parse_go_duration("1").is_err());
        assert!(parse_go_duration(".s").is_err());
        assert!(parse_go_duration("-").is_err());
        assert!(parse_go_duration("3000000h").is_err());
    }

    #[test]
    fn alias_is_set_only_for_the_exact_value_true() {
        let ann = Annotations::default();
        for (value, expected) in [("true", Some("true")), ("True", None), ("A", None), ("false", None)] {
            let (ps, _) = ann.provider_specific(&map(&[(&ga("alias"), value)]));
            assert_eq!(ps.get("alias"), expected, "alias={value}");
        }
    }

    #[test]
    fn record_type_is_passed_through_verbatim() {
        let (ps, _) = provider_specific(&[(&alpha("record-type"), "ptr")]);
        assert_eq!(ps.get("record-type"), Some("ptr"));
    }

    #[test]
    fn alias_comes_first_then_record_type_then_prefixed_keys() {
        let (ps, _) = provider_specific(&[
            (&ga("aws-weight"), "10"),
            (&ga("record-type"), "PTR"),
            (&ga("alias"), "true"),
        ]);
        let names: Vec<&str> = ps.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, vec!["alias", "record-type", "aws/weight"]);
    }

    #[test]
    fn aws_scw_webhook_and_coredns_keys_become_slash_properties() {
        let (ps, _) = provider_specific(&[
            (&ga("aws-weight"), "10"),
            (&alpha("aws-geolocation-country-code"), "DE"),
            (&ga("scw-thing"), "s"),
            (&ga("webhook-foo"), "w"),
            (&alpha("coredns-group"), "g"),
            (&ga("azure-tags"), "k=v"),
            (&ga("azure-other"), "ignored"),
            (&ga("unrelated"), "ignored"),
        ]);
        holds(
            &ps,
            &[
                ("aws/weight", "10"),
                ("aws/geolocation-country-code", "DE"),
                ("scw/thing", "s"),
                ("webhook/foo", "w"),
                ("coredns/group", "g"),
                ("azure/tags", "k=v"),
            ],
        );
    }

    #[test]
    fn provider_specific_ga_value_wins_over_alpha() {
        let (ps, _) = provider_specific(&[(&ga("aws-weight"), "10"), (&alpha("aws-weight"), "20")]);
        holds(&ps, &[("aws/weight", "10")]);
    }

    /// external-dns v0.23 (#6731): Cloudflare annotations become `cloudflare/<attribute>` properties,
    /// whatever prefix they were read under; only the five exact attributes count.
    #[test]
    fn cloudflare_provider_specific_6731_canonical_names_whatever_the_prefix() -> Result<(), AnnotationError> {
        let (ps, _) = provider_specific(&[
            (&ga("cloudflare-proxied"), "true"),
            (&alpha("cloudflare-record-comment"), "hi"),
            (&ga("cloudflare-region-key"), "eu"),
            (&ga("cloudflare-tags"), "a,b"),
            (&ga("cloudflare-custom-hostname"), "c.example.com"),
            (&ga("cloudflare-unknown"), "ignored"),
            (&ga("cloudflare-proxied-x"), "ignored"),
        ]);
        holds(
            &ps,
            &[
                ("cloudflare/custom-hostname", "c.example.com"),
                ("cloudflare/proxied", "true"),
                ("cloudflare/record-comment", "hi"),
                ("cloudflare/region-key", "eu"),
                ("cloudflare/tags", "a,b"),
            ],
        );
        let custom = Annotations::with_prefix("dns.example.org/")?;
        let (ps, _) = custom.provider_specific(&map(&[("dns.example.org/cloudflare-proxied", "false")]));
        assert_eq!(ps.get("cloudflare/proxied"), Some("false"));
        // The GA value wins over the alpha one, as for every key.
        let (ps, _) = provider_specific(&[
            (&ga("cloudflare-proxied"), "true"),
            (&alpha("cloudflare-proxied"), "false"),
        ]);
        assert_eq!(ps.get("cloudflare/proxied"), Some("true"));
        Ok(())
    }

    /// external-dns v0.23 (#6731): the v0.22 names (the annotation key, any prefix, or bare) map to the
    /// canonical ones; canonical and other names do not.
    #[test]
    fn cloudflare_provider_specific_6731_legacy_names_map_to_canonical_ones() {
        for (name, canonical) in [
            (
                "external-dns.kubernetes.io/cloudflare-proxied",
                Some("cloudflare/proxied"),
            ),
            (
                "external-dns.alpha.kubernetes.io/cloudflare-tags",
                Some("cloudflare/tags"),
            ),
            (
                "dns.example.org/cloudflare-record-comment",
                Some("cloudflare/record-comment"),
            ),
            ("cloudflare-region-key", Some("cloudflare/region-key")),
            ("cloudflare/proxied", None),
            ("external-dns.kubernetes.io/cloudflare-proxied-x", None),
            ("aws/weight", None),
        ] {
            assert_eq!(legacy_cloudflare_property(name), canonical, "{name}");
        }
    }

    #[test]
    fn set_identifier_is_returned_and_not_a_property() {
        let (ps, id) = provider_specific(&[(&alpha("set-identifier"), "blue")]);
        assert_eq!(id, "blue");
        assert!(ps.is_empty());
    }

    #[test]
    fn controller_annotation_absent_or_dns_controller_is_allowed() {
        let ann = Annotations::default();
        assert!(ann.controller_allows(&map(&[])));
        assert!(ann.controller_allows(&map(&[(&ga("controller"), "dns-controller")])));
        assert!(!ann.controller_allows(&map(&[(&alpha("controller"), "someone-else")])));
        // The GA value decides when both are present.
        let both = map(&[(&ga("controller"), "dns-controller"), (&alpha("controller"), "other")]);
        assert!(ann.controller_allows(&both));
    }

    /// external-dns #6703: `--annotation-prefix` with `--enable-legacy-annotation-prefix` reads the configured
    /// prefix, then the legacy one; the configured value wins where both are set.
    #[test]
    fn legacy_annotation_prefix_6703_configured_prefix_first_then_legacy() -> Result<(), AnnotationError> {
        let ann = Annotations::with_legacy_prefix("dns.example.org/")?;
        assert_eq!(ann.prefixes(), ["dns.example.org/", PREFIX_ALPHA]);
        let a = map(&[
            ("dns.example.org/ttl", "60"),
            (&alpha("ttl"), "300"),
            (&alpha("hostname"), "a.example.org"),
        ]);
        assert_eq!(ann.get(&a, key::TTL), Some("60"));
        assert_eq!(ann.hostnames(&a), ["a.example.org"]);
        // The GA prefix is not read unless configured.
        assert_eq!(ann.get(&map(&[(&ga("ttl"), "5")]), key::TTL), None);
        // Asking for the legacy prefix after the GA one is the default.
        assert_eq!(Annotations::with_legacy_prefix(PREFIX_GA)?, Annotations::default());
        Ok(())
    }

    #[test]
    fn legacy_annotation_prefix_6703_a_prefix_under_the_legacy_one_is_refused() {
        for prefix in [PREFIX_ALPHA, "external-dns.alpha.kubernetes.io/x/"] {
            let err = Annotations::with_legacy_prefix(prefix).err();
            assert_eq!(err, Some(AnnotationError::UnderLegacyPrefix(prefix.into())));
            let msg = err.map(|e| e.to_string()).unwrap_or_default();
            assert!(
                msg.contains("--enable-legacy-annotation-prefix") && msg.contains(prefix),
                "{msg}"
            );
        }
        assert_eq!(
            Annotations::with_legacy_prefix("nope").err(),
            Some(AnnotationError::NoSlash("nope".into()))
        );
    }

    #[test]
    fn legacy_annotation_prefix_6703_conflicts_name_both_keys_and_values() -> Result<(), AnnotationError> {
        let a = map(&[
            (&ga("ttl"), "60"),
            (&alpha("ttl"), "300"),
            (&ga("hostname"), "same.example.org"),
            (&alpha("hostname"), "same.example.org"),
            (&alpha("target"), "192.0.2.1"),
        ]);
        let ann = Annotations::default();
        assert_eq!(
            ann.conflicts(&a),
            vec![PrefixConflict {
                used_key: "external-dns.kubernetes.io/ttl",
                used_value: "60",
                ignored_key: "external-dns.alpha.kubernetes.io/ttl",
                ignored_value: "300",
            }],
            "equal values and a key under one prefix only are no conflict"
        );
        // One prefix read: nothing is ignored, so nothing conflicts.
        assert!(Annotations::with_prefix(PREFIX_GA)?.conflicts(&a).is_empty());
        Ok(())
    }

    #[test]
    fn legacy_annotation_prefix_6703_a_conflict_is_warned_once_per_object_and_values() {
        let ann = Annotations::default();
        let shared = ann.clone();
        let seen = |s: &str| ann.warned.first_time(s.to_string());
        assert!(seen("Service a/b\nttl\n60"));
        assert!(!seen("Service a/b\nttl\n60"));
        // Clones (one per source) share what was warned about.
        assert!(!shared.warned.first_time("Service a/b\nttl\n60".into()));
        assert!(seen("Service a/b\nttl\n61"), "new values are a new warning");
        assert_eq!(
            ann,
            Annotations::default(),
            "what was warned about is not configuration"
        );
    }

    #[test]
    fn legacy_annotation_prefix_6703_filters_see_a_legacy_key_under_the_configured_prefix()
    -> Result<(), AnnotationError> {
        let a = map(&[
            (&alpha("team"), "dns"),
            (&ga("zone"), "a"),
            (&alpha("zone"), "b"),
            ("other/x", "1"),
        ]);
        for ann in [Annotations::default(), Annotations::with_legacy_prefix(PREFIX_GA)?] {
            assert_eq!(ann.filter_value(&a, &ga("team")), Some("dns"));
            assert_eq!(
                ann.filter_value(&a, &ga("zone")),
                Some("a"),
                "the configured value wins"
            );
            // The legacy key stays as set.
            assert_eq!(ann.filter_value(&a, &alpha("zone")), Some("b"));
            assert_eq!(ann.filter_value(&a, "other/x"), Some("1"));
        }
        // Reading one prefix, a filter sees the annotations as set.
        assert_eq!(Annotations::with_prefix(PREFIX_GA)?.filter_value(&a, &ga("team")), None);
        Ok(())
    }

    #[test]
    fn shared_annotation_marks_the_names_shared_under_either_prefix() {
        let d = Annotations::default();
        for prefix in [PREFIX_GA, PREFIX_ALPHA] {
            let (ps, _) = d.provider_specific(&map(&[(format!("{prefix}shared").as_str(), "true")]));
            assert_eq!(ps.get(extdns_endpoint::shared::PROPERTY), Some("true"), "{prefix}");
        }
        let (ps, _) = d.provider_specific(&map(&[(format!("{PREFIX_GA}shared").as_str(), "yes")]));
        assert_eq!(ps.get(extdns_endpoint::shared::PROPERTY), None);
    }

    #[test]
    fn shared_health_annotations_become_the_properties_the_controller_probes_by() {
        use extdns_endpoint::shared::{HEALTH_CHECK, HEALTH_INTERVAL, HEALTH_THRESHOLD};
        let (ps, _) = Annotations::default().provider_specific(&map(&[
            (&format!("{PREFIX_ALPHA}shared-health-check"), "https:443/healthz"),
            (&format!("{PREFIX_GA}shared-health-interval"), "30s"),
            (&format!("{PREFIX_GA}shared-health-threshold"), "5"),
        ]));
        assert_eq!(ps.get(HEALTH_CHECK), Some("https:443/healthz"));
        assert_eq!(ps.get(HEALTH_INTERVAL), Some("30s"));
        assert_eq!(ps.get(HEALTH_THRESHOLD), Some("5"));
    }
}
