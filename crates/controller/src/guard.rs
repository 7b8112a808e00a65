//! The deletion guard: a sync whose plan would delete too much of what extdns owns in a zone applies its
//! creates and updates but none of its deletes there.
//!
//! external-dns users have lost whole zones to one wrong flag, an upgrade that changed how annotations are
//! read, or a cluster view that was empty for a moment; the records come back only when someone notices.
//! A plan that deletes most of a zone is far more often a mistake than an intent, so extdns holds such deletes
//! back, says so loudly (log, metric) and keeps holding them back until the desired set recovers or the
//! operator raises the threshold (`percent = 100` turns the guard off).

use std::collections::BTreeMap;

use extdns_endpoint::{Change, Endpoint};

/// When the guard holds deletes back (`--deletion-guard-percent`, `--deletion-guard-min`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeletionGuard {
    /// Deletes above this share (in percent) of the owned records of a zone are held back; 100 never holds.
    pub percent: u8,
    /// Fewer deletes than this in a zone are never held back, so small zones can still be emptied.
    pub min: usize,
}

impl Default for DeletionGuard {
    fn default() -> Self {
        DeletionGuard { percent: 50, min: 10 }
    }
}

impl DeletionGuard {
    /// A guard that holds back deletes above `percent` of a zone's owned records once at least `min` would go.
    pub fn new(percent: u8, min: usize) -> Self {
        DeletionGuard { percent, min }
    }

    /// 100 % turns the guard off (`--deletion-guard-percent=100`).
    pub fn is_enabled(&self) -> bool {
        self.percent < 100
    }

    /// What the guard says of a plan: the zones whose deletes it holds back. `zones` are the provider's
    /// zones (records in none of them count under the empty zone name), `owner_id` whose records count as
    /// owned (empty: every record, as with the noop registry).
    pub fn check(&self, zones: &[String], owner_id: &str, current: &[Endpoint], changes: &[Change]) -> Verdict {
        let mut owned = OwnedCounts::default();
        owned.ensure(zones, owner_id, current);
        self.check_counted(&owned, changes)
    }

    /// [`check`](Self::check) against records counted beforehand.
    pub(crate) fn check_counted(&self, owned: &OwnedCounts, changes: &[Change]) -> Verdict {
        let zones = owned.zones();
        let mut counts: BTreeMap<&str, ZoneCount> = BTreeMap::new();
        for z in zones {
            counts.entry(z.as_str()).or_default();
        }
        for (zone, n) in &owned.owned {
            counts.entry(zone.as_str()).or_default().owned += n;
        }
        for c in changes {
            if let Change::Delete(e) = c {
                counts.entry(zone_of(zones, &e.dns_name)).or_default().deletes += 1;
            }
        }
        let mut verdict = Verdict::default();
        for (zone, count) in counts {
            let blocked = self.is_enabled()
                && count.deletes >= self.min.max(1)
                && count.deletes * 100 > usize::from(self.percent) * count.owned;
            verdict.zones.push(ZoneVerdict {
                zone: zone.to_string(),
                deletes: count.deletes,
                owned: count.owned,
                blocked,
            });
        }
        verdict
    }
}

/// The records extdns owns, per zone: what the guard weighs a plan's deletes against. Counted once per read
/// of every zone and then kept up to date with each write folded into the cached records, so that an
/// incremental sync does not count every record again.
#[derive(Debug, Default)]
pub(crate) struct OwnedCounts {
    /// The zones and the owner id counted for; `None` until counted.
    basis: Option<(Vec<String>, String)>,
    /// Zone name → records owned there, zones with none left out.
    owned: BTreeMap<String, usize>,
}

impl OwnedCounts {
    /// Counts `records` unless they were counted for these zones and this owner id already (a provider's
    /// zones can change between reads).
    pub(crate) fn ensure(&mut self, zones: &[String], owner_id: &str, records: &[Endpoint]) {
        if self
            .basis
            .as_ref()
            .is_some_and(|(z, o)| z.as_slice() == zones && o == owner_id)
        {
            return;
        }
        self.basis = Some((zones.to_vec(), owner_id.to_string()));
        self.owned.clear();
        self.add(records);
    }

    /// Counting must start again from every record (they were read again).
    pub(crate) fn reset(&mut self) {
        *self = OwnedCounts::default();
    }

    fn zones(&self) -> &[String] {
        self.basis.as_ref().map_or(&[], |(z, _)| z.as_slice())
    }

    /// Every record counted, over all zones.
    pub(crate) fn total(&self) -> usize {
        self.owned.values().sum()
    }

    /// Counts `records` in.
    pub(crate) fn add<'r>(&mut self, records: impl IntoIterator<Item = &'r Endpoint>) {
        let Some((zones, owner_id)) = &self.basis else {
            return;
        };
        for e in records.into_iter().filter(|e| owns(owner_id, e)) {
            let zone = zone_of(zones, &e.dns_name);
            match self.owned.get_mut(zone) {
                Some(n) => *n += 1,
                None => {
                    self.owned.insert(zone.to_string(), 1);
                }
            }
        }
    }

    /// Counts `records` out (they were replaced or deleted).
    pub(crate) fn remove<'r>(&mut self, records: impl IntoIterator<Item = &'r Endpoint>) {
        let Some((zones, owner_id)) = &self.basis else {
            return;
        };
        for e in records.into_iter().filter(|e| owns(owner_id, e)) {
            let zone = zone_of(zones, &e.dns_name);
            if let Some(n) = self.owned.get_mut(zone) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    self.owned.remove(zone);
                }
            }
        }
    }
}

/// Whether `owner_id` owns `e` (an empty owner id owns every record, as with the noop registry).
fn owns(owner_id: &str, e: &Endpoint) -> bool {
    owner_id.is_empty() || e.owner() == Some(owner_id)
}

#[derive(Debug, Default, Clone, Copy)]
struct ZoneCount {
    owned: usize,
    deletes: usize,
}

/// The guard's view of one zone in one sync.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZoneVerdict {
    /// The zone name; empty for records in none of the provider's zones.
    pub zone: String,
    /// Deletes the plan wanted in the zone.
    pub deletes: usize,
    /// Records extdns owns in the zone.
    pub owned: usize,
    /// Whether the deletes are held back.
    pub blocked: bool,
}

/// The guard's view of one sync, every zone it saw.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verdict {
    /// One verdict per zone the plan touches.
    pub zones: Vec<ZoneVerdict>,
}

impl Verdict {
    /// The zones whose deletes are held back.
    pub fn blocked(&self) -> impl Iterator<Item = &ZoneVerdict> {
        self.zones.iter().filter(|z| z.blocked)
    }

    /// Whether the guard holds back the deletion of `e`.
    pub fn holds(&self, zones: &[String], e: &Endpoint) -> bool {
        let zone = zone_of(zones, &e.dns_name);
        self.blocked().any(|z| z.zone == zone)
    }
}

/// The longest of `zones` that `name` lies in (at a label boundary, ignoring case and a trailing dot), or
/// the empty zone.
fn zone_of<'z>(zones: &'z [String], name: &str) -> &'z str {
    let name = name.trim_end_matches('.');
    zones
        .iter()
        .map(|z| z.trim_end_matches('.'))
        .filter(|z| {
            name.len() >= z.len() && {
                let cut = name.len() - z.len();
                name.is_char_boundary(cut)
                    && name[cut..].eq_ignore_ascii_case(z)
                    && (cut == 0 || name.as_bytes()[cut - 1] == b'.')
            }
        })
        .max_by_key(|z| z.len())
        .unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;
    use extdns_endpoint::{RecordType, label};

    fn owned(name: &str) -> Endpoint {
        Endpoint::new(name, RecordType::A, ["192.0.2.1"]).with_label(label::OWNER, "me")
    }

    fn zone_records(zone: &str, n: usize) -> Vec<Endpoint> {
        (0..n).map(|i| owned(&format!("r{i}.{zone}"))).collect()
    }

    fn deletes(records: &[Endpoint], n: usize) -> Vec<Change> {
        records.iter().take(n).cloned().map(Change::Delete).collect()
    }

    /// `guard`'s verdict on deleting `deleted` of the `owned` records of example.org.
    fn verdict(guard: DeletionGuard, owned: usize, deleted: usize) -> Verdict {
        let current = zone_records("example.org", owned);
        let zones = ["example.org".to_string()];
        guard.check(&zones, "me", &current, &deletes(&current, deleted))
    }

    #[test]
    fn deleting_most_of_a_zone_is_held_back() {
        let v = verdict(DeletionGuard::default(), 20, 20);
        let blocked: Vec<_> = v.blocked().collect();
        assert_eq!(blocked.len(), 1);
        assert_eq!(
            (blocked[0].zone.as_str(), blocked[0].deletes, blocked[0].owned),
            ("example.org", 20, 20)
        );
    }

    #[test]
    fn a_few_deletes_pass() {
        assert_eq!(verdict(DeletionGuard::default(), 20, 2).blocked().count(), 0);
    }

    #[test]
    fn small_zones_can_be_emptied_below_the_minimum() {
        assert_eq!(verdict(DeletionGuard::default(), 9, 9).blocked().count(), 0);
    }

    #[test]
    fn a_hundred_percent_disables_the_guard() {
        assert_eq!(verdict(DeletionGuard::new(100, 10), 20, 20).blocked().count(), 0);
    }

    #[test]
    fn zones_are_judged_apart_and_only_owned_records_count() {
        let mut current = zone_records("a.example", 20);
        current.extend(zone_records("b.example", 20));
        current.extend((0..100).map(|i| Endpoint::new(&format!("foreign{i}.b.example"), RecordType::A, ["192.0.2.9"])));
        let zones = ["a.example".to_string(), "b.example".to_string()];
        let mut changes = deletes(&current[..20], 15);
        changes.extend(deletes(&current[20..40], 5));
        let v = DeletionGuard::default().check(&zones, "me", &current, &changes);
        let blocked: Vec<&str> = v.blocked().map(|z| z.zone.as_str()).collect();
        assert_eq!(blocked, ["a.example"]);
        assert!(v.holds(&zones, &owned("r1.a.example")));
        assert!(!v.holds(&zones, &owned("r1.b.example")));
    }

    #[test]
    fn names_belong_to_their_longest_zone_on_label_boundaries() {
        let zones = ["example.org".to_string(), "k8s.example.org".to_string()];
        assert_eq!(zone_of(&zones, "a.k8s.example.org"), "k8s.example.org");
        assert_eq!(zone_of(&zones, "a.example.org."), "example.org");
        assert_eq!(zone_of(&zones, "notexample.org"), "");
    }
}
