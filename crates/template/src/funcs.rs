//! The built-in functions: Go's (except `and` and `or`, which the evaluator runs because they evaluate
//! their operands lazily) and external-dns's.

use std::cmp::Ordering;
use std::net::{Ipv4Addr, Ipv6Addr};

use crate::MapValues;
use crate::error::FuncError;
use crate::format::{sprint, sprintf, sprintln};
use crate::value::Value;

/// Every built-in function name.
pub(crate) fn is_builtin(name: &str) -> bool {
    matches!(
        name,
        "and"
            | "or"
            | "not"
            | "len"
            | "index"
            | "slice"
            | "print"
            | "printf"
            | "println"
            | "eq"
            | "ne"
            | "lt"
            | "le"
            | "gt"
            | "ge"
            | "html"
            | "js"
            | "urlquery"
            | "call"
            | "contains"
            | "trimPrefix"
            | "trimSuffix"
            | "trim"
            | "toLower"
            | "replace"
            | "isIPv4"
            | "isIPv6"
            | "hasKey"
            | "fromJson"
    )
}

/// The arguments of a function that takes exactly `N`, or the error Go gives for another count.
pub fn fixed_args<'v, const N: usize>(function: &str, args: &'v [Value]) -> Result<&'v [Value; N], FuncError> {
    args.try_into().map_err(|_| FuncError::ArgCount {
        function: function.to_string(),
        want: N.to_string(),
        got: args.len(),
    })
}

fn at_least_one(function: &str) -> FuncError {
    FuncError::ArgCount {
        function: function.to_string(),
        want: "at least 1".into(),
        got: 0,
    }
}

/// Go's `eq` on two basic values: same kind required unless one side is nil.
fn equal(a: &Value, b: &Value) -> Result<bool, FuncError> {
    Ok(match (a, b) {
        (Value::Missing | Value::Nil, Value::Missing | Value::Nil) => true,
        (Value::Missing | Value::Nil, _) | (_, Value::Missing | Value::Nil) => false,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Int(x), Value::Int(y)) => x == y,
        (Value::Float(x), Value::Float(y)) => x == y,
        (Value::Str(x), Value::Str(y)) => x == y,
        (Value::List(_) | Value::Map(_) | Value::Struct(..), _)
        | (_, Value::List(_) | Value::Map(_) | Value::Struct(..)) => {
            return Err(FuncError::invalid(format!(
                "non-comparable types {}, {}",
                a.type_name(),
                b.type_name()
            )));
        }
        _ => return Err(FuncError::invalid("incompatible types for comparison")),
    })
}

fn order(a: &Value, b: &Value) -> Result<Ordering, FuncError> {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => Ok(x.cmp(y)),
        (Value::Float(x), Value::Float(y)) => x.partial_cmp(y).ok_or_else(|| FuncError::invalid("NaN is not ordered")),
        (Value::Str(x), Value::Str(y)) => Ok(x.cmp(y)),
        (Value::Int(_) | Value::Float(_) | Value::Str(_), Value::Int(_) | Value::Float(_) | Value::Str(_)) => {
            Err(FuncError::invalid("incompatible types for comparison"))
        }
        _ => Err(FuncError::invalid("invalid type for comparison")),
    }
}

fn index_one(item: &Value, key: &Value, maps: MapValues) -> Result<Value, FuncError> {
    let out_of_range = |i: &i64| FuncError::invalid(format!("index out of range: {i}"));
    match (item, key) {
        (Value::List(l), Value::Int(i)) => usize::try_from(*i)
            .ok()
            .and_then(|i| l.get(i).cloned())
            .ok_or_else(|| out_of_range(i)),
        (Value::Str(s), Value::Int(i)) => usize::try_from(*i)
            .ok()
            .and_then(|i| s.as_bytes().get(i).map(|b| Value::Int(i64::from(*b))))
            .ok_or_else(|| out_of_range(i)),
        // A missing key yields the zero value of the map's element type.
        (Value::Map(m), Value::Str(k)) => Ok(m.get(k).cloned().unwrap_or(match maps {
            MapValues::Strings => Value::Str(String::new()),
            MapValues::Any => Value::Nil,
        })),
        (Value::Map(_), other) => Err(FuncError::invalid(format!(
            "value has type {}; should be string",
            other.type_name()
        ))),
        (Value::List(_) | Value::Str(_), other) => Err(FuncError::invalid(format!(
            "cannot index slice/array with type {}",
            other.type_name()
        ))),
        (Value::Missing | Value::Nil, _) => Err(FuncError::invalid("index of untyped nil")),
        (other, _) => Err(FuncError::invalid(format!(
            "can't index item of type {}",
            other.type_name()
        ))),
    }
}

fn slice(item: &Value, idx: &[Value]) -> Result<Value, FuncError> {
    let bounds: Vec<usize> = idx
        .iter()
        .map(|i| match i {
            Value::Int(i) => usize::try_from(*i).map_err(|_| FuncError::invalid(format!("index out of range: {i}"))),
            other => Err(FuncError::invalid(format!(
                "cannot index slice/array with type {}",
                other.type_name()
            ))),
        })
        .collect::<Result<_, _>>()?;
    let len = match item {
        Value::Str(s) => s.len(),
        Value::List(l) => l.len(),
        other => {
            return Err(FuncError::invalid(format!(
                "can't slice item of type {}",
                other.type_name()
            )));
        }
    };
    let (lo, hi) = match bounds.as_slice() {
        [] => (0, len),
        [lo] => (*lo, len),
        [lo, hi] => (*lo, *hi),
        _ => return Err(FuncError::invalid("too many slice indexes")),
    };
    if lo > hi || hi > len {
        return Err(FuncError::invalid(format!("invalid slice index: {lo} > {hi}")));
    }
    Ok(match item {
        Value::Str(s) => Value::Str(
            s.get(lo..hi)
                .ok_or_else(|| FuncError::invalid("slice splits a character"))?
                .to_string(),
        ),
        Value::List(l) => Value::List(l[lo..hi].to_vec()),
        _ => Value::Nil,
    })
}

fn json_to_value(j: serde_json::Value) -> Value {
    match j {
        serde_json::Value::Null => Value::Nil,
        serde_json::Value::Bool(b) => Value::Bool(b),
        serde_json::Value::Number(n) => Value::Float(n.as_f64().unwrap_or(0.0)),
        serde_json::Value::String(s) => Value::Str(s),
        serde_json::Value::Array(a) => Value::List(a.into_iter().map(json_to_value).collect()),
        serde_json::Value::Object(o) => Value::Map(o.into_iter().map(|(k, v)| (k, json_to_value(v))).collect()),
    }
}

fn escape_html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\'' => out.push_str("&#39;"),
            '"' => out.push_str("&#34;"),
            '\0' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

fn escape_js(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '"' => out.push_str("\\\""),
            '<' => out.push_str("\\u003C"),
            '>' => out.push_str("\\u003E"),
            '&' => out.push_str("\\u0026"),
            '=' => out.push_str("\\u003D"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

fn query_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => out.push(char::from(b)),
            b' ' => out.push('+'),
            b => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// Which family an address is in, read as Go's `netip.ParseAddr` reads it (external-dns's `isIPv4` and
/// `isIPv6` ask its record-type rule, which uses that parser): strict dotted IPv4 (no leading zeros),
/// IPv6 including IPv4-mapped forms and an optional `%zone`.
fn ip_family(s: &str) -> Option<u8> {
    if s.parse::<Ipv4Addr>().is_ok() {
        return Some(4);
    }
    let addr = match s.split_once('%') {
        Some((_, "")) => return None,
        Some((addr, _zone)) => addr,
        None => s,
    };
    addr.parse::<Ipv6Addr>().ok().map(|_| 6)
}

/// Go's `strings.ReplaceAll`: an empty `old` inserts `new` before every character and at the end.
fn go_replace_all(s: &str, old: &str, new: &str) -> String {
    if !old.is_empty() {
        return s.replace(old, new);
    }
    let mut out = String::with_capacity(s.len() + new.len() * (s.chars().count() + 1));
    for c in s.chars() {
        out.push_str(new);
        out.push(c);
    }
    out.push_str(new);
    out
}

/// Call built-in `name` on evaluated arguments.
pub(crate) fn call_builtin(name: &str, a: &[Value], maps: MapValues) -> Result<Value, FuncError> {
    Ok(match name {
        "not" => {
            let [v] = fixed_args(name, a)?;
            Value::Bool(!v.is_true())
        }
        "len" => {
            let [v] = fixed_args(name, a)?;
            let n = match v {
                Value::Str(s) => s.len(),
                Value::List(l) => l.len(),
                Value::Map(m) => m.len(),
                other => return Err(FuncError::invalid(format!("len of type {}", other.type_name()))),
            };
            Value::Int(n as i64)
        }
        "index" => {
            let Some((item, keys)) = a.split_first() else {
                return Err(at_least_one(name));
            };
            let mut v = item.clone();
            for k in keys {
                v = index_one(&v, k, maps)?;
            }
            v
        }
        "slice" => {
            let Some((item, idx)) = a.split_first() else {
                return Err(at_least_one(name));
            };
            slice(item, idx)?
        }
        "print" => Value::Str(sprint(a)),
        "println" => Value::Str(sprintln(a)),
        "printf" => {
            let Some((format, args)) = a.split_first() else {
                return Err(at_least_one(name));
            };
            Value::Str(sprintf(format.as_str_arg()?, args))
        }
        "eq" => {
            let Some((first, rest)) = a.split_first().filter(|(_, rest)| !rest.is_empty()) else {
                return Err(FuncError::invalid("missing argument for comparison"));
            };
            let mut any = false;
            for other in rest {
                if equal(first, other)? {
                    any = true;
                    break;
                }
            }
            Value::Bool(any)
        }
        "ne" => {
            let [x, y] = fixed_args(name, a)?;
            Value::Bool(!equal(x, y)?)
        }
        "lt" | "le" | "gt" | "ge" => {
            let [x, y] = fixed_args(name, a)?;
            let o = order(x, y)?;
            Value::Bool(match name {
                "lt" => o == Ordering::Less,
                "le" => o != Ordering::Greater,
                "gt" => o == Ordering::Greater,
                _ => o != Ordering::Less,
            })
        }
        "html" => Value::Str(escape_html(&sprint(a))),
        "js" => Value::Str(escape_js(&sprint(a))),
        "urlquery" => Value::Str(query_escape(&sprint(a))),
        "call" => return Err(FuncError::invalid("templates have no function values to call")),
        // ---- external-dns functions
        "contains" => {
            let [s, sub] = fixed_args(name, a)?;
            Value::Bool(s.as_str_arg()?.contains(sub.as_str_arg()?))
        }
        "trimPrefix" => {
            let [s, prefix] = fixed_args(name, a)?;
            let s = s.as_str_arg()?;
            Value::Str(s.strip_prefix(prefix.as_str_arg()?).unwrap_or(s).to_string())
        }
        "trimSuffix" => {
            let [s, suffix] = fixed_args(name, a)?;
            let s = s.as_str_arg()?;
            Value::Str(s.strip_suffix(suffix.as_str_arg()?).unwrap_or(s).to_string())
        }
        "trim" => {
            let [s] = fixed_args(name, a)?;
            Value::Str(s.as_str_arg()?.trim().to_string())
        }
        "toLower" => {
            let [s] = fixed_args(name, a)?;
            Value::Str(s.as_str_arg()?.to_lowercase())
        }
        "replace" => {
            let [old, new, s] = fixed_args(name, a)?;
            let (old, new, s) = (old.as_str_arg()?, new.as_str_arg()?, s.as_str_arg()?);
            Value::Str(go_replace_all(s, old, new))
        }
        "isIPv4" => {
            let [s] = fixed_args(name, a)?;
            Value::Bool(ip_family(s.as_str_arg()?) == Some(4))
        }
        "isIPv6" => {
            let [s] = fixed_args(name, a)?;
            Value::Bool(ip_family(s.as_str_arg()?) == Some(6))
        }
        "hasKey" => {
            let [m, key] = fixed_args(name, a)?;
            let key = key.as_str_arg()?;
            match m {
                Value::Map(m) => Value::Bool(m.contains_key(key)),
                Value::Missing | Value::Nil => Value::Bool(false),
                other => {
                    return Err(FuncError::ArgType {
                        expected: "map",
                        got: other.type_name(),
                    });
                }
            }
        }
        "fromJson" => {
            let [s] = fixed_args(name, a)?;
            serde_json::from_str::<serde_json::Value>(s.as_str_arg()?).map_or(Value::Nil, json_to_value)
        }
        other => return Err(FuncError::invalid(format!("function {other:?} not defined"))),
    })
}
