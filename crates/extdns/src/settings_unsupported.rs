//! Flags extdns accepts, because external-dns has them, but cannot honour: a value other than the default is
//! refused at startup (exit 2) with the reason, rather than silently ignored. Each flag's `--help` says so.

use std::time::Duration;

use crate::flags::Flags;
use crate::settings::ValidationError;

fn refuse<T>(message: String) -> Result<T, ValidationError> {
    Err(ValidationError(message))
}

/// Source flags: checked wherever sources run (the controller and `extdns endpoints`).
pub(crate) fn sources(flags: &Flags) -> Result<(), ValidationError> {
    let t = flags.sources.target_template.trim();
    if !t.is_empty() {
        return refuse(format!(
            "--target-template is read only by external-dns's gloo-proxy, f5-virtualserver, f5-transportserver, \
             traefik-proxy and unstructured sources, which extdns does not have (got {t:?}); remove it"
        ));
    }
    Ok(())
}

/// Provider flags: checked by the controller and the webhook server.
pub(crate) fn providers(flags: &Flags) -> Result<(), ValidationError> {
    let zones: Vec<&str> = flags
        .provider
        .zone_name_filter
        .iter()
        .map(|z| z.trim())
        .filter(|z| !z.is_empty())
        .collect();
    if !zones.is_empty() {
        return refuse(format!(
            "--zone-name-filter is read only by external-dns's azure and azure-private-dns providers, which extdns \
             does not have (got {}); select zones with --domain-filter or --zone-id-filter",
            zones.join(", ")
        ));
    }
    Ok(())
}

/// `--webhook-server`'s connection timeouts: axum's server has no header-read, body-read, response-write or
/// keep-alive idle timeout, so only the defaults (which external-dns's chart spells out) are accepted there.
/// The read and write timeouts still bound the webhook client's requests.
pub(crate) fn webhook_server(flags: &Flags) -> Result<(), ValidationError> {
    let w = &flags.webhook;
    for (flag, value, default) in [
        (
            "--webhook-provider-read-timeout",
            w.webhook_provider_read_timeout,
            Duration::from_secs(5),
        ),
        (
            "--webhook-provider-write-timeout",
            w.webhook_provider_write_timeout,
            Duration::from_secs(10),
        ),
        (
            "--webhook-provider-read-header-timeout",
            w.webhook_provider_read_header_timeout,
            Duration::from_secs(5),
        ),
        (
            "--webhook-provider-idle-timeout",
            w.webhook_provider_idle_timeout,
            Duration::from_secs(30),
        ),
    ] {
        if value != default {
            return refuse(format!(
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
        let base = ["extdns", "--source=service", "--provider=inmemory"];
        match crate::flags::try_parse_from(base.into_iter().chain(args.iter().copied())) {
            Ok(cli) => cli.flags,
            Err(e) => panic!("{args:?}: {e}"),
        }
    }

    #[test]
    fn defaults_pass_and_values_that_cannot_be_honoured_are_refused_with_the_reason() {
        let f = flags(&[]);
        assert!(sources(&f).is_ok() && providers(&f).is_ok() && webhook_server(&f).is_ok());
        let e = sources(&flags(&["--target-template={{.Name}}"]))
            .err()
            .map(|e| e.0)
            .unwrap_or_default();
        assert!(
            e.starts_with("--target-template is read only by") && e.contains("traefik-proxy"),
            "{e}"
        );
        let e = providers(&flags(&["--zone-name-filter=example.org"]))
            .err()
            .map(|e| e.0)
            .unwrap_or_default();
        assert!(e.starts_with("--zone-name-filter") && e.contains("azure"), "{e}");
        let e = webhook_server(&flags(&["--webhook-provider-idle-timeout=1m"]))
            .err()
            .map(|e| e.0);
        assert!(e.is_some_and(|e| e.starts_with("--webhook-provider-idle-timeout is not supported")));
        let e = webhook_server(&flags(&["--webhook-provider-write-timeout=1m"]))
            .err()
            .map(|e| e.0);
        assert!(e.is_some_and(|e| e.starts_with("--webhook-provider-write-timeout is not supported")));
        // The defaults spelled out, as a chart would, pass.
        let f = flags(&[
            "--webhook-provider-read-timeout=5s",
            "--webhook-provider-write-timeout=10s",
            "--webhook-provider-read-header-timeout=5s",
            "--webhook-provider-idle-timeout=30s",
        ]);
        assert!(webhook_server(&f).is_ok());
    }
}
