//! Why a call that carries a credential got no answer from the API: there was no credential to send, or
//! nothing answered. Every bearer-token provider has these two ways of failing before its API says
//! anything, and classifies them alike.

use super::chain::{FetchError, NoCredentials};
use crate::failure::{FailureKind, Unreachable};

/// A call that got no answer: no credential to send, or no connection (refused, timeout, TLS failure).
/// A provider's call error holds it beside the failures its API answers with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Unsent<E: FetchError> {
    /// No answer to the request.
    #[error(transparent)]
    Unreachable(#[from] Unreachable),
    /// No credential: every source of the chain, and why each gave nothing.
    #[error("{0}")]
    Credentials(#[source] Box<NoCredentials<E>>),
}

impl<E: FetchError> Unsent<E> {
    /// A credential that may come later (its source failed transiently) is transient and so is a missing
    /// answer when [`Unreachable::kind`] says so; credentials that cannot come are an authentication failure.
    pub fn kind(&self) -> FailureKind {
        match self {
            Unsent::Unreachable(e) => e.kind(),
            Unsent::Credentials(e) if e.is_transient() => FailureKind::Transient,
            Unsent::Credentials(_) => FailureKind::Auth,
        }
    }
}

impl<E: FetchError> From<NoCredentials<E>> for Unsent<E> {
    fn from(e: NoCredentials<E>) -> Unsent<E> {
        Unsent::Credentials(Box::new(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::credentials::Tried;

    #[derive(Debug, thiserror::Error)]
    #[error("token endpoint down (transient: {0})")]
    struct Down(bool);

    impl FetchError for Down {
        fn is_transient(&self) -> bool {
            self.0
        }
    }

    fn no_credentials(transient: bool) -> Unsent<Down> {
        let tried = vec![Tried::failed("metadata server", Down(transient))];
        Unsent::from(NoCredentials::new("no credentials", tried))
    }

    #[test]
    fn credentials_that_may_come_later_are_transient_else_an_authentication_failure() {
        assert_eq!(no_credentials(true).kind(), FailureKind::Transient);
        assert_eq!(no_credentials(false).kind(), FailureKind::Auth);
        let text = no_credentials(false).to_string();
        assert!(text.starts_with("no credentials; tried metadata server"), "{text}");
        let source = std::error::Error::source(&no_credentials(false)).map(ToString::to_string);
        assert_eq!(
            source.as_deref(),
            Some(text.as_str()),
            "the chain's error is the source"
        );
    }
}
