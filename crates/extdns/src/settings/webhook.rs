//! `--provider=webhook` and `--webhook-server`: the `--webhook-*` flags, checked once.

use extdns_provider_webhook::{ServerOptions, ServerTimeouts, WebhookConfig};

use super::{ProviderSettings, ValidationError, controller, count};
use crate::flags::Flags;

/// The client of `--provider=webhook`: its whole-request timeout is read + write, as external-dns's.
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
    let bytes: u64 = count("--webhook-provider-max-body-size", bytes, false)?;
    Ok(Some(bytes).filter(|&n| n > 0))
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
    /// The body bound and the connection timeouts, any values accepted as external-dns accepts them (zero
    /// is none).
    pub options: ServerOptions,
}

/// The same checks as the controller's, as external-dns makes them (it needs `--source` even as a
/// server), so a Deployment's arguments are valid for both with `--webhook-server` added.
pub fn server(flags: &Flags) -> Result<WebhookServerSettings, ValidationError> {
    let settings = controller(flags)?;
    let w = &flags.webhook;
    Ok(WebhookServerSettings {
        provider: settings.provider,
        address: w.webhook_server_address.clone(),
        metrics_address: settings.metrics_address,
        options: ServerOptions {
            max_body_size: max_body_size(w.webhook_provider_max_body_size)?,
            timeouts: ServerTimeouts {
                read_header: w.webhook_provider_read_header_timeout,
                read: w.webhook_provider_read_timeout,
                write: w.webhook_provider_write_timeout,
                idle: w.webhook_provider_idle_timeout,
            },
        },
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn flags(args: &[&str]) -> Flags {
        crate::settings::tests::test_flags(args.iter().copied())
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
        assert!(matches!(&s, Ok(s) if s.address == "127.0.0.1:8888" && s.options == ServerOptions::default()));
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
        assert!(matches!(server(&f), Ok(s) if s.options.max_body_size == Some(1024)));
        let f = flags(&[
            "--webhook-server",
            "--source=service",
            "--provider=inmemory",
            "--webhook-provider-max-body-size=0",
        ]);
        assert!(matches!(server(&f), Ok(s) if s.options.max_body_size.is_none()));
    }

    /// external-dns v0.23 (#6484) gives `--webhook-server` four timeouts; any value goes to the server, zero
    /// (none) included.
    #[test]
    fn webhook_server_timeouts_6484_reach_the_server_whatever_their_value() {
        let f = flags(&[
            "--webhook-server",
            "--source=service",
            "--provider=inmemory",
            "--webhook-provider-read-header-timeout=1s",
            "--webhook-provider-read-timeout=0s",
            "--webhook-provider-write-timeout=1m",
            "--webhook-provider-idle-timeout=250ms",
        ]);
        let timeouts = server(&f).map(|s| s.options.timeouts);
        assert!(
            matches!(timeouts, Ok(t) if t == ServerTimeouts {
                read_header: Duration::from_secs(1),
                read: Duration::ZERO,
                write: Duration::from_secs(60),
                idle: Duration::from_millis(250),
            }),
            "{timeouts:?}"
        );
    }
}
