//! Throughput of the Cloudflare provider against the stateful API fake on 127.0.0.1: 10,000 A records
//! created, read back, then deleted, with batches of 200 (Cloudflare's free-plan limit, `--batch-change-size`
//! default) and of 50, no pause between batches. The figure is the client's and the fake's cost, not
//! Cloudflare's: against the real API the round trip and its rate limit (1,200 requests per 5 minutes)
//! dominate, so the number of API calls is printed too.
//!
//! Run: `cargo bench -p extdns-provider-cloudflare --bench apply`. Set `CLOUDFLARE_BENCH_RECORDS` to change
//! the number of records.

use std::time::Duration;

use extdns_provider_cloudflare::{Auth, CloudflareConfig, CloudflareProvider};
use extdns_test_support::bench;
use extdns_test_support::cloudflare_fake::{FakeCloudflare, TOKEN};

fn main() {
    let n = bench::records_from_env("CLOUDFLARE_BENCH_RECORDS");
    let runtime = bench::runtime();
    let title = format!("cloudflare provider → API fake on 127.0.0.1, {n} A records, 5000 records per page");
    bench::print_header(&title, &format!("{:>8} {:>10}", "batch", "API calls"));
    for batch in [200usize, 50] {
        let cf = FakeCloudflare::start(&[("023e105f4ecef8ad9ca31a8372d0c353", "bench.example")]);
        let mut config = CloudflareConfig::new(Auth::Token(TOKEN.into()));
        config.base_url = cf.url.clone();
        config.batch.size = batch;
        config.batch.interval = Duration::ZERO;
        config.records_per_page = 5000;
        let provider = CloudflareProvider::new(config).unwrap_or_else(|e| panic!("{e}"));
        let round = runtime.block_on(bench::create_read_delete(&provider, n, "bench.example"));
        assert!(cf.state().records.is_empty(), "every record was deleted");
        let calls = cf.state().requests.len();
        println!("{batch:>8} {calls:>10} {round}");
    }
}
