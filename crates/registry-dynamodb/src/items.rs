//! The items as external-dns lays them out: `k` = `<name>#<type>#<set identifier>`, `o` = the owner id,
//! `l` = the other labels as a map of strings; the three PartiQL statements that write them, spelt as
//! external-dns spells them, and the take-over of another owner's item (a migration or a hand-over).

use extdns_endpoint::{Endpoint, Labels, label};
use serde_json::{Map, Value, json};

use crate::client::Statement;

/// An item's key: `<name>#<type>#<set identifier>` of its record, as external-dns's `EndpointKey` gives it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ItemKey(String);

impl ItemKey {
    /// The key of `r`'s item.
    pub fn of(r: &Endpoint) -> ItemKey {
        ItemKey(format!("{}#{}#{}", r.dns_name, r.record_type, r.set_identifier))
    }

    /// The record's name.
    pub fn name(&self) -> &str {
        self.0.split('#').next().unwrap_or_default()
    }

    /// The key as stored.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for ItemKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Why an item read is not as external-dns writes them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum BadItem {
    /// `k` is missing or not a string.
    #[error("attribute \"k\" is not a string")]
    KeyNotString,
    /// `k` is not `<name>#<type>#<set identifier>`.
    #[error("key {0:?} is not <name>#<type>#<set identifier>")]
    KeyLayout(String),
    /// `l` is neither a map nor null.
    #[error("attribute \"l\" is not a map")]
    LabelsNotMap,
    /// A label's value is not a string.
    #[error("label {0:?} is not a string")]
    LabelNotString(String),
}

/// The key and labels of one item read (projected to `k` and `l`), owned by `owner`; why not, if the item
/// is not as external-dns writes them.
pub(crate) fn parse(item: &Map<String, Value>, owner: &str) -> Result<(ItemKey, Labels), BadItem> {
    let key = item
        .get("k")
        .and_then(|k| k.get("S"))
        .and_then(Value::as_str)
        .ok_or(BadItem::KeyNotString)?;
    if key.matches('#').count() < 2 {
        return Err(BadItem::KeyLayout(key.to_string()));
    }
    let mut labels = Labels::new();
    match item.get("l") {
        None | Some(Value::Null) => {}
        Some(l) => {
            if l.get("NULL").is_none() {
                let map = l.get("M").and_then(Value::as_object).ok_or(BadItem::LabelsNotMap)?;
                for (k, v) in map {
                    let v = v
                        .get("S")
                        .and_then(Value::as_str)
                        .ok_or_else(|| BadItem::LabelNotString(k.clone()))?;
                    labels.insert(k.clone(), v.to_string());
                }
            }
        }
    }
    labels.insert(label::OWNER.to_string(), owner.to_string());
    Ok((ItemKey(key.to_string()), labels))
}

/// `l`: every label but the owner (kept in `o`), as strings.
fn labels_value(labels: &Labels) -> Value {
    let map: Map<String, Value> = labels
        .iter()
        .filter(|(k, _)| *k != label::OWNER)
        .map(|(k, v)| (k.clone(), json!({"S": v})))
        .collect();
    json!({"M": map})
}

fn s(v: &str) -> Value {
    json!({"S": v})
}

/// The table name as external-dns quotes it (Go's `%q`; DynamoDB table names need no escapes).
fn quoted(table: &str) -> String {
    format!("{table:?}")
}

/// Claims `key` for `owner`: refused with `DuplicateItem` when any item has the key.
pub(crate) fn insert(table: &str, key: &ItemKey, owner: &str, labels: &Labels) -> Statement {
    Statement {
        text: format!("INSERT INTO {} VALUE {{'k':?, 'o':?, 'l':?}}", quoted(table)),
        parameters: vec![s(key.as_str()), s(owner), labels_value(labels)],
    }
}

/// Replaces the labels of `key`'s item.
pub(crate) fn update(table: &str, key: &ItemKey, labels: &Labels) -> Statement {
    Statement {
        text: format!("UPDATE {} SET \"l\"=? WHERE \"k\"=?", quoted(table)),
        parameters: vec![labels_value(labels), s(key.as_str())],
    }
}

/// Takes `key`'s item over from `from` (a migration or an adoption): owner and labels in one write, only
/// while `from` still holds it (refused with `ConditionalCheckFailed` otherwise). One `SET` clause per
/// attribute, as DynamoDB's PartiQL documents it.
pub(crate) fn take_over(table: &str, key: &ItemKey, from: &str, owner: &str, labels: &Labels) -> Statement {
    Statement {
        text: format!(
            "UPDATE {} SET \"o\"=? SET \"l\"=? WHERE \"k\"=? AND \"o\"=?",
            quoted(table)
        ),
        parameters: vec![s(owner), labels_value(labels), s(key.as_str()), s(from)],
    }
}

/// Releases `key`'s item if `owner` holds it.
pub(crate) fn delete(table: &str, key: &ItemKey, owner: &str) -> Statement {
    Statement {
        text: format!("DELETE FROM {} WHERE \"k\"=? AND \"o\"=?", quoted(table)),
        parameters: vec![s(key.as_str()), s(owner)],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use extdns_endpoint::RecordType;

    #[test]
    fn keys_and_labels_are_laid_out_as_external_dns_lays_them_out() {
        let r = Endpoint::new("web.example.org", RecordType::A, ["192.0.2.1"]).with_set_identifier("eu".to_string());
        let key = ItemKey::of(&r);
        assert_eq!(key.as_str(), "web.example.org#A#eu");
        assert_eq!(key.name(), "web.example.org");
        let mut labels = Labels::new();
        labels.insert(label::OWNER.to_string(), "me".to_string());
        labels.insert(label::RESOURCE.to_string(), "service/default/web".to_string());
        let insert = insert("external-dns", &key, "me", &labels);
        assert_eq!(insert.text, "INSERT INTO \"external-dns\" VALUE {'k':?, 'o':?, 'l':?}");
        assert_eq!(
            insert.parameters,
            vec![
                json!({"S": "web.example.org#A#eu"}),
                json!({"S": "me"}),
                json!({"M": {"resource": {"S": "service/default/web"}}})
            ]
        );
        let item: Map<String, Value> = serde_json::from_value(json!({
            "k": {"S": "web.example.org#A#eu"},
            "l": {"M": {"resource": {"S": "service/default/web"}}}
        }))
        .expect("an object");
        assert_eq!(parse(&item, "me"), Ok((key, labels)));
    }

    #[test]
    fn unreadable_items_say_why() {
        let item = |v: Value| serde_json::from_value::<Map<String, Value>>(v).expect("an object");
        let no_hashes = parse(&item(json!({"k": {"S": "no-hashes"}})), "me");
        assert_eq!(no_hashes, Err(BadItem::KeyLayout("no-hashes".into())));
        assert_eq!(parse(&item(json!({"k": {"N": "1"}})), "me"), Err(BadItem::KeyNotString));
        let err = parse(&item(json!({"k": {"S": "a#A#"}, "l": {"M": {"x": {"N": "1"}}}})), "me");
        assert_eq!(err, Err(BadItem::LabelNotString("x".into())));
        assert_eq!(
            err.map_err(|e| e.to_string()),
            Err("label \"x\" is not a string".to_string())
        );
    }
}
