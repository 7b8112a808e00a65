//! Go's `text/template`, with the functions external-dns adds, for programs that must read templates
//! written for Go programs and mean the same thing by them.
//!
//! Users paste templates from their external-dns deployments, so the semantics follow Go, not a
//! look-alike: Go's truth and comparison rules, field access on structs (an unknown field is an error) and
//! maps (an absent key prints `<no value>`, or is an error with [`MissingKey::Error`]), `fmt`-style
//! printing, `range` over lists, maps (in key order) and integers, `define`/`template`/`block`, variables,
//! `break`/`continue`, trim markers and comments. The functions are Go's builtins plus external-dns's
//! (`contains`, `trimPrefix`, `trimSuffix`, `trim`, `toLower`, `replace`, `isIPv4`, `isIPv6`, `hasKey`,
//! `fromJson`); a host adds its own, such as `isSource`, whose answer depends on where the template
//! runs, through [`Funcs`].
//!
//! The interpreter is our own rather than the `gtmpl` crate: gtmpl ranges over maps in random order, runs
//! `range`'s else branch even after iterations, spawns a thread per parse, and its functions are plain
//! `fn` pointers, which cannot know anything about the current execution.
//!
//! Data is a [`Value`]: the shape of the Go data the template would have run on. Hostile templates
//! cannot crash or hang the host: nesting, template calls, steps and output are bounded.
//!
//! ```
//! use std::collections::BTreeMap;
//!
//! use extdns_template::{ExecOptions, Template, Value};
//!
//! # fn main() -> Result<(), extdns_template::Error> {
//! let labels: BTreeMap<String, Value> = [("app".to_string(), Value::str("shop"))].into();
//! let service = Value::Struct(
//!     "Service",
//!     vec![
//!         ("Name", Value::str("web")),
//!         ("Namespace", Value::str("prod")),
//!         ("Labels", Value::Map(labels)),
//!     ],
//! );
//! let template = Template::parse("{{.Name}}.{{index .Labels \"app\"}}.{{.Namespace | toLower}}.example.com")?;
//! assert_eq!(template.execute(&service, &ExecOptions::default())?, "web.shop.prod.example.com");
//!
//! // Errors say where: the line, and the operand and field that failed.
//! let err = Template::parse("{{.Spec.Ports}}")?.execute(&service, &ExecOptions::default());
//! assert_eq!(
//!     err.map_err(|e| e.to_string()),
//!     Err("line 1: at <.Spec.Ports>: can't evaluate field Spec in type Service".to_string())
//! );
//! # Ok(())
//! # }
//! ```

mod error;
mod exec;
mod format;
mod funcs;
mod lex;
mod parse;
mod paths;
mod value;

use std::fmt;

pub use error::{Error, ExecError, ExecErrorKind, FuncError, ParseError};
pub use funcs::fixed_args;
pub use paths::{FieldPath, Step};
pub use value::Value;

/// Functions a host adds to the built-in ones. They take precedence over built-ins of the same name, as
/// functions given to a Go template do.
///
/// Parsing asks only [`Funcs::defines`] (Go rejects a call to an unknown function at parse time), so a
/// template can be parsed once and executed many times with functions that know about each execution.
pub trait Funcs {
    /// Whether `name` is one of these functions.
    fn defines(&self, name: &str) -> bool;

    /// Call `name`, a name [`Funcs::defines`] accepts, on the evaluated arguments (a piped value last).
    fn call(&self, name: &str, args: &[Value]) -> Result<Value, FuncError>;
}

/// No functions beyond the built-in ones.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoFuncs;

impl Funcs for NoFuncs {
    fn defines(&self, _name: &str) -> bool {
        false
    }

    fn call(&self, name: &str, _args: &[Value]) -> Result<Value, FuncError> {
        Err(FuncError::Invalid(format!("function {name:?} not defined")))
    }
}

/// What an absent map key means when a template reads it as a field (`.Labels.app`), as Go's
/// `missingkey` option says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum MissingKey {
    /// The value is missing and prints as `<no value>` (Go's default).
    #[default]
    Default,
    /// Execution stops with an error (`missingkey=error`).
    Error,
}

/// The element type of the data's maps, which decides what `index` returns for an absent key: Go
/// returns the zero value of the element type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum MapValues {
    /// `map[string]string` (labels, annotations of typed objects): an empty string.
    #[default]
    Strings,
    /// `map[string]interface{}` (decoded JSON, unstructured objects): nil.
    Any,
}

/// How one execution runs.
#[derive(Clone, Copy)]
#[non_exhaustive]
pub struct ExecOptions<'f> {
    /// What reading an absent map key does (Go's `missingkey` option); default `<no value>`.
    pub missing_key: MissingKey,
    /// The data's map element type, which decides what `index` returns for an absent key.
    pub map_values: MapValues,
    /// The host's functions; they must define every host function the template was parsed with.
    pub funcs: &'f dyn Funcs,
}

impl Default for ExecOptions<'_> {
    fn default() -> Self {
        ExecOptions {
            missing_key: MissingKey::Default,
            map_values: MapValues::Strings,
            funcs: &NoFuncs,
        }
    }
}

impl fmt::Debug for ExecOptions<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExecOptions")
            .field("missing_key", &self.missing_key)
            .field("map_values", &self.map_values)
            .finish_non_exhaustive()
    }
}

impl<'f> ExecOptions<'f> {
    /// Default options with the host's functions.
    pub fn with_funcs(funcs: &'f dyn Funcs) -> Self {
        ExecOptions {
            funcs,
            ..ExecOptions::default()
        }
    }

    /// Sets [`ExecOptions::missing_key`].
    pub fn missing_key(self, missing_key: MissingKey) -> Self {
        ExecOptions { missing_key, ..self }
    }

    /// Sets [`ExecOptions::map_values`].
    pub fn map_values(self, map_values: MapValues) -> Self {
        ExecOptions { map_values, ..self }
    }
}

/// A parsed template: the main text and every `define`/`block` in it.
#[derive(Debug, Clone)]
pub struct Template {
    tree: parse::Tree,
}

impl Template {
    /// Parse `text` with the built-in functions only.
    pub fn parse(text: &str) -> Result<Template, ParseError> {
        Template::parse_with(text, &NoFuncs)
    }

    /// Parse `text`; calls to functions that are neither built in nor defined by `funcs` are errors.
    pub fn parse_with(text: &str, funcs: &dyn Funcs) -> Result<Template, ParseError> {
        let is_func = |name: &str| funcs.defines(name) || funcs::is_builtin(name);
        parse::parse(text, &is_func).map(|tree| Template { tree })
    }

    /// Run on `data` and return what the template wrote.
    pub fn execute(&self, data: &Value, options: &ExecOptions<'_>) -> Result<String, ExecError> {
        exec::Exec::new(&self.tree, options).run(data)
    }

    /// The paths of the data the template reads, found without running it (see [`FieldPath`]), sorted.
    /// A host checks them against the type of its data and keeps only those fields.
    pub fn field_paths(&self) -> Vec<FieldPath> {
        paths::field_paths(&self.tree)
    }
}

#[cfg(test)]
mod tests;
