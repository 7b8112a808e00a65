//! The credential chain end to end: STS on moto (web identity, an assumed role, refresh before expiry),
//! and strict fakes of the two documented metadata protocols (ECS/EKS container credentials, IMDSv2) in
//! front of the strict Route53 fake, which shows which access key signed each request.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, put};
use extdns_provider::Provider;
use extdns_provider::http::{Observe, Observer};
use extdns_provider_aws::{AssumeRole, AwsConfig, AwsProvider, CredentialSource};
use extdns_test_support::moto::Moto;
use extdns_test_support::rfc3339;
use extdns_test_support::route53_fake::Fake;
use extdns_test_support::{is_loopback, require, serve};
use reqwest::{Method, StatusCode as ReqwestStatus, Url};

/// Every request the provider's clients sent: method, host:port and path.
#[derive(Default)]
struct Seen(Mutex<Vec<(String, String)>>);

impl Observe for Seen {
    fn observe(&self, method: &Method, url: &Url, _: Option<ReqwestStatus>, _: Duration) {
        let host = format!("{}:{}", url.host_str().unwrap_or(""), url.port().unwrap_or(0));
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((format!("{method} {}", url.path()), host));
    }
}

impl Seen {
    /// STS calls: POSTs to `/` (Route53's paths start with its API version).
    fn sts_calls(&self) -> usize {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter(|(r, _)| r == "POST /")
            .count()
    }

    fn count(&self, request: &str) -> usize {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter(|(r, _)| r == request)
            .count()
    }
}

/// An environment with only these variables (plus an empty HOME, so no real ~/.aws is read).
fn chain(pairs: &[(&str, String)], home: &std::path::Path) -> CredentialSource {
    let mut env: BTreeMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
    env.insert("HOME".into(), home.display().to_string());
    env.insert("AWS_EC2_METADATA_DISABLED".into(), "true".into());
    CredentialSource::chain(&|k| env.get(k).cloned(), None)
}

/// The same chain, reading `profile` (`AWS_PROFILE`, `--aws-profile`).
fn with_profile(source: CredentialSource, profile: &str) -> CredentialSource {
    match source {
        CredentialSource::Chain { env, .. } => CredentialSource::Chain {
            env,
            profile: Some(profile.into()),
        },
        other => other,
    }
}

/// moto with one zone, example.org.
async fn moto_with_a_zone() -> Moto {
    let moto = Moto::start();
    moto.zone("example.org", false, &[]).await;
    moto
}

/// Fails the test before its first request unless everything the provider and its chain may call is on
/// this machine: Route53, every endpoint variable, the metadata service unless it is disabled, STS
/// wherever a role is assumed. A variable missing or misspelt would otherwise send it to AWS.
fn assert_only_loopback(route53: &Url, source: &CredentialSource) {
    assert!(is_loopback(route53), "Route53 at {route53}");
    let CredentialSource::Chain { env, profile } = source else {
        return;
    };
    for (name, value) in env.iter().filter(|(_, v)| v.contains("://")) {
        let url = Url::parse(value).unwrap_or_else(|e| panic!("{name}={value}: {e}"));
        assert!(is_loopback(&url), "{name}={value}");
    }
    let set = |name: &str| env.contains_key(name);
    assert!(
        env.get("AWS_EC2_METADATA_DISABLED").is_some_and(|v| v == "true") || set("AWS_EC2_METADATA_SERVICE_ENDPOINT"),
        "the metadata service is enabled at its default address"
    );
    let profile_role = profile.is_some()
        && env.get("HOME").is_some_and(|home| {
            std::fs::read_to_string(std::path::Path::new(home).join(".aws/config"))
                .is_ok_and(|c| c.contains("role_arn"))
        });
    assert!(
        !(set("AWS_ROLE_ARN") || profile_role) || set("AWS_ENDPOINT_URL"),
        "a role is assumed through the default STS"
    );
}

fn config(route53: &str, source: CredentialSource, seen: &Arc<Seen>) -> AwsConfig {
    let route53: Url = route53.parse().expect("a URL");
    assert_only_loopback(&route53, &source);
    let mut c = AwsConfig::with_source(route53, source);
    c.batch.interval = Duration::ZERO;
    c.api.requests = AwsConfig::account_rate(1000.0);
    c.observer = Observer(Some(seen.clone()));
    c
}

fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().expect("a temporary directory")
}

#[tokio::test]
async fn route53_on_moto_through_web_identity_without_static_keys() {
    require!(Moto);
    let moto = moto_with_a_zone().await;
    let home = tempdir();
    let token = home.path().join("token");
    std::fs::write(&token, "eyJhbGciOiJSUzI1NiJ9.e30.c2ln\n").expect("token written");
    let seen = Arc::new(Seen::default());
    let source = chain(
        &[
            ("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/extdns".into()),
            ("AWS_WEB_IDENTITY_TOKEN_FILE", token.display().to_string()),
            ("AWS_ENDPOINT_URL", moto.url.clone()),
        ],
        home.path(),
    );
    let p = AwsProvider::new(config(&moto.url, source, &seen)).expect("a provider");
    p.records().await.expect("Route53 through web identity");
    assert_eq!(seen.count("GET /2013-04-01/hostedzone"), 1, "the zones were read");
    assert_eq!(seen.sts_calls(), 1, "one AssumeRoleWithWebIdentity");
    // Valid for an hour: the next read keeps them.
    p.records().await.expect("again");
    assert_eq!(seen.sts_calls(), 1);
}

#[tokio::test]
async fn route53_on_moto_through_an_assumed_role_refreshed_before_expiry() {
    require!(Moto);
    let moto = moto_with_a_zone().await;
    let home = tempdir();
    let seen = Arc::new(Seen::default());
    let source = chain(
        &[
            ("AWS_ACCESS_KEY_ID", "AKIDBASE".into()),
            ("AWS_SECRET_ACCESS_KEY", "base-secret".into()),
            ("AWS_ENDPOINT_URL", moto.url.clone()),
        ],
        home.path(),
    );
    let mut c = config(&moto.url, source, &seen);
    c.assume_role = Some(AssumeRole {
        role_arn: "arn:aws:iam::123456789012:role/dns".into(),
        external_id: Some("ext-1".into()),
    });
    // moto's role credentials last an hour; refreshing 2 s short of that makes them short-lived here.
    c.credentials_refresh_before = Duration::from_secs(3600 - 2);
    let p = AwsProvider::new(c).expect("a provider");
    p.records().await.expect("Route53 through the role");
    p.records().await.expect("again");
    assert_eq!(seen.sts_calls(), 1, "kept while valid");
    tokio::time::sleep(Duration::from_millis(2500)).await;
    p.records().await.expect("after the refresh");
    assert_eq!(seen.sts_calls(), 2, "refreshed before expiry");
}

#[tokio::test]
async fn an_unknown_profile_and_an_empty_chain_name_what_was_tried() {
    let home = tempdir();
    let seen = Arc::new(Seen::default());
    let fake = Fake::start().await;
    let p = AwsProvider::new(config(&fake.url, chain(&[], home.path()), &seen)).expect("a provider");
    let e = p.records().await.expect_err("no credentials").to_string();
    // Every source in the chain's order, the first and the last with why they gave nothing.
    let tried = e
        .split_once("no AWS credentials; tried ")
        .map(|(_, t)| t)
        .unwrap_or_default();
    let names: Vec<&str> = tried
        .split("; ")
        .filter_map(|t| t.split_once(": "))
        .map(|(n, _)| n)
        .collect();
    assert_eq!(
        names,
        [
            "environment",
            "web identity",
            "shared files",
            "container",
            "instance metadata"
        ],
        "{e}"
    );
    assert!(
        tried.ends_with("instance metadata: disabled by AWS_EC2_METADATA_DISABLED"),
        "{e}"
    );
    assert!(fake.lock().requests.is_empty(), "nothing unsigned was sent");

    let source = with_profile(chain(&[], home.path()), "dev");
    let p = AwsProvider::new(config(&fake.url, source, &seen)).expect("a provider");
    let e = p.records().await.expect_err("no such profile").to_string();
    assert!(e.contains("profile dev") && e.contains("no such profile"), "{e}");
}

#[tokio::test]
async fn a_profile_assumes_its_role_with_its_source_profiles_keys_on_moto() {
    require!(Moto);
    let moto = moto_with_a_zone().await;
    let home = tempdir();
    std::fs::create_dir_all(home.path().join(".aws")).expect("dir");
    std::fs::write(
        home.path().join(".aws/config"),
        "[profile dns]\nrole_arn = arn:aws:iam::123456789012:role/dns\nsource_profile = base\n",
    )
    .expect("config");
    std::fs::write(
        home.path().join(".aws/credentials"),
        "[base]\naws_access_key_id = AKIDBASE\naws_secret_access_key = s\n",
    )
    .expect("credentials");
    let seen = Arc::new(Seen::default());
    let source = with_profile(chain(&[("AWS_ENDPOINT_URL", moto.url.clone())], home.path()), "dns");
    let p = AwsProvider::new(config(&moto.url, source, &seen)).expect("a provider");
    p.records().await.expect("Route53 through the profile's role");
    assert_eq!(seen.sts_calls(), 1);
}

/// What the metadata fakes hand out: an access key per fetch, expiring `lifetime` after it.
#[derive(Clone)]
struct Issuer {
    fetches: Arc<Mutex<u32>>,
    lifetime: Duration,
}

impl Issuer {
    fn new(lifetime: Duration) -> Self {
        Issuer {
            fetches: Arc::default(),
            lifetime,
        }
    }

    /// How many credentials it has issued.
    fn fetches(&self) -> u32 {
        *self.fetches.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn issue(&self, prefix: &str) -> String {
        let mut n = self.fetches.lock().unwrap_or_else(|p| p.into_inner());
        *n += 1;
        let expires = SystemTime::now() + self.lifetime;
        let secs = expires.duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
        serde_json::json!({
            "Code": "Success",
            "AccessKeyId": format!("{prefix}{n}"),
            "SecretAccessKey": "s",
            "Token": format!("token-{n}"),
            "Expiration": rfc3339::utc(secs),
        })
        .to_string()
    }
}

/// Asserts the fake's last request carried `header` with a value `check` accepts.
fn assert_signed(fake: &Fake, header: &str, check: impl Fn(&str) -> bool) {
    let auth = fake.lock().last_signature.clone();
    assert!(auth.iter().any(|(k, v)| k == header && check(v)), "{auth:?}");
}

/// The container endpoint as ECS and EKS Pod Identity document it: GET, the token in `Authorization`.
async fn container_fake(issuer: Issuer, token: &'static str) -> String {
    let app = Router::new()
        .route(
            "/v1/credentials",
            get(
                |State((issuer, token)): State<(Issuer, &'static str)>, headers: HeaderMap| async move {
                    if headers.get("authorization").and_then(|v| v.to_str().ok()) != Some(token) {
                        return (StatusCode::UNAUTHORIZED, "bad token").into_response();
                    }
                    issuer.issue("ASIACONTAINER").into_response()
                },
            ),
        )
        .with_state((issuer, token));
    serve(app).await
}

#[tokio::test]
async fn container_credentials_with_a_token_file_sign_route53_and_refresh() {
    let fake = Fake::start().await;
    fake.zone("example.com", false, &[]);
    let issuer = Issuer::new(Duration::from_secs(60));
    let agent = container_fake(issuer.clone(), "pod-identity-token").await;
    let home = tempdir();
    let token_file = home.path().join("eks-pod-identity-token");
    std::fs::write(&token_file, "pod-identity-token\n").expect("token");
    let seen = Arc::new(Seen::default());
    let source = chain(
        &[
            ("AWS_CONTAINER_CREDENTIALS_FULL_URI", format!("{agent}/v1/credentials")),
            (
                "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
                token_file.display().to_string(),
            ),
        ],
        home.path(),
    );
    let p = AwsProvider::new(config(&fake.url, source, &seen)).expect("a provider");
    p.records().await.expect("Route53 with container credentials");
    let first = issuer.fetches();
    assert_signed(&fake, "authorization", |v| {
        v.contains(&format!("Credential=ASIACONTAINER{first}/"))
    });
    // They expire within the five minutes kept before expiry: every request fetches new ones.
    p.records().await.expect("again");
    assert!(issuer.fetches() > first, "refreshed");
    assert_signed(&fake, "x-amz-security-token", |v| {
        v == format!("token-{}", issuer.fetches())
    });
}

/// IMDSv2 as EC2 documents it: a PUT for a session token with a TTL of 1..=21600 s, requests without a
/// valid token refused with 401, the instance profile's name, then its credentials.
async fn imds_fake(issuer: Issuer) -> String {
    type Shared = (Issuer, Arc<Mutex<Vec<String>>>);
    fn valid(state: &Shared, headers: &HeaderMap) -> bool {
        let token = headers.get("x-aws-ec2-metadata-token").and_then(|v| v.to_str().ok());
        token.is_some_and(|t| state.1.lock().unwrap_or_else(|p| p.into_inner()).iter().any(|k| k == t))
    }
    let state: Shared = (issuer, Arc::default());
    let app = Router::new()
        .route(
            "/latest/api/token",
            put(|State(state): State<Shared>, headers: HeaderMap| async move {
                let ttl = headers
                    .get("x-aws-ec2-metadata-token-ttl-seconds")
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.parse::<u32>().ok());
                if headers.contains_key("x-forwarded-for") {
                    return StatusCode::FORBIDDEN.into_response();
                }
                match ttl {
                    Some(1..=21600) => {
                        let mut tokens = state.1.lock().unwrap_or_else(|p| p.into_inner());
                        let token = format!("imds-token-{}", tokens.len());
                        tokens.push(token.clone());
                        token.into_response()
                    }
                    _ => StatusCode::BAD_REQUEST.into_response(),
                }
            }),
        )
        .route(
            "/latest/meta-data/iam/security-credentials/",
            get(|State(state): State<Shared>, headers: HeaderMap| async move {
                if !valid(&state, &headers) {
                    return StatusCode::UNAUTHORIZED.into_response();
                }
                "extdns-node-role".into_response()
            }),
        )
        .route(
            "/latest/meta-data/iam/security-credentials/extdns-node-role",
            get(|State(state): State<Shared>, headers: HeaderMap| async move {
                if !valid(&state, &headers) {
                    return StatusCode::UNAUTHORIZED.into_response();
                }
                state.0.issue("ASIAINSTANCE").into_response()
            }),
        )
        .with_state(state);
    serve(app).await
}

#[tokio::test]
async fn the_instance_profile_comes_from_imdsv2_last() {
    let fake = Fake::start().await;
    fake.zone("example.com", false, &[]);
    let issuer = Issuer::new(Duration::from_secs(6 * 3600));
    let imds = imds_fake(issuer.clone()).await;
    let home = tempdir();
    let seen = Arc::new(Seen::default());
    let mut source = chain(&[("AWS_EC2_METADATA_SERVICE_ENDPOINT", imds.clone())], home.path());
    if let CredentialSource::Chain { env, .. } = &mut source {
        env.remove("AWS_EC2_METADATA_DISABLED");
    }
    let p = AwsProvider::new(config(&fake.url, source, &seen)).expect("a provider");
    p.records().await.expect("Route53 with the instance profile");
    p.records().await.expect("again");
    assert_signed(&fake, "authorization", |v| v.contains("Credential=ASIAINSTANCE1/"));
    assert_eq!(issuer.fetches(), 1, "kept while valid");
    assert_eq!(seen.count("PUT /latest/api/token"), 1);
}

#[tokio::test]
async fn a_metadata_service_that_refuses_is_named_with_the_other_sources() {
    let app = Router::new().fallback(|| async { Response::from(StatusCode::FORBIDDEN.into_response()) });
    let imds = serve(app).await;
    let home = tempdir();
    let seen = Arc::new(Seen::default());
    let mut source = chain(&[("AWS_EC2_METADATA_SERVICE_ENDPOINT", imds.clone())], home.path());
    if let CredentialSource::Chain { env, .. } = &mut source {
        env.remove("AWS_EC2_METADATA_DISABLED");
    }
    let fake = Fake::start().await;
    let p = AwsProvider::new(config(&fake.url, source, &seen)).expect("a provider");
    let e = p.records().await.expect_err("no credentials").to_string();
    assert!(
        e.contains(&format!("instance metadata ({imds})")) && e.contains("HTTP 403"),
        "{e}"
    );
    assert!(e.contains("environment") && e.contains("container"), "{e}");
}

/// The instance profile from amazon-ec2-metadata-mock, AWS's own IMDS mock, in IMDSv2-only mode (requests
/// without a session token are refused): the credentials it hands out sign the Route53 requests.
#[tokio::test]
async fn the_instance_profile_from_amazon_ec2_metadata_mock() {
    require!(Ec2MetadataMock);
    let program = extdns_test_support::env_program("EXTDNS_TEST_EC2_METADATA_MOCK").expect("the mock");
    let home = tempdir();
    let port = extdns_test_support::free_port();
    let mut cmd = std::process::Command::new(program);
    cmd.args(["--hostname", "127.0.0.1", "--port", &port.to_string(), "--imdsv2"])
        .env("HOME", home.path())
        .current_dir(home.path());
    let log = home.path().join("aemm.log");
    let _mock = extdns_test_support::proc::Proc::spawn("ec2-metadata-mock", cmd, &log).expect("the mock starts");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(std::time::Instant::now() < deadline, "the mock did not listen");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let fake = Fake::start().await;
    fake.zone("example.com", false, &[]);
    let seen = Arc::new(Seen::default());
    let mut source = chain(
        &[("AWS_EC2_METADATA_SERVICE_ENDPOINT", format!("http://127.0.0.1:{port}"))],
        home.path(),
    );
    if let CredentialSource::Chain { env, .. } = &mut source {
        env.remove("AWS_EC2_METADATA_DISABLED");
    }
    let p = AwsProvider::new(config(&fake.url, source, &seen)).expect("a provider");
    p.records().await.expect("Route53 with the mock's instance profile");
    // The mock's documented defaults: role baskinc-role, access key 12345678901.
    assert_signed(&fake, "authorization", |v| v.contains("Credential=12345678901/"));
    assert_signed(&fake, "x-amz-security-token", |v| v.starts_with("TEST92test48TEST"));
    assert!(seen.count("PUT /latest/api/token") >= 1);
    assert!(seen.count("GET /latest/meta-data/iam/security-credentials/baskinc-role") >= 1);
}

/// A Route53 stand-in that refuses every request with `code` (HTTP 403, Route53's error document).
async fn route53_refusing(code: &'static str) -> String {
    let app = Router::new().fallback(move || async move {
        let body = format!(
            "<ErrorResponse><Error><Type>Sender</Type><Code>{code}</Code><Message>refused</Message></Error></ErrorResponse>"
        );
        (StatusCode::FORBIDDEN, body).into_response()
    });
    serve(app).await
}

#[tokio::test]
async fn credentials_route53_says_expired_are_fetched_anew_and_a_denied_action_keeps_them() {
    // ExpiredToken: each call drops the credentials, signs with fresh ones and is sent once more (refused
    // again here), so two calls fetch four times; AccessDenied keeps them.
    for (code, fetches) in [("ExpiredToken", 4), ("AccessDenied", 1)] {
        // Container credentials valid for hours: only Route53's answer can make them be fetched again.
        let issuer = Issuer::new(Duration::from_secs(6 * 3600));
        let agent = container_fake(issuer.clone(), "t").await;
        let home = tempdir();
        let source = chain(
            &[
                ("AWS_CONTAINER_CREDENTIALS_FULL_URI", format!("{agent}/v1/credentials")),
                ("AWS_CONTAINER_AUTHORIZATION_TOKEN", "t".into()),
            ],
            home.path(),
        );
        let route53 = route53_refusing(code).await;
        let p = AwsProvider::new(config(&route53, source, &Arc::new(Seen::default()))).expect("a provider");
        for _ in 0..2 {
            let e = p.records().await.expect_err("refused").to_string();
            assert!(e.contains(code), "{e}");
        }
        assert_eq!(issuer.fetches(), fetches, "after {code}");
    }
}
