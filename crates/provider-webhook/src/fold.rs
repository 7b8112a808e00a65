//! Request bodies read as Go's `encoding/json` reads them into external-dns's types: an object key matches
//! a field whatever its case (`Create`, `DNSName`), so a body external-dns's server applies is applied here
//! too rather than decoded as empty and answered 204 with nothing written. An exact key wins over another
//! spelling of it. Map keys that are data (`labels`) are left as they are.

use serde_json::{Map, Value};

const CHANGES: [&str; 4] = ["create", "updateOld", "updateNew", "delete"];
const ENDPOINT: [&str; 7] = [
    "dnsName",
    "targets",
    "recordType",
    "setIdentifier",
    "recordTTL",
    "labels",
    "providerSpecific",
];
const PROPERTY: [&str; 2] = ["name", "value"];

/// A `plan.Changes` object: its four lists and their endpoints.
pub(crate) fn changes(value: &mut Value) {
    if let Value::Object(fields) = value {
        fold(fields, &CHANGES);
        for list in CHANGES {
            endpoints(fields.get_mut(list));
        }
    }
}

/// A list of endpoints (`POST /adjustendpoints`).
pub(crate) fn endpoints(value: Option<&mut Value>) {
    let Some(Value::Array(list)) = value else { return };
    for endpoint in list {
        let Value::Object(fields) = endpoint else { continue };
        fold(fields, &ENDPOINT);
        if let Some(Value::Array(properties)) = fields.get_mut("providerSpecific") {
            for property in properties {
                if let Value::Object(p) = property {
                    fold(p, &PROPERTY);
                }
            }
        }
    }
}

/// Renames each key that is a field in another case to the field's name, unless the field is set as spelt.
fn fold(object: &mut Map<String, Value>, fields: &[&str]) {
    let other_case: Vec<(String, &str)> = object
        .keys()
        .filter(|k| !fields.contains(&k.as_str()))
        .filter_map(|k| {
            fields
                .iter()
                .find(|f| f.eq_ignore_ascii_case(k))
                .map(|f| (k.clone(), *f))
        })
        .collect();
    for (key, field) in other_case {
        if let Some(v) = object.remove(&key)
            && !object.contains_key(field)
        {
            object.insert(field.to_string(), v);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn field_names_in_any_case_become_the_field_and_data_keys_stay() {
        let mut body = json!({
            "Create": [{
                "DNSName": "a.example.org",
                "TARGETS": ["192.0.2.1"],
                "recordtype": "A",
                "Labels": {"Owner": "x"},
                "ProviderSpecific": [{"Name": "alias", "VALUE": "true"}]
            }],
            "delete": [{"dnsName": "exact.example.org", "DnsName": "loser.example.org"}],
            "unknown": 1
        });
        changes(&mut body);
        assert_eq!(
            body,
            json!({
                "create": [{
                    "dnsName": "a.example.org",
                    "targets": ["192.0.2.1"],
                    "recordType": "A",
                    "labels": {"Owner": "x"},
                    "providerSpecific": [{"name": "alias", "value": "true"}]
                }],
                "delete": [{"dnsName": "exact.example.org"}],
                "unknown": 1
            })
        );
    }
}
