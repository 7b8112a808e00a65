//! The signing keys of the built-in server's signed zones (`--dns-server-dnssec-*`, docs/dnssec.md): read
//! from a Kubernetes Secret, or made on the first start and written there, so every replica signs with the
//! same key; with `--manifests`, read from that Secret among the manifest files. The dns-server crate takes
//! each key as a value ([`extdns_dns_server::dnssec::ZoneKey`]); the API calls are the binary's.
//!
//! The Secret holds two entries per zone: `<zone>.algorithm` (the mnemonic, `ECDSAP256SHA256` or
//! `ED25519`) and `<zone>.pkcs8` (the private key, PKCS #8 DER), the zone without its trailing dot.
//! Replicas starting together race to create it or add a zone to it; the write carries the version read
//! (create, or replace at that resourceVersion), so one wins, and the others read the winner's keys.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context as _, bail};
use extdns_dns_server::dnssec::{DnssecConfig, KeyAlgorithm, ZoneKey};
use extdns_informer::{LoadOptions, load_keeping};
use extdns_wiring::{ClusterSettings, ProviderSettings, Settings, kube_client};
use hickory_proto::rr::Name;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ObjectMeta, PostParams};
use tracing::info;

use crate::settings::dns_server::DnssecSettings;

/// Writes tried before giving up when other replicas keep changing the Secret.
const ATTEMPTS: usize = 5;

/// `settings` with each signed zone's key in its configuration, read from the Secret or made and kept
/// there; every zone's DS is logged for its parent. Unchanged when nothing is signed.
pub async fn with_keys(mut settings: Settings, dnssec: Option<&DnssecSettings>) -> anyhow::Result<Settings> {
    let (Some(dnssec), ProviderSettings::DnsServer(config)) = (dnssec, &settings.provider) else {
        return Ok(settings);
    };
    let keys = keys(dnssec, &settings.cluster, true).await?;
    let mut config = (**config).clone();
    for zone in &mut config.zones {
        let Some(key) = keys.get(&zone.origin) else { continue };
        info!(
            zone = %zone.origin,
            algorithm = %key.algorithm(),
            ds = %key.ds_line(&zone.origin).unwrap_or_default(),
            "signing the zone with DNSSEC; give its parent this DS record (`extdns dnssec ds` prints it again)"
        );
        zone.dnssec = Some(DnssecConfig {
            key: key.clone(),
            standby: None,
            validity_secs: dnssec.validity_secs,
            updates: None,
        });
    }
    settings.provider = ProviderSettings::DnsServer(Arc::new(config));
    Ok(settings)
}

/// The key of each signed zone: from the API server's Secret (made there for zones it lacks when
/// `create`), or from the manifests' Secret.
pub async fn keys(
    dnssec: &DnssecSettings,
    cluster: &ClusterSettings,
    create: bool,
) -> anyhow::Result<BTreeMap<Name, ZoneKey>> {
    match cluster {
        ClusterSettings::ApiServer(kube) => {
            let client = kube_client(kube).await?;
            let namespace = match &dnssec.namespace {
                Some(ns) => ns.clone(),
                None => crate::run::pod_namespace(&client),
            };
            let api: Api<Secret> = Api::namespaced(client, &namespace);
            let shown = format!("{namespace}/{}", dnssec.secret);
            from_api(&api, dnssec, create)
                .await
                .with_context(|| format!("the DNSSEC keys in Secret {shown}"))
        }
        ClusterSettings::Manifests(paths) => from_manifests(paths, dnssec),
    }
}

/// Reads the Secret, adding keys for the zones it lacks when `create`, until one write holds.
async fn from_api(api: &Api<Secret>, dnssec: &DnssecSettings, create: bool) -> anyhow::Result<BTreeMap<Name, ZoneKey>> {
    for _ in 0..ATTEMPTS {
        let current = api.get_opt(&dnssec.secret).await.context("cannot read it")?;
        let mut keys = match &current {
            Some(secret) => read(secret)?,
            None => BTreeMap::new(),
        };
        let missing: Vec<&Name> = dnssec.zones.iter().filter(|z| !keys.contains_key(*z)).collect();
        if missing.is_empty() {
            return Ok(keys);
        }
        if !create {
            bail!(
                "no key for {} yet: the controller makes it on its first start",
                list(&missing)
            );
        }
        for zone in missing {
            keys.insert(zone.clone(), ZoneKey::generate(dnssec.algorithm)?);
        }
        let written = match current {
            None => {
                let secret = Secret {
                    metadata: ObjectMeta {
                        name: Some(dnssec.secret.clone()),
                        labels: Some(BTreeMap::from([(
                            "app.kubernetes.io/managed-by".to_owned(),
                            "extdns".to_owned(),
                        )])),
                        ..ObjectMeta::default()
                    },
                    data: Some(data(&keys)),
                    type_: Some("Opaque".to_owned()),
                    ..Secret::default()
                };
                api.create(&PostParams::default(), &secret).await.map(drop)
            }
            Some(mut secret) => {
                // Kept: what others put in the Secret; the resourceVersion read makes a concurrent change a 409.
                secret.data.get_or_insert_default().extend(data(&keys));
                api.replace(&dnssec.secret, &PostParams::default(), &secret)
                    .await
                    .map(drop)
            }
        };
        match written {
            Ok(()) => {
                info!(secret = %dnssec.secret, "DNSSEC keys generated and kept in the Secret");
                return Ok(keys);
            }
            // Another replica wrote first: read its keys.
            Err(kube::Error::Api(e)) if e.code == 409 => continue,
            Err(e) => return Err(e).context("cannot write it (the chart's Role grants create and update on it)"),
        }
    }
    bail!("it kept changing under {ATTEMPTS} writes")
}

/// The keys in the manifests' Secret of that name; every signed zone must have one there.
fn from_manifests(paths: &[PathBuf], dnssec: &DnssecSettings) -> anyhow::Result<BTreeMap<Name, ZoneKey>> {
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

/// The keys a Secret holds, by zone.
pub fn read(secret: &Secret) -> anyhow::Result<BTreeMap<Name, ZoneKey>> {
    let mut keys = BTreeMap::new();
    let data = secret.data.iter().flatten();
    let strings = secret
        .string_data
        .iter()
        .flatten()
        .map(|(k, v)| (k, ByteString(v.as_bytes().to_vec())));
    let all: BTreeMap<&String, ByteString> = data.map(|(k, v)| (k, v.clone())).chain(strings).collect();
    for (entry, pkcs8) in &all {
        let Some(zone) = entry.strip_suffix(".pkcs8") else {
            continue;
        };
        let algorithm_entry = format!("{zone}.algorithm");
        let algorithm: KeyAlgorithm = all
            .get(&algorithm_entry)
            .map(|a| String::from_utf8_lossy(&a.0).into_owned())
            .with_context(|| format!("{entry} has no {algorithm_entry} beside it"))?
            .parse()
            .with_context(|| algorithm_entry.clone())?;
        let key = ZoneKey::from_pkcs8(algorithm, &pkcs8.0).with_context(|| entry.to_string())?;
        let name = Name::from_ascii(format!("{zone}."))
            .map(|n| n.to_lowercase())
            .with_context(|| format!("{entry}: not a zone name"))?;
        keys.insert(name, key);
    }
    Ok(keys)
}

/// The Secret's entries for `keys`.
pub fn data(keys: &BTreeMap<Name, ZoneKey>) -> BTreeMap<String, ByteString> {
    let mut data = BTreeMap::new();
    for (zone, key) in keys {
        let zone = zone.to_ascii();
        let zone = zone.trim_end_matches('.');
        data.insert(
            format!("{zone}.algorithm"),
            ByteString(key.algorithm().mnemonic().as_bytes().to_vec()),
        );
        data.insert(format!("{zone}.pkcs8"), ByteString(key.pkcs8().to_vec()));
    }
    data
}

fn list(zones: &[&Name]) -> String {
    zones.iter().map(|z| z.to_ascii()).collect::<Vec<_>>().join(", ")
}

/// `extdns dnssec ds`: each signed zone's DS line (those of `only`, when given), read where the controller
/// keeps the keys; exits 0, or fails when a key is not there yet.
pub async fn print_ds(
    settings: &Settings,
    dnssec: Option<&DnssecSettings>,
    only: &[String],
    out: &mut impl Write,
) -> anyhow::Result<u8> {
    let dnssec = chosen(dnssec, only)?;
    let keys = keys(&dnssec, &settings.cluster, false).await?;
    for (zone, key) in &keys {
        if dnssec.zones.contains(zone) {
            writeln!(out, "{}", key.ds_line(zone)?)?;
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
        keys.insert(zone.clone(), ZoneKey::generate(dnssec.algorithm)?);
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
fn chosen(dnssec: Option<&DnssecSettings>, only: &[String]) -> anyhow::Result<DnssecSettings> {
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

    #[test]
    fn keys_read_back_from_the_secret_entries_they_are_written_to() {
        let zone = Name::from_ascii("example.org.").expect("name");
        let keys = BTreeMap::from([(zone.clone(), ZoneKey::generate(KeyAlgorithm::Ed25519).expect("key"))]);
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
}
