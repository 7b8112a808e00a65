//! The shared names' bookkeeping records, as docs/shared-names.md specifies them: one TXT record per owner
//! and shared record holding that owner's targets (a *contribution*), and one TXT record per owner and
//! domain proving the owner alive (a *heartbeat*). Their values start with `heritage=extdns-shared`, which
//! external-dns (and extdns's own TXT registry) does not read as ownership: to them these are someone's
//! TXT records, never touched.

use extdns_endpoint::RecordType;
use sha2::{Digest, Sha256};

use crate::crypto::{self, AesKey, CryptoError};
use crate::mapper::NameMapper;

/// The heritage of every shared-name bookkeeping value; external-dns reads only `heritage=external-dns`.
pub const HERITAGE: &str = "extdns-shared";
/// The label between the owner's label and the record's TXT name in a contribution's name.
pub const CONTRIBUTION_LABEL: &str = "_extdns-shared";
/// The first label of a heartbeat's name.
pub const HEARTBEAT_LABEL: &str = "_extdns-heartbeat";
/// The longest owner id used as its own DNS label; a longer one (or one with other characters) is hashed.
const OWNER_LABEL_MAX: usize = 40;
/// The prefix of a hashed owner label; a literal owner id never starts with it.
const HASHED: &str = "x--";

/// One owner's targets for one shared record, as its contribution record states them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contribution {
    /// The `--txt-owner-id` that wrote it.
    pub owner: String,
    /// The shared record's name (no trailing dot).
    pub record: String,
    /// The shared record's type.
    pub record_type: RecordType,
    /// The object that asked for the targets in that owner's cluster (`service/default/web`), if any.
    pub resource: Option<String>,
    /// The owner's targets, sorted and without duplicates, healthy or not.
    pub targets: Vec<String>,
    /// Those of `targets` the owner's health checks find unhealthy, sorted (`unhealthy=`, absent when
    /// none): every owner computes the published set from them alike ([`super::health::published`]).
    pub unhealthy: Vec<String>,
}

/// An owner's proof of life in one domain, and which of its processes wrote it (docs/shared-names.md).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Heartbeat {
    /// The `--txt-owner-id` that wrote it.
    pub owner: String,
    /// The process that wrote it (random per process start): two processes under one owner id differ here.
    pub instance: String,
    /// How many times in a row `instance` wrote it: 1 when it wrote the first or took it over from another
    /// process. Read back from the zone, never remembered; 0 when a writer did not say.
    pub seq: u64,
    /// The process `instance` took the heartbeat over from, if it did.
    pub from: Option<String>,
    /// Whether the heartbeat `instance` took over had been taken from `instance` first (two live processes).
    pub contested: bool,
    /// When it was written, in Unix seconds of the writer's clock (for the other owners' pruning only).
    pub at: u64,
}

/// A value of the shared bookkeeping, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SharedValue {
    /// A contribution record.
    Contribution(Contribution),
    /// A heartbeat record.
    Heartbeat(Heartbeat),
}

/// Why an owner id cannot write shared names.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FormatError {
    /// The owner id holds a character the value's `key=value,` syntax reserves.
    #[error("the owner id {0:?} cannot write shared names: it contains ',', '=', '\"' or whitespace")]
    OwnerId(String),
    /// Sealing a value failed.
    #[error("cannot encrypt a shared-name record: {0}")]
    Encrypt(#[source] CryptoError),
}

/// Names and values of the shared bookkeeping under one set of `--txt-*` settings.
#[derive(Debug, Clone)]
pub struct Format {
    mapper: NameMapper,
    /// Read with it always; write with it when `encrypt`.
    key: Option<AesKey>,
    encrypt: bool,
}

impl Format {
    /// The format under the TXT registry's prefix, suffix and wildcard replacement (`mapper`) and key.
    pub fn new(mapper: NameMapper, key: Option<AesKey>, encrypt: bool) -> Format {
        Format { mapper, key, encrypt }
    }

    /// Checks that `owner` can be written into a value.
    pub fn check_owner(owner: &str) -> Result<(), FormatError> {
        if owner.is_empty() || owner.chars().any(|c| matches!(c, ',' | '=' | '"') || c.is_whitespace()) {
            return Err(FormatError::OwnerId(owner.to_string()));
        }
        Ok(())
    }

    /// The DNS label standing for `owner` in names: the id itself when it is short lower-case letters, digits,
    /// `-` and `_` (and does not start with `x--`), else `x--` and 16 characters of the base32 of its SHA-256,
    /// so every label fits in 63 octets and two ids differing only in case get two labels.
    pub fn owner_label(owner: &str) -> String {
        let literal = !owner.is_empty()
            && owner.len() <= OWNER_LABEL_MAX
            && !owner.starts_with(HASHED)
            && owner
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
        if literal {
            return owner.to_string();
        }
        let digest = Sha256::digest(owner.as_bytes());
        let mut out = String::with_capacity(HASHED.len() + 16);
        out.push_str(HASHED);
        out.push_str(&base32_lower(&digest)[..16]);
        out
    }

    /// The name of `owner`'s contribution to the `record_type` record at `record`: the owner's label,
    /// `_extdns-shared`, then the name the TXT registry gives that record's ownership record (prefix,
    /// suffix and wildcard replacement applied).
    pub fn contribution_name(&self, owner: &str, record: &str, record_type: &RecordType) -> String {
        let mut txt = self.mapper.to_txt_name(record, record_type);
        if txt.ends_with('.') {
            txt.pop();
        }
        format!("{}.{CONTRIBUTION_LABEL}.{txt}", Self::owner_label(owner))
    }

    /// The name of `owner`'s heartbeat in `domain`.
    pub fn heartbeat_name(owner: &str, domain: &str) -> String {
        format!("{HEARTBEAT_LABEL}.{}.{domain}", Self::owner_label(owner))
    }

    /// The TXT value of a contribution (quoted, sealed when encryption is on).
    pub fn contribution_value(&self, c: &Contribution) -> Result<String, FormatError> {
        let mut plain = format!(
            "heritage={HERITAGE},kind=targets,owner={},record={},type={}",
            c.owner, c.record, c.record_type
        );
        if let Some(r) = c.resource.as_deref().filter(|r| !r.is_empty()) {
            plain.push_str(",resource=");
            plain.push_str(r);
        }
        plain.push_str(",targets=");
        plain.push_str(&c.targets.join(" "));
        // Only when some are unhealthy: a healthy contribution reads exactly as before the field existed.
        if !c.unhealthy.is_empty() {
            plain.push_str(",unhealthy=");
            plain.push_str(&c.unhealthy.join(" "));
        }
        self.seal(plain)
    }

    /// The TXT value of a heartbeat (quoted, sealed when encryption is on).
    pub fn heartbeat_value(&self, h: &Heartbeat) -> Result<String, FormatError> {
        let mut plain = format!(
            "heritage={HERITAGE},kind=heartbeat,owner={},instance={},seq={}",
            h.owner, h.instance, h.seq
        );
        if let Some(from) = h.from.as_deref().filter(|f| !f.is_empty()) {
            plain.push_str(",from=");
            plain.push_str(from);
        }
        if h.contested {
            plain.push_str(",contested=true");
        }
        plain.push_str(&format!(",at={}", h.at));
        self.seal(plain)
    }

    fn seal(&self, plain: String) -> Result<String, FormatError> {
        let body = match (&self.key, self.encrypt) {
            (Some(key), true) => {
                let nonce = crypto::generate_nonce().map_err(FormatError::Encrypt)?;
                crypto::encrypt(&plain, key, &nonce).map_err(FormatError::Encrypt)?
            }
            _ => plain,
        };
        Ok(format!("\"{body}\""))
    }

    /// The shared bookkeeping a TXT value states, or `None` for any other TXT value (external-dns's
    /// ownership records, users' TXT records, a sealed value this key does not open, a malformed one).
    pub fn parse(&self, value: &str) -> Option<SharedValue> {
        let body = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .unwrap_or(value);
        let opened;
        let plain = if body.starts_with("heritage=") {
            body
        } else {
            opened = crypto::decrypt(body, self.key.as_ref()?).ok()?.0;
            opened.as_str()
        };
        parse_plain(plain)
    }
}

fn parse_plain(plain: &str) -> Option<SharedValue> {
    let mut fields = std::collections::HashMap::new();
    for item in plain.split(',') {
        let (k, v) = item.split_once('=')?;
        fields.insert(k, v);
    }
    if fields.get("heritage") != Some(&HERITAGE) {
        return None;
    }
    let owner = fields.get("owner").filter(|o| !o.is_empty())?.to_string();
    match *fields.get("kind")? {
        "targets" => {
            let mut targets: Vec<String> = fields
                .get("targets")?
                .split(' ')
                .filter(|t| !t.is_empty())
                .map(str::to_string)
                .collect();
            targets.sort();
            targets.dedup();
            // Only targets the contribution holds can be unhealthy; a reader without the field (or an
            // older writer) takes every target as healthy.
            let mut unhealthy: Vec<String> = fields
                .get("unhealthy")
                .map(|u| {
                    u.split(' ')
                        .filter(|t| !t.is_empty() && targets.iter().any(|h| h == t))
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default();
            unhealthy.sort();
            unhealthy.dedup();
            Some(SharedValue::Contribution(Contribution {
                owner,
                record: fields.get("record").filter(|r| !r.is_empty())?.to_string(),
                record_type: RecordType::from(*fields.get("type")?),
                resource: fields.get("resource").filter(|r| !r.is_empty()).map(|r| r.to_string()),
                targets,
                unhealthy,
            }))
        }
        "heartbeat" => Some(SharedValue::Heartbeat(Heartbeat {
            owner,
            instance: fields.get("instance")?.to_string(),
            // An older writer says neither: a heartbeat no process has counted on.
            seq: fields.get("seq").map_or(Some(0), |s| s.parse().ok())?,
            from: fields.get("from").filter(|f| !f.is_empty()).map(|f| f.to_string()),
            contested: fields.get("contested") == Some(&"true"),
            at: fields.get("at")?.parse().ok()?,
        })),
        _ => None,
    }
}

/// RFC 4648 base32, lower case, no padding: DNS names are case-insensitive, so no upper case.
fn base32_lower(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";
    let mut out = String::with_capacity(bytes.len().div_ceil(5) * 8);
    let (mut buffer, mut bits) = (0u32, 0u32);
    for &b in bytes {
        buffer = (buffer << 8) | u32::from(b);
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            out.push(char::from(ALPHABET[((buffer >> bits) & 31) as usize]));
        }
        buffer &= (1 << bits) - 1;
    }
    if bits > 0 {
        out.push(char::from(ALPHABET[((buffer << (5 - bits)) & 31) as usize]));
    }
    out
}
