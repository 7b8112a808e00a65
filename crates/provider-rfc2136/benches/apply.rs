//! Throughput of the RFC2136 provider against a real BIND 9 on 127.0.0.1: 10,000 record changes (creates,
//! then deletes of the same records) with `--rfc2136-batch-change-size` 1, 50 and 500, in records per second.
//! Each batch size gets a fresh server so journals do not carry over.
//!
//! Run: `cargo bench -p extdns-provider-rfc2136 --bench apply` (needs `named`: `apt-get install -y bind9`).
//! Set `RFC2136_BENCH_RECORDS` to change the number of records.

use std::time::Duration;

use extdns_endpoint::Endpoint;
use extdns_provider::ReadState;
use extdns_provider_rfc2136::{Rfc2136Config, Rfc2136Provider};
use extdns_test_support::bench::{self, Round};
use extdns_test_support::dns_server::{DnsServer, KEY_NAME, Kind, SECRET, Zone};

fn main() {
    let n = bench::records_from_env("RFC2136_BENCH_RECORDS");
    let runtime = bench::runtime();
    let title = format!("rfc2136 provider → BIND 9 on 127.0.0.1, {n} A records, TSIG hmac-sha256");
    bench::print_header(&title, &format!("{:>10} {:>10}", "batch", "messages"));
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
        let provider = Rfc2136Provider::new(&config).unwrap_or_else(|e| panic!("{e}"));
        let serial_before = server.serial("bench.example");
        let round = runtime.block_on(async {
            let create = bench::create(&provider, &ReadState::default(), n, "bench.example").await;
            let ours = |e: &Endpoint| e.dns_name.starts_with('r');
            let (read, delete) = bench::read_then_delete(&provider, n, ours, |_| None).await;
            Round { create, read, delete }
        });
        let messages = server.serial("bench.example") - serial_before;
        println!("{batch:>10} {messages:>10} {round:.3}");
        assert!(server.dig("r0.bench.example", "A").is_empty(), "deleted");
    }
}
