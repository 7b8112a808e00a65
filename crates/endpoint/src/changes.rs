use std::fmt;

use serde::{Deserialize, Serialize};

use crate::Endpoint;

/// One change to one record, as the plan decides it and every layer below passes it on by reference.
///
/// An update carries both sides in one value so no layer can separate them: a provider writes the old and
/// the new record in one message or not at all, and a name is never left without its record because only
/// half of an update landed.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// A record that does not exist yet.
    Create(Endpoint),
    /// A record whose content (targets, TTL, labels, provider-specific) changes under the same key. Both
    /// sides are boxed so a change is the size of one endpoint: a first sync holds one change per record,
    /// nearly all of them creates, and an unboxed update doubled the size of every one.
    Update {
        /// The record as it stands in the provider.
        old: Box<Endpoint>,
        /// The record as it should become; same key as `old`.
        new: Box<Endpoint>,
    },
    /// A record to remove, as the provider holds it.
    Delete(Endpoint),
}

impl Change {
    /// An update from `old` to `new`.
    pub fn update(old: Endpoint, new: Endpoint) -> Change {
        Change::Update {
            old: Box::new(old),
            new: Box::new(new),
        }
    }

    /// The record as it will be after the change (the removed one for a delete).
    pub fn endpoint(&self) -> &Endpoint {
        match self {
            Change::Create(e) | Change::Delete(e) => e,
            Change::Update { new, .. } => new,
        }
    }

    /// The record as it is before the change, if there is one.
    pub fn previous(&self) -> Option<&Endpoint> {
        match self {
            Change::Create(_) => None,
            Change::Update { old, .. } => Some(old),
            Change::Delete(e) => Some(e),
        }
    }

    /// `create`, `update` or `delete`, for messages.
    pub fn action(&self) -> &'static str {
        match self {
            Change::Create(_) => "create",
            Change::Update { .. } => "update",
            Change::Delete(_) => "delete",
        }
    }

    /// How messages name the record this change touches.
    pub fn record_name(&self) -> RecordName<'_> {
        RecordName(self.endpoint())
    }

    /// Whether applying the change alters DNS: an update whose sides are equal does not (external-dns
    /// compares the two sides).
    pub fn is_effective(&self) -> bool {
        match self {
            Change::Update { old, new } => old != new,
            _ => true,
        }
    }

    /// The order a batch applies changes in: deletes first (they free names for what follows), then
    /// updates, then creates.
    pub fn apply_order(&self) -> u8 {
        match self {
            Change::Delete(_) => 0,
            Change::Update { .. } => 1,
            Change::Create(_) => 2,
        }
    }
}

/// `<name> <type>`, with ` set-identifier=<id>` when the record has one: how failures and logs name a
/// record, formatted only when printed.
#[derive(Debug, Clone, Copy)]
pub struct RecordName<'a>(pub &'a Endpoint);

impl fmt::Display for RecordName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let e = self.0;
        write!(f, "{} {}", e.dns_name, e.record_type)?;
        if !e.set_identifier.is_empty() {
            write!(f, " set-identifier={}", e.set_identifier)?;
        }
        Ok(())
    }
}

/// external-dns's JSON shape of a change set (`create`, `updateOld`, `updateNew`, `delete`): the webhook
/// wire format and the dry-run output. Only the edges that speak that format use it; everything inside
/// extdns passes [`Change`]s. `update_old[i]` and `update_new[i]` are the two sides of one update.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Changes {
    /// Records to create; `create` in JSON.
    #[serde(deserialize_with = "crate::null::or_default", skip_serializing_if = "Vec::is_empty")]
    pub create: Vec<Endpoint>,
    /// Current sides of updates; `updateOld` in JSON, paired by index with `update_new`.
    #[serde(deserialize_with = "crate::null::or_default", skip_serializing_if = "Vec::is_empty")]
    pub update_old: Vec<Endpoint>,
    /// Desired sides of updates; `updateNew` in JSON, paired by index with `update_old`.
    #[serde(deserialize_with = "crate::null::or_default", skip_serializing_if = "Vec::is_empty")]
    pub update_new: Vec<Endpoint>,
    /// Records to delete, as the provider holds them; `delete` in JSON.
    #[serde(deserialize_with = "crate::null::or_default", skip_serializing_if = "Vec::is_empty")]
    pub delete: Vec<Endpoint>,
}

/// The two sides of the updates in a [`Changes`] do not pair up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{old} updateOld entries but {new} updateNew entries: every update needs both sides")]
pub struct UnpairedUpdates {
    /// How many `updateOld` entries there were.
    pub old: usize,
    /// How many `updateNew` entries there were.
    pub new: usize,
}

impl Changes {
    /// True when there is nothing to do in any of the four lists.
    pub fn is_empty(&self) -> bool {
        self.create.is_empty() && self.delete.is_empty() && self.update_old.is_empty() && self.update_new.is_empty()
    }

    /// The changes in apply order (deletes, updates, creates), moved out without copying a record.
    pub fn into_changes(self) -> Result<Vec<Change>, UnpairedUpdates> {
        if self.update_old.len() != self.update_new.len() {
            return Err(UnpairedUpdates {
                old: self.update_old.len(),
                new: self.update_new.len(),
            });
        }
        let mut out = Vec::with_capacity(self.create.len() + self.update_new.len() + self.delete.len());
        out.extend(self.delete.into_iter().map(Change::Delete));
        out.extend(
            self.update_old
                .into_iter()
                .zip(self.update_new)
                .map(|(old, new)| Change::update(old, new)),
        );
        out.extend(self.create.into_iter().map(Change::Create));
        Ok(out)
    }
}

impl FromIterator<Change> for Changes {
    fn from_iter<I: IntoIterator<Item = Change>>(iter: I) -> Self {
        let mut c = Changes::default();
        for change in iter {
            match change {
                Change::Create(e) => c.create.push(e),
                Change::Update { old, new } => {
                    c.update_old.push(*old);
                    c.update_new.push(*new);
                }
                Change::Delete(e) => c.delete.push(e),
            }
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RecordType;

    fn ep(name: &str, target: &str) -> Endpoint {
        Endpoint::new(name, RecordType::A, [target])
    }

    #[test]
    fn empty_changes_serialise_to_an_empty_object() {
        assert_eq!(serde_json::to_string(&Changes::default()).ok().as_deref(), Some("{}"));
    }

    #[test]
    fn a_change_is_no_bigger_than_one_endpoint_and_its_tag() {
        assert!(std::mem::size_of::<Change>() <= std::mem::size_of::<Endpoint>() + 8);
    }

    #[test]
    fn an_update_to_the_same_record_is_no_change() {
        let e = ep("a.example.com", "1.2.3.4");
        assert!(!Change::update(e.clone(), e).is_effective());
        assert!(Change::Delete(ep("a.example.com", "1.2.3.4")).is_effective());
    }

    #[test]
    fn changes_use_the_webhook_field_names() {
        let e = ep("a.example.com", "1.2.3.4");
        let c: Changes = [Change::Create(e.clone()), Change::update(e.clone(), e)]
            .into_iter()
            .collect();
        let json = serde_json::to_value(&c).unwrap_or_default();
        assert!(json.get("create").is_some() && json.get("updateOld").is_some() && json.get("updateNew").is_some());
        assert!(json.get("delete").is_none());
    }

    #[test]
    fn json_changes_come_back_in_apply_order_with_updates_paired() {
        let c = Changes {
            create: vec![ep("c.example.com", "1.1.1.1")],
            update_old: vec![ep("u.example.com", "1.1.1.1")],
            update_new: vec![ep("u.example.com", "2.2.2.2")],
            delete: vec![ep("d.example.com", "1.1.1.1")],
        };
        let changes = c.into_changes().unwrap_or_default();
        let actions: Vec<&str> = changes.iter().map(Change::action).collect();
        assert_eq!(actions, ["delete", "update", "create"]);
        assert_eq!(changes[1].previous().map(|e| e.targets[0].as_str()), Some("1.1.1.1"));
        assert_eq!(changes[1].endpoint().targets[0].as_str(), "2.2.2.2");
    }

    #[test]
    fn unpaired_updates_are_refused_not_guessed() {
        let c = Changes {
            update_old: vec![ep("u.example.com", "1.1.1.1")],
            ..Changes::default()
        };
        assert_eq!(c.into_changes(), Err(UnpairedUpdates { old: 1, new: 0 }));
    }

    #[test]
    fn record_names_show_the_set_identifier_only_when_there_is_one() {
        let plain = Change::Create(ep("a.example.com", "1.2.3.4"));
        assert_eq!(plain.record_name().to_string(), "a.example.com A");
        let weighted = Change::Create(ep("a.example.com", "1.2.3.4").with_set_identifier("blue"));
        assert_eq!(
            weighted.record_name().to_string(),
            "a.example.com A set-identifier=blue"
        );
    }
}
