//! How extdns prints what it would publish and what it would change, for people (aligned tables) and for
//! scripts (JSON with external-dns's field names): `extdns endpoints` ([`endpoints`]) and `extdns plan`
//! ([`plan`]), for one provider or per provider object. Pure: values in, text out; the commands that compute
//! the values are the binary's.
//!
//! ```
//! use extdns_endpoint::{Endpoint, RecordType};
//!
//! let mut records = vec![
//!     Endpoint::new("b.example.org", RecordType::A, ["192.0.2.2"]),
//!     Endpoint::new("a.example.org", RecordType::A, ["192.0.2.1"]),
//! ];
//! extdns_report::endpoints::sort(&mut records);
//! let table = extdns_report::endpoints::render_table(&records);
//! assert_eq!(table.lines().nth(1), Some("a.example.org   A      -     192.0.2.1   -"));
//! ```

pub mod endpoints;
pub mod plan;
pub mod table;
