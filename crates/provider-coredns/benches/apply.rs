//! Throughput of the CoreDNS provider against a real etcd on 127.0.0.1: 10,000 A records created, read back,
//! then deleted, with 128 (etcd's default `--max-txn-ops`) and 16 writes per transaction, in records per
//! second. Each run gets a fresh etcd.
//!
//! Run: `EXTDNS_TEST_ETCD=target/e2e-bin/etcd-v3.6.8 cargo bench -p extdns-provider-coredns --bench apply`
//! (`cargo xtask test` builds that etcd). Set `COREDNS_BENCH_RECORDS` to change the number of records.

use std::time::Instant;

use extdns_endpoint::{Change, Endpoint, RecordType, Ttl};
use extdns_provider::{Provider, Unit};
use extdns_provider_coredns::{CorednsConfig, CorednsProvider};
use extdns_test_support::etcd::Etcd;

fn main() {
    let n: usize = std::env::var("COREDNS_BENCH_RECORDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => panic!("tokio runtime: {e}"),
    };
    println!("coredns provider → etcd 3.6.8 on 127.0.0.1 (JSON gateway), {n} A records");
    println!(
        "{:>10} {:>14} {:>10} {:>14}",
        "txn ops", "create rec/s", "read s", "delete rec/s"
    );
    for ops in [128usize, 16] {
        let etcd = Etcd::start();
        let mut config = CorednsConfig::new(vec![etcd.url.clone()], "/skydns/");
        config.max_txn_ops = ops;
        let provider = match CorednsProvider::new(config) {
            Ok(p) => p,
            Err(e) => panic!("{e}"),
        };
        let (create, read, delete) = runtime.block_on(async {
            let changes: Vec<Change> = (0..n)
                .map(|i| {
                    let ip = format!("10.{}.{}.{}", (i >> 16) & 255, (i >> 8) & 255, i & 255);
                    Change::Create(
                        Endpoint::new(&format!("r{i}.bench.example"), RecordType::A, [ip]).with_ttl(Ttl(300)),
                    )
                })
                .collect();
            let t = Instant::now();
            let units: Vec<Unit<'_>> = changes.iter().map(Unit::new).collect();
            let records = match provider.records().await {
                Ok(r) => r,
                Err(e) => panic!("{e}"),
            };
            if let Err(e) = provider.apply(&records.state, &units).await {
                panic!("create: {e}");
            }
            let create = n as f64 / t.elapsed().as_secs_f64();
            let t = Instant::now();
            let records = match provider.records().await {
                Ok(r) => r,
                Err(e) => panic!("{e}"),
            };
            let read = t.elapsed().as_secs_f64();
            assert_eq!(records.endpoints.len(), n, "every record was written");
            let deletes: Vec<Change> = records.endpoints.iter().cloned().map(Change::Delete).collect();
            let units: Vec<Unit<'_>> = deletes.iter().map(Unit::new).collect();
            let t = Instant::now();
            if let Err(e) = provider.apply(&records.state, &units).await {
                panic!("delete: {e}");
            }
            (create, read, n as f64 / t.elapsed().as_secs_f64())
        });
        assert!(etcd.dump("/skydns/").is_empty(), "every record was deleted");
        println!("{ops:>10} {create:>14.0} {read:>10.2} {delete:>14.0}");
    }
}
