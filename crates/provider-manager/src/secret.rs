//! A provider object's Secret, read by one GET in the namespace the object may read (a DNSProvider's own,
//! a ClusterDNSProvider's as its ref says, else the controller's): never a watch or a list of Secrets, so
//! extdns reads no Secret a provider does not name (the e2e `tenancy` scenario audits it).

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
        Err(source) if matches!(&source, kube::Error::Api(e) if e.code == 403) => {
            let source = Box::new(source);
            return Err(SecretError::Forbidden { secret: shown, source });
        }
        Err(source) => {
            let source = Box::new(source);
            return Err(SecretError::Unreachable { secret: shown, source });
        }
    };
    let data = secret.data.unwrap_or_default();
    let credentials = Credentials::from_secret(&shown, data.iter().map(|(k, v)| (k.as_str(), v.0.as_slice())))?;
    Ok((credentials, secret.metadata.resource_version))
}
