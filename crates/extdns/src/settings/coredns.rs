//! `--provider=coredns` (and its older name `skydns`): `--coredns-*` flags and external-dns's `ETCD_*`
//! environment (read by [`CorednsConfig::from_env`]) into the provider's configuration.

use extdns_endpoint::DomainFilter;
use extdns_provider_coredns::CorednsConfig;

use super::{Env, ValidationError};
use crate::flags::Flags;

/// The CoreDNS provider's configuration; `env` reads one environment variable (tests pass their own).
pub fn config(flags: &Flags, domain_filter: &DomainFilter, env: Env<'_>) -> Result<CorednsConfig, ValidationError> {
    let f = &flags.coredns;
    if f.prefix.is_empty() {
        return Err(ValidationError("--coredns-prefix must not be empty".into()));
    }
    let mut config = CorednsConfig::from_env(f.prefix.clone(), env).map_err(|e| ValidationError(e.to_string()))?;
    config.domain_filter = domain_filter.clone();
    if f.strictly_owned {
        let owner = &flags.registry.txt_owner_id;
        if owner.is_empty() {
            return Err(ValidationError(
                "--coredns-strictly-owned needs --txt-owner-id: it is the owner written into each record".into(),
            ));
        }
        config.owned_by = Some(owner.clone());
    }
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::tests::provider_flags;
    use std::collections::HashMap;

    fn coredns(args: &[&str], env: &[(&str, &str)]) -> Result<CorednsConfig, ValidationError> {
        let env: HashMap<String, String> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        config(&provider_flags("coredns", args), &DomainFilter::default(), &|k| {
            env.get(k).cloned()
        })
    }

    #[test]
    fn defaults_are_external_dns_defaults() {
        let c = coredns(&[], &[]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.urls, ["http://localhost:2379"]);
        assert_eq!(c.prefix, "/skydns/");
        assert!(c.owned_by.is_none() && !c.tls.insecure && c.username.is_none());
    }

    #[test]
    fn the_etcd_environment_is_read() {
        // The variables' rules are provider-coredns's (CorednsConfig::from_env); here: they reach the config.
        let env = [("ETCD_URLS", "https://a:2379"), ("ETCD_USERNAME", "root")];
        let c = coredns(&["--coredns-prefix=/dns/"], &env).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (c.urls.as_slice(), c.prefix.as_str()),
            (&["https://a:2379".to_string()][..], "/dns/")
        );
        assert_eq!(c.username.as_deref(), Some("root"));
    }

    #[test]
    fn bad_environment_values_are_named() {
        let e = coredns(&[], &[("ETCD_URLS", "localhost:2379")]).err();
        assert!(e.is_some_and(|e| e.0.contains("ETCD_URLS")));
        let e = coredns(&[], &[("ETCD_TLS_INSECURE", "yes")]).err();
        assert!(e.is_some_and(|e| e.0.contains("ETCD_TLS_INSECURE")));
        let e = coredns(&[], &[("ETCD_CERT_FILE", "/c.pem")]).err();
        assert!(e.is_some_and(|e| e.0.contains("ETCD_KEY_FILE")));
    }

    #[test]
    fn strictly_owned_takes_the_owner_id() {
        let c = coredns(&["--coredns-strictly-owned=true", "--txt-owner-id=me"], &[]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.owned_by.as_deref(), Some("me"));
    }
}
