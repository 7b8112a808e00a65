//! `--provider=pihole`: the `--pihole-*` flags into the provider's configuration.

use extdns_endpoint::DomainFilter;
use extdns_provider_pihole::PiholeConfig;

use super::ValidationError;
use crate::flags::Flags;

/// The Pi-hole provider's configuration. The password comes from `--pihole-password` or, as every flag,
/// `EXTERNAL_DNS_PIHOLE_PASSWORD` (how external-dns's tutorial passes it, from a Secret).
pub fn config(flags: &Flags, domain_filter: &DomainFilter) -> Result<PiholeConfig, ValidationError> {
    let f = &flags.pihole;
    let server = f.server.trim();
    if server.is_empty() {
        return Err(ValidationError(
            "--pihole-server is required with --provider=pihole: the base URL of the Pi-hole web server \
             (http://pi.hole)"
                .into(),
        ));
    }
    if !(server.starts_with("http://") || server.starts_with("https://")) {
        return Err(ValidationError(format!(
            "--pihole-server must be an http:// or https:// URL (got {server:?})"
        )));
    }
    let mut config = PiholeConfig::new(server);
    config.password = Some(f.password.clone()).filter(|p| !p.is_empty());
    config.tls_skip_verify = f.tls_skip_verify;
    config.domain_filter = domain_filter.clone();
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::tests::provider_flags;

    #[test]
    fn the_server_is_required_and_the_flags_are_read() {
        let e = config(&provider_flags("pihole", &[]), &DomainFilter::default())
            .err()
            .map(|e| e.0);
        assert!(e.is_some_and(|e| e.contains("--pihole-server is required")));
        let e = config(
            &provider_flags("pihole", &["--pihole-server=pi.hole"]),
            &DomainFilter::default(),
        )
        .err()
        .map(|e| e.0);
        assert!(e.is_some_and(|e| e.contains("http:// or https://")));
        let c = config(
            &provider_flags(
                "pihole",
                &[
                    "--pihole-server=https://pi.hole/",
                    "--pihole-password=s3cret",
                    "--pihole-tls-skip-verify",
                ],
            ),
            &DomainFilter::default(),
        );
        let c = c.unwrap_or_else(|e| panic!("{}", e.0));
        assert_eq!(c.server, "https://pi.hole/");
        assert_eq!(c.password.as_deref(), Some("s3cret"));
        assert!(c.tls_skip_verify);
        assert!(!format!("{c:?}").contains("s3cret"), "Debug hides the password");
        let open = config(
            &provider_flags("pihole", &["--pihole-server=http://pi.hole"]),
            &DomainFilter::default(),
        );
        assert!(open.is_ok_and(|c| c.password.is_none()));
    }
}
