//! Throughput of the RFC2136 provider against a real BIND 9 on 127.0.0.1: 10,000 record changes (creates,
//! then deletes of the same records) with `--rfc2136-batch-change-size` 1, 50 and 500, in records per second.
//! Each batch size gets a fresh server so journals do not carry over.
//!
//! Run: `cargo bench -p extdns-provider-rfc2136 --bench apply` (needs `named`: `apt-get install -y bind9`).
//! Set `RFC2136_BENCH_RECORDS` to change the number of records.

use std::time::{Duration, Instant};

use extdns_endpoint::{Change, Endpoint};
use extdns_provider::{Provider, ReadState, Unit};
use extdns_provider_rfc2136::{Rfc2136Config, Rfc2136Provider};
use extdns_test_support::bench;
use extdns_test_support::dns_server::{DnsServer, KEY_NAME, Kind, SECRET, Zone};

fn main() {
    let n = bench::records_from_env("RFC2136_BENCH_RECORDS");
    let runtime = bench::runtime();
    println!("rfc2136 provider → BIND 9 on 127.0.0.1, {n} A records, TSIG hmac-sha256");
    println!(
        "{:>10} {:>10} {:>14} {:>10} {:>14}",
        "batch", "messages", "create rec/s", "reads s", "delete rec/s"
    );
    for batch in [1usize, 50, 500] {
        let server = DnsServer::start(Kind::Bind, &[Zone::new("bench.example")]);
        let config = Rfc2136Config {
            hosts: vec!["127.0.0.1".into()],
            port: server.port,
            zones: vec!["bench.example".into()],
            tsig_keyname: KEY_NAME.into(),
            tsig_secret: SECRET.into(),
            tsig_secret_alg: "hmac-sha256".into(),
            axfr: true,
            batch_change_size: batch,
            timeout: Duration::from_secs(30),
            ..Rfc2136Config::default()
        };
        let provider = match Rfc2136Provider::new(&config) {
            Ok(p) => p,
            Err(e) => panic!("{e}"),
        };
        let create: Vec<Endpoint> = (0..n).map(|i| bench::a_record(i, "bench.example")).collect();
        let serial_before = server.serial("bench.example");
        let (create_rate, read_secs, delete_rate) = runtime.block_on(async {
            let t = Instant::now();
            let changes: Vec<Change> = create.into_iter().map(Change::Create).collect();
            let units: Vec<Unit<'_>> = changes.iter().map(Unit::new).collect();
            if let Err(e) = provider.apply(&ReadState::default(), &units).await {
                panic!("create with batch {batch}: {e}");
            }
            let create_rate = n as f64 / t.elapsed().as_secs_f64();
            let t = Instant::now();
            let records = match provider.records().await {
                Ok(r) => r,
                Err(e) => panic!("AXFR: {e}"),
            };
            let read_secs = t.elapsed().as_secs_f64();
            let delete: Vec<Change> = records
                .endpoints
                .into_iter()
                .filter(|e| e.dns_name.starts_with('r'))
                .map(Change::Delete)
                .collect();
            assert_eq!(delete.len(), n, "every record landed");
            let units: Vec<Unit<'_>> = delete.iter().map(Unit::new).collect();
            let t = Instant::now();
            if let Err(e) = provider.apply(&records.state, &units).await {
                panic!("delete with batch {batch}: {e}");
            }
            (create_rate, read_secs, n as f64 / t.elapsed().as_secs_f64())
        });
        let messages = server.serial("bench.example") - serial_before;
        println!("{batch:>10} {messages:>10} {create_rate:>14.0} {read_secs:>10.3} {delete_rate:>14.0}");
        assert!(server.dig("r0.bench.example", "A").is_empty(), "deleted");
    }
}
