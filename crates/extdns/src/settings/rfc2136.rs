//! `--provider=rfc2136` from external-dns's `--rfc2136-*` flags (and the shared `--tls-*` ones). The
//! provider checks the rest (TSIG key and algorithm, TLS files) when it is built.

use extdns_provider_rfc2136::{LoadBalancing, Rfc2136Config};

use super::{ValidationError, count, fail, tls_options};
use crate::flags::{Flags, LoadBalancingStrategy};

/// The RFC 2136 provider's configuration.
pub(crate) fn config(flags: &Flags) -> Result<Rfc2136Config, ValidationError> {
    let f = &flags.rfc2136;
    if f.gss_tsig {
        return fail("Kerberos/GSS-TSIG is not supported by extdns (--rfc2136-gss-tsig); use TSIG keys instead");
    }
    let batch_change_size = count("--rfc2136-batch-change-size", f.batch_change_size, true)?;
    if f.host.iter().all(|h| h.trim().is_empty()) {
        return fail("--rfc2136-host is required with --provider=rfc2136");
    }
    if f.zone.iter().all(|z| z.trim().is_empty()) {
        return fail("--rfc2136-zone is required with --provider=rfc2136: name every zone extdns may update");
    }
    Ok(Rfc2136Config {
        hosts: f.host.clone(),
        port: f.port,
        zones: f.zone.clone(),
        insecure: f.insecure,
        tsig_keyname: f.tsig_keyname.clone(),
        tsig_secret: f.tsig_secret.clone(),
        tsig_secret_alg: f.tsig_secret_alg.clone(),
        // The flag or its deprecated alias.
        axfr: f.axfr || f.tsig_axfr,
        min_ttl: f.min_ttl,
        batch_change_size,
        gss_tsig: f.gss_tsig,
        load_balancing: match f.load_balancing_strategy {
            LoadBalancingStrategy::Random => LoadBalancing::Random,
            LoadBalancingStrategy::RoundRobin => LoadBalancing::RoundRobin,
            LoadBalancingStrategy::Disabled => LoadBalancing::Disabled,
        },
        tls: f.use_tls.then(|| tls_options(flags, f.skip_tls_verify)),
        ..Rfc2136Config::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn axfr(extra: &[&str]) -> Result<bool, ValidationError> {
        let args = ["--source=service", "--rfc2136-host=ns", "--rfc2136-zone=example.org"];
        Ok(config(&crate::settings::tests::test_flags(args.iter().chain(extra).copied()))?.axfr)
    }

    #[test]
    fn tsig_axfr_is_an_alias_of_axfr() -> Result<(), ValidationError> {
        assert!(axfr(&["--rfc2136-tsig-axfr"])?);
        assert!(axfr(&["--rfc2136-axfr"])?);
        assert!(!axfr(&[])?);
        Ok(())
    }
}
