//! The escapes of zone-file presentation text (RFC 1035 §5.1): `\DDD` is the byte of that decimal value,
//! `\X` is the character X. Names, character-strings and SvcParam values all carry them, and every reader
//! of such text (the SvcParam parser here, dns-wire's TXT and name readers) decodes them here, so one rule
//! decides what `\256`, `\65x` or a trailing `\` means wherever extdns reads them.

/// The byte an escape stands for, and how many bytes of `text` it takes (4 for `\DDD`, 2 for `\X`), for
/// the escape whose backslash is at `at`. `None` for `\DDD` over 255 or a backslash with nothing after it.
pub fn decode(text: &[u8], at: usize) -> Option<(u8, usize)> {
    match text.get(at + 1..at + 4).filter(|d| d.iter().all(u8::is_ascii_digit)) {
        Some(digits) => {
            let value = digits.iter().fold(0u16, |v, d| v * 10 + u16::from(d - b'0'));
            Some((u8::try_from(value).ok()?, 4))
        }
        None => Some((*text.get(at + 1)?, 2)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_digits_are_a_byte_and_anything_else_stands_for_itself() {
        assert_eq!(decode(br"a\065b", 1), Some((b'A', 4)));
        assert_eq!(decode(br"\000", 0), Some((0, 4)));
        assert_eq!(decode(br"\255", 0), Some((255, 4)));
        assert_eq!(decode(br#"\""#, 0), Some((b'"', 2)));
        assert_eq!(decode(br"\.x", 0), Some((b'.', 2)));
        // Fewer than three digits are no `\DDD`: the first digit stands for itself.
        assert_eq!(decode(br"\65", 0), Some((b'6', 2)));
        assert_eq!(decode(br"\65x", 0), Some((b'6', 2)));
    }

    #[test]
    fn a_byte_over_255_or_a_trailing_backslash_is_no_escape() {
        assert_eq!(decode(br"\256", 0), None);
        assert_eq!(decode(br"\999", 0), None);
        assert_eq!(decode(br"ab\", 2), None);
    }
}
