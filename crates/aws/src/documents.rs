//! The documents and values the AWS credential sources read: token files, the container agent's and IMDS's
//! JSON credentials, STS's XML answers and the times AWS writes.

use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Deserialize;
use url::Url;

use extdns_provider::credentials::rfc3339::parse as parse_time;

use crate::error::CredentialSourceError;
use crate::keys::Credentials;

/// The text of a file the chain names (`what` says which).
pub(crate) fn read_file(what: &'static str, path: &str) -> Result<String, CredentialSourceError> {
    std::fs::read_to_string(path).map_err(|source| CredentialSourceError::Read {
        what,
        path: PathBuf::from(path),
        source,
    })
}

/// An http container URI must stay on the host or go to the ECS or EKS agent: the token must not leave.
pub(crate) fn check_container_uri(full: &str) -> Result<(), CredentialSourceError> {
    let url = Url::parse(full).map_err(|source| CredentialSourceError::InvalidUri {
        uri: full.to_string(),
        source,
    })?;
    if url.scheme() == "https" {
        return Ok(());
    }
    let allowed = match url.host() {
        Some(url::Host::Ipv4(ip)) => {
            ip.is_loopback() || ip.octets() == [169, 254, 170, 2] || ip.octets() == [169, 254, 170, 23]
        }
        Some(url::Host::Ipv6(ip)) => ip.is_loopback() || ip.segments() == [0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x23],
        Some(url::Host::Domain(d)) => d == "localhost",
        None => false,
    };
    if url.scheme() == "http" && allowed {
        Ok(())
    } else {
        Err(CredentialSourceError::UnsafeUri { uri: full.to_string() })
    }
}

/// `extdns-<unix seconds>`: a session name CloudTrail shows, unique per refresh.
pub(crate) fn session_name() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    format!("extdns-{secs}")
}

/// The container and instance endpoints' document.
#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct JsonCredentials {
    access_key_id: String,
    secret_access_key: String,
    token: Option<String>,
    expiration: Option<String>,
    code: Option<String>,
}

/// The credentials in the document `url` answered.
pub(crate) fn json_credentials(url: &str, text: &str) -> Result<Credentials, CredentialSourceError> {
    let c: JsonCredentials = serde_json::from_str(text).map_err(|source| CredentialSourceError::Json {
        url: url.to_string(),
        source,
    })?;
    if let Some(code) = c.code.filter(|c| c != "Success") {
        return Err(CredentialSourceError::NotAvailable {
            url: url.to_string(),
            code,
        });
    }
    let expires = match c.expiration {
        Some(t) => Some(parse_time(&t).ok_or_else(|| CredentialSourceError::Expiration {
            endpoint: url.to_string(),
            value: t.clone(),
        })?),
        None => None,
    };
    Ok(Credentials {
        access_key_id: c.access_key_id,
        secret_access_key: c.secret_access_key,
        session_token: c.token,
        expires,
    })
}

/// The text of the first `<name>` element, XML entities decoded.
pub(crate) fn element(xml: &str, name: &str) -> Option<String> {
    let open = format!("<{name}>");
    let start = xml.find(&open)? + open.len();
    let end = start + xml[start..].find(&format!("</{name}>"))?;
    quick_xml::escape::unescape(xml[start..end].trim())
        .ok()
        .map(|s| s.into_owned())
}

#[cfg(test)]
mod tests {
    use extdns_provider::credentials::{NoCredentials, Tried};

    use super::*;

    #[test]
    fn sts_answers_are_read_and_entities_decoded() {
        let xml = "<AssumeRoleResponse><AssumeRoleResult><Credentials><AccessKeyId>ASIA1</AccessKeyId>\
                   <SecretAccessKey>a&amp;b</SecretAccessKey></Credentials></AssumeRoleResult></AssumeRoleResponse>";
        assert_eq!(element(xml, "AccessKeyId").as_deref(), Some("ASIA1"));
        assert_eq!(element(xml, "SecretAccessKey").as_deref(), Some("a&b"));
        assert_eq!(element(xml, "SessionToken"), None);
    }

    #[test]
    fn container_uris_keep_the_token_on_the_host_or_the_agent() {
        for ok in [
            "http://127.0.0.1:8080/creds",
            "http://localhost/x",
            "http://169.254.170.23/v1/credentials",
            "http://[fd00:ec2::23]/v1/credentials",
            "https://example.com/creds",
        ] {
            assert!(check_container_uri(ok).is_ok(), "{ok}");
        }
        for bad in ["http://example.com/creds", "ftp://127.0.0.1/", "not a url"] {
            assert!(check_container_uri(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_container_document_needs_keys_and_a_success_code() {
        let url = "http://127.0.0.1/creds";
        let c = json_credentials(
            url,
            r#"{"Code":"Success","AccessKeyId":"A","SecretAccessKey":"S","Token":"T","Expiration":"2030-01-01T00:00:00Z"}"#,
        )
        .expect("credentials");
        assert_eq!((c.access_key_id.as_str(), c.session_token.as_deref()), ("A", Some("T")));
        assert!(c.expires.is_some());
        let refused = json_credentials(url, r#"{"Code":"Failure","AccessKeyId":"A","SecretAccessKey":"S"}"#);
        assert!(
            matches!(&refused, Err(CredentialSourceError::NotAvailable { code, .. }) if code == "Failure"),
            "{refused:?}"
        );
        assert!(json_credentials(url, r#"{"AccessKeyId":"A"}"#).is_err());
    }

    #[test]
    fn an_unreadable_document_keeps_the_json_error_as_its_cause() {
        let url = "http://127.0.0.1/creds";
        let Err(e) = json_credentials(url, r#"{"AccessKeyId":"A"}"#) else {
            panic!("a document without SecretAccessKey is refused");
        };
        let text = e.to_string();
        assert!(text.contains(url) && text.contains("SecretAccessKey"), "{text}");
        let cause = std::error::Error::source(&e).and_then(|c| c.downcast_ref::<serde_json::Error>());
        assert!(cause.is_some_and(|c| c.is_data()), "{e:?}");

        // Through the chain's own error, the cause is still there, two levels further down.
        let chain = NoCredentials::new("no AWS credentials", vec![Tried::failed("container credentials", e)]);
        assert!(
            chain
                .to_string()
                .starts_with("no AWS credentials; tried container credentials: "),
            "{chain}"
        );
        let source = std::error::Error::source(&chain)
            .and_then(std::error::Error::source)
            .and_then(|s| s.downcast_ref::<CredentialSourceError>());
        assert!(matches!(source, Some(CredentialSourceError::Json { .. })), "{chain:?}");
    }

    #[test]
    fn a_bad_container_uri_keeps_the_parse_error_and_a_missing_file_the_io_error() {
        let Err(e) = check_container_uri("not a url") else {
            panic!("not a URL");
        };
        let cause = std::error::Error::source(&e).and_then(|c| c.downcast_ref::<url::ParseError>());
        assert_eq!(cause, Some(&url::ParseError::RelativeUrlWithoutBase), "{e:?}");
        assert!(matches!(
            check_container_uri("http://example.com/creds"),
            Err(CredentialSourceError::UnsafeUri { .. })
        ));

        let missing = "/nonexistent/extdns/token";
        let Err(e) = read_file("the token file", missing) else {
            panic!("{missing} exists");
        };
        assert!(
            e.to_string()
                .starts_with(&format!("cannot read the token file {missing}: ")),
            "{e}"
        );
        let cause = std::error::Error::source(&e).and_then(|c| c.downcast_ref::<std::io::Error>());
        assert_eq!(
            cause.map(std::io::Error::kind),
            Some(std::io::ErrorKind::NotFound),
            "{e:?}"
        );
    }
}
