use regex::Regex;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Which DNS names extdns may manage: `--domain-filter` / `--exclude-domains` (suffix lists), or
/// `--regex-domain-filter` / `--regex-domain-exclusion`, which replace the lists when either is set.
#[derive(Debug, Clone, Default)]
pub struct DomainFilter {
    include: Vec<String>,
    exclude: Vec<String>,
    regex: Option<RegexFilter>,
}

#[derive(Debug, Clone)]
struct RegexFilter {
    include: Option<Regex>,
    exclude: Option<Regex>,
}

/// Why a domain filter could not be built from its flags or its webhook JSON.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum DomainFilterError {
    /// `--regex-domain-filter` or `--regex-domain-exclusion` is not a valid regular expression.
    #[error("invalid domain filter regular expression {pattern:?}: {source}")]
    Regex {
        /// The expression as given.
        pattern: String,
        /// The regex compiler's reason.
        #[source]
        source: regex::Error,
    },
    /// A webhook domain-filter JSON object carries both suffix lists and regular expressions, which is ambiguous.
    #[error("a domain filter has either include/exclude lists or regular expressions, not both")]
    ListsAndRegex,
}

impl DomainFilter {
    /// A suffix-list filter. Entries are trimmed, lose one trailing dot and are compared case-insensitively
    /// (IDNA Unicode form); empty entries are dropped.
    pub fn new<S: AsRef<str>>(include: &[S], exclude: &[S]) -> Self {
        DomainFilter {
            include: normalize_list(include),
            exclude: normalize_list(exclude),
            regex: None,
        }
    }

    /// A regular-expression filter (unanchored matches on the normalised name). Empty patterns mean "none".
    pub fn with_regex(include: &str, exclude: &str) -> Result<Self, DomainFilterError> {
        let compile = |p: &str| {
            if p.is_empty() {
                return Ok(None);
            }
            Regex::new(p).map(Some).map_err(|source| DomainFilterError::Regex {
                pattern: p.to_string(),
                source,
            })
        };
        Ok(DomainFilter {
            regex: Some(RegexFilter {
                include: compile(include)?,
                exclude: compile(exclude)?,
            }),
            ..DomainFilter::default()
        })
    }

    /// The filter the four flags describe: regex mode when either regex flag is set, else the lists.
    pub fn from_flags<S: AsRef<str>>(
        include: &[S],
        exclude: &[S],
        regex_include: &str,
        regex_exclude: &str,
    ) -> Result<Self, DomainFilterError> {
        if !regex_include.is_empty() || !regex_exclude.is_empty() {
            Self::with_regex(regex_include, regex_exclude)
        } else {
            Ok(Self::new(include, exclude))
        }
    }

    /// Whether the filter restricts anything at all.
    pub fn is_configured(&self) -> bool {
        match &self.regex {
            Some(r) => r.include.is_some() || r.exclude.is_some(),
            None => !self.include.is_empty() || !self.exclude.is_empty(),
        }
    }

    /// The include suffixes (normalised), e.g. to pick zones.
    pub fn includes(&self) -> &[String] {
        &self.include
    }

    /// Whether extdns may manage `domain`: compared case-insensitively, ignoring one trailing dot; an entry
    /// `example.org` matches the name and its subdomains, `.example.org` only subdomains; exclusions win.
    pub fn matches(&self, domain: &str) -> bool {
        let domain = normalize(domain);
        if let Some(r) = &self.regex {
            if r.exclude.as_ref().is_some_and(|re| re.is_match(&domain)) {
                return false;
            }
            return r.include.as_ref().is_none_or(|re| re.is_match(&domain));
        }
        let included = self.include.is_empty() || self.include.iter().any(|f| suffix_match(f, &domain));
        included && !self.exclude.iter().any(|f| suffix_match(f, &domain))
    }

    /// Whether every filter matches (the plan's local filter AND the provider's).
    pub fn matches_all(filters: &[&DomainFilter], domain: &str) -> bool {
        filters.iter().all(|f| f.matches(domain))
    }

    /// external-dns's `MatchParent`, used to select zones: not excluded, and either no include filters or some
    /// include filter (not starting with a dot) lies at or under `domain`.
    pub fn match_parent(&self, domain: &str) -> bool {
        let domain = normalize(domain);
        if self.exclude.iter().any(|f| suffix_match(f, &domain)) {
            return false;
        }
        if self.include.is_empty() {
            return true;
        }
        self.include
            .iter()
            .filter(|f| !f.starts_with('.'))
            .any(|f| f == &domain || f.ends_with(&format!(".{domain}")))
    }
}

fn suffix_match(filter: &str, domain: &str) -> bool {
    if filter.starts_with('.') {
        return domain.ends_with(filter);
    }
    domain == filter
        || (domain.len() > filter.len() && domain.ends_with(filter) && {
            let cut = domain.len() - filter.len() - 1;
            domain.as_bytes()[cut] == b'.'
        })
}

fn normalize_list<S: AsRef<str>>(items: &[S]) -> Vec<String> {
    items
        .iter()
        .map(|s| normalize(s.as_ref()))
        .filter(|s| !s.is_empty())
        .collect()
}

/// Trimmed, one trailing dot removed, IDNA Unicode form (which lower-cases). A name IDNA rejects is still
/// used in its mapped form, as external-dns does.
fn normalize(s: &str) -> String {
    let s = s.trim();
    let s = s.strip_suffix('.').unwrap_or(s);
    if s.is_ascii() && !s.contains("xn--") {
        return s.to_ascii_lowercase();
    }
    let (unicode, _) = idna::domain_to_unicode(s);
    unicode
}

/// The webhook's JSON form: `{"include":[...],"exclude":[...]}` (sorted) or
/// `{"regexInclude":"...","regexExclude":"..."}`; no filter is `{}`.
#[derive(Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct DomainFilterJson {
    #[serde(
        default,
        deserialize_with = "crate::null::or_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    include: Vec<String>,
    #[serde(
        default,
        deserialize_with = "crate::null::or_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    exclude: Vec<String>,
    #[serde(
        default,
        deserialize_with = "crate::null::or_default",
        skip_serializing_if = "String::is_empty"
    )]
    regex_include: String,
    #[serde(
        default,
        deserialize_with = "crate::null::or_default",
        skip_serializing_if = "String::is_empty"
    )]
    regex_exclude: String,
}

impl Serialize for DomainFilter {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut json = DomainFilterJson::default();
        match &self.regex {
            Some(r) => {
                json.regex_include = r.include.as_ref().map(|re| re.as_str().to_string()).unwrap_or_default();
                json.regex_exclude = r.exclude.as_ref().map(|re| re.as_str().to_string()).unwrap_or_default();
            }
            None => {
                json.include = self.include.clone();
                json.include.sort();
                json.exclude = self.exclude.clone();
                json.exclude.sort();
            }
        }
        json.serialize(s)
    }
}

impl<'de> Deserialize<'de> for DomainFilter {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let json = DomainFilterJson::deserialize(d)?;
        let has_lists = !json.include.is_empty() || !json.exclude.is_empty();
        let has_regex = !json.regex_include.is_empty() || !json.regex_exclude.is_empty();
        match (has_lists, has_regex) {
            (true, true) => Err(serde::de::Error::custom(DomainFilterError::ListsAndRegex)),
            (_, true) => {
                DomainFilter::with_regex(&json.regex_include, &json.regex_exclude).map_err(serde::de::Error::custom)
            }
            _ => Ok(DomainFilter::new(&json.include, &json.exclude)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(include: &[&str], exclude: &[&str]) -> DomainFilter {
        DomainFilter::new(include, exclude)
    }

    #[test]
    fn no_filter_matches_everything() {
        assert!(list(&[], &[]).matches("anything.example.org"));
        assert!(!list(&[], &[]).is_configured());
    }

    #[test]
    fn a_filter_matches_the_domain_and_its_subdomains() {
        let f = list(&["example.com"], &[]);
        for (name, matches) in [
            ("example.com", true),
            ("a.b.example.com", true),
            ("badexample.com", false),
            ("example.org", false),
        ] {
            assert_eq!(f.matches(name), matches, "{name}");
        }
    }

    #[test]
    fn a_filter_with_a_leading_dot_matches_only_subdomains() {
        let f = list(&[".example.com"], &[]);
        assert!(f.matches("a.example.com"));
        assert!(!f.matches("example.com"));
    }

    #[test]
    fn filters_ignore_case_trailing_dots_and_whitespace() {
        assert!(list(&[" Example.COM. "], &[]).matches("WWW.example.com."));
    }

    #[test]
    fn empty_filter_entries_are_dropped() {
        assert!(list(&["", " "], &[]).matches("anything.org"));
    }

    #[test]
    fn exclusions_win_over_inclusions() {
        let f = list(&["example.com"], &["internal.example.com"]);
        assert!(f.matches("www.example.com"));
        assert!(!f.matches("db.internal.example.com"));
        assert!(!f.matches("internal.example.com"));
        let only_exclude = list(&[], &["example.com"]);
        assert!(!only_exclude.matches("a.example.com"));
        assert!(only_exclude.matches("a.example.org"));
    }

    #[test]
    fn wildcard_names_match_like_any_other_name() {
        assert!(list(&["example.com"], &[]).matches("*.example.com"));
    }

    #[test]
    fn unicode_filters_compare_in_unicode_form() {
        assert!(list(&["xn--bcher-kva.example"], &[]).matches("www.bücher.example"));
    }

    #[test]
    fn regex_mode_replaces_the_lists() {
        let f = DomainFilter::from_flags(&["example.com"], &[], r"\.org$", "").unwrap_or_default();
        assert!(f.matches("a.example.org"));
        assert!(!f.matches("a.example.com"));
    }

    #[test]
    fn regex_exclusion_alone_accepts_the_rest() {
        let f = DomainFilter::with_regex("", "^internal").unwrap_or_default();
        assert!(!f.matches("internal.example.com"));
        assert!(f.matches("www.example.com"));
    }

    #[test]
    fn regex_matching_is_unanchored_and_on_the_lowercased_name() {
        let f = DomainFilter::with_regex("example", "").unwrap_or_default();
        assert!(f.matches("WWW.EXAMPLE.com"));
    }

    #[test]
    fn an_invalid_regex_is_an_error_naming_the_pattern_and_keeping_the_cause() {
        let err = DomainFilter::with_regex("(", "").err();
        assert!(matches!(&err, Some(DomainFilterError::Regex { pattern, .. }) if pattern == "("));
        assert!(err.as_ref().and_then(std::error::Error::source).is_some());
    }

    #[test]
    fn match_parent_selects_zones_above_or_at_a_filter() {
        let f = list(&["a.example.com"], &[]);
        assert!(f.match_parent("example.com"));
        assert!(f.match_parent("a.example.com"));
        assert!(!f.match_parent("b.example.com"));
        assert!(list(&[], &[]).match_parent("example.com"));
    }

    #[test]
    fn json_form_matches_the_webhook_protocol() {
        let f = list(&["b.com", "a.com"], &["x.a.com"]);
        assert_eq!(
            serde_json::to_string(&f).unwrap_or_default(),
            r#"{"include":["a.com","b.com"],"exclude":["x.a.com"]}"#
        );
        assert_eq!(serde_json::to_string(&list(&[], &[])).unwrap_or_default(), "{}");
        let r = DomainFilter::with_regex("a", "b").unwrap_or_default();
        assert_eq!(
            serde_json::to_string(&r).unwrap_or_default(),
            r#"{"regexInclude":"a","regexExclude":"b"}"#
        );
        let back: DomainFilter = serde_json::from_str(r#"{"include":["a.com"]}"#).unwrap_or_default();
        assert!(back.matches("x.a.com") && !back.matches("x.b.com"));
        assert!(serde_json::from_str::<DomainFilter>(r#"{"include":["a.com"],"regexInclude":"x"}"#).is_err());
    }
}
