//! Throughput of the Cloudflare provider against the stateful API fake on 127.0.0.1: 10,000 A records
//! created, read back, then deleted, with batches of 200 (Cloudflare's free-plan limit, `--batch-change-size`
//! default) and of 50, no pause between batches. The figure is the client's and the fake's cost, not
//! Cloudflare's: against the real API the round trip and its rate limit (1,200 requests per 5 minutes)
//! dominate, so the number of API calls is printed too.
//!
//! Run: `cargo bench -p extdns-provider-cloudflare --bench apply`. Set `CLOUDFLARE_BENCH_RECORDS` to change
//! the number of records.

use std::time::{Duration, Instant};

use extdns_endpoint::{Change, Endpoint, RecordType, Ttl};
use extdns_provider::{Provider, Unit};
use extdns_provider_cloudflare::{Auth, CloudflareConfig, CloudflareProvider};
use extdns_test_support::cloudflare_fake::{FakeCloudflare, TOKEN};

fn main() {
    let n: usize = std::env::var("CLOUDFLARE_BENCH_RECORDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => panic!("tokio runtime: {e}"),
    };
    println!("cloudflare provider → API fake on 127.0.0.1, {n} A records, 5000 records per page");
    println!(
        "{:>8} {:>10} {:>14} {:>10} {:>14}",
        "batch", "API calls", "create rec/s", "read s", "delete rec/s"
    );
    for batch in [200usize, 50] {
        let cf = FakeCloudflare::start(&[("023e105f4ecef8ad9ca31a8372d0c353", "bench.example")]);
        let mut config = CloudflareConfig::new(Auth::Token(TOKEN.into()));
        config.base_url = cf.url.clone();
        config.batch_size = batch;
        config.batch_interval = Duration::ZERO;
        config.records_per_page = 5000;
        let provider = match CloudflareProvider::new(config) {
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
            let units: Vec<Unit<'_>> = changes.iter().map(Unit::new).collect();
            let t = Instant::now();
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
        assert!(cf.state().records.is_empty(), "every record was deleted");
        let calls = cf.state().requests;
        println!("{batch:>8} {calls:>10} {create:>14.0} {read:>10.2} {delete:>14.0}");
    }
}
