//! Throughput of the Route53 provider against the strict Route53 fake on 127.0.0.1: 10,000 record changes
//! (creates, then deletes of the same records after a read), with Route53's request pacing (5 a second) and
//! `--aws-batch-change-interval` at its default and at 0s, and with no pacing at all (the client's own cost).
//!
//! Run: `cargo bench -p extdns-provider-aws --bench apply`. Set `AWS_BENCH_RECORDS` to change the number.

use std::time::Duration;

use extdns_endpoint::RecordType;
use extdns_provider::ReadState;
use extdns_provider_aws::{AwsConfig, AwsProvider, Credentials};
use extdns_test_support::bench::{self, Round};
use extdns_test_support::route53_fake as fake;

fn main() {
    let n = bench::records_from_env("AWS_BENCH_RECORDS");
    let runtime = bench::multi_thread_runtime();
    let title = format!("aws provider → strict Route53 fake on 127.0.0.1, {n} A records, batches of 1000 changes");
    bench::print_header(&title, &format!("{:>22} {:>8}", "pacing", "calls"));
    for (label, rps, interval) in [
        ("5 req/s, interval 1s", 5.0, Duration::from_secs(1)),
        ("5 req/s, interval 0s", 5.0, Duration::ZERO),
        ("none", 100_000.0, Duration::ZERO),
    ] {
        runtime.block_on(async {
            let fake = fake::Fake::start().await;
            fake.zone("bench.example", false, &[]);
            let url = fake.url.parse().unwrap_or_else(|e| panic!("{e}"));
            let mut config = AwsConfig::new(url, Credentials::new("AKIDBENCH", "secret"));
            config.api.requests = AwsConfig::account_rate(rps);
            config.batch.interval = interval;
            let provider = AwsProvider::new(config).unwrap_or_else(|e| panic!("{e}"));
            let create = bench::create(&provider, &ReadState::default(), n, "bench.example").await;
            let calls = fake.lock().applied_batches.len();
            let (read, delete) =
                bench::read_then_delete(&provider, n, |e| e.record_type == RecordType::A, |_| None).await;
            assert!(fake.sets("ZFAKE1").is_empty(), "every record was deleted");
            println!("{label:>22} {calls:>8} {}", Round { create, read, delete });
        });
    }
}
