//! The rules of Go's httpproxy (its own test table's cases among them), case by case.

use super::*;

fn env(vars: &[(&str, &str)]) -> ProxyEnv {
    ProxyEnv::from_vars(|name| vars.iter().find(|(n, _)| *n == name).map(|(_, v)| v.to_string()))
}

/// Whether `host` (with `port`) is reached through the proxy under this `NO_PROXY`.
fn proxied(no_proxy: &str, host: &str, port: Option<u16>) -> bool {
    let env = env(&[("HTTPS_PROXY", "http://proxy:3128"), ("NO_PROXY", no_proxy)]);
    env.proxy_for("https", host, port).is_some()
}

#[test]
fn each_scheme_takes_its_own_variable_the_upper_case_one_first() {
    let e = env(&[
        ("HTTPS_PROXY", "http://secure:1"),
        ("https_proxy", "http://lower:1"),
        ("http_proxy", "plain:2"),
    ]);
    assert_eq!(e.proxy_for("https", "example.com", None), Some("http://secure:1"));
    assert_eq!(e.proxy_for("http", "example.com", None), Some("http://plain:2"));
    assert_eq!(e.proxy_for("ftp", "example.com", None), None);
    let lower = env(&[("HTTPS_PROXY", ""), ("https_proxy", "https://lower:1")]);
    assert_eq!(lower.proxy_for("https", "example.com", None), Some("https://lower:1"));
    let only_http = env(&[("HTTP_PROXY", "http://plain:2"), ("ALL_PROXY", "http://all:3")]);
    assert_eq!(
        only_http.proxy_for("https", "example.com", None),
        None,
        "Go reads no ALL_PROXY"
    );
    assert!(env(&[]).is_empty() && !only_http.is_empty());
}

#[test]
fn localhost_and_loopback_are_never_proxied() {
    for host in ["localhost", "LOCALHOST", "127.0.0.1", "127.0.0.2", "::1", "[::1]"] {
        assert!(!proxied("", host, Some(6443)), "{host}");
    }
    assert!(proxied("", "::2", Some(443)), "not a loopback address");
    assert!(proxied("", "localhost.example.com", None));
}

#[test]
fn a_domain_matches_itself_and_its_subdomains_a_leading_dot_only_subdomains() {
    let list = "foobar.com, .barbaz.net, *.qux.org";
    assert!(!proxied(list, "foobar.com", None));
    assert!(!proxied(list, "www.foobar.com", None));
    assert!(!proxied(list, "WWW.FOOBAR.COM", None));
    assert!(proxied(list, "foofoobar.com", None), "not a label boundary");
    assert!(!proxied(list, "www.barbaz.net", None));
    assert!(proxied(list, "barbaz.net", None), "a leading dot: subdomains only");
    assert!(!proxied(list, "a.qux.org", None));
    assert!(proxied(list, "qux.org", None));
    assert!(proxied(list, "baz.com", None));
}

#[test]
fn addresses_ranges_and_ports() {
    let list = "10.0.0.0/8,192.0.2.1,2001:db8::/32,[2001:db8:ffff::1]:8443,api.corp:6443,198.51.100.7:443";
    assert!(!proxied(list, "10.96.0.1", Some(443)));
    assert!(proxied(list, "11.0.0.1", Some(443)));
    assert!(!proxied(list, "192.0.2.1", Some(8080)));
    assert!(proxied(list, "192.0.2.2", None));
    assert!(!proxied(list, "[2001:db8::5]", Some(443)));
    assert!(proxied(list, "2001:db9::5", Some(443)));
    assert!(!proxied(list, "api.corp", Some(6443)));
    assert!(proxied(list, "api.corp", Some(443)), "the entry names another port");
    assert!(!proxied(list, "198.51.100.7", None), "443 is https's default port");
    assert!(proxied(list, "198.51.100.7", Some(8443)));
    assert!(!proxied("0.0.0.0/0", "203.0.113.9", None));
    assert!(
        proxied("0.0.0.0/0", "2001:db8::1", None),
        "a range never matches the other family"
    );
}

#[test]
fn a_star_bypasses_every_host_and_unreadable_entries_are_left_out() {
    assert!(!proxied("*", "dns.googleapis.com", None));
    assert!(!proxied("example.com,*", "other.org", None));
    assert!(proxied(":80, ., ,", "example.com", Some(80)));
    assert!(
        !proxied("NO_PROXY.example.com", "no_proxy.example.com", None),
        "case-insensitive"
    );
}

#[test]
fn no_proxy_falls_back_to_its_lower_case_spelling() {
    let e = env(&[("HTTPS_PROXY", "http://p:1"), ("no_proxy", "example.com")]);
    assert_eq!(e.proxy_for("https", "www.example.com", None), None);
    assert_eq!(e.proxy_for("https", "example.org", None), Some("http://p:1"));
}
