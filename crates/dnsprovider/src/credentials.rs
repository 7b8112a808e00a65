//! A provider's Secret as that provider's own environment and flags: every pipeline gets its own, and the
//! process environment is never changed, so two providers of one type with two Secrets never see each
//! other's keys.

use std::collections::BTreeMap;
use std::fmt;

use crate::{FlagValue, SpecError};

/// What a Secret gives one provider: `UPPER_SNAKE` keys are environment variables (`CF_API_TOKEN`,
/// `AWS_ACCESS_KEY_ID`, ...), `lower-kebab` keys are flag values (`pdns-api-key`, `rfc2136-tsig-secret`, ...).
/// `Debug` shows the keys, never the values.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Credentials {
    /// Environment variables, by name.
    pub env: BTreeMap<String, String>,
    /// Flag values, applied after the spec's (a Secret's flag wins over `spec.config`).
    pub flags: Vec<FlagValue>,
}

impl Credentials {
    /// Reads a Secret's data (`secret` names it in errors, as `namespace/name`). A value that is not UTF-8,
    /// or a key that is neither form, is refused naming the key; one trailing newline (a file made with
    /// `echo`) is dropped.
    pub fn from_secret<'a>(
        secret: &str,
        data: impl IntoIterator<Item = (&'a str, &'a [u8])>,
    ) -> Result<Credentials, SpecError> {
        let mut credentials = Credentials::default();
        for (key, bytes) in data {
            let refuse = |why: &str| SpecError::Credentials {
                secret: secret.to_string(),
                key: key.to_string(),
                why: why.to_string(),
            };
            let text = std::str::from_utf8(bytes).map_err(|_| refuse("the value is not UTF-8 text"))?;
            let text = text
                .strip_suffix('\n')
                .map(|t| t.strip_suffix('\r').unwrap_or(t))
                .unwrap_or(text);
            if is_env_name(key) {
                credentials.env.insert(key.to_string(), text.to_string());
            } else if is_flag_name(key) {
                if crate::RESERVED_FLAGS.iter().any(|(k, _)| *k == key) {
                    return Err(refuse("a reserved flag: set it in the spec"));
                }
                credentials.flags.push(FlagValue {
                    flag: key.to_string(),
                    values: vec![text.to_string()],
                });
            } else {
                return Err(refuse(
                    "neither an environment variable (UPPER_SNAKE) nor a flag name (lower-kebab)",
                ));
            }
        }
        Ok(credentials)
    }
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .field("flags", &self.flags.iter().map(|v| &v.flag).collect::<Vec<_>>())
            .finish()
    }
}

fn is_env_name(key: &str) -> bool {
    key.starts_with(|c: char| c.is_ascii_uppercase() || c == '_')
        && key
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

fn is_flag_name(key: &str) -> bool {
    key.starts_with(|c: char| c.is_ascii_lowercase())
        && key
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upper_keys_are_environment_and_lower_keys_are_flags() -> Result<(), SpecError> {
        let c = Credentials::from_secret(
            "extdns/cf",
            [
                ("CF_API_TOKEN", b"token\n".as_slice()),
                ("cloudflare-proxied", b"true".as_slice()),
            ],
        )?;
        assert_eq!(c.env.get("CF_API_TOKEN").map(String::as_str), Some("token"));
        assert_eq!(c.flags[0].to_args().collect::<Vec<_>>(), ["--cloudflare-proxied=true"]);
        let shown = format!("{c:?}");
        assert!(shown.contains("CF_API_TOKEN") && !shown.contains("token\""), "{shown}");
        Ok(())
    }

    #[test]
    fn odd_keys_binary_values_and_reserved_flags_are_refused_without_the_value() {
        for (key, value) in [
            ("azure.json", b"{}".as_slice()),
            ("Mixed_Case", b"x".as_slice()),
            ("CF_API_TOKEN", b"\xff\xfe".as_slice()),
            ("provider", b"aws".as_slice()),
        ] {
            let e = Credentials::from_secret("ns/s", [(key, value)]);
            let Err(e) = e else { panic!("{key} accepted") };
            let text = e.to_string();
            assert!(text.contains(key) && text.contains("ns/s"), "{text}");
        }
    }
}
