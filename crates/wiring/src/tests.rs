//! The settings' own rules: which provider takes which rate, whose owner id the plan reads, and the
//! registries that cannot be built without more than the settings.

use std::sync::Arc;

use extdns_controller::Metrics;
use extdns_provider::InMemoryProvider;
use extdns_provider::pace::Rate;
use extdns_provider_cloudflare::{Auth, CloudflareConfig};
use extdns_registry_crd::CrdRegistryConfig;

use crate::{ProviderSettings, RegistryError, RegistrySettings, build_registry};

fn cloudflare() -> ProviderSettings {
    ProviderSettings::Cloudflare(Box::new(CloudflareConfig::new(Auth::Token("t".into()))))
}

#[test]
fn the_account_rate_reaches_the_clouds_only_and_a_rate_that_is_no_rate_changes_nothing() {
    let mut settings = cloudflare();
    let documented = match &settings {
        ProviderSettings::Cloudflare(c) => c.api.requests,
        other => panic!("{other:?}"),
    };
    settings.set_request_rate(0.0);
    settings.set_request_rate(f64::NAN);
    assert!(matches!(&settings, ProviderSettings::Cloudflare(c) if c.api.requests == documented));
    settings.set_request_rate(2.0);
    assert!(matches!(&settings, ProviderSettings::Cloudflare(c) if c.api.requests == Rate::per_second(2.0)));

    let mut memory = ProviderSettings::InMemory {
        zones: Vec::new(),
        write_rate: None,
    };
    memory.set_request_rate(2.0);
    memory.set_write_rate(Rate::per_second(5.0));
    assert!(matches!(memory, ProviderSettings::InMemory { write_rate, .. } if write_rate == Rate::per_second(5.0)));
    assert_eq!(memory.name(), "inmemory");
}

#[test]
fn an_account_rate_for_azure_bounds_its_writes_too() {
    use extdns_provider_azure::{AzureConfig, CredentialSource, Kind, WRITE_LIMIT};
    let mut settings = ProviderSettings::Azure(Box::new(AzureConfig::new(
        Kind::Public,
        "sub",
        "rg",
        CredentialSource::Token("t".into()),
    )));
    assert!(matches!(&settings, ProviderSettings::Azure(c) if c.api.account_writes == Some(WRITE_LIMIT)));
    settings.set_request_rate(50.0);
    assert!(matches!(
        &settings,
        ProviderSettings::Azure(c) if c.api.requests == Rate::per_second(50.0) && c.api.account_writes == Rate::per_second(50.0)
    ));
}

#[test]
fn the_owner_id_is_the_registry_s_and_none_without_ownership() -> Result<(), Box<dyn std::error::Error>> {
    let crd = RegistrySettings::Crd(CrdRegistryConfig::new("cluster-a", "")?);
    assert_eq!((crd.owner_id(), crd.name()), ("cluster-a", "crd"));
    assert_eq!(RegistrySettings::Noop.owner_id(), "");
    assert_eq!(RegistrySettings::Unsupported("aws-sd").name(), "aws-sd");
    Ok(())
}

#[test]
fn a_registry_that_needs_a_client_or_that_extdns_lacks_is_refused_by_kind() -> Result<(), Box<dyn std::error::Error>> {
    let provider = Arc::new(InMemoryProvider::new(vec!["example.org".into()]));
    let metrics = Arc::new(Metrics::new("test", "test"));
    let crd = RegistrySettings::Crd(CrdRegistryConfig::new("cluster-a", "")?);
    assert!(matches!(
        build_registry(&crd, provider.clone(), &metrics),
        Err(RegistryError::NeedsClient)
    ));
    let unsupported = build_registry(&RegistrySettings::Unsupported("aws-sd"), provider.clone(), &metrics);
    assert_eq!(
        unsupported.err().map(|e| e.to_string()).as_deref(),
        Some("registry aws-sd is not supported by extdns yet")
    );
    assert!(build_registry(&RegistrySettings::Noop, provider, &metrics).is_ok());
    Ok(())
}
