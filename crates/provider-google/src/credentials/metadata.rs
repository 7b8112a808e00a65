//! The metadata server of a GCE VM or a GKE node (Workload Identity): its token and the project it names.

use std::time::Duration;

use extdns_provider::HttpClient;
use extdns_provider::credentials::AccessToken;
use extdns_provider::credentials::endpoint::{self, EndpointError};
use extdns_provider::http::{HttpError, Observer};

use super::token::SourceError;
use crate::config::SCOPE;

/// The metadata server, asked with `Metadata-Flavor: Google` and, as Google's metadata client does, never
/// through a proxy.
#[derive(Debug)]
pub struct MetadataServer {
    host: String,
    /// `GCE_METADATA_HOST` names it: a failure is then a failure, not a sign of being off GCE.
    named: bool,
    http: HttpClient,
}

impl MetadataServer {
    /// The server at `host`, `named` when `GCE_METADATA_HOST` gave it; requests reported to `observer`.
    pub(crate) fn new(host: String, named: bool, observer: &Observer) -> Result<MetadataServer, HttpError> {
        let http = HttpClient::metadata_builder(observer, Duration::from_secs(5)).build()?;
        Ok(MetadataServer { host, named, http })
    }

    /// How errors name it.
    pub(crate) fn name(&self) -> String {
        format!("the metadata server at {}", self.host)
    }

    /// Whether `GCE_METADATA_HOST` names it.
    pub(crate) fn named(&self) -> bool {
        self.named
    }

    /// The default service account's token for [`SCOPE`].
    pub(crate) async fn token(&self) -> Result<AccessToken, SourceError> {
        let url = format!(
            "http://{}/computeMetadata/v1/instance/service-accounts/default/token?scopes={SCOPE}",
            self.host
        );
        let body = self.get(&url).await?;
        Ok(endpoint::grant(&url, &body)?.into())
    }

    /// The project the metadata server names (`--google-project` left empty).
    pub async fn project(&self) -> Result<String, SourceError> {
        let url = format!("http://{}/computeMetadata/v1/project/project-id", self.host);
        let body = self.get(&url).await?;
        let project = String::from_utf8_lossy(&body).trim().to_string();
        if project.is_empty() {
            return Err(SourceError::Endpoint(EndpointError::Answer {
                url,
                detail: "empty project id".into(),
            }));
        }
        Ok(project)
    }

    async fn get(&self, url: &str) -> Result<Vec<u8>, EndpointError> {
        let request = self.http.get(url).header("Metadata-Flavor", "Google");
        endpoint::send(request, url).await
    }
}
