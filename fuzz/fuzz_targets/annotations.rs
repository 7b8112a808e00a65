//! The `external-dns` annotations every source reads: hostnames, targets, TTL (Go durations), the
//! provider-specific properties, the set identifier and the controller. Nothing in an annotation may
//! crash a source, and what is parsed keeps what the user wrote.
//!
//! The input is an object's annotations, one `key=value` per line (split at the first `=`). A first line
//! `@prefix=<p>` reads only prefix `<p>` (`--annotation-prefix`), as the flag does.

#![no_main]

use extdns_endpoint::Ttl;
use extdns_informer::StrMap;
use extdns_source::annotations::{key, parse_go_duration, parse_ttl};
use extdns_source::{Annotations, PREFIX_ALPHA, PREFIX_GA};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut lines = text.lines().peekable();
    let ann = match lines.peek().and_then(|l| l.strip_prefix("@prefix=")) {
        Some(prefix) => {
            let parsed = Annotations::with_prefix(prefix);
            lines.next();
            match parsed {
                Ok(a) => a,
                Err(_) => {
                    assert!(prefix.is_empty() || !prefix.ends_with('/'));
                    return;
                }
            }
        }
        None => Annotations::default(),
    };
    let pairs: Vec<(&str, &str)> = lines.filter_map(|l| l.split_once('=')).collect();
    let map: StrMap = pairs.iter().copied().collect();

    check_lookup(&ann, &map);
    check_lists(&ann, &map);
    check_ttl(&ann, &map);
    check_provider_specific(&ann, &map);
    for (_, v) in &pairs {
        check_duration(v);
    }
});

/// The value under the first prefix in precedence order wins.
fn check_lookup(ann: &Annotations, map: &StrMap) {
    for k in [
        key::HOSTNAME,
        key::TARGET,
        key::TTL,
        key::CONTROLLER,
        key::SET_IDENTIFIER,
    ] {
        let expected = ann.prefixes().iter().find_map(|p| map.get(&format!("{p}{k}")));
        assert_eq!(ann.get(map, k), expected, "lookup of {k}");
    }
    assert_eq!(
        ann.controller_allows(map),
        ann.get(map, key::CONTROLLER).is_none_or(|v| v == "dns-controller")
    );
    if ann.prefixes().len() == 2 {
        assert_eq!(ann.prefixes(), [PREFIX_GA, PREFIX_ALPHA]);
    }
}

/// Hostname and target lists lose nothing but spaces (and one trailing dot per target).
fn check_lists(ann: &Annotations, map: &StrMap) {
    for (k, list) in [
        (key::HOSTNAME, ann.hostnames(map)),
        (key::INTERNAL_HOSTNAME, ann.internal_hostnames(map)),
    ] {
        match ann.get(map, k) {
            None => assert!(list.is_empty()),
            Some(raw) => assert_eq!(list.join(","), raw.replace(' ', ""), "{k} lost data"),
        }
    }
    let targets = ann.targets(map);
    match ann.get(map, key::TARGET) {
        None | Some("") => assert!(targets.is_empty()),
        Some(raw) => {
            let items: Vec<String> = raw.replace(' ', "").split(',').map(str::to_string).collect();
            assert_eq!(targets.len(), items.len());
            for (t, item) in targets.iter().zip(&items) {
                assert!(item == t || *item == format!("{t}."), "target {item:?} became {t:?}");
            }
        }
    }
}

/// A TTL is in 1..=2147483647 or unset, and the same whichever way it is spelled.
fn check_ttl(ann: &Annotations, map: &StrMap) {
    let Ttl(ttl) = ann.ttl(map, "fuzz default/object");
    match ann.get(map, key::TTL) {
        None => assert_eq!(ttl, 0),
        Some(raw) => match parse_ttl(raw) {
            Ok(secs) => {
                assert_eq!(ttl, secs);
                assert!((1..=2_147_483_647).contains(&secs));
                assert_eq!(parse_ttl(&secs.to_string()), Ok(secs), "{secs} as seconds");
                assert_eq!(parse_ttl(&format!("{secs}s")), Ok(secs), "{secs}s as a duration");
            }
            Err(_) => assert_eq!(ttl, 0),
        },
    }
}

/// A Go duration that parses means the same number of nanoseconds written out in `ns`, and a `0s` more
/// changes nothing.
fn check_duration(v: &str) {
    let Ok(nanos) = parse_go_duration(v) else { return };
    assert!(
        nanos >= -(1i128 << 63) && nanos < (1i128 << 63),
        "{v:?} is out of Go's range: {nanos}"
    );
    let spelled = if nanos < 0 {
        format!("-{}ns", nanos.unsigned_abs())
    } else {
        format!("{nanos}ns")
    };
    assert_eq!(parse_go_duration(&spelled), Ok(nanos), "{v:?} is {spelled}");
    if v.trim_start_matches(['-', '+']) != "" {
        assert_eq!(parse_go_duration(&format!("{v}0s")), Ok(nanos), "{v:?} followed by 0s");
    }
}

/// Provider-specific properties only ever carry values the object has, and the set identifier is the
/// annotation's value.
fn check_provider_specific(ann: &Annotations, map: &StrMap) {
    let (ps, set_identifier) = ann.provider_specific(map);
    assert_eq!(set_identifier, ann.get(map, key::SET_IDENTIFIER).unwrap_or_default());
    let again = ann.provider_specific(map);
    assert_eq!(again.0, ps, "provider-specific properties are not deterministic");
    for p in ps.iter() {
        assert!(
            map.iter().any(|(_, v)| v == p.value),
            "property {}={:?} has a value no annotation has",
            p.name,
            p.value
        );
    }
    let alias = ann.get(map, key::ALIAS) == Some("true");
    assert_eq!(ps.get("alias").is_some(), alias);
}
