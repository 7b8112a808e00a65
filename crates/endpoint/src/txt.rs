//! TXT data as DNS holds it: a sequence of character-strings of at most 255 octets each (RFC 1035,
//! section 3.3.14). An ownership value (long owner ids, namespaces and names, or encrypted) can be longer,
//! so every backend that stores strings (a DNS message, Cloud DNS's and PowerDNS's zone-file form, Azure's
//! string lists) cuts it the same way, here, and reads it back joined.

use std::borrow::Cow;

/// The most octets one character-string holds (RFC 1035, section 3.3.14: a length octet, then the data).
pub const CHARACTER_STRING_MAX: usize = 255;

/// `value` cut into character-strings of at most [`CHARACTER_STRING_MAX`] octets, never inside a UTF-8
/// sequence; an empty value is one empty string.
pub fn character_strings(value: &str) -> Vec<&str> {
    let mut rest = value;
    let mut out = Vec::with_capacity(value.len() / CHARACTER_STRING_MAX + 1);
    while rest.len() > CHARACTER_STRING_MAX {
        let mut end = CHARACTER_STRING_MAX;
        while !rest.is_char_boundary(end) {
            end -= 1;
        }
        out.push(&rest[..end]);
        rest = &rest[end..];
    }
    out.push(rest);
    out
}

/// `value` in zone-file form: its character-strings ([`character_strings`]), each quoted with `"` and `\`
/// escaped, separated by one space (`"first 255 octets" "the rest"`).
pub fn quoted_strings(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 4);
    for (i, part) in character_strings(value).into_iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        push_quoted(&mut out, part);
    }
    out
}

/// One quoted string holding `value` whole (`"…"`, `"` and `\` escaped), however long: the form an
/// ownership value is compared in.
pub fn quoted(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    push_quoted(&mut out, value);
    out
}

fn push_quoted(out: &mut String, part: &str) {
    out.push('"');
    for c in part.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
}

/// The strings of zone-file TXT data made only of quoted strings (`"a" "b"`), unescaped; `None` for any
/// other text (unquoted, or a quote left open).
pub fn unquoted_strings(text: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_ascii_whitespace()).is_some() {}
        match chars.next() {
            None => break,
            Some('"') => {}
            Some(_) => return None,
        }
        let mut s = String::new();
        loop {
            match chars.next()? {
                '\\' => s.push(chars.next()?),
                '"' => break,
                c => s.push(c),
            }
        }
        out.push(s);
    }
    (!out.is_empty()).then_some(out)
}

/// Zone-file TXT data read back as one value, where it is a value [`quoted_strings`] cut: two or more
/// quoted strings, every one but the last exactly [`CHARACTER_STRING_MAX`] octets long (or cut short
/// only before a character that would not fit). Returned as one quoted string; `None` for data split
/// otherwise (several strings someone wrote on purpose are kept as they are).
pub fn joined(text: &str) -> Option<String> {
    let strings = unquoted_strings(text)?;
    if strings.len() < 2 {
        return None;
    }
    let cut_by_us = |s: &String, next: &String| {
        let fill = s.len() + next.chars().next().map_or(0, char::len_utf8);
        s.len() == CHARACTER_STRING_MAX || (s.len() < CHARACTER_STRING_MAX && fill > CHARACTER_STRING_MAX)
    };
    let all_full = strings.windows(2).all(|w| cut_by_us(&w[0], &w[1]));
    all_full.then(|| quoted(&strings.concat()))
}

/// A TXT value in zone-file form as a backend that holds each character-string to 255 octets takes it
/// (Cloud DNS's rrdatas, Route53's values): as given while it is one string that fits, or strings
/// someone split; one longer string (quoted or bare) cut into quoted strings ([`quoted_strings`]).
pub fn fitted(value: &str) -> Cow<'_, str> {
    let whole = match unquoted_strings(value) {
        Some(mut strings) if strings.len() == 1 => strings.pop().unwrap_or_default(),
        Some(_) => return Cow::Borrowed(value),
        None => value.to_string(),
    };
    if whole.len() <= CHARACTER_STRING_MAX {
        Cow::Borrowed(value)
    } else {
        Cow::Owned(quoted_strings(&whole))
    }
}

/// Zone-file TXT data as read back from such a backend: strings [`fitted`] cut joined into the one quoted
/// value they were written from ([`joined`]), anything else as it is, so the plan sees what it wrote.
pub fn unfitted(data: &str) -> Cow<'_, str> {
    joined(data).map_or(Cow::Borrowed(data), Cow::Owned)
}

/// A desired TXT value as a backend holding 255-octet strings gives it back ([`fitted`] when written,
/// [`unfitted`] when read): what the plan must compare with a read, or a value a user split themselves
/// (a DKIM key as `"<255 octets>" "<rest>"`) would differ from its read-back and be written every sync.
pub fn as_read_back(value: &str) -> Cow<'_, str> {
    // Joined strings are at least 258 octets: a shorter value reads back as it is, unparsed.
    if value.len() <= CHARACTER_STRING_MAX {
        return Cow::Borrowed(value);
    }
    match fitted(value) {
        Cow::Borrowed(v) => unfitted(v),
        Cow::Owned(cut) => Cow::Owned(unfitted(&cut).into_owned()),
    }
}

/// [`as_read_back`] over a desired endpoint's targets, if it is a TXT record (for `adjust_endpoints`).
pub fn adjust_to_read_back(endpoint: &mut crate::Endpoint) {
    if endpoint.record_type != crate::RecordType::Txt {
        return;
    }
    let mut changed = false;
    for target in &mut endpoint.targets.0 {
        if let Cow::Owned(read_back) = as_read_back(target.as_str()) {
            *target = crate::Target::from(read_back.as_str());
            changed = true;
        }
    }
    // Two values that differ only in how they were split read back alike: kept once, in order.
    if changed {
        endpoint.targets.normalize();
    }
}

/// The data of a record read from such a backend, TXT values [`unfitted`], for `Endpoint::new`.
pub fn read_values<'a>(record_type: &crate::RecordType, data: impl IntoIterator<Item = &'a str>) -> Vec<Cow<'a, str>> {
    let txt = *record_type == crate::RecordType::Txt;
    data.into_iter()
        .map(|d| if txt { unfitted(d) } else { Cow::Borrowed(d) })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_a_user_split_compares_equal_with_its_read_back() {
        let dkim = format!("\"{}\" \"{}\"", "k".repeat(255), "tail");
        let stored = fitted(&dkim).into_owned();
        assert_eq!(stored, dkim, "written as the user split it");
        assert_eq!(as_read_back(&dkim), unfitted(&stored), "desired and read-back agree");
        assert_eq!(
            as_read_back(&dkim),
            format!("\"{}tail\"", "k".repeat(255)),
            "joined into one value"
        );
        let bare = "b".repeat(300);
        assert_eq!(as_read_back(&bare), unfitted(&fitted(&bare)), "a bare long value too");
        assert_eq!(as_read_back(&bare), format!("\"{bare}\""), "quoted whole");
        let short = "\"v=spf1 -all\"";
        assert_eq!(as_read_back(short), short, "a short value is left as it is");
    }

    #[test]
    fn a_desired_endpoint_s_values_are_adjusted_to_their_read_back_kept_once() {
        let whole = format!("\"{}tail\"", "k".repeat(255));
        let split = format!("\"{}\" \"tail\"", "k".repeat(255));
        let mut ep = crate::Endpoint::new(
            "a.example.org",
            crate::RecordType::Txt,
            [split.as_str(), whole.as_str()],
        );
        adjust_to_read_back(&mut ep);
        let targets: Vec<&str> = ep.targets.iter().map(|t| t.as_str()).collect();
        assert_eq!(
            targets,
            [whole.as_str()],
            "the split value reads back as the whole one: once"
        );
    }

    #[test]
    fn values_that_fit_are_written_as_given_and_longer_ones_read_back_as_written() {
        let long = format!("\"heritage=external-dns,external-dns/owner={}\"", "o".repeat(300));
        let written = fitted(&long);
        assert_eq!(unquoted_strings(&written).map(|s| s.len()), Some(2));
        assert_eq!(unfitted(&written), long);
        assert_eq!(fitted("\"short\""), "\"short\"");
        assert_eq!(
            fitted(&"b".repeat(300)),
            quoted_strings(&"b".repeat(300)),
            "a bare long value quoted"
        );
        let theirs = "\"v=spf1\" \"-all\"";
        assert_eq!((fitted(theirs), unfitted(theirs)), (theirs.into(), theirs.into()));
    }

    #[test]
    fn long_values_are_cut_at_255_octets_on_character_boundaries() {
        let long = "x".repeat(600);
        let parts: Vec<usize> = character_strings(&long).iter().map(|p| p.len()).collect();
        assert_eq!(parts, [255, 255, 90]);
        assert_eq!(character_strings(""), [""]);
        // A two-octet character that would straddle the cut moves to the next string whole.
        let wide = format!("{}é", "x".repeat(254));
        assert_eq!(character_strings(&wide), ["x".repeat(254).as_str(), "é"]);
    }

    #[test]
    fn a_long_value_is_written_as_quoted_strings_and_read_back_joined() {
        let value = format!("heritage=external-dns,external-dns/owner={}", "o".repeat(300));
        let written = quoted_strings(&value);
        assert!(written.starts_with('"') && written.contains("\" \""), "{written}");
        assert_eq!(joined(&written), Some(quoted(&value)));
        let wide = format!("{}é{}", "x".repeat(254), "y".repeat(10));
        assert_eq!(joined(&quoted_strings(&wide)), Some(quoted(&wide)));
    }

    #[test]
    fn strings_split_by_someone_else_and_single_strings_are_not_joined() {
        assert_eq!(joined("\"v=spf1\" \"include:example.org\""), None);
        assert_eq!(joined("\"short\""), None);
        assert_eq!(joined("unquoted"), None);
        assert_eq!(joined("\"open"), None);
    }

    #[test]
    fn quotes_and_backslashes_are_escaped_and_unescaped() {
        let value = "a \"quoted\" \\ value";
        assert_eq!(quoted_strings(value), "\"a \\\"quoted\\\" \\\\ value\"");
        assert_eq!(unquoted_strings(&quoted_strings(value)), Some(vec![value.to_string()]));
    }
}
