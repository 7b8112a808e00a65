//! The zone-file presentation rules SvcParams are written in (RFC 9460 Appendix A): fields split at
//! whitespace outside quotes, char-strings with `\X` and `\DDD` escapes, and the canonical way back.

/// Split text into fields at whitespace, keeping a quoted part (`alpn="h2 h3"`) and escaped characters
/// (`\ `) in their field. `Err` names what is unclosed.
pub(super) fn fields(s: &str) -> Result<Vec<&str>, (&str, &'static str)> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        let mut quoted = false;
        while i < b.len() && (quoted || !b[i].is_ascii_whitespace()) {
            match b[i] {
                b'\\' => i += 1,
                b'"' => quoted = !quoted,
                _ => {}
            }
            i += 1;
        }
        let field = s.get(start..i.min(b.len())).unwrap_or(&s[start..]);
        if quoted {
            return Err((field, "an unclosed quote"));
        }
        if i > b.len() {
            return Err((field, "an escape at its end"));
        }
        out.push(field);
    }
    Ok(out)
}

/// Decode a value written as a char-string: surrounding quotes removed, `\DDD` the byte of that decimal
/// value, `\X` the character X. `None` for a bad escape or a stray quote.
pub(super) fn char_string(value: &str) -> Option<Vec<u8>> {
    let inner = match value.strip_prefix('"') {
        Some(rest) => rest.strip_suffix('"')?,
        None => value,
    };
    let b = inner.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' => {
                let (byte, len) = crate::escape::decode(b, i)?;
                out.push(byte);
                i += len;
            }
            b'"' => return None,
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    Some(out)
}

/// Whether a byte can stand in an unquoted value as it is.
fn plain(b: u8) -> bool {
    b.is_ascii_graphic() && !matches!(b, b'"' | b'\\' | b';' | b'(' | b')')
}

/// The canonical spelling of a list value (`alpn=h2,h3`): as it is when every byte is plain, otherwise
/// quoted ([`write_quoted`]).
pub(super) fn write_value(bytes: &[u8], out: &mut String) {
    if bytes.iter().all(|b| plain(*b)) && !bytes.is_empty() {
        out.extend(bytes.iter().map(|b| char::from(*b)));
        return;
    }
    write_quoted(bytes, out);
}

/// A value in quotes, `"` and `\` escaped and bytes outside printable ASCII written `\DDD`.
pub(super) fn write_quoted(bytes: &[u8], out: &mut String) {
    out.push('"');
    for &b in bytes {
        match b {
            b'"' | b'\\' => {
                out.push('\\');
                out.push(char::from(b));
            }
            b' '..=b'~' => out.push(char::from(b)),
            _ => out.push_str(&format!("\\{b:03}")),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_keep_quoted_whitespace() {
        assert_eq!(
            fields(r#" 1 .  alpn="h2 x" port=1 "#),
            Ok(vec!["1", ".", r#"alpn="h2 x""#, "port=1"])
        );
        assert_eq!(fields(r"a\ b c"), Ok(vec![r"a\ b", "c"]));
        assert!(fields(r#"alpn="h2"#).is_err());
        assert!(fields(r"key1=a\").is_err());
    }

    #[test]
    fn char_strings_decode_escapes() {
        assert_eq!(char_string(r#""a\"b\\c\065""#), Some(b"a\"b\\cA".to_vec()));
        assert_eq!(char_string("abc"), Some(b"abc".to_vec()));
        assert_eq!(char_string(r"\256"), None);
        assert_eq!(char_string(r#"a"b"#), None);
    }

    #[test]
    fn values_are_quoted_only_when_they_must_be() {
        for (bytes, want) in [
            (&b"h2"[..], "h2"),
            (b"a b", r#""a b""#),
            (b"a\"\\\x01", r#""a\"\\\001""#),
        ] {
            let mut s = String::new();
            write_value(bytes, &mut s);
            assert_eq!(s, want);
            assert_eq!(char_string(&s).as_deref(), Some(bytes));
        }
    }
}
