//! Credentials files (`GOOGLE_APPLICATION_CREDENTIALS`, gcloud's file): `service_account` (an RS256-signed
//! JWT exchanged at the file's `token_uri`, RFC 7523), `authorized_user` (a refresh token) and
//! `external_account` (Workload Identity Federation: a subject token from a file or URL exchanged at STS,
//! then a service account impersonated when the file names one).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use extdns_provider::HttpClient;
use extdns_provider::credentials::AccessToken;
use extdns_provider::credentials::endpoint::{self, EndpointError};
use extdns_provider::credentials::rfc3339;
use serde::Deserialize;

use super::token::SourceError;
use crate::config::SCOPE;

/// Google's token endpoint, when a credentials file names none.
pub const DEFAULT_TOKEN_URI: &str = "https://oauth2.googleapis.com/token";
const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
const ACCESS_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:access_token";

/// The token the credentials file at `path` gives.
pub(crate) async fn token(http: &HttpClient, path: &Path) -> Result<AccessToken, SourceError> {
    let text = std::fs::read_to_string(path).map_err(|source| SourceError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let bad = |detail: String| SourceError::File {
        path: path.to_path_buf(),
        detail,
    };
    let file: CredentialsFile = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
    let need = |v: &Option<String>, field: &str| {
        v.clone()
            .filter(|s| !s.is_empty())
            .ok_or_else(|| bad(format!("{} credentials without {field}", file.kind)))
    };
    let token_uri = file.token_uri.clone().unwrap_or_else(|| DEFAULT_TOKEN_URI.to_string());
    match file.kind.as_str() {
        "service_account" => {
            let email = need(&file.client_email, "client_email")?;
            let key = need(&file.private_key, "private_key")?;
            let assertion = jwt(
                &email,
                &key,
                file.private_key_id.as_deref(),
                &token_uri,
                SystemTime::now(),
            )?;
            post_form(
                http,
                &token_uri,
                &[("grant_type", JWT_BEARER), ("assertion", &assertion)],
            )
            .await
        }
        "authorized_user" => {
            let (id, secret) = (
                need(&file.client_id, "client_id")?,
                need(&file.client_secret, "client_secret")?,
            );
            let refresh = need(&file.refresh_token, "refresh_token")?;
            let form = [
                ("grant_type", "refresh_token"),
                ("client_id", &id),
                ("client_secret", &secret),
                ("refresh_token", &refresh),
            ];
            post_form(http, &token_uri, &form).await
        }
        "external_account" => external_account(http, &file, path).await,
        other => Err(bad(format!(
            "credentials of type {other:?} are not supported by extdns (service_account, authorized_user and \
             external_account are)"
        ))),
    }
}

/// The token endpoint's grant for `form`.
async fn post_form(http: &HttpClient, url: &str, form: &[(&str, &str)]) -> Result<AccessToken, SourceError> {
    Ok(endpoint::post_form(http, url, form).await?.into())
}

/// Workload Identity Federation: the subject token exchanged at STS, then the service account the file
/// names impersonated with the STS token.
async fn external_account(http: &HttpClient, file: &CredentialsFile, path: &Path) -> Result<AccessToken, SourceError> {
    let bad = |detail: &str| SourceError::File {
        path: path.to_path_buf(),
        detail: detail.to_string(),
    };
    fn required<'f>(value: &'f Option<String>, field: &str, path: &Path) -> Result<&'f str, SourceError> {
        value.as_deref().ok_or_else(|| SourceError::File {
            path: path.to_path_buf(),
            detail: format!("external_account without {field}"),
        })
    }
    let audience = required(&file.audience, "audience", path)?;
    let subject_type = required(&file.subject_token_type, "subject_token_type", path)?;
    let token_url = required(&file.token_url, "token_url", path)?;
    let source = file
        .credential_source
        .as_ref()
        .ok_or_else(|| bad("external_account without credential_source"))?;
    let raw = match (&source.file, &source.url) {
        (Some(f), _) => std::fs::read_to_string(f).map_err(|e| SourceError::Read {
            path: PathBuf::from(f),
            source: e,
        })?,
        (None, Some(u)) => {
            let mut request = http.get(u.as_str());
            for (k, v) in &source.headers {
                request = request.header(k.as_str(), v.as_str());
            }
            String::from_utf8_lossy(&endpoint::send(request, u).await?).into_owned()
        }
        (None, None) => {
            return Err(bad(
                "credential_source has neither file nor url (executable, environment and certificate sources \
                 are not supported by extdns)",
            ));
        }
    };
    let subject = match &source.format {
        Some(Format { kind, field }) if kind == "json" => {
            let field = field
                .as_deref()
                .ok_or_else(|| bad("json format without subject_token_field_name"))?;
            let v: serde_json::Value =
                serde_json::from_str(&raw).map_err(|e| bad(&format!("the subject token is not JSON: {e}")))?;
            v.get(field)
                .and_then(|t| t.as_str())
                .ok_or_else(|| bad(&format!("the subject token has no {field}")))?
                .to_string()
        }
        _ => raw.trim().to_string(),
    };
    let form = [
        ("audience", audience),
        ("grant_type", TOKEN_EXCHANGE),
        ("requested_token_type", ACCESS_TOKEN_TYPE),
        ("subject_token_type", subject_type),
        ("subject_token", subject.as_str()),
        ("scope", "https://www.googleapis.com/auth/cloud-platform"),
    ];
    let sts = post_form(http, token_url, &form).await?;
    match &file.service_account_impersonation_url {
        Some(url) => impersonate(http, url, &sts).await,
        None => Ok(sts),
    }
}

/// The service account at `url` impersonated with `sts`'s token, for an hour.
async fn impersonate(http: &HttpClient, url: &str, sts: &AccessToken) -> Result<AccessToken, SourceError> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Impersonated {
        access_token: String,
        expire_time: String,
    }
    let body = serde_json::json!({"scope": [SCOPE], "lifetime": "3600s"});
    let request = http.post(url).bearer_auth(&sts.token).json(&body);
    let answer = endpoint::send(request, url).await?;
    let unreadable = |detail: String| EndpointError::Answer {
        url: url.to_string(),
        detail,
    };
    let got: Impersonated = serde_json::from_slice(&answer).map_err(|e| unreadable(e.to_string()))?;
    let expires =
        rfc3339::parse(&got.expire_time).ok_or_else(|| unreadable(format!("expireTime {:?}", got.expire_time)))?;
    let lifetime = expires.duration_since(SystemTime::now()).unwrap_or_default();
    Ok(AccessToken::lasting(got.access_token, Some(lifetime)))
}

/// The fields of the credential file types extdns reads.
#[derive(Debug, Deserialize)]
struct CredentialsFile {
    #[serde(rename = "type")]
    kind: String,
    client_email: Option<String>,
    private_key: Option<String>,
    private_key_id: Option<String>,
    token_uri: Option<String>,
    client_id: Option<String>,
    client_secret: Option<String>,
    refresh_token: Option<String>,
    audience: Option<String>,
    subject_token_type: Option<String>,
    token_url: Option<String>,
    service_account_impersonation_url: Option<String>,
    credential_source: Option<CredentialFileSource>,
}

#[derive(Debug, Deserialize)]
struct CredentialFileSource {
    file: Option<String>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    format: Option<Format>,
}

#[derive(Debug, Deserialize)]
struct Format {
    #[serde(rename = "type")]
    kind: String,
    #[serde(rename = "subject_token_field_name")]
    field: Option<String>,
}

/// The JWT-bearer assertion of a service account (RFC 7523, Google's "server to server" flow): RS256 over
/// `{alg, typ, kid}` and `{iss, scope, aud, iat, exp}`, valid for an hour.
pub fn jwt(
    email: &str,
    pem: &str,
    key_id: Option<&str>,
    audience: &str,
    now: SystemTime,
) -> Result<String, SourceError> {
    let key_error = |detail: String| SourceError::Key {
        email: email.to_string(),
        detail,
    };
    let der = pem_body(pem).ok_or_else(|| key_error("private_key is not a PEM PRIVATE KEY".into()))?;
    let key =
        ring::signature::RsaKeyPair::from_pkcs8(&der).map_err(|e| key_error(format!("not an RSA PKCS#8 key: {e}")))?;
    let iat = now.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
    let mut header = serde_json::json!({"alg": "RS256", "typ": "JWT"});
    if let Some(kid) = key_id {
        header["kid"] = kid.into();
    }
    let claims = serde_json::json!({"iss": email, "scope": SCOPE, "aud": audience, "iat": iat, "exp": iat + 3600});
    let signed = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let mut signature = vec![0; key.public().modulus_len()];
    key.sign(
        &ring::signature::RSA_PKCS1_SHA256,
        &ring::rand::SystemRandom::new(),
        signed.as_bytes(),
        &mut signature,
    )
    .map_err(|_| key_error("signing failed".into()))?;
    Ok(format!("{signed}.{}", URL_SAFE_NO_PAD.encode(signature)))
}

/// The DER of a `-----BEGIN PRIVATE KEY-----` block.
fn pem_body(pem: &str) -> Option<Vec<u8>> {
    let start = pem.find("-----BEGIN PRIVATE KEY-----")? + "-----BEGIN PRIVATE KEY-----".len();
    let end = pem[start..].find("-----END PRIVATE KEY-----")? + start;
    let b64: String = pem[start..end].chars().filter(|c| !c.is_whitespace()).collect();
    STANDARD.decode(b64).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_times_are_read() {
        let t = rfc3339::parse("2026-11-28T01:02:03.456Z").and_then(|t| t.duration_since(UNIX_EPOCH).ok());
        assert_eq!(t.map(|d| d.as_secs()), Some(1_795_827_723));
        assert_eq!(rfc3339::parse("1970-01-01T00:00:00Z"), Some(UNIX_EPOCH));
        assert!(rfc3339::parse("2026-13-01T00:00:00Z").is_none());
        assert!(rfc3339::parse("yesterday").is_none());
    }
}
