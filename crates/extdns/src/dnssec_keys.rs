//! The signing keys of the built-in server's signed zones (`--dns-server-dnssec-*`, docs/dnssec.md): read
//! from a Kubernetes Secret, or made on the first start and written there, so every replica signs with the
//! same key; with `--manifests`, read from that Secret among the manifest files. Handing them to the server
//! and following their rollovers is `crate::dnssec_rollover`'s. The dns-server crate takes
//! each key as a value ([`extdns_dns_server::dnssec::ZoneKey`]); the API calls are the binary's.
//!
//! The Secret holds two entries per zone: `<zone>.algorithm` (the mnemonic, `ECDSAP256SHA256` or
//! `ED25519`) and `<zone>.pkcs8` (the private key, PKCS #8 DER), the zone without its trailing dot; during
//! a rollover (`crate::dnssec_rollover`) also the incoming key as `<zone>.next.algorithm` and
//! `<zone>.next.pkcs8`, and where the rollover is as `<zone>.rollover` (`requested`, `published=T …`), so
//! every replica follows one schedule and nothing of it lives only in one replica's memory.
//! Replicas starting together race to create it or add a zone to it; every write carries the version read
//! (create, or replace at that resourceVersion), so one wins, and the others read the winner's keys.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context as _, bail};
use extdns_dns_server::dnssec::rollover::{KeyRing, RollState};
use extdns_dns_server::dnssec::{KeyAlgorithm, ZoneKey};
use extdns_informer::{LoadOptions, load_keeping};
use extdns_wiring::{ClusterSettings, Settings, kube_client};
use hickory_proto::rr::Name;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ObjectMeta, PostParams};
use tracing::{info, warn};

use crate::settings::dns_server::DnssecSettings;

/// Writes tried before giving up when other replicas keep changing the Secret.
const ATTEMPTS: usize = 5;

/// Where the keys are kept on an API server: the Secret's API and its name, as messages show it.
#[derive(Clone)]
pub struct KeyStore {
    api: Api<Secret>,
    name: String,
    shown: String,
}

impl KeyStore {
    /// The Secret of `dnssec` on the API server `cluster` names; `None` with `--manifests`.
    pub async fn of(dnssec: &DnssecSettings, cluster: &ClusterSettings) -> anyhow::Result<Option<KeyStore>> {
        let ClusterSettings::ApiServer(kube) = cluster else {
            return Ok(None);
        };
        let client = kube_client(kube).await?;
        let namespace = match &dnssec.namespace {
            Some(ns) => ns.clone(),
            None => crate::run::pod_namespace(&client),
        };
        Ok(Some(KeyStore {
            api: Api::namespaced(client, &namespace),
            name: dnssec.secret.clone(),
            shown: format!("{namespace}/{}", dnssec.secret),
        }))
    }

    /// The Secret as `namespace/name`, for messages.
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// Reads the keys, lets `change` change them, and writes them back when it says it did, at the version
    /// read (creating the Secret when there is none), until one write holds; the keys as written, or as
    /// read when nothing changed.
    pub async fn update(
        &self,
        mut change: impl FnMut(&mut BTreeMap<Name, KeyRing>) -> anyhow::Result<bool>,
    ) -> anyhow::Result<BTreeMap<Name, KeyRing>> {
        self.try_update(&mut change)
            .await
            .with_context(|| format!("the DNSSEC keys in Secret {}", self.shown))
    }

    async fn try_update(
        &self,
        change: &mut impl FnMut(&mut BTreeMap<Name, KeyRing>) -> anyhow::Result<bool>,
    ) -> anyhow::Result<BTreeMap<Name, KeyRing>> {
        for _ in 0..ATTEMPTS {
            let current = self.api.get_opt(&self.name).await.context("cannot read it")?;
            let mut rings = match &current {
                Some(secret) => read(secret)?,
                None => BTreeMap::new(),
            };
            if !change(&mut rings)? {
                return Ok(rings);
            }
            let written = match current {
                None => {
                    let secret = Secret {
                        metadata: ObjectMeta {
                            name: Some(self.name.clone()),
                            labels: Some(BTreeMap::from([(
                                "app.kubernetes.io/managed-by".to_owned(),
                                "extdns".to_owned(),
                            )])),
                            ..ObjectMeta::default()
                        },
                        data: Some(data(&rings)),
                        type_: Some("Opaque".to_owned()),
                        ..Secret::default()
                    };
                    self.api.create(&PostParams::default(), &secret).await.map(drop)
                }
                Some(mut secret) => {
                    // Kept: what others put in the Secret; the resourceVersion read makes a concurrent change a 409.
                    store(&mut secret, &rings);
                    self.api
                        .replace(&self.name, &PostParams::default(), &secret)
                        .await
                        .map(drop)
                }
            };
            match written {
                Ok(()) => return Ok(rings),
                // Another replica wrote first: read what it wrote.
                Err(kube::Error::Api(e)) if e.code == 409 => continue,
                Err(e) => return Err(e).context("cannot write it (the chart's Role grants create and update on it)"),
            }
        }
        bail!("it kept changing under {ATTEMPTS} writes")
    }
}

/// The keys of each signed zone, and where they are kept when that is an API server (`None` with
/// `--manifests`): from the API server's Secret (made there for zones it lacks when `create`), or from
/// the manifests' Secret.
pub async fn rings(
    dnssec: &DnssecSettings,
    cluster: &ClusterSettings,
    create: bool,
) -> anyhow::Result<(BTreeMap<Name, KeyRing>, Option<KeyStore>)> {
    let Some(store) = KeyStore::of(dnssec, cluster).await? else {
        let ClusterSettings::Manifests(paths) = cluster else {
            bail!("no API server and no manifests to read the DNSSEC keys from");
        };
        return Ok((from_manifests(paths, dnssec)?, None));
    };
    let mut generated = false;
    let rings = store
        .update(|rings| {
            let missing: Vec<&Name> = dnssec.zones.iter().filter(|z| !rings.contains_key(*z)).collect();
            if missing.is_empty() {
                return Ok(false);
            }
            if !create {
                bail!(
                    "no key for {} yet: the controller makes it on its first start",
                    list(&missing)
                );
            }
            let missing: Vec<Name> = missing.into_iter().cloned().collect();
            for zone in missing {
                rings.insert(zone, KeyRing::new(ZoneKey::generate(dnssec.algorithm)?));
            }
            generated = true;
            Ok(true)
        })
        .await?;
    if generated {
        info!(secret = %store.shown(), "DNSSEC keys generated and kept in the Secret");
    }
    Ok((rings, Some(store)))
}

/// The keys in the manifests' Secret of that name; every signed zone must have one there.
fn from_manifests(paths: &[PathBuf], dnssec: &DnssecSettings) -> anyhow::Result<BTreeMap<Name, KeyRing>> {
    let mut options = LoadOptions::default();
    options.skip_unknown_kinds = true;
    options.keep_kinds = vec![("v1".to_owned(), "Secret".to_owned())];
    let (loaded, _) = load_keeping(paths, &options).context("cannot read the manifests")?;
    let secret = loaded
        .kept
        .into_iter()
        .filter_map(|v| serde_json::from_value::<Secret>(v).ok())
        .find(|s| {
            s.metadata.name.as_deref() == Some(dnssec.secret.as_str())
                && (dnssec.namespace.is_none() || s.metadata.namespace == dnssec.namespace)
        })
        .with_context(|| {
            format!(
                "no Secret {} in the manifests holds the DNSSEC keys (`extdns dnssec secret` prints one)",
                dnssec.secret
            )
        })?;
    let keys = read(&secret)?;
    let missing: Vec<&Name> = dnssec.zones.iter().filter(|z| !keys.contains_key(*z)).collect();
    if !missing.is_empty() {
        bail!(
            "the Secret {} in the manifests has no key for {}",
            dnssec.secret,
            list(&missing)
        );
    }
    Ok(keys)
}

/// The entry suffixes of a zone's incoming key and rollover state.
const NEXT_ALGORITHM: &str = ".next.algorithm";
const NEXT_PKCS8: &str = ".next.pkcs8";
const ROLLOVER: &str = ".rollover";

/// The keys a Secret holds, by zone: each zone's current key, and its incoming key and rollover state
/// when one runs.
pub fn read(secret: &Secret) -> anyhow::Result<BTreeMap<Name, KeyRing>> {
    let mut rings = BTreeMap::new();
    let data = secret.data.iter().flatten();
    let strings = secret
        .string_data
        .iter()
        .flatten()
        .map(|(k, v)| (k, ByteString(v.as_bytes().to_vec())));
    let all: BTreeMap<&String, ByteString> = data.map(|(k, v)| (k, v.clone())).chain(strings).collect();
    let key = |zone: &str, algorithm_entry: String, pkcs8_entry: String| -> anyhow::Result<Option<ZoneKey>> {
        let Some(pkcs8) = all.get(&pkcs8_entry) else {
            return Ok(None);
        };
        let algorithm: KeyAlgorithm = all
            .get(&algorithm_entry)
            .map(|a| String::from_utf8_lossy(&a.0).into_owned())
            .with_context(|| format!("{pkcs8_entry} has no {algorithm_entry} beside it"))?
            .parse()
            .with_context(|| algorithm_entry.clone())?;
        let key = ZoneKey::from_pkcs8(algorithm, &pkcs8.0).with_context(|| format!("{zone}: {pkcs8_entry}"))?;
        Ok(Some(key))
    };
    for entry in all.keys() {
        let Some(zone) = entry.strip_suffix(".pkcs8").filter(|_| !entry.ends_with(NEXT_PKCS8)) else {
            continue;
        };
        let Some(current) = key(zone, format!("{zone}.algorithm"), (*entry).clone())? else {
            continue;
        };
        let next = key(zone, format!("{zone}{NEXT_ALGORITHM}"), format!("{zone}{NEXT_PKCS8}"))?;
        let state_entry = format!("{zone}{ROLLOVER}");
        let written = all
            .get(&state_entry)
            .map(|s| String::from_utf8_lossy(&s.0).into_owned());
        let (state, held) = match written.as_deref().map(str::parse::<RollState>) {
            None => (None, None),
            Some(Ok(RollState::Requested)) if next.is_some() => {
                warn!(
                    secret = %shown(secret),
                    entry = %state_entry,
                    value = "requested",
                    "`requested` written while a DNSSEC rollover runs (the Secret holds its incoming key, which may \
                     be the one signing): refused; this zone's rollover stands still, both keys published, until \
                     the entry holds the state it had"
                );
                (Some(RollState::Requested), written)
            }
            Some(Ok(state)) => (Some(state), None),
            Some(Err(e)) => {
                warn!(
                    secret = %shown(secret),
                    entry = %state_entry,
                    value = written.as_deref().unwrap_or_default(),
                    error = %e,
                    "a DNSSEC rollover state that cannot be read: this zone's rollover stands still, both keys \
                     published, until the entry is fixed; the other zones go on"
                );
                (None, written)
            }
        };
        let name = Name::from_ascii(format!("{zone}."))
            .map(|n| n.to_lowercase())
            .with_context(|| format!("{entry}: not a zone name"))?;
        rings.insert(
            name,
            KeyRing {
                current,
                next,
                state,
                held,
            },
        );
    }
    Ok(rings)
}

/// A Secret as `namespace/name`, for messages.
fn shown(secret: &Secret) -> String {
    let name = secret.metadata.name.as_deref().unwrap_or_default();
    match &secret.metadata.namespace {
        Some(namespace) => format!("{namespace}/{name}"),
        None => name.to_owned(),
    }
}

/// The Secret's entries for `rings`.
pub fn data(rings: &BTreeMap<Name, KeyRing>) -> BTreeMap<String, ByteString> {
    let mut data = BTreeMap::new();
    let mut put = |entry: String, value: &[u8]| data.insert(entry, ByteString(value.to_vec()));
    for (zone, ring) in rings {
        let zone = zone.to_ascii();
        let zone = zone.trim_end_matches('.');
        put(
            format!("{zone}.algorithm"),
            ring.current.algorithm().mnemonic().as_bytes(),
        );
        put(format!("{zone}.pkcs8"), ring.current.pkcs8());
        if let Some(next) = &ring.next {
            put(
                format!("{zone}{NEXT_ALGORITHM}"),
                next.algorithm().mnemonic().as_bytes(),
            );
            put(format!("{zone}{NEXT_PKCS8}"), next.pkcs8());
        }
        // A held value is written back as it was: it is the operator's to fix.
        if let Some(held) = &ring.held {
            put(format!("{zone}{ROLLOVER}"), held.as_bytes());
        } else if let Some(state) = &ring.state {
            put(format!("{zone}{ROLLOVER}"), state.to_string().as_bytes());
        }
    }
    data
}

/// Puts `rings` in `secret`: each zone's entries written, and its incoming key and rollover state removed
/// once the rollover is over; entries of other zones, and others' entries, kept. A hand-written
/// `stringData` is folded into `data` (the API server would do the same).
fn store(secret: &mut Secret, rings: &BTreeMap<Name, KeyRing>) {
    let strings = secret.string_data.take().unwrap_or_default();
    let entries = secret.data.get_or_insert_default();
    entries.extend(strings.into_iter().map(|(k, v)| (k, ByteString(v.into_bytes()))));
    for (zone, ring) in rings {
        let zone = zone.to_ascii();
        let zone = zone.trim_end_matches('.');
        if ring.next.is_none() {
            entries.remove(&format!("{zone}{NEXT_ALGORITHM}"));
            entries.remove(&format!("{zone}{NEXT_PKCS8}"));
        }
        if ring.state.is_none() && ring.held.is_none() {
            entries.remove(&format!("{zone}{ROLLOVER}"));
        }
    }
    entries.extend(data(rings));
}

fn list(zones: &[&Name]) -> String {
    zones.iter().map(|z| z.to_ascii()).collect::<Vec<_>>().join(", ")
}

/// `extdns dnssec ds`: each signed zone's DS line (those of `only`, when given), read where the controller
/// keeps the keys: the DS of the key that signs, which CDS names too (during a rollover, the new key's
/// once it signs); exits 0, or fails when a key is not there yet.
pub async fn print_ds(
    settings: &Settings,
    dnssec: Option<&DnssecSettings>,
    only: &[String],
    out: &mut impl Write,
) -> anyhow::Result<u8> {
    let dnssec = chosen(dnssec, only)?;
    let (rings, _) = rings(&dnssec, &settings.cluster, false).await?;
    for (zone, ring) in &rings {
        if dnssec.zones.contains(zone) {
            writeln!(out, "{}", ring.keys().signer.ds_line(zone)?)?;
        }
    }
    Ok(0)
}

/// `extdns dnssec secret`: a Secret with a new key for each signed zone (those of `only`, when given), as
/// JSON (YAML reads it), for a cluster given as `--manifests`.
pub fn print_secret(dnssec: Option<&DnssecSettings>, only: &[String], out: &mut impl Write) -> anyhow::Result<u8> {
    let dnssec = chosen(dnssec, only)?;
    let mut keys = BTreeMap::new();
    for zone in &dnssec.zones {
        keys.insert(zone.clone(), KeyRing::new(ZoneKey::generate(dnssec.algorithm)?));
    }
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(dnssec.secret.clone()),
            namespace: dnssec.namespace.clone(),
            ..ObjectMeta::default()
        },
        data: Some(data(&keys)),
        type_: Some("Opaque".to_owned()),
        ..Secret::default()
    };
    let mut value = serde_json::to_value(&secret)?;
    value["apiVersion"] = "v1".into();
    value["kind"] = "Secret".into();
    writeln!(out, "{}", serde_json::to_string_pretty(&value)?)?;
    Ok(0)
}

/// The signed zones narrowed to `only` (each of which must be signed).
pub(crate) fn chosen(dnssec: Option<&DnssecSettings>, only: &[String]) -> anyhow::Result<DnssecSettings> {
    let Some(dnssec) = dnssec else {
        bail!("no zone is signed: name them with --dns-server-dnssec-zone, as the controller is run");
    };
    let mut dnssec = dnssec.clone();
    if !only.is_empty() {
        let asked = only
            .iter()
            .map(|z| extdns_dns_server::values::domain_name(z.trim()).with_context(|| format!("--zone={z}")))
            .collect::<anyhow::Result<Vec<_>>>()?;
        if let Some(unsigned) = asked.iter().find(|z| !dnssec.zones.contains(z)) {
            bail!("--zone={unsigned}: not a --dns-server-dnssec-zone");
        }
        dnssec.zones = asked;
    }
    Ok(dnssec)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> ZoneKey {
        ZoneKey::generate(KeyAlgorithm::Ed25519).expect("key")
    }

    fn name(s: &str) -> Name {
        Name::from_ascii(s).expect("name")
    }

    /// A rollover from `current` to `next`, the new key signing, the parent's DS not swapped yet.
    fn active(current: ZoneKey, next: ZoneKey) -> KeyRing {
        KeyRing {
            current,
            next: Some(next),
            state: Some(RollState::Rolling {
                published: 10,
                active: Some(20),
                ds_swapped: None,
            }),
            held: None,
        }
    }

    fn timings() -> extdns_dns_server::dnssec::rollover::RollTimings {
        extdns_dns_server::dnssec::rollover::RollTimings {
            dnskey_ttl: 60,
            max_zone_ttl: 60,
            propagation_delay: 60,
            parent_ds_ttl: 60,
        }
    }

    #[test]
    fn keys_read_back_from_the_secret_entries_they_are_written_to() {
        let zone = Name::from_ascii("example.org.").expect("name");
        let keys = BTreeMap::from([(zone.clone(), KeyRing::new(key()))]);
        let secret = Secret {
            data: Some(data(&keys)),
            ..Secret::default()
        };
        assert!(
            secret
                .data
                .as_ref()
                .is_some_and(|d| d.contains_key("example.org.pkcs8"))
        );
        let back = read(&secret).expect("reads");
        assert_eq!(back, keys);
        let mut broken = secret.clone();
        broken.data.get_or_insert_default().remove("example.org.algorithm");
        let err = read(&broken).expect_err("no algorithm");
        assert!(format!("{err:#}").contains("example.org.algorithm"), "{err:#}");
    }

    #[test]
    fn a_rollover_is_kept_in_the_secret_and_its_entries_go_when_it_ends() {
        let zone = Name::from_ascii("example.org.").expect("name");
        let other = Name::from_ascii("other.org.").expect("name");
        let rolling = active(key(), key());
        let mut secret = Secret {
            data: Some(data(&BTreeMap::from([
                (zone.clone(), rolling.clone()),
                (other.clone(), KeyRing::new(key())),
            ]))),
            ..Secret::default()
        };
        let read_back = read(&secret).expect("reads");
        assert_eq!(
            read_back.get(&zone),
            Some(&rolling),
            "the incoming key and state read back"
        );
        assert_eq!(read_back.len(), 2, "`.next.pkcs8` is no zone of its own: {read_back:?}");

        // Over: the new key is the current one, and the rollover's entries are gone; the other zone kept.
        let done = KeyRing::new(rolling.next.clone().expect("next"));
        store(&mut secret, &BTreeMap::from([(zone.clone(), done.clone())]));
        let entries = secret.data.as_ref().expect("data");
        assert!(
            !entries.keys().any(|k| k.contains(".next.") || k.ends_with(".rollover")),
            "{entries:?}"
        );
        let read_back = read(&secret).expect("reads");
        assert_eq!(read_back.get(&zone), Some(&done));
        assert!(read_back.contains_key(&other));

        // A request written by hand (`kubectl patch … stringData`) is read, and folded into data on a write.
        secret.string_data = Some(BTreeMap::from([(
            "example.org.rollover".to_owned(),
            "requested".to_owned(),
        )]));
        assert_eq!(read(&secret).expect("reads")[&zone].state, Some(RollState::Requested));
    }

    #[test]
    fn a_bad_hand_written_rollover_holds_that_zone_alone_and_is_kept_as_written() {
        let (zone, other) = (name("example.org."), name("example.com."));
        let rings = BTreeMap::from([
            (zone.clone(), KeyRing::new(key())),
            (other.clone(), KeyRing::new(key())),
        ]);
        let mut secret = Secret {
            metadata: ObjectMeta {
                name: Some("extdns-dnssec-keys".to_owned()),
                namespace: Some("dns".to_owned()),
                ..ObjectMeta::default()
            },
            data: Some(data(&rings)),
            ..Secret::default()
        };
        secret.string_data = Some(BTreeMap::from([
            ("example.org.rollover".to_owned(), "soon".to_owned()),
            ("example.com.rollover".to_owned(), "requested".to_owned()),
        ]));
        let (read_back, warned) = extdns_test_support::logs::warnings(|| read(&secret));
        let mut read_back = read_back.expect("a bad state stops no zone but its own");
        for said in ["dns/extdns-dnssec-keys", "example.org.rollover", "soon"] {
            assert!(warned.contains(said), "the warning names {said}: {warned}");
        }
        let held = &read_back[&zone];
        assert_eq!((held.state, held.held.as_deref()), (None, Some("soon")));
        assert_eq!(
            read_back[&other].state,
            Some(RollState::Requested),
            "the other zone rolls"
        );
        for ring in read_back.values_mut() {
            let _ = ring.advance(1_000, &timings(), || Ok(key()));
        }
        assert!(read_back[&zone].next.is_none(), "held: no step");
        assert!(read_back[&other].next.is_some(), "published");
        // Written back (another zone's step): the hand-written value stays for its operator to fix.
        store(&mut secret, &read_back);
        let entries = secret.data.clone().unwrap_or_default();
        assert_eq!(
            entries.get("example.org.rollover").map(|v| v.0.as_slice()),
            Some(&b"soon"[..])
        );
    }

    #[test]
    fn requested_written_by_hand_during_a_rollover_is_refused_and_keeps_the_incoming_key() {
        let zone = name("example.org.");
        let (old, new) = (key(), key());
        let rolling = active(old.clone(), new.clone());
        let mut secret = Secret {
            data: Some(data(&BTreeMap::from([(zone.clone(), rolling)]))),
            ..Secret::default()
        };
        secret.string_data = Some(BTreeMap::from([(
            "example.org.rollover".to_owned(),
            "requested".to_owned(),
        )]));
        let (rings, warned) = extdns_test_support::logs::warnings(|| read(&secret));
        let mut rings = rings.expect("reads");
        assert!(
            warned.contains("refused") && warned.contains("example.org.rollover"),
            "{warned}"
        );
        let ring = rings.get_mut(&zone).expect("the zone");
        assert_eq!(
            ring.advance(1_000_000, &timings(), || Ok(key())).expect("advances"),
            None
        );
        assert_eq!(ring.next.as_ref(), Some(&new), "the incoming key is kept");
        assert_eq!(ring.keys().standby, Some(new), "and published");
        assert_eq!(ring.keys().signer, old);
    }
}
