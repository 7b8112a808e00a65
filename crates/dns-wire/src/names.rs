//! DNS names between endpoint text and hickory's `Name`: parsed from names and targets as endpoints spell
//! them, written back in lower case with `\DDD` for bytes outside the host-name characters, so a name read
//! from a zone can always be written to again. Used by the record codec and by the typed record data.

use hickory_proto::ProtoError;
use hickory_proto::rr::Name;

use crate::CodecError;

/// A DNS name from an endpoint name or target (`web.example.org`, `*.example.org`, `_sip._tcp.example.org`).
pub fn name(s: &str) -> Result<Name, CodecError> {
    let trimmed = s.trim();
    if trimmed.is_empty() || trimmed == "." {
        return Err(CodecError::EmptyName);
    }
    // Escaped text is what `name_text` writes for bytes outside printable ASCII: decode it exactly, as
    // hickory's parsers would read `\DDD` differently from how its formatter writes it.
    // Text with a backslash is only ever read this way: a bad escape is an error, not a name hickory guesses.
    let parsed = if trimmed.contains('\\') {
        escaped_labels(trimmed).ok_or_else(|| ProtoError::from("invalid escape in a name"))
    } else {
        Name::from_ascii(trimmed)
            .or_else(|_| Name::from_utf8(trimmed))
            .or_else(|e| raw_labels(trimmed).ok_or(e))
    };
    let mut n = parsed.map_err(|source| CodecError::Name {
        name: s.to_string(),
        source,
    })?;
    n.set_fqdn(true);
    Ok(n)
}

/// Bytes a label is written with as they are: host-name characters, `_` (service labels) and `*` (wildcards
/// and their ownership records).
fn is_host_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'*')
}

/// A name in presentation format (RFC 1035 §5.1): `\DDD` is the byte with that decimal value, `\X` is `X`
/// (an escaped dot stays in its label). `None` for text that is not a valid escaped name.
fn escaped_labels(name: &str) -> Option<Name> {
    let bytes = name.as_bytes();
    let mut labels: Vec<Vec<u8>> = vec![Vec::new()];
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => {
                let (byte, len) = extdns_endpoint::escape::decode(bytes, i)?;
                labels.last_mut()?.push(byte);
                i += len;
            }
            b'.' => {
                labels.push(Vec::new());
                i += 1;
            }
            b => {
                labels.last_mut()?.push(b);
                i += 1;
            }
        }
    }
    if labels.len() > 1 && labels.last().is_some_and(Vec::is_empty) {
        labels.pop();
    }
    if labels.iter().any(Vec::is_empty) {
        return None;
    }
    Name::from_labels(labels.iter().map(Vec::as_slice)).ok()
}

/// An ASCII name whose labels hickory's parser refuses but DNS carries as plain bytes: `*` inside a label, as
/// in the ownership record `a-*.apps.example.org` of a wildcard record (external-dns writes that name, BIND
/// accepts it). Only host-name characters plus `*` are taken this way; label and name lengths are still checked.
fn raw_labels(name: &str) -> Option<Name> {
    let name = name.strip_suffix('.').unwrap_or(name);
    if name.is_empty() || !name.bytes().all(|b| b == b'.' || is_host_name_byte(b)) {
        return None;
    }
    let labels: Vec<&[u8]> = name.split('.').map(str::as_bytes).collect();
    if labels.iter().any(|l| l.is_empty()) {
        return None;
    }
    Name::from_labels(labels).ok()
}

/// A name as endpoints spell it: lower-case, without the trailing dot. Printable ASCII is taken as it is
/// (`a-*.apps.example.org`, not hickory's escaped `a-\\*`), so an ownership name reads back exactly as it
/// was written; any other byte is written `\DDD` (decimal, RFC 1035), which [`name`] reads back to the same
/// byte, so a record read from a zone can always be written to again.
pub fn name_text(n: &Name) -> String {
    let lower = n.to_lowercase();
    let mut s = String::with_capacity(n.len());
    for label in lower.iter() {
        if !s.is_empty() {
            s.push('.');
        }
        for &b in label {
            // Presentation format: printable ASCII as is, anything else (and the dot and backslash, which
            // would change the name's structure) as `\DDD`, which `name` reads back to the same byte.
            if is_host_name_byte(b) {
                s.push(char::from(b));
            } else {
                s.push_str(&format!("\\{b:03}"));
            }
        }
    }
    if s.is_empty() {
        s.push('.');
    }
    s
}
