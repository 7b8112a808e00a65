//! Measures the signer at scale, for docs/dnssec.md: the time of one write to a signed zone of N names
//! (what every sync pays for a change) and of a rekey that re-signs the whole zone with a new key (a
//! rollover's active step), both through the public paths the server takes.
//!
//! ```text
//! cargo run -p extdns-dns-server --example sign_scale -- 10000
//! ```
//!
//! A measurement, not a test: the numbers depend on the machine, so nothing is asserted about them.

use std::str::FromStr;
use std::sync::Arc;
use std::time::Instant;

use extdns_dns_server::dnssec::{DnssecConfig, KeyAlgorithm, ZoneKey, ZoneKeys};
use extdns_dns_server::{DnsServerProvider, Limits, ZoneConfig, Zones, dnssec_renew};
use extdns_endpoint::{Change, Endpoint, RecordType};
use hickory_proto::rr::Name;

/// Writes measured, each one record created.
const WRITES: usize = 20;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let names: usize = std::env::args().nth(1).map_or(Ok(10_000), |n| n.parse())?;
    let origin = Name::from_str("example.org.")?;
    let old = ZoneKey::generate(KeyAlgorithm::EcdsaP256)?;
    let mut zone = ZoneConfig::new(
        origin.clone(),
        Name::from_str("ns1.example.org.")?,
        Some("192.0.2.53".parse()?),
    )?;
    zone.dnssec = Some(DnssecConfig::new(old.clone()));
    let zones = Arc::new(Zones::new(&[zone], 1, Limits::default()));
    let provider = DnsServerProvider::new(zones.clone(), 60);
    let creates: Vec<Change> = (0..names)
        .map(|i| {
            let ip = format!("10.{}.{}.{}", i >> 16 & 255, i >> 8 & 255, i & 255);
            Change::Create(Endpoint::new(&format!("host{i}.example.org"), RecordType::A, [ip]))
        })
        .collect();
    let started = Instant::now();
    extdns_provider::apply_changes(&provider, &creates).await?;
    println!("first sync of {names} names: {:?}", started.elapsed());

    let started = Instant::now();
    for i in 0..WRITES {
        let change = Change::Create(Endpoint::new(
            &format!("new{i}.example.org"),
            RecordType::A,
            ["192.0.2.7"],
        ));
        extdns_provider::apply_changes(&provider, &[change]).await?;
    }
    println!(
        "one write to the signed zone of {names} names: {:?} (mean of {WRITES})",
        started.elapsed() / WRITES as u32
    );

    let new = ZoneKey::generate(KeyAlgorithm::EcdsaP256)?;
    let keys = ZoneKeys {
        signer: new,
        standby: Some(old),
    };
    let started = Instant::now();
    let resigned = dnssec_renew::rekey_and_resign(&zones, &origin, &keys, now()).await?;
    println!("rekey re-signing {resigned} sets: {:?}", started.elapsed());
    Ok(())
}

/// Seconds since the epoch, as signatures count them.
fn now() -> u32 {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    (secs & u64::from(u32::MAX)) as u32
}
