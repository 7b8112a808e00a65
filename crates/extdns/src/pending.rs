//! TEMPORARY: the pipeline types used to be stand-ins here before `extdns-source` had them; they are now
//! re-exported from there for code that still imports them from this module (`run.rs`). Import
//! `extdns_source::Pipeline` instead; this module goes once nothing uses it.

pub use extdns_source::wrappers::{Pipeline, PipelineConfig, PipelineOutput};
