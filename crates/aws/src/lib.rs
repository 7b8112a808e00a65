//! What extdns's AWS crates share: SigV4 request signing ([`Signer`]) and the AWS credential chain
//! ([`CredentialSource`]), so the Route53 provider and the DynamoDB registry sign alike and neither depends
//! on the other.
//!
//! The chain runs on the toolkit's one credential chain and cache (`extdns_provider::credentials`): its
//! sources are environment keys, web identity (IRSA), the shared files and profiles with role chaining,
//! container credentials (ECS, EKS Pod Identity) and IMDSv2, in the Go SDK v2's order, then
//! `--aws-assume-role`.
//!
//! ```
//! use extdns_aws::{CredentialSource, Signer, SignerConfig};
//! use extdns_provider::http::Observer;
//!
//! // The chain reads the variables `var` gives (here none but a HOME without ~/.aws); nothing is fetched
//! // until the first request is signed.
//! let source = CredentialSource::chain(&|k| (k == "HOME").then(|| "/nonexistent".to_string()), None);
//! let signer = Signer::new(SignerConfig::new(source, "eu-west-1", "dynamodb"), &Observer::default())?;
//! assert_eq!(signer.region(), "eu-west-1");
//! # Ok::<(), extdns_provider::http::HttpError>(())
//! ```

mod calls;
mod credentials;
mod documents;
mod error;
mod keys;
mod profile;
mod sign;
mod signer;
mod sources;

pub use credentials::{AssumeRole, CredentialSource, CredentialsError, VARIABLES};
pub use error::CredentialSourceError;
pub use keys::Credentials;
pub use sign::SignError;
pub use signer::{Call, Pacing, Signer, SignerConfig, SignerError, refuses_credentials};
