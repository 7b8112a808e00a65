//! Several Services may publish the same name. external-dns merges their targets into one record, owned
//! (labels, TTL, provider-specific properties) by the Service whose `resource` label sorts first, so the
//! owner recorded by the TXT registry does not change from one sync to the next. CNAMEs are never merged
//! this way: a name has one alias, and the plan's conflict resolution picks among competing ones.

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use extdns_endpoint::{Endpoint, EndpointKey, RecordType, label, merge_endpoints};

pub(crate) fn merge_services(mut endpoints: Vec<Endpoint>) -> Vec<Endpoint> {
    if endpoints.len() > 1 {
        endpoints.sort_by(|a, b| resource(a).cmp(resource(b)));
        let mut index: HashMap<EndpointKey, usize> = HashMap::with_capacity(endpoints.len());
        let mut merged: Vec<Endpoint> = Vec::with_capacity(endpoints.len());
        for e in endpoints {
            match index.entry(e.key()) {
                Entry::Occupied(i) if merged[*i.get()].record_type != RecordType::Cname => {
                    let first = &mut merged[*i.get()];
                    first.targets.extend(e.targets.0);
                    first.ref_objects.extend(e.ref_objects);
                }
                Entry::Occupied(_) => merged.push(e),
                Entry::Vacant(v) => {
                    v.insert(merged.len());
                    merged.push(e);
                }
            }
        }
        endpoints = merged;
    }
    let mut out = merge_endpoints(endpoints);
    out.sort_by(|a, b| {
        (a.dns_name.as_str(), a.record_type.as_str(), a.set_identifier.as_str()).cmp(&(
            b.dns_name.as_str(),
            b.record_type.as_str(),
            b.set_identifier.as_str(),
        ))
    });
    out
}

fn resource(e: &Endpoint) -> &str {
    e.label(label::RESOURCE).unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;
    use extdns_endpoint::Ttl;

    fn ep(name: &str, rt: RecordType, targets: &[&str], resource: &str, ttl: i64) -> Endpoint {
        Endpoint::new(name, rt, targets.iter().copied())
            .with_ttl(Ttl(ttl))
            .with_label(label::RESOURCE, resource)
    }

    #[test]
    fn shared_name_is_merged_and_owned_by_the_first_resource() {
        let out = merge_services(vec![
            ep("x.example.com", RecordType::A, &["2.2.2.2"], "service/default/b", 300),
            ep("x.example.com", RecordType::A, &["1.1.1.1"], "service/default/a", 60),
        ]);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].targets.0, vec!["1.1.1.1", "2.2.2.2"]);
        assert_eq!(out[0].resource(), Some("service/default/a"));
        assert_eq!(out[0].record_ttl, Ttl(60));
    }

    #[test]
    fn shared_cname_names_are_not_merged() {
        let out = merge_services(vec![
            ep(
                "x.example.com",
                RecordType::Cname,
                &["b.lb.com"],
                "service/default/b",
                0,
            ),
            ep(
                "x.example.com",
                RecordType::Cname,
                &["a.lb.com"],
                "service/default/a",
                0,
            ),
        ]);
        assert_eq!(out.len(), 2);
        assert!(out.iter().all(|e| e.targets.len() == 1));
    }

    #[test]
    fn identical_cnames_of_two_services_collapse_into_one() {
        let out = merge_services(vec![
            ep("x.example.com", RecordType::Cname, &["lb.com"], "service/default/b", 0),
            ep("x.example.com", RecordType::Cname, &["lb.com"], "service/default/a", 0),
        ]);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].resource(), Some("service/default/a"));
    }

    #[test]
    fn merged_targets_are_sorted_and_deduplicated() {
        let out = merge_services(vec![
            ep(
                "x.example.com",
                RecordType::A,
                &["10.0.0.2", "10.0.0.10"],
                "service/a/a",
                0,
            ),
            ep("x.example.com", RecordType::A, &["10.0.0.2"], "service/a/a", 0),
        ]);
        assert_eq!(out[0].targets.0, vec!["10.0.0.10", "10.0.0.2"]);
    }

    #[test]
    fn output_is_sorted_by_name_and_type() {
        let out = merge_services(vec![
            ep("b.example.com", RecordType::A, &["1.1.1.1"], "service/a/a", 0),
            ep("a.example.com", RecordType::Cname, &["x.com"], "service/a/a", 0),
            ep("a.example.com", RecordType::A, &["1.1.1.1"], "service/a/a", 0),
        ]);
        let names: Vec<_> = out
            .iter()
            .map(|e| format!("{} {}", e.dns_name, e.record_type))
            .collect();
        assert_eq!(names, vec!["a.example.com A", "a.example.com CNAME", "b.example.com A"]);
    }
}
