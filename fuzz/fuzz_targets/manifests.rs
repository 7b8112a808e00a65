//! The manifest loader behind `extdns endpoints --manifests` and `--manifests` runs, on arbitrary text as
//! YAML and as JSON. Bad input is an error naming the file and document (strict loading) or a skipped
//! document (lenient loading, which never fails on text), never a panic; loading is deterministic; the
//! same objects given twice are the same objects; lenient loading of good input loads what strict loading
//! does; and a JSON manifest means the same when the same data is written as YAML.

#![no_main]

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::Path;

use extdns_informer::manifests::{Format, Loader};
use extdns_informer::view::RouteKind;
use extdns_informer::{ClusterStore, LoadOptions, Loaded, ManifestError, ManifestWarning};
use libfuzzer_sys::fuzz_target;

const ROUTE_KINDS: [RouteKind; 5] = [
    RouteKind::Http,
    RouteKind::Grpc,
    RouteKind::Tls,
    RouteKind::Tcp,
    RouteKind::Udp,
];

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    for (format, origin) in [(Format::Yaml, "fuzz/input.yaml"), (Format::Json, "fuzz/input.json")] {
        let once = match load_one(&text, origin, format) {
            Ok(loaded) => Ok(snapshot(&loaded.store)),
            Err(e) => {
                check_error(&e, origin);
                Err(e.to_string())
            }
        };
        // Deterministic: the same text loads the same way again.
        assert_eq!(
            load(&[&text], origin, format),
            once,
            "a second load of the same text differs"
        );
        // The same objects twice are the same objects (the later replaces the earlier).
        if let Ok(objects) = &once {
            assert_eq!(
                load(&[&text, &text], origin, format).as_ref(),
                Ok(objects),
                "loading the text twice differs from loading it once"
            );
        }
        // Lenient loading never fails on text, and loads good text exactly as strict loading does.
        let mut lenient = Loader::lenient(LoadOptions::default());
        if let Err(e) = lenient.add_str(&text, Path::new(origin), format) {
            panic!("lenient loading failed: {e}");
        }
        let lenient = lenient.finish();
        if let Ok(objects) = &once {
            assert_eq!(
                &snapshot(&lenient.store),
                objects,
                "lenient loading of good text differs"
            );
            assert!(
                !lenient
                    .warnings
                    .iter()
                    .any(|w| matches!(w, ManifestWarning::Skipped(_))),
                "lenient loading skipped part of good text: {:?}",
                lenient.warnings
            );
        }
    }
    json_as_yaml(&text);
});

fn load_one(text: &str, origin: &str, format: Format) -> Result<Loaded, ManifestError> {
    let mut loader = Loader::new(LoadOptions::default());
    loader.add_str(text, Path::new(origin), format)?;
    Ok(loader.finish())
}

/// What a load produced, comparable: the objects of the cluster view, or the error's message.
fn load(texts: &[&str], origin: &str, format: Format) -> Result<String, String> {
    let mut loader = Loader::new(LoadOptions::default());
    for text in texts {
        loader
            .add_str(text, Path::new(origin), format)
            .map_err(|e| e.to_string())?;
    }
    Ok(snapshot(&loader.finish().store))
}

/// Every error names the input and a document in it, counted from 1, and says so in its message.
fn check_error(e: &ManifestError, origin: &str) {
    let Some(at) = e.location() else {
        panic!("error {e} from text has no location");
    };
    assert_eq!(&*at.path, Path::new(origin));
    assert!(at.document >= 1, "error {e} names document 0");
    assert!(at.line.is_none_or(|l| l >= 1), "error {e} names line 0");
    let message = e.to_string();
    assert!(
        message.starts_with(&format!("{origin}: document {}", at.document)),
        "error {message:?} does not name the file and document"
    );
}

/// The objects a store holds, as text: every list, and the lookups for every namespace the listed objects
/// mention.
fn snapshot(cluster: &ClusterStore) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "undecodable: {:?}", cluster.undecodable());
    let mut namespaces: BTreeSet<String> = ["default".to_string()].into();
    for s in cluster.services() {
        namespaces.insert(s.meta.namespace.to_string());
        let _ = writeln!(out, "{s:?}");
        let _ = writeln!(out, "{:?}", cluster.endpoint_slices(&s.meta.namespace, &s.meta.name));
    }
    for n in cluster.nodes() {
        let _ = writeln!(out, "{n:?}");
    }
    for g in cluster.gateways() {
        namespaces.insert(g.meta.namespace.to_string());
        let _ = writeln!(out, "{g:?}");
    }
    for l in cluster.listener_sets() {
        namespaces.insert(l.meta.namespace.to_string());
        let _ = writeln!(out, "{l:?}");
    }
    for kind in ROUTE_KINDS {
        for r in cluster.routes(kind) {
            namespaces.insert(r.meta.namespace.to_string());
            let _ = writeln!(out, "{r:?}");
        }
    }
    for ns in &namespaces {
        let _ = writeln!(out, "{ns}: {:?} {:?}", cluster.namespace(ns), cluster.pods(ns));
    }
    out
}

/// A stream of JSON values that loads as JSON loads the same when each value is written as a YAML
/// document: JSON is YAML, and kubectl reads either, once the characters YAML does not carry raw are
/// escaped.
fn json_as_yaml(text: &str) {
    let values: Result<Vec<serde_json::Value>, _> = serde_json::Deserializer::from_str(text).into_iter().collect();
    let Ok(values) = values else { return };
    // YAML limits an implicit key to 1,024 characters, quotes and escapes included; no Kubernetes key
    // comes near (a qualified name is at most 317), and JSON has no such limit.
    if values.is_empty() || values.iter().any(|v| longest_key(v) >= 1000) {
        return;
    }
    let Ok(from_json) = load(&[text], "fuzz/input", Format::Json) else {
        return;
    };
    let mut yaml = String::new();
    for v in &values {
        yaml.push_str("---\n");
        match serde_json::to_string_pretty(v) {
            Ok(s) => push_yaml_printable(&mut yaml, &s),
            Err(e) => panic!("{v:?} cannot be written as JSON: {e}"),
        }
        yaml.push('\n');
    }
    let from_yaml = load(&[&yaml], "fuzz/input", Format::Yaml);
    assert_eq!(
        from_yaml.as_ref(),
        Ok(&from_json),
        "{yaml}\nloads otherwise than as JSON"
    );
}

/// The length of the longest mapping key in `v` as the YAML below writes it.
fn longest_key(v: &serde_json::Value) -> usize {
    match v {
        serde_json::Value::Object(m) => m
            .iter()
            .map(|(k, v)| {
                let mut written = String::new();
                push_yaml_printable(&mut written, &serde_json::Value::from(k.as_str()).to_string());
                written.chars().count().max(longest_key(v))
            })
            .max()
            .unwrap_or(0),
        serde_json::Value::Array(items) => items.iter().map(longest_key).max().unwrap_or(0),
        _ => 0,
    }
}

/// Appends JSON text, escaping as `\uXXXX` the characters YAML 1.2 does not take raw (it allows only its
/// printable set in a stream; JSON allows any character but `"`, `\` and C0 controls in a string). Outside
/// strings the JSON writer only emits ASCII punctuation, digits and letters, so every such character is
/// inside a string, where the escape means the same character to both parsers. NEL and the byte-order mark
/// are escaped too: YAML 1.1 parsers break lines at NEL, and a BOM is only allowed at a stream's start.
fn push_yaml_printable(out: &mut String, json: &str) {
    for c in json.chars() {
        let printable = matches!(c, '\t' | '\n' | '\r' | ' '..='~' | '\u{A0}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}')
            && c != '\u{FEFF}'
            || c >= '\u{10000}';
        if printable {
            out.push(c);
        } else {
            let _ = write!(out, "\\u{:04X}", u32::from(c));
        }
    }
}
