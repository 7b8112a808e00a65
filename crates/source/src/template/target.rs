//! `--fqdn-target-template`: `host:target` pairs, read the same by every source that runs it (service,
//! node and pod; external-dns's `endpointsFromFQDNTargetTemplate`, one function its three sources share).

use std::fmt::Display;

use extdns_endpoint::{Endpoint, Target, merge_endpoints};

use super::{FqdnTemplate, TemplateError, TemplateObject};
use crate::annotations::Annotations;

/// One item of `--fqdn-target-template`'s output (`host:target` pairs, comma-separated), as every source
/// running it reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetPair<'a> {
    /// A host and its target, both trimmed; the host may still be an invalid name.
    Pair {
        /// The record's name, one trailing dot dropped.
        host: &'a str,
        /// Its target.
        target: &'a str,
    },
    /// An item without `:`, skipped.
    NotAPair(&'a str),
    /// An item whose host or target is empty (a field not filled yet), skipped.
    Incomplete(&'a str),
}

/// The items of `--fqdn-target-template`'s output `raw`: split on ',', each trimmed and one trailing dot
/// dropped, empty ones dropped, sorted and deduplicated (as external-dns splits template output), then each
/// split at its first ':'.
pub fn target_pairs(raw: &str) -> Vec<TargetPair<'_>> {
    let mut items: Vec<&str> = raw
        .split(',')
        .map(|i| {
            let i = i.trim();
            i.strip_suffix('.').unwrap_or(i)
        })
        .filter(|i| !i.is_empty())
        .collect();
    items.sort_unstable();
    items.dedup();
    items
        .into_iter()
        .map(|item| match item.split_once(':').map(|(h, t)| (h.trim(), t.trim())) {
            None => TargetPair::NotAPair(item),
            Some((host, target)) if host.is_empty() || target.is_empty() => TargetPair::Incomplete(item),
            Some((host, target)) => TargetPair::Pair {
                host: host.strip_suffix('.').unwrap_or(host),
                target,
            },
        })
        .collect()
}

/// `--fqdn-target-template` on `obj` (named `object` in logs), run by `source_name`: a record per
/// `host:target` pair, of the type its target suits, without TTL, labels or provider-specific properties
/// (as external-dns writes them), pairs of one host merged; `Err` when the template fails on the object.
///
/// Items that are not a complete pair are skipped, logged at debug as external-dns does. Hosts are not
/// checked here, because external-dns does not check them either (in all three sources): a record with an
/// invalid name is dropped by the pipeline's validation (counted in `source_invalid_endpoints`, as
/// external-dns counts it), which also fails the object it refers to, so that object's records are held.
/// The caller attaches the object reference.
pub fn target_endpoints(
    template: &FqdnTemplate,
    obj: &dyn TemplateObject,
    object: &dyn Display,
    source_name: &str,
    annotations: &Annotations,
) -> Result<Vec<Endpoint>, TemplateError> {
    let raw = template.execute_raw(obj, source_name, annotations)?;
    let mut endpoints = Vec::new();
    for pair in target_pairs(&raw) {
        match pair {
            TargetPair::Pair { host, target } => {
                let target = Target::from(target);
                endpoints.push(Endpoint::new(host, target.suitable_type(), [target]));
            }
            TargetPair::NotAPair(item) | TargetPair::Incomplete(item) => {
                tracing::debug!(%object, value = item, "FQDN target template: skipping item, not host:target");
            }
        }
    }
    Ok(merge_endpoints(endpoints))
}

#[cfg(test)]
mod tests {
    use extdns_endpoint::{RecordType, validate_endpoint};
    use extdns_informer::view::{Meta, Service};

    use super::*;

    fn service() -> Service {
        Service {
            meta: Meta {
                name: "web".into(),
                namespace: "prod".into(),
                ..Meta::default()
            },
            cluster_ip: Some("10.0.0.7".into()),
            ..Service::default()
        }
    }

    fn run(text: &str) -> Result<Vec<Endpoint>, TemplateError> {
        let template = match FqdnTemplate::parse(&[text.to_string()]) {
            Ok(Some(t)) => t,
            other => panic!("template {text:?}: {other:?}"),
        };
        target_endpoints(&template, &service(), &"prod/web", "service", &Annotations::default())
    }

    fn lines(endpoints: &[Endpoint]) -> Vec<String> {
        let mut out: Vec<String> = endpoints
            .iter()
            .map(|e| {
                format!(
                    "{} {} {} ttl={}",
                    e.dns_name,
                    e.record_type,
                    e.targets.join(","),
                    e.record_ttl.0
                )
            })
            .collect();
        out.sort();
        out
    }

    #[test]
    fn each_pair_is_a_record_of_the_type_its_target_suits_merged_by_host_without_ttl() -> Result<(), TemplateError> {
        let got = run(
            "{{.Name}}.example.org:{{.Spec.ClusterIP}}, {{.Name}}.example.org.:192.0.2.1, \
             alias.example.org:lb.example.net., v6.example.org:2001:db8::1",
        )?;
        assert_eq!(
            lines(&got),
            [
                "alias.example.org CNAME lb.example.net ttl=0",
                "v6.example.org AAAA 2001:db8::1 ttl=0",
                "web.example.org A 10.0.0.7,192.0.2.1 ttl=0",
            ]
        );
        Ok(())
    }

    #[test]
    fn items_without_a_colon_or_with_an_empty_side_are_skipped() -> Result<(), TemplateError> {
        let got = run("broken, :192.0.2.1, empty.example.org:, ok.example.org:192.0.2.2")?;
        assert_eq!(lines(&got), ["ok.example.org A 192.0.2.2 ttl=0"]);
        Ok(())
    }

    /// external-dns checks no host here (in none of its three sources): an invalid one is published for the
    /// pipeline's validation to drop, count and fail the object by; the other pairs publish.
    #[test]
    fn an_invalid_host_is_left_to_the_pipelines_validation() -> Result<(), TemplateError> {
        let long = "a".repeat(64);
        let got = run(&format!("{long}.example.org:192.0.2.1,ok.example.org:192.0.2.2"))?;
        assert_eq!(got.len(), 2, "{got:?}");
        let invalid: Vec<&str> = got
            .iter()
            .filter(|e| validate_endpoint(e).is_err())
            .map(|e| e.dns_name.as_str())
            .collect();
        assert_eq!(invalid, [format!("{long}.example.org")]);
        assert!(got.iter().all(|e| e.record_type == RecordType::A));
        Ok(())
    }

    #[test]
    fn a_template_failing_on_the_object_is_an_error() {
        assert!(run("{{.Spec.Missing.Deeper}}.example.org:192.0.2.1").is_err());
    }
}
