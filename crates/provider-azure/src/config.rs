//! The provider's configuration: `azure.json` as external-dns reads it (keys matched without regard to case,
//! as Go's `encoding/json` matches them), the cloud it names, and the `--azure-*` flags, typed.

use std::collections::BTreeMap;
use std::num::NonZeroU32;
use std::path::PathBuf;
use std::time::Duration;

use extdns_provider::budget::AccountKey;
use extdns_provider::credentials::{NoCredentials, Tried};
use extdns_provider::pace::Rate;
use extdns_provider::{ApiSettings, Backoff, CallSettings, ZoneSelection};

use crate::credentials::{CredentialSource, CredentialsError, HEADLINE, SourceError};

/// Public Azure DNS's api-version (armdns v1.2.0, what external-dns v0.23.0 links).
pub const PUBLIC_API_VERSION: &str = "2018-05-01";
/// Azure Private DNS's api-version (armprivatedns v1.3.0).
pub const PRIVATE_API_VERSION: &str = "2024-06-01";
/// Where Azure's managed identity endpoint (IMDS) answers on every VM and AKS node.
pub const IMDS_URL: &str = "http://169.254.169.254";

/// Which of the two Azure DNS services.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Azure DNS (`--provider=azure`, `azure-dns`): `Microsoft.Network/dnsZones`.
    Public,
    /// Azure Private DNS (`--provider=azure-private-dns`): `Microsoft.Network/privateDnsZones`.
    Private,
}

impl Kind {
    /// The api-version external-dns's SDK speaks for this service.
    pub fn api_version(self) -> &'static str {
        match self {
            Kind::Public => PUBLIC_API_VERSION,
            Kind::Private => PRIVATE_API_VERSION,
        }
    }

    /// The ARM resource type in paths.
    pub fn resource(self) -> &'static str {
        match self {
            Kind::Public => "dnsZones",
            Kind::Private => "privateDnsZones",
        }
    }

    /// The segment listing every record set of a zone (`all` and `ALL` in the two APIs).
    pub fn all(self) -> &'static str {
        match self {
            Kind::Public => "all",
            Kind::Private => "ALL",
        }
    }

    /// The prefix of a record set's `type` (`Microsoft.Network/dnszones/A`, lower-case `z` in public DNS).
    pub fn type_prefix(self) -> &'static str {
        match self {
            Kind::Public => "Microsoft.Network/dnszones/",
            Kind::Private => "Microsoft.Network/privateDnsZones/",
        }
    }

    /// The provider's name as the flag spells it.
    pub fn flag(self) -> &'static str {
        match self {
            Kind::Public => "azure",
            Kind::Private => "azure-private-dns",
        }
    }
}

/// Where a cloud's identity platform and Resource Manager are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cloud {
    /// The Microsoft identity platform (`https://login.microsoftonline.com`).
    pub authority_host: String,
    /// Azure Resource Manager (`https://management.azure.com`).
    pub resource_manager: String,
    /// The audience tokens are asked for (`https://management.core.windows.net/`, as azcore asks); the scope
    /// is `<audience>/.default`.
    pub audience: String,
}

impl Cloud {
    fn known(authority: &str, arm: &str, audience: &str) -> Cloud {
        Cloud {
            authority_host: authority.to_string(),
            resource_manager: arm.to_string(),
            audience: audience.to_string(),
        }
    }

    /// Azure's public cloud.
    pub fn public() -> Cloud {
        Cloud::known(
            "https://login.microsoftonline.com",
            "https://management.azure.com",
            "https://management.core.windows.net/",
        )
    }
}

/// `azure.json`, the fields external-dns reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct AzureFile {
    /// `cloud`.
    pub cloud: String,
    /// `tenantId`.
    pub tenant_id: String,
    /// `subscriptionId`.
    pub subscription_id: String,
    /// `resourceGroup`.
    pub resource_group: String,
    /// `aadClientId`.
    pub aad_client_id: String,
    /// `aadClientSecret`.
    pub aad_client_secret: String,
    /// `useManagedIdentityExtension`.
    pub use_managed_identity_extension: bool,
    /// `userAssignedIdentityID`.
    pub user_assigned_identity_id: String,
    /// `useWorkloadIdentityExtension`.
    pub use_workload_identity_extension: bool,
    /// `activeDirectoryAuthorityHost` (AzureStackCloud).
    pub active_directory_authority_host: String,
    /// `resourceManagerEndpoint` (AzureStackCloud).
    pub resource_manager_endpoint: String,
    /// `resourceManagerAudience` (AzureStackCloud).
    pub resource_manager_audience: String,
}

impl AzureFile {
    /// Parse the file's text. Keys match without regard to case (the tutorial writes `aadClientID`); an
    /// unknown key is ignored, a known key of the wrong JSON type is an error naming it.
    pub fn parse(text: &str) -> Result<AzureFile, ConfigError> {
        let value: serde_json::Value = serde_json::from_str(text).map_err(|e| ConfigError::File(e.to_string()))?;
        let serde_json::Value::Object(map) = value else {
            return Err(ConfigError::File("not a JSON object".into()));
        };
        // Go's encoding/json: the last of keys that differ only in case wins.
        let fields: BTreeMap<String, serde_json::Value> =
            map.into_iter().map(|(k, v)| (k.to_ascii_lowercase(), v)).collect();
        let text = |key: &str| -> Result<String, ConfigError> {
            match fields.get(&key.to_ascii_lowercase()) {
                None | Some(serde_json::Value::Null) => Ok(String::new()),
                Some(serde_json::Value::String(s)) => Ok(s.clone()),
                Some(_) => Err(ConfigError::File(format!("{key} must be a string"))),
            }
        };
        let flag = |key: &str| -> Result<bool, ConfigError> {
            match fields.get(&key.to_ascii_lowercase()) {
                None | Some(serde_json::Value::Null) => Ok(false),
                Some(serde_json::Value::Bool(b)) => Ok(*b),
                Some(_) => Err(ConfigError::File(format!("{key} must be true or false"))),
            }
        };
        Ok(AzureFile {
            cloud: text("cloud")?,
            tenant_id: text("tenantId")?,
            subscription_id: text("subscriptionId")?,
            resource_group: text("resourceGroup")?,
            aad_client_id: text("aadClientId")?,
            aad_client_secret: text("aadClientSecret")?,
            use_managed_identity_extension: flag("useManagedIdentityExtension")?,
            user_assigned_identity_id: text("userAssignedIdentityID")?,
            use_workload_identity_extension: flag("useWorkloadIdentityExtension")?,
            active_directory_authority_host: text("activeDirectoryAuthorityHost")?,
            resource_manager_endpoint: text("resourceManagerEndpoint")?,
            resource_manager_audience: text("resourceManagerAudience")?,
        })
    }

    /// The cloud `cloud` names, as external-dns maps it (case-insensitive; empty is the public cloud;
    /// `AzureStackCloud` takes its endpoints from the file).
    pub fn cloud(&self) -> Result<Cloud, ConfigError> {
        match self.cloud.to_ascii_uppercase().as_str() {
            "" | "AZURECLOUD" | "AZUREPUBLICCLOUD" => Ok(Cloud::public()),
            "AZUREUSGOVERNMENT" | "AZUREUSGOVERNMENTCLOUD" => Ok(Cloud::known(
                "https://login.microsoftonline.us",
                "https://management.usgovcloudapi.net",
                "https://management.core.usgovcloudapi.net/",
            )),
            "AZURECHINACLOUD" => Ok(Cloud::known(
                "https://login.chinacloudapi.cn",
                "https://management.chinacloudapi.cn",
                "https://management.core.chinacloudapi.cn/",
            )),
            "AZURESTACKCLOUD" => {
                let need = |v: &str, key: &'static str| match v.trim() {
                    "" => Err(ConfigError::Stack(key)),
                    v => Ok(v.to_string()),
                };
                Ok(Cloud {
                    authority_host: need(&self.active_directory_authority_host, "activeDirectoryAuthorityHost")?
                        .trim_end_matches('/')
                        .to_string(),
                    resource_manager: need(&self.resource_manager_endpoint, "resourceManagerEndpoint")?
                        .trim_end_matches('/')
                        .to_string(),
                    // Kept as written: the scope is the audience followed by `/.default`, as azcore builds it.
                    audience: need(&self.resource_manager_audience, "resourceManagerAudience")?,
                })
            }
            _ => Err(ConfigError::Cloud(self.cloud.clone())),
        }
    }
}

impl CredentialSource {
    /// The identity external-dns would pick for this file, environment (`env` reads [`crate::CREDENTIAL_VARIABLES`]) and
    /// `--azure-user-assigned-identity-client-id` (`user_assigned`, overriding the file's).
    pub fn select(
        file: &AzureFile,
        cloud: &Cloud,
        user_assigned: &str,
        imds: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<CredentialSource, CredentialsError> {
        let var = |k: &str| env(k).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
        let mut tried = Vec::new();
        let (id, secret) = (file.aad_client_id.trim(), file.aad_client_secret.trim());
        let msi = |v: &str| v.eq_ignore_ascii_case("msi");
        if !id.is_empty() && !secret.is_empty() && !msi(id) && !msi(secret) {
            return Ok(CredentialSource::ClientSecret {
                authority: cloud.authority_host.clone(),
                tenant: file.tenant_id.trim().to_string(),
                client_id: id.to_string(),
                secret: secret.to_string(),
            });
        }
        tried.push(Tried::not_configured(
            "client secret",
            SourceError::NotConfigured(if msi(id) || msi(secret) {
                "aadClientId/aadClientSecret is the \"msi\" placeholder"
            } else {
                "aadClientId or aadClientSecret is empty"
            }),
        ));
        if file.use_workload_identity_extension {
            let tenant = Some(file.tenant_id.trim().to_string())
                .filter(|t| !t.is_empty())
                .or_else(|| var("AZURE_TENANT_ID"));
            let client = Some(id.to_string())
                .filter(|c| !c.is_empty() && !msi(c))
                .or_else(|| var("AZURE_CLIENT_ID"));
            let file_var = var("AZURE_FEDERATED_TOKEN_FILE");
            return match (tenant, client, file_var) {
                (Some(tenant), Some(client_id), Some(f)) => Ok(CredentialSource::Workload {
                    authority: cloud.authority_host.clone(),
                    tenant,
                    client_id,
                    token_file: PathBuf::from(f),
                }),
                (t, c, f) => {
                    let missing: Vec<&str> = [
                        (t.is_none(), "a tenant (tenantId or AZURE_TENANT_ID)"),
                        (c.is_none(), "a client id (aadClientId or AZURE_CLIENT_ID)"),
                        (f.is_none(), "AZURE_FEDERATED_TOKEN_FILE"),
                    ]
                    .into_iter()
                    .filter_map(|(m, s)| m.then_some(s))
                    .collect();
                    tried.push(Tried::failed(
                        "workload identity",
                        SourceError::Workload(missing.join(", ")),
                    ));
                    Err(NoCredentials::new(HEADLINE, tried))
                }
            };
        }
        tried.push(Tried::not_configured(
            "workload identity",
            SourceError::NotConfigured("useWorkloadIdentityExtension is not true"),
        ));
        if file.use_managed_identity_extension {
            let uai = Some(user_assigned.trim())
                .filter(|u| !u.is_empty())
                .or(Some(file.user_assigned_identity_id.trim()).filter(|u| !u.is_empty()));
            return Ok(CredentialSource::Managed {
                imds: imds.trim_end_matches('/').to_string(),
                client_id: uai.map(str::to_string),
            });
        }
        tried.push(Tried::not_configured(
            "managed identity",
            SourceError::NotConfigured("useManagedIdentityExtension is not true"),
        ));
        Err(NoCredentials::new(HEADLINE, tried))
    }
}

/// The provider's settings. Built with [`AzureConfig::new`], then adjusted field by field.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AzureConfig {
    /// Public or private DNS.
    pub kind: Kind,
    /// The subscription (`--azure-subscription-id`, else the file's).
    pub subscription_id: String,
    /// The resource group zones are listed in (`--azure-resource-group`, else the file's).
    pub resource_group: String,
    /// Where Resource Manager is.
    pub cloud: Cloud,
    /// Where tokens come from.
    pub credentials: CredentialSource,
    /// `--azure-zones-cache-duration`: how long a zone list is reused; zero reads it every sync.
    pub zones_cache_duration: Duration,
    /// `--zone-name-filter`: zones with these names are managed whatever the other filters say.
    pub zone_names: Vec<String>,
    /// `--domain-filter` and its relatives, and `--zone-id-filter`: suffixes of a zone's ARM id; empty for
    /// all.
    pub zones: ZoneSelection,
    /// Time limit, retries (of 408, 429 and 5xx; `--azure-maxretries-count` sets the attempts) and
    /// rates: every request at most [`READ_LIMIT`] and PUTs and DELETEs at most [`WRITE_LIMIT`] per
    /// subscription ([`AzureConfig::account`]), a pipeline's own PUTs and DELETEs at most
    /// `--provider-write-rate`.
    pub api: ApiSettings,
    /// Told about every HTTP request (the binary's request-duration metric).
    pub observer: extdns_provider::http::Observer,
}

/// Resource Manager's limit on a subscription's reads, a token bucket of 250 refilled 25 a second
/// (<https://learn.microsoft.com/en-us/azure/azure-resource-manager/management/request-limits-and-throttling>),
/// paced as at most 250 in any 10.1 s: a window of the bucket's size over the time it takes to refill
/// never empties it, and the tenth of a second absorbs requests arriving later than they left. Writes count
/// under it too, which only keeps further from the limit.
pub const READ_LIMIT: Rate = Rate::new(
    match NonZeroU32::new(250) {
        Some(n) => n,
        None => NonZeroU32::MIN,
    },
    Duration::from_millis(10_100),
);

/// The same page's limit on a subscription's writes (and, as a bucket of its own, deletes): 200 refilled
/// 10 a second, paced as at most 200 in any 20.2 s.
pub const WRITE_LIMIT: Rate = Rate::new(
    match NonZeroU32::new(200) {
        Some(n) => n,
        None => NonZeroU32::MIN,
    },
    Duration::from_millis(20_200),
);

impl AzureConfig {
    /// Whom Resource Manager counts this configuration's requests for: its subscription.
    pub fn account(&self) -> AccountKey {
        AccountKey::named(
            "azure",
            &self.cloud.resource_manager,
            &self.subscription_id.to_ascii_lowercase(),
        )
    }

    /// external-dns's defaults for this service, subscription and resource group.
    pub fn new(kind: Kind, subscription_id: &str, resource_group: &str, credentials: CredentialSource) -> AzureConfig {
        AzureConfig {
            kind,
            subscription_id: subscription_id.to_string(),
            resource_group: resource_group.to_string(),
            cloud: Cloud::public(),
            credentials,
            zones_cache_duration: Duration::ZERO,
            zone_names: Vec::new(),
            zones: ZoneSelection::default(),
            api: ApiSettings {
                calls: CallSettings {
                    backoff: Backoff {
                        initial: Duration::from_millis(800),
                        max: Duration::from_secs(60),
                        max_attempts: 4,
                        ..Backoff::default()
                    },
                    ..CallSettings::default()
                },
                account_writes: Some(WRITE_LIMIT),
                ..ApiSettings::new(Some(READ_LIMIT))
            },
            observer: Default::default(),
        }
    }

    /// The attempts `--azure-maxretries-count` means, as azcore reads it: 0 is its default of 3 retries,
    /// a negative count none.
    pub fn attempts_for(max_retries: i64) -> u32 {
        match max_retries {
            0 => 4,
            n if n < 0 => 1,
            n => u32::try_from(n).unwrap_or(u32::MAX - 1).saturating_add(1),
        }
    }
}

/// A configuration the provider refuses to start with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// `azure.json` is not what external-dns reads.
    #[error("the Azure config file is not valid: {0}")]
    File(String),
    /// `cloud` names no known cloud.
    #[error(
        "the Azure config file names an unknown cloud {0:?} (AzurePublicCloud, AzureUSGovernmentCloud, AzureChinaCloud or AzureStackCloud)"
    )]
    Cloud(String),
    /// AzureStackCloud without one of its endpoints.
    #[error("cloud AzureStackCloud needs {0} in the Azure config file")]
    Stack(&'static str),
    /// No subscription.
    #[error("no Azure subscription: set subscriptionId in the config file or --azure-subscription-id")]
    Subscription,
    /// No resource group.
    #[error("no Azure resource group: set resourceGroup in the config file or --azure-resource-group")]
    ResourceGroup,
    /// The HTTP client cannot be built, or an endpoint is not a URL.
    #[error("{0}")]
    Client(#[source] extdns_provider::http::HttpError),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_account_is_the_subscription_and_resource_manager_s_limits_are_paced() {
        let config = |subscription: &str, group: &str| {
            AzureConfig::new(Kind::Public, subscription, group, CredentialSource::Token("t".into()))
        };
        assert_eq!(
            config("SUB-A", "rg1").account(),
            config("sub-a", "rg2").account(),
            "one subscription"
        );
        assert_ne!(config("sub-a", "rg").account(), config("sub-b", "rg").account());
        let c = config("sub-a", "rg");
        assert_eq!(
            (c.api.requests, c.api.account_writes),
            (Some(READ_LIMIT), Some(WRITE_LIMIT))
        );
    }

    #[test]
    fn keys_match_without_regard_to_case() {
        let f = AzureFile::parse(
            r#"{"tenantId":"t","SubscriptionID":"s","resourceGroup":"rg","aadClientID":"c","AADCLIENTSECRET":"x",
                "useManagedIdentityExtension":true,"userAssignedIdentityId":"u","ResourceManagerAudience":"a","extra":1}"#,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (
                f.tenant_id.as_str(),
                f.subscription_id.as_str(),
                f.aad_client_id.as_str(),
                f.aad_client_secret.as_str()
            ),
            ("t", "s", "c", "x")
        );
        assert!(f.use_managed_identity_extension && !f.use_workload_identity_extension);
        assert_eq!(f.user_assigned_identity_id, "u");
        assert_eq!(f.resource_manager_audience, "a");
    }

    #[test]
    fn a_key_of_the_wrong_type_is_named() {
        let e = AzureFile::parse(r#"{"useWorkloadIdentityExtension":"yes"}"#)
            .err()
            .map(|e| e.to_string());
        assert!(e.is_some_and(|e| e.contains("useWorkloadIdentityExtension")));
        assert!(AzureFile::parse("[]").is_err());
    }

    #[test]
    fn clouds_are_named_as_external_dns_names_them() {
        let cloud = |name: &str| {
            let f = AzureFile {
                cloud: name.into(),
                ..AzureFile::default()
            };
            f.cloud()
        };
        assert_eq!(
            Cloud::public().audience,
            "https://management.core.windows.net/",
            "azcore's audience: the scope is https://management.core.windows.net//.default"
        );
        for public in ["", "AzureCloud", "azurepubliccloud"] {
            assert_eq!(cloud(public).ok(), Some(Cloud::public()), "{public}");
        }
        for gov in ["AzureUSGovernment", "AZUREUSGOVERNMENTCLOUD"] {
            assert!(cloud(gov).is_ok_and(|c| c.resource_manager.ends_with("usgovcloudapi.net")));
        }
        assert!(cloud("AzureChinaCloud").is_ok_and(|c| c.authority_host == "https://login.chinacloudapi.cn"));
        assert!(matches!(cloud("AzureGermanCloud"), Err(ConfigError::Cloud(_))));
        assert!(matches!(
            cloud("AzureStackCloud"),
            Err(ConfigError::Stack("activeDirectoryAuthorityHost"))
        ));
        let stack = AzureFile {
            cloud: "AzureStackCloud".into(),
            active_directory_authority_host: "https://login.stack/".into(),
            resource_manager_endpoint: "https://arm.stack".into(),
            resource_manager_audience: "https://arm.stack/aud".into(),
            ..AzureFile::default()
        };
        assert_eq!(
            stack.cloud().ok(),
            Some(Cloud {
                authority_host: "https://login.stack".into(),
                resource_manager: "https://arm.stack".into(),
                audience: "https://arm.stack/aud".into()
            })
        );
    }

    #[test]
    fn max_retries_count_as_azcore_counts_them() {
        assert_eq!(AzureConfig::attempts_for(3), 4);
        assert_eq!(AzureConfig::attempts_for(0), 4);
        assert_eq!(AzureConfig::attempts_for(-1), 1);
        assert_eq!(AzureConfig::attempts_for(10), 11);
    }

    fn file(json: &str) -> AzureFile {
        AzureFile::parse(json).unwrap_or_else(|e| panic!("{e}"))
    }

    fn select(json: &str, env: &[(&str, &str)]) -> Result<CredentialSource, CredentialsError> {
        let env: Vec<(String, String)> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        CredentialSource::select(&file(json), &Cloud::public(), "", IMDS_URL, &|k| {
            env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
        })
    }

    #[test]
    fn a_client_secret_comes_first_even_with_managed_identity() {
        let s = select(
            r#"{"tenantId":"t","aadClientId":"c","aadClientSecret":"s","useManagedIdentityExtension":true}"#,
            &[],
        );
        assert!(matches!(s, Ok(CredentialSource::ClientSecret { ref client_id, .. }) if client_id == "c"));
    }

    #[test]
    fn the_msi_placeholder_means_no_secret() {
        let s = select(
            r#"{"aadClientId":"msi","aadClientSecret":"MSI","useManagedIdentityExtension":true,"userAssignedIdentityID":"u"}"#,
            &[],
        );
        assert!(
            matches!(s, Ok(CredentialSource::Managed { ref client_id, ref imds }) if client_id.as_deref() == Some("u") && imds == IMDS_URL)
        );
    }

    #[test]
    fn workload_identity_falls_back_to_the_webhook_s_variables() {
        let s = select(
            r#"{"useWorkloadIdentityExtension":true}"#,
            &[
                ("AZURE_TENANT_ID", "tenant"),
                ("AZURE_CLIENT_ID", "client"),
                (
                    "AZURE_FEDERATED_TOKEN_FILE",
                    "/var/run/secrets/azure/tokens/azure-identity-token",
                ),
            ],
        );
        assert!(
            matches!(s, Ok(CredentialSource::Workload { ref tenant, ref client_id, .. }) if tenant == "tenant" && client_id == "client")
        );
        let e = select(r#"{"useWorkloadIdentityExtension":true,"tenantId":"t"}"#, &[])
            .err()
            .map(|e| e.to_string());
        assert!(e.is_some_and(|e| e.contains("AZURE_FEDERATED_TOKEN_FILE") && e.contains("client id")));
    }

    #[test]
    fn nothing_resolving_names_every_source_tried() {
        let e = select(r#"{"tenantId":"t"}"#, &[]).err().map(|e| e.to_string());
        let e = e.unwrap_or_default();
        for s in [
            "client secret",
            "workload identity",
            "managed identity",
            "no credentials provided",
        ] {
            assert!(e.contains(s), "{s} in {e}");
        }
    }
}
