//! A TSIG key written as one value, `NAME:ALGORITHM:BASE64-SECRET` (`--dns-server-tsig-key`), read beside the
//! key type so every caller gets the same checks and the same words; no error ever carries the secret.

use std::str::FromStr;

use base64::Engine as _;

use crate::tsig::{Algorithm, Key, TsigError};

/// Why a `NAME:ALGORITHM:BASE64-SECRET` value is not a key. Each variant keeps the key name it gives (never
/// the secret), so a caller can say which of several keys is wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeySpecError {
    /// Fewer than three `:`-separated parts.
    #[error("want NAME:ALGORITHM:BASE64-SECRET")]
    Shape {
        /// The text before the first `:`.
        key: String,
    },
    /// The secret does not decode. The decoder's own reason is left out: it quotes the offending byte,
    /// which is part of the secret.
    #[error("the secret is not standard base64")]
    Secret {
        /// The key name.
        key: String,
    },
    /// The algorithm or the name is refused by [`Key::new`].
    #[error("{source}")]
    Key {
        /// The key name.
        key: String,
        /// Why.
        #[source]
        source: TsigError,
    },
}

impl KeySpecError {
    /// The name of the key the value gives.
    pub fn key(&self) -> &str {
        match self {
            KeySpecError::Shape { key } | KeySpecError::Secret { key } | KeySpecError::Key { key, .. } => key,
        }
    }
}

impl FromStr for Key {
    type Err = KeySpecError;

    /// `NAME:ALGORITHM:BASE64-SECRET`, surrounding blanks ignored.
    fn from_str(value: &str) -> Result<Key, KeySpecError> {
        let value = value.trim();
        let mut parts = value.splitn(3, ':');
        let (Some(name), Some(algorithm), Some(secret)) = (parts.next(), parts.next(), parts.next()) else {
            let key = value.split(':').next().unwrap_or_default().to_string();
            return Err(KeySpecError::Shape { key });
        };
        let key = || name.to_string();
        let refused = |source| KeySpecError::Key { key: key(), source };
        let algorithm: Algorithm = algorithm.parse().map_err(refused)?;
        let secret = base64::engine::general_purpose::STANDARD
            .decode(secret.trim())
            .map_err(|_| KeySpecError::Secret { key: key() })?;
        Key::new(name, algorithm, &secret).map_err(refused)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(value: &str) -> KeySpecError {
        match value.parse::<Key>() {
            Ok(k) => panic!("{value} was accepted: {k:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn a_key_is_read_with_its_name_and_algorithm() {
        let key: Key = " xfr.:hmac-sha256:c2VjcmV0LXNlY3JldC1zZWNyZXQ= "
            .parse()
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(key.name(), "xfr");
        assert_eq!(key.algorithm(), Algorithm::HmacSha256);
    }

    #[test]
    fn each_bad_part_is_named_with_the_key_and_never_the_secret() {
        let e = refused("xfr");
        assert!(matches!(e, KeySpecError::Shape { .. }) && e.key() == "xfr", "{e}");
        let e = refused("xfr:hmac-sha256:not*base64");
        assert_eq!(
            (e.to_string().as_str(), e.key()),
            ("the secret is not standard base64", "xfr")
        );
        assert!(!e.to_string().contains("not*base64"));
        let e = refused("xfr:hmac-md5:c2VjcmV0");
        assert!(
            matches!(e, KeySpecError::Key { .. }) && e.to_string().contains("hmac-sha256"),
            "{e}"
        );
        let e = refused("xfr:sha999:c2VjcmV0");
        assert!(
            e.to_string().contains("hmac-sha512") && !e.to_string().contains("c2VjcmV0"),
            "{e}"
        );
    }
}
