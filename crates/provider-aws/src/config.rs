//! The provider's configuration, and the credentials and endpoint read from the standard AWS environment.

use std::num::NonZeroU32;
use std::time::Duration;

use extdns_provider::budget::AccountKey;
use extdns_provider::pace::Rate;
use extdns_provider::{ApiSettings, Backoff, Batching, CallSettings, ZoneSelection};
use url::Url;

use extdns_aws::{AssumeRole, CredentialSource, Credentials};

/// Route53's own endpoint; only tests and other partitions need another.
pub const DEFAULT_ENDPOINT: &str = "https://route53.amazonaws.com";

/// Which hosted zones to manage by their visibility.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ZoneType {
    /// Zones reachable from the internet.
    Public,
    /// Zones attached to VPCs.
    Private,
}

/// Everything the provider needs, typed. The binary builds it from external-dns's `--aws-*` flags and the
/// environment; tests build it directly.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AwsConfig {
    /// Route53's endpoint (scheme, host, port); requests go to `<endpoint>/2013-04-01/...`.
    pub endpoint: Url,
    /// Where the signing keys come from.
    pub credentials: CredentialSource,
    /// A role assumed with the credentials the source gives (`--aws-assume-role`).
    pub assume_role: Option<AssumeRole>,
    /// Temporary credentials are replaced this long before they expire (the SDKs' five minutes).
    pub credentials_refresh_before: Duration,
    /// The region requests are signed for: Route53 is global and signs for `us-east-1` (the China and
    /// GovCloud partitions have their own).
    pub signing_region: String,
    /// Only zones whose name the filter accepts (or, with `zone_match_parent`, that contain a name it
    /// accepts), and only these zone ids (without the `/hostedzone/` prefix; a suffix of the id matches).
    pub zones: ZoneSelection,
    /// `--aws-zone-match-parent`: a filtered domain also selects the zones above it.
    pub zone_match_parent: bool,
    /// `--aws-zone-type`: only public or only private zones; `None` for both.
    pub zone_type: Option<ZoneType>,
    /// Only zones carrying every one of these tags.
    pub zone_tags: Vec<(String, String)>,
    /// Changes per ChangeResourceRecordSets call (`--aws-batch-change-size`; Route53 allows 1000) and the
    /// pause between two change calls (`--aws-batch-change-interval`).
    pub batch: Batching,
    /// Characters of record values per call (Route53 allows 32,000).
    pub batch_change_size_bytes: usize,
    /// Record values per call (Route53 allows 1000).
    pub batch_change_size_values: usize,
    /// Time limit of one HTTP request (signing's credential calls too), retries of a throttled or failed
    /// call before the sync gives up (`--aws-api-retries` plus the first call), and rates: every request
    /// of the account at most [`AwsConfig::account_rate`] of 5 a second by default, every pipeline of the
    /// account together ([`AwsConfig::account`]): Route53 allows 5 per account ("five requests per second
    /// per AWS account", <https://docs.aws.amazon.com/Route53/latest/DeveloperGuide/DNSLimitations.html>;
    /// AWS's newer <https://docs.aws.amazon.com/Route53/latest/DeveloperGuide/throttling-api-requests.html>
    /// gives the account a token bucket of 50 refilled 10 a second, which 5 a second stays within);
    /// `--provider-request-rate` sets another. Change requests at most `--provider-write-rate`.
    pub api: ApiSettings,
    /// evaluate-target-health of alias records that do not say.
    pub evaluate_target_health: bool,
    /// Publish CNAMEs to AWS load balancers and the like as CNAMEs rather than alias records.
    pub prefer_cname: bool,
    /// Keep the zone list this long (zero: read it every sync).
    pub zones_cache_duration: Duration,
    /// Told about every HTTP request (the binary's request-duration metric).
    pub observer: extdns_provider::http::Observer,
}

impl AwsConfig {
    /// external-dns's defaults around these credentials and endpoint.
    pub fn new(endpoint: Url, credentials: Credentials) -> Self {
        Self::with_source(endpoint, CredentialSource::Static(credentials))
    }

    /// external-dns's defaults around this endpoint, with credentials from `credentials`.
    pub fn with_source(endpoint: Url, credentials: CredentialSource) -> Self {
        AwsConfig {
            observer: Default::default(),
            endpoint,
            credentials,
            assume_role: None,
            credentials_refresh_before: Duration::from_secs(300),
            signing_region: "us-east-1".to_string(),
            zones: ZoneSelection::default(),
            zone_match_parent: false,
            zone_type: None,
            zone_tags: Vec::new(),
            batch: Batching::new(1000, Duration::from_secs(1)),
            batch_change_size_bytes: 32000,
            batch_change_size_values: 1000,
            api: ApiSettings {
                calls: CallSettings {
                    backoff: Backoff {
                        initial: Duration::from_millis(500),
                        max: Duration::from_secs(10),
                        max_attempts: AwsConfig::attempts_for(3),
                        ..Backoff::default()
                    },
                    ..CallSettings::default()
                },
                ..ApiSettings::new(AwsConfig::account_rate(5.0))
            },
            evaluate_target_health: true,
            prefer_cname: false,
            zones_cache_duration: Duration::ZERO,
        }
    }

    /// The credential chain over the standard AWS variables (`extdns_aws`), the region (`AWS_REGION`
    /// or `AWS_DEFAULT_REGION`) and the endpoint (`AWS_ENDPOINT_URL_ROUTE_53` or `AWS_ENDPOINT_URL`). `var`
    /// reads one variable, so tests need not touch the process environment; the variables are read now,
    /// the credentials when the provider first needs them.
    pub fn from_env(var: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let get = |name: &str| var(name).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
        let credentials = CredentialSource::chain(&var, None);
        let region = get("AWS_REGION")
            .or_else(|| get("AWS_DEFAULT_REGION"))
            .unwrap_or_default();
        let (default_endpoint, signing_region) = if region.starts_with("cn-") {
            ("https://route53.amazonaws.com.cn", "cn-northwest-1")
        } else if region.starts_with("us-gov-") {
            ("https://route53.us-gov.amazonaws.com", "us-gov-west-1")
        } else {
            (DEFAULT_ENDPOINT, "us-east-1")
        };
        let (variable, text) = match (get("AWS_ENDPOINT_URL_ROUTE_53"), get("AWS_ENDPOINT_URL")) {
            (Some(e), _) => ("AWS_ENDPOINT_URL_ROUTE_53", e),
            (None, Some(e)) => ("AWS_ENDPOINT_URL", e),
            (None, None) => ("", default_endpoint.to_string()),
        };
        let endpoint = parse_endpoint(variable, &text)?;
        let mut config = AwsConfig::with_source(endpoint, credentials);
        config.signing_region = signing_region.to_string();
        Ok(config)
    }

    /// Whom Route53 counts this configuration's requests for, as far as the configuration tells without
    /// asking AWS: the account of the role it ends up as (`--aws-assume-role`, else web identity's
    /// `AWS_ROLE_ARN`), else the access key it signs with, else the profile it reads, else the ambient
    /// credentials every such pipeline shares (the pod's or node's). Two access keys of one account are
    /// two keys here: telling them apart would take a call to STS.
    pub fn account(&self) -> AccountKey {
        let endpoint = self.endpoint.as_str();
        let role_account = |arn: &str| arn.split(':').nth(4).filter(|a| !a.is_empty()).map(str::to_string);
        if let Some(account) = self.assume_role.as_ref().and_then(|r| role_account(&r.role_arn)) {
            return AccountKey::named("route53", endpoint, &account);
        }
        let identity = match &self.credentials {
            CredentialSource::Static(c) => format!("key {}", c.access_key_id),
            CredentialSource::Chain { env, profile } => {
                let var = |name: &str| env.get(name).map(|v| v.trim()).filter(|v| !v.is_empty());
                match (var("AWS_ROLE_ARN").and_then(role_account), var("AWS_ACCESS_KEY_ID")) {
                    (Some(account), _) => return AccountKey::named("route53", endpoint, &account),
                    (None, Some(key)) => format!("key {key}"),
                    (None, None) => match profile.as_deref().or(var("AWS_PROFILE")) {
                        Some(p) => format!("profile {p}"),
                        None => "ambient credentials".to_string(),
                    },
                }
            }
            _ => "ambient credentials".to_string(),
        };
        AccountKey::named("route53", endpoint, &identity)
    }

    /// The account's pace: `per_second` as that many in any second, not one every `1 / n` s. Route53
    /// meters a token bucket of five refilled five a second, which admits five at once; spacing them
    /// evenly would start a first sync's writes a second later for nothing (34 requests, 6.6 s instead of
    /// 6). Against that bucket a window of `n` a second tolerates arrivals as late (`(n - 1) / n` s) as
    /// even spacing does. Below one a second, or for a fraction, requests are spaced evenly; `None` (no
    /// pace) for a rate that is not positive and finite.
    pub fn account_rate(per_second: f64) -> Option<Rate> {
        match NonZeroU32::new(per_second as u32) {
            Some(n) if per_second.fract() == 0.0 => Some(Rate::new(n, Duration::from_secs(1))),
            _ => Rate::per_second(per_second),
        }
    }

    /// The attempts of a call for `--aws-api-retries`: the first and that many retries.
    pub fn attempts_for(retries: u32) -> u32 {
        retries.saturating_add(1)
    }

    /// Checks what types cannot: non-zero batch limits, and a pace (Route53 meters every account: an
    /// unpaced client would spend it).
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.api.requests.is_none() {
            return Err(ConfigError::Zero(Setting::RequestsPerSecond));
        }
        for (setting, value) in [
            (Setting::BatchChangeSize, self.batch.size),
            (Setting::BatchChangeSizeBytes, self.batch_change_size_bytes),
            (Setting::BatchChangeSizeValues, self.batch_change_size_values),
        ] {
            if value == 0 {
                return Err(ConfigError::Zero(setting));
            }
        }
        Ok(())
    }
}

fn parse_endpoint(variable: &'static str, text: &str) -> Result<Url, ConfigError> {
    let url = Url::parse(text).map_err(|source| ConfigError::Endpoint {
        variable,
        value: text.to_string(),
        source,
    })?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(ConfigError::EndpointScheme {
            variable,
            value: text.to_string(),
        });
    }
    Ok(url)
}

/// A setting of [`AwsConfig`], so the binary can name its flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Setting {
    /// `--aws-batch-change-size`.
    BatchChangeSize,
    /// `--aws-batch-change-size-bytes`.
    BatchChangeSizeBytes,
    /// `--aws-batch-change-size-values`.
    BatchChangeSizeValues,
    /// The request pace.
    RequestsPerSecond,
}

impl std::fmt::Display for Setting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Setting::BatchChangeSize => "batch change size",
            Setting::BatchChangeSizeBytes => "batch change size in bytes",
            Setting::BatchChangeSizeValues => "batch change size in values",
            Setting::RequestsPerSecond => "requests per second",
        })
    }
}

/// A Route53 configuration that cannot work.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The endpoint from the environment is not a URL.
    #[error("the Route53 endpoint {value:?} (from {variable}) is not a URL: {source}")]
    Endpoint {
        /// The variable it came from.
        variable: &'static str,
        /// Its value.
        value: String,
        /// The URL parser's reason.
        #[source]
        source: url::ParseError,
    },
    /// The endpoint is a URL but not one to send requests to.
    #[error("the Route53 endpoint {value:?} (from {variable}) is not an http(s)://host[:port] URL")]
    EndpointScheme {
        /// The variable it came from.
        variable: &'static str,
        /// Its value.
        value: String,
    },
    /// A size or rate of 0 would never send anything.
    #[error("the {0} must be at least 1")]
    Zero(Setting),
    /// The HTTP client could not be built.
    #[error("Route53: {0}")]
    Client(#[source] extdns_provider::http::HttpError),
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |k| map.get(k).cloned()
    }

    #[test]
    fn the_account_rate_admits_a_second_s_requests_at_once_and_spaces_fractions() {
        let config = AwsConfig::from_env(env(&[("AWS_ACCESS_KEY_ID", "AKIDONE")])).expect("a value");
        let window = |r: Option<Rate>| r.map(|r| (r.requests(), r.window()));
        assert_eq!(
            window(config.api.requests),
            Some((5, Duration::from_secs(1))),
            "Route53's five a second"
        );
        let rate = |per_second| window(AwsConfig::account_rate(per_second));
        assert_eq!(rate(2.5), Some((1, Duration::from_millis(400))));
        assert_eq!(rate(0.5), Some((1, Duration::from_secs(2))));
        assert_eq!(rate(0.0), None);
    }

    #[test]
    fn the_account_is_the_role_s_else_the_key_else_the_profile_else_the_ambient_credentials() {
        let account = |pairs: &[(&str, &str)]| AwsConfig::from_env(env(pairs)).expect("a value").account();
        let key = [("AWS_ACCESS_KEY_ID", "AKIDONE"), ("AWS_SECRET_ACCESS_KEY", "s")];
        assert_eq!(
            account(&key),
            account(&[("AWS_ACCESS_KEY_ID", "AKIDONE")]),
            "one key, one account"
        );
        assert_ne!(account(&key), account(&[("AWS_ACCESS_KEY_ID", "AKIDTWO")]));
        fn role(arn: &str) -> [(&str, &str); 2] {
            [("AWS_ROLE_ARN", arn), ("AWS_WEB_IDENTITY_TOKEN_FILE", "/t")]
        }
        assert_eq!(
            account(&role("arn:aws:iam::111122223333:role/a")),
            account(&role("arn:aws:iam::111122223333:role/b")),
            "two roles of one account"
        );
        let mut assumed = AwsConfig::from_env(env(&key)).expect("a value");
        assumed.assume_role = Some(AssumeRole {
            role_arn: "arn:aws:iam::111122223333:role/dns".into(),
            external_id: None,
        });
        assert_eq!(assumed.account(), account(&role("arn:aws:iam::111122223333:role/a")));
        assert_ne!(account(&[("AWS_PROFILE", "a")]), account(&[("AWS_PROFILE", "b")]));
        assert_eq!(
            account(&[]),
            account(&[("AWS_REGION", "eu-west-1")]),
            "the ambient credentials"
        );
        assert_ne!(
            account(&[]),
            account(&[("AWS_ENDPOINT_URL_ROUTE_53", "http://127.0.0.1:1")]),
            "another endpoint is another budget"
        );
        assert!(account(&key).to_string().contains("AKIDONE"), "no secret in it");
    }

    #[test]
    fn credentials_and_the_route53_endpoint_come_from_the_environment() {
        let c = AwsConfig::from_env(env(&[
            ("AWS_ACCESS_KEY_ID", "AKID"),
            ("AWS_SECRET_ACCESS_KEY", "secret"),
            ("AWS_SESSION_TOKEN", "tok"),
            ("AWS_ENDPOINT_URL", "http://127.0.0.1:1"),
            ("AWS_ENDPOINT_URL_ROUTE_53", "http://127.0.0.1:5555"),
        ]))
        .expect("a value");
        assert_eq!(c.endpoint.as_str(), "http://127.0.0.1:5555/");
        match &c.credentials {
            CredentialSource::Chain { env, profile } => {
                assert_eq!(env.get("AWS_SESSION_TOKEN").map(String::as_str), Some("tok"));
                assert_eq!(profile, &None);
            }
            other => panic!("not the chain: {other:?}"),
        }
        assert_eq!(c.signing_region, "us-east-1");
        assert!(!format!("{c:?}").contains("secret"));
    }

    #[test]
    fn the_china_partition_signs_for_its_own_region() {
        let c = AwsConfig::from_env(env(&[
            ("AWS_ACCESS_KEY_ID", "AKID"),
            ("AWS_SECRET_ACCESS_KEY", "s"),
            ("AWS_REGION", "cn-north-1"),
        ]))
        .expect("a value");
        assert_eq!(c.signing_region, "cn-northwest-1");
        assert_eq!(c.endpoint.host_str(), Some("route53.amazonaws.com.cn"));
    }

    #[test]
    fn bad_endpoints_are_named() {
        let e = AwsConfig::from_env(env(&[
            ("AWS_ACCESS_KEY_ID", "AKID"),
            ("AWS_SECRET_ACCESS_KEY", "s"),
            ("AWS_ENDPOINT_URL", "ftp://x"),
        ]))
        .expect_err("an error");
        assert!(
            e.to_string().contains("AWS_ENDPOINT_URL") && e.to_string().contains("ftp://x"),
            "{e}"
        );
    }

    #[test]
    fn zero_batch_limits_are_refused() {
        let mut c = AwsConfig::new(
            Url::parse(DEFAULT_ENDPOINT).expect("a value"),
            Credentials::new("a", "b"),
        );
        assert!(c.validate().is_ok());
        c.batch_change_size_values = 0;
        assert!(matches!(
            c.validate(),
            Err(ConfigError::Zero(Setting::BatchChangeSizeValues))
        ));
    }
}
