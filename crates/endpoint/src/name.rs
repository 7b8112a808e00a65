use std::borrow::Cow;

/// The normal form of a DNS name, as external-dns computes its plan's row keys: whitespace trimmed, IDNA `ToASCII` with the UTS-46
/// lookup mapping (lower-cases) and *transitional* processing (`ß` becomes `ss`), underscores allowed, one
/// trailing dot. Names IDNA rejects still get a key (lower-cased), with a warning, as in external-dns.
///
/// Almost every name is plain ASCII; those only need lower-casing, which keeps a 100,000-record plan cheap.
pub fn normalize_dns_name(name: &str) -> String {
    let name = name.trim();
    let mut out = if name.is_ascii() {
        name.to_ascii_lowercase()
    } else {
        to_ascii_slow(name)
    };
    if !out.ends_with('.') {
        out.push('.');
    }
    out
}

fn to_ascii_slow(name: &str) -> String {
    let transitional = transitional_map(name);
    match idna::domain_to_ascii(&transitional) {
        Ok(ascii) => ascii,
        Err(e) => {
            tracing::warn!(name, error = %e, "DNS name is not a valid internationalised name; using it lower-cased");
            transitional.to_lowercase()
        }
    }
}

/// UTS-46 transitional processing differs from the non-transitional mapping the `idna` crate implements in
/// exactly four deviation characters; map them first.
fn transitional_map(name: &str) -> Cow<'_, str> {
    if !name
        .chars()
        .any(|c| matches!(c, 'ß' | 'ẞ' | 'ς' | '\u{200C}' | '\u{200D}'))
    {
        return Cow::Borrowed(name);
    }
    let mut out = String::with_capacity(name.len() + 2);
    for c in name.chars() {
        match c {
            'ß' | 'ẞ' => out.push_str("ss"),
            'ς' => out.push('σ'),
            '\u{200C}' | '\u{200D}' => {}
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// The key under which every spelling of one DNS name meets (the plan's row, the incremental reconcile's
/// affected names): [`normalize_dns_name`] without the trailing dot, borrowed when the name is already in
/// normal form (the common case), so keying 100,000 records allocates nothing per record.
pub fn name_key(name: &str) -> Cow<'_, str> {
    let bare = name.strip_suffix('.').unwrap_or(name);
    let canonical = !bare.is_empty()
        && bare.bytes().all(|b| b.is_ascii() && !b.is_ascii_uppercase())
        && !bare.starts_with(|c: char| c.is_ascii_whitespace())
        && !bare.ends_with(|c: char| c.is_ascii_whitespace());
    if canonical {
        return Cow::Borrowed(bare);
    }
    let mut n = normalize_dns_name(name);
    n.pop();
    Cow::Owned(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ascii_names_are_lower_cased_trimmed_and_get_a_trailing_dot() {
        assert_eq!(normalize_dns_name(" WWW.Example.COM "), "www.example.com.");
        assert_eq!(normalize_dns_name("www.example.com."), "www.example.com.");
        assert_eq!(normalize_dns_name("_srv._tcp.example.com"), "_srv._tcp.example.com.");
    }

    #[test]
    fn unicode_names_become_punycode() {
        assert_eq!(normalize_dns_name("www.Bücher.example"), "www.xn--bcher-kva.example.");
        assert_eq!(
            normalize_dns_name("www.xn--bcher-kva.example"),
            "www.xn--bcher-kva.example."
        );
    }

    #[test]
    fn transitional_processing_maps_sharp_s_to_ss() {
        assert_eq!(normalize_dns_name("straße.example"), "strasse.example.");
    }
}
