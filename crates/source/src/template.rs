//! FQDN templates (`--fqdn-template`, `--fqdn-target-template`): Go `text/template` semantics (§6.9).
//!
//! Work in progress: the API below is final; the interpreter lands in the next commit.

use std::collections::BTreeMap;

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
    /// A Go map: a missing key is `<no value>` (or an error on the JSON-key view).
    Map(BTreeMap<String, Value>),
    /// A Go struct, fields in declaration order: a missing field is an execution error.
    Struct(Vec<(String, Value)>),
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

/// A parsed FQDN template.
#[derive(Debug, Clone)]
pub struct FqdnTemplate {
    source: String,
}

impl FqdnTemplate {
    /// Parse the flag values, joined with ','. `None` when they are all blank.
    pub fn parse(values: &[String]) -> Result<Option<FqdnTemplate>, TemplateError> {
        let joined = values.join(",");
        if joined.trim().is_empty() {
            return Ok(None);
        }
        Err(TemplateError::Parse {
            value: joined,
            message: "templates are not implemented yet".into(),
        })
    }

    /// Run on `obj`, returning the hostnames: split on ',', trimmed, one trailing '.' dropped, empties
    /// dropped, deduplicated and sorted.
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

    /// Run on `obj`, returning the output as written.
    pub fn execute_raw(&self, obj: &dyn TemplateObject, _source_name: &str) -> Result<String, TemplateError> {
        Err(TemplateError::Execute {
            object: obj.describe(),
            message: format!("{:?} not implemented", self.source),
        })
    }
}
