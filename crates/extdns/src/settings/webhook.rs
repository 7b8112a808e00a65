//! `--provider=webhook` and `--webhook-server`: the `--webhook-*` flags, checked once.

use std::time::Duration;

use extdns_provider_webhook::WebhookConfig;

use super::{ProviderSettings, ValidationError, controller, fail};
use crate::flags::Flags;

/// The client of `--provider=webhook`.
pub(crate) fn config(flags: &Flags) -> Result<WebhookConfig, ValidationError> {
    let w = &flags.webhook;
    let url = WebhookConfig::parse_url(&w.webhook_provider_url)
        .map_err(|e| ValidationError(format!("--webhook-provider-url: {e}")))?;
    let mut config = WebhookConfig::new(url);
    config.read_timeout = w.webhook_provider_read_timeout;
    config.write_timeout = w.webhook_provider_write_timeout;
    config.max_body_size = max_body_size(w.webhook_provider_max_body_size)?;
    Ok(config)
}

/// `--webhook-provider-max-body-size`: 0 is no limit, as in external-dns.
fn max_body_size(bytes: i64) -> Result<Option<u64>, ValidationError> {
    match u64::try_from(bytes) {
        Ok(0) => Ok(None),
        Ok(n) => Ok(Some(n)),
        Err(_) => Err(ValidationError(format!(
            "--webhook-provider-max-body-size must not be negative (got {bytes})"
        ))),
    }
}

/// `extdns --webhook-server`: the provider the flags select, served over the webhook protocol.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct WebhookServerSettings {
    /// The provider the server serves.
    pub provider: ProviderSettings,
    /// Where the protocol is served (`--webhook-server-address`).
    pub address: String,
    /// Where `/healthz` and `/metrics` are served (`--metrics-address`).
    pub metrics_address: String,
    /// The largest request body accepted; `None` accepts any size.
    pub max_body_size: Option<u64>,
}

/// The same checks as the controller's, as external-dns makes them (it needs `--source` even as a
/// server), so a Deployment's arguments are valid for both with `--webhook-server` added.
pub fn server(flags: &Flags) -> Result<WebhookServerSettings, ValidationError> {
    let settings = controller(flags)?;
    unsupported_server_timeouts(flags)?;
    Ok(WebhookServerSettings {
        provider: settings.provider,
        address: flags.webhook.webhook_server_address.clone(),
        metrics_address: settings.metrics_address,
        max_body_size: max_body_size(flags.webhook.webhook_provider_max_body_size)?,
    })
}

/// `--webhook-server`'s connection timeouts: axum's server has no header-read, body-read, response-write or
/// keep-alive idle timeout, so only the defaults (which external-dns's chart spells out) are accepted there.
/// The read and write timeouts still bound the webhook client's requests.
fn unsupported_server_timeouts(flags: &Flags) -> Result<(), ValidationError> {
    let w = &flags.webhook;
    for (flag, value, default_secs) in [
        ("--webhook-provider-read-timeout", w.webhook_provider_read_timeout, 5),
        ("--webhook-provider-write-timeout", w.webhook_provider_write_timeout, 10),
        (
            "--webhook-provider-read-header-timeout",
            w.webhook_provider_read_header_timeout,
            5,
        ),
        ("--webhook-provider-idle-timeout", w.webhook_provider_idle_timeout, 30),
    ] {
        let default = Duration::from_secs(default_secs);
        if value != default {
            return fail(format!(
                "{flag} is not supported by extdns's webhook server (got {value:?}; only the default {default:?} is \
                 accepted, and not enforced); remove it"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(args: &[&str]) -> Flags {
        crate::settings::test_flags(args.iter().copied())
    }

    #[test]
    fn webhook_flags_become_the_client_configuration() {
        let f = flags(&[
            "--source=service",
            "--provider=webhook",
            "--webhook-provider-url=http://127.0.0.1:9999/base",
            "--webhook-provider-read-timeout=2s",
            "--webhook-provider-write-timeout=3s",
            "--webhook-provider-max-body-size=0",
        ]);
        let settings = controller(&f).map(|s| s.provider);
        let Ok(ProviderSettings::Webhook(config)) = settings else {
            panic!("{settings:?}");
        };
        assert_eq!(config.url.as_str(), "http://127.0.0.1:9999/base");
        assert_eq!(
            config.read_timeout + config.write_timeout,
            std::time::Duration::from_secs(5)
        );
        assert_eq!(config.max_body_size, None);
    }

    #[test]
    fn a_bad_url_or_a_negative_limit_names_the_flag() {
        for (arg, flag) in [
            ("--webhook-provider-url=localhost:8888", "--webhook-provider-url:"),
            (
                "--webhook-provider-max-body-size=-1",
                "--webhook-provider-max-body-size",
            ),
        ] {
            let f = flags(&["--source=service", "--provider=webhook", arg]);
            let err = controller(&f).err().map(|e| e.to_string()).unwrap_or_default();
            assert!(err.starts_with(flag), "{err}");
        }
    }

    #[test]
    fn the_server_serves_the_selected_provider_on_127_0_0_1_8888_by_default() {
        let f = flags(&["--webhook-server", "--source=service", "--provider=inmemory"]);
        let s = server(&f);
        assert!(matches!(&s, Ok(s) if s.address == "127.0.0.1:8888" && s.max_body_size == Some(33_554_432)));
        assert!(matches!(s.map(|s| s.provider), Ok(ProviderSettings::InMemory { .. })));
    }

    /// external-dns #6484's flags: the body bound (32 MiB, 0 = none) applies to both sides, the header-read
    /// and idle timeouts (5s, 30s) to the server only.
    #[test]
    fn webhook_body_limits_6484_flags_parse() {
        let f = flags(&["--source=service", "--provider=webhook"]);
        assert_eq!(
            (
                f.webhook.webhook_provider_max_body_size,
                f.webhook.webhook_provider_read_header_timeout,
                f.webhook.webhook_provider_idle_timeout
            ),
            (32 << 20, Duration::from_secs(5), Duration::from_secs(30))
        );
        let f = flags(&[
            "--source=service",
            "--provider=webhook",
            "--webhook-provider-max-body-size=1024",
            "--webhook-provider-read-header-timeout=5s",
            "--webhook-provider-idle-timeout=30s",
        ]);
        let client = controller(&f).map(|s| s.provider);
        assert!(matches!(client, Ok(ProviderSettings::Webhook(c)) if c.max_body_size == Some(1024)));
        let f = flags(&[
            "--webhook-server",
            "--source=service",
            "--provider=inmemory",
            "--webhook-provider-max-body-size=1024",
        ]);
        assert!(matches!(server(&f), Ok(s) if s.max_body_size == Some(1024)));
        let f = flags(&[
            "--webhook-server",
            "--source=service",
            "--provider=inmemory",
            "--webhook-provider-max-body-size=0",
        ]);
        assert!(matches!(server(&f), Ok(s) if s.max_body_size.is_none()));
    }

    #[test]
    fn server_timeouts_other_than_the_defaults_are_refused_with_the_reason() {
        assert!(unsupported_server_timeouts(&flags(&["--source=service"])).is_ok());
        for flag in ["--webhook-provider-idle-timeout", "--webhook-provider-write-timeout"] {
            let e = unsupported_server_timeouts(&flags(&["--source=service", &format!("{flag}=1m")])).err();
            assert!(
                e.is_some_and(|e| e.0.starts_with(&format!("{flag} is not supported"))),
                "{flag}"
            );
        }
        // The defaults spelled out, as a chart would, pass.
        let f = flags(&[
            "--source=service",
            "--webhook-provider-read-timeout=5s",
            "--webhook-provider-write-timeout=10s",
            "--webhook-provider-read-header-timeout=5s",
            "--webhook-provider-idle-timeout=30s",
        ]);
        assert!(unsupported_server_timeouts(&f).is_ok());
    }
}
