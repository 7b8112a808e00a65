//! Go templates (`--fqdn-template`, `--fqdn-target-template`, `--target-template`): parse and execute
//! arbitrary template text on a small Service, with the engine alone and as the sources run it. A hostile
//! template must neither crash nor hang the controller (the engine bounds steps, nesting and output), and
//! the same template on the same object always gives the same answer.
//!
//! The input is the template text.

#![no_main]

use std::collections::BTreeMap;

use extdns_informer::StrMap;
use extdns_informer::view::Meta;
use extdns_source::annotations::Annotations;
use extdns_source::template::{FqdnTemplate, TemplateKind, TemplateObject, TemplateParts};
use extdns_template::{ExecOptions, MapValues, MissingKey, Template, Value};
use libfuzzer_sys::fuzz_target;

/// The engine's output limit (1 MiB); nothing may write more.
const MAX_OUTPUT: usize = 1 << 20;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let service = Service {
        meta: Meta {
            name: "web".to_string(),
            namespace: "default".into(),
            labels: [("app", "web"), ("team", "shop")].into_iter().collect(),
            annotations: [
                ("external-dns.kubernetes.io/hostname", "web.example.com"),
                ("note", r#"{"zone":"example.org","n":3,"list":[1,2]}"#),
            ]
            .into_iter()
            .collect(),
        },
    };
    check_engine(text, &service.typed(service.annotations()), &ExecOptions::default());
    check_engine(
        text,
        &service.unstructured(service.annotations()),
        &ExecOptions::default()
            .missing_key(MissingKey::Error)
            .map_values(MapValues::Any),
    );
    check_fqdn(text, &service);
});

fn check_engine(text: &str, data: &Value, options: &ExecOptions<'_>) {
    let parsed = Template::parse(text);
    // Parsing is deterministic, errors included.
    assert_eq!(
        Template::parse(text).map(|_| ()).map_err(|e| e.to_string()),
        parsed.as_ref().map(|_| ()).map_err(|e| e.to_string())
    );
    let template = match parsed {
        Ok(t) => t,
        Err(e) => {
            assert!(text.contains("{{"), "plain text {text:?} failed to parse: {e}");
            return;
        }
    };
    let out = template.execute(data, options);
    if let Ok(s) = &out {
        assert!(s.len() <= MAX_OUTPUT, "{} bytes written", s.len());
        if !text.contains("{{") {
            assert_eq!(s, text, "plain text is not written as it is");
        }
    }
    let again = template.execute(data, options);
    assert_eq!(
        again.as_ref().map_err(|e| e.to_string()),
        out.as_ref().map_err(|e| e.to_string()),
        "a second execution differs"
    );
}

/// As the sources run templates: `isSource` defined, typed view first, then JSON keys; the hostnames are
/// the output split on ',', trimmed, without one trailing dot, without empties, sorted and unique.
fn check_fqdn(text: &str, service: &Service) {
    let Ok(Some(template)) = FqdnTemplate::parse(&[text.to_string()]) else {
        return;
    };
    let prefixes = Annotations::default();
    let raw = template.execute_raw(service, "service", &prefixes);
    let hostnames = template.execute(service, "service", &prefixes);
    match (&raw, &hostnames) {
        (Ok(raw), Ok(hostnames)) => {
            // Written apart from the source's own code, so that the two check each other.
            let mut expected = std::collections::BTreeSet::new();
            for item in raw.split(',') {
                let item = item.trim();
                let name = item.strip_suffix('.').unwrap_or(item);
                if !name.is_empty() {
                    expected.insert(name.to_string());
                }
            }
            assert!(hostnames.iter().eq(expected.iter()), "{hostnames:?} / {expected:?}");
        }
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
        _ => panic!("execute and execute_raw disagree on {text:?}: {raw:?} / {hostnames:?}"),
    }
}

/// A Service as the service source shows it to templates.
struct Service {
    meta: Meta,
}

/// The fields a template reads beyond the view, as the informer keeps them.
const KEPT_FIELDS: &str = r#"{"spec":{"ipFamilies":["IPv4"],"trafficDistribution":"PreferClose"}}"#;

impl TemplateObject for Service {
    fn parts(&self) -> TemplateParts<'_> {
        TemplateParts::new(&self.meta, TemplateKind::Service, Some(KEPT_FIELDS))
    }

    fn typed(&self, annotations: &StrMap) -> Value {
        let labels = Value::string_map([("app", "web"), ("team", "shop")]);
        let annotations = Value::string_map(annotations.iter());
        let port = Value::Struct(
            "ServicePort",
            vec![
                ("Name", Value::str("http")),
                ("Port", Value::Int(80)),
                ("NodePort", Value::Int(30080)),
            ],
        );
        let spec = Value::Struct(
            "ServiceSpec",
            vec![
                ("Type", Value::str("LoadBalancer")),
                ("ClusterIP", Value::str("10.0.0.1")),
                ("ExternalIPs", Value::List(vec![Value::str("192.0.2.1")])),
                ("Ports", Value::List(vec![port])),
                ("ExternalName", Value::str("")),
            ],
        );
        Value::Struct(
            "Service",
            vec![
                ("Kind", Value::str("Service")),
                ("APIVersion", Value::str("v1")),
                ("Name", Value::str("web")),
                ("Namespace", Value::str("default")),
                ("Labels", labels),
                ("Annotations", annotations),
                ("Spec", spec),
            ],
        )
    }

    fn unstructured(&self, _annotations: &StrMap) -> Value {
        let map = |pairs: Vec<(&str, Value)>| {
            Value::Map(
                pairs
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), v))
                    .collect::<BTreeMap<_, _>>(),
            )
        };
        map(vec![
            ("kind", Value::str("Service")),
            ("apiVersion", Value::str("v1")),
            (
                "metadata",
                map(vec![
                    ("name", Value::str("web")),
                    ("namespace", Value::str("default")),
                    ("labels", Value::string_map([("app", "web")])),
                ]),
            ),
            (
                "spec",
                map(vec![
                    ("type", Value::str("LoadBalancer")),
                    ("clusterIP", Value::str("10.0.0.1")),
                    (
                        "ports",
                        Value::List(vec![map(vec![
                            ("port", Value::Int(80)),
                            ("nodePort", Value::Int(30080)),
                        ])]),
                    ),
                ]),
            ),
            ("Name", Value::str("web")),
            ("Namespace", Value::str("default")),
        ])
    }
}
