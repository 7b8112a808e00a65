//! The provider manager of `--dns-provider-crds` (docs/multi-provider.md): one pipeline per `DNSProvider` or
//! `ClusterDNSProvider` object, each a controller of its own run as a task of its own, so nothing one
//! provider does (a bad spec, a missing Secret, an API down, a panic) reaches another.
//!
//! Two parts. [`decide`] is pure: from one map of what is known of each provider object (the object, its
//! Secret's version, the pipeline held for it) and the time, the action per object: start, rebuild, stop,
//! leave alone, and the status to write. [`run`] carries those decisions out on kube-runtime's `Controller`
//! and its `finalizer` helper (which owns the finalizer), watch-driven: a change, a deletion, a pipeline
//! that ended or synced first, or a requeue (the Secret read again every `--interval`, a backoff's end, the
//! next look at a pipeline not synced yet) is what makes it look.
//! The pipeline itself is the binary's to build, through [`PipelineFactory`]: this crate knows no flag and
//! no provider.
//!
//! ```
//! use std::collections::BTreeMap;
//! use std::time::{Duration, Instant};
//! use extdns_provider_manager::decide::{Act, Now, Row, SecretRead, Seen, decide_all};
//!
//! let object: kube::api::DynamicObject = serde_json::from_value(serde_json::json!({
//!     "apiVersion": "externaldns.k8s.io/v1alpha1", "kind": "ClusterDNSProvider",
//!     "metadata": { "name": "public", "generation": 1, "finalizers": ["extdns.io/records-left-in-place"] },
//!     "spec": { "type": "cloudflare" },
//! }))?;
//! let (seen, decoded) = Seen::of(&object);
//! let id = decoded.as_ref().map(|o| o.id.clone()).ok_or("does not decode")?;
//! let row = Row { seen: Some(seen), object: decoded, secret: SecretRead::Read(None), pipeline: None };
//! let now = Now { at: Instant::now(), leader: true, interval: Duration::from_secs(60) };
//! let decisions = decide_all(&BTreeMap::from([(id.clone(), row)]), now);
//! assert_eq!(decisions[&id].pipeline, Act::Start { failures: 0 });
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod decide;
mod decoded;
mod factory;
mod first_sync;
mod forbidden;
mod held;
mod manager;
mod objects;
mod secret;
mod status;

pub use factory::{BuildError, Built, Cause, PipelineFactory, PipelineRequest};
pub use forbidden::{Forbidden, Write};
pub use manager::{Error, ManagerConfig, run};
pub use objects::{list_objects, manifest_objects};
pub use secret::{SecretError, Secrets, read_secret};
pub use status::{Observer, REFRESH, StatusWriter};
