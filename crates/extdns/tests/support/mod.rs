//! What the manifest tests (chart, deploy) and the built binary's tests (dns_server, observability) share.

pub mod dns_server;
pub mod kinds;
