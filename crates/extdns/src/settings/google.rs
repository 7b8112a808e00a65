//! `--provider=google`: the `--google-*` flags, `--zone-id-filter` and the domain filters into the Cloud
//! DNS provider's configuration; credentials from Application Default Credentials, as external-dns finds
//! them.

use extdns_endpoint::DomainFilter;
use extdns_provider_google::{CREDENTIAL_VARIABLES, CredentialSource, GoogleConfig, Visibility};

use super::{Env, ValidationError, batching, env_value};
use crate::flags::Flags;

/// extdns's own variable pointing the provider at another Cloud DNS endpoint (a proxy, a test fake).
pub const BASE_URL_ENV: &str = "EXTDNS_GOOGLE_API_URL";

/// The Google provider's configuration; `env` reads one environment variable (tests pass their own).
pub fn config(flags: &Flags, domain_filter: &DomainFilter, env: Env<'_>) -> Result<GoogleConfig, ValidationError> {
    let f = &flags.google;
    let invalid = |m: String| Err(ValidationError(m));
    let batch = batching(
        "--google-batch-change-size",
        f.batch_change_size,
        f.batch_change_interval,
        false,
    )?;
    let zone_visibility = match f.zone_visibility.trim() {
        "" => None,
        "public" => Some(Visibility::Public),
        "private" => Some(Visibility::Private),
        other => {
            return invalid(format!(
                "--google-zone-visibility must be public, private or empty (got {other:?})"
            ));
        }
    };
    let vars: Vec<(&str, Option<String>)> = CREDENTIAL_VARIABLES.iter().map(|k| (*k, env(k))).collect();
    let credentials = CredentialSource::adc(&|k| vars.iter().find(|(n, _)| *n == k).and_then(|(_, v)| v.clone()));
    let mut config = GoogleConfig::new(credentials);
    let project = f.project.trim();
    config.project = (!project.is_empty()).then(|| project.to_string());
    if let Some(url) = env_value(env, BASE_URL_ENV) {
        config.base_url = url;
    }
    config.batch = batch;
    config.zone_visibility = zone_visibility;
    config.zones = super::zones(flags, domain_filter);
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::tests::{env_of, provider_flags};
    use std::time::Duration;

    fn google(args: &[&str], env: &[(&str, &str)]) -> Result<GoogleConfig, ValidationError> {
        config(&provider_flags("google", args), &DomainFilter::default(), &env_of(env))
    }

    #[test]
    fn external_dns_s_defaults() {
        let c = google(&[], &[]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.project, None, "asked of the metadata server");
        assert_eq!(c.batch.size, 1000);
        assert_eq!(c.batch.interval, Duration::from_secs(1));
        assert_eq!(c.zone_visibility, None);
        assert_eq!(c.base_url, extdns_provider_google::DEFAULT_BASE_URL);
    }

    #[test]
    fn flags_are_read() {
        let c = google(
            &[
                "--google-project=my-project",
                "--google-batch-change-size=50",
                "--google-batch-change-interval=250ms",
                "--google-zone-visibility=private",
                "--zone-id-filter=1234",
                "--zone-id-filter=prod-zone",
            ],
            &[
                (BASE_URL_ENV, "http://127.0.0.1:1/dns/v1"),
                ("GOOGLE_APPLICATION_CREDENTIALS", "/var/secrets/google/key.json"),
            ],
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.project.as_deref(), Some("my-project"));
        assert_eq!(c.batch.size, 50);
        assert_eq!(c.batch.interval, Duration::from_millis(250));
        assert_eq!(c.zone_visibility, Some(Visibility::Private));
        assert_eq!(c.zones.zone_ids, ["1234", "prod-zone"]);
        assert_eq!(c.base_url, "http://127.0.0.1:1/dns/v1");
        let CredentialSource::Adc { env } = &c.credentials else {
            panic!("ADC expected")
        };
        assert_eq!(
            env.get("GOOGLE_APPLICATION_CREDENTIALS").map(String::as_str),
            Some("/var/secrets/google/key.json")
        );
    }

    #[test]
    fn bad_values_are_named() {
        let e = google(&["--google-zone-visibility=internal"], &[]).err().map(|e| e.0);
        assert!(e.is_some_and(|e| e.contains("--google-zone-visibility") && e.contains("internal")));
        let e = google(&["--google-batch-change-size=-1"], &[]).err().map(|e| e.0);
        assert!(e.is_some_and(|e| e.contains("--google-batch-change-size")));
    }
}
