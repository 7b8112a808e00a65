//! The lexer: Go `text/template` tokens, with `{{- ` / ` -}}` whitespace trimming and `{{/* */}}` comments
//! handled here so the parser only sees text and actions.

use crate::error::ParseError;

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Tok {
    Text(String),
    Open,
    Close,
    Space,
    Ident(String),
    /// `.Name` (without the dot).
    Field(String),
    /// `$` or `$name` (with the dollar).
    Var(String),
    Str(String),
    Char(char),
    Number(String),
    Bool(bool),
    Nil,
    Dot,
    Pipe,
    Declare,
    Assign,
    LParen,
    RParen,
    Comma,
}

impl Tok {
    pub(super) fn describe(&self) -> String {
        match self {
            Tok::Text(_) => "text".into(),
            Tok::Open => "\"{{\"".into(),
            Tok::Close => "\"}}\"".into(),
            Tok::Space => "space".into(),
            Tok::Ident(s) => format!("<{s}>"),
            Tok::Field(s) => format!("<.{s}>"),
            Tok::Var(s) => format!("<{s}>"),
            Tok::Str(s) => format!("{s:?}"),
            Tok::Char(c) => format!("{c:?}"),
            Tok::Number(n) => format!("<{n}>"),
            Tok::Bool(b) => format!("<{b}>"),
            Tok::Nil => "<nil>".into(),
            Tok::Dot => "<.>".into(),
            Tok::Pipe => "\"|\"".into(),
            Tok::Declare => "\":=\"".into(),
            Tok::Assign => "\"=\"".into(),
            Tok::LParen => "\"(\"".into(),
            Tok::RParen => "\")\"".into(),
            Tok::Comma => "\",\"".into(),
        }
    }
}

/// A token and the line it starts on (1-based).
pub(super) type Token = (Tok, usize);

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_alnum(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

pub(super) fn lex(src: &str) -> Result<Vec<Token>, ParseError> {
    let mut l = Lexer {
        src,
        pos: 0,
        line: 1,
        out: Vec::new(),
        trim_next_text: false,
    };
    l.run()?;
    Ok(l.out)
}

struct Lexer<'a> {
    src: &'a str,
    pos: usize,
    line: usize,
    out: Vec<Token>,
    /// The previous action ended with ` -}}`: trim leading whitespace of the next text.
    trim_next_text: bool,
}

impl<'a> Lexer<'a> {
    fn rest(&self) -> &'a str {
        &self.src[self.pos..]
    }

    fn advance(&mut self, n: usize) {
        self.line += self.src[self.pos..self.pos + n].matches('\n').count();
        self.pos += n;
    }

    fn err(&self, msg: impl Into<String>) -> ParseError {
        ParseError::new(self.line, msg)
    }

    fn run(&mut self) -> Result<(), ParseError> {
        while self.pos < self.src.len() {
            let text_end = self.rest().find("{{").map_or(self.src.len(), |i| self.pos + i);
            let mut text = &self.src[self.pos..text_end];
            let trim_left = text_end < self.src.len() && {
                let after = &self.src[text_end + 2..];
                after.len() >= 2 && after.as_bytes()[0] == b'-' && is_space(after.as_bytes()[1])
            };
            if self.trim_next_text {
                text = text.trim_start_matches([' ', '\t', '\r', '\n']);
                self.trim_next_text = false;
            }
            if trim_left {
                text = text.trim_end_matches([' ', '\t', '\r', '\n']);
            }
            if !text.is_empty() {
                self.out.push((Tok::Text(text.to_string()), self.line));
            }
            self.advance(text_end - self.pos);
            if self.pos >= self.src.len() {
                break;
            }
            self.advance(2);
            if trim_left {
                self.advance(2);
            }
            self.action()?;
        }
        Ok(())
    }

    /// After `{{` (and its trim marker): a comment or the tokens of one action up to `}}`.
    fn action(&mut self) -> Result<(), ParseError> {
        if self.rest().starts_with("/*") {
            return self.comment();
        }
        self.out.push((Tok::Open, self.line));
        let mut depth = 0usize;
        loop {
            let rest = self.rest();
            if rest.is_empty() {
                return Err(self.err("unclosed action"));
            }
            let b = rest.as_bytes();
            if rest.starts_with("}}") || (b.len() >= 4 && is_space(b[0]) && rest[1..].starts_with("-}}")) {
                if depth > 0 {
                    return Err(self.err("unclosed left paren"));
                }
                if rest.starts_with("}}") {
                    self.advance(2);
                } else {
                    self.advance(4);
                    self.trim_next_text = true;
                }
                self.out.push((Tok::Close, self.line));
                return Ok(());
            }
            let line = self.line;
            let c = rest.chars().next().unwrap_or(' ');
            match c {
                ' ' | '\t' | '\r' | '\n' => {
                    let mut n = rest.bytes().take_while(|b| is_space(*b)).count();
                    // Leave one space for a ` -}}` trim marker (n >= 2 here, the 1-space case closed above).
                    if rest[n..].starts_with("-}}") {
                        n -= 1;
                    }
                    self.advance(n);
                    self.push_space(line);
                }
                '|' => self.single(Tok::Pipe, 1),
                '(' => {
                    depth += 1;
                    self.single(Tok::LParen, 1)
                }
                ')' => {
                    if depth == 0 {
                        return Err(self.err("unexpected right paren"));
                    }
                    depth -= 1;
                    self.single(Tok::RParen, 1)
                }
                ',' => self.single(Tok::Comma, 1),
                '=' => self.single(Tok::Assign, 1),
                ':' => {
                    if !rest.starts_with(":=") {
                        return Err(self.err("expected :="));
                    }
                    self.single(Tok::Declare, 2)
                }
                '"' => self.quoted()?,
                '`' => {
                    let Some(end) = rest[1..].find('`') else {
                        return Err(self.err("unterminated raw quoted string"));
                    };
                    let s = rest[1..1 + end].replace('\r', "");
                    self.advance(end + 2);
                    self.out.push((Tok::Str(s), line));
                }
                '\'' => self.char_constant()?,
                '$' => {
                    let n = 1 + rest[1..]
                        .chars()
                        .take_while(|c| is_alnum(*c))
                        .map(char::len_utf8)
                        .sum::<usize>();
                    let name = rest[..n].to_string();
                    self.advance(n);
                    self.out.push((Tok::Var(name), line));
                }
                '.' => {
                    if rest[1..].starts_with(|c: char| c.is_ascii_digit()) {
                        self.number()?;
                    } else {
                        let n = rest[1..]
                            .chars()
                            .take_while(|c| is_alnum(*c))
                            .map(char::len_utf8)
                            .sum::<usize>();
                        if n == 0 {
                            self.single(Tok::Dot, 1);
                        } else {
                            let name = rest[1..1 + n].to_string();
                            self.advance(1 + n);
                            self.out.push((Tok::Field(name), line));
                        }
                    }
                }
                '+' | '-' | '0'..='9' => self.number()?,
                c if is_alnum(c) => {
                    let n = rest
                        .chars()
                        .take_while(|c| is_alnum(*c))
                        .map(char::len_utf8)
                        .sum::<usize>();
                    let word = &rest[..n];
                    let tok = match word {
                        "true" => Tok::Bool(true),
                        "false" => Tok::Bool(false),
                        "nil" => Tok::Nil,
                        w => Tok::Ident(w.to_string()),
                    };
                    self.advance(n);
                    self.out.push((tok, line));
                }
                other => return Err(self.err(format!("unrecognized character in action: {other:?}"))),
            }
        }
    }

    fn push_space(&mut self, line: usize) {
        if !matches!(self.out.last(), Some((Tok::Space, _))) {
            self.out.push((Tok::Space, line));
        }
    }

    fn single(&mut self, t: Tok, n: usize) {
        let line = self.line;
        self.advance(n);
        self.out.push((t, line));
    }

    fn comment(&mut self) -> Result<(), ParseError> {
        let Some(end) = self.rest().find("*/") else {
            return Err(self.err("unclosed comment"));
        };
        self.advance(end + 2);
        let rest = self.rest();
        if rest.starts_with("}}") {
            self.advance(2);
        } else if rest.len() >= 4 && is_space(rest.as_bytes()[0]) && rest[1..].starts_with("-}}") {
            self.advance(4);
            self.trim_next_text = true;
        } else {
            return Err(self.err("comment ends before closing delimiter"));
        }
        Ok(())
    }

    fn quoted(&mut self) -> Result<(), ParseError> {
        let line = self.line;
        let rest = self.rest();
        let mut out = String::new();
        let mut chars = rest.char_indices().skip(1);
        loop {
            let Some((i, c)) = chars.next() else {
                return Err(self.err("unterminated quoted string"));
            };
            match c {
                '"' => {
                    self.advance(i + 1);
                    self.out.push((Tok::Str(out), line));
                    return Ok(());
                }
                '\n' => return Err(self.err("unterminated quoted string")),
                '\\' => {
                    let Some((_, e)) = chars.next() else {
                        return Err(self.err("unterminated quoted string"));
                    };
                    match e {
                        'n' => out.push('\n'),
                        't' => out.push('\t'),
                        'r' => out.push('\r'),
                        'a' => out.push('\u{7}'),
                        'b' => out.push('\u{8}'),
                        'f' => out.push('\u{c}'),
                        'v' => out.push('\u{b}'),
                        '\\' => out.push('\\'),
                        '"' => out.push('"'),
                        '\'' => out.push('\''),
                        'x' | 'u' | 'U' => {
                            let n = match e {
                                'x' => 2,
                                'u' => 4,
                                _ => 8,
                            };
                            let hex: String = (0..n).filter_map(|_| chars.next().map(|(_, c)| c)).collect();
                            let ch = u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32);
                            match ch {
                                Some(ch) if hex.len() == n => out.push(ch),
                                _ => return Err(self.err(format!("invalid escape \\{e}{hex} in quoted string"))),
                            }
                        }
                        other => return Err(self.err(format!("invalid escape \\{other} in quoted string"))),
                    }
                }
                c => out.push(c),
            }
        }
    }

    fn char_constant(&mut self) -> Result<(), ParseError> {
        let line = self.line;
        let rest = self.rest();
        let mut chars = rest.char_indices().skip(1);
        let c = match chars.next() {
            Some((_, '\\')) => match chars.next() {
                Some((_, 'n')) => '\n',
                Some((_, 't')) => '\t',
                Some((_, '\\')) => '\\',
                Some((_, '\'')) => '\'',
                Some((_, c)) => return Err(self.err(format!("unsupported escape \\{c} in character constant"))),
                None => return Err(self.err("unterminated character constant")),
            },
            Some((_, c)) if c != '\'' => c,
            _ => return Err(self.err("empty character constant")),
        };
        match chars.next() {
            Some((i, '\'')) => {
                self.advance(i + 1);
                self.out.push((Tok::Char(c), line));
                Ok(())
            }
            _ => Err(self.err("unterminated character constant")),
        }
    }

    fn number(&mut self) -> Result<(), ParseError> {
        let line = self.line;
        let rest = self.rest();
        let n = rest
            .char_indices()
            .take_while(|&(i, c)| {
                c.is_ascii_alphanumeric()
                    || c == '_'
                    || c == '.'
                    || ((c == '+' || c == '-')
                        && (i == 0 || matches!(rest.as_bytes()[i - 1], b'e' | b'E' | b'p' | b'P')))
            })
            .map(|(_, c)| c.len_utf8())
            .sum::<usize>();
        let text = &rest[..n];
        if text == "+" || text == "-" {
            return Err(self.err(format!("bad number syntax: {text:?}")));
        }
        self.advance(n);
        self.out.push((Tok::Number(text.to_string()), line));
        Ok(())
    }
}
