//! Authenticated denial, answered online with the fewest names an NSEC record can cover (RFC 9824's
//! compact answers): no chain over the zone is kept, so a write never re-links neighbours, and no answer
//! tells a walker what else the zone holds.
//!
//! - A name that does not exist is answered NODATA with an NSEC at the name itself whose next name is
//!   its first descendant (`\000.<name>`) and whose types are RRSIG, NSEC and NXNAME (RFC 9824 §3.2).
//! - A name or wildcard without the type asked gets an NSEC at the name asked with the types present.
//! - A wildcard answer proves the name asked does not exist by an NSEC covering only the next closer name
//!   and what lies below it (RFC 4470's epsilon functions, from its immediate predecessor to its next
//!   sibling), so the closest encloser a validator reads off it is the wildcard's.

use hickory_proto::dnssec::rdata::{DNSSECRData, NSEC};
use hickory_proto::rr::{Name, RData, RecordType};

/// The NXNAME meta type (RFC 9824 §3.2): "this name does not exist" in a compact answer's bitmap.
pub const NXNAME: RecordType = RecordType::Unknown(128);

/// The largest label (RFC 1035 §2.3.4).
const MAX_LABEL: usize = 63;

/// The largest name on the wire (RFC 1035 §2.3.4).
const MAX_NAME: usize = 255;

/// The NSEC at `owner` saying it holds `types` and nothing else: its next name is `owner`'s first
/// descendant, so it covers no other name.
pub(crate) fn at_name(owner: &Name, types: impl IntoIterator<Item = RecordType>) -> Option<RData> {
    let next = owner.prepend_label(&[0u8][..]).ok()?;
    Some(nsec(next, types))
}

/// The compact answer's NSEC for a name that does not exist.
pub(crate) fn nxname(owner: &Name) -> Option<RData> {
    at_name(owner, [NXNAME])
}

/// The owner and data of an NSEC covering `next_closer` and everything below it, and no other name:
/// from the greatest name before it to the least sibling after it. `None` in the corner cases the epsilon
/// functions cannot serve (a label of 63 octets, a label of only `\000`).
pub(crate) fn covering(next_closer: &Name) -> Option<(Name, RData)> {
    let label = next_closer.iter().next()?.to_ascii_lowercase();
    let parent = next_closer.base_name();
    let before = predecessor_label(&label)?;
    if label.len() >= MAX_LABEL {
        return None;
    }
    let mut after = label.clone();
    after.push(0);
    let owner = greatest_below(Name::from_labels([before.as_slice()]).ok()?.append_name(&parent).ok()?)?;
    let next = Name::from_labels([after.as_slice()]).ok()?.append_name(&parent).ok()?;
    Some((owner, nsec(next, [])))
}

fn nsec(next: Name, types: impl IntoIterator<Item = RecordType>) -> RData {
    RData::DNSSEC(DNSSECRData::NSEC(NSEC::new_cover_self(next, types)))
}

/// The greatest label sorting before `label` in canonical order (RFC 4034 §6.1: octets compared with
/// upper case letters lowered): the last octet one less (below the upper-case letters, which sort as
/// lower case) and padded with 0xff to the longest label; a trailing `\000` is simply dropped.
fn predecessor_label(label: &[u8]) -> Option<Vec<u8>> {
    let (&last, head) = label.split_last()?;
    let mut out = head.to_vec();
    if last == 0 {
        // `ab` sorts right before `ab\000`; an empty label is the parent itself, which has data of its own.
        return (!out.is_empty()).then_some(out);
    }
    let lowered = last - 1;
    out.push(if lowered.is_ascii_uppercase() {
        b'A' - 1
    } else {
        lowered
    });
    out.resize(MAX_LABEL, 0xff);
    Some(out)
}

/// The greatest name at or below `name`: `name` with labels of 0xff octets put in front up to the longest
/// name a wire carries.
fn greatest_below(mut name: Name) -> Option<Name> {
    loop {
        // A name's wire length: each label and its length octet, and the root's octet.
        let room = MAX_NAME.checked_sub(name.len() + 1)?;
        if room < 2 {
            return Some(name);
        }
        let fill = vec![0xffu8; (room - 1).min(MAX_LABEL)];
        name = name.prepend_label(fill.as_slice()).ok()?;
    }
}

#[cfg(test)]
mod tests {
    use std::cmp::Ordering;

    use super::*;

    fn name(s: &str) -> Name {
        Name::from_ascii(s).expect("test name")
    }

    #[test]
    fn a_covering_nsec_covers_the_next_closer_and_below_and_shares_only_the_parent() {
        let nc = name("Anything.wild.example.org.");
        let (owner, data) = covering(&nc).expect("covers");
        let RData::DNSSEC(DNSSECRData::NSEC(nsec)) = data else {
            panic!("an NSEC");
        };
        let next = nsec.next_domain_name();
        assert_eq!(owner.cmp(&nc), Ordering::Less);
        assert_eq!(next.cmp(&nc), Ordering::Greater);
        let below = name("x.anything.wild.example.org.");
        assert_eq!(owner.cmp(&below), Ordering::Less);
        assert_eq!(next.cmp(&below), Ordering::Greater);
        // Neighbours stay uncovered, the wildcard itself among them.
        for other in [
            "anythinf.wild.example.org.",
            "anythinga.wild.example.org.",
            "*.wild.example.org.",
        ] {
            let other = name(other);
            let inside = owner.cmp(&other) == Ordering::Less && next.cmp(&other) == Ordering::Greater;
            assert!(!inside, "{other} covered");
        }
        assert!(owner.len() < MAX_NAME && name("wild.example.org.").zone_of(&owner));
        assert_eq!(next.base_name(), name("wild.example.org."));
        assert!(
            nsec.type_bit_maps()
                .all(|t| matches!(t, RecordType::NSEC | RecordType::RRSIG))
        );
    }

    #[test]
    fn the_predecessor_never_lands_on_an_upper_case_letter() {
        assert_eq!(predecessor_label(b"[").map(|l| l[0]), Some(b'@'));
        assert_eq!(
            predecessor_label(b"b").map(|l| (l[0], l.len())),
            Some((b'a', MAX_LABEL))
        );
        assert_eq!(predecessor_label(b"ab\0"), Some(b"ab".to_vec()));
        assert_eq!(predecessor_label(b"\0"), None);
    }

    #[test]
    fn a_compact_answer_names_nxname_and_covers_nothing_else() {
        let owner = name("nope.example.org.");
        let Some(RData::DNSSEC(DNSSECRData::NSEC(nsec))) = nxname(&owner) else {
            panic!("an NSEC");
        };
        let next = nsec.next_domain_name();
        assert_eq!(next.iter().next(), Some(&[0u8][..]));
        assert_eq!(next.base_name(), owner);
        let types: Vec<RecordType> = nsec.type_bit_maps().collect();
        assert!(types.contains(&NXNAME) && types.contains(&RecordType::NSEC) && !types.contains(&RecordType::A));
    }
}
