//! Endpoints from backends that store one record per target (Cloudflare, SkyDNS in etcd): every record of
//! a name and type joins one endpoint, as external-dns reads them.

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
}
