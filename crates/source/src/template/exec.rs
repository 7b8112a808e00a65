//! The evaluator: walks the tree over a [`Value`], with Go's truth, comparison, field and map rules,
//! the builtin functions and the external-dns functions.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use extdns_endpoint::{RecordType, suitable_type};

use super::format::{go_v, sprint, sprintf, sprintln, write_v};
use super::parse::{Arg, Cmd, Node, Pipe, Tree};
use super::{KNOWN_SOURCES, Value};

/// Template calls nest at most this deep (Go allows 100000, but our stack is smaller).
const MAX_CALL_DEPTH: usize = 100;
/// A template that writes more than this is stopped: hostnames are short.
const MAX_OUTPUT: usize = 1 << 20;
/// Upper bound on loop iterations and calls in one execution.
const MAX_STEPS: usize = 1_000_000;

/// Every function name a template may call.
pub(super) fn is_func(name: &str) -> bool {
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
            | "isSource"
    )
}

enum Flow {
    Normal,
    Break,
    Continue,
}

pub(super) struct Exec<'t> {
    tree: &'t Tree,
    source_name: &'t str,
    /// `missingkey=error`: an absent map key is an error instead of `<no value>` (the JSON-key view).
    missing_error: bool,
    out: String,
    vars: Vec<(String, Value)>,
    depth: usize,
    steps: usize,
}

type R<T> = Result<T, String>;

impl<'t> Exec<'t> {
    pub(super) fn new(tree: &'t Tree, source_name: &'t str, missing_error: bool) -> Self {
        Exec {
            tree,
            source_name,
            missing_error,
            out: String::new(),
            vars: Vec::new(),
            depth: 0,
            steps: 0,
        }
    }

    pub(super) fn run(mut self, data: &Value) -> R<String> {
        self.vars.push(("$".into(), data.clone()));
        let tree = self.tree;
        self.walk_list(&tree.root, data)?;
        Ok(self.out)
    }

    fn step(&mut self) -> R<()> {
        self.steps += 1;
        if self.steps > MAX_STEPS {
            return Err(format!("template did more than {MAX_STEPS} steps"));
        }
        Ok(())
    }

    fn walk_list(&mut self, nodes: &[Node], dot: &Value) -> R<Flow> {
        for n in nodes {
            match self.walk(n, dot)? {
                Flow::Normal => {}
                other => return Ok(other),
            }
        }
        Ok(Flow::Normal)
    }

    fn walk(&mut self, node: &Node, dot: &Value) -> R<Flow> {
        match node {
            Node::Text(t) => self.write(t)?,
            Node::Action(pipe) => {
                let v = self.pipe(pipe, dot)?;
                if pipe.decl.is_empty() {
                    self.print(&v)?;
                }
            }
            Node::If(pipe, body, else_body) => {
                let mark = self.vars.len();
                let v = self.pipe(pipe, dot)?;
                let flow = if truth(&v) {
                    self.walk_list(body, dot)?
                } else {
                    self.walk_list(else_body, dot)?
                };
                self.vars.truncate(mark);
                return Ok(flow);
            }
            Node::With(pipe, body, else_body) => {
                let mark = self.vars.len();
                let v = self.pipe(pipe, dot)?;
                let flow = if truth(&v) {
                    self.walk_list(body, &v)?
                } else {
                    self.walk_list(else_body, dot)?
                };
                self.vars.truncate(mark);
                return Ok(flow);
            }
            Node::Range(pipe, body, else_body) => {
                let mark = self.vars.len();
                let flow = self.range(pipe, body, else_body, dot)?;
                self.vars.truncate(mark);
                return Ok(flow);
            }
            Node::Template(name, pipe) => {
                let tree = self.tree;
                let Some(body) = tree.defines.get(name) else {
                    return Err(format!("no such template {name:?}"));
                };
                let data = match pipe {
                    Some(p) => self.pipe(p, dot)?,
                    None => Value::Nil,
                };
                self.depth += 1;
                if self.depth > MAX_CALL_DEPTH {
                    return Err(format!("exceeded maximum template depth ({MAX_CALL_DEPTH})"));
                }
                let saved = std::mem::replace(&mut self.vars, vec![("$".into(), data.clone())]);
                self.walk_list(body, &data)?;
                self.vars = saved;
                self.depth -= 1;
            }
            Node::Break => return Ok(Flow::Break),
            Node::Continue => return Ok(Flow::Continue),
        }
        Ok(Flow::Normal)
    }

    fn range(&mut self, pipe: &Pipe, body: &[Node], else_body: &[Node], dot: &Value) -> R<Flow> {
        // The declared variables are bound per iteration, not to the pipeline's value.
        let v = self.pipe_cmds(pipe, dot)?;
        let items: Vec<(Value, Value)> = match v {
            Value::List(items) => items
                .into_iter()
                .enumerate()
                .map(|(i, v)| (Value::Int(i as i64), v))
                .collect(),
            Value::Map(m) => m.into_iter().map(|(k, v)| (Value::Str(k), v)).collect(),
            Value::Int(n) => (0..n.max(0)).map(|i| (Value::Int(i), Value::Int(i))).collect(),
            Value::Missing | Value::Nil => Vec::new(),
            other => return Err(format!("range can't iterate over {}", go_v(&other))),
        };
        if items.is_empty() {
            return self.walk_list(else_body, dot);
        }
        let mark = self.vars.len();
        for (k, v) in items {
            self.step()?;
            self.vars.truncate(mark);
            match pipe.decl.len() {
                0 => {}
                1 => self.vars.push((pipe.decl[0].clone(), v.clone())),
                _ => {
                    self.vars.push((pipe.decl[0].clone(), k));
                    self.vars.push((pipe.decl[1].clone(), v.clone()));
                }
            }
            match self.walk_list(body, &v)? {
                Flow::Break => break,
                Flow::Continue | Flow::Normal => {}
            }
        }
        Ok(Flow::Normal)
    }

    fn write(&mut self, s: &str) -> R<()> {
        if self.out.len() + s.len() > MAX_OUTPUT {
            return Err(format!("template output exceeds {MAX_OUTPUT} bytes"));
        }
        self.out.push_str(s);
        Ok(())
    }

    fn print(&mut self, v: &Value) -> R<()> {
        let mut s = String::new();
        write_v(&mut s, v);
        self.write(&s)
    }

    fn pipe_cmds(&mut self, pipe: &Pipe, dot: &Value) -> R<Value> {
        let mut value: Option<Value> = None;
        for cmd in &pipe.cmds {
            let v = self.cmd(cmd, dot, value).map_err(|e| {
                if e.starts_with("line ") {
                    e
                } else {
                    format!("line {}: {e}", pipe.line)
                }
            })?;
            value = Some(v);
        }
        Ok(value.unwrap_or(Value::Missing))
    }

    fn pipe(&mut self, pipe: &Pipe, dot: &Value) -> R<Value> {
        let value = self.pipe_cmds(pipe, dot)?;
        for name in &pipe.decl {
            if pipe.is_assign {
                if let Some(slot) = self.vars.iter_mut().rev().find(|(n, _)| n == name) {
                    slot.1 = value.clone();
                }
            } else {
                self.vars.push((name.clone(), value.clone()));
            }
        }
        Ok(value)
    }

    fn cmd(&mut self, cmd: &Cmd, dot: &Value, last: Option<Value>) -> R<Value> {
        self.step()?;
        let first = &cmd.args[0];
        if let Arg::Func(name) = first {
            return self.call(name, &cmd.args[1..], last, dot);
        }
        if cmd.args.len() > 1 || last.is_some() {
            return Err(format!("can't give argument to non-function {}", first.describe()));
        }
        self.arg(first, dot)
    }

    fn var(&self, name: &str) -> R<Value> {
        self.vars
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
            .ok_or_else(|| format!("undefined variable: {name}"))
    }

    fn arg(&mut self, arg: &Arg, dot: &Value) -> R<Value> {
        Ok(match arg {
            Arg::Dot => dot.clone(),
            Arg::Nil => Value::Nil,
            Arg::Bool(b) => Value::Bool(*b),
            Arg::Int(i) => Value::Int(*i),
            Arg::Float(f) => Value::Float(*f),
            Arg::Str(s) => Value::Str(s.clone()),
            Arg::Field(fields) => self.fields(dot.clone(), fields, arg)?,
            Arg::Var(name, fields) => {
                let v = self.var(name)?;
                self.fields(v, fields, arg)?
            }
            Arg::Chain(pipe, fields) => {
                let v = self.pipe(pipe, dot)?;
                self.fields(v, fields, arg)?
            }
            Arg::Func(name) => self.call(name, &[], None, dot)?,
        })
    }

    fn fields(&self, mut v: Value, fields: &[String], at: &Arg) -> R<Value> {
        for f in fields {
            v = match v {
                Value::Struct(type_name, mut members) => match members.iter().position(|(n, _)| *n == f) {
                    Some(i) => members.swap_remove(i).1,
                    None => {
                        return Err(format!(
                            "at <{}>: can't evaluate field {f} in type {type_name}",
                            at.describe()
                        ));
                    }
                },
                Value::Map(mut m) => match m.remove(f) {
                    Some(x) => x,
                    None if self.missing_error => {
                        return Err(format!("at <{}>: map has no entry for key {f:?}", at.describe()));
                    }
                    None => Value::Missing,
                },
                Value::Missing => return Err(format!("at <{}>: nil data; no entry for key {f:?}", at.describe())),
                Value::Nil => return Err(format!("at <{}>: nil pointer evaluating <nil>.{f}", at.describe())),
                other => {
                    return Err(format!(
                        "at <{}>: can't evaluate field {f} in type {}",
                        at.describe(),
                        type_name(&other)
                    ));
                }
            };
        }
        Ok(v)
    }

    /// Evaluate function arguments, the previous pipeline value last.
    fn args(&mut self, args: &[Arg], last: Option<Value>, dot: &Value) -> R<Vec<Value>> {
        let mut out = Vec::with_capacity(args.len() + 1);
        for a in args {
            out.push(self.arg(a, dot)?);
        }
        out.extend(last);
        Ok(out)
    }

    fn call(&mut self, name: &str, args: &[Arg], last: Option<Value>, dot: &Value) -> R<Value> {
        // `and` and `or` evaluate their arguments only as far as needed.
        if name == "and" || name == "or" {
            let n = args.len() + usize::from(last.is_some());
            if n == 0 {
                return Err(format!("wrong number of args for {name}: want at least 1 got 0"));
            }
            let mut v = Value::Missing;
            for (i, a) in args.iter().enumerate() {
                v = self.arg(a, dot)?;
                let stop = if name == "and" { !truth(&v) } else { truth(&v) };
                if stop || (i + 1 == n) {
                    return Ok(v);
                }
            }
            return Ok(last.unwrap_or(v));
        }
        let a = self.args(args, last, dot)?;
        call_func(name, &a, self.source_name, self.missing_error).map_err(|e| format!("error calling {name}: {e}"))
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
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
pub(super) fn truth(v: &Value) -> bool {
    match v {
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

fn want_args(name: &str, a: &[Value], n: usize) -> R<()> {
    if a.len() != n {
        return Err(format!("wrong number of args for {name}: want {n} got {}", a.len()));
    }
    Ok(())
}

fn string_arg(a: &[Value], i: usize) -> R<&str> {
    match &a[i] {
        Value::Str(s) => Ok(s),
        Value::Missing => Err("invalid value; expected string".into()),
        other => Err(format!(
            "wrong type for value; expected string; got {}",
            type_name(other)
        )),
    }
}

/// Go's `eq` on two basic values: same kind required unless one side is nil.
fn equal(a: &Value, b: &Value) -> R<bool> {
    Ok(match (a, b) {
        (Value::Missing | Value::Nil, Value::Missing | Value::Nil) => true,
        (Value::Missing | Value::Nil, _) | (_, Value::Missing | Value::Nil) => false,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Int(x), Value::Int(y)) => x == y,
        (Value::Float(x), Value::Float(y)) => x == y,
        (Value::Str(x), Value::Str(y)) => x == y,
        (Value::List(_) | Value::Map(_) | Value::Struct(..), _)
        | (_, Value::List(_) | Value::Map(_) | Value::Struct(..)) => {
            return Err(format!("non-comparable types {}, {}", type_name(a), type_name(b)));
        }
        _ => return Err("incompatible types for comparison".into()),
    })
}

fn order(a: &Value, b: &Value) -> R<Ordering> {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => Ok(x.cmp(y)),
        (Value::Float(x), Value::Float(y)) => x.partial_cmp(y).ok_or_else(|| "NaN is not ordered".to_string()),
        (Value::Str(x), Value::Str(y)) => Ok(x.cmp(y)),
        (Value::Int(_) | Value::Float(_) | Value::Str(_), Value::Int(_) | Value::Float(_) | Value::Str(_)) => {
            Err("incompatible types for comparison".into())
        }
        _ => Err("invalid type for comparison".into()),
    }
}

/// `unstructured`: maps hold `interface{}` (zero value nil) rather than strings (zero value "").
fn index_one(item: &Value, key: &Value, unstructured: bool) -> R<Value> {
    match (item, key) {
        (Value::List(l), Value::Int(i)) => usize::try_from(*i)
            .ok()
            .and_then(|i| l.get(i).cloned())
            .ok_or_else(|| format!("index out of range: {i}")),
        (Value::Str(s), Value::Int(i)) => usize::try_from(*i)
            .ok()
            .and_then(|i| s.as_bytes().get(i).map(|b| Value::Int(i64::from(*b))))
            .ok_or_else(|| format!("index out of range: {i}")),
        // A missing key yields the map's zero value: the typed views' maps hold strings.
        (Value::Map(m), Value::Str(k)) => Ok(m.get(k).cloned().unwrap_or(if unstructured {
            Value::Nil
        } else {
            Value::Str(String::new())
        })),
        (Value::Map(_), other) => Err(format!("value has type {}; should be string", type_name(other))),
        (Value::List(_) | Value::Str(_), other) => {
            Err(format!("cannot index slice/array with type {}", type_name(other)))
        }
        (Value::Missing | Value::Nil, _) => Err("index of untyped nil".into()),
        (other, _) => Err(format!("can't index item of type {}", type_name(other))),
    }
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

/// The functions, on evaluated arguments.
fn call_func(name: &str, a: &[Value], source_name: &str, unstructured: bool) -> R<Value> {
    Ok(match name {
        "not" => {
            want_args(name, a, 1)?;
            Value::Bool(!truth(&a[0]))
        }
        "len" => {
            want_args(name, a, 1)?;
            let n = match &a[0] {
                Value::Str(s) => s.len(),
                Value::List(l) => l.len(),
                Value::Map(m) => m.len(),
                other => return Err(format!("len of type {}", type_name(other))),
            };
            Value::Int(n as i64)
        }
        "index" => {
            let Some((item, keys)) = a.split_first() else {
                return Err("wrong number of args for index: want at least 1 got 0".into());
            };
            let mut v = item.clone();
            for k in keys {
                v = index_one(&v, k, unstructured)?;
            }
            v
        }
        "slice" => {
            let Some((item, idx)) = a.split_first() else {
                return Err("wrong number of args for slice: want at least 1 got 0".into());
            };
            let bounds: Vec<usize> = idx
                .iter()
                .map(|i| match i {
                    Value::Int(i) => usize::try_from(*i).map_err(|_| format!("index out of range: {i}")),
                    other => Err(format!("cannot index slice/array with type {}", type_name(other))),
                })
                .collect::<R<_>>()?;
            let len = match item {
                Value::Str(s) => s.len(),
                Value::List(l) => l.len(),
                other => return Err(format!("can't slice item of type {}", type_name(other))),
            };
            let (lo, hi) = match bounds.as_slice() {
                [] => (0, len),
                [lo] => (*lo, len),
                [lo, hi] => (*lo, *hi),
                _ => return Err("too many slice indexes".into()),
            };
            if lo > hi || hi > len {
                return Err(format!("invalid slice index: {lo} > {hi}"));
            }
            match item {
                Value::Str(s) => Value::Str(s.get(lo..hi).ok_or("slice splits a character")?.to_string()),
                Value::List(l) => Value::List(l[lo..hi].to_vec()),
                _ => Value::Nil,
            }
        }
        "print" => Value::Str(sprint(a)),
        "println" => Value::Str(sprintln(a)),
        "printf" => {
            if a.is_empty() {
                return Err("wrong number of args for printf: want at least 1 got 0".into());
            }
            Value::Str(sprintf(string_arg(a, 0)?, &a[1..]))
        }
        "eq" => {
            let Some((first, rest)) = a.split_first() else {
                return Err("missing argument for comparison".into());
            };
            if rest.is_empty() {
                return Err("missing argument for comparison".into());
            }
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
            want_args(name, a, 2)?;
            Value::Bool(!equal(&a[0], &a[1])?)
        }
        "lt" | "le" | "gt" | "ge" => {
            want_args(name, a, 2)?;
            let o = order(&a[0], &a[1])?;
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
        "call" => return Err("templates have no function values to call".into()),
        // ---- external-dns functions
        "contains" => {
            want_args(name, a, 2)?;
            Value::Bool(string_arg(a, 0)?.contains(string_arg(a, 1)?))
        }
        "trimPrefix" => {
            want_args(name, a, 2)?;
            let s = string_arg(a, 0)?;
            Value::Str(s.strip_prefix(string_arg(a, 1)?).unwrap_or(s).to_string())
        }
        "trimSuffix" => {
            want_args(name, a, 2)?;
            let s = string_arg(a, 0)?;
            Value::Str(s.strip_suffix(string_arg(a, 1)?).unwrap_or(s).to_string())
        }
        "trim" => {
            want_args(name, a, 1)?;
            Value::Str(string_arg(a, 0)?.trim().to_string())
        }
        "toLower" => {
            want_args(name, a, 1)?;
            Value::Str(string_arg(a, 0)?.to_lowercase())
        }
        "replace" => {
            want_args(name, a, 3)?;
            let (old, new, s) = (string_arg(a, 0)?, string_arg(a, 1)?, string_arg(a, 2)?);
            Value::Str(go_replace_all(s, old, new))
        }
        "isIPv4" => {
            want_args(name, a, 1)?;
            Value::Bool(suitable_type(string_arg(a, 0)?) == RecordType::A)
        }
        "isIPv6" => {
            want_args(name, a, 1)?;
            Value::Bool(suitable_type(string_arg(a, 0)?) == RecordType::Aaaa)
        }
        "hasKey" => {
            want_args(name, a, 2)?;
            let key = string_arg(a, 1)?;
            match &a[0] {
                Value::Map(m) => Value::Bool(m.contains_key(key)),
                Value::Missing | Value::Nil => Value::Bool(false),
                other => return Err(format!("wrong type for value; expected map; got {}", type_name(other))),
            }
        }
        "fromJson" => {
            want_args(name, a, 1)?;
            serde_json::from_str::<serde_json::Value>(string_arg(a, 0)?).map_or(Value::Nil, json_to_value)
        }
        "isSource" => {
            want_args(name, a, 1)?;
            let wanted = string_arg(a, 0)?.to_ascii_lowercase();
            if !KNOWN_SOURCES.contains(&wanted.as_str()) {
                return Err(format!("{wanted:?} is not a known source type"));
            }
            Value::Bool(wanted.eq_ignore_ascii_case(source_name))
        }
        other => return Err(format!("function {other:?} not defined")),
    })
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

/// A map of strings, as the typed views hold labels, annotations and selectors.
pub(super) fn string_map<'a>(pairs: impl Iterator<Item = (&'a str, &'a str)>) -> Value {
    Value::Map(
        pairs
            .map(|(k, v)| (k.to_string(), Value::Str(v.to_string())))
            .collect::<BTreeMap<_, _>>(),
    )
}
