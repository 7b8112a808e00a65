//! `--registry=txt`: the `--txt-*` ownership flags, checked by the registry's own rules; `--registry=crd`:
//! the owner id and `--crd-registry-namespace`; `--registry=dynamodb`: the table, its region and the AWS
//! credentials.

use extdns_endpoint::RecordType;
use extdns_provider_aws::AssumeRole;
use extdns_registry::{Ownership, OwnershipConfig, OwnershipStore, RegistryError};
use extdns_registry_crd::{CrdRegistryConfig, CrdRegistryError};
use extdns_registry_dynamodb::DynamoDbConfig;

use super::{Env, ProviderSettings, ValidationError, count, invalid, non_empty};
use crate::flags::{Flags, OwnershipStoreName};

/// The TXT registry's ownership settings, validated; errors name the flag at fault.
pub(crate) fn ownership(flags: &Flags) -> Result<Ownership, ValidationError> {
    let r = &flags.registry;
    let mut config = OwnershipConfig::default();
    config.owner_id = r.txt_owner_id.clone();
    config.prefix = r.txt_prefix.clone();
    config.suffix = r.txt_suffix.clone();
    config.wildcard_replacement = r.txt_wildcard_replacement.clone();
    config.encrypt_enabled = r.txt_encrypt_enabled;
    config.encrypt_aes_key = non_empty(&r.txt_encrypt_aes_key);
    config.migrate_from_owner = non_empty(&r.migrate_from_txt_owner);
    config.adopt_from_owner = non_empty(&r.txt_adopt_from_owner);
    Ownership::new(config).map_err(|e| {
        invalid(match e {
            RegistryError::EmptyOwnerId => "--txt-owner-id must not be empty".to_string(),
            RegistryError::PrefixAndSuffix => {
                "--txt-prefix and --txt-suffix are mutually exclusive; set only one".to_string()
            }
            RegistryError::InvalidKey(e) => format!("--txt-encrypt-aes-key: {e}"),
            RegistryError::EncryptionWithoutKey => {
                "--txt-encrypt-enabled needs --txt-encrypt-aes-key (32 bytes, raw or standard base64)".to_string()
            }
            other => other.to_string(),
        })
    })
}

/// `--txt-ownership`: ownership on the records themselves only where the provider keeps metadata on them
/// (Cloudflare, Azure, Azure Private DNS); any other provider is refused at startup, by name.
pub(crate) fn store(flags: &Flags, provider: &ProviderSettings) -> Result<OwnershipStore, ValidationError> {
    match flags.registry.txt_ownership {
        OwnershipStoreName::Txt => Ok(OwnershipStore::Txt),
        OwnershipStoreName::Metadata => match provider {
            ProviderSettings::Cloudflare(_) | ProviderSettings::Azure(_) => Ok(OwnershipStore::Metadata),
            other => Err(invalid(format!(
                "--txt-ownership=metadata: provider {} keeps no metadata on its records (only cloudflare, azure \
                 and azure-private-dns do); use --txt-ownership=txt",
                other.name()
            ))),
        },
    }
}

/// The CRD registry's settings: `--txt-owner-id` is the DNSRecords' owner label, so it must be a label value;
/// `--crd-registry-namespace` empty is the controller's own namespace.
/// `--txt-adopt-from-owner` adopts the DNSRecords that owner released to us (docs/migration.md).
pub(crate) fn crd(flags: &Flags) -> Result<CrdRegistryConfig, ValidationError> {
    let r = &flags.registry;
    let config = CrdRegistryConfig::new(&r.txt_owner_id, r.crd_registry_namespace.trim()).map_err(|e| {
        invalid(match e {
            CrdRegistryError::EmptyOwnerId => "--txt-owner-id must not be empty".to_string(),
            other => format!("--txt-owner-id: {other}"),
        })
    })?;
    config
        .adopting_from(r.txt_adopt_from_owner.trim())
        .map_err(|e| invalid(e.to_string()))
}

/// The DynamoDB registry's settings: the owner id and the `--txt-*` flags its migration reads TXT ownership
/// records with (as for the TXT registry), `--dynamodb-table`, `--dynamodb-region` (else the environment's
/// region), the AWS credential chain with `--aws-assume-role`, and `--aws-api-retries`, as external-dns's
/// DynamoDB client gets them.
pub(crate) fn dynamodb(
    flags: &Flags,
    managed: &[RecordType],
    excluded: &[RecordType],
    var: Env<'_>,
) -> Result<DynamoDbConfig, ValidationError> {
    let r = &flags.registry;
    let aws = &flags.aws;
    let assume_role = AssumeRole::from_flags(&aws.assume_role, &aws.assume_role_external_id);
    let mut config = DynamoDbConfig::from_env(
        &r.dynamodb_table,
        &r.dynamodb_region,
        ownership(flags)?,
        assume_role,
        var,
    )
    .map_err(|e| invalid(format!("--registry=dynamodb: {e}")))?;
    config.txt_managed = managed.contains(&RecordType::Txt) && !excluded.contains(&RecordType::Txt);
    let retries: u32 = count("--aws-api-retries", aws.api_retries, false)?;
    config.client.backoff.max_attempts = retries.saturating_add(1);
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(args: &[&str], vars: &[(&str, &str)]) -> Result<DynamoDbConfig, ValidationError> {
        let flags = crate::settings::tests::test_flags(
            [
                "--source=service",
                "--provider=aws",
                "--registry=dynamodb",
                "--txt-owner-id=me",
            ]
            .iter()
            .chain(args)
            .copied(),
        );
        let env = |k: &str| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string());
        dynamodb(&flags, &[RecordType::A, RecordType::Txt], &[], &env)
    }

    #[test]
    fn the_dynamodb_flags_and_the_environment_reach_the_registry() -> Result<(), ValidationError> {
        let c = config(
            &["--dynamodb-table=dns-owners", "--aws-api-retries=5"],
            &[
                ("AWS_REGION", "eu-west-1"),
                ("AWS_ENDPOINT_URL_DYNAMODB", "http://127.0.0.1:4566"),
            ],
        )?;
        assert_eq!(c.table, "dns-owners");
        assert_eq!(c.ownership.owner_id(), "me");
        assert_eq!(c.client.region, "eu-west-1");
        assert_eq!(c.client.endpoint.as_str(), "http://127.0.0.1:4566/");
        assert_eq!(c.client.backoff.max_attempts, 6);
        assert!(c.txt_managed);

        // --dynamodb-region wins over the environment; without an endpoint variable, DynamoDB's own.
        let c = config(&["--dynamodb-region=us-west-2"], &[("AWS_REGION", "eu-west-1")])?;
        assert_eq!(
            (c.table.as_str(), c.client.region.as_str()),
            ("external-dns", "us-west-2")
        );
        assert_eq!(c.client.endpoint.as_str(), "https://dynamodb.us-west-2.amazonaws.com/");
        Ok(())
    }

    #[test]
    fn a_missing_region_is_named() {
        let e = config(&[], &[]).expect_err("no region");
        assert!(e.to_string().contains("--dynamodb-region"), "{e}");
    }
}
