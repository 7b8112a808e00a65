//! Kubernetes label selectors: the `--label-filter`, `--annotation-filter` and `--gateway-label-filter`
//! string syntax, and the structured `LabelSelector` objects carry (allowedRoutes, allowedListeners).
//!
//! The semantics are the API server's, so a filter matches here exactly what `kubectl get -l` would
//! match. The annotation filter applies the same rules to the annotation map.

use std::fmt;

use extdns_informer::StrMap;
use extdns_informer::view::LabelSelector;

/// Why a selector is not valid; every variant says where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SelectorError {
    /// The text does not parse.
    #[error("invalid selector {input:?} at position {position}: {message}")]
    Syntax {
        /// The selector as given.
        input: String,
        /// Where parsing stopped, in bytes.
        position: usize,
        /// What was expected there.
        message: String,
    },
    /// A key Kubernetes would not accept.
    #[error("invalid selector key {key:?}: {reason}")]
    InvalidKey {
        /// The key.
        key: String,
        /// Why.
        reason: String,
    },
    /// A value Kubernetes would not accept.
    #[error("invalid selector value {value:?} for key {key:?}: {reason}")]
    InvalidValue {
        /// The key.
        key: String,
        /// The value.
        value: String,
        /// Why.
        reason: String,
    },
    /// An operator label selectors do not have.
    #[error("selector requirement on key {key:?}: {operator:?} is not a valid label selector operator")]
    UnknownOperator {
        /// The key.
        key: String,
        /// The operator.
        operator: String,
    },
    /// `!=`, `>` or `<` in a selector that must be a structured label selector (`--annotation-filter`).
    #[error(
        "selector requirement on key {key:?}: {operator:?} is not supported here (a structured label selector \
         has only =, ==, in, notin, exists and !)"
    )]
    NotStructured {
        /// The key.
        key: String,
        /// The operator as written.
        operator: String,
    },
    /// `in` or `notin` without values.
    #[error("selector requirement on key {key:?}: operator {operator} needs at least one value")]
    MissingValues {
        /// The key.
        key: String,
        /// The operator.
        operator: String,
    },
    /// `exists` or `!` with values.
    #[error("selector requirement on key {key:?}: operator {operator} takes no values, got {values:?}")]
    UnexpectedValues {
        /// The key.
        key: String,
        /// The operator.
        operator: String,
        /// The values given.
        values: Vec<String>,
    },
    /// `gt` or `lt` without exactly one integer.
    #[error("selector requirement on key {key:?}: operator {operator} needs exactly one integer value, got {values:?}")]
    NotAnInteger {
        /// The key.
        key: String,
        /// The operator.
        operator: String,
        /// The values given.
        values: Vec<String>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Equals,
    DoubleEquals,
    NotEquals,
    In,
    NotIn,
    Exists,
    DoesNotExist,
    Gt,
    Lt,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Requirement {
    key: String,
    op: Op,
    /// Sorted and deduplicated (the canonical form); one value for the equality operators.
    values: Vec<String>,
}

impl Requirement {
    fn new(key: String, op: Op, mut values: Vec<String>) -> Result<Self, SelectorError> {
        validate_key(&key)?;
        let op_name = |op: Op| op_display(op).trim().to_string();
        match op {
            Op::In | Op::NotIn if values.is_empty() => {
                return Err(SelectorError::MissingValues {
                    key,
                    operator: op_name(op),
                });
            }
            Op::Equals | Op::DoubleEquals | Op::NotEquals if values.len() != 1 => {
                return Err(SelectorError::MissingValues {
                    key,
                    operator: op_name(op),
                });
            }
            Op::Exists | Op::DoesNotExist if !values.is_empty() => {
                return Err(SelectorError::UnexpectedValues {
                    key,
                    operator: op_name(op),
                    values,
                });
            }
            Op::Gt | Op::Lt if values.len() != 1 || values[0].parse::<i64>().is_err() => {
                return Err(SelectorError::NotAnInteger {
                    key,
                    operator: op_name(op),
                    values,
                });
            }
            _ => {}
        }
        if !matches!(op, Op::Gt | Op::Lt) {
            for v in &values {
                validate_value(&key, v)?;
            }
        }
        values.sort();
        values.dedup();
        Ok(Requirement { key, op, values })
    }

    fn matches<'a>(&self, get: &impl Fn(&str) -> Option<&'a str>) -> bool {
        let v = get(&self.key);
        match self.op {
            Op::Equals | Op::DoubleEquals | Op::In => v.is_some_and(|v| self.values.iter().any(|x| x == v)),
            Op::NotEquals | Op::NotIn => v.is_none_or(|v| !self.values.iter().any(|x| x == v)),
            Op::Exists => v.is_some(),
            Op::DoesNotExist => v.is_none(),
            Op::Gt | Op::Lt => {
                let (Some(have), Some(want)) = (
                    v.and_then(|v| v.parse::<i64>().ok()),
                    self.values.first().and_then(|w| w.parse::<i64>().ok()),
                ) else {
                    return false;
                };
                if self.op == Op::Gt { have > want } else { have < want }
            }
        }
    }
}

fn op_display(op: Op) -> &'static str {
    match op {
        Op::Equals => "=",
        Op::DoubleEquals => "==",
        Op::NotEquals => "!=",
        Op::In => " in ",
        Op::NotIn => " notin ",
        Op::Exists | Op::DoesNotExist => "",
        Op::Gt => ">",
        Op::Lt => "<",
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.op {
            Op::Exists => f.write_str(&self.key),
            Op::DoesNotExist => write!(f, "!{}", self.key),
            Op::In | Op::NotIn => write!(f, "{}{}({})", self.key, op_display(self.op), self.values.join(",")),
            _ => write!(f, "{}{}{}", self.key, op_display(self.op), self.values.join(",")),
        }
    }
}

/// A Kubernetes label selector: a conjunction of requirements. The empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selector {
    requirements: Vec<Requirement>,
}

impl Selector {
    /// The selector that matches every object.
    pub fn everything() -> Self {
        Selector::default()
    }

    /// Whether the selector selects everything (empty), so the filter can be skipped.
    pub fn is_everything(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Parse the string syntax: `a=b`, `a==b`, `a!=b`, `a in (x,y)`, `a notin (x)`, `a`, `!a`, `a>1`, `a<1`,
    /// joined by ',' (AND). An empty or blank string selects everything.
    pub fn parse(input: &str) -> Result<Selector, SelectorError> {
        let tokens = lex(input)?;
        let mut p = Parser { input, tokens, pos: 0 };
        let mut requirements = Vec::new();
        if !p.at_end() {
            loop {
                requirements.push(p.requirement()?);
                match p.next() {
                    None => break,
                    Some((Tok::Comma, _)) => continue,
                    Some((t, at)) => return Err(p.error(at, format!("found {}, expected ','", t.describe()))),
                }
            }
        }
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(Selector { requirements })
    }

    /// Parse a selector that must also be a structured label selector (`matchLabels` and
    /// `matchExpressions`), as external-dns reads `--annotation-filter` (`metav1.ParseToLabelSelector`, an
    /// error at startup since v0.22 and in the source config since v0.23, #6610): `!=`, `>` and `<` are
    /// refused, and of several equalities on one key the last given wins (`matchLabels` is a map).
    pub fn parse_structured(input: &str) -> Result<Selector, SelectorError> {
        let mut selector = Selector::parse(input)?;
        if let Some(r) = selector
            .requirements
            .iter()
            .find(|r| matches!(r.op, Op::NotEquals | Op::Gt | Op::Lt))
        {
            return Err(SelectorError::NotStructured {
                key: r.key.clone(),
                operator: op_display(r.op).to_string(),
            });
        }
        // Requirements are sorted by key with a stable sort, so equalities on one key are in input order.
        let is_equality = |r: &Requirement| matches!(r.op, Op::Equals | Op::DoubleEquals);
        let reqs = std::mem::take(&mut selector.requirements);
        for (i, r) in reqs.iter().enumerate() {
            let overridden = is_equality(r) && reqs[i + 1..].iter().any(|l| l.key == r.key && is_equality(l));
            if !overridden {
                selector.requirements.push(r.clone());
            }
        }
        Ok(selector)
    }

    /// A structured selector: each `matchLabels` entry is an equality, `matchExpressions` use In, NotIn,
    /// Exists or DoesNotExist. An unknown operator, In/NotIn without values or Exists/DoesNotExist with
    /// values is an error, as the API server would reject it.
    pub fn from_label_selector(ls: &LabelSelector) -> Result<Selector, SelectorError> {
        let mut requirements = Vec::with_capacity(ls.match_labels.len() + ls.match_expressions.len());
        for (k, v) in &ls.match_labels {
            requirements.push(Requirement::new(k.clone(), Op::Equals, vec![v.clone()])?);
        }
        for e in &ls.match_expressions {
            let op = match e.operator.as_str() {
                "In" => Op::In,
                "NotIn" => Op::NotIn,
                "Exists" => Op::Exists,
                "DoesNotExist" => Op::DoesNotExist,
                other => {
                    return Err(SelectorError::UnknownOperator {
                        key: e.key.clone(),
                        operator: other.to_string(),
                    });
                }
            };
            let r = Requirement::new(e.key.clone(), op, e.values.clone()).map_err(|err| match err {
                // Report the operator as written in the object.
                SelectorError::MissingValues { key, .. } => SelectorError::MissingValues {
                    key,
                    operator: e.operator.clone(),
                },
                SelectorError::UnexpectedValues { key, values, .. } => SelectorError::UnexpectedValues {
                    key,
                    operator: e.operator.clone(),
                    values,
                },
                other => other,
            })?;
            requirements.push(r);
        }
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(Selector { requirements })
    }

    /// Whether some requirement is about `key` (external-dns refuses `--ingress-class` beside an
    /// annotation filter on the class annotation).
    pub fn has_key(&self, key: &str) -> bool {
        self.requirements.iter().any(|r| r.key == key)
    }

    /// The keys its requirements are about, each once, sorted: what an object must keep for the selector
    /// to be matched on it (a Pod keeps only some annotations).
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        let mut last: Option<&str> = None;
        self.requirements.iter().map(|r| r.key.as_str()).filter(move |k| {
            let repeat = last == Some(*k);
            last = Some(k);
            !repeat
        })
    }

    /// Whether a label (or annotation) map satisfies every requirement.
    pub fn matches(&self, m: &StrMap) -> bool {
        self.matches_by(|key| m.get(key))
    }

    /// Whether the values `get` finds by key satisfy every requirement: an annotation filter sees the
    /// annotations as the sources read them (`Annotations::filter_value`), not only as set.
    pub fn matches_by<'a>(&self, get: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.requirements.iter().all(|r| r.matches(&get))
    }
}

/// The canonical string form, as the API server accepts it in `labelSelector=`.
impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

impl std::str::FromStr for Selector {
    type Err = SelectorError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Selector::parse(s)
    }
}

// ------------------------------------------------------------------------------------------------ lexer

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Ident(String),
    Bang,
    Eq,
    DoubleEq,
    NotEq,
    Gt,
    Lt,
    Comma,
    Open,
    Close,
}

impl Tok {
    fn describe(&self) -> String {
        match self {
            Tok::Ident(s) => format!("{s:?}"),
            Tok::Bang => "'!'".into(),
            Tok::Eq => "'='".into(),
            Tok::DoubleEq => "'=='".into(),
            Tok::NotEq => "'!='".into(),
            Tok::Gt => "'>'".into(),
            Tok::Lt => "'<'".into(),
            Tok::Comma => "','".into(),
            Tok::Open => "'('".into(),
            Tok::Close => "')'".into(),
        }
    }
}

fn is_special(c: char) -> bool {
    matches!(c, '!' | '=' | '>' | '<' | ',' | '(' | ')') || c.is_whitespace()
}

fn lex(input: &str) -> Result<Vec<(Tok, usize)>, SelectorError> {
    let mut out = Vec::new();
    let mut it = input.char_indices().peekable();
    while let Some((at, c)) = it.next() {
        let tok = match c {
            c if c.is_whitespace() => continue,
            ',' => Tok::Comma,
            '(' => Tok::Open,
            ')' => Tok::Close,
            '>' => Tok::Gt,
            '<' => Tok::Lt,
            '!' | '=' => {
                let double = it.peek().is_some_and(|&(_, n)| n == '=');
                if double {
                    it.next();
                }
                match (c, double) {
                    ('!', true) => Tok::NotEq,
                    ('!', false) => Tok::Bang,
                    (_, true) => Tok::DoubleEq,
                    _ => Tok::Eq,
                }
            }
            _ => {
                let mut end = at + c.len_utf8();
                while let Some(&(i, n)) = it.peek() {
                    if is_special(n) {
                        break;
                    }
                    end = i + n.len_utf8();
                    it.next();
                }
                Tok::Ident(input[at..end].to_string())
            }
        };
        out.push((tok, at));
    }
    Ok(out)
}

// ----------------------------------------------------------------------------------------------- parser

struct Parser<'a> {
    input: &'a str,
    tokens: Vec<(Tok, usize)>,
    pos: usize,
}

impl Parser<'_> {
    fn at_end(&self) -> bool {
        self.pos >= self.tokens.len()
    }

    fn next(&mut self) -> Option<(Tok, usize)> {
        let t = self.tokens.get(self.pos).cloned();
        self.pos += 1;
        t
    }

    fn peek(&self) -> Option<&Tok> {
        self.tokens.get(self.pos).map(|(t, _)| t)
    }

    fn error(&self, position: usize, message: String) -> SelectorError {
        SelectorError::Syntax {
            input: self.input.to_string(),
            position,
            message,
        }
    }

    fn end_error(&self, expected: &str) -> SelectorError {
        self.error(
            self.input.len(),
            format!("unexpected end of input, expected {expected}"),
        )
    }

    fn requirement(&mut self) -> Result<Requirement, SelectorError> {
        let negated = if self.peek() == Some(&Tok::Bang) {
            self.pos += 1;
            true
        } else {
            false
        };
        let key = match self.next() {
            Some((Tok::Ident(k), _)) => k,
            Some((t, at)) => return Err(self.error(at, format!("found {}, expected a key", t.describe()))),
            None => return Err(self.end_error("a key")),
        };
        if negated {
            return Requirement::new(key, Op::DoesNotExist, vec![]);
        }
        let op = match self.peek() {
            None | Some(Tok::Comma) => return Requirement::new(key, Op::Exists, vec![]),
            Some(Tok::Eq) => Op::Equals,
            Some(Tok::DoubleEq) => Op::DoubleEquals,
            Some(Tok::NotEq) => Op::NotEquals,
            Some(Tok::Gt) => Op::Gt,
            Some(Tok::Lt) => Op::Lt,
            Some(Tok::Ident(w)) if w == "in" => Op::In,
            Some(Tok::Ident(w)) if w == "notin" => Op::NotIn,
            Some(t) => {
                let (t, at) = (t.describe(), self.tokens[self.pos].1);
                return Err(self.error(
                    at,
                    format!("found {t}, expected an operator (=, ==, !=, in, notin, >, <)"),
                ));
            }
        };
        self.pos += 1;
        let values = match op {
            Op::In | Op::NotIn => self.value_set()?,
            _ => match self.peek() {
                Some(Tok::Ident(v)) => {
                    let v = v.clone();
                    self.pos += 1;
                    vec![v]
                }
                // `a=` selects an empty value, as the API server accepts.
                None | Some(Tok::Comma) if matches!(op, Op::Equals | Op::DoubleEquals | Op::NotEquals) => {
                    vec![String::new()]
                }
                Some(t) => {
                    let (t, at) = (t.describe(), self.tokens[self.pos].1);
                    return Err(self.error(at, format!("found {t}, expected a value")));
                }
                None => return Err(self.end_error("a value")),
            },
        };
        Requirement::new(key, op, values)
    }

    /// `(v1, v2)`; `()` and empty items stand for the empty value, as in Kubernetes.
    fn value_set(&mut self) -> Result<Vec<String>, SelectorError> {
        match self.next() {
            Some((Tok::Open, _)) => {}
            Some((t, at)) => return Err(self.error(at, format!("found {}, expected '('", t.describe()))),
            None => return Err(self.end_error("'('")),
        }
        let mut values = Vec::new();
        let mut expect_value = true;
        loop {
            match self.next() {
                Some((Tok::Ident(v), at)) => {
                    if !expect_value {
                        return Err(self.error(at, format!("found {v:?}, expected ',' or ')'")));
                    }
                    values.push(v);
                    expect_value = false;
                }
                Some((Tok::Comma, _)) => {
                    if expect_value {
                        values.push(String::new());
                    }
                    expect_value = true;
                }
                Some((Tok::Close, _)) => {
                    if expect_value {
                        values.push(String::new());
                    }
                    return Ok(values);
                }
                Some((t, at)) => {
                    return Err(self.error(at, format!("found {}, expected ',', ')' or a value", t.describe())));
                }
                None => return Err(self.end_error("')'")),
            }
        }
    }
}

// ------------------------------------------------------------------------------------------- validation

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')
}

/// A label name part: at most 63 characters, alphanumerics with `-`, `_`, `.` inside.
fn name_problem(s: &str) -> Option<String> {
    if s.is_empty() {
        return Some("name part must not be empty".into());
    }
    if s.len() > 63 {
        return Some(format!("name part must be at most 63 characters, has {}", s.len()));
    }
    let first = s.chars().next().is_some_and(|c| c.is_ascii_alphanumeric());
    let last = s.chars().last().is_some_and(|c| c.is_ascii_alphanumeric());
    if !first || !last || !s.chars().all(is_name_char) {
        return Some(
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end \
             with an alphanumeric character"
                .into(),
        );
    }
    None
}

/// A key is `[prefix/]name`, the prefix a DNS subdomain (as Kubernetes qualified names).
fn validate_key(key: &str) -> Result<(), SelectorError> {
    let err = |reason: String| SelectorError::InvalidKey {
        key: key.to_string(),
        reason,
    };
    let (prefix, name) = match key.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    if let Some(p) = prefix {
        if p.is_empty() || p.len() > 253 {
            return Err(err("prefix must be a DNS subdomain of 1 to 253 characters".into()));
        }
        let ok = p.split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && l.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        });
        if !ok {
            return Err(err(format!("prefix {p:?} must be a lower-case DNS subdomain")));
        }
    }
    match name_problem(name) {
        Some(reason) => Err(err(reason)),
        None => Ok(()),
    }
}

/// A value is empty or a valid name part.
fn validate_value(key: &str, value: &str) -> Result<(), SelectorError> {
    if value.is_empty() {
        return Ok(());
    }
    match name_problem(value) {
        Some(reason) => Err(SelectorError::InvalidValue {
            key: key.into(),
            value: value.into(),
            reason,
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use extdns_informer::view::LabelSelectorRequirement;

    fn map(pairs: &[(&str, &str)]) -> StrMap {
        pairs.iter().copied().collect()
    }

    fn sel(s: &str) -> Result<Selector, SelectorError> {
        Selector::parse(s)
    }

    #[test]
    fn empty_selector_matches_everything() -> Result<(), SelectorError> {
        for s in ["", "  "] {
            let selector = sel(s)?;
            assert!(selector.is_everything());
            assert!(selector.matches(&map(&[])));
            assert!(selector.matches(&map(&[("a", "b")])));
        }
        assert!(Selector::everything().is_everything());
        assert_eq!(Selector::everything().to_string(), "");
        Ok(())
    }

    type Labels<'a> = &'a [(&'a str, &'a str)];

    /// Checks that `selector` matches each label set of `matching` and none of `others`.
    fn check(selector: &str, matching: &[Labels<'_>], others: &[Labels<'_>]) -> Result<(), SelectorError> {
        let parsed = sel(selector)?;
        for labels in matching {
            assert!(parsed.matches(&map(labels)), "{selector:?} should match {labels:?}");
        }
        for labels in others {
            assert!(
                !parsed.matches(&map(labels)),
                "{selector:?} should not match {labels:?}"
            );
        }
        Ok(())
    }

    #[test]
    fn equality_matches_only_that_value() -> Result<(), SelectorError> {
        for s in ["app=web", "app==web", " app = web "] {
            check(s, &[&[("app", "web")]], &[&[("app", "db")], &[]])?;
        }
        Ok(())
    }

    #[test]
    fn inequality_matches_other_values_and_absent_keys() -> Result<(), SelectorError> {
        check("app!=web", &[&[("app", "db")], &[]], &[&[("app", "web")]])
    }

    #[test]
    fn in_matches_any_listed_value() -> Result<(), SelectorError> {
        check(
            "env in (prod, staging)",
            &[&[("env", "prod")], &[("env", "staging")]],
            &[&[("env", "dev")], &[]],
        )
    }

    #[test]
    fn notin_matches_unlisted_values_and_absent_keys() -> Result<(), SelectorError> {
        check("env notin (prod)", &[&[("env", "dev")], &[]], &[&[("env", "prod")]])
    }

    #[test]
    fn bare_key_requires_existence_and_bang_requires_absence() -> Result<(), SelectorError> {
        check("app", &[&[("app", "")]], &[&[("other", "x")]])?;
        check("!app", &[&[("other", "x")]], &[&[("app", "")]])
    }

    #[test]
    fn greater_and_less_than_compare_integers() -> Result<(), SelectorError> {
        check(
            "replicas>2",
            &[&[("replicas", "3")]],
            &[&[("replicas", "2")], &[("replicas", "x")], &[]],
        )?;
        check("replicas<2", &[&[("replicas", "1")]], &[])?;
        assert!(sel("replicas>x").is_err());
        Ok(())
    }

    #[test]
    fn commas_join_requirements_with_and() -> Result<(), SelectorError> {
        let selector = sel("app=web,env in (prod),!legacy,team")?;
        assert!(selector.matches(&map(&[("app", "web"), ("env", "prod"), ("team", "a")])));
        assert!(!selector.matches(&map(&[("app", "web"), ("env", "prod"), ("team", "a"), ("legacy", "1")])));
        assert!(!selector.matches(&map(&[("app", "web"), ("env", "prod")])));
        Ok(())
    }

    #[test]
    fn qualified_keys_and_empty_values_are_accepted() -> Result<(), SelectorError> {
        assert!(sel("example.com/team=a")?.matches(&map(&[("example.com/team", "a")])));
        assert!(sel("a=")?.matches(&map(&[("a", "")])));
        assert!(sel("a in ()")?.matches(&map(&[("a", "")])));
        assert!(sel("a in (,x)")?.matches(&map(&[("a", "")])));
        Ok(())
    }

    #[test]
    fn display_is_canonical_and_round_trips() -> Result<(), SelectorError> {
        let selector = sel("z in (b, a, b), app==web, !old, x!=y, has, n>1")?;
        let s = selector.to_string();
        assert_eq!(s, "app==web,has,n>1,!old,x!=y,z in (a,b)");
        assert_eq!(sel(&s)?, selector);
        Ok(())
    }

    #[test]
    fn syntax_errors_say_what_and_where() {
        let cases = [
            ("a in x", "position 5", "expected '('"),
            ("a in (x", "position 7", "expected ')'"),
            ("a in (x y)", "position 8", "expected ',' or ')'"),
            ("a b", "position 2", "expected an operator"),
            ("a=b c", "position 4", "expected ','"),
            ("=b", "position 0", "expected a key"),
            ("a,", "position 2", "expected a key"),
            ("!", "position 1", "expected a key"),
            ("a=(", "position 2", "expected a value"),
            ("a>", "position 2", "expected a value"),
        ];
        for (input, position, what) in cases {
            let msg = sel(input).err().map(|e| e.to_string()).unwrap_or_default();
            assert!(msg.contains(position) && msg.contains(what), "{input:?}: {msg}");
            assert!(msg.contains(&format!("{input:?}")), "{input:?}: {msg}");
        }
    }

    #[test]
    fn invalid_keys_and_values_are_rejected_naming_them() {
        let msg = sel("-bad=x").err().map(|e| e.to_string()).unwrap_or_default();
        assert!(msg.contains("\"-bad\""), "{msg}");
        let msg = sel(&format!("a={}", "v".repeat(64)))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(msg.contains("at most 63"), "{msg}");
        assert!(matches!(sel("Upper.Case/x=1"), Err(SelectorError::InvalidKey { .. })));
        assert!(matches!(sel("a in (ok, no!pe)"), Err(SelectorError::Syntax { .. })));
        assert!(matches!(sel("a=b/c"), Err(SelectorError::InvalidValue { .. })));
    }

    /// external-dns #6610: `--annotation-filter` must parse as a structured label selector, so the
    /// operators `metav1.ParseToLabelSelector` refuses are refused, naming the key and the operator.
    #[test]
    fn filter_validation_6610_annotation_filter_refuses_what_a_label_selector_cannot_hold() {
        for (input, key, op) in [("a!=b", "a", "!="), ("x=1,n>1", "n", ">"), ("n<1", "n", "<")] {
            let err = Selector::parse_structured(input).err();
            assert_eq!(
                err,
                Some(SelectorError::NotStructured {
                    key: key.into(),
                    operator: op.into()
                }),
                "{input}"
            );
            let msg = err.map(|e| e.to_string()).unwrap_or_default();
            assert!(msg.contains(&format!("{key:?}")) && msg.contains(op), "{msg}");
            // The label filter (`labels.Parse`) takes them.
            assert!(sel(input).is_ok(), "{input}");
        }
        // What a structured selector holds parses as before; syntax errors stay syntax errors.
        for input in [
            "",
            "a=b",
            "a==b",
            "a in (x,y)",
            "a notin (x)",
            "a",
            "!a",
            "k8s.io/class=nginx",
        ] {
            assert_eq!(Selector::parse_structured(input), sel(input), "{input}");
        }
        assert!(matches!(
            Selector::parse_structured("a in x"),
            Err(SelectorError::Syntax { .. })
        ));
    }

    #[test]
    fn filter_validation_6610_the_last_equality_on_a_key_wins_as_in_match_labels() -> Result<(), SelectorError> {
        let s = Selector::parse_structured("a=x,b=1,a==y")?;
        assert_eq!(s.to_string(), "a==y,b=1");
        assert!(s.matches(&map(&[("a", "y"), ("b", "1")])));
        assert!(!s.matches(&map(&[("a", "x"), ("b", "1")])));
        // Set-based requirements on the same key all stay (matchExpressions is a list).
        assert_eq!(
            Selector::parse_structured("a=x,a in (x,y)")?.to_string(),
            "a=x,a in (x,y)"
        );
        Ok(())
    }

    fn expr(key: &str, operator: &str, values: &[&str]) -> LabelSelectorRequirement {
        LabelSelectorRequirement {
            key: key.into(),
            operator: operator.into(),
            values: values.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn label_selector_match_labels_are_equalities() -> Result<(), SelectorError> {
        let ls = LabelSelector {
            match_labels: vec![("team".into(), "a".into())],
            match_expressions: vec![],
        };
        let selector = Selector::from_label_selector(&ls)?;
        assert!(selector.matches(&map(&[("team", "a")])));
        assert!(!selector.matches(&map(&[("team", "b")])));
        Ok(())
    }

    #[test]
    fn empty_label_selector_matches_everything() -> Result<(), SelectorError> {
        let selector = Selector::from_label_selector(&LabelSelector::default())?;
        assert!(selector.is_everything());
        assert!(selector.matches(&map(&[("x", "y")])));
        Ok(())
    }

    #[test]
    fn label_selector_expressions_support_every_operator() -> Result<(), SelectorError> {
        let ls = LabelSelector {
            match_labels: vec![],
            match_expressions: vec![
                expr("env", "In", &["prod", "staging"]),
                expr("tier", "NotIn", &["db"]),
                expr("team", "Exists", &[]),
                expr("legacy", "DoesNotExist", &[]),
            ],
        };
        let selector = Selector::from_label_selector(&ls)?;
        assert!(selector.matches(&map(&[("env", "prod"), ("team", "a")])));
        assert!(selector.matches(&map(&[("env", "staging"), ("team", "a"), ("tier", "web")])));
        assert!(!selector.matches(&map(&[("env", "dev"), ("team", "a")])));
        assert!(!selector.matches(&map(&[("env", "prod"), ("team", "a"), ("tier", "db")])));
        assert!(!selector.matches(&map(&[("env", "prod")])));
        assert!(!selector.matches(&map(&[("env", "prod"), ("team", "a"), ("legacy", "y")])));
        Ok(())
    }

    #[test]
    fn label_selector_unknown_operator_is_an_error() {
        let ls = LabelSelector {
            match_labels: vec![],
            match_expressions: vec![expr("env", "Contains", &["x"])],
        };
        let err = Selector::from_label_selector(&ls).err();
        assert_eq!(
            err,
            Some(SelectorError::UnknownOperator {
                key: "env".into(),
                operator: "Contains".into()
            })
        );
        assert!(err.map(|e| e.to_string()).unwrap_or_default().contains("\"Contains\""));
    }

    #[test]
    fn label_selector_in_and_notin_need_values() {
        for op in ["In", "NotIn"] {
            let ls = LabelSelector {
                match_labels: vec![],
                match_expressions: vec![expr("env", op, &[])],
            };
            let err = Selector::from_label_selector(&ls).err();
            assert_eq!(
                err,
                Some(SelectorError::MissingValues {
                    key: "env".into(),
                    operator: op.into()
                })
            );
        }
    }

    #[test]
    fn label_selector_exists_takes_no_values() {
        let ls = LabelSelector {
            match_labels: vec![],
            match_expressions: vec![expr("env", "Exists", &["x"])],
        };
        assert!(matches!(
            Selector::from_label_selector(&ls),
            Err(SelectorError::UnexpectedValues { .. })
        ));
    }

    #[test]
    fn label_selector_invalid_match_label_is_an_error() {
        let ls = LabelSelector {
            match_labels: vec![("bad key".into(), "a".into())],
            match_expressions: vec![],
        };
        assert!(matches!(
            Selector::from_label_selector(&ls),
            Err(SelectorError::InvalidKey { .. })
        ));
    }
}
