//! Throughput of the PowerDNS provider against a real PowerDNS 4.7 (sqlite3 backend) on 127.0.0.1: 10,000
//! record changes, each an A record with its ownership TXT record as the TXT registry sends them (so 20,000
//! rrsets), created, read back, then deleted, with 1, 100 and 1,000 (the default) changes a PATCH, in
//! records per second. Each batch size gets a fresh server.
//!
//! Run: `cargo bench -p extdns-provider-pdns --bench apply` (needs `apt-get install -y pdns-server
//! pdns-backend-sqlite3 sqlite3`). Set `PDNS_BENCH_RECORDS` to change the number of records.

use std::time::{Duration, Instant};

use extdns_endpoint::{Change, Endpoint, RecordType};
use extdns_provider::{Provider, ReadState, Unit};
use extdns_provider_pdns::{PdnsConfig, PdnsProvider};
use extdns_test_support::bench;
use extdns_test_support::pdns::{API_KEY, PowerDns, Zone};

fn main() {
    let n = bench::records_from_env("PDNS_BENCH_RECORDS");
    let runtime = bench::runtime();
    println!("pdns provider → PowerDNS 4.7 gsqlite3 on 127.0.0.1, {n} A records + {n} ownership TXT records");
    println!(
        "{:>10} {:>10} {:>14} {:>10} {:>14}",
        "batch", "PATCHes", "create rec/s", "read s", "delete rec/s"
    );
    for batch in [1usize, 100, 1000] {
        // Batch size 1 is one PATCH (one database transaction) per record: a tenth of the records is
        // enough to show its rate.
        let n = if batch == 1 { n / 10 } else { n };
        let pdns = PowerDns::start(&[Zone::new("bench.example")]);
        let mut config = PdnsConfig::new(pdns.url(), API_KEY);
        config.batch_change_size = batch * 2;
        config.timeout = Duration::from_secs(120);
        let provider = match PdnsProvider::new(&config) {
            Ok(p) => p,
            Err(e) => panic!("{e}"),
        };
        let (records, owners): (Vec<Change>, Vec<Change>) = (0..n)
            .map(|i| {
                let record = bench::a_record(i, "bench.example");
                let name = &record.dns_name;
                let owner = Endpoint::new(
                    &format!("a-{name}"),
                    RecordType::Txt,
                    ["\"heritage=external-dns,external-dns/owner=bench\""],
                );
                (Change::Create(record), Change::Create(owner))
            })
            .unzip();
        let (create_rate, read_secs, delete_rate) = runtime.block_on(async {
            let units: Vec<Unit<'_>> = records
                .iter()
                .zip(&owners)
                .map(|(change, o)| Unit {
                    change,
                    ownership: Some(o),
                })
                .collect();
            let t = Instant::now();
            if let Err(e) = provider.apply(&ReadState::default(), &units).await {
                panic!("create with batch {batch}: {e}");
            }
            let create_rate = n as f64 / t.elapsed().as_secs_f64();
            let t = Instant::now();
            let read = match provider.records().await {
                Ok(r) => r,
                Err(e) => panic!("read: {e}"),
            };
            let read_secs = t.elapsed().as_secs_f64();
            let (records, owners): (Vec<Change>, Vec<Change>) = read
                .endpoints
                .iter()
                .filter(|e| e.dns_name.starts_with('r'))
                .map(|e| {
                    let owner = Endpoint::new(&format!("a-{}", e.dns_name), RecordType::Txt, ["\"x\""]);
                    (Change::Delete(e.clone()), Change::Delete(owner))
                })
                .unzip();
            assert_eq!(records.len(), n, "every record landed");
            let units: Vec<Unit<'_>> = records
                .iter()
                .zip(&owners)
                .map(|(change, o)| Unit {
                    change,
                    ownership: Some(o),
                })
                .collect();
            let t = Instant::now();
            if let Err(e) = provider.apply(&read.state, &units).await {
                panic!("delete with batch {batch}: {e}");
            }
            (create_rate, read_secs, n as f64 / t.elapsed().as_secs_f64())
        });
        // Creates and deletes, none refused: no PATCH is split.
        let patches = n.div_ceil(batch) * 2;
        println!("{batch:>10} {patches:>10} {create_rate:>14.0} {read_secs:>10.3} {delete_rate:>14.0}");
        assert!(pdns.dig("r0.bench.example", "A").is_empty(), "deleted");
        assert!(pdns.dig("a-r0.bench.example", "TXT").is_empty(), "deleted");
    }
}
