//! The evaluator: walks the tree over a [`Value`], with Go's truth, field and map rules; functions are
//! the host's ([`crate::Funcs`]) first, then the built-ins.

use crate::error::{ExecError, ExecErrorKind};
use crate::format::{go_v, write_v};
use crate::funcs::call_builtin;
use crate::parse::{Arg, Cmd, Node, Pipe, Tree};
use crate::{ExecOptions, MissingKey, Value};

/// Template calls nest at most this deep (Go allows 100000, but our stack is smaller).
const MAX_CALL_DEPTH: usize = 100;
/// A template that writes more than this is stopped: its output is meant to be short (hostnames).
const MAX_OUTPUT: usize = 1 << 20;
/// Upper bound on loop iterations and calls in one execution.
const MAX_STEPS: usize = 1_000_000;

enum Flow {
    Normal,
    Break,
    Continue,
}

pub(crate) struct Exec<'t, 'f> {
    tree: &'t Tree,
    options: &'t ExecOptions<'f>,
    out: String,
    vars: Vec<(String, Value)>,
    depth: usize,
    steps: usize,
}

type R<T> = Result<T, ExecError>;

impl<'t, 'f> Exec<'t, 'f> {
    pub(crate) fn new(tree: &'t Tree, options: &'t ExecOptions<'f>) -> Self {
        Exec {
            tree,
            options,
            out: String::new(),
            vars: Vec::new(),
            depth: 0,
            steps: 0,
        }
    }

    pub(crate) fn run(mut self, data: &Value) -> R<String> {
        self.vars.push(("$".into(), data.clone()));
        let tree = self.tree;
        self.walk_list(&tree.root, data)?;
        Ok(self.out)
    }

    fn step(&mut self) -> R<()> {
        self.steps += 1;
        if self.steps > MAX_STEPS {
            return Err(ExecErrorKind::TooManySteps { limit: MAX_STEPS }.into());
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
            Node::If(pipe, body, else_body) | Node::With(pipe, body, else_body) => {
                let mark = self.vars.len();
                let v = self.pipe(pipe, dot)?;
                // `with` runs its body on the pipeline's value, `if` on the same dot.
                let body_dot = if matches!(node, Node::With(..)) { &v } else { dot };
                let flow = if v.is_true() {
                    self.walk_list(body, body_dot)?
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
                    return Err(ExecErrorKind::NoSuchTemplate { name: name.clone() }.into());
                };
                let data = match pipe {
                    Some(p) => self.pipe(p, dot)?,
                    None => Value::Nil,
                };
                self.depth += 1;
                if self.depth > MAX_CALL_DEPTH {
                    return Err(ExecErrorKind::TooDeep { limit: MAX_CALL_DEPTH }.into());
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
        // Lazily: `range N` over a large integer must meet the step limit, not allocate N items first.
        let items: Box<dyn Iterator<Item = (Value, Value)>> = match v {
            Value::List(items) => Box::new(items.into_iter().enumerate().map(|(i, v)| (Value::Int(i as i64), v))),
            Value::Map(m) => Box::new(m.into_iter().map(|(k, v)| (Value::Str(k), v))),
            Value::Int(n) => Box::new((0..n.max(0)).map(|i| (Value::Int(i), Value::Int(i)))),
            Value::Missing | Value::Nil => Box::new(std::iter::empty()),
            other => return Err(ExecErrorKind::CannotRange { value: go_v(&other) }.into()),
        };
        let mut items = items.peekable();
        if items.peek().is_none() {
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
            return Err(ExecErrorKind::OutputTooLarge { limit: MAX_OUTPUT }.into());
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
            let v = self.cmd(cmd, dot, value).map_err(|e| e.at_line(pipe.line))?;
            value = Some(v);
        }
        Ok(value.unwrap_or(Value::Missing))
    }

    fn pipe(&mut self, pipe: &Pipe, dot: &Value) -> R<Value> {
        let value = self.pipe_cmds(pipe, dot)?;
        pipe.bind(&mut self.vars, &value);
        Ok(value)
    }

    fn cmd(&mut self, cmd: &Cmd, dot: &Value, last: Option<Value>) -> R<Value> {
        self.step()?;
        let first = &cmd.args[0];
        if let Arg::Func(name) = first {
            return self.call(name, &cmd.args[1..], last, dot);
        }
        if cmd.args.len() > 1 || last.is_some() {
            return Err(ExecErrorKind::NotAFunction {
                operand: first.describe(),
            }
            .into());
        }
        self.arg(first, dot)
    }

    fn var(&self, name: &str) -> R<Value> {
        self.vars
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
            .ok_or_else(|| ExecErrorKind::UndefinedVariable { name: name.to_string() }.into())
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
            let field = || f.clone();
            let kind = match v {
                Value::Struct(type_name, mut members) => match members.iter().position(|(n, _)| *n == f) {
                    Some(i) => {
                        v = members.swap_remove(i).1;
                        continue;
                    }
                    None => ExecErrorKind::NoSuchField {
                        at: at.describe(),
                        field: field(),
                        type_name,
                    },
                },
                Value::Map(mut m) => {
                    v = match m.remove(f) {
                        Some(x) => x,
                        None if self.options.missing_key == MissingKey::Error => {
                            return Err(ExecErrorKind::NoMapKey {
                                at: at.describe(),
                                field: field(),
                            }
                            .into());
                        }
                        None => Value::Missing,
                    };
                    continue;
                }
                Value::Missing => ExecErrorKind::NilData {
                    at: at.describe(),
                    field: field(),
                },
                Value::Nil => ExecErrorKind::NilPointer {
                    at: at.describe(),
                    field: field(),
                },
                other => ExecErrorKind::NoSuchField {
                    at: at.describe(),
                    field: field(),
                    type_name: other.type_name(),
                },
            };
            return Err(kind.into());
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
        let funcs = self.options.funcs;
        // `and` and `or` evaluate their arguments only as far as needed.
        if !funcs.defines(name)
            && let Some(function) = ["and", "or"].into_iter().find(|f| *f == name)
        {
            let n = args.len() + usize::from(last.is_some());
            if n == 0 {
                return Err(ExecErrorKind::NoOperands { function }.into());
            }
            let mut v = Value::Missing;
            for (i, a) in args.iter().enumerate() {
                v = self.arg(a, dot)?;
                let stop = if function == "and" { !v.is_true() } else { v.is_true() };
                if stop || (i + 1 == n) {
                    return Ok(v);
                }
            }
            return Ok(last.unwrap_or(v));
        }
        let a = self.args(args, last, dot)?;
        let result = if funcs.defines(name) {
            funcs.call(name, &a)
        } else {
            call_builtin(name, &a, self.options.map_values)
        };
        result.map_err(|source| {
            ExecErrorKind::Call {
                function: name.to_string(),
                source,
            }
            .into()
        })
    }
}
