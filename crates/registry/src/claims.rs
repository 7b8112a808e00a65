//! Several ownership records claiming one record (external-dns #5457): which claim the record is read
//! with.
//!
//! A record has one ownership record, but a zone can hold more: two TXT values under one name (a provider
//! returning each value as a record of its own, or one record set holding both), written by two owners
//! whose hand-over went wrong or by a person. external-dns keeps whichever it parsed last, so which owner a
//! record reads as depends on the provider's order, and an owner may update or delete what another claims.
//! Here the claims are settled the same way whatever their order: claims that agree on the owner are one
//! claim (the first is kept); claims that do not make the record contested, read as held by another owner
//! (never ours), so no owner touches it until all but one claim are removed, and a warning names them.

use extdns_endpoint::{Labels, label};

/// The labels a record is read with, given the claim kept so far and another one; `ours` is our owner id.
/// When the owners differ, the claim of an owner other than us wins, the least such owner id among
/// several, so the outcome depends on neither the order nor who reads it (each reader sees it foreign).
pub fn settle(ours: &str, kept: Labels, other: Labels) -> Settled {
    let (a, b) = (owner(&kept), owner(&other));
    if a == b {
        return Settled::Agreed(kept);
    }
    let mut owners = vec![a.to_string(), b.to_string()];
    owners.sort();
    let foreign_first = |x: &str, y: &str| match (x == ours, y == ours) {
        (false, true) => true,
        (true, false) => false,
        _ => x <= y,
    };
    let labels = if foreign_first(a, b) { kept } else { other };
    Settled::Contested { labels, owners }
}

/// What [`settle`] decided.
#[derive(Debug, Clone, PartialEq)]
pub enum Settled {
    /// The claims name one owner: the record is read with the first claim.
    Agreed(Labels),
    /// The claims name different owners: the record is read with `labels` (another owner's).
    Contested {
        /// The claim the record is read with.
        labels: Labels,
        /// The two owners, sorted, for the warning.
        owners: Vec<String>,
    },
}

impl Settled {
    /// The labels the record is read with; when contested, a warning names the owners if `first_time`
    /// says the ownership record `name` was not warned about yet.
    pub fn labels(self, name: &str, first_time: impl FnOnce(&str) -> bool) -> Labels {
        match self {
            Settled::Agreed(labels) => labels,
            Settled::Contested { labels, owners } => {
                if first_time(name) {
                    tracing::warn!(
                        ownership_record = %name, owners = %owners.join(", "),
                        "ownership records of several owners claim this record; it is left alone (not \
                         updated, deleted or taken over) until all claims but one are removed"
                    );
                }
                labels
            }
        }
    }
}

/// The labels one ownership record's values state, `first` being the first value's: each further value
/// is a claim of its own, settled with the others ([`settle`]).
pub fn of_values(
    ours: &str,
    first: Labels,
    others: impl Iterator<Item = Labels>,
    name: &str,
    mut first_time: impl FnMut(&str) -> bool,
) -> Labels {
    others.fold(first, |kept, claim| {
        settle(ours, kept, claim).labels(name, &mut first_time)
    })
}

fn owner(l: &Labels) -> &str {
    l.get(label::OWNER).map(String::as_str).unwrap_or("")
}

/// Whether `r`, another owner's record, is one `owner` takes over in phase 2 of a hand-over
/// (docs/migration.md): its owner is `adopt_from` (`--txt-adopt-from-owner`) and it says it was released to
/// `owner` (the `released-to` label the releaser's plan writes). The one rule every registry with a
/// hand-over asks (TXT, crd); the plan takes a record over only where it is identical to ours.
pub fn adopts(adopt_from: Option<&str>, owner: &str, r: &extdns_endpoint::Endpoint) -> bool {
    adopt_from.is_some_and(|from| {
        !from.is_empty() && r.owner() == Some(from) && r.label(extdns_endpoint::label::RELEASED_TO) == Some(owner)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim(owner: &str) -> Labels {
        let mut l = Labels::new();
        l.insert(label::OWNER.to_string(), owner.to_string());
        l
    }

    #[test]
    fn claims_of_one_owner_agree() {
        assert_eq!(settle("a", claim("a"), claim("a")), Settled::Agreed(claim("a")));
    }

    #[test]
    fn a_contested_record_reads_as_anothers_whatever_the_order() {
        for (x, y) in [("a", "b"), ("b", "a")] {
            let Settled::Contested { labels, owners } = settle("a", claim(x), claim(y)) else {
                panic!("{x} and {y} agree");
            };
            assert_eq!(owner(&labels), "b", "we never read a contested record as ours");
            assert_eq!(owners, ["a", "b"]);
        }
        for (x, y) in [("c", "b"), ("b", "c")] {
            let Settled::Contested { labels, .. } = settle("a", claim(x), claim(y)) else {
                panic!("{x} and {y} agree");
            };
            assert_eq!(owner(&labels), "b", "the least other owner, in either order");
        }
    }
}
