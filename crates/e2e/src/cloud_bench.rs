//! The first-sync benchmark against a cloud DNS fake (`cloud-first-sync`; Cloud DNS, Azure DNS, Route53 and
//! Cloudflare, each fake with its cloud's documented rate limit on): extdns and external-dns v0.23.0
//! each run `--once` into a fresh fake of their own holding one empty zone, with the same N records desired
//! and the same flags, and each is measured: wall time from start to exit, the requests the fake answered
//! by kind, the zone at the end (it must hold exactly the N records and one ownership record each; the run
//! fails otherwise), CPU time and peak resident memory.
//!
//! Both controllers reach the fake the way they reach the cloud, through the test-support TLS proxy
//! (`HTTPS_PROXY`, `SSL_CERT_FILE`): Google's dns.googleapis.com and oauth2.googleapis.com with a service
//! account key file as Google hands it out; Azure's management.azure.com and login.microsoftonline.com with a
//! service principal's secret in a public-cloud azure.json. external-dns reads the records from its `connector` source;
//! extdns has no connector source and reads the same records from DNSEndpoint manifests (`--source=crd
//! --manifests`), which external-dns cannot read. The whole run happens inside a network namespace with
//! only loopback, as the Google differential does, so nothing can leave the machine.
//!
//! The fake and the proxy run in this process; its own CPU time while a controller runs is reported beside
//! the controller's, which shows whether the fake is the bottleneck.
//!
//! Beside each controller's figures stands the least its sync could cost (issue 50,
//! `extdns_test_support::first_sync`): the write requests of batches filled to the API's maximum, the
//! reads, and the least time the documented limit allows them, alone and with the batch interval both
//! controllers were given (`--batch-interval 0s` measures the limit alone).

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use extdns_test_support::azure_fake::{self, AZURE_HOSTS, FakeAzure, Service};
use extdns_test_support::cloudflare_fake::{self, FakeCloudflare};
use extdns_test_support::fake::{RateLimit, RequestLog};
use extdns_test_support::first_sync::{self, Unit};
use extdns_test_support::google_fake::{self, FakeGoogle, GOOGLE_HOSTS, PROJECT};
use extdns_test_support::route53_fake::{self, Fake as FakeRoute53};

use crate::cloud_env::{Cloud, OWNER, Sources, ZONE, checked_connects, controller, proxy_to, wanted};
use crate::procfs;

/// How often a running controller's peak memory (VmHWM) is sampled.
const SAMPLE: Duration = Duration::from_millis(10);
/// A controller that has not finished its first sync by then has failed.
const TIMEOUT: Duration = Duration::from_secs(1800);

/// `cloud-first-sync`'s arguments.
#[derive(Debug, Clone)]
pub struct Options {
    /// Records desired.
    pub records: usize,
    /// Which providers, in order.
    pub providers: Vec<Cloud>,
    /// The pause between two batches (`--google-batch-change-interval`, `--aws-batch-change-interval`,
    /// `--batch-change-interval`), the same for both controllers.
    pub batch_interval: String,
    /// Where the markdown report goes.
    pub report: PathBuf,
}

impl Options {
    /// `--records N --provider google|azure|aws|cloudflare|all --batch-interval DURATION --report FILE`, each
    /// optional.
    pub fn parse(args: &[String]) -> Result<Options> {
        let mut o = Options {
            records: 10_000,
            providers: vec![Cloud::Google],
            batch_interval: "1s".to_string(),
            report: PathBuf::from("target/bench-cloud.md"),
        };
        for (flag, value) in crate::flags::pairs(args)? {
            match flag.as_str() {
                "--records" => o.records = crate::flags::count(&flag, &value)?,
                "--provider" => o.providers = Cloud::list("cloud-first-sync", &value)?,
                "--batch-interval" => o.batch_interval = value,
                "--report" => o.report = PathBuf::from(value),
                other => bail!("cloud-first-sync: unknown argument {other}"),
            }
        }
        if o.records == 0 || o.records > 1 << 20 {
            bail!("cloud-first-sync: --records must be between 1 and {}", 1 << 20);
        }
        Ok(o)
    }
}

/// Runs the benchmark; outside the network namespace, by running this program again inside one.
pub fn run(extdns: &Path, external_dns: &Path, logs: &Path, opts: &Options) -> Result<()> {
    if !crate::cloud_env::enter_netns()? {
        return Ok(());
    }
    let logs = crate::cloud_env::fresh_dir(logs, "cloud-first-sync")?;
    let mut report = String::new();
    for provider in &opts.providers {
        let section = match provider {
            Cloud::Google => google(extdns, external_dns, &logs, opts)?,
            Cloud::Azure => azure(extdns, external_dns, &logs, opts)?,
            Cloud::Aws => route53(extdns, external_dns, &logs, opts)?,
            Cloud::Cloudflare => cloudflare(extdns, external_dns, &logs, opts)?,
        };
        report.push_str(&section);
    }
    crate::cloud_env::write_report(&opts.report, &report)?;
    eprintln!("cloud-first-sync: report in {}", opts.report.display());
    Ok(())
}

/// What one controller's first sync cost.
#[derive(Debug, Default)]
struct Figures {
    wall: f64,
    cpu: f64,
    /// This process (the fake and the proxy) while the controller ran.
    fake_cpu: f64,
    peak_rss: f64,
    /// Requests the fake answered, all kinds.
    requests: usize,
    /// TLS connections: CONNECTs through the proxy.
    connections: usize,
    /// Requests of each kind the table names ([`GOOGLE_CALLS`], [`AZURE_CALLS`]), in its order.
    calls: Vec<usize>,
    rate_limited: usize,
    tokens: usize,
    records: usize,
    ownership: usize,
    /// The least this sync could cost under the cloud's rules ([`Least`]).
    least: Least,
}

/// The least a controller's first sync could cost, from what it wrote (its ownership records' values
/// differ): the write requests of batches filled to the API's maximum, the reads a sync needs, and the
/// least time the documented limit lets them take, alone and with the batch interval both were given.
#[derive(Debug, Default, Clone, Copy)]
struct Least {
    writes: usize,
    reads: usize,
    limit_time: f64,
    with_interval: f64,
}

impl Least {
    /// `writes` and `reads`, all counted by `limit`, writes spaced by `interval` seconds.
    fn under(writes: usize, reads: usize, limit: RateLimit, interval: f64) -> Least {
        Least::new(writes, reads, first_sync::least_time(writes + reads, limit), interval)
    }

    /// `writes` and `reads` that the limits let take `limit_time`, writes spaced by `interval` seconds.
    fn new(writes: usize, reads: usize, limit_time: Duration, interval: f64) -> Least {
        let limit_time = limit_time.as_secs_f64();
        Least {
            writes,
            reads,
            limit_time,
            with_interval: limit_time.max(writes.saturating_sub(1) as f64 * interval),
        }
    }
}

/// A batch interval as Go writes durations (`1s`, `500ms`, `0s`, `1m`), in seconds.
fn interval_seconds(text: &str) -> Result<f64> {
    let (number, unit) = text
        .find(|c: char| c.is_ascii_alphabetic())
        .map_or((text, "s"), |i| text.split_at(i));
    let n: f64 = number
        .parse()
        .with_context(|| format!("--batch-interval {text}: not a duration"))?;
    let scale = match unit {
        "ms" => 0.001,
        "s" => 1.0,
        "m" => 60.0,
        other => bail!("--batch-interval {text}: unit {other}: ms, s or m"),
    };
    Ok(n * scale)
}

/// Checks the zone at the end: exactly the records wanted, and one ownership record of ours each; gives
/// how many of each.
fn check_zone(
    who: &str,
    have: BTreeSet<String>,
    want: &BTreeSet<String>,
    ownership: &[String],
    log: &Path,
) -> Result<(usize, usize)> {
    let n = want.len();
    if have != *want {
        let missing = want.difference(&have).take(3).collect::<Vec<_>>();
        let extra = have.difference(want).take(3).collect::<Vec<_>>();
        bail!(
            "{who}: the zone holds {} records, not the {n} desired (missing e.g. {missing:?}, extra e.g. {extra:?}); log in {}",
            have.len(),
            log.display()
        );
    }
    let owned = ownership
        .iter()
        .filter(|l| l.contains(&format!("external-dns/owner={OWNER}")))
        .count();
    if owned != n || ownership.len() != n {
        bail!(
            "{who}: {} ownership records ({owned} ours) for {n} records; log in {}",
            ownership.len(),
            log.display()
        );
    }
    Ok((have.len(), owned))
}

fn google(extdns: &Path, external_dns: &Path, logs: &Path, opts: &Options) -> Result<String> {
    let n = opts.records;
    let src = Sources::new(n)?;
    let want = wanted(n, 300, ".");
    let flags: Vec<String> = [
        "--once",
        "--provider=google",
        "--registry=txt",
        "--policy=sync",
        "--google-batch-change-size=1000",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([
        format!("--domain-filter={ZONE}"),
        format!("--google-project={PROJECT}"),
        format!("--txt-owner-id={OWNER}"),
        format!("--google-batch-change-interval={}", opts.batch_interval),
    ])
    .collect();

    let mut figures = Vec::new();
    for (who, program) in [("extdns", extdns), ("external-dns", external_dns)] {
        let fake = FakeGoogle::start(&[("example-org", ZONE)]);
        {
            // extdns asks for 1,000 a page (its largest page size); external-dns asks for no size and gets
            // what the server decides, taken here to be the same.
            let mut s = fake.state();
            s.page_limit = 1000;
        }
        let proxy = proxy_to(&GOOGLE_HOSTS, fake.addr())?;
        let mut cmd = controller(who, program, &src, &proxy, &flags);
        cmd.env(
            "GOOGLE_APPLICATION_CREDENTIALS",
            fake.google_service_account_file(src.home.path()),
        )
        .env("GCE_METADATA_HOST", &fake.host);
        let log = logs.join(format!("google-{who}.log"));
        eprintln!("cloud-first-sync: google: {who}: {n} records ({})", log.display());
        let mut f = measure(who, cmd, &log)?;
        {
            let s = fake.state();
            f.calls = counts(&s.requests, &GOOGLE_CALLS);
            f.tokens = s.grants.len();
            f.requests = s.requests.api_calls();
            f.rate_limited = s.requests.throttled();
            if !s.refusals.is_empty() {
                bail!("{who}: the fake refused changes: {:?}", s.refusals);
            }
        }
        f.connections = checked_connects(who, &proxy)?;
        let (ownership, records): (Vec<String>, Vec<String>) = fake
            .lines()
            .into_iter()
            .partition(|l| l.contains("\"heritage=external-dns,"));
        (f.records, f.ownership) = check_zone(who, records.into_iter().collect(), &want, &ownership, &log)?;
        // 1,000 additions a change: 500 units, whose record data (an address and an ownership value of
        // about 100 bytes) stay far below the 100,000 bytes a change may hold. The polls of changes.get
        // are left out: Cloud DNS may answer `done` at once.
        let writes = first_sync::write_requests(vec![Unit { changes: 2, bytes: 0 }; n], first_sync::GOOGLE);
        f.least = Least::under(
            writes,
            2,
            google_fake::RATE_LIMIT,
            interval_seconds(&opts.batch_interval)?,
        );
        eprintln!(
            "cloud-first-sync: google: {who}: {:.1} s, {} requests",
            f.wall, f.requests
        );
        figures.push((who, f));
    }
    let intro = format!(
        "### Google Cloud DNS: first sync of {} records\n\nBoth with `--once --provider=google --registry=txt --policy=sync --google-batch-change-size=1000 \
         --google-batch-change-interval={}`; a fresh fake each, one empty zone, reached through the TLS proxy.\n",
        opts.records, opts.batch_interval
    );
    Ok(table(&intro, "Cloud DNS", &GOOGLE_CALLS, &figures))
}

/// A record set line of the Azure fake (`fqdn TYPE {properties}`) as `fqdn A ttl ip...`; other types (and
/// lines it cannot read) as they are.
fn azure_record(line: &str) -> String {
    let mut parts = line.splitn(3, ' ');
    let (Some(name), Some("A"), Some(props)) = (parts.next(), parts.next(), parts.next()) else {
        return line.to_string();
    };
    let Ok(props) = serde_json::from_str::<serde_json::Value>(props) else {
        return line.to_string();
    };
    let ips: Vec<&str> = props["ARecords"]
        .as_array()
        .map(|a| a.iter().filter_map(|r| r["ipv4Address"].as_str()).collect())
        .unwrap_or_default();
    format!("{name} A {} {}", props["TTL"], ips.join(" "))
}

fn azure(extdns: &Path, external_dns: &Path, logs: &Path, opts: &Options) -> Result<String> {
    let n = opts.records;
    let src = Sources::new(n)?;
    let want = wanted(n, 300, "");
    // A service principal's secret in an azure.json of the public cloud, as an AKS user writes it; both read
    // the same file.
    let config = src.home.path().join("azure.json");
    let json = serde_json::json!({ "tenantId": azure_fake::TENANT, "subscriptionId": azure_fake::SUBSCRIPTION,
                                   "resourceGroup": azure_fake::RESOURCE_GROUP, "aadClientId": azure_fake::CLIENT_ID,
                                   "aadClientSecret": azure_fake::CLIENT_SECRET });
    std::fs::write(&config, json.to_string()).context("writing azure.json")?;
    let flags: Vec<String> = ["--once", "--provider=azure", "--registry=txt", "--policy=sync"]
        .iter()
        .map(|s| s.to_string())
        .chain([
            format!("--domain-filter={ZONE}"),
            format!("--txt-owner-id={OWNER}"),
            format!("--azure-config-file={}", config.display()),
        ])
        .collect();

    let mut figures = Vec::new();
    for (who, program) in [("extdns", extdns), ("external-dns", external_dns)] {
        let fake = FakeAzure::start(&[(Service::Public, ZONE)]);
        let proxy = proxy_to(&AZURE_HOSTS, fake.addr())?;
        let cmd = controller(who, program, &src, &proxy, &flags);
        let log = logs.join(format!("azure-{who}.log"));
        eprintln!("cloud-first-sync: azure: {who}: {n} records ({})", log.display());
        let mut f = measure(who, cmd, &log)?;
        {
            let s = fake.state();
            f.requests = s.requests.api_calls();
            f.calls = counts(&s.requests, &AZURE_CALLS);
            f.rate_limited = s.requests.throttled();
            f.tokens = s.grants.len();
        }
        f.connections = checked_connects(who, &proxy)?;
        let (ownership, records): (Vec<String>, Vec<String>) = fake
            .lines()
            .into_iter()
            .partition(|l| l.contains("heritage=external-dns,"));
        let have = records.iter().map(|l| azure_record(l)).collect();
        (f.records, f.ownership) = check_zone(who, have, &want, &ownership, &log)?;
        // One record set a request; the reads (a zone list, a record set list) and the PUTs under buckets
        // of their own.
        let (reads, writes) = (2, 2 * n);
        let time = first_sync::least_time(reads, azure_fake::READ_LIMIT)
            .max(first_sync::least_time(writes, azure_fake::WRITE_LIMIT));
        f.least = Least::new(writes, reads, time, 0.0);
        eprintln!(
            "cloud-first-sync: azure: {who}: {:.1} s, {} requests",
            f.wall, f.requests
        );
        figures.push((who, f));
    }
    let intro = format!(
        "### Azure DNS: first sync of {} records\n\nBoth with `--once --provider=azure --registry=txt --policy=sync` and a client secret in a \
         public-cloud azure.json; a fresh fake each, one empty public zone, reached through the TLS proxy.\n",
        opts.records
    );
    Ok(table(&intro, "Resource Manager", &AZURE_CALLS, &figures))
}

/// Route53's host, where both controllers send their requests (through the proxy).
const ROUTE53_HOSTS: [&str; 1] = ["route53.amazonaws.com"];
/// Cloudflare's API host.
const CLOUDFLARE_HOSTS: [&str; 1] = ["api.cloudflare.com"];
/// The Cloudflare zone's id.
const CF_ZONE: &str = "023e105f4ecef8ad9ca31a8372d0c353";

fn route53(extdns: &Path, external_dns: &Path, logs: &Path, opts: &Options) -> Result<String> {
    let n = opts.records;
    let src = Sources::new(n)?;
    let want = wanted(n, 300, ".");
    let flags: Vec<String> = ["--once", "--provider=aws", "--registry=txt", "--policy=sync"]
        .iter()
        .map(|s| s.to_string())
        .chain([
            format!("--domain-filter={ZONE}"),
            format!("--txt-owner-id={OWNER}"),
            format!("--aws-batch-change-interval={}", opts.batch_interval),
        ])
        .collect();
    let interval = interval_seconds(&opts.batch_interval)?;
    let mut figures = Vec::new();
    for (who, program) in [("extdns", extdns), ("external-dns", external_dns)] {
        // Route53's documented limit on (five a second per account), as the fake starts.
        let fake = FakeRoute53::start_in_background();
        let zone = fake.zone(ZONE, false, &[]);
        let proxy = proxy_to(&ROUTE53_HOSTS, fake.addr())?;
        let mut cmd = controller(who, program, &src, &proxy, &flags);
        cmd.env("AWS_ACCESS_KEY_ID", "AKIDBENCH")
            .env("AWS_SECRET_ACCESS_KEY", "bench-secret")
            .env("AWS_REGION", "us-east-1")
            .env("AWS_EC2_METADATA_DISABLED", "true");
        let log = logs.join(format!("route53-{who}.log"));
        eprintln!("cloud-first-sync: route53: {who}: {n} records ({})", log.display());
        let mut f = measure(who, cmd, &log)?;
        {
            let s = fake.lock();
            f.requests = s.requests.api_calls();
            f.calls = counts(&s.requests, &ROUTE53_CALLS);
            f.rate_limited = s.requests.throttled();
        }
        f.connections = checked_connects(who, &proxy)?;
        let sets = fake.sets(&zone);
        let value = |s: &route53_fake::Set| -> String {
            let values = s
                .resource_records
                .as_ref()
                .map(|r| r.items.as_slice())
                .unwrap_or_default();
            values.iter().map(|v| v.value.as_str()).collect::<Vec<_>>().join(" ")
        };
        let (ownership, records): (Vec<&route53_fake::Set>, Vec<&route53_fake::Set>) = sets
            .iter()
            .partition(|s| s.kind == "TXT" && value(s).contains("heritage=external-dns,"));
        let have = records
            .iter()
            // As Route53 answers a name: absolute, whether the client sent it so or not.
            .map(|s| {
                let name = s.name.trim_end_matches('.');
                format!("{name}. {} {} {}", s.kind, s.ttl.unwrap_or_default(), value(s))
            })
            .collect();
        let ownership_lines: Vec<String> = ownership.iter().map(|s| value(s)).collect();
        (f.records, f.ownership) = check_zone(who, have, &want, &ownership_lines, &log)?;
        // Each unit, an A record and its ownership TXT, counted as Route53 counts a batch: two changes,
        // the characters of their values.
        let chars = |s: &route53_fake::Set| value(s).len();
        let txt: usize = ownership.iter().map(|s| chars(s)).sum::<usize>() / n.max(1);
        let units = records.iter().map(|s| Unit {
            changes: 2,
            bytes: chars(s) + txt,
        });
        let writes = first_sync::write_requests(units, first_sync::ROUTE53);
        f.least = Least::under(writes, 2, route53_fake::RATE_LIMIT, interval);
        eprintln!(
            "cloud-first-sync: route53: {who}: {:.1} s, {} requests, {} throttled",
            f.wall, f.requests, f.rate_limited
        );
        figures.push((who, f));
    }
    let intro = format!(
        "### Route53: first sync of {} records\n\nBoth with `--once --provider=aws --registry=txt --policy=sync \
         --aws-batch-change-interval={}` and an access key in the environment; a fresh fake each, one empty zone, \
         Route53's limit on (a bucket of five refilled five a second per account), reached through the TLS proxy. \
         The least: batches of at most 1,000 changes and 32,000 characters of values, and two reads, under the \
         bucket.\n",
        opts.records, opts.batch_interval
    );
    Ok(table(&intro, "Route53", &ROUTE53_CALLS, &figures))
}

/// A record of the Cloudflare fake (`name TYPE content proxied=… ttl=…`) as `name TYPE ttl content`.
fn cloudflare_record(r: &cloudflare_fake::Rec) -> String {
    format!("{} {} {} {}", r.name, r.rtype, r.ttl, r.content)
}

fn cloudflare(extdns: &Path, external_dns: &Path, logs: &Path, opts: &Options) -> Result<String> {
    let n = opts.records;
    let src = Sources::new(n)?;
    // Cloudflare's TTL 1 is "automatic", what a record without a TTL gets.
    let want = wanted(n, 1, "");
    let flags: Vec<String> = ["--once", "--provider=cloudflare", "--registry=txt", "--policy=sync"]
        .iter()
        .map(|s| s.to_string())
        .chain([
            format!("--domain-filter={ZONE}"),
            format!("--txt-owner-id={OWNER}"),
            format!("--batch-change-size={}", first_sync::CLOUDFLARE_FREE.changes),
            format!("--batch-change-interval={}", opts.batch_interval),
        ])
        .collect();
    let interval = interval_seconds(&opts.batch_interval)?;
    let mut figures = Vec::new();
    for (who, program) in [("extdns", extdns), ("external-dns", external_dns)] {
        // Cloudflare's documented limit on (1,200 per five minutes per token), as the fake starts.
        let fake = FakeCloudflare::start(&[(CF_ZONE, ZONE)]);
        let proxy = proxy_to(&CLOUDFLARE_HOSTS, fake.addr())?;
        let mut cmd = controller(who, program, &src, &proxy, &flags);
        cmd.env("CF_API_TOKEN", cloudflare_fake::TOKEN);
        let log = logs.join(format!("cloudflare-{who}.log"));
        eprintln!("cloud-first-sync: cloudflare: {who}: {n} records ({})", log.display());
        let mut f = measure(who, cmd, &log)?;
        let (ownership, records): (Vec<String>, Vec<String>) = {
            let s = fake.state();
            f.requests = s.requests.api_calls();
            f.calls = counts(&s.requests, &CLOUDFLARE_CALLS);
            f.rate_limited = s.requests.throttled();
            s.records
                .values()
                .map(cloudflare_record)
                .partition(|l| l.contains("heritage=external-dns,"))
        };
        f.connections = checked_connects(who, &proxy)?;
        (f.records, f.ownership) = check_zone(who, records.into_iter().collect(), &want, &ownership, &log)?;
        let writes = first_sync::write_requests(vec![Unit { changes: 2, bytes: 0 }; n], first_sync::CLOUDFLARE_FREE);
        f.least = Least::under(writes, 2, cloudflare_fake::RATE_LIMIT, interval);
        eprintln!(
            "cloud-first-sync: cloudflare: {who}: {:.1} s, {} requests, {} throttled",
            f.wall, f.requests, f.rate_limited
        );
        figures.push((who, f));
    }
    let intro = format!(
        "### Cloudflare: first sync of {} records\n\nBoth with `--once --provider=cloudflare --registry=txt --policy=sync \
         --batch-change-size=200 --batch-change-interval={}` and an API token; a fresh fake each, one empty Free-plan \
         zone (200 records a batch), Cloudflare's limit on (1,200 requests per five minutes per token), reached \
         through the TLS proxy.\n",
        opts.records, opts.batch_interval
    );
    Ok(table(&intro, "the Cloudflare API", &CLOUDFLARE_CALLS, &figures))
}

/// Runs `cmd` to its end, its output in `log`: wall time, CPU time (its own and the fake's), peak RSS.
fn measure(who: &str, mut cmd: Command, log: &Path) -> Result<Figures> {
    let file = std::fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
    let ticks = procfs::clock_ticks();
    let (self_before, children_before) = cpu_of_self(ticks)?;
    let started = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(file.try_clone()?)
        .stderr(file)
        .spawn()
        .with_context(|| format!("cannot start {who}: {cmd:?}"))?;
    let mut peak = 0.0f64;
    let status = loop {
        if let Some(kb) = hwm_kb(child.id()) {
            peak = peak.max(kb * 1024.0);
        }
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if started.elapsed() > TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            bail!(
                "{who} did not finish within {} s; log in {}",
                TIMEOUT.as_secs(),
                log.display()
            );
        }
        std::thread::sleep(SAMPLE);
    };
    let wall = started.elapsed().as_secs_f64();
    if !status.success() {
        bail!("{who} failed with {status}; log in {}", log.display());
    }
    let (self_after, children_after) = cpu_of_self(ticks)?;
    Ok(Figures {
        wall,
        cpu: children_after - children_before,
        fake_cpu: self_after - self_before,
        peak_rss: peak,
        ..Figures::default()
    })
}

/// VmHWM of a running process, in KiB.
fn hwm_kb(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    Some(procfs::status_bytes(&status, "VmHWM:")? / 1024.0)
}

/// This process's CPU seconds, and those of its children waited for (utime+stime, cutime+cstime).
fn cpu_of_self(ticks: f64) -> Result<(f64, f64)> {
    let own = procfs::cpu_seconds("/proc/self/stat", 14, ticks)?;
    Ok((own, procfs::cpu_seconds("/proc/self/stat", 16, ticks)?))
}

/// A row of the table: its name and how a controller's figure is written.
type Row = (String, fn(&Figures) -> String);

/// The Cloud DNS calls the table counts: its row name, and the fake's name of the call.
const GOOGLE_CALLS: [(&str, &str); 4] = [
    ("managedZones.list", "managedZones.list"),
    ("resourceRecordSets.list", "resourceRecordSets.list"),
    ("changes.create", "changes.create"),
    ("changes.get", "changes.get"),
];

/// The Resource Manager calls the table counts, likewise.
const AZURE_CALLS: [(&str, &str); 5] = [
    ("zones list (pages)", "zones.list"),
    ("record sets list (pages)", "recordSets.list"),
    ("record set GET", "recordSets.get"),
    ("record set PUT", "recordSets.put"),
    ("record set DELETE", "recordSets.delete"),
];

/// The Route53 calls the table counts, likewise.
const ROUTE53_CALLS: [(&str, &str); 4] = [
    ("ListHostedZones", "ListHostedZones"),
    ("ListTagsForResources", "ListTagsForResources"),
    ("ListResourceRecordSets", "ListResourceRecordSets"),
    ("ChangeResourceRecordSets", "ChangeResourceRecordSets"),
];

/// The Cloudflare calls the table counts, likewise.
const CLOUDFLARE_CALLS: [(&str, &str); 5] = [
    ("zones list (pages)", "zones.list"),
    ("records list (pages)", "records.list"),
    ("batch calls", "batch"),
    ("single-record creates", "records.create"),
    ("single-record updates and deletes", "record"),
];

/// How many requests of each of `calls` the fake logged, in their order.
fn counts(log: &RequestLog, calls: &[(&str, &str)]) -> Vec<usize> {
    calls.iter().map(|(_, purpose)| log.count(purpose)).collect()
}

/// The table of both clouds: the controller's costs, every request to `api` and the connections, then the
/// API's own `calls`, then what the fake saw (429s, token grants, the zone at the end, its own CPU).
fn table(intro: &str, api: &str, calls: &[(&str, &str)], figures: &[(&str, Figures)]) -> String {
    let head: [Row; 5] = [
        ("wall time of the sync (start to exit)".into(), |f| {
            format!("{:.1} s", f.wall)
        }),
        ("CPU time of the controller".into(), |f| format!("{:.2} s", f.cpu)),
        ("peak RSS (VmHWM)".into(), |f| {
            format!("{:.1} MiB", f.peak_rss / 1048576.0)
        }),
        (format!("requests to {api}, all"), |f| f.requests.to_string()),
        ("TLS connections (CONNECTs through the proxy)".into(), |f| {
            f.connections.to_string()
        }),
    ];
    let tail: [Row; 5] = [
        ("answered 429".into(), |f| f.rate_limited.to_string()),
        ("token grants".into(), |f| f.tokens.to_string()),
        ("records in the zone at the end".into(), |f| f.records.to_string()),
        ("ownership records in the zone".into(), |f| f.ownership.to_string()),
        ("CPU time of the fake and the proxy".into(), |f| {
            format!("{:.2} s", f.fake_cpu)
        }),
    ];
    let least: [Row; 4] = [
        (
            "least requests the API's batch rules allow (writes + reads)".into(),
            |f| format!("{} + {}", f.least.writes, f.least.reads),
        ),
        ("least time the documented limit allows".into(), |f| {
            format!("{:.1} s", f.least.limit_time)
        }),
        ("least time with the batch interval".into(), |f| {
            format!("{:.1} s", f.least.with_interval)
        }),
        // Where neither the limit nor the interval holds the sync back, the least is the API's own time,
        // which the fake does not model: no ratio.
        ("wall time over the least with the interval".into(), |f| {
            if f.least.with_interval < 0.05 {
                "(the limit does not bind)".to_string()
            } else {
                format!("{:.2}×", f.wall / f.least.with_interval)
            }
        }),
    ];
    let mut t = String::new();
    let _ = writeln!(t, "{intro}");
    let mut header = "| |".to_string();
    let mut rule = "|---|".to_string();
    for (who, _) in figures {
        let _ = write!(
            header,
            " {} |",
            if *who == "external-dns" {
                "external-dns v0.23.0"
            } else {
                who
            }
        );
        rule.push_str("---:|");
    }
    let _ = writeln!(t, "{header}\n{rule}");
    let mut row = |name: &str, value: &dyn Fn(&Figures) -> String| {
        let mut line = format!("| {name} |");
        for (_, f) in figures {
            let _ = write!(line, " {} |", value(f));
        }
        let _ = writeln!(t, "{line}");
    };
    for (name, value) in &head {
        row(name, value);
    }
    for (k, (name, _)) in calls.iter().enumerate() {
        row(name, &|f| f.calls.get(k).copied().unwrap_or_default().to_string());
    }
    for (name, value) in tail.iter().chain(&least) {
        row(name, value);
    }
    t.push('\n');
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn azure_record_sets_read_as_name_type_ttl_and_addresses() {
        assert_eq!(
            azure_record(r#"r1.example.org A {"TTL":300,"ARecords":[{"ipv4Address":"100.64.0.1"}]}"#),
            "r1.example.org A 300 100.64.0.1"
        );
        let txt = r#"a-r1.example.org TXT {"TTL":300,"TXTRecords":[{"value":["x"]}]}"#;
        assert_eq!(azure_record(txt), txt, "other types as they are");
        assert_eq!(azure_record("r1.example.org A {"), "r1.example.org A {");
    }

    #[test]
    fn batch_intervals_read_as_go_durations_and_the_least_time_takes_the_longer_wait() -> Result<()> {
        assert_eq!(interval_seconds("1s")?, 1.0);
        assert_eq!(interval_seconds("500ms")?, 0.5);
        assert_eq!(interval_seconds("0s")?, 0.0);
        assert_eq!(interval_seconds("2")?, 2.0);
        assert!(interval_seconds("1h").is_err());
        assert!(interval_seconds("fast").is_err());
        // 32 batches and two reads under Route53's bucket: 5.8 s by the limit, 31 s with a 1 s interval.
        let least = Least::under(32, 2, route53_fake::RATE_LIMIT, 1.0);
        assert_eq!((least.writes, least.reads), (32, 2));
        assert!((least.limit_time - 5.8).abs() < 1e-9, "{}", least.limit_time);
        assert_eq!(least.with_interval, 31.0);
        assert_eq!(
            Least::under(32, 2, route53_fake::RATE_LIMIT, 0.0).with_interval,
            least.limit_time
        );
        Ok(())
    }

    #[test]
    fn options_default_to_ten_thousand_google_records_and_refuse_the_rest() {
        let o = Options::parse(&[]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (o.records, o.providers.as_slice(), o.batch_interval.as_str()),
            (10_000, [Cloud::Google].as_slice(), "1s")
        );
        let o = Options::parse(&["--records=50".into(), "--provider".into(), "all".into()])
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((o.records, o.providers.as_slice()), (50, Cloud::ALL.as_slice()));
        let o = Options::parse(&["--provider=azure".into()]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(o.providers, [Cloud::Azure]);
        assert!(Options::parse(&["--records".into(), "0".into()]).is_err());
        let o = Options::parse(&["--provider=aws".into()]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(o.providers, [Cloud::Aws]);
        assert!(Options::parse(&["--provider".into(), "route66".into()]).is_err());
        assert!(Options::parse(&["--nope".into(), "1".into()]).is_err());
    }
}
