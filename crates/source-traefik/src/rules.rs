//! The hosts a Traefik router's rule names, found as external-dns v0.23 finds them: every `Host(...)`,
//! `HostHeader(...)` and `HostSNI(...)` matcher of the rule, each of its backquoted values (several in one
//! matcher, `Host(\`a\`, \`b\`)`, as Traefik v2 wrote them), `*` (TLS passthrough) and empty values left
//! out. Other matchers (`HostRegexp`, `PathPrefix`) name no host; the rule's logic (`&&`, `||`, `!`) is not
//! read, so a negated host is published too, as external-dns publishes it.

use std::sync::LazyLock;

use regex::Regex;

/// A host matcher and its argument list up to the first backquote followed by the closing parenthesis:
/// external-dns's expression, whose lazy `.*?` ends the list at the first `` `) ``.
static MATCHER: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"(?:HostSNI|HostHeader|Host)\s*\(\s*(`.*?`)\s*\)").ok());

/// One backquoted value without a comma or backquote inside.
static VALUE: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"`([^,`]+)`").ok());

/// The hosts `rule` names, in the order written, duplicates kept (the merge joins them).
pub fn hosts(rule: &str) -> Vec<&str> {
    let (Some(matcher), Some(value)) = (MATCHER.as_ref(), VALUE.as_ref()) else {
        // Both expressions are constants that compile; a regex crate that refused them would leave
        // every rule nameless rather than panic.
        return Vec::new();
    };
    matcher
        .find_iter(rule)
        .flat_map(|m| value.find_iter(m.as_str()))
        .map(|v| v.as_str().trim_matches('`'))
        .filter(|h| !h.is_empty() && *h != "*")
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_matcher_names_its_host() {
        assert_eq!(hosts("Host(`b.example.com`)"), ["b.example.com"]);
    }

    #[test]
    fn host_header_and_host_sni_name_hosts_too() {
        assert_eq!(hosts("HostHeader(`c.example.com`)"), ["c.example.com"]);
        assert_eq!(hosts("HostSNI(`d.example.com`)"), ["d.example.com"]);
    }

    #[test]
    fn several_matchers_of_one_rule_each_name_their_host() {
        assert_eq!(
            hosts("Host(`d.example.com`) || Host(`e.example.com`)"),
            ["d.example.com", "e.example.com"]
        );
        assert_eq!(
            hosts("HostSNI(`a.example.com`) || HostSNI(`b.example.com`)"),
            ["a.example.com", "b.example.com"]
        );
    }

    #[test]
    fn several_values_in_one_matcher_are_each_a_host() {
        assert_eq!(
            hosts("Host(`g.example.com`, `h.example.com`)"),
            ["g.example.com", "h.example.com"]
        );
    }

    #[test]
    fn the_wildcard_host_and_empty_values_are_left_out() {
        assert!(hosts("Host(`*`)").is_empty());
        assert!(hosts("HostSNI(`*`)").is_empty());
        assert!(hosts("Host(``)").is_empty());
    }

    #[test]
    fn other_matchers_and_spacing_around_them() {
        assert_eq!(
            hosts("PathPrefix(`/api`) && Host ( `a.example.com` ) && Headers(`X`, `y`)"),
            ["a.example.com"]
        );
        assert!(hosts("HostRegexp(`{sub:[a-z]+}.example.com`)").is_empty());
        assert!(hosts("HostSNIRegexp(`^.+\\.example\\.com$`)").is_empty());
        assert!(hosts("PathPrefix(`/`)").is_empty());
        assert!(hosts("").is_empty());
    }

    #[test]
    fn a_negated_host_is_still_named_as_external_dns_reads_rules() {
        assert_eq!(hosts("!Host(`x.example.com`)"), ["x.example.com"]);
    }

    #[test]
    fn the_argument_list_ends_at_the_first_backquote_before_a_parenthesis() {
        // external-dns's lazy match: the first matcher's list ends at its own `)`, the second is read apart.
        assert_eq!(
            hosts("Host(`a.example.com`) && Path(`/x`) || Host(`b.example.com`)"),
            ["a.example.com", "b.example.com"]
        );
    }
}
