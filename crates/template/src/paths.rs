//! The field paths a template reads from its data, found without running it, so a host can check them
//! against the type of the data and keep only those fields of the objects it stores.
//!
//! Dot and variables are followed statically: `{{range .Spec.Ports}}{{.Port}}{{end}}` reads
//! `.Spec.Ports[].Port`, `{{with .Spec}}{{.Type}}{{end}}` reads `.Spec.Type`, `$` is the data, and a
//! `define` is followed with the dot its `template` call passes. Where the dot is no longer a path (the
//! result of a function, `index`, a literal), what follows reads from a value some recorded path already
//! keeps whole, so nothing more is recorded.

use std::collections::BTreeSet;

use crate::parse::{Arg, Node, Pipe, Tree};

/// One step from a value to a part of it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Step {
    /// `.Name`: a struct field or a map key.
    Field(String),
    /// Every element of a list or value of a map (`range`).
    Elements,
}

/// A path the template reads, from the data it runs on.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FieldPath {
    /// The steps from the data's root (`$`), outermost first; empty for the data itself.
    pub steps: Vec<Step>,
    /// The value is used itself (printed, compared, passed to a function), so all of it is needed. When
    /// false the template only walks into it (`range`, `with`, a variable) and reads what other paths say.
    pub whole: bool,
}

impl FieldPath {
    /// The Go form, for messages: `.Spec.Ports[].Port`.
    pub fn display(&self) -> String {
        let mut s = String::new();
        for step in &self.steps {
            match step {
                Step::Field(f) => {
                    s.push('.');
                    s.push_str(f);
                }
                Step::Elements => s.push_str("[]"),
            }
        }
        if s.is_empty() { ".".to_string() } else { s }
    }
}

/// Deepest chain of `template` calls followed; Go stops executions at the same depth.
const MAX_CALLS: usize = 100;

type Ctx = Option<Vec<Step>>;

pub(crate) fn field_paths(tree: &Tree) -> Vec<FieldPath> {
    let mut w = Walker {
        tree,
        out: BTreeSet::new(),
        vars: vec![("$".to_string(), Some(Vec::new()))],
        calls: Vec::new(),
    };
    w.nodes(&tree.root, &Some(Vec::new()));
    w.out.into_iter().collect()
}

struct Walker<'t> {
    tree: &'t Tree,
    out: BTreeSet<FieldPath>,
    vars: Vec<(String, Ctx)>,
    /// The `template` calls being followed, with their dot, so recursion ends.
    calls: Vec<(String, Ctx)>,
}

impl Walker<'_> {
    fn record(&mut self, base: &[Step], fields: &[String], whole: bool) {
        let mut steps = base.to_vec();
        steps.extend(fields.iter().map(|f| Step::Field(f.clone())));
        self.out.insert(FieldPath { steps, whole });
    }

    fn var(&self, name: &str) -> Ctx {
        self.vars
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .and_then(|(_, c)| c.clone())
    }

    fn nodes(&mut self, nodes: &[Node], dot: &Ctx) {
        for n in nodes {
            self.node(n, dot);
        }
    }

    fn node(&mut self, node: &Node, dot: &Ctx) {
        match node {
            Node::Text(_) | Node::Break | Node::Continue => {}
            Node::Action(pipe) => {
                // A declaration binds the value; only printing uses it.
                let ctx = self.pipe(pipe, dot, pipe.decl.is_empty());
                self.declare(pipe, ctx);
            }
            Node::If(pipe, body, else_body) => {
                let mark = self.vars.len();
                let ctx = self.pipe(pipe, dot, true);
                self.declare(pipe, ctx);
                self.nodes(body, dot);
                self.nodes(else_body, dot);
                self.vars.truncate(mark);
            }
            Node::With(pipe, body, else_body) => {
                let mark = self.vars.len();
                let ctx = self.pipe(pipe, dot, false);
                self.declare(pipe, ctx.clone());
                self.nodes(body, &ctx);
                self.nodes(else_body, dot);
                self.vars.truncate(mark);
            }
            Node::Range(pipe, body, else_body) => {
                let mark = self.vars.len();
                let ctx = self.pipe(pipe, dot, false);
                // Ranging needs every key and the number of elements, not their contents.
                let elements = ctx.map(|mut p| {
                    p.push(Step::Elements);
                    self.record(&p, &[], false);
                    p
                });
                match pipe.decl.as_slice() {
                    [] => {}
                    [value] => self.vars.push((value.clone(), elements.clone())),
                    [key, value, ..] => {
                        self.vars.push((key.clone(), None));
                        self.vars.push((value.clone(), elements.clone()));
                    }
                }
                self.nodes(body, &elements);
                self.nodes(else_body, dot);
                self.vars.truncate(mark);
            }
            Node::Template(name, pipe) => {
                let ctx = match pipe {
                    Some(p) => self.pipe(p, dot, false),
                    None => None,
                };
                let call = (name.clone(), ctx.clone());
                let tree = self.tree;
                let Some(body) = tree.defines.get(name) else { return };
                if self.calls.len() >= MAX_CALLS || self.calls.contains(&call) {
                    return;
                }
                self.calls.push(call);
                let saved = std::mem::replace(&mut self.vars, vec![("$".to_string(), ctx.clone())]);
                self.nodes(body, &ctx);
                self.vars = saved;
                self.calls.pop();
            }
        }
    }

    /// Binds the variables a pipeline declares (or assigns) to what it evaluates to.
    fn declare(&mut self, pipe: &Pipe, ctx: Ctx) {
        pipe.bind(&mut self.vars, &ctx);
    }

    /// Records what the pipeline reads and returns the path of its value when it is a plain path
    /// (`.Spec.Ports`, `$x.Name`, `.`). A plain path is recorded whole only when `used`.
    fn pipe(&mut self, pipe: &Pipe, dot: &Ctx, used: bool) -> Ctx {
        if let [cmd] = pipe.cmds.as_slice()
            && let [arg] = cmd.args.as_slice()
            && let Some(path) = self.plain(arg, dot)
        {
            self.out.insert(FieldPath {
                steps: path.clone(),
                whole: used,
            });
            return Some(path);
        }
        for cmd in &pipe.cmds {
            for arg in &cmd.args {
                self.arg(arg, dot);
            }
        }
        None
    }

    /// The path an argument stands for, if it is one.
    fn plain(&self, arg: &Arg, dot: &Ctx) -> Ctx {
        let (base, fields) = match arg {
            Arg::Dot => (dot.clone()?, &[][..]),
            Arg::Field(f) => (dot.clone()?, f.as_slice()),
            Arg::Var(v, f) => (self.var(v)?, f.as_slice()),
            Arg::Chain(pipe, f) => match (pipe.cmds.as_slice(), pipe.decl.is_empty()) {
                ([cmd], true) if cmd.args.len() == 1 => (self.plain(&cmd.args[0], dot)?, f.as_slice()),
                _ => return None,
            },
            _ => return None,
        };
        let mut steps = base;
        steps.extend(fields.iter().map(|f| Step::Field(f.clone())));
        Some(steps)
    }

    /// Records an argument used as a value.
    fn arg(&mut self, arg: &Arg, dot: &Ctx) {
        match arg {
            Arg::Dot | Arg::Field(_) | Arg::Var(..) | Arg::Chain(..) if self.plain(arg, dot).is_some() => {
                if let Some(path) = self.plain(arg, dot) {
                    self.record(&path, &[], true);
                }
            }
            // `(pipeline).A`: the pipeline's value is used; the fields read from it are inside it.
            Arg::Chain(pipe, _) => {
                self.pipe(pipe, dot, true);
            }
            Arg::Dot | Arg::Field(_) | Arg::Var(..) => {}
            Arg::Nil | Arg::Bool(_) | Arg::Int(_) | Arg::Float(_) | Arg::Str(_) | Arg::Func(_) => {}
        }
    }
}
