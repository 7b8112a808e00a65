//! What a DNSProvider, a tenant's provider, may not take from the deployment: the controller's files and
//! secret flags, its environment, the node's identity. A ClusterDNSProvider is the deployment's own and
//! takes all of it, as a Deployment with that provider would.

use crate::command_line::{SECRET_FLAGS, names_a_file};
use crate::{Credentials, FlagValue, ProviderObject, SpecError};

/// Refuses what a DNSProvider may not be: of type google (its credentials are a file or the metadata
/// server, both the controller's), or with a Secret naming a file of the controller's. Anything goes for a
/// ClusterDNSProvider.
pub fn check_tenant(object: &ProviderObject, credentials: &Credentials) -> Result<(), SpecError> {
    if object.id.namespace().is_none() {
        return Ok(());
    }
    let refuse = |what: &str, why: String| SpecError::Tenant {
        what: what.to_string(),
        why,
    };
    if let Some(name) = credentials.env.keys().find(|k| names_a_file(k)) {
        let why = format!(
            "{name} names a file of the controller's; a DNSProvider's Secret may not set it (its credentials \
             must be in the Secret itself)"
        );
        return Err(refuse("credentialsRef", why));
    }
    if object.spec.type_.trim() == "google" {
        let why = "a DNSProvider has no Google credentials of its own (they are a file or the metadata server, \
                   both the controller's); use a ClusterDNSProvider";
        return Err(refuse("type google", why.to_string()));
    }
    Ok(())
}

/// A DNSProvider's `flags` (its spec's and its Secret's) made safe: refused if one names a file of the
/// controller's (`file_flags`: the flags whose value is a path), then every secret flag it does not set
/// and every file flag given an empty value, so the deployment's are never inherited. A ClusterDNSProvider's
/// are left as they are.
pub fn tenant_flags(
    object: &ProviderObject,
    flags: &mut Vec<FlagValue>,
    file_flags: Vec<String>,
) -> Result<(), SpecError> {
    if object.id.namespace().is_none() {
        return Ok(());
    }
    if let Some(f) = flags.iter().find(|f| file_flags.contains(&f.flag)) {
        return Err(SpecError::Tenant {
            what: format!("--{}", f.flag),
            why: "a DNSProvider may not name a file of the controller's (use a ClusterDNSProvider)".to_string(),
        });
    }
    let blank: Vec<FlagValue> = SECRET_FLAGS
        .iter()
        .map(|f| f.to_string())
        .filter(|f| !flags.iter().any(|g| g.flag == *f))
        .chain(file_flags)
        .map(|flag| FlagValue {
            flag,
            values: vec![String::new()],
        })
        .collect();
    flags.extend(blank);
    Ok(())
}

impl Credentials {
    /// The environment variable `name` of a provider with these credentials: the Secret's; else, for a
    /// ClusterDNSProvider (`tenant` false), `process`'s (ambient identity); for a DNSProvider nothing of the
    /// controller's, and the node's metadata server off (`AWS_EC2_METADATA_DISABLED`).
    pub fn env_var(&self, name: &str, tenant: bool, process: impl Fn(&str) -> Option<String>) -> Option<String> {
        if let Some(v) = self.env.get(name) {
            return Some(v.clone());
        }
        if tenant {
            return (name == "AWS_EC2_METADATA_DISABLED").then(|| "true".to_string());
        }
        process(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DnsProviderSpec, ProviderId};

    fn provider(namespaced: bool, type_: &str) -> ProviderObject {
        let id = if namespaced {
            ProviderId::Namespaced {
                namespace: "team-a".into(),
                name: "p".into(),
            }
        } else {
            ProviderId::Cluster { name: "p".into() }
        };
        let spec = DnsProviderSpec {
            type_: type_.into(),
            ..DnsProviderSpec::default()
        };
        crate::test_object(id, spec)
    }

    fn flag(name: &str, value: &str) -> FlagValue {
        FlagValue {
            flag: name.into(),
            values: vec![value.into()],
        }
    }

    #[test]
    fn a_tenant_inherits_no_secret_flag_no_file_and_no_process_environment() -> Result<(), SpecError> {
        let files = vec!["tls-ca".to_string()];
        let mut flags = vec![flag("pdns-api-key", "own")];
        tenant_flags(&provider(true, "pdns"), &mut flags, files.clone())?;
        let blanked: Vec<&str> = flags
            .iter()
            .filter(|f| f.values == [""])
            .map(|f| f.flag.as_str())
            .collect();
        assert!(
            blanked.contains(&"tls-ca") && blanked.contains(&"rfc2136-tsig-secret"),
            "{blanked:?}"
        );
        assert!(!blanked.contains(&"pdns-api-key"), "its own value stays");
        let mut named = vec![flag("tls-ca", "/etc/ca.pem")];
        let e = tenant_flags(&provider(true, "pdns"), &mut named, files.clone())
            .err()
            .map(|e| e.to_string());
        assert!(e.is_some_and(|e| e.starts_with("--tls-ca: ")));
        let mut cluster = vec![flag("tls-ca", "/etc/ca.pem")];
        tenant_flags(&provider(false, "pdns"), &mut cluster, files)?;
        assert_eq!(cluster.len(), 1, "a ClusterDNSProvider is the deployment's");

        let process = |name: &str| (name == "HOME").then(|| "/root".to_string());
        let none = Credentials::default();
        assert_eq!(none.env_var("HOME", false, process), Some("/root".into()));
        assert_eq!(none.env_var("HOME", true, process), None);
        assert_eq!(
            none.env_var("AWS_EC2_METADATA_DISABLED", true, process),
            Some("true".into())
        );
        Ok(())
    }

    #[test]
    fn a_tenant_may_not_be_google_nor_name_the_controllers_files() {
        let e = check_tenant(&provider(true, "google"), &Credentials::default())
            .err()
            .map(|e| e.to_string());
        assert!(e.is_some_and(|e| e.contains("metadata server")));
        assert!(check_tenant(&provider(false, "google"), &Credentials::default()).is_ok());
        let mut file = Credentials::default();
        file.env
            .insert("AWS_WEB_IDENTITY_TOKEN_FILE".into(), "/var/run/token".into());
        let e = check_tenant(&provider(true, "aws"), &file).err().map(|e| e.to_string());
        assert!(e.is_some_and(|e| e.contains("AWS_WEB_IDENTITY_TOKEN_FILE")));
    }
}
