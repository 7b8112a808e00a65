//! Throughput of the Route53 provider against the strict Route53 fake on 127.0.0.1: 10,000 record changes
//! (creates, then deletes of the same records after a read), with Route53's request pacing (5 a second) and
//! `--aws-batch-change-interval` at its default and at 0s, and with no pacing at all (the client's own cost).
//!
//! Run: `cargo bench -p extdns-provider-aws --bench apply`. Set `AWS_BENCH_RECORDS` to change the number.

use std::time::{Duration, Instant};

use extdns_endpoint::{Change, Endpoint, RecordType, Ttl};
use extdns_provider::{Provider, Unit};
use extdns_provider_aws::{AwsConfig, AwsProvider, Credentials};
use extdns_test_support::route53_fake as fake;

fn main() {
    let n = extdns_test_support::bench::records_from_env("AWS_BENCH_RECORDS");
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => panic!("tokio runtime: {e}"),
    };
    println!("aws provider → strict Route53 fake on 127.0.0.1, {n} A records, batches of 1000 changes");
    println!(
        "{:>22} {:>8} {:>14} {:>10} {:>14}",
        "pacing", "calls", "create rec/s", "read s", "delete rec/s"
    );
    for (label, rps, interval) in [
        ("5 req/s, interval 1s", 5.0, Duration::from_secs(1)),
        ("5 req/s, interval 0s", 5.0, Duration::ZERO),
        ("none", 100_000.0, Duration::ZERO),
    ] {
        runtime.block_on(async {
            let fake = fake::Fake::start().await;
            fake.zone("bench.example", false, &[]);
            let mut config = AwsConfig::new(
                match fake.url.parse() {
                    Ok(u) => u,
                    Err(e) => panic!("{e}"),
                },
                Credentials::new("AKIDBENCH", "secret"),
            );
            config.requests_per_second = rps;
            config.batch_change_interval = interval;
            let provider = match AwsProvider::new(config) {
                Ok(p) => p,
                Err(e) => panic!("{e}"),
            };
            let creates: Vec<Change> = (0..n)
                .map(|i| {
                    Change::Create(
                        Endpoint::new(
                            &format!("r{i:05}.bench.example"),
                            RecordType::A,
                            [format!("10.{}.{}.{}", i >> 16, (i >> 8) & 255, i & 255)],
                        )
                        .with_ttl(Ttl(300)),
                    )
                })
                .collect();
            let units: Vec<Unit<'_>> = creates.iter().map(Unit::new).collect();
            let start = Instant::now();
            if let Err(e) = provider.apply(&Default::default(), &units).await {
                panic!("creates: {e}");
            }
            let create = start.elapsed();
            let calls = fake.lock().applied_batches.len();

            let start = Instant::now();
            let read = match provider.records().await {
                Ok(r) => r,
                Err(e) => panic!("read: {e}"),
            };
            let read_time = start.elapsed();
            let deletes: Vec<Change> = read
                .endpoints
                .into_iter()
                .filter(|e| e.record_type == RecordType::A)
                .map(Change::Delete)
                .collect();
            assert_eq!(deletes.len(), n, "every record was read back");
            let units: Vec<Unit<'_>> = deletes.iter().map(Unit::new).collect();
            let start = Instant::now();
            if let Err(e) = provider.apply(&read.state, &units).await {
                panic!("deletes: {e}");
            }
            let delete = start.elapsed();
            assert!(fake.sets("ZFAKE1").is_empty(), "every record was deleted");
            println!(
                "{label:>22} {calls:>8} {:>14.0} {:>10.2} {:>14.0}",
                n as f64 / create.as_secs_f64(),
                read_time.as_secs_f64(),
                n as f64 / delete.as_secs_f64()
            );
        });
    }
}
