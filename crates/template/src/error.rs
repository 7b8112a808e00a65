//! Why a template cannot be parsed or run. Messages follow Go's `text/template` wording, because users
//! compare them with what external-dns printed for the same template.

use std::fmt;

/// Any template failure, for callers that parse and run in one go.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error(transparent)]
    Parse(#[from] ParseError),
    #[error(transparent)]
    Exec(#[from] ExecError),
}

/// A template that cannot be parsed: where (the 1-based line) and what is wrong there.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
#[non_exhaustive]
pub struct ParseError {
    pub line: usize,
    pub message: String,
}

impl ParseError {
    pub(crate) fn new(line: usize, message: impl Into<String>) -> Self {
        ParseError {
            line,
            message: message.into(),
        }
    }
}

/// A template that stopped while running: the line of the action that failed, when known, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExecError {
    pub line: Option<usize>,
    pub kind: ExecErrorKind,
}

impl fmt::Display for ExecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(line) = self.line {
            write!(f, "line {line}: ")?;
        }
        self.kind.fmt(f)
    }
}

/// The kind is this error itself, not its cause: the cause is the kind's own (a function's error).
impl std::error::Error for ExecError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        std::error::Error::source(&self.kind)
    }
}

impl ExecError {
    /// The innermost action that knows its line names it; outer ones keep that line.
    pub(crate) fn at_line(mut self, line: usize) -> Self {
        self.line.get_or_insert(line);
        self
    }
}

impl From<ExecErrorKind> for ExecError {
    fn from(kind: ExecErrorKind) -> Self {
        ExecError { line: None, kind }
    }
}

/// What went wrong while running. Field errors carry the operand as written (`at`, such as
/// `.Spec.Ports`) and the field or key that could not be read; call errors name the function.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ExecErrorKind {
    #[error("at <{at}>: can't evaluate field {field} in type {type_name}")]
    NoSuchField {
        at: String,
        field: String,
        type_name: &'static str,
    },
    #[error("at <{at}>: map has no entry for key {field:?}")]
    NoMapKey { at: String, field: String },
    #[error("at <{at}>: nil data; no entry for key {field:?}")]
    NilData { at: String, field: String },
    #[error("at <{at}>: nil pointer evaluating <nil>.{field}")]
    NilPointer { at: String, field: String },
    #[error("error calling {function}: {source}")]
    Call {
        function: String,
        #[source]
        source: FuncError,
    },
    /// `and` and `or` need an operand; they evaluate their own arguments, so this is not a call error.
    #[error("wrong number of args for {function}: want at least 1 got 0")]
    NoOperands { function: &'static str },
    #[error("can't give argument to non-function {operand}")]
    NotAFunction { operand: String },
    #[error("undefined variable: {name}")]
    UndefinedVariable { name: String },
    #[error("range can't iterate over {value}")]
    CannotRange { value: String },
    #[error("no such template {name:?}")]
    NoSuchTemplate { name: String },
    #[error("exceeded maximum template depth ({limit})")]
    TooDeep { limit: usize },
    #[error("template did more than {limit} steps")]
    TooManySteps { limit: usize },
    #[error("template output exceeds {limit} bytes")]
    OutputTooLarge { limit: usize },
}

/// Why a function refused its arguments. Host functions ([`crate::Funcs`]) return it too.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FuncError {
    /// `want` is a count or a bound, such as `at least 1`.
    #[error("wrong number of args for {function}: want {want} got {got}")]
    ArgCount { function: String, want: String, got: usize },
    #[error("wrong type for value; expected {expected}; got {got}")]
    ArgType { expected: &'static str, got: &'static str },
    /// An argument that is absent (a missing map key) where a value was expected.
    #[error("invalid value; expected {expected}")]
    MissingArg { expected: &'static str },
    /// Anything else, in the words of the function.
    #[error("{0}")]
    Invalid(String),
}

impl FuncError {
    pub fn invalid(message: impl Into<String>) -> Self {
        FuncError::Invalid(message.into())
    }
}
