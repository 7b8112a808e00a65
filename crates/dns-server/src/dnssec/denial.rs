//! What a denial of RFC 9824's compact answers looks like, which rate limiting recognises in an answer
//! (`crate::rrl`): a name that does not exist answered NODATA with an NSEC at the name whose types are
//! RRSIG, NSEC and NXNAME. This server denies with its NSEC chain instead (signed when the zone is
//! written, [`super::ZoneSigning::relink`]), so no answer is signed per query.

use hickory_proto::rr::RecordType;
#[cfg(test)]
use hickory_proto::{
    dnssec::rdata::{DNSSECRData, NSEC},
    rr::{Name, RData},
};

/// The NXNAME meta type (RFC 9824 §3.2): "this name does not exist" in a compact answer's bitmap.
pub const NXNAME: RecordType = RecordType::Unknown(128);

/// A compact answer's NSEC at `owner` saying it holds `types` and nothing else: its next name is
/// `owner`'s first descendant, so it covers no other name. What another signer answers; for the tests
/// of what rate limiting makes of it.
#[cfg(test)]
pub(crate) fn at_name(owner: &Name, types: impl IntoIterator<Item = RecordType>) -> Option<RData> {
    let next = owner.prepend_label(&[0u8][..]).ok()?;
    Some(RData::DNSSEC(DNSSECRData::NSEC(NSEC::new_cover_self(next, types))))
}

/// A compact answer's NSEC for a name that does not exist.
#[cfg(test)]
pub(crate) fn nxname(owner: &Name) -> Option<RData> {
    at_name(owner, [NXNAME])
}
