//! `--provider-request-rate`: the request budget of one cloud account, which every pipeline of the account
//! shares (`extdns_provider::budget`). Unset, each cloud's documented limit stays, as its configuration
//! sets it. `--provider-reread-interval`: how seldom the zones are read whole, which is what a steady
//! state spends of that budget.

use std::time::Duration;

use extdns_provider::pace::Rate;

use super::{ProviderSettings, ValidationError, fail};
use crate::flags::ProviderName;

/// How long the rate-limited clouds' records are planned from without reading the zones again: an hour
/// costs one full read an hour (Route53 one list page per 300 records), where reading every sync would
/// spend the account's budget on reads that find nothing new; extdns's own writes are folded in between.
pub const CLOUD_REREAD_INTERVAL: Duration = Duration::from_secs(3600);

/// `--provider-reread-interval`, or its default: [`CLOUD_REREAD_INTERVAL`] for the providers whose API
/// is rate-limited per account, zero (every sync) for the others, whose servers have no such budget.
pub fn reread_interval(provider: Option<ProviderName>, flag: Option<Duration>) -> Duration {
    flag.unwrap_or(match provider {
        Some(
            ProviderName::Aws
            | ProviderName::Cloudflare
            | ProviderName::Google
            | ProviderName::Azure
            | ProviderName::AzureDns
            | ProviderName::AzurePrivateDns,
        ) => CLOUD_REREAD_INTERVAL,
        _ => Duration::ZERO,
    })
}

/// Sets the account's rate of the cloud providers from `--provider-request-rate` (requests a second, 0
/// for the documented limit); the other providers have no account limit and ignore it.
pub fn set_request_rate(provider: &mut ProviderSettings, per_second: f64) -> Result<(), ValidationError> {
    if per_second == 0.0 {
        return Ok(());
    }
    let Some(rate) = Rate::per_second(per_second) else {
        return fail(format!(
            "--provider-request-rate={per_second}: want a positive number of requests a second (0 for the cloud's documented limit)"
        ));
    };
    match provider {
        ProviderSettings::Aws(config) => config.requests_per_second = per_second,
        ProviderSettings::Cloudflare(config) => config.api.requests = Some(rate),
        ProviderSettings::Google(config) => config.api.requests = Some(rate),
        ProviderSettings::Azure(config) => config.api.requests = Some(rate),
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn provider(args: &[&str]) -> Result<ProviderSettings, ValidationError> {
        let flags = super::super::test_flags(["--source=service"].iter().chain(args).copied());
        let env = |name: &str| (name == "CF_API_TOKEN").then(|| "tok".to_string());
        Ok(super::super::controller_with_env(&flags, &env)?.provider)
    }

    #[test]
    fn the_rate_limited_clouds_read_their_zones_hourly_and_the_others_every_sync() {
        let interval = |args: &[&str]| {
            let flags = super::super::test_flags(["--source=service"].iter().chain(args).copied());
            let env = |name: &str| (name == "CF_API_TOKEN").then(|| "tok".to_string());
            super::super::controller_with_env(&flags, &env)
                .map(|s| s.controller.records_cache_interval)
                .map_err(|e| e.to_string())
        };
        let hour = Ok(CLOUD_REREAD_INTERVAL);
        assert_eq!(interval(&["--provider=aws"]), hour);
        assert_eq!(interval(&["--provider=cloudflare"]), hour);
        assert_eq!(interval(&["--provider=inmemory"]), Ok(Duration::ZERO));
        assert_eq!(
            interval(&["--provider=inmemory", "--provider-reread-interval=10m"]),
            Ok(Duration::from_secs(600))
        );
        assert_eq!(
            interval(&["--provider=aws", "--provider-reread-interval=0s"]),
            Ok(Duration::ZERO),
            "0s reads every sync"
        );
        assert_eq!(
            interval(&[
                "--provider=aws",
                "--provider-reread-interval=0s",
                "--provider-cache-time=2m"
            ]),
            Ok(Duration::from_secs(120)),
            "the longest of the caches wins"
        );
        assert_eq!(reread_interval(Some(ProviderName::Google), None), CLOUD_REREAD_INTERVAL);
        assert_eq!(reread_interval(Some(ProviderName::Rfc2136), None), Duration::ZERO);
    }

    #[test]
    fn the_request_rate_sets_each_cloud_s_account_rate_and_zero_keeps_the_documented_one() {
        let cloudflare = |args: &[&str]| match provider(&[&["--provider=cloudflare"], args].concat()) {
            Ok(ProviderSettings::Cloudflare(c)) => c.api.requests,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            cloudflare(&[]),
            Some(extdns_provider_cloudflare::API_LIMIT),
            "the documented limit by default"
        );
        assert_eq!(cloudflare(&["--provider-request-rate=2"]), Rate::per_second(2.0));
        match provider(&["--provider=aws", "--provider-request-rate=20"]) {
            Ok(ProviderSettings::Aws(c)) => assert_eq!(c.requests_per_second, 20.0),
            other => panic!("{other:?}"),
        }
        for bad in ["-1", "NaN"] {
            let arg = format!("--provider-request-rate={bad}");
            let e = provider(&["--provider=inmemory", &arg]).expect_err("refused");
            assert!(e.0.starts_with("--provider-request-rate="), "{e}");
        }
    }
}
