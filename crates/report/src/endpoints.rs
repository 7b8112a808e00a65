//! `extdns endpoints`'s output: the endpoints sorted, as external-dns's JSON or an aligned table, alone or
//! each with the provider object it goes to (`--dns-provider-crds`).

use extdns_endpoint::Endpoint;

use crate::table::aligned;

/// By name, type, set identifier, then targets.
pub fn sort(endpoints: &mut [Endpoint]) {
    endpoints.sort_by(|a, b| {
        (&a.dns_name, a.record_type.as_str(), &a.set_identifier, &a.targets.0).cmp(&(
            &b.dns_name,
            b.record_type.as_str(),
            &b.set_identifier,
            &b.targets.0,
        ))
    });
}

/// A JSON array with external-dns's field names (empty fields omitted), pretty-printed, newline-terminated.
pub fn render_json(endpoints: &[Endpoint]) -> String {
    let mut s = serde_json::to_string_pretty(endpoints).unwrap_or_else(|_| "[]".to_string());
    s.push('\n');
    s
}

/// The table's columns.
pub const COLUMNS: [&str; 5] = ["NAME", "TYPE", "TTL", "TARGETS", "SET-ID"];

/// Aligned columns NAME TYPE TTL TARGETS SET-ID; an unset TTL and an empty set identifier print as `-`.
pub fn render_table(endpoints: &[Endpoint]) -> String {
    let header = COLUMNS.map(String::from).to_vec();
    aligned(std::iter::once(header).chain(endpoints.iter().map(row)).collect())
}

/// One endpoint's cells, in [`COLUMNS`]' order.
pub fn row(e: &Endpoint) -> Vec<String> {
    vec![
        e.dns_name.clone(),
        e.record_type.to_string(),
        if e.record_ttl.is_configured() {
            e.record_ttl.0.to_string()
        } else {
            "-".into()
        },
        e.targets.join(","),
        if e.set_identifier.is_empty() {
            "-".into()
        } else {
            e.set_identifier.clone()
        },
    ]
}

/// One record and the provider it goes to.
#[derive(Debug, Clone, PartialEq)]
pub struct Routed {
    /// The provider's label: `NAME` for a ClusterDNSProvider, `NAMESPACE/NAME` for a DNSProvider.
    pub provider: String,
    /// The record.
    pub endpoint: Endpoint,
}

/// [`render_json`] with each record's `"provider"` field.
pub fn render_json_by_provider(routed: &[Routed]) -> String {
    let values: Vec<serde_json::Value> = routed
        .iter()
        .map(|r| {
            let mut v = serde_json::to_value(&r.endpoint).unwrap_or_default();
            if let Some(map) = v.as_object_mut() {
                map.insert("provider".into(), serde_json::Value::String(r.provider.clone()));
            }
            v
        })
        .collect();
    let mut s = serde_json::to_string_pretty(&values).unwrap_or_else(|_| "[]".to_string());
    s.push('\n');
    s
}

/// [`render_table`] with a PROVIDER column first.
pub fn render_table_by_provider(routed: &[Routed]) -> String {
    let header = std::iter::once("PROVIDER").chain(COLUMNS).map(String::from).collect();
    let rows = routed.iter().map(|r| {
        let mut cells = vec![r.provider.clone()];
        cells.extend(row(&r.endpoint));
        cells
    });
    aligned(std::iter::once(header).chain(rows).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use extdns_endpoint::{RecordType, Ttl};

    #[test]
    fn endpoints_sort_by_name_type_and_set_identifier() {
        let mut eps = vec![
            Endpoint::new("b.example.com", RecordType::A, ["1.1.1.1"]),
            Endpoint::new("a.example.com", RecordType::Cname, ["x.example.com"]),
            Endpoint::new("a.example.com", RecordType::A, ["2.2.2.2"]).with_set_identifier("west"),
            Endpoint::new("a.example.com", RecordType::A, ["1.1.1.1"]).with_set_identifier("east"),
        ];
        sort(&mut eps);
        let keys: Vec<_> = eps
            .iter()
            .map(|e| format!("{} {} {}", e.dns_name, e.record_type, e.set_identifier))
            .collect();
        assert_eq!(
            keys,
            [
                "a.example.com A east",
                "a.example.com A west",
                "a.example.com CNAME ",
                "b.example.com A "
            ]
        );
    }

    #[test]
    fn json_output_uses_external_dns_field_names() -> Result<(), serde_json::Error> {
        let mut e = Endpoint::new("a.example.com", RecordType::A, ["1.2.3.4"])
            .with_ttl(Ttl(60))
            .with_set_identifier("s");
        e.ref_objects
            .extend(extdns_endpoint::ObjectKey::from_resource_label("service/ns/web"));
        let v: serde_json::Value = serde_json::from_str(&render_json(&[e]))?;
        // The `resource` label as external-dns prints it, rendered from the object that asked for the record.
        assert_eq!(
            v,
            serde_json::json!([{"dnsName": "a.example.com", "targets": ["1.2.3.4"], "recordType": "A",
                "setIdentifier": "s", "recordTTL": 60, "labels": {"resource": "service/ns/web"}}])
        );
        assert_eq!(render_json(&[]), "[]\n");
        Ok(())
    }

    #[test]
    fn table_output_aligns_columns() {
        let eps = [
            Endpoint::new("web.example.com", RecordType::A, ["1.2.3.4", "5.6.7.8"]).with_ttl(Ttl(300)),
            Endpoint::new("x.io", RecordType::Cname, ["lb.example.com"]).with_set_identifier("blue"),
        ];
        let table = render_table(&eps);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0], "NAME              TYPE    TTL   TARGETS           SET-ID");
        assert_eq!(lines[1], "web.example.com   A       300   1.2.3.4,5.6.7.8   -");
        assert_eq!(lines[2], "x.io              CNAME   -     lb.example.com    blue");
    }
}
