//! Request bodies read as Go's `encoding/json` reads them into external-dns's types: an object key matches
//! a field whatever its case (`Create`, `DNSName`), so a body external-dns's server applies is applied here
//! too rather than decoded as empty and answered 204 with nothing written. An exact key wins over another
//! spelling of it. Map keys that are data (`labels`) are left as they are. A body whose keys are all spelt
//! as the fields are (every body a real client sends) is decoded directly ([`needed`] says so in one pass
//! that keeps nothing), so folding costs nothing then.

use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
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

/// Whether any object key of `body` is a field's name in another case. Not JSON: false (the typed decoder
/// then says what is wrong).
pub(crate) fn needed(body: &[u8]) -> bool {
    serde_json::from_slice::<OtherCase>(body).is_ok_and(|o| o.0)
}

fn other_case(key: &str) -> bool {
    CHANGES
        .iter()
        .chain(&ENDPOINT)
        .chain(&PROPERTY)
        .any(|f| *f != key && f.eq_ignore_ascii_case(key))
}

/// Whether a JSON value holds a key in another case, found without keeping anything.
struct OtherCase(bool);

impl<'de> Deserialize<'de> for OtherCase {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(Walk)
    }
}

/// A key, only checked.
struct Key(bool);

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(KeyWalk)
    }
}

struct KeyWalk;

impl Visitor<'_> for KeyWalk {
    type Value = Key;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object key")
    }
    fn visit_str<E>(self, key: &str) -> Result<Key, E> {
        Ok(Key(other_case(key)))
    }
}

struct Walk;

impl<'de> Visitor<'de> for Walk {
    type Value = OtherCase;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("JSON")
    }
    fn visit_bool<E>(self, _: bool) -> Result<OtherCase, E> {
        Ok(OtherCase(false))
    }
    fn visit_i64<E>(self, _: i64) -> Result<OtherCase, E> {
        Ok(OtherCase(false))
    }
    fn visit_u64<E>(self, _: u64) -> Result<OtherCase, E> {
        Ok(OtherCase(false))
    }
    fn visit_f64<E>(self, _: f64) -> Result<OtherCase, E> {
        Ok(OtherCase(false))
    }
    fn visit_unit<E>(self) -> Result<OtherCase, E> {
        Ok(OtherCase(false))
    }
    fn visit_str<E>(self, _: &str) -> Result<OtherCase, E> {
        Ok(OtherCase(false))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<OtherCase, A::Error> {
        let mut found = false;
        while let Some(OtherCase(f)) = seq.next_element()? {
            found |= f;
        }
        Ok(OtherCase(found))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<OtherCase, A::Error> {
        let mut found = false;
        while let Some(Key(k)) = map.next_key()? {
            let OtherCase(v) = map.next_value()?;
            found |= k || v;
        }
        Ok(OtherCase(found))
    }
}

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
    fn only_keys_in_another_case_need_folding() {
        assert!(!needed(
            br#"{"create":[{"dnsName":"a","targets":["x"],"labels":{"k":"v"}}],"delete":null}"#
        ));
        // A string value in another case is not a key.
        assert!(!needed(br#"{"create":[{"dnsName":"Create","recordType":"A"}]}"#));
        assert!(needed(br#"{"Create":[]}"#));
        assert!(needed(
            br#"[{"dnsName":"a","providerSpecific":[{"NAME":"alias","value":"true"}]}]"#
        ));
        assert!(needed(
            br#"{"create":[{"dns\u006eame":"escaped, still a key in another case"}]}"#
        ));
        assert!(!needed(b"not json"));
    }

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
