//! FQDN templates (`--fqdn-template`, `--fqdn-target-template`) with Go `text/template` semantics (§6.9).
//!
//! Users paste templates from their external-dns deployments, so they must mean the same thing here:
//! Go field names over the typed object (`{{.Name}}`, `{{.Spec.ClusterIP}}`), Go's truth and comparison
//! rules, `<no value>` for absent map keys, and external-dns's functions (`isSource`, `trimPrefix`,
//! `replace`, ...). When the typed view fails, the template is retried on an unstructured view with JSON
//! keys (`{{.Spec.clusterIP}}`) where an absent key is an error, as external-dns does.
//!
//! The interpreter is our own (lexer, parser, evaluator over [`Value`]) rather than the `gtmpl` crate:
//! gtmpl ranges over maps in random order, runs `range`'s else branch even after iterations, spawns a
//! thread per parse, and its functions are plain `fn` pointers, so `isSource` could not know which
//! source is running.

mod exec;
mod format;
mod lex;
mod objects;
mod parse;

use std::collections::BTreeMap;
use std::fmt;

use crate::SourceError;

/// The `--source` names `isSource` accepts (external-dns's source types).
pub const KNOWN_SOURCES: &[&str] = &[
    "service",
    "ingress",
    "node",
    "pod",
    "gateway-httproute",
    "gateway-grpcroute",
    "gateway-tlsroute",
    "gateway-tcproute",
    "gateway-udproute",
    "istio-gateway",
    "istio-virtualservice",
    "ambassador-host",
    "contour-httpproxy",
    "gloo-proxy",
    "traefik-proxy",
    "openshift-route",
    "skipper-routegroup",
    "kong-tcpingress",
    "f5-virtualserver",
    "f5-transportserver",
    "crd",
    "unstructured",
    "connector",
    "fake",
    "empty",
];

/// A value templates evaluate over, shaped like the Go data external-dns executes its templates on.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// An absent map entry (Go's invalid value; prints `<no value>`).
    Missing,
    /// A nil pointer, interface, slice or map (prints `<nil>`).
    Nil,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    List(Vec<Value>),
    /// A Go map: an absent key is `<no value>` on the typed view and an error on the JSON-key view.
    Map(BTreeMap<String, Value>),
    /// A Go struct: its type name (for errors) and fields in declaration order. An unknown field is an
    /// execution error.
    Struct(&'static str, Vec<(&'static str, Value)>),
}

impl Value {
    pub fn str(s: impl Into<String>) -> Value {
        Value::Str(s.into())
    }

    /// A string, or nil when absent (a Go `*string`).
    pub fn opt_str(s: Option<&str>) -> Value {
        s.map_or(Value::Nil, Value::str)
    }

    pub fn list<T>(items: impl IntoIterator<Item = T>, f: impl Fn(T) -> Value) -> Value {
        Value::List(items.into_iter().map(f).collect())
    }
}

/// An object a template can run on.
pub trait TemplateObject {
    /// Names the object in errors and logs: `service default/web`.
    fn describe(&self) -> String;
    /// The typed view, with Go field names (`.Name`, `.Spec.ClusterIP`).
    fn typed(&self) -> Value;
    /// The unstructured view with JSON keys (`.Spec.clusterIP`), tried when the typed one fails.
    fn unstructured(&self) -> Value;
}

/// A template that cannot be parsed or run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    #[error("cannot parse template {value:?}: {message}")]
    Parse { value: String, message: String },
    #[error("template failed on {object}: {message}")]
    Execute { object: String, message: String },
}

impl TemplateError {
    /// The source error a failed execution becomes (the whole `endpoints()` call fails).
    pub fn into_source_error(self, source_name: &str) -> SourceError {
        match self {
            TemplateError::Execute { object, message } => SourceError::Template {
                source_name: source_name.to_string(),
                object,
                message,
            },
            parse @ TemplateError::Parse { .. } => SourceError::Other {
                source_name: source_name.to_string(),
                message: parse.to_string(),
            },
        }
    }
}

/// A parsed FQDN template: all flag values joined with ',' into one Go template.
#[derive(Clone)]
pub struct FqdnTemplate {
    text: String,
    tree: parse::Tree,
}

impl fmt::Debug for FqdnTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("FqdnTemplate").field(&self.text).finish()
    }
}

impl FqdnTemplate {
    /// Parse the flag values, joined with ','. `None` when the join is blank. As external-dns does, the
    /// values are parsed cumulatively (the first, then the first two, ...) so the error names the value
    /// that broke the template.
    pub fn parse(values: &[String]) -> Result<Option<FqdnTemplate>, TemplateError> {
        let joined = values.join(",");
        if joined.trim().is_empty() {
            return Ok(None);
        }
        let mut tree = None;
        for i in 1..=values.len() {
            let text = values[..i].join(",");
            match parse::parse(&text, &exec::is_func) {
                Ok(t) => tree = Some(t),
                Err(message) => {
                    return Err(TemplateError::Parse {
                        value: values[i - 1].clone(),
                        message,
                    });
                }
            }
        }
        match tree {
            Some(tree) => Ok(Some(FqdnTemplate { text: joined, tree })),
            None => Ok(None),
        }
    }

    /// The template as given (the joined flag values).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Run on `obj` and return the hostnames: output split on ',', each trimmed, one trailing '.' dropped,
    /// empties dropped, deduplicated and sorted.
    pub fn execute(&self, obj: &dyn TemplateObject, source_name: &str) -> Result<Vec<String>, TemplateError> {
        let raw = self.execute_raw(obj, source_name)?;
        let mut out: Vec<String> = raw
            .split(',')
            .map(str::trim)
            .map(|s| s.strip_suffix('.').unwrap_or(s))
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        out.sort();
        out.dedup();
        Ok(out)
    }

    /// Run on `obj` and return the output as written (`--fqdn-target-template` splits it itself).
    pub fn execute_raw(&self, obj: &dyn TemplateObject, source_name: &str) -> Result<String, TemplateError> {
        let typed_err = match exec::Exec::new(&self.tree, source_name, false).run(&obj.typed()) {
            Ok(out) => return Ok(out),
            Err(e) => e,
        };
        match exec::Exec::new(&self.tree, source_name, true).run(&obj.unstructured()) {
            Ok(out) => Ok(out),
            Err(json_err) => Err(TemplateError::Execute {
                object: obj.describe(),
                message: format!("{typed_err} (and with JSON field names: {json_err})"),
            }),
        }
    }
}

#[cfg(test)]
mod tests;
