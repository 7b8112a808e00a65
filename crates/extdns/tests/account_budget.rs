//! One request budget per cloud account (issue 50): several pipelines with one account's credentials, each
//! built as `--dns-provider-crds` builds a provider object's (settings from a command line, the provider
//! from the one `PacerPool` the process hands every provider), syncing until nothing is left to change,
//! against the Route53 and Cloudflare fakes with their per-account limit lowered so the test stays short.
//! Every figure is read from the fake's request log: whether the account's limit was ever passed (the
//! fake refuses what passes it), what each pipeline left in the zone, what the other client's traffic cost.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use extdns::providers::build_pooled_provider;
use extdns::run::run_once_with;
use extdns::settings::{Settings, controller_with_env};
use extdns_provider::Provider;
use extdns_provider::budget::PacerPool;
use extdns_test_support::cli::{tempdir, write_manifests};
use extdns_test_support::cloudflare_fake::{FakeCloudflare, TOKEN};
use extdns_test_support::fake::{RateLimit, RequestLog, other_client};
use extdns_test_support::manifests::lb_service;
use extdns_test_support::route53_fake::{self, Fake, Set, Value, Values};
use tempfile::TempDir;

const ACCESS_KEY: &str = "AKIDBUDGET";
const CF_ZONE: &str = "023e105f4ecef8ad9ca31a8372d0c353";
/// Syncs a pipeline may take to converge: a sync that fails (throttled past its retries) is tried again,
/// as the loop tries it after its backoff.
const MOST_SYNCS: usize = 30;

/// One pipeline: its manifests (kept alive) and settings.
struct Pipeline {
    _dir: TempDir,
    settings: Settings,
    names: Vec<String>,
}

/// Pipeline `owner`'s settings over `services` Services `<owner>-s<i>.example.org`, with `args` for its
/// provider and `env` as its Secret.
fn pipeline(owner: &str, services: usize, args: &[&str], env: &[(&str, String)]) -> Pipeline {
    let dir = tempdir();
    let names: Vec<String> = (0..services).map(|i| format!("{owner}-s{i}.example.org")).collect();
    let docs: Vec<String> = names
        .iter()
        .enumerate()
        .map(|(i, name)| lb_service(&format!("{owner}-s{i}"), name, &[&format!("192.0.2.{}", i + 1)], &[]))
        .collect();
    write_manifests(dir.path(), &docs.join("---\n"));
    let manifests = dir.path().display().to_string();
    let owner_id = format!("--txt-owner-id={owner}");
    let mut argv = vec![
        "extdns",
        "--once",
        "--source=service",
        "--registry=txt",
        "--domain-filter=example.org",
        "--manifests",
        &manifests,
        &owner_id,
    ];
    argv.extend_from_slice(args);
    let cli = extdns::flags::try_parse_from(&argv).unwrap_or_else(|e| panic!("{argv:?}: {e}"));
    let env: Vec<(String, String)> = env.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
    let var = move |name: &str| env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    let settings = controller_with_env(&cli.flags, &var).unwrap_or_else(|e| panic!("{argv:?}: {e}"));
    Pipeline {
        _dir: dir,
        settings,
        names,
    }
}

/// Syncs until a sync finds nothing to change; the syncs it took, `None` if it never converged.
async fn converge(settings: &Settings, provider: Arc<dyn Provider>) -> Option<usize> {
    for sync in 1..=MOST_SYNCS {
        if let Ok(report) = run_once_with(settings, provider.clone()).await
            && report.changes.is_empty()
        {
            return Some(sync);
        }
    }
    None
}

/// Each pipeline's provider from `pools[i % pools.len()]`, all syncing at once until they converge.
async fn converge_all(pipelines: &[Pipeline], pools: &[Arc<PacerPool>]) -> Vec<Option<usize>> {
    let mut tasks = Vec::new();
    for (i, p) in pipelines.iter().enumerate() {
        let provider = build_pooled_provider(&p.settings.provider, None, &pools[i % pools.len()])
            .await
            .unwrap_or_else(|e| panic!("provider: {e}"));
        let settings = p.settings.clone();
        tasks.push(tokio::spawn(async move { converge(&settings, provider).await }));
    }
    let mut syncs = Vec::new();
    for t in tasks {
        syncs.push(t.await.unwrap_or(None));
    }
    syncs
}

/// Pipeline `p` syncs until it converges, then syncs again until it converges once more (syncs whose reads
/// are throttled mid-way must plan nothing), while another client of its account sends `GET url` with
/// `header`: a burst of 20 (the account's whole burst), then 10 a second (half its rate). Panics unless
/// both runs converge and the other client spent its share.
async fn converge_beside_another_client(p: &Pipeline, url: String, header: (&'static str, String)) {
    let stop = Arc::new(AtomicBool::new(false));
    let other = tokio::spawn(other_client(url, vec![header], 20, 10.0, stop.clone()));
    let pool = Arc::new(PacerPool::new());
    let first = converge_all(std::slice::from_ref(p), std::slice::from_ref(&pool)).await;
    let again = converge_all(std::slice::from_ref(p), &[pool]).await;
    stop.store(true, Ordering::Relaxed);
    let sent = other.await.unwrap_or_default();
    assert!(
        first[0].is_some() && again[0].is_some(),
        "converges: {first:?} {again:?}"
    );
    assert!(sent > 20, "the other client spent its share: {sent}");
}

/// extdns's requests a throttle answered (not the other client's, whose query names `other-cluster`).
fn ours_throttled(log: &RequestLog) -> usize {
    log.iter()
        .filter(|r| r.throttled() && !r.query.as_deref().unwrap_or_default().contains("other-cluster"))
        .count()
}

/// A Route53 fake of one zone, example.org, holding someone else's record, whose account limit is 20
/// requests a second (the fake's Route53 meter at a lower figure).
fn route53() -> (Fake, String) {
    let fake = Fake::start_in_background().with_limits(vec![route53_fake::per_second(20)]);
    let zone = fake.zone("example.org", false, &[]);
    fake.put(
        &zone,
        Set {
            name: "other.example.org.".into(),
            kind: "A".into(),
            ttl: Some(300),
            resource_records: Some(Values {
                items: vec![Value {
                    value: "198.51.100.7".into(),
                }],
            }),
            ..Set::default()
        },
    );
    (fake, zone)
}

fn route53_pipeline(fake: &Fake, owner: &str, services: usize, batch: &str) -> Pipeline {
    let env = [
        ("AWS_ACCESS_KEY_ID", ACCESS_KEY.to_string()),
        ("AWS_SECRET_ACCESS_KEY", "secret".to_string()),
        ("AWS_ENDPOINT_URL_ROUTE_53", fake.url.clone()),
    ];
    pipeline(
        owner,
        services,
        &[
            "--provider=aws",
            batch,
            "--aws-batch-change-interval=0s",
            "--provider-request-rate=20",
        ],
        &env,
    )
}

/// The A records of the zone's names, and whether someone else's record is still there.
fn route53_names(fake: &Fake, zone: &str) -> (Vec<String>, bool) {
    let sets = fake.sets(zone);
    let a: Vec<String> = sets
        .iter()
        .filter(|s| s.kind == "A")
        .map(|s| s.name.trim_end_matches('.').to_string())
        .collect();
    let other = a.iter().any(|n| n == "other.example.org");
    (a, other)
}

/// The pipelines `pipeline` makes for the owners p0, p1 and p2, run until they converge: all drawing from
/// one pool (`shared`), else each with a budget of its own, what the shared pool prevents. The pipelines and
/// what each one's syncs came to.
async fn converge_three(pipeline: impl Fn(&str) -> Pipeline, shared: bool) -> (Vec<Pipeline>, Vec<Option<usize>>) {
    let pipelines: Vec<Pipeline> = ["p0", "p1", "p2"].into_iter().map(pipeline).collect();
    let pools: Vec<Arc<PacerPool>> = (0..if shared { 1 } else { 3 })
        .map(|_| Arc::new(PacerPool::new()))
        .collect();
    let syncs = converge_all(&pipelines, &pools).await;
    (pipelines, syncs)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_route53_pipelines_of_one_account_share_its_rate_and_all_converge() {
    let (fake, zone) = route53();
    let (pipelines, syncs) = converge_three(
        |owner| route53_pipeline(&fake, owner, 12, "--aws-batch-change-size=2"),
        true,
    )
    .await;
    assert!(syncs.iter().all(Option::is_some), "every pipeline converges: {syncs:?}");
    let s = fake.lock();
    // Enough requests that three pipelines pacing 20 a second each would have passed the limit (its
    // burst and a second of refill), and the fake, metering the account, refused none of them.
    assert!(s.requests.api_calls() > 40, "{} requests", s.requests.api_calls());
    assert_eq!(s.requests.throttled(), 0, "the account's limit was never passed");
    assert!(s.requests.iter().all(|r| r.account == ACCESS_KEY));
    drop(s);
    let (names, other) = route53_names(&fake, &zone);
    for p in &pipelines {
        for name in &p.names {
            assert!(names.contains(name), "{name} published: {names:?}");
        }
    }
    assert!(other, "someone else's record is left alone");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_route53_pipelines_pacing_apart_pass_the_account_s_limit() {
    // The same three pipelines, each with a budget of its own (a pool each): what the shared pool
    // prevents, so the test above can fail.
    let (fake, _) = route53();
    converge_three(
        |owner| route53_pipeline(&fake, owner, 12, "--aws-batch-change-size=2"),
        false,
    )
    .await;
    assert!(
        fake.lock().requests.throttled() > 0,
        "three budgets of one account overran it"
    );
}

/// Another cluster on the account spends half its budget (a burst of its whole burst at the start, then
/// 10 of the 20 a second) while one pipeline publishes: extdns is throttled by traffic it cannot see,
/// backs off and retries, converges, and no record is lost: neither its own nor someone else's, and
/// syncs run while throttled change nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_route53_pipeline_converges_while_another_client_spends_half_the_account_and_nothing_is_deleted() {
    let (fake, zone) = route53();
    let p = route53_pipeline(&fake, "p0", 12, "--aws-batch-change-size=2");
    let auth = format!(
        "AWS4-HMAC-SHA256 Credential={ACCESS_KEY}/20260101/us-east-1/route53/aws4_request, SignedHeaders=host, Signature=0"
    );
    let url = format!("{}/2013-04-01/hostedzone?marker=other-cluster", fake.url);
    converge_beside_another_client(&p, url, ("authorization", auth)).await;
    // Whether one of extdns's requests met a full bucket depends on how the two clients' requests fell
    // on a loaded machine (it failed one run in four as an assertion): what is asserted is that extdns
    // converged while the other client spent its share, and that nothing else changed.
    eprintln!("extdns's requests throttled: {}", ours_throttled(&fake.lock().requests));
    let (names, other) = route53_names(&fake, &zone);
    for name in &p.names {
        assert!(names.contains(name), "{name} published: {names:?}");
    }
    assert!(other, "someone else's record is left alone");
    assert_eq!(names.len(), p.names.len() + 1, "nothing else: {names:?}");
}

fn cloudflare() -> FakeCloudflare {
    let cf = FakeCloudflare::start(&[(CF_ZONE, "example.org")]);
    cf.seed(CF_ZONE, "other.example.org", "A", "198.51.100.7");
    // Cloudflare's meter (a window counting every call, refused ones too) at 40 per 2 s.
    cf.state()
        .faults
        .limit(vec![RateLimit::window(40, Duration::from_secs(2))]);
    cf
}

fn cloudflare_pipeline(cf: &FakeCloudflare, owner: &str, services: usize) -> Pipeline {
    let env = [
        ("CF_API_TOKEN", TOKEN.to_string()),
        ("EXTDNS_CLOUDFLARE_API_URL", cf.url.clone()),
    ];
    // 18 a second: 40 requests span more than 2 s, whatever the jitter of their arrival.
    pipeline(
        owner,
        services,
        &[
            "--provider=cloudflare",
            "--batch-change-size=1",
            "--batch-change-interval=0s",
            "--provider-request-rate=18",
        ],
        &env,
    )
}

fn cloudflare_a_names(cf: &FakeCloudflare) -> Vec<String> {
    cf.state()
        .records
        .values()
        .filter(|r| r.rtype == "A")
        .map(|r| r.name.clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_cloudflare_pipelines_of_one_token_share_its_rate_and_all_converge() {
    let cf = cloudflare();
    let (pipelines, syncs) = converge_three(|owner| cloudflare_pipeline(&cf, owner, 16), true).await;
    assert!(syncs.iter().all(Option::is_some), "every pipeline converges: {syncs:?}");
    let s = cf.state();
    assert!(s.requests.api_calls() > 40, "{} requests", s.requests.api_calls());
    assert_eq!(s.requests.throttled(), 0, "the token's limit was never passed");
    assert!(s.requests.most_in_window(TOKEN, Duration::from_secs(2)) <= 40);
    drop(s);
    let names = cloudflare_a_names(&cf);
    for p in &pipelines {
        for name in &p.names {
            assert!(names.contains(name), "{name} published: {names:?}");
        }
    }
    assert!(names.iter().any(|n| n == "other.example.org"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_cloudflare_pipelines_pacing_apart_pass_the_token_s_limit() {
    let cf = cloudflare();
    let _ = converge_three(|owner| cloudflare_pipeline(&cf, owner, 16), false).await;
    assert!(
        cf.state().requests.throttled() > 0,
        "three budgets of one token overran it"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cloudflare_pipeline_converges_while_another_client_spends_half_the_token_and_nothing_is_deleted() {
    let cf = cloudflare();
    let p = cloudflare_pipeline(&cf, "p0", 10);
    let url = format!("{}/zones?name=other-cluster", cf.url);
    converge_beside_another_client(&p, url, ("authorization", format!("Bearer {TOKEN}"))).await;
    // As for Route53: whether extdns met the window full is how the requests fell, not what is asserted.
    eprintln!("extdns's requests throttled: {}", ours_throttled(&cf.state().requests));
    let names = cloudflare_a_names(&cf);
    for name in &p.names {
        assert!(names.contains(name), "{name} published: {names:?}");
    }
    assert!(
        names.iter().any(|n| n == "other.example.org"),
        "someone else's record is left alone"
    );
    assert_eq!(names.len(), p.names.len() + 1, "nothing else: {names:?}");
}
