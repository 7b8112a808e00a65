//! extdns's built-in authoritative DNS server (`--provider=dns-server`): the zones the controller writes,
//! answered over UDP and TCP, and transferred to secondaries.
//!
//! Three parts share one [`Zones`] value: the [`DnsServerProvider`] writes it through the controller's usual
//! [`Provider`](extdns_provider::Provider) path (so a change is served the moment the plan is applied), the
//! listeners answer queries and transfers from it, and the notifier tells the secondaries whenever a write
//! bumped a serial. Nothing is read from or written to disk: every replica builds its zones from its own
//! informers, so every replica answers.
//!
//! A request travels: [`DnsServer`] (the sockets: UDP answered in the receive loop, TCP framed per RFC
//! 7766, with the limits of [`Limits`]) parses it; transfers and signed requests go to the transfer side,
//! everything else to the answer side, which reads the [`ZoneSet`] of the last published snapshot (a
//! write changes a copy and publishes it whole, so a query never waits for one), and fits the encoded
//! answer into what the client takes (TC beyond it). A request that does not
//! parse gets FORMERR when its header is readable and nothing otherwise; a response is never answered.
//!
//! ```
//! use std::sync::Arc;
//! use extdns_dns_server::{DnsServerProvider, Limits, Zones};
//!
//! let zones = Arc::new(Zones::new(&[], 1, Limits::default()));
//! let provider = DnsServerProvider::new(zones.clone(), 60);
//! assert!(zones.read().zones().is_empty());
//! # drop(provider);
//! ```

mod answer;
pub mod config;
pub mod dnssec;
mod dnssec_answer;
pub mod dnssec_renew;
pub mod metrics;
mod notify;
pub mod packed_records;
pub mod provider;
pub mod server;
pub mod serving;
mod transfer;
pub mod values;
pub mod zones;
// The server on the internet: cookies, rate limiting, DNS over TLS.
pub mod cookie;
mod guard;
pub mod rrl;
mod serial;
pub mod tls;
// Transfers of a signed zone to secondaries.
mod signed_transfer;
// The tail latency: batched UDP I/O, and zones copied by shard so queries never wait for a write.
mod shards;
mod udp;
// The served records' memory: nodes in sorted shards, a set's data held compactly.
mod keyed_shards;
mod name_key;
mod plain;
pub mod set_data;
// Signed answers as cheap as Knot's: answers written without hickory's message encoder.
mod wire;

pub use config::{Limits, MAX_UDP_WORKERS, Secondary, ServerConfig, ZoneConfig};
pub use cookie::{CookieSecret, CookieSecretError};
pub use metrics::ServerMetrics;
pub use provider::DnsServerProvider;
pub use rrl::RrlConfig;
pub use server::{DnsServer, ServerError};
pub use serving::{bind_serving, zones_and_provider};
pub use tls::{TlsConfig, TlsError};
pub use values::{ConfigError, NameServer};
pub use zones::{Zone, ZoneSet, Zones};
