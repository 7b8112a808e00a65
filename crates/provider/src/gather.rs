//! Endpoints from backends that store one record per target (Cloudflare, SkyDNS in etcd): every record of
//! a name and type joins one endpoint, as external-dns reads them, and [`ByRecord`] finds what the backend
//! holds for each of those records again when a change names it.

use std::collections::HashMap;

use extdns_endpoint::{Endpoint, RecordType};

/// Endpoints being gathered from single records.
#[derive(Debug, Default)]
pub struct Gather {
    endpoints: Vec<Endpoint>,
    /// Lower-case name and type → index in `endpoints`.
    by_record: HashMap<(String, RecordType), usize>,
}

impl Gather {
    /// Add a record: its target joins the endpoint of its name (case-insensitive) and type; the first
    /// record of a name and type makes that endpoint with `first` (which is given the target, and sets
    /// what else the record says: TTL, properties).
    pub fn add(&mut self, name: &str, rtype: &RecordType, target: &str, first: impl FnOnce() -> Endpoint) {
        let key = (name.to_ascii_lowercase(), rtype.clone());
        match self.by_record.get(&key) {
            Some(&i) => {
                let targets = &mut self.endpoints[i].targets;
                if !targets.iter().any(|t| t.as_str() == target) {
                    targets.push(target.into());
                }
            }
            None => {
                self.by_record.insert(key, self.endpoints.len());
                self.endpoints.push(first());
            }
        }
    }

    /// The endpoints, each with its targets sorted.
    pub fn into_endpoints(mut self) -> Vec<Endpoint> {
        for ep in &mut self.endpoints {
            ep.targets.normalize();
        }
        self.endpoints
    }
}

/// What a backend holds for each single record it read (Cloudflare's record ids, SkyDNS's etcd keys), found
/// again by an endpoint and one of its targets when a change names that record. Names match whatever their
/// case, as [`Gather`] joins them.
#[derive(Debug)]
pub struct ByRecord<V> {
    /// Lower-case name, type and target → what the backend holds for that record (several values when it
    /// holds the record twice).
    values: HashMap<(String, RecordType, String), Vec<V>>,
}

impl<V> Default for ByRecord<V> {
    fn default() -> ByRecord<V> {
        ByRecord { values: HashMap::new() }
    }
}

impl<V> ByRecord<V> {
    /// Keeps `value` for the record of `name`, `rtype` and `target`, after any kept for it before.
    pub fn push(&mut self, name: &str, rtype: RecordType, target: String, value: V) {
        let key = (name.to_ascii_lowercase(), rtype, target);
        self.values.entry(key).or_default().push(value);
    }

    /// What was kept for `target` of `endpoint`, in the order it was read; empty for a record not read.
    pub fn get(&self, endpoint: &Endpoint, target: &str) -> &[V] {
        let key = (
            endpoint.dns_name.to_ascii_lowercase(),
            endpoint.record_type.clone(),
            target.to_string(),
        );
        self.values.get(&key).map(Vec::as_slice).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use extdns_endpoint::Ttl;

    #[test]
    fn records_of_a_name_and_type_make_one_endpoint() {
        let mut g = Gather::default();
        let records = [
            ("Web.example.org", RecordType::A, "192.0.2.2", 60),
            ("web.example.org", RecordType::A, "192.0.2.1", 300),
            ("web.example.org", RecordType::A, "192.0.2.1", 300),
            ("web.example.org", RecordType::Txt, "hello", 300),
        ];
        for (name, rtype, target, ttl) in &records {
            g.add(name, rtype, target, || {
                Endpoint::new(name, rtype.clone(), [*target]).with_ttl(Ttl(*ttl))
            });
        }
        let eps = g.into_endpoints();
        assert_eq!(eps.len(), 2);
        assert_eq!(
            eps[0].dns_name, "Web.example.org",
            "the first record names the endpoint"
        );
        assert_eq!(
            eps[0].targets.0,
            ["192.0.2.1", "192.0.2.2"],
            "sorted, without the duplicate"
        );
        assert_eq!(eps[0].record_ttl, Ttl(60), "the first record's TTL");
        assert_eq!(eps[1].record_type, RecordType::Txt);
    }

    #[test]
    fn what_was_kept_for_a_record_is_found_by_its_endpoint_whatever_the_case() {
        let mut by = ByRecord::default();
        by.push("Web.example.org", RecordType::A, "192.0.2.1".into(), "id-1");
        by.push("web.example.org", RecordType::A, "192.0.2.1".into(), "id-2");
        by.push("web.example.org", RecordType::A, "192.0.2.2".into(), "id-3");
        let ep = Endpoint::new("WEB.example.org", RecordType::A, ["192.0.2.1"]);
        assert_eq!(by.get(&ep, "192.0.2.1"), ["id-1", "id-2"], "both values, in read order");
        assert_eq!(by.get(&ep, "192.0.2.2"), ["id-3"]);
        assert!(by.get(&ep, "192.0.2.9").is_empty(), "a target not read");
        let txt = Endpoint::new("web.example.org", RecordType::Txt, ["192.0.2.1"]);
        assert!(by.get(&txt, "192.0.2.1").is_empty(), "another type");
    }
}
