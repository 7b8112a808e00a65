//! The parser: tokens to a tree of nodes, with Go's parse-time checks (unknown functions, undefined
//! variables, misplaced `else`/`end`/`break`, duplicate `define`).

use std::collections::HashMap;

use crate::error::ParseError;
use crate::lex::{Tok, Token, lex};

#[derive(Debug, Clone)]
pub(super) enum Node {
    Text(String),
    /// `{{pipeline}}`: prints the value unless the pipeline declares a variable.
    Action(Pipe),
    If(Pipe, Vec<Node>, Vec<Node>),
    Range(Pipe, Vec<Node>, Vec<Node>),
    With(Pipe, Vec<Node>, Vec<Node>),
    Template(String, Option<Pipe>),
    Break,
    Continue,
}

#[derive(Debug, Clone)]
pub(super) struct Pipe {
    pub line: usize,
    /// Declared or assigned variables (`$x :=`, `$i, $e :=` in range).
    pub decl: Vec<String>,
    pub is_assign: bool,
    pub cmds: Vec<Cmd>,
}

impl Pipe {
    /// Binds the variables the pipeline declares (or assigns, to the innermost of that name) to `value`:
    /// executing binds values, the field-path analysis binds paths.
    pub(super) fn bind<T: Clone>(&self, vars: &mut Vec<(String, T)>, value: &T) {
        for name in &self.decl {
            if self.is_assign {
                if let Some(slot) = vars.iter_mut().rev().find(|(n, _)| n == name) {
                    slot.1 = value.clone();
                }
            } else {
                vars.push((name.clone(), value.clone()));
            }
        }
    }
}

#[derive(Debug, Clone)]
pub(super) struct Cmd {
    pub args: Vec<Arg>,
}

#[derive(Debug, Clone)]
pub(super) enum Arg {
    Dot,
    Nil,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    /// `.A.B` on dot.
    Field(Vec<String>),
    /// `$x.A.B` (no fields for a plain variable).
    Var(String, Vec<String>),
    /// `(pipeline).A.B`, or a parenthesised pipeline when there are no fields.
    Chain(Box<Pipe>, Vec<String>),
    /// A function name.
    Func(String),
}

impl Arg {
    /// The source form, for error messages: `<.Spec.Foo>`.
    pub(super) fn describe(&self) -> String {
        match self {
            Arg::Dot => ".".into(),
            Arg::Nil => "nil".into(),
            Arg::Bool(b) => b.to_string(),
            Arg::Int(i) => i.to_string(),
            Arg::Float(f) => f.to_string(),
            Arg::Str(s) => format!("{s:?}"),
            Arg::Field(f) => format!(".{}", f.join(".")),
            Arg::Var(v, f) if f.is_empty() => v.clone(),
            Arg::Var(v, f) => format!("{v}.{}", f.join(".")),
            Arg::Chain(_, f) if f.is_empty() => "(...)".into(),
            Arg::Chain(_, f) => format!("(...).{}", f.join(".")),
            Arg::Func(name) => name.clone(),
        }
    }
}

/// The parsed templates: the root and every `define`/`block`.
#[derive(Debug, Clone, Default)]
pub(super) struct Tree {
    pub root: Vec<Node>,
    pub defines: HashMap<String, Vec<Node>>,
}

/// Deepest nesting of blocks and parentheses accepted, so hostile input cannot overflow the stack.
const MAX_DEPTH: usize = 200;

pub(super) fn parse(src: &str, is_func: &dyn Fn(&str) -> bool) -> Result<Tree, ParseError> {
    let tokens = lex(src)?;
    let mut p = Parser {
        tokens,
        pos: 0,
        vars: vec!["$".to_string()],
        is_func,
        depth: 0,
        range_depth: 0,
        tree: Tree::default(),
    };
    let (root, end) = p.list(true)?;
    if let Some(end) = end {
        return Err(p.err_at(end.1, format!("unexpected {}", end.0)));
    }
    p.tree.root = root;
    Ok(p.tree)
}

/// What ended a list: `{{end}}`, `{{else}}` (with the rest of the else action still to read), or EOF.
type Terminator = Option<(&'static str, usize)>;

struct Parser<'f> {
    tokens: Vec<Token>,
    pos: usize,
    /// Variables in scope, for the "undefined variable" check.
    vars: Vec<String>,
    is_func: &'f dyn Fn(&str) -> bool,
    depth: usize,
    /// How many `range` bodies enclose the current position (for `break`/`continue`).
    range_depth: usize,
    tree: Tree,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.tokens.get(self.pos).map(|(t, _)| t)
    }

    fn line(&self) -> usize {
        self.tokens.get(self.pos).or(self.tokens.last()).map_or(1, |(_, l)| *l)
    }

    fn next(&mut self) -> Option<Token> {
        let t = self.tokens.get(self.pos).cloned();
        self.pos += 1;
        t
    }

    fn err_at(&self, line: usize, msg: impl Into<String>) -> ParseError {
        ParseError::new(line, msg)
    }

    fn err(&self, msg: impl Into<String>) -> ParseError {
        self.err_at(self.line(), msg)
    }

    fn skip_space(&mut self) {
        while self.peek() == Some(&Tok::Space) {
            self.pos += 1;
        }
    }

    fn next_non_space(&mut self) -> Option<Token> {
        self.skip_space();
        self.next()
    }

    fn expect_close(&mut self, context: &str) -> Result<(), ParseError> {
        match self.next_non_space() {
            Some((Tok::Close, _)) => Ok(()),
            Some((t, line)) => Err(self.err_at(line, format!("unexpected {} in {context}", t.describe()))),
            None => Err(self.err(format!("unclosed action in {context}"))),
        }
    }

    fn enter(&mut self) -> Result<(), ParseError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.err(format!("template nests deeper than {MAX_DEPTH} levels")));
        }
        Ok(())
    }

    /// Nodes up to `{{end}}`, `{{else` or EOF. `top` allows `define`.
    fn list(&mut self, top: bool) -> Result<(Vec<Node>, Terminator), ParseError> {
        let mut nodes = Vec::new();
        loop {
            let Some((tok, line)) = self.next() else {
                return Ok((nodes, None));
            };
            match tok {
                Tok::Text(t) => nodes.push(Node::Text(t)),
                Tok::Open => {
                    self.skip_space();
                    let keyword = match self.peek() {
                        Some(Tok::Ident(w)) => Some(w.clone()),
                        _ => None,
                    };
                    match keyword.as_deref() {
                        Some("end") => {
                            self.pos += 1;
                            self.expect_close("end")?;
                            return Ok((nodes, Some(("{{end}}", line))));
                        }
                        Some("else") => {
                            self.pos += 1;
                            return Ok((nodes, Some(("{{else}}", line))));
                        }
                        Some("define") => {
                            if !top {
                                return Err(self.err_at(line, "unexpected <define> in command"));
                            }
                            self.pos += 1;
                            self.define(line)?;
                        }
                        Some("if") => {
                            self.pos += 1;
                            nodes.push(self.control("if", line)?);
                        }
                        Some("range") => {
                            self.pos += 1;
                            nodes.push(self.control("range", line)?);
                        }
                        Some("with") => {
                            self.pos += 1;
                            nodes.push(self.control("with", line)?);
                        }
                        Some("template") => {
                            self.pos += 1;
                            nodes.push(self.template_call(line)?);
                        }
                        Some("block") => {
                            self.pos += 1;
                            nodes.push(self.block(line)?);
                        }
                        Some("break") | Some("continue") => {
                            let kw = keyword.unwrap_or_default();
                            self.pos += 1;
                            if !self.in_range() {
                                return Err(self.err_at(line, format!("{{{{{kw}}}}} outside {{{{range}}}}")));
                            }
                            self.expect_close(&kw)?;
                            nodes.push(if kw == "break" { Node::Break } else { Node::Continue });
                        }
                        _ => {
                            let pipe = self.pipeline("command", true)?;
                            nodes.push(Node::Action(pipe));
                        }
                    }
                }
                other => return Err(self.err_at(line, format!("unexpected {}", other.describe()))),
            }
        }
    }

    fn in_range(&self) -> bool {
        self.range_depth > 0
    }

    fn define(&mut self, line: usize) -> Result<(), ParseError> {
        let name = self.template_name("define")?;
        self.expect_close("define")?;
        let eof = format!("unexpected EOF in define clause {name:?}");
        let body = self.template_body("define", line, eof)?;
        self.add_define(name, body, line)
    }

    /// The body of a `define` or `block` up to its `{{end}}`, parsed as a template of its own: only `$` is
    /// defined and no range encloses it. `eof` is the error when the text ends first.
    fn template_body(&mut self, clause: &str, line: usize, eof: String) -> Result<Vec<Node>, ParseError> {
        let saved_vars = std::mem::replace(&mut self.vars, vec!["$".to_string()]);
        let saved_range = std::mem::replace(&mut self.range_depth, 0);
        let (body, end) = self.list(false)?;
        self.vars = saved_vars;
        self.range_depth = saved_range;
        match end {
            Some(("{{end}}", _)) => Ok(body),
            Some((t, l)) => Err(self.err_at(l, format!("unexpected {t} in {clause} clause"))),
            None => Err(self.err_at(line, eof)),
        }
    }

    fn add_define(&mut self, name: String, body: Vec<Node>, line: usize) -> Result<(), ParseError> {
        let empty = |b: &[Node]| b.iter().all(|n| matches!(n, Node::Text(t) if t.trim().is_empty()));
        match self.tree.defines.get(&name) {
            Some(existing) if !empty(existing) && !empty(&body) => {
                Err(self.err_at(line, format!("template: multiple definition of template {name:?}")))
            }
            Some(existing) if !empty(existing) => Ok(()),
            _ => {
                self.tree.defines.insert(name, body);
                Ok(())
            }
        }
    }

    fn template_name(&mut self, context: &str) -> Result<String, ParseError> {
        match self.next_non_space() {
            Some((Tok::Str(s), _)) => Ok(s),
            Some((t, line)) => Err(self.err_at(line, format!("unexpected {} in {context} clause", t.describe()))),
            None => Err(self.err(format!("unexpected EOF in {context} clause"))),
        }
    }

    fn template_call(&mut self, _line: usize) -> Result<Node, ParseError> {
        let name = self.template_name("template")?;
        self.skip_space();
        if self.peek() == Some(&Tok::Close) {
            self.pos += 1;
            return Ok(Node::Template(name, None));
        }
        let pipe = self.pipeline("template clause", false)?;
        Ok(Node::Template(name, Some(pipe)))
    }

    fn block(&mut self, line: usize) -> Result<Node, ParseError> {
        let name = self.template_name("block")?;
        let pipe = self.pipeline("block clause", false)?;
        let body = self.template_body("block", line, "unexpected EOF in block clause".to_string())?;
        self.add_define(name.clone(), body, line)?;
        Ok(Node::Template(name, Some(pipe)))
    }

    /// `if`, `range`, `with` after the keyword: pipeline, body, optional else (or `else if`/`else with`
    /// chains), end.
    fn control(&mut self, kind: &'static str, line: usize) -> Result<Node, ParseError> {
        self.enter()?;
        let vars_mark = self.vars.len();
        let pipe = self.pipeline(kind, true)?;
        if kind == "range" {
            self.range_depth += 1;
        }
        let (body, end) = self.list(false)?;
        if kind == "range" {
            self.range_depth -= 1;
        }
        let else_list = match end {
            Some(("{{end}}", _)) => Vec::new(),
            Some(("{{else}}", else_line)) => {
                self.skip_space();
                let chained = match self.peek() {
                    Some(Tok::Ident(w)) if (w == "if" && kind == "if") || (w == "with" && kind == "with") => true,
                    Some(Tok::Ident(w)) if w == "if" || w == "with" => {
                        return Err(self.err_at(else_line, format!("unexpected else {w} in {kind}")));
                    }
                    _ => false,
                };
                if chained {
                    // `{{else if x}}` is `{{else}}{{if x}}...{{end}}` sharing this `{{end}}`.
                    self.pos += 1;
                    vec![self.control(kind, else_line)?]
                } else {
                    self.expect_close("else")?;
                    let (else_body, end) = self.list(false)?;
                    match end {
                        Some(("{{end}}", _)) => {}
                        Some((t, l)) => return Err(self.err_at(l, format!("expected end; found {t}"))),
                        None => return Err(self.err_at(line, format!("unexpected EOF in {kind}"))),
                    }
                    else_body
                }
            }
            Some((t, l)) => return Err(self.err_at(l, format!("unexpected {t}"))),
            None => return Err(self.err_at(line, format!("unexpected EOF: {{{{{kind}}}}} without {{{{end}}}}"))),
        };
        self.vars.truncate(vars_mark);
        self.depth -= 1;
        Ok(match kind {
            "if" => Node::If(pipe, body, else_list),
            "range" => Node::Range(pipe, body, else_list),
            _ => Node::With(pipe, body, else_list),
        })
    }

    /// A pipeline up to `}}` (consumed). `allow_decl` permits `$x :=` (and `$i, $e :=` in range).
    fn pipeline(&mut self, context: &str, allow_decl: bool) -> Result<Pipe, ParseError> {
        self.skip_space();
        let line = self.line();
        let mut decl = Vec::new();
        let mut is_assign = false;
        if allow_decl {
            let save = self.pos;
            let mut names = Vec::new();
            loop {
                self.skip_space();
                let Some((Tok::Var(v), _)) = self.tokens.get(self.pos).cloned() else {
                    break;
                };
                self.pos += 1;
                self.skip_space();
                match self.peek() {
                    Some(Tok::Declare) | Some(Tok::Assign) => {
                        is_assign = self.peek() == Some(&Tok::Assign);
                        self.pos += 1;
                        names.push(v);
                        decl = std::mem::take(&mut names);
                        break;
                    }
                    Some(Tok::Comma) if context == "range" && names.is_empty() => {
                        self.pos += 1;
                        names.push(v);
                    }
                    _ => break,
                }
            }
            if decl.is_empty() {
                self.pos = save;
            } else if is_assign {
                for v in &decl {
                    if !self.vars.contains(v) {
                        return Err(self.err_at(line, format!("undefined variable {v:?}")));
                    }
                }
            }
        }
        let mut cmds = Vec::new();
        loop {
            self.skip_space();
            match self.peek() {
                Some(Tok::Close) => {
                    self.pos += 1;
                    break;
                }
                None => return Err(self.err_at(line, format!("unclosed action in {context}"))),
                _ => {}
            }
            cmds.push(self.command(context)?);
            self.skip_space();
            match self.next() {
                Some((Tok::Pipe, _)) => continue,
                Some((Tok::Close, _)) => break,
                Some((t, l)) => return Err(self.err_at(l, format!("unexpected {} in {context}", t.describe()))),
                None => return Err(self.err_at(line, format!("unclosed action in {context}"))),
            }
        }
        if cmds.is_empty() {
            return Err(self.err_at(line, format!("missing value for {context}")));
        }
        self.check_pipe(&cmds, line, context)?;
        if !is_assign {
            self.vars.extend(decl.iter().cloned());
        }
        Ok(Pipe {
            line,
            decl,
            is_assign,
            cmds,
        })
    }

    fn check_pipe(&self, cmds: &[Cmd], line: usize, context: &str) -> Result<(), ParseError> {
        for (i, c) in cmds.iter().enumerate() {
            if let Some(first) = c.args.first() {
                if i > 0 && !matches!(first, Arg::Func(_) | Arg::Field(_) | Arg::Var(_, _) | Arg::Chain(_, _)) {
                    return Err(self.err_at(line, format!("non executable command in pipeline stage {}", i + 1)));
                }
                if matches!(first, Arg::Nil) {
                    return Err(self.err_at(line, format!("nil is not a command in {context}")));
                }
            }
        }
        Ok(())
    }

    /// Operands up to `|`, `}}` or `)` (not consumed).
    fn command(&mut self, context: &str) -> Result<Cmd, ParseError> {
        let mut args = Vec::new();
        loop {
            self.skip_space();
            match self.peek() {
                Some(Tok::Pipe) | Some(Tok::Close) | Some(Tok::RParen) | None => break,
                _ => {}
            }
            args.push(self.operand(context)?);
            // Operands must be separated by spaces.
            match self.peek() {
                Some(Tok::Space) | Some(Tok::Pipe) | Some(Tok::Close) | Some(Tok::RParen) | None => {}
                Some(t) => return Err(self.err(format!("unexpected {} in operand", t.describe()))),
            }
        }
        if args.is_empty() {
            return Err(self.err(format!("empty command in {context}")));
        }
        Ok(Cmd { args })
    }

    fn fields(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        while let Some(Tok::Field(f)) = self.peek() {
            out.push(f.clone());
            self.pos += 1;
        }
        out
    }

    fn operand(&mut self, context: &str) -> Result<Arg, ParseError> {
        let Some((tok, line)) = self.next() else {
            return Err(self.err(format!("unexpected EOF in {context}")));
        };
        let arg = match tok {
            Tok::Ident(name) => {
                if !(self.is_func)(&name) {
                    return Err(self.err_at(line, format!("function {name:?} not defined")));
                }
                Arg::Func(name)
            }
            Tok::Dot => {
                if matches!(self.peek(), Some(Tok::Field(_))) {
                    return Err(self.err_at(line, "unexpected . after term"));
                }
                Arg::Dot
            }
            Tok::Nil => Arg::Nil,
            Tok::Bool(b) => Arg::Bool(b),
            Tok::Str(s) => Arg::Str(s),
            Tok::Char(c) => Arg::Int(i64::from(u32::from(c))),
            Tok::Number(n) => parse_number(&n).ok_or_else(|| self.err_at(line, format!("bad number syntax: {n:?}")))?,
            Tok::Field(f) => {
                let mut chain = vec![f];
                chain.extend(self.fields());
                return Ok(Arg::Field(chain));
            }
            Tok::Var(v) => {
                if !self.vars.contains(&v) {
                    return Err(self.err_at(line, format!("undefined variable {v:?}")));
                }
                return Ok(Arg::Var(v, self.fields()));
            }
            Tok::LParen => {
                self.enter()?;
                let pipe = self.paren_pipeline(line)?;
                self.depth -= 1;
                return Ok(Arg::Chain(Box::new(pipe), self.fields()));
            }
            other => return Err(self.err_at(line, format!("unexpected {} in {context}", other.describe()))),
        };
        if matches!(self.peek(), Some(Tok::Field(_))) {
            return Err(self.err_at(line, format!("unexpected field after {}", arg.describe())));
        }
        Ok(arg)
    }

    /// A pipeline inside parentheses, up to the matching `)` (consumed).
    fn paren_pipeline(&mut self, line: usize) -> Result<Pipe, ParseError> {
        let mut cmds = Vec::new();
        loop {
            self.skip_space();
            if self.peek() == Some(&Tok::RParen) {
                self.pos += 1;
                break;
            }
            cmds.push(self.command("parenthesized pipeline")?);
            self.skip_space();
            match self.next() {
                Some((Tok::Pipe, _)) => continue,
                Some((Tok::RParen, _)) => break,
                Some((t, l)) => {
                    return Err(self.err_at(l, format!("unexpected {} in parenthesized pipeline", t.describe())));
                }
                None => return Err(self.err_at(line, "unclosed left paren")),
            }
        }
        if cmds.is_empty() {
            return Err(self.err_at(line, "missing value for parenthesized pipeline"));
        }
        self.check_pipe(&cmds, line, "parenthesized pipeline")?;
        Ok(Pipe {
            line,
            decl: Vec::new(),
            is_assign: false,
            cmds,
        })
    }
}

/// Go number literals: decimal, hex, octal, binary integers (with `_` separators) and floats.
fn parse_number(text: &str) -> Option<Arg> {
    let (neg, body) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if body.starts_with('_') || body.ends_with('_') || body.contains("__") {
        return None;
    }
    let clean = body.replace('_', "");
    let lower = clean.to_ascii_lowercase();
    let radix_int = |digits: &str, radix: u32| i64::from_str_radix(digits, radix).ok();
    let int = if let Some(h) = lower.strip_prefix("0x") {
        radix_int(h, 16)
    } else if let Some(o) = lower.strip_prefix("0o") {
        radix_int(o, 8)
    } else if let Some(b) = lower.strip_prefix("0b") {
        radix_int(b, 2)
    } else if lower.len() > 1 && lower.starts_with('0') && lower.bytes().all(|b| b.is_ascii_digit()) {
        radix_int(&lower[1..], 8)
    } else if lower.bytes().all(|b| b.is_ascii_digit()) && !lower.is_empty() {
        lower.parse::<i64>().ok()
    } else {
        None
    };
    if let Some(i) = int {
        return Some(Arg::Int(if neg { -i } else { i }));
    }
    if lower.starts_with("0x")
        || !lower
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'+' | b'-'))
    {
        return None;
    }
    let f: f64 = lower.parse().ok()?;
    if !f.is_finite() {
        return None;
    }
    let f = if neg { -f } else { f };
    Some(Arg::Float(f))
}
