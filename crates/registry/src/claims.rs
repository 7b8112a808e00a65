//! Several ownership records claiming one record (external-dns #5457): which claim the record is read
//! with.
//!
//! A record has one ownership record, but a zone can hold more: two TXT values under one name (a provider
//! returning each value as a record of its own, or one record set holding both), written by two owners
//! whose hand-over went wrong or by a person. external-dns keeps whichever it parsed last, so which owner a
//! record reads as depends on the provider's order, and an owner may update or delete what another claims.
//! Here the claims are settled the same way whatever their order: claims that agree on the owner are one
//! claim (the first is kept); claims that do not make the record contested, read as held by another owner
//! (never ours, and released to no one), so no owner touches or adopts it until all but one claim are
//! removed, and a warning names them. The TXT, DynamoDB and CRD registries settle claims here.

use extdns_endpoint::{Labels, label};

/// The labels a record is read with, given the claim kept so far and another one; `ours` is our owner id.
/// When the owners differ, the claim of an owner other than us wins, the least such owner id among
/// several, so the outcome depends on neither the order nor who reads it (each reader sees it foreign),
/// and it is read as released to no one.
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
    let mut labels = if foreign_first(a, b) { kept } else { other };
    // A contested record is handed over to no one either: a release one claim states would let the
    // adopter take a record another claim still holds.
    labels.remove(label::RELEASED_TO);
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
/// (docs/migration.md) from `adopt_from`: the plan's rule ([`extdns_endpoint::Endpoint::adoptable_by`]),
/// asked by every registry with a hand-over (TXT, crd, dynamodb).
pub fn adopts(adopt_from: Option<&str>, owner: &str, r: &extdns_endpoint::Endpoint) -> bool {
    r.adoptable_by(owner, adopt_from)
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

    #[test]
    fn a_contested_record_is_released_to_no_one() {
        let mut released = claim("b");
        released.insert(label::RELEASED_TO.to_string(), "a".to_string());
        for (x, y) in [(released.clone(), claim("c")), (claim("c"), released.clone())] {
            let Settled::Contested { labels, .. } = settle("a", x, y) else {
                panic!("b and c agree");
            };
            assert_eq!(labels.get(label::RELEASED_TO), None, "{labels:?}");
        }
        // One owner's claims agree: the release stands.
        let Settled::Agreed(labels) = settle("a", released.clone(), claim("b")) else {
            panic!("one owner");
        };
        assert_eq!(labels.get(label::RELEASED_TO).map(String::as_str), Some("a"));
    }
}
