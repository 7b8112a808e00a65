//! Key rollovers of the built-in server's signed zones (docs/dnssec.md, "Roll the key"): asked for by
//! `extdns dnssec rollover` (or by hand: `<zone>.rollover: requested` in the key Secret), then taken
//! through their steps by every replica, each reading the Secret every `--dns-server-dnssec-key-check-
//! interval` ([`follow`]). The schedule is in the Secret alone: a step is written at the version read, so
//! exactly one replica writes it and the others read it, and each replica hands its server the keys the
//! Secret says (the dns-server crate re-publishes and re-signs). The parent's DS swap is the operator's:
//! the step that needs it logs the DS, and `extdns dnssec rollover --ds-swapped` records it. The keys
//! reach the server's configuration here too ([`with_keys`]), with the channel its steps come through.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::Arc;

use anyhow::{Context as _, bail};
use extdns_dns_server::dnssec::rollover::{KeyRing, RollState, RollStep};
use extdns_dns_server::dnssec::{DnssecConfig, ZoneKey, ZoneKeys};
use extdns_wiring::{ProviderSettings, Settings};
use hickory_proto::rr::Name;
use tokio::sync::watch;
use tracing::{info, warn};

use crate::dnssec_keys::{KeyStore, chosen, rings};
use crate::settings::dns_server::DnssecSettings;

/// `settings` with each signed zone's keys in its configuration, read from the Secret or made and kept
/// there; every zone's DS is logged for its parent. On an API server, a task follows the Secret from then
/// on and takes each zone's rollover through its steps (`crate::dnssec_rollover`). Unchanged when nothing
/// is signed.
pub async fn with_keys(mut settings: Settings, dnssec: Option<&DnssecSettings>) -> anyhow::Result<Settings> {
    let (Some(dnssec), ProviderSettings::DnsServer(config)) = (dnssec, &settings.provider) else {
        return Ok(settings);
    };
    let (rings, store) = rings(dnssec, &settings.cluster, true).await?;
    let mut config = (**config).clone();
    let mut followed = Vec::new();
    for zone in &mut config.zones {
        let Some(ring) = rings.get(&zone.origin) else { continue };
        let keys = ring.keys();
        info!(
            zone = %zone.origin,
            algorithm = %keys.signer.algorithm(),
            rollover = %ring.state.map(|s| s.to_string()).unwrap_or_else(|| "none".to_owned()),
            ds = %keys.signer.ds_line(&zone.origin).unwrap_or_default(),
            "signing the zone with DNSSEC; give its parent this DS record (`extdns dnssec ds` prints it again)"
        );
        let (sender, updates) = tokio::sync::watch::channel(keys.clone());
        followed.push(Followed {
            zone: zone.origin.clone(),
            dnskey_ttl: zone.ttl,
            keys: sender,
        });
        zone.dnssec = Some(DnssecConfig {
            key: keys.signer,
            standby: keys.standby,
            validity_secs: dnssec.validity_secs,
            updates: Some(updates),
            max_ttl: Some(u32::try_from(dnssec.rollover.max_zone_ttl).unwrap_or(u32::MAX)),
        });
    }
    if let Some(store) = store {
        tokio::spawn(follow(store, dnssec.clone(), followed));
    }
    settings.provider = ProviderSettings::DnsServer(Arc::new(config));
    Ok(settings)
}

/// A signed zone this replica serves: the TTL its DNSKEY set is served with, and where its server takes
/// its keys from.
#[derive(Debug)]
pub struct Followed {
    /// The zone.
    pub zone: Name,
    /// Its `--dns-server-ttl`, which the DNSKEY set is served with.
    pub dnskey_ttl: u32,
    /// The server's side follows it.
    pub keys: watch::Sender<ZoneKeys>,
}

/// Reads the key Secret every check interval, forever: takes each due rollover one step (written at the
/// version read), and hands every zone's server the keys the Secret says. A failed check is logged and
/// tried again at the next one; the keys served meanwhile stay valid.
pub async fn follow(store: KeyStore, dnssec: DnssecSettings, followed: Vec<Followed>) {
    let mut tick = tokio::time::interval(dnssec.rollover.key_check_interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // The first tick is at once: the keys were just read.
    tick.tick().await;
    loop {
        tick.tick().await;
        let now = extdns_dns_wire::unix_now();
        if let Err(e) = check(&store, &dnssec, &followed, now).await {
            warn!(secret = %store.shown(), error = format!("{e:#}"), "cannot follow the DNSSEC keys; tried again at the next check");
        }
    }
}

/// One check at `now`: the due steps written, logged, and every zone's keys handed to its server.
async fn check(store: &KeyStore, dnssec: &DnssecSettings, followed: &[Followed], now: u64) -> anyhow::Result<()> {
    let mut steps = Vec::new();
    let rings = store
        .update(|rings| {
            // Called again when another replica wrote first: only the last call's steps are ours.
            steps = advance(rings, dnssec, followed, now)?;
            Ok(!steps.is_empty())
        })
        .await?;
    for (zone, step) in &steps {
        if let Some(ring) = rings.get(zone) {
            log_step(zone, *step, ring, dnssec, followed);
        }
    }
    for zone in followed {
        let Some(ring) = rings.get(&zone.zone) else { continue };
        let keys = ring.keys();
        zone.keys.send_if_modified(|served| {
            let changed = *served != keys;
            *served = keys.clone();
            changed
        });
    }
    Ok(())
}

/// Takes each followed zone's rollover one step when due at `now`; the steps taken.
fn advance(
    rings: &mut BTreeMap<Name, KeyRing>,
    dnssec: &DnssecSettings,
    followed: &[Followed],
    now: u64,
) -> anyhow::Result<Vec<(Name, RollStep)>> {
    let mut steps = Vec::new();
    for zone in followed {
        let Some(ring) = rings.get_mut(&zone.zone) else {
            continue;
        };
        // The new key has the old one's algorithm: changing it is an algorithm rollover, which needs every
        // set signed by both, and is not offered.
        let algorithm = ring.current.algorithm();
        let timings = dnssec.rollover.timings(zone.dnskey_ttl);
        if let Some(step) = ring
            .advance(now, &timings, || ZoneKey::generate(algorithm))
            .with_context(|| format!("the rollover of {}", zone.zone))?
        {
            steps.push((zone.zone.clone(), step));
        }
    }
    Ok(steps)
}

fn log_step(zone: &Name, step: RollStep, ring: &KeyRing, dnssec: &DnssecSettings, followed: &[Followed]) {
    let tag = |key: &ZoneKey| key.key_tag().ok();
    match step {
        RollStep::Published => {
            let ttl = followed.iter().find(|f| &f.zone == zone).map_or(0, |f| f.dnskey_ttl);
            info!(
                %zone,
                new_key = ?ring.next.as_ref().and_then(tag),
                signs_in_secs = dnssec.rollover.timings(ttl).publish_wait(),
                "DNSSEC rollover: a new key is published beside the old one; it signs once every cache has it"
            );
        }
        RollStep::Active => {
            let ds = ring.keys().signer.ds_line(zone).unwrap_or_default();
            info!(
                %zone,
                ds = %ds,
                "DNSSEC rollover: the new key signs and CDS names it; give the parent this DS in place of the old \
                 one, then run `extdns dnssec rollover --ds-swapped --zone {zone}`"
            );
        }
        RollStep::Retired => info!(
            %zone,
            key = ?tag(&ring.current),
            "DNSSEC rollover: over; the old key has left the DNSKEY set"
        ),
    }
}

/// `extdns dnssec rollover`: asks for a rollover of each zone (those of `only`, or every signed zone), or
/// with `ds_swapped` records that the parent's DS names the new key; prints each zone's state and, when
/// the parent's DS is to be swapped, the DS to give it. Exits 0; fails when a zone has no key yet, or the
/// DS is said swapped before the new key signs.
pub async fn rollover(
    settings: &Settings,
    dnssec: Option<&DnssecSettings>,
    only: &[String],
    ds_swapped: bool,
    out: &mut impl Write,
) -> anyhow::Result<u8> {
    let dnssec = chosen(dnssec, only)?;
    let Some(store) = KeyStore::of(&dnssec, &settings.cluster).await? else {
        bail!(
            "a rollover keeps its steps in the key Secret on the API server, which --manifests has not; with \
             --manifests, give the zone a new key with `extdns dnssec secret` (docs/dnssec.md)"
        );
    };
    let now = extdns_dns_wire::unix_now();
    let rings = store
        .update(|rings| {
            let mut changed = false;
            for zone in &dnssec.zones {
                let ring = rings
                    .get_mut(zone)
                    .with_context(|| format!("no key for {zone} yet: the controller makes it on its first start"))?;
                changed |= if ds_swapped {
                    ring.ds_swapped(now)
                        .with_context(|| format!("--ds-swapped for {zone}"))?
                } else {
                    ring.request()
                };
            }
            Ok(changed)
        })
        .await?;
    for zone in &dnssec.zones {
        let Some(ring) = rings.get(zone) else { continue };
        writeln!(out, "{}", describe(zone, ring)?)?;
    }
    Ok(0)
}

/// A zone's rollover as the command prints it: the state, and the DS for the parent when it is due.
fn describe(zone: &Name, ring: &KeyRing) -> anyhow::Result<String> {
    Ok(match ring.state {
        None => format!("{zone} no rollover"),
        Some(RollState::Requested) => format!(
            "{zone} rollover requested: a replica publishes a new key within --dns-server-dnssec-key-check-interval"
        ),
        Some(state @ RollState::Rolling { active: None, .. }) => {
            format!("{zone} rollover {state}: the new key is published; it signs once every cache has it")
        }
        Some(state @ RollState::Rolling { ds_swapped: None, .. }) => format!(
            "{zone} rollover {state}: give the parent this DS in place of the old one, then run this with \
             --ds-swapped:\n{}",
            ring.keys().signer.ds_line(zone)?
        ),
        Some(state) => format!("{zone} rollover {state}: the old key leaves once the parent's DS TTL has passed"),
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use extdns_dns_server::dnssec::KeyAlgorithm;

    use super::*;
    use crate::settings::dns_server::RolloverSettings;

    fn settings() -> DnssecSettings {
        DnssecSettings {
            zones: vec![Name::from_ascii("example.org.").expect("name")],
            algorithm: KeyAlgorithm::EcdsaP256,
            namespace: None,
            secret: "extdns-dnssec-keys".to_owned(),
            validity_secs: 86_400,
            rollover: RolloverSettings {
                propagation_delay: 60,
                max_zone_ttl: 600,
                parent_ds_ttl: 3_600,
                key_check_interval: Duration::from_secs(30),
            },
        }
    }

    #[test]
    fn each_check_takes_a_due_rollover_one_step_with_the_check_interval_counted_as_propagation() {
        let dnssec = settings();
        let zone = dnssec.zones[0].clone();
        let old = ZoneKey::generate(KeyAlgorithm::Ed25519).expect("key");
        let (keys, _served) = watch::channel(ZoneKeys::single(old.clone()));
        let followed = [Followed {
            zone: zone.clone(),
            dnskey_ttl: 300,
            keys,
        }];
        let mut rings = BTreeMap::from([(zone.clone(), KeyRing::new(old.clone()))]);
        assert!(advance(&mut rings, &dnssec, &followed, 0).expect("advances").is_empty());
        rings.get_mut(&zone).expect("ring").request();
        let steps = advance(&mut rings, &dnssec, &followed, 1_000).expect("advances");
        assert_eq!(steps, [(zone.clone(), RollStep::Published)]);
        let next = rings[&zone].next.clone().expect("a new key");
        assert_eq!(next.algorithm(), KeyAlgorithm::Ed25519, "the old key's algorithm");
        // DNSKEY TTL 300 + propagation 60 + the check interval 30.
        assert!(
            advance(&mut rings, &dnssec, &followed, 1_389)
                .expect("advances")
                .is_empty()
        );
        let steps = advance(&mut rings, &dnssec, &followed, 1_390).expect("advances");
        assert_eq!(steps, [(zone.clone(), RollStep::Active)]);
        let printed = describe(&zone, &rings[&zone]).expect("describes");
        assert!(printed.contains(&next.ds_line(&zone).expect("ds")), "{printed}");
    }
}
