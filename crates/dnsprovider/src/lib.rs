//! The `DNSProvider` (namespaced) and `ClusterDNSProvider` (cluster-scoped) kinds of
//! `externaldns.k8s.io/v1alpha1`, shaped like external-dns's proposal 006: one object is what one external-dns
//! Deployment was, a provider with its zones, ownership, configuration and credentials.
//!
//! This crate is pure: it reads an object ([`ProviderObject::from_dynamic`]), says what its spec means as
//! extdns's own flags ([`flag_args`]) and its Secret as that provider's environment ([`Credentials`]), which
//! providers may not run beside each other ([`conflicts`]), and builds the status the controller writes
//! back ([`status`]). Watching the objects, parsing the flags and running the pipelines is the binary's.
//!
//! ```
//! use extdns_dnsprovider::{ProviderObject, flag_args};
//!
//! let object: kube::api::DynamicObject = serde_json::from_value(serde_json::json!({
//!     "apiVersion": "externaldns.k8s.io/v1alpha1",
//!     "kind": "ClusterDNSProvider",
//!     "metadata": { "name": "public", "generation": 1 },
//!     "spec": {
//!         "type": "cloudflare",
//!         "domainFilter": { "include": ["example.com"] },
//!         "config": { "source": ["ingress"], "cloudflare-proxied": true }
//!     }
//! }))?;
//! let provider = ProviderObject::from_dynamic(&object)?;
//! let args: Vec<String> = flag_args(&provider)?.iter().flat_map(|f| f.to_args()).collect();
//! assert!(args.contains(&"--provider=cloudflare".to_string()));
//! assert!(args.contains(&"--txt-owner-id=public".to_string()), "the owner id defaults to the name");
//! assert!(args.contains(&"--cloudflare-proxied=true".to_string()));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod args;
mod command_line;
mod conflict;
mod credentials;
mod manifests;
mod spec;
pub mod status;
mod tenant;

pub use args::{FlagValue, RESERVED_FLAGS, flag_args};
pub use command_line::{SECRET_FLAGS, command_line, names_a_file};
pub use conflict::{Conflict, conflicts};
pub use credentials::Credentials;
pub use manifests::{decode_all, manifest_kinds};
pub use spec::{
    CredentialsRef, DnsProviderSpec, DnsProviderStatus, DomainFilterSpec, ProviderKind, ProviderObject, RegistrySpec,
};
pub use tenant::{check_tenant, tenant_flags};

use std::fmt;

/// The API group of both kinds (external-dns's own group, as proposal 006 places them).
pub const GROUP: &str = "externaldns.k8s.io";
/// The version both kinds are served at.
pub const VERSION: &str = "v1alpha1";
/// The finalizer extdns puts on a provider object so that its pipeline is stopped, and its status says the
/// records stay, before the object goes.
pub const FINALIZER: &str = "extdns.io/records-left-in-place";

/// Which provider object a pipeline is: its kind, namespace and name. Two objects with one id are one.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ProviderId {
    /// A `ClusterDNSProvider`: objects of every namespace may publish to it.
    Cluster {
        /// Its name.
        name: String,
    },
    /// A `DNSProvider`: only objects of its own namespace publish to it, and it reads Secrets only there.
    Namespaced {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
    },
}

impl ProviderId {
    /// The id of an object of either kind, whatever its spec says (to report a spec that does not decode on
    /// the object itself); `None` for another kind or an object without a name (or a DNSProvider without a
    /// namespace).
    pub fn of(object: &kube::api::DynamicObject) -> Option<ProviderId> {
        let kind = ProviderKind::from_kind(&object.types.as_ref()?.kind)?;
        let name = object.metadata.name.clone().filter(|n| !n.is_empty())?;
        Some(match kind {
            ProviderKind::Cluster => ProviderId::Cluster { name },
            ProviderKind::Namespaced => ProviderId::Namespaced {
                namespace: object.metadata.namespace.clone().filter(|n| !n.is_empty())?,
                name,
            },
        })
    }

    /// The object's name.
    pub fn name(&self) -> &str {
        match self {
            ProviderId::Cluster { name } | ProviderId::Namespaced { name, .. } => name,
        }
    }

    /// The namespace of a `DNSProvider`.
    pub fn namespace(&self) -> Option<&str> {
        match self {
            ProviderId::Cluster { .. } => None,
            ProviderId::Namespaced { namespace, .. } => Some(namespace),
        }
    }

    /// Which of the two kinds.
    pub fn kind(&self) -> ProviderKind {
        match self {
            ProviderId::Cluster { .. } => ProviderKind::Cluster,
            ProviderId::Namespaced { .. } => ProviderKind::Namespaced,
        }
    }

    /// The value of the `provider` metric label: the name of a `ClusterDNSProvider`, `namespace/name` of a
    /// `DNSProvider` (two namespaces may use one name).
    pub fn label(&self) -> String {
        match self {
            ProviderId::Cluster { name } => name.clone(),
            ProviderId::Namespaced { namespace, name } => format!("{namespace}/{name}"),
        }
    }
}

impl fmt::Display for ProviderId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProviderId::Cluster { name } => write!(f, "ClusterDNSProvider/{name}"),
            ProviderId::Namespaced { namespace, name } => write!(f, "DNSProvider/{namespace}/{name}"),
        }
    }
}

/// Why a provider object cannot be run as it is. Each names the field at fault; none carries a Secret's value.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SpecError {
    /// The object does not decode as its kind (a field of the wrong type, an unknown field).
    #[error("{object}: {field}: {why}")]
    Invalid {
        /// The object, as `kind/namespace/name` or what is known of it.
        object: String,
        /// The field (`spec`, `metadata.name`, ...).
        field: String,
        /// What is wrong.
        why: String,
    },
    /// A `spec.config` key that is a spec field or a deployment-wide flag.
    #[error("spec.config.{key}: {why}")]
    Reserved {
        /// The key.
        key: String,
        /// What to use instead.
        why: String,
    },
    /// A `spec.config` value that is neither a string, a number, a boolean nor a list of those.
    #[error("spec.config.{key}: {why}")]
    ConfigValue {
        /// The key.
        key: String,
        /// What is wrong.
        why: String,
    },
    /// What a DNSProvider (a tenant's) may not do or be: name a file of the controller's, be of a type whose
    /// credentials are the controller's.
    #[error("{what}: {why}")]
    Tenant {
        /// What it names or is (`--tls-ca`, `type google`, `credentialsRef`).
        what: String,
        /// Why not, and what to do instead.
        why: String,
    },
    /// A Secret key that is neither an environment variable nor a flag name, or a value that is not text.
    #[error("Secret {secret} key {key:?}: {why}")]
    Credentials {
        /// The Secret, as `namespace/name`.
        secret: String,
        /// The key (never the value).
        key: String,
        /// What is wrong.
        why: String,
    },
}

/// A provider object `id` with `spec`, generation 1, as the tests of this crate build them.
#[cfg(test)]
pub(crate) fn test_object(id: ProviderId, spec: DnsProviderSpec) -> ProviderObject {
    ProviderObject {
        id,
        generation: 1,
        created: None,
        deleting: false,
        finalizers: Vec::new(),
        spec,
        status: None,
    }
}
