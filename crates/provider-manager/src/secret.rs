//! A provider object's Secret, read by one GET in the namespace the object may read (a DNSProvider's own,
//! a ClusterDNSProvider's as its ref says, else the controller's): never a watch or a list of Secrets, so
//! extdns reads no Secret a provider does not name (the e2e `tenancy` scenario audits it). `extdns plan`
//! reads them the same way, or finds them among its manifests ([`Secrets`]).

use std::collections::HashMap;

use extdns_dnsprovider::{Credentials, ProviderObject, SpecError};
use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;

use crate::decide::SecretRead;

/// Why a provider's Secret cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SecretError {
    /// No such Secret.
    #[error("Secret {secret} (spec.credentialsRef) not found")]
    NotFound {
        /// `namespace/name`.
        secret: String,
    },
    /// extdns may not read it.
    #[error("extdns may not read Secret {secret} (spec.credentialsRef): {source}")]
    Forbidden {
        /// `namespace/name`.
        secret: String,
        /// The API server's answer.
        #[source]
        source: Box<kube::Error>,
    },
    /// Not among the manifests a plan reads.
    #[error("Secret {secret} (spec.credentialsRef) is not among the manifests")]
    NotInManifests {
        /// `namespace/name`.
        secret: String,
    },
    /// Its keys are not a provider's environment and flags.
    #[error("{0}")]
    Unusable(#[from] SpecError),
    /// The API server did not answer: try again, keep what runs.
    #[error("cannot read Secret {secret}: {source}")]
    Unreachable {
        /// `namespace/name`.
        secret: String,
        /// The client's error.
        #[source]
        source: Box<kube::Error>,
    },
}

impl SecretError {
    /// What the decision makes of it: only an unreachable API server leaves the provider as it is.
    pub fn read(&self) -> SecretRead {
        match self {
            SecretError::Unreachable { .. } => SecretRead::Unreachable(self.to_string()),
            _ => SecretRead::Invalid(self.to_string()),
        }
    }
}

/// `object`'s credentials and its Secret's resourceVersion (none without a `credentialsRef`); a
/// ClusterDNSProvider's Secret is in `namespace` unless it names another.
pub async fn read_secret(
    client: &kube::Client,
    object: &ProviderObject,
    namespace: &str,
) -> Result<(Credentials, Option<String>), SecretError> {
    let Some((namespace, name)) = object.secret(namespace) else {
        return Ok((Credentials::default(), None));
    };
    let shown = format!("{namespace}/{name}");
    let api: Api<Secret> = Api::namespaced(client.clone(), &namespace);
    let secret = match api.get_opt(&name).await {
        Ok(Some(secret)) => secret,
        Ok(None) => return Err(SecretError::NotFound { secret: shown }),
        Err(source) if crate::forbidden::is_forbidden(&source) => {
            let source = Box::new(source);
            return Err(SecretError::Forbidden { secret: shown, source });
        }
        Err(source) => {
            let source = Box::new(source);
            return Err(SecretError::Unreachable { secret: shown, source });
        }
    };
    let credentials = Credentials::of_secret(&secret)?;
    Ok((credentials, secret.metadata.resource_version))
}

/// Where `extdns plan` finds the provider objects' Secrets: the API server, as the manager reads them, or
/// the manifests it reads the cluster from.
pub enum Secrets {
    /// Read by [`read_secret`]; a ClusterDNSProvider's in `namespace` unless it names another.
    Api {
        /// The client.
        client: kube::Client,
        /// The controller's namespace.
        namespace: String,
    },
    /// The Secrets among the manifests, by namespace and name (a ClusterDNSProvider's in `default` unless
    /// it names another, as `kubectl apply` would put it).
    Manifests(HashMap<(String, String), Secret>),
}

impl Secrets {
    /// The Secrets among `values` (other kinds are skipped).
    pub fn from_manifests(values: &[serde_json::Value]) -> Secrets {
        let secrets = values
            .iter()
            .filter(|v| v["kind"] == "Secret")
            .filter_map(|v| serde_json::from_value::<Secret>(v.clone()).ok())
            .map(|mut secret| {
                let namespace = secret
                    .metadata
                    .namespace
                    .get_or_insert_with(|| "default".into())
                    .clone();
                let name = secret.metadata.name.clone().unwrap_or_default();
                ((namespace, name), secret)
            })
            .collect();
        Secrets::Manifests(secrets)
    }

    /// `object`'s credentials.
    pub async fn credentials(&self, object: &ProviderObject) -> Result<Credentials, SecretError> {
        match self {
            Secrets::Api { client, namespace } => Ok(read_secret(client, object, namespace).await?.0),
            Secrets::Manifests(secrets) => {
                let Some((namespace, name)) = object.secret("default") else {
                    return Ok(Credentials::default());
                };
                let secret = format!("{namespace}/{name}");
                let found = secrets.get(&(namespace, name));
                let found = found.ok_or(SecretError::NotInManifests { secret })?;
                Ok(Credentials::of_secret(found)?)
            }
        }
    }
}
