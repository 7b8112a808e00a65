//! `--provider-request-rate`: the request budget of one cloud account, which every pipeline of the account
//! shares (`extdns_provider::budget`). Unset, each cloud's documented limit stays, as its configuration
//! sets it.

use extdns_provider::pace::Rate;

use super::{ProviderSettings, ValidationError, fail};

/// Sets the account's rate of the cloud providers from `--provider-request-rate` (requests a second, 0
/// for the documented limit); the other providers have no account limit and ignore it.
pub fn set_request_rate(provider: &mut ProviderSettings, per_second: f64) -> Result<(), ValidationError> {
    if per_second == 0.0 {
        return Ok(());
    }
    if Rate::per_second(per_second).is_none() {
        return fail(format!(
            "--provider-request-rate={per_second}: want a positive number of requests a second (0 for the cloud's documented limit)"
        ));
    }
    provider.set_request_rate(per_second);
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
