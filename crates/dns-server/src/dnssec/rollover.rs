//! Rolling a zone's key (RFC 7583) without a moment where a validating resolver fails: the schedule as a
//! value ([`KeyRing`]: the current key, the incoming one, and where the roll is) that whoever keeps the
//! keys stores (the binary: in the key Secret, so every replica follows one schedule) and advances with
//! the clock ([`KeyRing::advance`]); the server is handed the keys to sign with ([`ZoneKeys`]).
//!
//! The method, for a CSK signed online (docs/dnssec.md): the new key is **pre-published** in the DNSKEY
//! set, which both keys sign from then on (the DNSKEY set is the one set a resolver validates from the
//! parent's DS, so whichever DS a resolver holds finds a signature it trusts); once every cache that holds
//! the DNSKEY set holds it with the new key (the DNSKEY TTL plus the propagation delay), the new key signs
//! the data instead of the old one and CDS/CDNSKEY name it; the parent's DS is then the operator's swap;
//! once the old key's data signatures are gone from caches (the largest TTL of the zone plus the
//! propagation delay) and the old DS is gone from caches (the parent's DS TTL plus the propagation delay
//! after the operator said it was swapped), the old key leaves the DNSKEY set. Double signatures are on
//! the DNSKEY set only, so answers do not double in size for the days a parent takes.

use std::fmt;
use std::str::FromStr;

use super::{DnssecError, ZoneKey};

/// The keys a zone signs with at one moment: `signer` signs every set and is what CDS and CDNSKEY name;
/// `standby`, during a rollover, is published in the DNSKEY set beside it and signs that set too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZoneKeys {
    /// Signs every set; named by CDS and CDNSKEY.
    pub signer: ZoneKey,
    /// The other key of a rollover: published, and signing the DNSKEY set only.
    pub standby: Option<ZoneKey>,
}

impl ZoneKeys {
    /// One key, no rollover.
    pub fn single(signer: ZoneKey) -> ZoneKeys {
        ZoneKeys { signer, standby: None }
    }
}

/// The waits of a rollover, in seconds (RFC 7583 §3.3's intervals, for this method).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RollTimings {
    /// The TTL the DNSKEY set is served with (the zone's `--dns-server-ttl`).
    pub dnskey_ttl: u64,
    /// The largest TTL of any set in the zone: how long a data signature by the old key may be cached.
    pub max_zone_ttl: u64,
    /// How long a change takes to be served everywhere: every replica reads the Secret, every
    /// secondary transfers the zone (the binary adds its Secret poll interval to it).
    pub propagation_delay: u64,
    /// The TTL of the DS record at the parent: how long a resolver may hold the old DS after the swap.
    pub parent_ds_ttl: u64,
}

impl RollTimings {
    /// From publication to signing (Ipub): every cache's DNSKEY set holds the new key.
    pub fn publish_wait(&self) -> u64 {
        self.dnskey_ttl.saturating_add(self.propagation_delay)
    }

    /// From the new key signing to the old key's removal (Iret): no cache holds a set signed only by
    /// the old key (the DNSKEY set's TTL counts too: it is a set like any other).
    pub fn retire_wait(&self) -> u64 {
        self.max_zone_ttl
            .max(self.dnskey_ttl)
            .saturating_add(self.propagation_delay)
    }

    /// From the DS swap at the parent to the old key's removal: no cache holds the old DS.
    pub fn ds_wait(&self) -> u64 {
        self.parent_ds_ttl.saturating_add(self.propagation_delay)
    }
}

/// Where a zone's rollover is, in seconds since the epoch, as it is kept (its text form is
/// `requested`, or `published=T`, then ` active=T`, then ` ds-swapped=T` added).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RollState {
    /// Asked for (by `extdns dnssec rollover`, or by hand in the Secret); no new key yet.
    Requested,
    /// The new key is published since `published`, signs since `active`, and the operator said the
    /// parent's DS names it since `ds_swapped`.
    Rolling {
        /// When the new key joined the DNSKEY set.
        published: u64,
        /// When it started signing the data.
        active: Option<u64>,
        /// When the operator said the parent's DS was swapped to it.
        ds_swapped: Option<u64>,
    },
}

impl fmt::Display for RollState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RollState::Requested => f.write_str("requested"),
            RollState::Rolling {
                published,
                active,
                ds_swapped,
            } => {
                write!(f, "published={published}")?;
                if let Some(active) = active {
                    write!(f, " active={active}")?;
                }
                if let Some(swapped) = ds_swapped {
                    write!(f, " ds-swapped={swapped}")?;
                }
                Ok(())
            }
        }
    }
}

impl FromStr for RollState {
    type Err = DnssecError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || DnssecError::RollState(s.trim().to_owned());
        if s.trim() == "requested" {
            return Ok(RollState::Requested);
        }
        let (mut published, mut active, mut ds_swapped) = (None, None, None);
        for field in s.split_whitespace() {
            let (key, value) = field.split_once('=').ok_or_else(bad)?;
            let value: u64 = value.parse().map_err(|_| bad())?;
            let slot = match key {
                "published" => &mut published,
                "active" => &mut active,
                "ds-swapped" => &mut ds_swapped,
                _ => return Err(bad()),
            };
            *slot = Some(value);
        }
        let published = published.ok_or_else(bad)?;
        if ds_swapped.is_some() && active.is_none() {
            return Err(bad());
        }
        Ok(RollState::Rolling {
            published,
            active,
            ds_swapped,
        })
    }
}

/// What one [`KeyRing::advance`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RollStep {
    /// A new key was made and published.
    Published,
    /// The new key signs the data and CDS/CDNSKEY name it: the parent's DS should be swapped to it.
    Active,
    /// The old key left the DNSKEY set: the rollover is over.
    Retired,
}

/// A zone's keys over time: the current key, the incoming key and the state of a rollover in progress.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRing {
    /// The key the parent's DS names when no rollover runs.
    pub current: ZoneKey,
    /// The incoming key, from publication to the end of the rollover.
    pub next: Option<ZoneKey>,
    /// The rollover in progress, if any.
    pub state: Option<RollState>,
    /// A rollover state written by hand that cannot be followed (not a state, or `requested` while an
    /// incoming key is kept: taking it would throw that key away, which may be the one signing): the
    /// rollover stands still, both keys published, until the value is fixed. Kept as written.
    pub held: Option<String>,
}

impl KeyRing {
    /// One key, no rollover.
    pub fn new(current: ZoneKey) -> KeyRing {
        KeyRing {
            current,
            next: None,
            state: None,
            held: None,
        }
    }

    /// The keys to sign with now. A held rollover publishes both keys, the DNSKEY set signed by both
    /// and the rest by the current key: that validates whichever key the parent's DS names, wherever the
    /// rollover was.
    pub fn keys(&self) -> ZoneKeys {
        if self.held.is_some() {
            return ZoneKeys {
                signer: self.current.clone(),
                standby: self.next.clone(),
            };
        }
        match (&self.state, &self.next) {
            (Some(RollState::Rolling { active: Some(_), .. }), Some(next)) => ZoneKeys {
                signer: next.clone(),
                standby: Some(self.current.clone()),
            },
            (Some(RollState::Rolling { active: None, .. }), Some(next)) => ZoneKeys {
                signer: self.current.clone(),
                standby: Some(next.clone()),
            },
            _ => ZoneKeys::single(self.current.clone()),
        }
    }

    /// Asks for a rollover; `false` when one is already asked for or running.
    pub fn request(&mut self) -> bool {
        if self.state.is_some() || self.held.is_some() {
            return false;
        }
        self.state = Some(RollState::Requested);
        true
    }

    /// Records that the parent's DS now names the new key (the operator's word), at `now`; refused
    /// before the new key signs (its DS at the parent would be premature: CDS does not name it yet).
    pub fn ds_swapped(&mut self, now: u64) -> Result<bool, DnssecError> {
        if self.held.is_some() {
            return Err(DnssecError::NotActive);
        }
        match &mut self.state {
            Some(RollState::Rolling {
                active: Some(_),
                ds_swapped,
                ..
            }) => {
                if ds_swapped.is_some() {
                    return Ok(false);
                }
                *ds_swapped = Some(now);
                Ok(true)
            }
            _ => Err(DnssecError::NotActive),
        }
    }

    /// Takes the rollover one step when its wait is over at `now` (seconds since the epoch), making the
    /// new key with `generate` when one is asked for; `None` when nothing was due.
    pub fn advance(
        &mut self,
        now: u64,
        timings: &RollTimings,
        generate: impl FnOnce() -> Result<ZoneKey, DnssecError>,
    ) -> Result<Option<RollStep>, DnssecError> {
        let Some(state) = self.state.filter(|_| self.held.is_none()) else {
            return Ok(None);
        };
        match state {
            RollState::Requested => {
                self.next = Some(generate()?);
                self.state = Some(RollState::Rolling {
                    published: now,
                    active: None,
                    ds_swapped: None,
                });
                Ok(Some(RollStep::Published))
            }
            // A state without its key (edited by hand): start again from the request.
            RollState::Rolling { .. } if self.next.is_none() => {
                self.state = Some(RollState::Requested);
                self.advance(now, timings, generate)
            }
            RollState::Rolling {
                published,
                active: None,
                ..
            } => {
                if now < published.saturating_add(timings.publish_wait()) {
                    return Ok(None);
                }
                self.state = Some(RollState::Rolling {
                    published,
                    active: Some(now),
                    ds_swapped: None,
                });
                Ok(Some(RollStep::Active))
            }
            RollState::Rolling {
                active: Some(active),
                ds_swapped: Some(swapped),
                ..
            } => {
                let retire_at = active
                    .saturating_add(timings.retire_wait())
                    .max(swapped.saturating_add(timings.ds_wait()));
                if now < retire_at {
                    return Ok(None);
                }
                let Some(next) = self.next.take() else {
                    return Ok(None);
                };
                self.current = next;
                self.state = None;
                Ok(Some(RollStep::Retired))
            }
            RollState::Rolling { ds_swapped: None, .. } => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dnssec::KeyAlgorithm;

    const TIMINGS: RollTimings = RollTimings {
        dnskey_ttl: 300,
        max_zone_ttl: 3_600,
        propagation_delay: 60,
        parent_ds_ttl: 86_400,
    };

    fn key() -> ZoneKey {
        ZoneKey::generate(KeyAlgorithm::EcdsaP256).expect("a key")
    }

    #[test]
    fn a_held_rollover_stands_still_with_both_keys_published() {
        let (old, new) = (key(), key());
        let mut ring = KeyRing {
            current: old.clone(),
            next: Some(new.clone()),
            state: Some(RollState::Requested),
            held: Some("requested".to_owned()),
        };
        let generate = || -> Result<ZoneKey, DnssecError> { panic!("a held rollover makes no key") };
        assert_eq!(ring.advance(1_000_000, &TIMINGS, generate).expect("advances"), None);
        assert_eq!(
            ring.keys(),
            ZoneKeys {
                signer: old,
                standby: Some(new.clone())
            },
            "the incoming key is kept, and published"
        );
        assert!(!ring.request());
        assert!(ring.ds_swapped(1).is_err());
        assert_eq!(ring.next, Some(new));
    }

    #[test]
    fn a_rollover_publishes_then_signs_then_waits_for_the_ds_then_retires() {
        let old = key();
        let new = key();
        let mut ring = KeyRing::new(old.clone());
        assert_eq!(
            ring.advance(0, &TIMINGS, || unreachable!()).ok(),
            Some(None),
            "nothing asked"
        );
        assert!(ring.request());
        assert!(!ring.request(), "one rollover at a time");
        assert!(ring.ds_swapped(1).is_err(), "no DS swap before the new key signs");

        let step = ring.advance(1_000, &TIMINGS, || Ok(new.clone())).expect("advances");
        assert_eq!(step, Some(RollStep::Published));
        let keys = ring.keys();
        assert_eq!(
            (keys.signer, keys.standby),
            (old.clone(), Some(new.clone())),
            "pre-published"
        );

        // The DNSKEY TTL plus the propagation delay: not a second earlier.
        assert_eq!(ring.advance(1_359, &TIMINGS, || unreachable!()).ok(), Some(None));
        assert_eq!(
            ring.advance(1_360, &TIMINGS, || unreachable!()).ok(),
            Some(Some(RollStep::Active))
        );
        let keys = ring.keys();
        assert_eq!(
            (keys.signer, keys.standby),
            (new.clone(), Some(old.clone())),
            "the new key signs"
        );

        // However long it takes, the old key stays until the operator says the DS is swapped.
        assert_eq!(ring.advance(10_000_000, &TIMINGS, || unreachable!()).ok(), Some(None));
        assert_eq!(ring.ds_swapped(2_000).ok(), Some(true));
        assert_eq!(ring.ds_swapped(2_500).ok(), Some(false), "the first word stands");
        // Then the parent's DS TTL plus the propagation delay after the swap.
        assert_eq!(
            ring.advance(2_000 + 86_459, &TIMINGS, || unreachable!()).ok(),
            Some(None)
        );
        assert_eq!(
            ring.advance(2_000 + 86_460, &TIMINGS, || unreachable!()).ok(),
            Some(Some(RollStep::Retired))
        );
        assert_eq!(ring, KeyRing::new(new));
    }

    #[test]
    fn the_old_key_stays_while_its_data_signatures_may_be_cached() {
        let mut ring = KeyRing {
            held: None,
            current: key(),
            next: Some(key()),
            state: Some(RollState::Rolling {
                published: 0,
                active: Some(1_000),
                ds_swapped: Some(1_001),
            }),
        };
        let timings = RollTimings {
            parent_ds_ttl: 10,
            ..TIMINGS
        };
        // The DS wait is over at 1 071, the largest TTL only at 1 000 + 3 600 + 60.
        assert_eq!(ring.advance(4_659, &timings, || unreachable!()).ok(), Some(None));
        assert_eq!(
            ring.advance(4_660, &timings, || unreachable!()).ok(),
            Some(Some(RollStep::Retired))
        );
    }

    #[test]
    fn the_state_reads_back_from_its_text_and_nonsense_is_refused() {
        for state in [
            RollState::Requested,
            RollState::Rolling {
                published: 5,
                active: None,
                ds_swapped: None,
            },
            RollState::Rolling {
                published: 5,
                active: Some(7),
                ds_swapped: Some(9),
            },
        ] {
            assert_eq!(state.to_string().parse::<RollState>().ok(), Some(state));
        }
        for bad in [
            "",
            "published",
            "published=x",
            "active=3",
            "published=1 ds-swapped=2",
            "soon",
        ] {
            assert!(bad.parse::<RollState>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_state_without_its_new_key_starts_again() {
        let mut ring = KeyRing {
            held: None,
            current: key(),
            next: None,
            state: Some(RollState::Rolling {
                published: 0,
                active: Some(1),
                ds_swapped: None,
            }),
        };
        let new = key();
        let step = ring.advance(50, &TIMINGS, || Ok(new.clone())).expect("advances");
        assert_eq!(step, Some(RollStep::Published));
        assert_eq!(ring.next, Some(new));
    }
}
