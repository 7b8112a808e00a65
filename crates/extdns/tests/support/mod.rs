//! What the manifest tests (chart, deploy) share.

pub mod kinds;
