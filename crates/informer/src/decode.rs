//! From one object's JSON to its typed API struct, the same way for the live watchers and the manifest
//! loader: one object at a time, so an object the typed model cannot read fails alone, with the path of the
//! field that was wrong.
//!
//! The generated Gateway API structs require some fields the API allows to be absent (an older served
//! version made them optional, or a hand-written status leaves out what the API server would fill in), and
//! they model fields no source reads in detail (route rules, whose filter types grow with every Gateway API
//! release). Each API type's `prepare` (in [`crate::convert`]) evens that out before decoding with the
//! helpers here, so neither can make an object unreadable.

use std::fmt;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// A wrong value is quoted at most this long in a message: enough to recognise it, never a whole blob.
const MAX_QUOTED: usize = 64;
/// And the whole message at most this long.
const MAX_PROBLEM: usize = 300;

/// Why an object could not be decoded: the path of the offending field (`spec.ports[0].port`) and what was
/// wrong with it, any value quoted in it cut short. The decoder's own error is not kept: its message quotes
/// the offending value whole, which may be any size.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DecodeError {
    /// `.` when the object itself has the wrong shape.
    pub path: String,
    /// What is wrong there, as the decoder said.
    pub problem: String,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path == "." {
            f.write_str(&self.problem)
        } else {
            write!(f, "field {}: {}", self.path, self.problem)
        }
    }
}

impl std::error::Error for DecodeError {}

impl DecodeError {
    fn new(e: serde_path_to_error::Error<serde_json::Error>) -> Self {
        DecodeError {
            path: e.path().to_string(),
            problem: cut_quotes(&e.into_inner().to_string()),
        }
    }

    /// The object as a whole could not be read.
    pub(crate) fn whole(e: &serde_json::Error) -> Self {
        DecodeError {
            path: ".".to_string(),
            problem: cut_quotes(&e.to_string()),
        }
    }
}

/// Decodes one object, naming the field at fault when it cannot. The path is only tracked once the plain
/// decode has failed: tracking copies the name of every field read, for every object.
pub(crate) fn decode<K: DeserializeOwned>(value: &Value) -> Result<K, DecodeError> {
    K::deserialize(value).map_err(|plain| match serde_path_to_error::deserialize::<_, K>(value) {
        Err(e) => DecodeError::new(e),
        Ok(_) => DecodeError::whole(&plain),
    })
}

/// Empties `spec.rules` of a route: no source reads them, and their filter types grow with every Gateway
/// API release, so a newer filter must not make the route unreadable.
pub(crate) fn drop_route_rules(value: &mut Value) {
    if let Some(Value::Object(spec)) = value.get_mut("spec") {
        spec.insert("rules".into(), Value::Array(Vec::new()));
    }
}

/// Makes an absent (or null) `spec.<field>` an empty list: for fields an older served version made
/// optional and the typed model requires.
pub(crate) fn default_spec_list(value: &mut Value, field: &str) {
    if let Some(Value::Object(spec)) = value.get_mut("spec")
        && spec.get(field).is_none_or(Value::is_null)
    {
        spec.insert(field.into(), Value::Array(Vec::new()));
    }
}

/// Hand-written manifests often leave out status fields the API server always fills in (a condition's
/// `lastTransitionTime`, a route parent's `controllerName`, a listener's `attachedRoutes`); the typed
/// Gateway API structs require them, although no source reads them.
pub(crate) fn fill_gateway_status_defaults(value: &mut Value) {
    let Some(obj) = value.as_object_mut() else { return };
    fn fill_conditions(entry: &mut Map<String, Value>) {
        if let Some(Value::Array(conds)) = entry.get_mut("conditions") {
            for c in conds.iter_mut().filter_map(Value::as_object_mut) {
                c.entry("lastTransitionTime")
                    .or_insert_with(|| Value::String("1970-01-01T00:00:00Z".into()));
            }
        }
    }
    let Some(Value::Object(status)) = obj.get_mut("status") else {
        return;
    };
    fill_conditions(status);
    if let Some(Value::Array(parents)) = status.get_mut("parents") {
        for p in parents.iter_mut().filter_map(Value::as_object_mut) {
            p.entry("controllerName")
                .or_insert_with(|| Value::String(String::new()));
            p.entry("conditions").or_insert_with(|| Value::Array(Vec::new()));
            fill_conditions(p);
        }
    }
    if let Some(Value::Array(listeners)) = status.get_mut("listeners") {
        for l in listeners.iter_mut().filter_map(Value::as_object_mut) {
            l.entry("attachedRoutes").or_insert(Value::from(0));
            l.entry("conditions").or_insert_with(|| Value::Array(Vec::new()));
            fill_conditions(l);
        }
    }
}

/// Shortens every quoted run (`"..."` or `` `...` ``) longer than [`MAX_QUOTED`] characters, then the
/// whole text to [`MAX_PROBLEM`]; serde quotes the offending value in full.
pub(crate) fn cut_quotes(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(MAX_PROBLEM + 8));
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        out.push(c);
        if c != '"' && c != '`' {
            continue;
        }
        let close = c;
        let mut quoted = 0usize;
        let mut escaped = false;
        for q in chars.by_ref() {
            let ends = q == close && !escaped;
            escaped = !escaped && q == '\\' && close == '"';
            if ends {
                if quoted > MAX_QUOTED {
                    out.push('…');
                }
                out.push(q);
                break;
            }
            quoted += 1;
            if quoted <= MAX_QUOTED {
                out.push(q);
            }
        }
    }
    if out.chars().count() > MAX_PROBLEM {
        out = out.chars().take(MAX_PROBLEM).collect();
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_wrongly_typed_field_is_named_by_its_path() {
        let v = json!({"metadata": {"name": "web"}, "spec": {"ports": [{"port": 80}, {"port": "eighty"}]}});
        let err = decode::<k8s_openapi::api::core::v1::Service>(&v).expect_err("a string port does not decode");
        assert_eq!(err.path, "spec.ports[1].port");
        assert!(err.problem.contains("\"eighty\""), "{err}");
        assert!(
            err.to_string().starts_with("field spec.ports[1].port: invalid type"),
            "{err}"
        );
    }

    #[test]
    fn long_values_are_cut_in_messages() {
        let long = "x".repeat(10_000);
        let v = json!({"metadata": {"name": "web"}, "spec": {"type": 5, "clusterIP": ["a"], "ports": long}});
        let err = decode::<k8s_openapi::api::core::v1::Service>(&v).expect_err("must fail");
        assert!(err.to_string().len() < 400, "{err}");
        let cut = cut_quotes(&format!("invalid type: string \"{long}\", expected a sequence"));
        assert_eq!(
            cut,
            format!(
                "invalid type: string \"{}…\", expected a sequence",
                "x".repeat(MAX_QUOTED)
            )
        );
        assert_eq!(
            cut_quotes(r#"unknown variant `Foo`, "a\"b""#),
            r#"unknown variant `Foo`, "a\"b""#
        );
        assert!(cut_quotes(&"y".repeat(1000)).chars().count() <= MAX_PROBLEM + 1);
    }

    #[test]
    fn a_tls_route_without_hostnames_decodes_with_none() -> Result<(), DecodeError> {
        // Stored through v1alpha2, where spec.hostnames is optional, and served through v1.
        let mut v = json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "TLSRoute",
            "metadata": {"name": "t", "namespace": "n"},
            "spec": {"parentRefs": [{"name": "gw"}], "rules": [{"backendRefs": [{"name": "s", "port": 443}]}]}});
        let r: gateway_api::tlsroutes::TlsRoute = crate::watched::decode(&mut v)?;
        assert!(r.spec.hostnames.is_empty());
        Ok(())
    }

    #[test]
    fn route_rules_are_not_read_so_cannot_make_a_route_undecodable() -> Result<(), DecodeError> {
        // A filter type from a newer Gateway API release than the typed model knows.
        let mut v = json!({"metadata": {"name": "r", "namespace": "n"},
            "spec": {"hostnames": ["a.example.com"], "rules": [{"filters": [{"type": "FutureFilter"}]}]}});
        let r: gateway_api::httproutes::HttpRoute = crate::watched::decode(&mut v)?;
        assert_eq!(r.spec.hostnames, Some(vec!["a.example.com".to_string()]));
        Ok(())
    }
}
