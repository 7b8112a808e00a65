//! `--provider=pdns` from external-dns's `--pdns-*` flags, the shared `--tls-*` ones and the domain filter
//! (which picks the PowerDNS zones). The provider checks the rest (the URL, the TLS files) when it is built.

use extdns_endpoint::DomainFilter;
use extdns_provider_pdns::PdnsConfig;

use super::{ValidationError, tls_options};
use crate::flags::Flags;

/// The PowerDNS provider's configuration.
pub(crate) fn config(flags: &Flags, domain_filter: &DomainFilter) -> Result<PdnsConfig, ValidationError> {
    let f = &flags.pdns;
    if f.api_key.trim().is_empty() {
        return Err(ValidationError(
            "--pdns-api-key is required with --provider=pdns (the API refuses requests without a key)".into(),
        ));
    }
    if f.server_id.trim().is_empty() {
        return Err(ValidationError("--pdns-server-id must not be empty".into()));
    }
    let mut config = PdnsConfig::new(f.server.trim(), f.api_key.trim());
    config.server_id = f.server_id.trim().to_string();
    config.domain_filter = domain_filter.clone();
    config.tls = tls_options(flags, f.skip_tls_verify);
    Ok(config)
}

/// The flag behind the PowerDNS setting a configuration error is about.
pub(crate) fn flag(e: &extdns_provider_pdns::ConfigError) -> &'static str {
    use extdns_provider_pdns::Setting;
    match e.setting() {
        Setting::ApiKey => "--pdns-api-key",
        Setting::Server => "--pdns-server",
        Setting::ServerId => "--pdns-server-id",
        Setting::TlsCa => "--tls-ca",
        Setting::TlsClientCert => "--tls-client-cert/--tls-client-cert-key",
        _ => "--provider=pdns",
    }
}

#[cfg(test)]
mod tests {
    use crate::providers::build_provider;
    use crate::settings::tests::test_flags;
    use crate::settings::{ProviderSettings, controller};

    fn settings(extra: &[&str]) -> Result<ProviderSettings, String> {
        let flags = test_flags(["--source=service", "--provider=pdns"].iter().chain(extra).copied());
        controller(&flags).map(|s| s.provider).map_err(|e| e.0)
    }

    #[test]
    fn pdns_flags_fill_the_provider_configuration() {
        let s = settings(&[
            "--pdns-api-key=secret",
            "--pdns-server=https://pdns.example.org:8081",
            "--pdns-server-id=ns1",
            "--pdns-skip-tls-verify=true",
            "--tls-ca=/etc/ca.pem",
            "--domain-filter=example.org",
        ]);
        let Ok(ProviderSettings::Pdns(config)) = s else {
            panic!("expected PowerDNS settings, got {s:?}")
        };
        assert_eq!(config.server, "https://pdns.example.org:8081");
        assert_eq!(config.server_id, "ns1");
        assert_eq!(config.api_key, "secret");
        assert!(config.tls.skip_verify);
        assert_eq!(config.tls.ca_file.as_deref(), Some(std::path::Path::new("/etc/ca.pem")));
        assert_eq!(config.tls.client_cert, None);
        assert!(config.domain_filter.matches("a.example.org") && !config.domain_filter.matches("a.example.com"));
    }

    #[test]
    fn pdns_needs_an_api_key() {
        let e = settings(&[]).err().unwrap_or_default();
        assert!(e.starts_with("--pdns-api-key is required with --provider=pdns"), "{e}");
    }

    #[tokio::test]
    async fn pdns_configuration_errors_name_the_flag() {
        async fn build(extra: &[&str]) -> String {
            match settings(extra) {
                Ok(s) => build_provider(&s).await.err().map(|e| e.0).unwrap_or_default(),
                Err(e) => panic!("{e}"),
            }
        }
        let e = build(&["--pdns-api-key=k", "--pdns-server=ftp://pdns"]).await;
        assert!(e.starts_with("--pdns-server: ") && e.contains("ftp://pdns"), "{e}");
        let e = build(&["--pdns-api-key=k", "--tls-ca=/nonexistent/ca.pem"]).await;
        assert!(e.starts_with("--tls-ca: ") && e.contains("/nonexistent/ca.pem"), "{e}");
        assert_eq!(build(&["--pdns-api-key=k"]).await, "", "the defaults build");
    }
}
