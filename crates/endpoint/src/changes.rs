use serde::{Deserialize, Serialize};

use crate::Endpoint;

/// What one sync changes in DNS. `update_old[i]` and `update_new[i]` describe the same record before and
/// after. The JSON form is the external-dns webhook's `Changes` object.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Changes {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub create: Vec<Endpoint>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub update_old: Vec<Endpoint>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub update_new: Vec<Endpoint>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub delete: Vec<Endpoint>,
}

impl Changes {
    /// Whether applying these changes would change anything. An update whose new side equals its old side
    /// is not a change (external-dns compares the two lists).
    pub fn has_changes(&self) -> bool {
        !self.create.is_empty() || !self.delete.is_empty() || self.update_old != self.update_new
    }

    pub fn is_empty(&self) -> bool {
        self.create.is_empty() && self.delete.is_empty() && self.update_old.is_empty() && self.update_new.is_empty()
    }

    /// The number of records these changes touch (an update counts once).
    pub fn len(&self) -> usize {
        self.create.len() + self.update_new.len() + self.delete.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RecordType;

    #[test]
    fn empty_changes_serialise_to_an_empty_object() {
        assert_eq!(serde_json::to_string(&Changes::default()).ok().as_deref(), Some("{}"));
    }

    #[test]
    fn an_update_to_the_same_record_is_no_change() {
        let e = Endpoint::new("a.example.com", RecordType::A, ["1.2.3.4"]);
        let c = Changes {
            update_old: vec![e.clone()],
            update_new: vec![e],
            ..Changes::default()
        };
        assert!(!c.has_changes());
        assert!(!c.is_empty());
    }

    #[test]
    fn changes_use_the_webhook_field_names() {
        let e = Endpoint::new("a.example.com", RecordType::A, ["1.2.3.4"]);
        let c = Changes {
            create: vec![e.clone()],
            update_old: vec![e.clone()],
            update_new: vec![e],
            ..Changes::default()
        };
        let json = serde_json::to_value(&c).unwrap_or_default();
        assert!(json.get("create").is_some() && json.get("updateOld").is_some() && json.get("updateNew").is_some());
        assert!(json.get("delete").is_none());
    }
}
