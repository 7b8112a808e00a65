//! The sources' test kit (feature `test-support`, for their dev-dependencies): every source crate's tests
//! build their fixtures with it rather than with a copy of their own, so that a rule of how tests load
//! objects, spell flags or compare endpoints is written once.
//!
//! - [`Flags`]: the flags a case sets, the source's own ones in [`Flags::source`]; [`Flags::config`] the
//!   shared configuration they make, [`Flags::store`] a store keeping the fields their templates read.
//! - [`FakeMeta`] and [`Fixture`]: an object's metadata as the API server holds it, and the builder methods
//!   (`ns`, `ann`, `label`) every fake object shares; [`ga`] and [`alpha`] spell annotation keys;
//!   [`load_balancer_service`] a gateway's Service, [`node_view`] a Node as the informer keeps it.
//! - [`load`] and [`load_lenient`]: a store from objects as JSON, through the manifest loader (the same
//!   ingest path as the live informer), so conversion is under test too.
//! - [`load_yaml`]: the same from YAML documents.
//! - [`render`], [`rendered`], [`evaluate_ok`], [`assert_records`]: endpoints as compact lines to compare.
//! - [`check_against_full`], [`check_affected`]: the incremental path and [`crate::Source::affected`]
//!   against full evaluations; [`check_reads_only_itself`] for a source whose objects read nothing else,
//!   [`evaluated_objects`] what an incremental evaluation reads, [`check_fails_alone`] a failing object.
//!
//! A new source crate adds `extdns-source = { workspace = true, features = ["test-support"] }` to its
//! dev-dependencies and imports what it needs from here; `cargo xtask conventions` refuses a source crate's
//! test code that defines its own function of a name this module exports (the `pub use` lines below).

mod checks;
mod config;
mod objects;
mod render;
mod store;

pub use checks::{
    check_affected, check_against_full, check_fails_alone, check_reads_only_itself, endpoints_by_object,
    evaluated_objects,
};
pub use config::{Flags, kept_fields, template};
pub use objects::{FakeMeta, Fixture, alpha, ga, load_balancer_service, load_balancer_status, metadata, node_view};
pub use render::{assert_records, evaluate_ok, lines, render, render_labelled, rendered, rendered_labelled};
pub use store::{load, load_lenient, load_yaml, store};
