//! `--provider=azure` (`azure-dns`) and `--provider=azure-private-dns`: azure.json and the `--azure-*` flags,
//! `--zone-name-filter`, `--zone-id-filter` and the domain filters into the Azure provider's configuration.
//! The file is read once at startup, as external-dns reads it; a missing or invalid file stops the start.

use extdns_endpoint::DomainFilter;
use extdns_provider_azure::{AzureConfig, AzureFile, CREDENTIAL_VARIABLES, CredentialSource, IMDS_URL, Kind};

use super::{Env, ValidationError, env_value};
use crate::flags::Flags;

/// extdns's own variable moving the managed identity endpoint (a test's fake; Azure's own is fixed).
pub const IMDS_URL_ENV: &str = "EXTDNS_AZURE_IMDS_URL";

/// The Azure provider's configuration; `env` reads one environment variable (tests pass their own).
pub fn config(
    flags: &Flags,
    kind: Kind,
    domain_filter: &DomainFilter,
    env: Env<'_>,
) -> Result<AzureConfig, ValidationError> {
    let f = &flags.azure;
    let invalid = |m: String| ValidationError(format!("--provider={}: {m}", kind.flag()));
    let path = f.config_file.trim();
    let text = std::fs::read_to_string(path).map_err(|e| {
        invalid(format!(
            "cannot read the Azure config file {path} (--azure-config-file): {e}"
        ))
    })?;
    let file = AzureFile::parse(&text).map_err(|e| invalid(format!("{path}: {e}")))?;
    let cloud = file.cloud().map_err(|e| invalid(format!("{path}: {e}")))?;
    let pick = |flag: &str, from_file: &str| {
        let flag = flag.trim();
        if flag.is_empty() { from_file.trim() } else { flag }.to_string()
    };
    let vars: Vec<(&str, Option<String>)> = CREDENTIAL_VARIABLES.iter().map(|k| (*k, env(k))).collect();
    let imds = env_value(env, IMDS_URL_ENV).unwrap_or_else(|| IMDS_URL.to_string());
    let credentials = CredentialSource::select(&file, &cloud, &f.user_assigned_identity_client_id, &imds, &|k| {
        vars.iter().find(|(n, _)| *n == k).and_then(|(_, v)| v.clone())
    })
    .map_err(|e| invalid(e.to_string()))?;
    let mut config = AzureConfig::new(
        kind,
        &pick(&f.subscription_id, &file.subscription_id),
        &pick(&f.resource_group, &file.resource_group),
        credentials,
    );
    config.cloud = cloud;
    config.zones_cache_duration = f.zones_cache_duration;
    config.api.calls.backoff.max_attempts = AzureConfig::attempts_for(f.maxretries_count);
    config.zones = super::zones(flags, domain_filter);
    config.zone_names = flags
        .provider
        .zone_name_filter
        .iter()
        .map(|z| z.trim().trim_end_matches('.').to_ascii_lowercase())
        .filter(|z| !z.is_empty())
        .collect();
    if config.subscription_id.is_empty() {
        return Err(invalid(
            "no subscription: set subscriptionId in the config file or --azure-subscription-id".into(),
        ));
    }
    if config.resource_group.is_empty() {
        return Err(invalid(
            "no resource group: set resourceGroup in the config file or --azure-resource-group".into(),
        ));
    }
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::tests::{env_of, provider_flags};
    use std::time::Duration;

    fn azure(json: &str, args: &[&str], env: &[(&str, &str)]) -> Result<AzureConfig, ValidationError> {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("azure.json");
        std::fs::write(&path, json).unwrap_or_else(|e| panic!("{e}"));
        let file = format!("--azure-config-file={}", path.display());
        let flags = provider_flags("azure", &[[file.as_str()].as_slice(), args].concat());
        config(&flags, Kind::Public, &DomainFilter::default(), &env_of(env))
    }

    #[test]
    fn the_file_and_the_flags_are_read() {
        let json = r#"{"tenantId":"t","subscriptionId":"file-sub","resourceGroup":"file-rg",
                       "useManagedIdentityExtension":true,"userAssignedIdentityID":"file-uai"}"#;
        let c = azure(json, &[], &[]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (c.subscription_id.as_str(), c.resource_group.as_str()),
            ("file-sub", "file-rg")
        );
        assert_eq!(c.zones_cache_duration, Duration::ZERO);
        assert_eq!(
            c.api.calls.backoff.max_attempts, 4,
            "--azure-maxretries-count=3 is four attempts"
        );
        assert!(
            matches!(&c.credentials, CredentialSource::Managed { imds, client_id } if imds == IMDS_URL && client_id.as_deref() == Some("file-uai"))
        );
        let c = azure(
            json,
            &[
                "--azure-subscription-id=flag-sub",
                "--azure-resource-group=flag-rg",
                "--azure-user-assigned-identity-client-id=flag-uai",
                "--azure-zones-cache-duration=5m",
                "--azure-maxretries-count=-1",
                "--zone-name-filter=Example.org.",
                "--zone-id-filter=/dnszones/example.org",
            ],
            &[(IMDS_URL_ENV, "http://127.0.0.1:9")],
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (c.subscription_id.as_str(), c.resource_group.as_str()),
            ("flag-sub", "flag-rg")
        );
        assert_eq!(c.zones_cache_duration, Duration::from_secs(300));
        assert_eq!(c.api.calls.backoff.max_attempts, 1);
        assert_eq!(c.zone_names, ["example.org"]);
        assert_eq!(c.zones.zone_ids, ["/dnszones/example.org"]);
        assert!(
            matches!(&c.credentials, CredentialSource::Managed { imds, client_id } if imds == "http://127.0.0.1:9" && client_id.as_deref() == Some("flag-uai"))
        );
    }

    #[test]
    fn problems_are_named() {
        let e = azure(r#"{"subscriptionId":"s","resourceGroup":"r"}"#, &[], &[])
            .err()
            .map(|e| e.0);
        assert!(e.is_some_and(|e| e.contains("no credentials provided") && e.contains("managed identity")));
        let e = azure(r#"{"useManagedIdentityExtension":true,"resourceGroup":"r"}"#, &[], &[])
            .err()
            .map(|e| e.0);
        assert!(e.is_some_and(|e| e.contains("--azure-subscription-id")));
        let e = azure(r#"{"cloud":"Mars"}"#, &[], &[]).err().map(|e| e.0);
        assert!(e.is_some_and(|e| e.contains("Mars")));
        let e = azure("not json", &[], &[]).err().map(|e| e.0);
        assert!(e.is_some_and(|e| e.contains("azure.json")));
    }
}
