//! [`Uid`]: an object's `metadata.uid`, kept beside its key by the store so whatever reports on the object
//! (an Event, a DNSEndpoint status) names that very object without asking the API server for it.

use std::fmt;
use std::num::NonZeroU64;

/// An object's `metadata.uid`: the API server's UUID, held as its 128 bits rather than its 36 characters.
/// The store keeps one beside each object Events and status are written on, so a string would cost a heap
/// allocation per object; `Option<Uid>` is 16 bytes, no more than `Uid`.
///
/// Only the canonical form the API server writes (lower-case hex in 8-4-4-4-12 groups) is kept, as that is
/// the form [`Display`](fmt::Display) gives back byte for byte; anything else (an object read from a
/// manifest file with a hand-written uid) has no `Uid`, and its Events are recorded without one, as for an
/// object that is gone. A UUID whose first 64 bits are zero is not one the API server makes (its UUIDs are
/// random, version 4) and is not kept either: that zero is the niche that makes `Option<Uid>` free.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Uid {
    high: NonZeroU64,
    low: u64,
}

impl Uid {
    /// The uid `text` spells, if it is a UUID in the canonical form (see [`Uid`]).
    pub fn parse(text: &str) -> Option<Uid> {
        let bytes = text.as_bytes();
        if bytes.len() != 36 {
            return None;
        }
        let mut value: u128 = 0;
        for (i, &b) in bytes.iter().enumerate() {
            if matches!(i, 8 | 13 | 18 | 23) {
                if b != b'-' {
                    return None;
                }
                continue;
            }
            let digit = match b {
                b'0'..=b'9' => b - b'0',
                b'a'..=b'f' => b - b'a' + 10,
                _ => return None,
            };
            value = (value << 4) | u128::from(digit);
        }
        Some(Uid {
            high: NonZeroU64::new((value >> 64) as u64)?,
            low: value as u64,
        })
    }

    fn bits(self) -> u128 {
        (u128::from(self.high.get()) << 64) | u128::from(self.low)
    }
}

/// The canonical form, exactly as the API server wrote it.
impl fmt::Display for Uid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.bits();
        write!(
            f,
            "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
            v >> 96,
            (v >> 80) & 0xffff,
            (v >> 64) & 0xffff,
            (v >> 48) & 0xffff,
            v & 0xffff_ffff_ffff
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_canonical_uid_round_trips_byte_for_byte() {
        for text in [
            "3f2b7c1e-9a4d-4e0b-8c6f-0123456789ab",
            "ffffffff-ffff-4fff-bfff-ffffffffffff",
            "00000000-0000-0001-0000-000000000000",
        ] {
            assert_eq!(Uid::parse(text).map(|u| u.to_string()).as_deref(), Some(text));
        }
        assert_eq!(std::mem::size_of::<Option<Uid>>(), 16);
    }

    #[test]
    fn other_spellings_are_not_kept() {
        for text in [
            "",
            "web-uid",
            "3F2B7C1E-9A4D-4E0B-8C6F-0123456789AB",
            "3f2b7c1e9a4d4e0b8c6f0123456789ab",
            "3f2b7c1e-9a4d-4e0b-8c6f-0123456789a",
            "3f2b7c1e-9a4d-4e0b-8c6f_0123456789ab",
            "00000000-0000-0000-0000-000000000001",
        ] {
            assert_eq!(Uid::parse(text), None, "{text}");
        }
    }
}
