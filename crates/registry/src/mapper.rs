//! Names of ownership TXT records, as external-dns's affix name mapper computes them.
//!
//! Written names are always the "new" format: the lower-case record type glued to the first label
//! (`a-foo.example.com`) unless `%{record_type}` appears in the prefix or suffix, then the affix around the
//! first label. Reading also understands the old format without a type.

use std::borrow::Cow;

use extdns_endpoint::RecordType;

const RECORD_TYPE_TEMPLATE: &str = "%{record_type}";

/// `--txt-prefix` / `--txt-suffix` / `--txt-wildcard-replacement`, lower-cased as external-dns does.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NameMapper {
    prefix: String,
    suffix: String,
    wildcard_replacement: String,
}

impl NameMapper {
    /// Prefix and suffix are exclusive (checked by the registry's configuration).
    pub fn new(prefix: &str, suffix: &str, wildcard_replacement: &str) -> Self {
        NameMapper {
            prefix: prefix.to_lowercase(),
            suffix: suffix.to_lowercase(),
            wildcard_replacement: wildcard_replacement.to_lowercase(),
        }
    }

    fn is_prefix_mode(&self) -> bool {
        self.suffix.is_empty()
    }

    fn type_in_affix(&self) -> bool {
        self.prefix.contains(RECORD_TYPE_TEMPLATE) || self.suffix.contains(RECORD_TYPE_TEMPLATE)
    }

    /// The TXT name that records ownership of `name`'s `record_type` record. The input's case is kept.
    ///
    /// The name is split at its first dot; at the apex this puts the type in front of the zone's first
    /// label (`a-example.com` for `example.com`), outside the zone, which is what external-dns writes.
    pub fn to_txt_name(&self, name: &str, record_type: &RecordType) -> String {
        // Ownership names derive from the name as DNS stores it (ASCII, punycode), never from its Unicode
        // spelling: `a-bücher.example.org` would be written as the punycode of "a-bücher", which no record
        // read back as `xn--bcher-kva.example.org` ever maps to.
        let ascii;
        let name = if name.is_ascii() {
            name
        } else {
            ascii = idna::domain_to_ascii(name).unwrap_or_else(|_| name.to_string());
            ascii.as_str()
        };
        let t = lower_type(record_type);
        let (first, rest) = match name.split_once('.') {
            Some((f, r)) => (f, Some(r)),
            None => (name, None),
        };
        let prefix = render(&self.prefix, &t);
        let suffix = render(&self.suffix, &t);
        let first = if first == "*" && !self.wildcard_replacement.is_empty() {
            self.wildcard_replacement.as_str()
        } else {
            first
        };
        let mut out = String::with_capacity(name.len() + prefix.len() + suffix.len() + t.len() + 1);
        out.push_str(&prefix);
        if !self.type_in_affix() {
            out.push_str(&t);
            out.push('-');
        }
        out.push_str(first);
        out.push_str(&suffix);
        if let Some(rest) = rest {
            out.push('.');
            out.push_str(rest);
        }
        out
    }

    /// The record a TXT name records ownership of: its (lower-cased) name and type. The type is
    /// `RecordType::default()` (empty) for the old format without a type; the name is empty when the TXT
    /// name does not carry this mapper's affix at all (it then matches no record).
    pub fn to_endpoint_name(&self, txt_name: &str) -> (String, RecordType) {
        let lower: Cow<'_, str> = if txt_name.bytes().any(|b| !b.is_ascii() || b.is_ascii_uppercase()) {
            Cow::Owned(txt_name.to_lowercase())
        } else {
            Cow::Borrowed(txt_name)
        };
        if self.is_prefix_mode() {
            return self.drop_affix_extract_type(&lower);
        }
        // Suffix mode: the suffix sits in the first `1 + dots(suffix)` labels.
        let dots = self.suffix.matches('.').count();
        let parts: Vec<&str> = lower.splitn(2 + dots, '.').collect();
        if parts.len() < 2 + dots {
            return (String::new(), RecordType::default());
        }
        let head = parts[..1 + dots].join(".");
        let (name, t) = self.drop_affix_extract_type(&head);
        (format!("{name}.{}", parts[1 + dots]), t)
    }

    fn drop_affix_extract_type(&self, name: &str) -> (String, RecordType) {
        let prefix_mode = self.is_prefix_mode();
        let (mut prefix, mut suffix) = (Cow::Borrowed(self.prefix.as_str()), Cow::Borrowed(self.suffix.as_str()));
        if self.type_in_affix() {
            for t in RecordType::KNOWN {
                let lower = lower_type(&t);
                let stripped = if prefix_mode {
                    name.strip_prefix(render(&self.prefix, &lower).as_ref())
                } else {
                    name.strip_suffix(render(&self.suffix, &lower).as_ref())
                };
                if let Some(rest) = stripped {
                    return (rest.to_string(), t);
                }
            }
            // Records written before the type template was configured.
            prefix = Cow::Owned(self.prefix.replace(RECORD_TYPE_TEMPLATE, ""));
            suffix = Cow::Owned(self.suffix.replace(RECORD_TYPE_TEMPLATE, ""));
        }
        let stripped = if prefix_mode {
            name.strip_prefix(prefix.as_ref())
        } else {
            name.strip_suffix(suffix.as_ref())
        };
        match stripped {
            Some(rest) => extract_type_default_position(rest),
            None => (String::new(), RecordType::default()),
        }
    }
}

/// The record type as it appears in TXT names.
fn lower_type(t: &RecordType) -> Cow<'static, str> {
    Cow::Borrowed(match t {
        RecordType::A => "a",
        RecordType::Aaaa => "aaaa",
        RecordType::Cname => "cname",
        RecordType::Txt => "txt",
        RecordType::Srv => "srv",
        RecordType::Ns => "ns",
        RecordType::Mx => "mx",
        RecordType::Ptr => "ptr",
        RecordType::Naptr => "naptr",
        RecordType::Dname => "dname",
        RecordType::Tlsa => "tlsa",
        RecordType::Svcb => "svcb",
        RecordType::Https => "https",
        RecordType::Other(s) => return Cow::Owned(s.to_lowercase()),
    })
}

/// An affix with `%{record_type}` filled in.
fn render<'a>(affix: &'a str, t: &str) -> Cow<'a, str> {
    if affix.contains(RECORD_TYPE_TEMPLATE) {
        Cow::Owned(affix.replace(RECORD_TYPE_TEMPLATE, t))
    } else {
        Cow::Borrowed(affix)
    }
}

/// `a-foo` → (`foo`, A); anything whose part before the first `-` is not a type name is the old format.
fn extract_type_default_position(name: &str) -> (String, RecordType) {
    let head = name.split('-').next().unwrap_or(name);
    for t in RecordType::KNOWN {
        if head == lower_type(&t) {
            let rest = name.strip_prefix(head).and_then(|r| r.strip_prefix('-')).unwrap_or("");
            return (rest.to_string(), t);
        }
    }
    (name.to_string(), RecordType::default())
}

#[cfg(test)]
mod tests {
    #[test]
    fn ownership_names_of_unicode_names_use_their_ascii_form() {
        let m = NameMapper::new("", "", "");
        assert_eq!(
            m.to_txt_name("bücher.example.org", &RecordType::A),
            "a-xn--bcher-kva.example.org"
        );
        assert_eq!(
            m.to_endpoint_name("a-xn--bcher-kva.example.org"),
            ("xn--bcher-kva.example.org".to_string(), RecordType::A)
        );
    }

    use super::*;
    use RecordType::{A, Cname};

    fn m(prefix: &str, suffix: &str, wildcard: &str) -> NameMapper {
        NameMapper::new(prefix, suffix, wildcard)
    }

    /// `mapper` reads the TXT name `txt` as the ownership record of `name` of type `t`.
    fn reads_back(mapper: &NameMapper, txt: &str, name: &str, t: RecordType) {
        assert_eq!(mapper.to_endpoint_name(txt), (name.to_string(), t), "{mapper:?} {txt}");
    }

    /// external-dns's TXT record names for every prefix/suffix, wildcard and record type combination, row
    /// by row.
    #[test]
    fn txt_names_follow_the_external_dns_table() {
        #[rustfmt::skip]
        let cases: &[(&str, &str, &str, &str, RecordType, &str)] = &[
            // (prefix, suffix, wildcard replacement, record name, type, TXT name)
            ("",                        "",      "",      "foo.example.com",  A,     "a-foo.example.com"),
            ("",                        "",      "",      "*.example.com",    Cname, "cname-*.example.com"),
            ("",                        "",      "",      "example.com",      A,     "a-example.com"),
            ("txt.",                    "",      "",      "foo.example.com",  A,     "txt.a-foo.example.com"),
            ("txt.",                    "",      "",      "*.example.com",    Cname, "txt.cname-*.example.com"),
            ("txt.",                    "",      "",      "example.com",      A,     "txt.a-example.com"),
            ("%{record_type}-",         "",      "",      "foo.example.com",  A,     "a-foo.example.com"),
            ("%{record_type}-",         "",      "",      "*.example.com",    Cname, "cname-*.example.com"),
            ("%{record_type}-",         "",      "",      "example.com",      A,     "a-example.com"),
            ("prefix-%{record_type}.",  "",      "",      "foo.example.com",  A,     "prefix-a.foo.example.com"),
            ("prefix-%{record_type}.",  "",      "",      "*.example.com",    Cname, "prefix-cname.*.example.com"),
            ("prefix-%{record_type}.",  "",      "",      "example.com",      A,     "prefix-a.example.com"),
            ("",                        "-txt",  "",      "foo.example.com",  A,     "a-foo-txt.example.com"),
            ("",                        "-txt",  "",      "*.example.com",    Cname, "cname-*-txt.example.com"),
            ("",                        "-txt",  "",      "example.com",      A,     "a-example-txt.com"),
            ("",                        ".txt",  "",      "foo.example.com",  A,     "a-foo.txt.example.com"),
            ("",                        "",      "wild",  "*.example.com",    Cname, "cname-wild.example.com"),
            ("%{record_type}-abc-.",    "",      "",      "www.ex.com",       Cname, "cname-abc-.www.ex.com"),
        ];
        for (prefix, suffix, wildcard, name, t, want) in cases {
            let mapper = m(prefix, suffix, wildcard);
            assert_eq!(mapper.to_txt_name(name, t), *want, "{mapper:?} {name} {t}");
        }
    }

    #[test]
    fn every_known_type_has_its_lower_case_prefix() {
        let mapper = m("", "", "");
        let want = [
            "a-", "aaaa-", "cname-", "ns-", "mx-", "ptr-", "srv-", "naptr-", "txt-", "dname-", "tlsa-", "svcb-",
            "https-",
        ];
        assert_eq!(want.len(), RecordType::KNOWN.len());
        for (t, w) in RecordType::KNOWN.iter().zip(want) {
            assert_eq!(mapper.to_txt_name("x.example.com", t), format!("{w}x.example.com"));
        }
    }

    #[test]
    fn affixes_are_lower_cased_but_names_keep_their_case() {
        let mapper = m("TXT.", "", "WILD");
        assert_eq!(
            mapper.to_txt_name("Foo.Example.com", &RecordType::A),
            "txt.a-Foo.Example.com"
        );
        assert_eq!(
            mapper.to_txt_name("*.Example.com", &RecordType::A),
            "txt.a-wild.Example.com"
        );
    }

    #[test]
    fn txt_names_map_back_to_their_record() {
        let mappers = [
            m("", "", ""),
            m("txt.", "", ""),
            m("%{record_type}-", "", ""),
            m("prefix-%{record_type}.", "", ""),
            m("", "-txt", ""),
            m("", ".txt", ""),
            m("", "-%{record_type}", ""),
        ];
        for mapper in &mappers {
            for t in RecordType::KNOWN {
                for name in ["foo.example.com", "a.b.example.com", "*.example.com"] {
                    let txt = mapper.to_txt_name(name, &t);
                    assert_eq!(
                        mapper.to_endpoint_name(&txt),
                        (name.to_string(), t.clone()),
                        "{mapper:?} {txt}"
                    );
                }
            }
        }
    }

    #[test]
    fn reading_lower_cases_the_txt_name() {
        reads_back(&m("", "", ""), "A-Foo.Example.com", "foo.example.com", A);
    }

    #[test]
    fn old_format_names_have_no_type() {
        for (mapper, txt) in [
            (m("", "", ""), "foo.example.com"),
            (m("txt.", "", ""), "txt.foo.example.com"),
            (m("", "-txt", ""), "foo-txt.example.com"),
        ] {
            reads_back(&mapper, txt, "foo.example.com", RecordType::default());
        }
    }

    #[test]
    fn a_type_template_also_reads_names_written_without_it() {
        // `%{record_type}` removed from the prefix: "txt." written by an older configuration.
        let mapper = m("txt.%{record_type}-", "", "");
        reads_back(&mapper, "txt.cname-foo.example.com", "foo.example.com", Cname);
        reads_back(&mapper, "txt.a-foo.example.com", "foo.example.com", A);
    }

    #[test]
    fn names_without_the_affix_match_nothing() {
        assert_eq!(m("txt.", "", "").to_endpoint_name("foo.example.com").0, "");
        assert_eq!(m("", ".txt", "").to_endpoint_name("com").0, "");
    }

    #[test]
    fn apex_names_with_a_suffix_map_back() {
        let mapper = m("", "-txt", "");
        reads_back(&mapper, "a-example-txt.com", "example.com", A);
    }
}
