//! The extra fields templates read, kept per object as raw JSON trimmed to exactly those paths.
//!
//! The compact views hold what the sources themselves read. A `--fqdn-template` may read any field of the
//! object (`.Spec.TrafficDistribution`, `.Status.Conditions`); storing whole objects for that would make
//! every Service cost its full size, so the paths templates use are found when they are parsed and only
//! those are kept. Without templates nothing is kept and the views are as small as before.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::ResourceKind;

/// A set of JSON paths, as a tree: `spec.ports[].port` and `spec.ipFamilies` share `spec`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldTree {
    /// Keep everything below this node (the value is printed or passed to a function).
    whole: bool,
    /// Object members to keep, by JSON key.
    members: BTreeMap<String, FieldTree>,
    /// What to keep of each element when the node is a list (or each value when it is a map iterated over).
    elements: Option<Box<FieldTree>>,
}

/// One step of a JSON path.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum PathStep {
    /// An object member, by JSON key.
    Member(String),
    /// Every element of a list (or every value of a map).
    Elements,
}

impl FieldTree {
    /// Adds `path`; `whole` keeps everything below its end, otherwise only the node itself (a list keeps
    /// its length, an object its presence) and what other paths add below it.
    pub fn insert(&mut self, path: &[PathStep], whole: bool) {
        let mut node = self;
        for step in path {
            if node.whole {
                return;
            }
            node = match step {
                PathStep::Member(key) => node.members.entry(key.clone()).or_default(),
                PathStep::Elements => node.elements.get_or_insert_with(Box::default),
            };
        }
        if whole {
            node.whole = true;
            node.members.clear();
            node.elements = None;
        }
    }

    /// Nothing to keep.
    pub fn is_empty(&self) -> bool {
        !self.whole && self.members.is_empty() && self.elements.is_none()
    }

    /// `value` with only the parts this tree names; `None` when nothing of it is named or present.
    pub fn prune(&self, value: &Value) -> Option<Value> {
        if self.is_empty() {
            return None;
        }
        Some(self.prune_node(value))
    }

    fn prune_node(&self, value: &Value) -> Value {
        if self.whole {
            return value.clone();
        }
        match value {
            Value::Object(obj) => {
                let mut out = Map::new();
                for (key, sub) in &self.members {
                    if let Some(v) = obj.get(key) {
                        out.insert(key.clone(), sub.prune_node(v));
                    }
                }
                if let Some(elements) = &self.elements {
                    for (key, v) in obj {
                        if !self.members.contains_key(key) {
                            out.insert(key.clone(), elements.prune_node(v));
                        }
                    }
                }
                Value::Object(out)
            }
            Value::Array(items) => {
                let empty = FieldTree::default();
                let elements = self.elements.as_deref().unwrap_or(&empty);
                Value::Array(items.iter().map(|v| elements.prune_node(v)).collect())
            }
            scalar => scalar.clone(),
        }
    }
}

/// What to keep, per kind of object templates run on. Empty (the default) keeps nothing extra.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TemplateFields {
    per_kind: BTreeMap<ResourceKind, FieldTree>,
}

impl TemplateFields {
    /// The paths to keep for `kind`; an empty tree is not stored.
    pub fn set(&mut self, kind: ResourceKind, tree: FieldTree) {
        if tree.is_empty() {
            self.per_kind.remove(&kind);
        } else {
            self.per_kind.insert(kind, tree);
        }
    }

    /// The fields kept for `kind`; `None` when templates read nothing beyond its view.
    pub fn get(&self, kind: ResourceKind) -> Option<&FieldTree> {
        self.per_kind.get(&kind)
    }

    /// The kept fields of `object` (an API struct of `kind`) as JSON text, or `None` when templates read
    /// nothing of that kind beyond the view. Serialising costs a copy of the object, paid only for kinds
    /// templates read extra fields of; text is kept because a decoded tree costs ten times its bytes.
    pub fn keep<T: Serialize>(&self, kind: ResourceKind, object: &T) -> Option<Box<str>> {
        let tree = self.per_kind.get(&kind)?;
        match serde_json::to_value(object) {
            Ok(value) => tree.prune(&value).map(|kept| kept.to_string().into_boxed_str()),
            Err(error) => {
                // The API structs always serialise; should one not, the template sees zero values.
                tracing::warn!(%kind, %error, "cannot keep the fields templates read");
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn member(k: &str) -> PathStep {
        PathStep::Member(k.to_string())
    }

    #[test]
    fn a_tree_keeps_only_the_named_paths() {
        let mut t = FieldTree::default();
        t.insert(&[member("spec"), member("ipFamilies")], true);
        t.insert(
            &[member("spec"), member("ports"), PathStep::Elements, member("port")],
            true,
        );
        let obj = json!({
            "metadata": {"name": "web", "annotations": {"big": "x".repeat(100)}},
            "spec": {"ipFamilies": ["IPv4"], "ports": [{"port": 80, "name": "http"}, {"port": 443}], "type": "LoadBalancer"},
        });
        assert_eq!(
            t.prune(&obj),
            Some(json!({"spec": {"ipFamilies": ["IPv4"], "ports": [{"port": 80}, {"port": 443}]}}))
        );
    }

    #[test]
    fn a_shallow_list_keeps_its_length_only() {
        let mut t = FieldTree::default();
        t.insert(&[member("spec"), member("ports")], false);
        let obj = json!({"spec": {"ports": [{"port": 80}, {"port": 443}]}});
        assert_eq!(t.prune(&obj), Some(json!({"spec": {"ports": [{}, {}]}})));
    }

    #[test]
    fn a_whole_path_absorbs_deeper_ones() {
        let mut t = FieldTree::default();
        t.insert(&[member("status")], true);
        t.insert(&[member("status"), member("loadBalancer")], false);
        let obj = json!({"status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}, "conditions": []}});
        assert_eq!(t.prune(&obj), Some(obj.clone()));
    }

    #[test]
    fn elements_of_a_map_are_its_values() {
        let mut t = FieldTree::default();
        t.insert(&[member("metadata"), member("labels"), PathStep::Elements], true);
        let obj = json!({"metadata": {"labels": {"a": "1", "b": "2"}, "name": "x"}});
        assert_eq!(
            t.prune(&obj),
            Some(json!({"metadata": {"labels": {"a": "1", "b": "2"}}}))
        );
    }

    #[test]
    fn an_empty_tree_keeps_nothing() {
        let fields = TemplateFields::default();
        assert_eq!(fields.keep(ResourceKind::Service, &json!({"spec": {}})), None);
        let mut t = FieldTree::default();
        t.insert(&[member("spec"), member("ipFamilies")], true);
        let mut fields = TemplateFields::default();
        fields.set(ResourceKind::Service, t);
        let kept = fields.keep(
            ResourceKind::Service,
            &json!({"spec": {"ipFamilies": ["IPv4"], "type": "x"}}),
        );
        assert_eq!(kept.as_deref(), Some(r#"{"spec":{"ipFamilies":["IPv4"]}}"#));
    }
}
