//! Serves a generated zone, for measuring the query path alone (no controller, no Kubernetes):
//!
//! ```text
//! cargo run --release -p extdns-dns-server --example serve -- 127.0.0.1:5353 10000
//! dig @127.0.0.1 -p 5353 host1.example.org A
//! ```
//!
//! The zone `example.org.` holds N names `hostI` (A, and AAAA for every fourth, TXT for every tenth),
//! `aliasI` CNAMEs to them for every twentieth, and a wildcard `*.wild`; written through the provider as
//! the controller writes it. Serves until interrupted.

use std::str::FromStr;
use std::sync::Arc;

use extdns_dns_server::{DnsServer, DnsServerProvider, ServerConfig, ServerMetrics, ZoneConfig, Zones};
use extdns_endpoint::{Change, Endpoint, RecordType};
use hickory_proto::rr::Name;
use tokio_util::sync::CancellationToken;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let listen = args.next().unwrap_or_else(|| "127.0.0.1:5353".into()).parse()?;
    let records: usize = args.next().map_or(Ok(10_000), |n| n.parse())?;
    let origin = Name::from_str("example.org.")?;
    let zone = ZoneConfig::new(origin, Name::from_str("ns1.example.org.")?, Some("192.0.2.53".parse()?))?;
    let config = Arc::new(ServerConfig::new(vec![listen], vec![zone]));
    let zones = Arc::new(Zones::new(&config.zones, 1, config.limits));
    let provider = DnsServerProvider::new(zones.clone(), 60);
    let mut changes = Vec::new();
    for i in 0..records {
        let octets = format!("10.{}.{}.{}", i >> 16 & 255, i >> 8 & 255, i & 255);
        changes.push(Endpoint::new(&format!("host{i}.example.org"), RecordType::A, [octets]));
        if i % 4 == 0 {
            changes.push(Endpoint::new(
                &format!("host{i}.example.org"),
                RecordType::Aaaa,
                [format!("2001:db8::{:x}:{:x}", i >> 16, i & 0xffff)],
            ));
        }
        if i % 10 == 0 {
            changes.push(Endpoint::new(
                &format!("host{i}.example.org"),
                RecordType::Txt,
                [format!("\"v=host{i}\"")],
            ));
        }
        if i % 20 == 0 {
            changes.push(Endpoint::new(
                &format!("alias{i}.example.org"),
                RecordType::Cname,
                [format!("host{i}.example.org")],
            ));
        }
    }
    changes.push(Endpoint::new("*.wild.example.org", RecordType::A, ["192.0.2.80"]));
    let changes: Vec<Change> = changes.into_iter().map(Change::Create).collect();
    extdns_provider::apply_changes(&provider, &changes).await?;
    let server = DnsServer::bind(config, zones.clone(), ServerMetrics::default())?;
    let served = zones.read().zones().iter().map(|z| z.record_count()).sum::<usize>();
    println!("serving {served} records of example.org. on {:?}", server.local_addrs());
    let shutdown = CancellationToken::new();
    let stop = shutdown.clone();
    tokio::spawn(async move {
        let _ = tokio::signal::ctrl_c().await;
        stop.cancel();
    });
    server.run(shutdown).await;
    Ok(())
}
