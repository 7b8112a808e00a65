//! The calls the AWS credential sources make: STS (`AssumeRole`, `AssumeRoleWithWebIdentity`), the ECS/EKS
//! container agent and IMDSv2, over the environment the chain captured.

use std::collections::BTreeMap;

use extdns_provider::HttpClient;
use extdns_provider::credentials::rfc3339::parse as parse_time;
use reqwest::Method;

use crate::documents::{check_container_uri, element, json_credentials, read_file, session_name};
use crate::error::CredentialSourceError;
use crate::keys::Credentials;
use crate::sign;

/// The instance metadata service of every EC2 instance.
pub(crate) const IMDS: &str = "http://169.254.169.254";
/// IMDSv2's first call: a session token, asked for with PUT.
pub(crate) const TOKEN_PATH: &str = "/latest/api/token";
/// The ECS agent's endpoint for `AWS_CONTAINER_CREDENTIALS_RELATIVE_URI`.
const ECS: &str = "http://169.254.170.2";

/// The environment the chain reads.
pub(crate) struct Env(pub(crate) BTreeMap<String, String>);

impl Env {
    pub(crate) fn get(&self, k: &str) -> Option<&str> {
        self.0.get(k).map(String::as_str)
    }

    pub(crate) fn region(&self) -> &str {
        self.get("AWS_REGION")
            .or_else(|| self.get("AWS_DEFAULT_REGION"))
            .unwrap_or("us-east-1")
    }

    /// `AWS_ENDPOINT_URL_STS`, `AWS_ENDPOINT_URL`, else STS's regional endpoint, as the Go SDK v2 uses.
    pub(crate) fn sts_endpoint(&self) -> String {
        if let Some(e) = self
            .get("AWS_ENDPOINT_URL_STS")
            .or_else(|| self.get("AWS_ENDPOINT_URL"))
        {
            return e.trim_end_matches('/').to_string();
        }
        let region = self.region();
        let suffix = if region.starts_with("cn-") {
            "amazonaws.com.cn"
        } else {
            "amazonaws.com"
        };
        format!("https://sts.{region}.{suffix}")
    }
}

/// The environment and the HTTP clients the sources share.
pub(crate) struct Calls {
    pub(crate) env: Env,
    /// STS and the container agent.
    pub(crate) http: HttpClient,
    /// IMDS, with the SDKs' short timeouts: off EC2 its address does not answer at all.
    pub(crate) metadata: HttpClient,
}

impl Calls {
    /// STS `AssumeRole`, signed with `base`.
    pub(crate) async fn assume_role(
        &self,
        base: &Credentials,
        role_arn: &str,
        external_id: Option<&str>,
        session: Option<&str>,
    ) -> Result<Credentials, CredentialSourceError> {
        let session = session.map_or_else(session_name, str::to_string);
        let mut form = vec![
            ("Action", "AssumeRole"),
            ("Version", "2011-06-15"),
            ("RoleArn", role_arn),
            ("RoleSessionName", session.as_str()),
        ];
        if let Some(id) = external_id {
            form.push(("ExternalId", id));
        }
        self.sts(&form, Some(base)).await
    }

    /// STS `AssumeRoleWithWebIdentity` with the token in `file` (read again at each refresh: the kubelet
    /// rotates it). The call is not signed.
    pub(crate) async fn web_identity(
        &self,
        file: &str,
        role_arn: &str,
        session: Option<&str>,
    ) -> Result<Credentials, CredentialSourceError> {
        let token = read_file("the token file", file)?;
        let session = session.map_or_else(session_name, str::to_string);
        let form = [
            ("Action", "AssumeRoleWithWebIdentity"),
            ("Version", "2011-06-15"),
            ("RoleArn", role_arn),
            ("RoleSessionName", session.as_str()),
            ("WebIdentityToken", token.trim()),
        ];
        self.sts(&form, None).await
    }

    pub(crate) async fn sts(
        &self,
        form: &[(&str, &str)],
        signer: Option<&Credentials>,
    ) -> Result<Credentials, CredentialSourceError> {
        let url = format!("{}/", self.env.sts_endpoint());
        let endpoint = format!("STS at {url}");
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(form)
            .finish();
        const FORM: &str = "application/x-www-form-urlencoded; charset=utf-8";
        let mut request = self.http.request(Method::POST, &url).header("content-type", FORM);
        if let Some(c) = signer {
            let region = self.env.region();
            let headers = sign::headers(
                &sign::identity(c),
                region,
                "sts",
                "POST",
                &url,
                &[("content-type", FORM)],
                body.as_bytes(),
            )
            .map_err(CredentialSourceError::Sign)?;
            for (k, v) in headers {
                request = request.header(k, v);
            }
        }
        let failed_request = |source| CredentialSourceError::Request {
            endpoint: endpoint.clone(),
            source,
        };
        let response = request.body(body).send().await.map_err(failed_request)?;
        let status = response.status();
        let text = response.text().await.map_err(failed_request)?;
        if !status.is_success() {
            let code = element(&text, "Code").unwrap_or_default();
            let message = element(&text, "Message").unwrap_or_default();
            return Err(CredentialSourceError::Status {
                endpoint,
                status: status.as_u16(),
                detail: format!("{code}: {message}"),
            });
        }
        let get = |field: &'static str| {
            element(&text, field).ok_or_else(|| CredentialSourceError::MissingField {
                endpoint: endpoint.clone(),
                field,
            })
        };
        let expiration = get("Expiration")?;
        Ok(Credentials {
            access_key_id: get("AccessKeyId")?,
            secret_access_key: get("SecretAccessKey")?,
            session_token: Some(get("SessionToken")?),
            expires: Some(
                parse_time(&expiration).ok_or_else(|| CredentialSourceError::Expiration {
                    endpoint: endpoint.clone(),
                    value: expiration.clone(),
                })?,
            ),
        })
    }

    /// ECS and EKS Pod Identity: GET the agent's URI with the authorization token.
    pub(crate) async fn container(&self) -> Result<Credentials, CredentialSourceError> {
        let uri = match (
            self.env.get("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"),
            self.env.get("AWS_CONTAINER_CREDENTIALS_FULL_URI"),
        ) {
            (Some(relative), _) => format!("{ECS}{relative}"),
            (None, Some(full)) => {
                check_container_uri(full)?;
                full.to_string()
            }
            (None, None) => {
                return Err(CredentialSourceError::NotConfigured(
                    "AWS_CONTAINER_CREDENTIALS_FULL_URI and _RELATIVE_URI are not set",
                ));
            }
        };
        let token = match (
            self.env.get("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"),
            self.env.get("AWS_CONTAINER_AUTHORIZATION_TOKEN"),
        ) {
            (Some(file), _) => Some(
                read_file("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", file)?
                    .trim()
                    .to_string(),
            ),
            (None, token) => token.map(str::to_string),
        };
        let mut request = self.http.get(&uri);
        if let Some(t) = token {
            request = request.header("authorization", t);
        }
        let failed_request = |source| CredentialSourceError::Request {
            endpoint: uri.clone(),
            source,
        };
        let response = request.send().await.map_err(failed_request)?;
        let status = response.status();
        let text = response.text().await.map_err(failed_request)?;
        if !status.is_success() {
            return Err(CredentialSourceError::Status {
                endpoint: uri,
                status: status.as_u16(),
                detail: text.trim().to_string(),
            });
        }
        json_credentials(&uri, &text)
    }

    /// IMDSv2: a session token (PUT), the instance profile's role name, then its credentials.
    pub(crate) async fn instance(&self, endpoint: &str) -> Result<Credentials, CredentialSourceError> {
        let base = endpoint.trim_end_matches('/');
        let token_url = format!("{base}{TOKEN_PATH}");
        let failed_request = |url: &str| {
            let endpoint = url.to_string();
            move |source| CredentialSourceError::Request { endpoint, source }
        };
        let response = self
            .metadata
            .request(Method::PUT, &token_url)
            .header("x-aws-ec2-metadata-token-ttl-seconds", "21600")
            .send()
            .await
            .map_err(failed_request(&token_url))?;
        if !response.status().is_success() {
            return Err(CredentialSourceError::Status {
                endpoint: token_url,
                status: response.status().as_u16(),
                detail: String::new(),
            });
        }
        let token = response.text().await.map_err(failed_request(&token_url))?;
        let roles_url = format!("{base}/latest/meta-data/iam/security-credentials/");
        let get = |url: String| {
            let token = token.trim().to_string();
            async move {
                let response = self
                    .metadata
                    .get(&url)
                    .header("x-aws-ec2-metadata-token", token)
                    .send()
                    .await
                    .map_err(failed_request(&url))?;
                let status = response.status();
                let text = response.text().await.map_err(failed_request(&url))?;
                match status.as_u16() {
                    200 => Ok((url, text)),
                    404 => Err(CredentialSourceError::NoInstanceProfile { url }),
                    s => Err(CredentialSourceError::Status {
                        endpoint: url,
                        status: s,
                        detail: String::new(),
                    }),
                }
            }
        };
        let (roles_url, roles) = get(roles_url).await?;
        let role = roles
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .ok_or_else(|| CredentialSourceError::NoRole { url: roles_url.clone() })?;
        let (url, text) = get(format!("{roles_url}{role}")).await?;
        json_credentials(&url, &text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sts_endpoint_follows_the_variables_and_the_region() {
        let env = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>()
        };
        assert_eq!(Env(env(&[])).sts_endpoint(), "https://sts.us-east-1.amazonaws.com");
        assert_eq!(
            Env(env(&[("AWS_REGION", "cn-north-1")])).sts_endpoint(),
            "https://sts.cn-north-1.amazonaws.com.cn"
        );
        assert_eq!(
            Env(env(&[
                ("AWS_ENDPOINT_URL", "http://a:1/"),
                ("AWS_ENDPOINT_URL_STS", "http://b:2")
            ]))
            .sts_endpoint(),
            "http://b:2"
        );
    }
}
