//! Application Default Credentials' sources, in the order Google's client libraries
//! (golang.org/x/oauth2/google, which external-dns uses) try them: `GOOGLE_APPLICATION_CREDENTIALS`, gcloud's
//! well-known file, the metadata server. A file that is named or present but unusable is an error, as in
//! Google's libraries; only sources that are absent are passed over.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use extdns_provider::HttpClient;
use extdns_provider::credentials::AccessToken;
use extdns_provider::credentials::endpoint::EndpointError;
use extdns_provider::credentials::{Chain, Miss, Source};

use super::file;
use super::metadata::MetadataServer;
use super::token::SourceError;

/// The chain over `env` (the captured [`crate::CREDENTIAL_VARIABLES`]): files read with `http`, then
/// `metadata`.
pub(crate) fn chain(
    env: &BTreeMap<String, String>,
    http: &Arc<HttpClient>,
    metadata: &Arc<MetadataServer>,
) -> Chain<AccessToken, SourceError> {
    Chain::new("no Google credentials")
        .then(NamedFile {
            path: env.get("GOOGLE_APPLICATION_CREDENTIALS").map(PathBuf::from),
            http: http.clone(),
        })
        .then(GcloudFile {
            path: well_known_file(env),
            http: http.clone(),
        })
        .then(Metadata(metadata.clone()))
}

/// A fixed token (tests, or a caller that has one).
pub(crate) struct Fixed(pub(crate) String);

#[async_trait]
impl Source<AccessToken> for Fixed {
    type Error = SourceError;

    fn name(&self) -> String {
        "a fixed token".into()
    }

    async fn fetch(&self) -> Result<AccessToken, Miss<SourceError>> {
        Ok(AccessToken::lasting(self.0.clone(), None))
    }
}

/// `GOOGLE_APPLICATION_CREDENTIALS`.
struct NamedFile {
    path: Option<PathBuf>,
    http: Arc<HttpClient>,
}

#[async_trait]
impl Source<AccessToken> for NamedFile {
    type Error = SourceError;

    fn name(&self) -> String {
        match &self.path {
            Some(path) => format!("GOOGLE_APPLICATION_CREDENTIALS {}", path.display()),
            None => "GOOGLE_APPLICATION_CREDENTIALS".into(),
        }
    }

    async fn fetch(&self) -> Result<AccessToken, Miss<SourceError>> {
        let Some(path) = &self.path else {
            return Err(Miss::NotConfigured(SourceError::Absent("not set".into())));
        };
        file::token(&self.http, path).await.map_err(Miss::Failed)
    }
}

/// gcloud's well-known file, `$CLOUDSDK_CONFIG/application_default_credentials.json` or
/// `~/.config/gcloud/application_default_credentials.json`.
struct GcloudFile {
    path: Option<PathBuf>,
    http: Arc<HttpClient>,
}

#[async_trait]
impl Source<AccessToken> for GcloudFile {
    type Error = SourceError;

    fn name(&self) -> String {
        match &self.path {
            Some(path) if path.exists() => format!("gcloud's file {}", path.display()),
            _ => "gcloud's application default credentials".into(),
        }
    }

    async fn fetch(&self) -> Result<AccessToken, Miss<SourceError>> {
        match &self.path {
            Some(path) if path.exists() => file::token(&self.http, path).await.map_err(Miss::Failed),
            Some(path) => Err(Miss::NotConfigured(SourceError::Absent(format!(
                "no file {}",
                path.display()
            )))),
            None => Err(Miss::NotConfigured(SourceError::Absent(
                "neither CLOUDSDK_CONFIG nor HOME is set".into(),
            ))),
        }
    }
}

/// The metadata server (a GCE VM, or GKE Workload Identity).
struct Metadata(Arc<MetadataServer>);

#[async_trait]
impl Source<AccessToken> for Metadata {
    type Error = SourceError;

    fn name(&self) -> String {
        if self.0.named() {
            self.0.name()
        } else {
            format!("{} (not on GCE or GKE?)", self.0.name())
        }
    }

    async fn fetch(&self) -> Result<AccessToken, Miss<SourceError>> {
        self.0.token().await.map_err(|e| match e {
            // No answer at the default address: no metadata server here (off GCE), a source absent, not one
            // failing. One `GCE_METADATA_HOST` names that does not answer is failing (and transient).
            SourceError::Endpoint(EndpointError::Request { .. }) if !self.0.named() => Miss::NotConfigured(e),
            e => Miss::Failed(e),
        })
    }
}

fn well_known_file(env: &BTreeMap<String, String>) -> Option<PathBuf> {
    let dir = match (env.get("CLOUDSDK_CONFIG"), env.get("HOME")) {
        (Some(dir), _) => PathBuf::from(dir),
        (None, Some(home)) => Path::new(home).join(".config").join("gcloud"),
        (None, None) => return None,
    };
    Some(dir.join("application_default_credentials.json"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_well_known_file_follows_cloudsdk_config_then_home() {
        let env = |pairs: &[(&str, &str)]| pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        assert_eq!(
            well_known_file(&env(&[("HOME", "/h")])),
            Some(PathBuf::from("/h/.config/gcloud/application_default_credentials.json"))
        );
        assert_eq!(
            well_known_file(&env(&[("HOME", "/h"), ("CLOUDSDK_CONFIG", "/c")])),
            Some(PathBuf::from("/c/application_default_credentials.json"))
        );
        assert_eq!(well_known_file(&env(&[])), None);
    }
}
