//! The data a template runs on, shaped like the Go values a Go program would have executed it on.

use std::collections::BTreeMap;

use crate::error::FuncError;

/// A Go value as templates see it.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// An absent map entry (Go's invalid value; prints `<no value>`).
    Missing,
    /// A nil pointer, interface, slice or map (prints `<nil>`).
    Nil,
    /// A Go `bool`.
    Bool(bool),
    /// Any Go integer type (ports, replica counts), widened.
    Int(i64),
    /// A Go `float64` (numbers in decoded JSON).
    Float(f64),
    /// A Go `string`.
    Str(String),
    /// A Go slice, in order.
    List(Vec<Value>),
    /// A Go map: an absent key is `<no value>`, or an error with [`crate::MissingKey::Error`].
    Map(BTreeMap<String, Value>),
    /// A Go struct: its type name (for errors) and fields in declaration order. An unknown field is an
    /// execution error.
    Struct(&'static str, Vec<(&'static str, Value)>),
}

impl Value {
    /// A string value.
    pub fn str(s: impl Into<String>) -> Value {
        Value::Str(s.into())
    }

    /// A string, or nil when absent (a Go `*string`).
    pub fn opt_str(s: Option<&str>) -> Value {
        s.map_or(Value::Nil, Value::str)
    }

    /// A Go slice built from `items`, each converted by `f`.
    pub fn list<T>(items: impl IntoIterator<Item = T>, f: impl Fn(T) -> Value) -> Value {
        Value::List(items.into_iter().map(f).collect())
    }

    /// A Go `map[string]string`, as typed objects hold labels, annotations and selectors.
    pub fn string_map<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Value {
        Value::Map(
            pairs
                .into_iter()
                .map(|(k, v)| (k.to_string(), Value::Str(v.to_string())))
                .collect::<BTreeMap<_, _>>(),
        )
    }

    /// The string inside, as a function that takes a string argument reads it.
    pub fn as_str_arg(&self) -> Result<&str, FuncError> {
        match self {
            Value::Str(s) => Ok(s),
            Value::Missing => Err(FuncError::MissingArg { expected: "string" }),
            other => Err(FuncError::ArgType {
                expected: "string",
                got: other.type_name(),
            }),
        }
    }

    /// Go's name of the value's type, as errors print it.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Missing | Value::Nil => "<nil>",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::Float(_) => "float64",
            Value::Str(_) => "string",
            Value::List(_) => "[]interface {}",
            Value::Map(_) => "map[string]interface {}",
            Value::Struct(n, _) => n,
        }
    }

    /// Go's truth: false, 0, nil, empty strings and collections are false; structs are true.
    pub fn is_true(&self) -> bool {
        match self {
            Value::Missing | Value::Nil => false,
            Value::Bool(b) => *b,
            Value::Int(i) => *i != 0,
            Value::Float(f) => *f != 0.0,
            Value::Str(s) => !s.is_empty(),
            Value::List(l) => !l.is_empty(),
            Value::Map(m) => !m.is_empty(),
            Value::Struct(..) => true,
        }
    }
}
