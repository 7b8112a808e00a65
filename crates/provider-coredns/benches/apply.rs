//! Throughput of the CoreDNS provider against a real etcd on 127.0.0.1: 10,000 A records created, read back,
//! then deleted, with 128 (etcd's default `--max-txn-ops`) and 16 writes per transaction, in records per
//! second. Each run gets a fresh etcd.
//!
//! Run: `EXTDNS_TEST_ETCD=target/e2e-bin/etcd-v3.6.8 cargo bench -p extdns-provider-coredns --bench apply`
//! (`cargo xtask test` builds that etcd). Set `COREDNS_BENCH_RECORDS` to change the number of records.

use extdns_provider_coredns::{CorednsConfig, CorednsProvider};
use extdns_test_support::bench;
use extdns_test_support::etcd::Etcd;

fn main() {
    let n = bench::records_from_env("COREDNS_BENCH_RECORDS");
    let runtime = bench::runtime();
    let title = format!("coredns provider → etcd 3.6.8 on 127.0.0.1 (JSON gateway), {n} A records");
    bench::print_header(&title, &format!("{:>10}", "txn ops"));
    for ops in [128usize, 16] {
        let etcd = Etcd::start();
        let mut config = CorednsConfig::new(vec![etcd.url.clone()], "/skydns/");
        config.max_txn_ops = ops;
        let provider = CorednsProvider::new(config).unwrap_or_else(|e| panic!("{e}"));
        let round = runtime.block_on(bench::create_read_delete(&provider, n, "bench.example"));
        assert!(etcd.dump("/skydns/").is_empty(), "every record was deleted");
        println!("{ops:>10} {round}");
    }
}
