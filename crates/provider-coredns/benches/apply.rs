//! Throughput of the CoreDNS provider against a real etcd on 127.0.0.1: 10,000 A records created, read back,
//! then deleted, with 128 (etcd's default `--max-txn-ops`) and 16 writes per transaction, in records per
//! second. Each run gets a fresh etcd.
//!
//! Run: `EXTDNS_TEST_ETCD=target/e2e-bin/etcd-v3.6.8 cargo bench -p extdns-provider-coredns --bench apply`
//! (`cargo xtask test` builds that etcd). Set `COREDNS_BENCH_RECORDS` to change the number of records.

use extdns_provider_coredns::{CorednsConfig, CorednsProvider};
use extdns_test_support::bench::{self, Round};
use extdns_test_support::etcd::Etcd;

fn main() {
    let n = bench::records_from_env("COREDNS_BENCH_RECORDS");
    let runtime = bench::runtime();
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
        let Round { create, read, delete } = runtime.block_on(bench::create_read_delete(&provider, n, "bench.example"));
        assert!(etcd.dump("/skydns/").is_empty(), "every record was deleted");
        println!("{ops:>10} {create:>14.0} {read:>10.2} {delete:>14.0}");
    }
}
