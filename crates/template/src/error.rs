//! Why a template cannot be parsed or run. Messages follow Go's `text/template` wording, because users
//! compare them with what external-dns printed for the same template.

use std::fmt;

/// Any template failure, for callers that parse and run in one go.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The template text is malformed; nothing ran.
    #[error(transparent)]
    Parse(#[from] ParseError),
    /// The template parsed but failed while running on its data.
    #[error(transparent)]
    Exec(#[from] ExecError),
}

/// A template that cannot be parsed: where (the 1-based line) and what is wrong there.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
#[non_exhaustive]
pub struct ParseError {
    /// 1-based line of the template text where the parser gave up.
    pub line: usize,
    /// What is wrong there, in Go's wording.
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
    /// 1-based line of the innermost failing action; `None` when no action's position is known.
    pub line: Option<usize>,
    /// What went wrong.
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
    /// The value has no such field (a typo in `.Spec.Hostname`, or a field of a scalar).
    #[error("at <{at}>: can't evaluate field {field} in type {type_name}")]
    NoSuchField {
        /// The operand as written, such as `.Spec.Ports`.
        at: String,
        /// The field or key that could not be read.
        field: String,
        /// Go's name for the value's type (`string`, `[]interface {}`).
        type_name: &'static str,
    },
    /// A map lacks the key and the template runs with `missingkey=error`.
    #[error("at <{at}>: map has no entry for key {field:?}")]
    NoMapKey {
        /// The operand as written, such as `.Spec.Ports`.
        at: String,
        /// The field or key that could not be read.
        field: String,
    },
    /// A field was read from a missing map entry (`.Labels.a.b` where `a` is absent).
    #[error("at <{at}>: nil data; no entry for key {field:?}")]
    NilData {
        /// The operand as written, such as `.Spec.Ports`.
        at: String,
        /// The field or key that could not be read.
        field: String,
    },
    /// A field was read from an explicit `null`.
    #[error("at <{at}>: nil pointer evaluating <nil>.{field}")]
    NilPointer {
        /// The operand as written, such as `.Spec.Ports`.
        at: String,
        /// The field or key that could not be read.
        field: String,
    },
    /// A function returned an error.
    #[error("error calling {function}: {source}")]
    Call {
        /// The function's name as written in the template.
        function: String,
        /// The function's own reason.
        #[source]
        source: FuncError,
    },
    /// `and` and `or` need an operand; they evaluate their own arguments, so this is not a call error.
    #[error("wrong number of args for {function}: want at least 1 got 0")]
    NoOperands {
        /// `and` or `or`.
        function: &'static str,
    },
    /// Arguments were given to something that is not a function (a field or a variable).
    #[error("can't give argument to non-function {operand}")]
    NotAFunction {
        /// The operand as written.
        operand: String,
    },
    /// A `$name` was used that no enclosing action declared.
    #[error("undefined variable: {name}")]
    UndefinedVariable {
        /// The variable, with its `$`.
        name: String,
    },
    /// `range` was given a value that is not a list, map or integer.
    #[error("range can't iterate over {value}")]
    CannotRange {
        /// The value, printed as Go's `%v` would.
        value: String,
    },
    /// `template "name"` names a template that was never defined.
    #[error("no such template {name:?}")]
    NoSuchTemplate {
        /// The name asked for.
        name: String,
    },
    /// Templates called each other (or themselves) deeper than the limit; guards the stack against recursion.
    #[error("exceeded maximum template depth ({limit})")]
    TooDeep {
        /// The nesting limit.
        limit: usize,
    },
    /// The run took more loop iterations and calls than the limit; guards the controller against a runaway
    /// template.
    #[error("template did more than {limit} steps")]
    TooManySteps {
        /// The step limit.
        limit: usize,
    },
    /// The output grew past the limit; templates produce hostnames, so this is a mistake, not data.
    #[error("template output exceeds {limit} bytes")]
    OutputTooLarge {
        /// The limit in bytes.
        limit: usize,
    },
}

/// Why a function refused its arguments. Host functions ([`crate::Funcs`]) return it too.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FuncError {
    /// `want` is a count or a bound, such as `at least 1`.
    #[error("wrong number of args for {function}: want {want} got {got}")]
    ArgCount {
        /// The function's name.
        function: String,
        /// The accepted count.
        want: String,
        /// How many arguments were given.
        got: usize,
    },
    /// An argument of the wrong type, named as Go names types.
    #[error("wrong type for value; expected {expected}; got {got}")]
    ArgType {
        /// The type the function takes.
        expected: &'static str,
        /// The type it was given.
        got: &'static str,
    },
    /// An argument that is absent (a missing map key) where a value was expected.
    #[error("invalid value; expected {expected}")]
    MissingArg {
        /// The type the function takes.
        expected: &'static str,
    },
    /// Anything else, in the words of the function.
    #[error("{0}")]
    Invalid(String),
}

impl FuncError {
    /// A [`FuncError::Invalid`] with the function's own message.
    pub fn invalid(message: impl Into<String>) -> Self {
        FuncError::Invalid(message.into())
    }
}
