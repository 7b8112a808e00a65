//! A provider object's spec as extdns's own flags, so that it is checked by the very parser and settings that
//! check a Deployment's command line: nothing about a provider is validated twice, or differently.

use crate::{ProviderObject, SpecError};

/// One flag and every value this provider gives it. The binary drops the deployment's own values of the
/// flag and appends these: a flag set here replaces, it never adds to the deployment's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlagValue {
    /// The flag's long name, without `--`.
    pub flag: String,
    /// Its values, in order: more than one repeats the flag.
    pub values: Vec<String>,
}

impl FlagValue {
    fn one(flag: &str, value: impl Into<String>) -> FlagValue {
        FlagValue {
            flag: flag.to_string(),
            values: vec![value.into()],
        }
    }

    /// The command-line arguments: `--flag=value` for each value.
    pub fn to_args(&self) -> impl Iterator<Item = String> + '_ {
        self.values.iter().map(|v| format!("--{}={v}", self.flag))
    }
}

/// `spec.config` keys a provider may not set, and what to use instead: the spec's own fields, and the flags
/// that are the deployment's as a whole (the process, the informers, leader election, the templates whose
/// fields the informers keep).
pub const RESERVED_FLAGS: &[(&str, &str)] = &[
    ("provider", "use spec.type"),
    ("domain-filter", "use spec.domainFilter.include"),
    ("exclude-domains", "use spec.domainFilter.exclude"),
    ("registry", "use spec.registry.type"),
    ("txt-owner-id", "use spec.registry.txtOwnerId"),
    ("txt-prefix", "use spec.registry.txtPrefix"),
    ("txt-suffix", "use spec.registry.txtSuffix"),
    ("dns-provider-crds", "a provider cannot hold providers"),
    ("kubeconfig", "the deployment's Kubernetes client is shared"),
    ("server", "the deployment's Kubernetes client is shared"),
    ("master", "the deployment's Kubernetes client is shared"),
    ("request-timeout", "the deployment's Kubernetes client is shared"),
    ("metrics-address", "one metrics server serves every provider"),
    ("once", "a deployment-wide mode"),
    ("dry-run", "a deployment-wide mode: set it on the deployment"),
    (
        "events",
        "the deployment's informers drive every provider: set it on the deployment",
    ),
    ("manifests", "the deployment's cluster view is shared"),
    ("webhook-server", "a deployment-wide mode"),
    (
        "annotation-prefix",
        "annotations are read once for every provider: set it on the deployment",
    ),
    (
        "crd-source-apiversion",
        "the informers are shared: set it on the deployment",
    ),
    ("crd-source-kind", "the informers are shared: set it on the deployment"),
    (
        "fqdn-template",
        "the informers keep only the fields the deployment's templates read: set it on the deployment",
    ),
    (
        "combine-fqdn-annotation",
        "templates are the deployment's: set it on the deployment",
    ),
    (
        "target-template",
        "templates are the deployment's: set it on the deployment",
    ),
    (
        "fqdn-target-template",
        "templates are the deployment's: set it on the deployment",
    ),
];

/// Prefixes of reserved families of flags (leader election, logging, the webhook server).
const RESERVED_PREFIXES: &[(&str, &str)] = &[
    (
        "leader-elect",
        "one leader election covers every provider: set it on the deployment",
    ),
    ("log-", "one log for every provider: set it on the deployment"),
    ("webhook-server", "a deployment-wide mode"),
];

/// Why `key` may not be set in `spec.config`, if it may not.
fn reserved(key: &str, namespaced: bool) -> Option<&'static str> {
    if namespaced && key == "namespace" {
        return Some("a DNSProvider only ever reads objects of its own namespace");
    }
    RESERVED_FLAGS
        .iter()
        .find(|(k, _)| *k == key)
        .or_else(|| RESERVED_PREFIXES.iter().find(|(p, _)| key.starts_with(p)))
        .map(|(_, why)| *why)
}

/// The flags a provider object sets, in a fixed order: its spec's fields (`--provider`, the domain filter,
/// the registry, `--txt-owner-id` defaulting to the object's name), a `DNSProvider`'s `--namespace`, then
/// `spec.config` by key. The flag parser checks every name and value; this only refuses what no flag can be
/// (reserved keys, nested values) so the error names the spec's field.
pub fn flag_args(object: &ProviderObject) -> Result<Vec<FlagValue>, SpecError> {
    let spec = &object.spec;
    let mut flags = vec![FlagValue::one("provider", spec.type_.trim())];
    if let Some(filter) = &spec.domain_filter {
        if !filter.include.is_empty() {
            flags.push(FlagValue {
                flag: "domain-filter".to_string(),
                values: filter.include.clone(),
            });
        }
        if !filter.exclude.is_empty() {
            flags.push(FlagValue {
                flag: "exclude-domains".to_string(),
                values: filter.exclude.clone(),
            });
        }
    }
    let registry = spec.registry.clone().unwrap_or_default();
    if let Some(t) = registry.type_.as_deref().filter(|t| !t.is_empty()) {
        flags.push(FlagValue::one("registry", t));
    }
    flags.push(FlagValue::one("txt-owner-id", object.owner_id()));
    if let Some(p) = &registry.txt_prefix {
        flags.push(FlagValue::one("txt-prefix", p.as_str()));
    }
    if let Some(s) = &registry.txt_suffix {
        flags.push(FlagValue::one("txt-suffix", s.as_str()));
    }
    let namespace = object.id.namespace();
    if let Some(ns) = namespace {
        flags.push(FlagValue::one("namespace", ns));
    }
    for (key, value) in &spec.config {
        let key = key.trim();
        if key.is_empty() || key.starts_with('-') {
            return Err(SpecError::Reserved {
                key: key.to_string(),
                why: "a flag's long name without the leading --".to_string(),
            });
        }
        if let Some(why) = reserved(key, namespace.is_some()) {
            return Err(SpecError::Reserved {
                key: key.to_string(),
                why: why.to_string(),
            });
        }
        flags.push(FlagValue {
            flag: key.to_string(),
            values: config_values(key, value)?,
        });
    }
    Ok(flags)
}

/// A config value as flag values: a scalar is one value, a list repeats the flag.
fn config_values(key: &str, value: &serde_json::Value) -> Result<Vec<String>, SpecError> {
    let scalar = |v: &serde_json::Value| match v {
        serde_json::Value::String(s) => Ok(s.clone()),
        serde_json::Value::Bool(b) => Ok(b.to_string()),
        serde_json::Value::Number(n) => Ok(n.to_string()),
        serde_json::Value::Null => Err("null: remove the key to keep the deployment's value"),
        _ => Err("a string, number or boolean, or a list of them"),
    };
    let wrap = |why: &str| SpecError::ConfigValue {
        key: key.to_string(),
        why: why.to_string(),
    };
    match value {
        serde_json::Value::Array(items) => items.iter().map(|v| scalar(v).map_err(wrap)).collect(),
        v => Ok(vec![scalar(v).map_err(wrap)?]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DnsProviderSpec, DomainFilterSpec, ProviderId};

    fn provider(id: ProviderId, spec: DnsProviderSpec) -> ProviderObject {
        crate::test_object(id, spec)
    }

    fn args(o: &ProviderObject) -> Result<Vec<String>, SpecError> {
        Ok(flag_args(o)?
            .iter()
            .flat_map(|f| f.to_args().collect::<Vec<_>>())
            .collect())
    }

    #[test]
    fn the_spec_fields_become_the_flags_they_replace() -> Result<(), SpecError> {
        let mut spec = DnsProviderSpec {
            type_: "aws".into(),
            domain_filter: Some(DomainFilterSpec {
                include: vec!["a.example.com".into(), "b.example.com".into()],
                exclude: vec!["x.a.example.com".into()],
            }),
            ..DnsProviderSpec::default()
        };
        spec.config
            .insert("source".into(), serde_json::json!(["service", "ingress"]));
        spec.config
            .insert("aws-batch-change-size".into(), serde_json::json!(100));
        spec.config
            .insert("aws-evaluate-target-health".into(), serde_json::json!(false));
        let o = provider(ProviderId::Cluster { name: "prod".into() }, spec);
        assert_eq!(
            args(&o)?,
            [
                "--provider=aws",
                "--domain-filter=a.example.com",
                "--domain-filter=b.example.com",
                "--exclude-domains=x.a.example.com",
                "--txt-owner-id=prod",
                "--aws-batch-change-size=100",
                "--aws-evaluate-target-health=false",
                "--source=service",
                "--source=ingress",
            ]
        );
        Ok(())
    }

    #[test]
    fn a_dns_provider_is_scoped_to_its_namespace_and_may_not_widen_it() -> Result<(), SpecError> {
        let id = ProviderId::Namespaced {
            namespace: "team-a".into(),
            name: "zone".into(),
        };
        let o = provider(
            id.clone(),
            DnsProviderSpec {
                type_: "pdns".into(),
                ..DnsProviderSpec::default()
            },
        );
        assert!(args(&o)?.contains(&"--namespace=team-a".to_string()));
        let mut spec = DnsProviderSpec {
            type_: "pdns".into(),
            ..DnsProviderSpec::default()
        };
        spec.config.insert("namespace".into(), serde_json::json!("team-b"));
        assert!(matches!(flag_args(&provider(id, spec)), Err(SpecError::Reserved { key, .. }) if key == "namespace"));
        Ok(())
    }

    #[test]
    fn reserved_keys_and_nested_values_are_refused_naming_the_key() {
        for (key, value) in [
            ("provider", serde_json::json!("aws")),
            ("txt-owner-id", serde_json::json!("x")),
            ("leader-elect-lease-duration", serde_json::json!("15s")),
            ("log-level", serde_json::json!("debug")),
            ("fqdn-template", serde_json::json!("{{.Name}}.example.com")),
            ("--source", serde_json::json!("service")),
            ("source", serde_json::json!({"a": 1})),
            ("source", serde_json::json!([["service"]])),
            ("policy", serde_json::Value::Null),
        ] {
            let mut spec = DnsProviderSpec {
                type_: "aws".into(),
                ..DnsProviderSpec::default()
            };
            spec.config.insert(key.into(), value);
            let e = flag_args(&provider(ProviderId::Cluster { name: "p".into() }, spec));
            let Err(e) = e else { panic!("{key} accepted") };
            assert!(e.to_string().contains(key.trim_start_matches('-')), "{e}");
        }
    }
}
