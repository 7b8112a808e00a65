//! Signatures renewed before they expire: a task of the server wakes every [`RENEW_EVERY`], finds the
//! sets whose signatures have less than half their validity left under the read lock, and signs them
//! again under the write lock a batch at a time, so no moment re-signs a whole zone and queries wait at
//! most for one batch.
//!
//! A zone whose keys change while the server runs (a rollover's step, `DnssecConfig::updates`) gets its
//! key sets published anew at once ([`rekey`]); its other sets, signed by the old keys, are re-signed
//! right after, batch after batch with the lock let go between them, not at the next minute: both keys
//! stay published for much longer than that (docs/dnssec.md).

use std::sync::Arc;
use std::time::Duration;

use hickory_proto::rr::{LowerName, Name, RecordType};
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use crate::dnssec::{DnssecError, ZoneKeys};
use crate::zones::{Zone, Zones};

/// How often the server looks for signatures to renew: a minute, small beside days of validity.
pub const RENEW_EVERY: Duration = Duration::from_secs(60);

/// Sets re-signed per zone in one pass of [`renew`], so a pass holds the write lock briefly.
pub const RENEW_BATCH: usize = 512;

/// Re-signs, in every signed zone, up to [`RENEW_BATCH`] sets whose signatures are due at `now`; returns
/// how many. The due sets are found under the read lock, and signed under the write lock a batch at a
/// time, so queries wait at most for one batch.
///
/// A zone that reached a new round ([`ZoneSigning::round`](crate::dnssec::ZoneSigning::round)) enters
/// it once its due sets are all re-signed (in this pass, or in the last of the passes a round of more
/// than a batch takes): its serial moves on once (`Zone::renewed`) and the secondaries are notified,
/// so they transfer the new signatures rather than keep the old ones until those expire. A pass that
/// finds no new round moves no serial.
pub fn renew(zones: &Zones, now: u32) -> usize {
    let work: Vec<_> = {
        let set = zones.read();
        set.zones()
            .iter()
            .enumerate()
            .filter_map(|(i, z)| z.signing().map(|s| (i, s.due(now, RENEW_BATCH), s.round(now))))
            .filter(|(_, due, round)| !due.is_empty() || round.is_some())
            .collect()
    };
    if work.is_empty() {
        return 0;
    }
    let mut renewed = 0;
    let mut moved = false;
    {
        let mut set = zones.write();
        for (index, sets, round) in &work {
            let Some(zone) = set.zones_mut().get_mut(*index) else {
                continue;
            };
            renewed += resign_listed(zone, sets, now);
            // A full batch may leave more of the round's sets due: the round is entered after the last.
            if let Some(round) = round.filter(|_| sets.len() < RENEW_BATCH) {
                moved |= zone.renewed(round, now);
            }
        }
    }
    if moved {
        zones.changed();
    }
    debug!(renewed, moved, "signatures renewed");
    renewed
}

/// Signs `sets` of `zone` again at `now` (under the write lock its caller holds); how many still existed
/// and were still due. The listing was made under the read lock: another pass may have re-signed a set
/// since, and signing it again would be wasted work and a needless change of its signature.
fn resign_listed(zone: &mut Zone, sets: &[(LowerName, RecordType)], now: u32) -> usize {
    let mut renewed = 0;
    for (owner, record_type) in sets {
        if !zone.signing().is_some_and(|s| s.still_due(owner, *record_type, now)) {
            continue;
        }
        match zone.resign(owner, *record_type, now) {
            Ok(true) => renewed += 1,
            Ok(false) => {}
            Err(e) => warn!(zone = %zone.origin(), %owner, ?record_type, error = %e, "cannot renew a signature"),
        }
    }
    renewed
}

/// Signs the zone at `origin` with `keys` from `now` on: its DNSKEY, CDS and CDNSKEY sets published
/// anew and signed, a new serial (secondaries are notified); the other sets are left for [`renew`], which
/// finds them due. `false` when no signed zone has that origin.
pub fn rekey(zones: &Zones, origin: &Name, keys: &ZoneKeys, now: u32) -> Result<bool, DnssecError> {
    {
        let mut set = zones.write();
        let origin = LowerName::new(origin);
        let Some(zone) = set
            .zones_mut()
            .iter_mut()
            .find(|z| z.lower_origin() == &origin && z.signing().is_some())
        else {
            return Ok(false);
        };
        zone.set_keys(keys, now)?;
    }
    zones.changed();
    Ok(true)
}

/// [`rekey`]s the zone at `origin` at `now`, then re-signs the sets the old keys signed
/// ([`resign_after_rekey`]); how many sets were re-signed.
pub async fn rekey_and_resign(zones: &Zones, origin: &Name, keys: &ZoneKeys, now: u32) -> Result<usize, DnssecError> {
    if !rekey(zones, origin, keys, now)? {
        return Ok(0);
    }
    Ok(resign_after_rekey(zones, origin, now).await)
}

/// Re-signs the sets of the zone at `origin` that a rekey at `now` left due, a batch at a time, the lock
/// let go (and the task yielding) between batches, then moves the serial on once, so secondaries
/// transfer the zone and drop the old key's signatures (the batches themselves move no serial: one per
/// batch would be a transfer per batch). How many sets were re-signed.
///
/// The due sets are listed once, from the snapshot right after the rekey: listing them again before
/// each batch would walk past every set already re-signed, a walk of the zone per batch.
async fn resign_after_rekey(zones: &Zones, origin: &Name, now: u32) -> usize {
    let origin = LowerName::new(origin);
    let Some((index, due)) = zones.read().zones().iter().enumerate().find_map(|(i, z)| {
        let due = z
            .signing()
            .filter(|_| z.lower_origin() == &origin)?
            .due(now, usize::MAX);
        Some((i, due))
    }) else {
        return 0;
    };
    let mut resigned = 0;
    for batch in due.chunks(RENEW_BATCH) {
        {
            let mut set = zones.write();
            let Some(zone) = set.zones_mut().get_mut(index) else {
                break;
            };
            resigned += resign_listed(zone, batch, crate::dnssec::now());
        }
        tokio::task::yield_now().await;
    }
    if resigned > 0 {
        if let Some(zone) = zones.write().zones_mut().get_mut(index) {
            zone.commit(crate::dnssec::now(), Vec::new(), Vec::new());
        }
        zones.changed();
    }
    resigned
}

/// The first wait before a rekey that failed is tried again; doubled after each failure, up to
/// [`RENEW_EVERY`].
const REKEY_RETRY: Duration = Duration::from_secs(1);

/// Follows the key changes of the zone at `origin` until `shutdown`: each change is [`rekey`]ed (tried
/// again with backoff while it fails, or until newer keys come), then the sets the old keys signed are
/// re-signed ([`resign_after_rekey`]).
async fn follow_keys(zones: Arc<Zones>, origin: Name, updates: watch::Receiver<ZoneKeys>, shutdown: CancellationToken) {
    follow_keys_with(zones, origin, updates, shutdown, rekey, REKEY_RETRY).await;
}

/// [`follow_keys`] with the rekey and the first retry wait given: what the tests of a failing rekey
/// need.
async fn follow_keys_with(
    zones: Arc<Zones>,
    origin: Name,
    mut updates: watch::Receiver<ZoneKeys>,
    shutdown: CancellationToken,
    mut rekey: impl FnMut(&Zones, &Name, &ZoneKeys, u32) -> Result<bool, DnssecError>,
    first_retry: Duration,
) {
    'updates: loop {
        tokio::select! {
            () = shutdown.cancelled() => return,
            changed = updates.changed() => {
                if changed.is_err() {
                    return;
                }
            }
        }
        let mut keys = updates.borrow_and_update().clone();
        let mut wait = first_retry;
        let now = loop {
            let now = crate::dnssec::now();
            let e = match rekey(&zones, &origin, &keys, now) {
                Ok(true) => break now,
                // No such signed zone: nothing to re-sign, no serial to move.
                Ok(false) => continue 'updates,
                Err(e) => e,
            };
            // The keys were taken from the watch: unless tried again here, this replica would never
            // sign with them (the keeper does not send the same keys twice).
            warn!(zone = %origin, error = %e, retry_in = ?wait, "cannot sign with the zone's new keys; trying again");
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = tokio::time::sleep(wait) => {}
                changed = updates.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    keys = updates.borrow_and_update().clone();
                }
            }
            wait = (wait * 2).min(RENEW_EVERY);
        };
        let resigned = resign_after_rekey(&zones, &origin, now).await;
        info!(
            zone = %origin,
            signer = keys.signer.key_tag().ok(),
            standby = keys.standby.as_ref().and_then(|k| k.key_tag().ok()),
            resigned,
            "the zone signs with its new keys"
        );
    }
}

/// Renews signatures every `every` until `shutdown`, and follows each zone's key changes.
pub async fn renew_until(zones: Arc<Zones>, every: Duration, shutdown: CancellationToken) {
    let updates: Vec<(Name, watch::Receiver<ZoneKeys>)> = zones
        .read()
        .zones()
        .iter()
        .filter_map(|z| Some((z.origin().clone(), z.config().dnssec.as_ref()?.updates.clone()?)))
        .collect();
    let mut followers = JoinSet::new();
    for (origin, receiver) in updates {
        followers.spawn(follow_keys(zones.clone(), origin, receiver, shutdown.clone()));
    }
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = shutdown.cancelled() => return,
            _ = tick.tick() => {
                let now = crate::dnssec::now();
                renew(&zones, now);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use hickory_proto::dnssec::rdata::DNSSECRData;
    use hickory_proto::op::{Edns, Message, MessageType, OpCode, Query};
    use hickory_proto::rr::{RData, RecordType};

    use super::*;
    use crate::answer::respond;
    use crate::answer::tests::{a, name, set};
    use crate::config::Limits;
    use crate::dnssec::{DnssecConfig, KeyAlgorithm, ZoneKey};
    use crate::metrics::Transport;
    use crate::zones::tests::zone_config;

    fn key() -> ZoneKey {
        ZoneKey::generate(KeyAlgorithm::EcdsaP256).expect("a key")
    }

    fn tag(key: &ZoneKey) -> u16 {
        key.key_tag().expect("a key tag")
    }

    /// The answer to `qname TYPE` with DO set, over TCP.
    fn signed_answer(zones: &Zones, qname: &str, qtype: RecordType) -> Message {
        let mut m = Message::new(7, MessageType::Query, OpCode::Query);
        m.add_query(Query::query(name(qname), qtype));
        let mut edns = Edns::new();
        edns.set_dnssec_ok(true);
        m.set_edns(edns);
        respond(&zones.read(), &m, Transport::Tcp, u16::MAX)
    }

    /// The records of the answer to `qname TYPE` with DO set: the key tags of its RRSIGs, sorted, and how
    /// many records of the type itself.
    fn answer(zones: &Zones, qname: &str, qtype: RecordType) -> (Vec<u16>, usize) {
        let r = signed_answer(zones, qname, qtype);
        let mut tags: Vec<u16> = r
            .answers
            .iter()
            .filter_map(|r| match &r.data {
                RData::DNSSEC(DNSSECRData::RRSIG(sig)) => Some(sig.input().key_tag),
                _ => None,
            })
            .collect();
        tags.sort_unstable();
        let records = r.answers.iter().filter(|r| r.record_type() == qtype).count();
        (tags, records)
    }

    fn sorted(mut tags: Vec<u16>) -> Vec<u16> {
        tags.sort_unstable();
        tags
    }

    /// A signed example.org. of `names` hosts, each an A set.
    fn hosts(names: usize, key: &ZoneKey) -> (Zones, Name) {
        hosts_with(names, key, Limits::default())
    }

    /// [`hosts`] with the limits given.
    fn hosts_with(names: usize, key: &ZoneKey, limits: Limits) -> (Zones, Name) {
        let mut config = zone_config("example.org.");
        config.dnssec = Some(DnssecConfig::new(key.clone()));
        let origin = config.origin.clone();
        let zones = Zones::new(&[config], 7, limits);
        {
            let mut all = zones.write();
            let zone = all.zone_for_mut(&LowerName::new(&origin)).expect("zone");
            for n in 0..names {
                zone.put(&name(&format!("host{n}.example.org.")), set(vec![a("192.0.2.1")]));
            }
        }
        (zones, origin)
    }

    /// The inception and expiration of the RRSIGs of `qname TYPE`, as served.
    fn windows(zones: &Zones, qname: &str, qtype: RecordType) -> Vec<(u32, u32)> {
        signed_answer(zones, qname, qtype)
            .answers
            .iter()
            .filter_map(|r| match &r.data {
                RData::DNSSEC(DNSSECRData::RRSIG(sig)) => {
                    Some((sig.input().sig_inception.get(), sig.input().sig_expiration.get()))
                }
                _ => None,
            })
            .collect()
    }

    fn serial(zones: &Zones) -> u32 {
        zones.read().zones()[0].serial()
    }

    #[test]
    fn a_renewal_pass_moves_the_serial_once_to_the_one_every_replica_gives_it_and_an_idle_pass_not() {
        let key = key();
        // Two replicas (serials settling, as by default) holding the same records, signed apart.
        let (one, _) = hosts(40, &key);
        let (two, _) = hosts(40, &key);
        let now = crate::dnssec::now();
        let (period, slot) = {
            let set = one.read();
            let signing = set.zones()[0].signing().expect("signed");
            (signing.renewal_period(), signing.renewal_slot())
        };
        let first = windows(&one, "host3.example.org.", RecordType::A);
        assert_eq!(
            first,
            windows(&two, "host3.example.org.", RecordType::A),
            "the same validity window on both"
        );
        let (before, writes) = (serial(&one), one.subscribe());
        let counted = *writes.borrow();
        assert_eq!(renew(&one, now), 0, "nothing due");
        assert_eq!(
            (serial(&one), *writes.borrow()),
            (before, counted),
            "an idle pass moves nothing"
        );

        // A period on, every set's instant has come: each replica renews (at its own minute, both in
        // one slot) and moves its serial once, to the same serial. One serial span (10 s) past the slot's
        // boundary, which may be the round's instant: a replica entering a round within the round's own
        // span takes a provisional serial instead (settled later, alike on both), not this test's case.
        let later = (now / slot + 1) * slot + period + 10;
        assert!(later + 50 < (later / slot + 1) * slot, "every pass in one slot");
        let renewed = renew(&one, later);
        assert!(renewed >= 40, "{renewed}");
        assert_eq!(*writes.borrow() - counted, 1, "secondaries are told once");
        let moved = serial(&one);
        assert!(crate::serial::after(moved, before), "{moved} after {before}");
        assert_eq!(renew(&one, later + 30), 0, "renewed ones are not due again");
        assert_eq!(
            (serial(&one), *writes.borrow() - counted),
            (moved, 1),
            "an idle pass moves nothing"
        );
        assert_eq!(renew(&two, later + 50), renewed);
        assert_eq!(serial(&two), moved, "the same records, the same round: the same serial");
        let (old, new) = (
            windows(&one, "host3.example.org.", RecordType::A),
            windows(&two, "host3.example.org.", RecordType::A),
        );
        assert_eq!(old, new, "the same renewed window on both");
        // Whole periods on, to the set's latest instant at or before the pass: one period, or two when
        // the set's own instant fell in the slot between `now` and the one `later` starts from.
        let shift = new[0].1.wrapping_sub(first[0].1);
        assert_eq!(new[0].0.wrapping_sub(first[0].0), shift, "the whole window moves");
        assert!(
            shift % period == 0 && (1..=2).contains(&(shift / period)),
            "{shift} s on"
        );
        let instant = new[0].0 + crate::dnssec::INCEPTION_SKEW;
        assert!(
            instant <= later && later < instant + period,
            "{instant} is the latest instant by {later}"
        );
    }

    #[test]
    fn a_round_with_nothing_due_here_moves_the_serial_as_on_the_replica_that_renewed() {
        let key = key();
        let (one, _) = hosts(3, &key);
        let (two, _) = hosts(3, &key);
        let period = one.read().zones()[0].signing().expect("signed").renewal_period();
        let later = crate::dnssec::now() + period;
        // Replica two re-signed everything just after the instants (a write just after them, say);
        // replica one still holds the signatures of the period before.
        let owners: Vec<(LowerName, RecordType)> =
            two.read().zones()[0].signing().expect("signed").due(later, usize::MAX);
        for (owner, record_type) in owners {
            two.sign_again_at(&Name::from(owner), record_type, later);
        }
        assert!(
            two.read().zones()[0]
                .signing()
                .expect("signed")
                .due(later, usize::MAX)
                .is_empty()
        );
        assert!(renew(&one, later) > 0);
        assert_eq!(renew(&two, later), 0, "nothing due here");
        assert_eq!(serial(&two), serial(&one), "the round moved both alike");
    }

    #[test]
    fn a_write_to_a_large_signed_zone_copies_a_few_signature_shards_not_every_signature() {
        let (zones, origin) = hosts(5_000, &key());
        let before = zones.read();
        {
            let mut all = zones.write();
            let zone = all.zone_for_mut(&LowerName::new(&origin)).expect("zone");
            zone.put(&name("new.example.org."), set(vec![a("192.0.2.9")]));
            zone.commit(crate::dnssec::now(), vec![], vec![]);
        }
        let after = zones.read();
        let signing = |set: &crate::zones::ZoneSet| set.zones()[0].signing().cloned().expect("signed");
        let (shared, all) = signing(&after).shared_signature_shards(&signing(&before));
        // The signatures' 1,024 shards and the chain's chunks: the new set's and SOA's signatures, and
        // two NSECs (one chunk, or two split from one).
        assert!(all > 1_024, "{all} shards and chunks");
        assert!(shared + 4 >= all, "{shared} of {all} shards and chunks shared");
    }

    #[tokio::test]
    async fn a_rekey_re_signs_every_set_and_nsec_listed_once() {
        let (old, new) = (key(), key());
        let (zones, origin) = hosts(2 * RENEW_BATCH + 3, &old);
        let keys = ZoneKeys {
            signer: new.clone(),
            standby: Some(old),
        };
        let now = crate::dnssec::now();
        let resigned = rekey_and_resign(&zones, &origin, &keys, now).await.expect("rekeys");
        let set = zones.read();
        let signing = set.zones()[0].signing().expect("signed");
        assert!(resigned + 5 >= signing.len() + signing.chain_len(), "{resigned}");
        assert!(signing.due(now, usize::MAX).is_empty(), "nothing left on the old key");
        drop(set);
        for n in [0, 2 * RENEW_BATCH + 2] {
            let host = format!("host{n}.example.org.");
            assert_eq!(answer(&zones, &host, RecordType::A), (vec![tag(&new)], 1), "{host}");
        }
    }

    #[tokio::test]
    async fn the_serial_moves_on_once_the_old_keys_signatures_are_all_replaced() {
        let (old, new) = (key(), key());
        let (zones, origin) = hosts(RENEW_BATCH + 3, &old);
        let writes = zones.subscribe();
        let before = *writes.borrow();
        let keys = ZoneKeys {
            signer: new,
            standby: Some(old),
        };
        let now = crate::dnssec::now();
        assert!(rekey(&zones, &origin, &keys, now).expect("rekeys"));
        let rekeyed = zones.read().zones()[0].serial();
        assert!(resign_after_rekey(&zones, &origin, now).await > RENEW_BATCH);
        // One change for the key sets, one once every set carries the new key's signature: secondaries
        // are told, and transfer the zone, after the re-signing too.
        assert_eq!(*writes.borrow() - before, 2);
        assert!(crate::serial::after(zones.read().zones()[0].serial(), rekeyed));
    }

    /// Whether the journal's diff from `from` keeps a signing state to start a signed IXFR from.
    fn diff_from_has_start(zones: &Zones, from: u32) -> bool {
        let set = zones.read();
        let mut diffs = set.zones()[0].journal().since(from).expect("journalled");
        diffs.next().expect("a diff").signed_from.is_some()
    }

    #[test]
    fn a_serial_whose_signatures_changed_under_it_is_no_ixfr_starting_point() {
        let (old, new) = (key(), key());
        // One replica: every serial is final, so IXFR is answered from any.
        let one_replica = Limits {
            serial_cell: None,
            ..Limits::default()
        };
        let (zones, origin) = hosts_with(RENEW_BATCH + 3, &old, one_replica);
        let now = crate::dnssec::now();
        // A serial published once, then left by a plain write: its diff starts from its signing. (The
        // serial the hosts were written under without a commit has none.)
        let commit = |zones: &Zones| {
            zones
                .write()
                .zones_mut()
                .first_mut()
                .expect("zone")
                .commit(now, Vec::new(), Vec::new());
        };
        commit(&zones);
        let plain = serial(&zones);
        commit(&zones);
        assert!(diff_from_has_start(&zones, plain));

        let keys = ZoneKeys {
            signer: new,
            standby: Some(old),
        };
        assert!(rekey(&zones, &origin, &keys, now).expect("rekeys"));
        let rekeyed = serial(&zones);
        // One batch re-signed under the rekey's serial, which does not move: a secondary that took
        // `rekeyed` before it holds the old key's signatures for those sets.
        let due = zones.read().zones()[0].signing().expect("signed").due(now, RENEW_BATCH);
        {
            let mut set = zones.write();
            let zone = set.zones_mut().first_mut().expect("zone");
            assert_eq!(resign_listed(zone, &due, now), RENEW_BATCH);
        }
        assert_eq!(serial(&zones), rekeyed);
        commit(&zones);
        assert!(
            !diff_from_has_start(&zones, rekeyed),
            "an IXFR from the rekey's serial is answered whole"
        );
    }

    #[test]
    fn a_listing_another_pass_acted_on_re_signs_nothing_and_moves_no_serial() {
        let (zones, _) = hosts(20, &key());
        let period = zones.read().zones()[0].signing().expect("signed").renewal_period();
        let later = crate::dnssec::now() + period;
        // Two passes list the same round from the same snapshot; the first acts on it whole.
        let (listed, round) = {
            let set = zones.read();
            let signing = set.zones()[0].signing().expect("signed");
            (signing.due(later, RENEW_BATCH), signing.round(later).expect("a round"))
        };
        assert!(listed.len() > 20, "{}", listed.len());
        assert!(renew(&zones, later) >= listed.len());
        let moved = serial(&zones);
        let mut set = zones.write();
        let zone = set.zones_mut().first_mut().expect("zone");
        assert_eq!(resign_listed(zone, &listed, later), 0, "nothing still due");
        assert!(!zone.renewed(round, later), "the round was entered");
        assert_eq!(zone.serial(), moved);
    }

    #[test]
    fn a_change_in_the_rounds_own_span_settles_alike_whether_it_came_before_or_after_the_round() {
        let key = key();
        let (one, _) = hosts(20, &key);
        let (two, _) = hosts(20, &key);
        let period = one.read().zones()[0].signing().expect("signed").renewal_period();
        let later = crate::dnssec::now() + period;
        let round = one.read().zones()[0]
            .signing()
            .expect("signed")
            .round(later)
            .expect("a round");
        let cell = 10;
        assert_eq!(Limits::default().serial_cell, Some(Duration::from_secs(cell.into())));
        let write = |zones: &Zones, at: u32| {
            let mut all = zones.write();
            let zone = all.zones_mut().first_mut().expect("zone");
            zone.put(&name("new.example.org."), set(vec![a("192.0.2.9")]));
            zone.commit(at, Vec::new(), Vec::new());
        };
        // Replica one enters the round at its instant, then takes a change in the same span.
        if round % cell == cell - 1 {
            return; // no second left in the span for the change (one round in ten)
        }
        assert!(renew(&one, round) > 0);
        write(&one, round + 1);
        // Replica two takes the change first, and enters the round later.
        write(&two, round + 1);
        let end = (round / cell + 1) * cell;
        for zones in [&one, &two] {
            zones.settle(end);
        }
        assert!(renew(&two, end + 30) > 0);
        for zones in [&one, &two] {
            zones.settle(end + 60);
        }
        assert_eq!(
            serial(&one),
            serial(&two),
            "the same records and round: the same serial"
        );
    }

    #[tokio::test]
    async fn a_rekey_that_fails_is_tried_again_until_it_succeeds() {
        let (old, new) = (key(), key());
        let (zones, origin) = hosts(3, &old);
        let zones = Arc::new(zones);
        let (sender, updates) = watch::channel(ZoneKeys::single(old));
        let shutdown = CancellationToken::new();
        let attempts = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let failing = {
            let attempts = attempts.clone();
            move |zones: &Zones, origin: &Name, keys: &ZoneKeys, now: u32| {
                // The first two attempts fail, as a key that cannot sign for a moment would.
                if attempts.fetch_add(1, std::sync::atomic::Ordering::SeqCst) < 2 {
                    return Err(DnssecError::Empty);
                }
                rekey(zones, origin, keys, now)
            }
        };
        let follower = tokio::spawn(follow_keys_with(
            zones.clone(),
            origin,
            updates,
            shutdown.clone(),
            failing,
            Duration::from_millis(1),
        ));
        sender.send_replace(ZoneKeys::single(new.clone()));
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        while answer(&zones, "host1.example.org.", RecordType::A).0 != vec![tag(&new)] {
            assert!(tokio::time::Instant::now() < deadline, "never signed with the new key");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(attempts.load(std::sync::atomic::Ordering::SeqCst), 3);
        shutdown.cancel();
        follower.await.expect("the follower ends");
    }

    #[test]
    fn a_rollover_publishes_both_keys_then_re_signs_the_zone_with_the_new_one_batch_by_batch() {
        let (old, new) = (key(), key());
        let mut config = zone_config("example.org.");
        config.dnssec = Some(DnssecConfig::new(old.clone()));
        let origin = config.origin.clone();
        let zones = Zones::new(&[config], 7, Limits::default());
        {
            let mut all = zones.write();
            let zone = all.zone_for_mut(&LowerName::new(&origin)).expect("zone");
            for n in 0..(RENEW_BATCH + 10) {
                zone.put(&name(&format!("host{n}.example.org.")), set(vec![a("192.0.2.1")]));
            }
        }
        let serial = |z: &Zones| z.read().zones()[0].serial();
        let key_set = |z: &Zones| answer(z, "example.org.", RecordType::DNSKEY);
        let host1 = |z: &Zones| answer(z, "host1.example.org.", RecordType::A);
        let both = (sorted(vec![tag(&old), tag(&new)]), 2);
        let before = serial(&zones);
        let now = crate::dnssec::now();

        // Pre-published: two DNSKEYs, the set signed by both; the data still by the old key alone.
        let prepublished = ZoneKeys {
            signer: old.clone(),
            standby: Some(new.clone()),
        };
        assert!(rekey(&zones, &origin, &prepublished, now).expect("rekeys"));
        assert_ne!(serial(&zones), before, "a new serial for the new key set");
        assert_eq!(key_set(&zones), both);
        assert_eq!(host1(&zones), (vec![tag(&old)], 1));
        assert_eq!(
            renew(&zones, now),
            0,
            "the data's signer did not change: nothing to re-sign"
        );

        // The new key signs: CDS names it; the data moves to it as the renewal re-signs it.
        let active = ZoneKeys {
            signer: new.clone(),
            standby: Some(old.clone()),
        };
        assert!(rekey(&zones, &origin, &active, now).expect("rekeys"));
        assert_eq!(answer(&zones, "example.org.", RecordType::CDS), (vec![tag(&new)], 1));
        assert_eq!(key_set(&zones), both);
        assert_eq!(host1(&zones), (vec![tag(&old)], 1));
        // The sets and NSECs the old key signed are due, however fresh their signatures, a batch at a time.
        let signed = {
            let set = zones.read();
            let signing = set.zones()[0].signing().expect("signed");
            let due = signing.due(now, usize::MAX).len();
            // All but the key sets and the SOA, signed anew by the rekey itself.
            assert!(due + 5 >= signing.len() + signing.chain_len(), "{due}");
            due
        };
        let mut batches = Vec::new();
        while let renewed @ 1.. = renew(&zones, now) {
            batches.push(renewed);
            assert!(batches.len() < 10, "the renewal ends");
        }
        assert_eq!(batches.iter().sum::<usize>(), signed, "all re-signed");
        assert!(batches.iter().all(|&b| b <= RENEW_BATCH) && batches[0] == RENEW_BATCH);
        for n in [0, RENEW_BATCH + 9] {
            let host = format!("host{n}.example.org.");
            assert_eq!(answer(&zones, &host, RecordType::A), (vec![tag(&new)], 1), "{host}");
        }

        // Retired: the new key alone.
        assert!(rekey(&zones, &origin, &ZoneKeys::single(new.clone()), now).expect("rekeys"));
        assert_eq!(key_set(&zones), (vec![tag(&new)], 1));
        assert_eq!(renew(&zones, now), 0, "the signer stays: nothing to re-sign");
        assert!(
            !rekey(&zones, &name("other.org."), &ZoneKeys::single(new), now).expect("no zone"),
            "no such zone"
        );
    }
}
