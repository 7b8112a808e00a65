//! Flags extdns accepts, because external-dns has them, but cannot honour: a value other than the default is
//! refused at startup (exit 2) with the reason, rather than silently ignored. Each flag's `--help` says so.

use super::{ValidationError, fail as refuse};
use crate::flags::Flags;

/// Source flags: checked wherever sources run (the controller and `extdns endpoints`).
pub(crate) fn sources(flags: &Flags) -> Result<(), ValidationError> {
    let t = flags.sources.target_template.trim();
    if !t.is_empty() {
        return refuse(format!(
            "--target-template is read only by external-dns's gloo-proxy, f5-virtualserver, f5-transportserver, \
             traefik-proxy and unstructured sources, and extdns does not implement it (got {t:?}); remove it"
        ));
    }
    Ok(())
}

/// Provider flags: checked by the controller and the webhook server.
pub(crate) fn providers(flags: &Flags) -> Result<(), ValidationError> {
    use crate::flags::ProviderName;
    if matches!(
        flags.provider.provider,
        Some(ProviderName::Azure | ProviderName::AzureDns | ProviderName::AzurePrivateDns)
    ) {
        return Ok(());
    }
    let zones: Vec<&str> = flags
        .provider
        .zone_name_filter
        .iter()
        .map(|z| z.trim())
        .filter(|z| !z.is_empty())
        .collect();
    if !zones.is_empty() {
        return refuse(format!(
            "--zone-name-filter is read only by the azure and azure-private-dns providers (got {}); select zones \
             with --domain-filter or --zone-id-filter",
            zones.join(", ")
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::tests::provider_flags;

    #[test]
    fn defaults_pass_and_values_that_cannot_be_honoured_are_refused_with_the_reason() {
        let f = provider_flags("inmemory", &[]);
        assert!(sources(&f).is_ok() && providers(&f).is_ok());
        let e = sources(&provider_flags("inmemory", &["--target-template={{.Name}}"]))
            .err()
            .map(|e| e.0)
            .unwrap_or_default();
        assert!(
            e.starts_with("--target-template is read only by") && e.contains("traefik-proxy"),
            "{e}"
        );
        let e = providers(&provider_flags("inmemory", &["--zone-name-filter=example.org"]))
            .err()
            .map(|e| e.0)
            .unwrap_or_default();
        assert!(e.starts_with("--zone-name-filter") && e.contains("azure"), "{e}");
    }
}
