//! The RFC2136 provider: reads zones with a zone transfer (AXFR) and writes them with dynamic updates
//! (RFC 2136), TSIG-signed (RFC 8945) unless `--rfc2136-insecure`, as external-dns's `rfc2136` provider does
//! — so BIND, Knot, PowerDNS and Windows DNS work the same way.
//!
//! What it adds over external-dns: a batch the server refuses is split until every good change has landed
//! and every bad one is named with the server's rcode; a refused TSIG key is reported as an authentication
//! failure; each change goes to the zone that contains it (longest suffix, on label boundaries); one TCP
//! connection carries a whole sync.
//!
//! ```
//! use extdns_provider_rfc2136::{Rfc2136Config, Rfc2136Provider, Setting};
//!
//! let mut config = Rfc2136Config {
//!     hosts: vec!["127.0.0.1".to_string()],
//!     zones: vec!["example.org".to_string()],
//!     tsig_keyname: "extdns".to_string(),
//!     tsig_secret: "not base64!".to_string(),
//!     tsig_secret_alg: "hmac-sha256".to_string(),
//!     ..Rfc2136Config::default()
//! };
//! // A bad TSIG secret is refused when the provider is built, before anything is sent.
//! let Err(error) = Rfc2136Provider::new(&config) else { panic!("a bad secret was accepted") };
//! assert!(matches!(error.setting(), Setting::TsigSecret));
//!
//! config.tsig_secret = "c2VjcmV0LWtleS1mb3ItZXh0ZG5z".to_string();
//! assert!(Rfc2136Provider::new(&config).is_ok());
//! ```

mod client;
mod config;
mod read;
mod tls;
mod transport;

use std::collections::{BTreeMap, HashMap};

use async_trait::async_trait;
use extdns_endpoint::{Change, DomainFilter, Endpoint, RecordType, Ttl};
use extdns_provider::batch::{self, Unit};
use extdns_provider::pace::Pacer;
use extdns_provider::{FailureKind, Provider, ProviderError, ReadState, Records, zone};
use hickory_proto::rr::rdata::TXT;
use hickory_proto::rr::{DNSClass, Name, RData, Record};

pub use client::rcode_name;
pub use config::{ConfigError, LoadBalancing, Rfc2136Config, Setting, TlsOptions, TlsSetupError};
pub use extdns_dns_wire::{TsigAlgorithm, TsigError};
pub use transport::TransportError;

#[doc(hidden)]
pub mod fuzzing {
    //! Not part of the API: the record codec and the message signing and checking, reachable only so the
    //! fuzz targets in `fuzz/` can drive the code that turns zone data into endpoints and back. Nothing
    //! outside this repository's fuzz targets may use it; it changes without notice.

    pub use crate::client::update_message;
    pub use extdns_dns_wire::codec::{canonical_txt, name, name_text, rdata, target, txt_chunks, txt_value};
    pub use extdns_dns_wire::tsig::{Key, TsigFailure, Verifier};
}

use client::{ExchangeError, Session};
use config::Settings;
use extdns_dns_wire::codec::{self, CodecError};
use read::ZoneRead;
use tls::TlsConnector;
use transport::ServerPicker;

/// Character-strings of TXT records keyed by (owner name, canonical value).
type TxtWire = HashMap<(String, String), Vec<Vec<u8>>>;

/// The provider. Cheap to share: `Arc<Rfc2136Provider>` as `Arc<dyn Provider>`.
pub struct Rfc2136Provider {
    settings: Settings,
    zone_names: Vec<Name>,
    updates: ServerPicker,
    transfers: ServerPicker,
    tls: Option<TlsConnector>,
    /// `--provider-write-rate`: every UPDATE message waits for its slot.
    pacer: Pacer,
}

impl std::fmt::Debug for Rfc2136Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rfc2136Provider")
            .field("servers", &self.settings.servers)
            .field("zones", &self.settings.zones)
            .field("key", &self.settings.key)
            .finish_non_exhaustive()
    }
}

impl Rfc2136Provider {
    /// Validate the configuration (a wrong flag is an error naming it) and prepare TLS. No network access:
    /// an unreachable server shows at the first sync, where it is retried.
    pub fn new(config: &Rfc2136Config) -> Result<Rfc2136Provider, ConfigError> {
        let settings = config.validate()?;
        let zone_names = settings
            .zones
            .iter()
            .map(|z| {
                codec::name(z).map_err(|source| ConfigError::InvalidZone {
                    zone: z.clone(),
                    source,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let tls = match &settings.tls {
            Some(opts) => Some(TlsConnector::new(opts).map_err(ConfigError::Tls)?),
            None => None,
        };
        if !settings.axfr {
            tracing::warn!(
                "zone transfers (AXFR) are off: extdns cannot list the zones' records, so it creates records \
                 but never updates or deletes them"
            );
        }
        Ok(Rfc2136Provider {
            updates: ServerPicker::new(settings.servers.clone(), settings.load_balancing),
            transfers: ServerPicker::new(settings.servers.clone(), settings.load_balancing),
            zone_names,
            tls,
            pacer: Pacer::new(None, config.write_rate),
            settings,
        })
    }

    /// The configured zones, lower-case, longest first.
    pub fn zones(&self) -> &[String] {
        &self.settings.zones
    }

    /// The zone a name belongs to: the longest configured zone it is in or equal to, on label boundaries.
    pub fn zone_for(&self, dns_name: &str) -> Option<&str> {
        self.zone_index(dns_name).map(|i| self.settings.zones[i].as_str())
    }

    fn zone_index(&self, dns_name: &str) -> Option<usize> {
        zone::closest(&self.settings.zones, dns_name, String::as_str)
    }

    fn session<'a>(&'a self, picker: &'a ServerPicker) -> Session<'a> {
        Session::new(
            picker,
            self.tls.as_ref(),
            self.settings.key.as_ref(),
            self.settings.timeout,
        )
    }

    /// The TTL written for an endpoint: its own when set, raised to `--rfc2136-min-ttl`.
    fn write_ttl(&self, ttl: Ttl) -> u32 {
        let own = if ttl.is_configured() {
            u32::try_from(ttl.0.min(i64::from(i32::MAX))).unwrap_or(0)
        } else {
            0
        };
        own.max(self.settings.min_ttl)
    }

    fn records_of(&self, wire: &TxtWire, ep: &Endpoint, ttl: u32, class: DNSClass) -> Result<Vec<Record>, CodecError> {
        let owner = codec::name(&ep.dns_name)?;
        let mut out = Vec::with_capacity(ep.targets.len());
        for target in ep.targets.iter() {
            let data = match (&ep.record_type, class) {
                // Deleting a TXT record must match its character-strings exactly as stored.
                (RecordType::Txt, DNSClass::NONE) => {
                    let key = (ep.dns_name.to_ascii_lowercase(), codec::canonical_txt(target));
                    match wire.get(&key) {
                        Some(chunks) => RData::TXT(TXT::from_bytes(chunks.iter().map(Vec::as_slice).collect())),
                        None => codec::rdata(&ep.record_type, target)?,
                    }
                }
                _ => codec::rdata(&ep.record_type, target)?,
            };
            let mut r = Record::from_rdata(owner.clone(), ttl, data);
            r.dns_class = class;
            out.push(r);
        }
        Ok(out)
    }

    /// The records one change sends: single-record deletes of what it replaces, then adds of what it writes.
    fn updates_for(&self, wire: &TxtWire, change: &Change) -> Result<Vec<Record>, CodecError> {
        match change {
            Change::Create(ep) => self.records_of(wire, ep, self.write_ttl(ep.record_ttl), DNSClass::IN),
            Change::Delete(ep) => self.records_of(wire, ep, 0, DNSClass::NONE),
            Change::Update { old, new } => {
                let mut records = self.records_of(wire, old, 0, DNSClass::NONE)?;
                records.extend(self.records_of(wire, new, self.write_ttl(new.record_ttl), DNSClass::IN)?);
                Ok(records)
            }
        }
    }

    /// The units grouped by the zone their record belongs to (its index in the zones), each group in apply
    /// order; a unit outside every zone fails on its own.
    fn by_zone<'a>(&self, units: &[Unit<'a>], failures: &mut batch::Failures) -> BTreeMap<usize, Vec<Unit<'a>>> {
        let mut out: BTreeMap<usize, Vec<Unit<'a>>> = BTreeMap::new();
        for unit in units {
            let name = &unit.change.endpoint().dns_name;
            match self.zone_index(name) {
                Some(z) => out.entry(z).or_default().push(*unit),
                None => failures.push(unit.refused(format!("no configured zone contains {name}"))),
            }
        }
        for zone_units in out.values_mut() {
            batch::sort_for_apply(zone_units);
        }
        out
    }

    /// Send one batch to `zone` as one UPDATE message. A refusal of a batch of several changes is returned
    /// as an error the shared batch helper splits on; a refusal of a single change, or one that concerns the
    /// whole zone, names each change with the server's rcode.
    async fn send_batch(
        &self,
        session: &tokio::sync::Mutex<Session<'_>>,
        wire: &TxtWire,
        zone: &Name,
        batch: &[Unit<'_>],
    ) -> Result<(), ProviderError> {
        let batch::Encoded {
            items: updates,
            sent,
            mut failures,
        } = batch::encode(batch, |change| self.updates_for(wire, change));
        if !updates.is_empty() {
            self.pacer.write().await;
            let result = session.lock().await.update(zone, &updates).await;
            match result {
                Ok(()) => tracing::debug!(zone = %zone, changes = sent.len(), "update applied"),
                Err(ExchangeError::Rcode { server, rcode }) => {
                    let reason = format!("{server} answered {} for zone {}", rcode_name(rcode), zone_text(zone));
                    if sent.len() > 1 && splittable(rcode) {
                        tracing::info!(zone = %zone, changes = sent.len(), %reason, "batch refused; splitting it");
                        return Err(ProviderError::refused(reason));
                    }
                    // NOTAUTH and NOTIMP are about the zone, not the record: nothing a new try of it mends.
                    let kind = if splittable(rcode) {
                        FailureKind::Refused
                    } else {
                        FailureKind::Fatal
                    };
                    for unit in sent {
                        tracing::warn!(record = %unit.record_name(), %reason, "change refused");
                        failures.push(unit.failure(kind, reason.clone()));
                    }
                }
                Err(e @ ExchangeError::Auth { .. }) => return Err(auth_error(self, e)),
                Err(ExchangeError::Transport(e)) => {
                    return Err(ProviderError::transient_from(
                        format!("update of zone {}", zone_text(zone)),
                        e,
                    ));
                }
                Err(e @ ExchangeError::BadAnswer { .. }) => {
                    return Err(ProviderError::Failed {
                        kind: FailureKind::Auth,
                        message: e.to_string(),
                        source: Some(Box::new(e)),
                    });
                }
            }
        }
        if failures.is_empty() {
            Ok(())
        } else {
            Err(ProviderError::Partial { failures })
        }
    }
}

/// Rcodes that can come from one change in a batch (a name the update policy forbids, a malformed record,
/// a name outside the zone), so splitting the batch finds it. NOTAUTH and NOTIMP concern the whole zone.
fn splittable(rcode: hickory_proto::op::ResponseCode) -> bool {
    !matches!(u16::from(rcode), 4 | 9)
}

fn zone_text(zone: &Name) -> String {
    codec::name_text(zone)
}

/// A server's refusal of our TSIG key (`e` is [`ExchangeError::Auth`]), naming the key and what to check.
fn auth_error(p: &Rfc2136Provider, e: ExchangeError) -> ProviderError {
    let key = p
        .settings
        .key
        .as_ref()
        .map(|k| format!("{} ({})", k.name(), k.algorithm()))
        .unwrap_or_default();
    let message = match &e {
        ExchangeError::Auth { server, detail } => format!(
            "{server} rejected TSIG key {key}: {detail}; check the key's name, secret and algorithm against the \
             server's key"
        ),
        other => format!("{other} (TSIG key {key})"),
    };
    ProviderError::Failed {
        kind: FailureKind::Auth,
        message,
        source: Some(Box::new(e)),
    }
}

/// A server's refusal of a zone transfer (`e` is [`ExchangeError::Rcode`]), naming what it must allow.
fn transfer_refused(p: &Rfc2136Provider, zone: &str, e: ExchangeError) -> ProviderError {
    let to = p
        .settings
        .key
        .as_ref()
        .map_or_else(|| "this address".to_string(), |k| format!("key {}", k.name()));
    let message = match &e {
        ExchangeError::Rcode { server, rcode } => format!(
            "{server} refused the zone transfer of {zone} ({}): the server must allow transfers of this zone to \
             {to} (BIND: allow-transfer; Knot: acl action transfer)",
            rcode_name(*rcode)
        ),
        other => format!("zone transfer of {zone}: {other}"),
    };
    ProviderError::Failed {
        kind: FailureKind::Auth,
        message,
        source: Some(Box::new(e)),
    }
}

#[async_trait]
impl Provider for Rfc2136Provider {
    async fn records(&self) -> Result<Records, ProviderError> {
        if !self.settings.axfr {
            return Ok(Records::default());
        }
        let mut session = self.session(&self.transfers);
        let mut read = ZoneRead::default();
        for (zone, zone_name) in self.settings.zones.iter().zip(&self.zone_names) {
            let zone_read = session
                .axfr(zone_name, ZoneRead::default, |read, r| read.add(r, zone_name))
                .await;
            match zone_read {
                Ok(r) => read.absorb(r),
                Err(ExchangeError::Transport(e)) => {
                    return Err(ProviderError::transient_from(format!("zone transfer of {zone}"), e));
                }
                Err(e @ ExchangeError::Auth { .. }) => return Err(auth_error(self, e)),
                Err(e @ ExchangeError::Rcode { .. }) => return Err(transfer_refused(self, zone, e)),
                Err(ExchangeError::BadAnswer { server, detail }) => {
                    return Err(ProviderError::fatal(format!(
                        "zone transfer of {zone} from {server}: {detail}"
                    )));
                }
            }
        }
        let (endpoints, wire) = read.finish();
        Ok(Records::with_state(endpoints, wire))
    }

    async fn apply(&self, read: &ReadState, units: &[Unit<'_>]) -> Result<(), ProviderError> {
        let no_wire = TxtWire::new();
        let wire = read.get::<TxtWire>().unwrap_or(&no_wire);
        let mut failures = batch::Failures::default();
        let by_zone = self.by_zone(units, &mut failures);
        let session = tokio::sync::Mutex::new(self.session(&self.updates));
        for (zone_index, zone_units) in &by_zone {
            let zone = &self.zone_names[*zone_index];
            let session = &session;
            let size = self.settings.batch_change_size;
            failures
                .absorb(batch::apply_in_batches(zone_units, size, |b| self.send_batch(session, wire, zone, b)).await)?;
        }
        failures.into_result()
    }

    /// Desired endpoints as they will read back: names in lower case, TXT targets unquoted, TTLs raised to
    /// `--rfc2136-min-ttl`, so the plan does not update records forever over a difference of spelling.
    async fn adjust_endpoints(&self, mut endpoints: Vec<Endpoint>) -> Result<Vec<Endpoint>, ProviderError> {
        for ep in &mut endpoints {
            // Names are read back in lower case (DNS names are case-insensitive).
            ep.dns_name.make_ascii_lowercase();
            if ep.record_type == RecordType::Txt {
                for t in ep.targets.iter_mut() {
                    let canonical = codec::canonical_txt(t);
                    if canonical != t.as_str() {
                        *t = canonical.into();
                    }
                }
            }
            if self.settings.min_ttl > 0
                && ep.record_ttl.is_configured()
                && ep.record_ttl.0 < i64::from(self.settings.min_ttl)
            {
                ep.record_ttl = Ttl(i64::from(self.settings.min_ttl));
            }
        }
        Ok(endpoints)
    }

    fn domain_filter(&self) -> DomainFilter {
        DomainFilter::new(&self.settings.zones, &[] as &[String])
    }

    /// The configured zone an UPDATE for the name goes to: the closest (an UPDATE names one zone, and
    /// every record in it must be in that zone).
    fn placement(&self, _read: &ReadState, name: &str) -> zone::Placement {
        match self.zone_index(name) {
            Some(z) => zone::Placement::Zone(z),
            None if self.settings.zones.is_empty() => zone::Placement::Unknown,
            None => zone::Placement::Outside,
        }
    }

    /// Its read state is how TXT records read were split into strings; records it writes are split the canonical way, which is what an absent entry means.
    fn read_state_outlives_writes(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn provider(zones: &[&str]) -> Rfc2136Provider {
        let config = Rfc2136Config {
            hosts: vec!["127.0.0.1".into()],
            port: 1,
            zones: zones.iter().map(|z| z.to_string()).collect(),
            insecure: true,
            axfr: true,
            min_ttl: std::time::Duration::from_secs(60),
            ..Rfc2136Config::default()
        };
        match Rfc2136Provider::new(&config) {
            Ok(p) => p,
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn the_registry_is_told_which_configured_zone_an_update_goes_to() {
        let p = provider(&["example.org", "sub.example.org"]);
        let at = |name: &str| p.placement(&ReadState::default(), name);
        assert_eq!(
            at("a-example.org"),
            zone::Placement::Outside,
            "a top apex's ownership name"
        );
        assert!(matches!(at("sub.example.org"), zone::Placement::Zone(_)));
        assert_eq!(at("a-sub.example.org"), at("web.example.org"), "in the parent zone");
        assert!(at("a-sub.example.org") != at("sub.example.org"));
    }

    #[test]
    fn each_change_goes_to_the_longest_zone_containing_it() {
        let p = provider(&["example.org", "k8s.example.org", "2.0.192.in-addr.arpa"]);
        assert_eq!(p.zone_for("web.k8s.example.org"), Some("k8s.example.org"));
        assert_eq!(p.zone_for("k8s.example.org."), Some("k8s.example.org"));
        assert_eq!(p.zone_for("WEB.example.org"), Some("example.org"));
        assert_eq!(p.zone_for("10.2.0.192.in-addr.arpa"), Some("2.0.192.in-addr.arpa"));
        // Suffix matches only on label boundaries.
        assert_eq!(p.zone_for("notexample.org"), None);
        assert_eq!(p.zone_for("example.com"), None);
    }

    #[test]
    fn changes_are_grouped_by_zone_deletes_first() {
        let p = provider(&["example.org", "k8s.example.org"]);
        let a = Endpoint::new("a.example.org", RecordType::A, ["192.0.2.1"]);
        let b = Endpoint::new("b.k8s.example.org", RecordType::A, ["192.0.2.2"]);
        let c = Endpoint::new("a.example.org", RecordType::Cname, ["b.k8s.example.org"]);
        let changes = [Change::Create(c), Change::Create(b), Change::Delete(a)];
        let units: Vec<Unit<'_>> = changes.iter().map(Unit::new).collect();
        let mut failures = batch::Failures::default();
        let zones = p.by_zone(&units, &mut failures);
        assert!(failures.into_result().is_ok());
        let names: Vec<Vec<String>> = zones
            .values()
            .map(|us| {
                us.iter()
                    .map(|u| format!("{} {}", u.change.action(), u.record_name()))
                    .collect()
            })
            .collect();
        assert_eq!(
            names,
            vec![
                vec!["create b.k8s.example.org A".to_string()],
                vec!["delete a.example.org A".into(), "create a.example.org CNAME".into()]
            ]
        );
    }

    #[test]
    fn a_change_outside_every_zone_fails_alone() {
        let p = provider(&["example.org"]);
        let changes = [
            Change::Create(Endpoint::new("web.example.com", RecordType::A, ["192.0.2.1"])),
            Change::Create(Endpoint::new("ok.example.org", RecordType::A, ["192.0.2.3"])),
        ];
        let units: Vec<Unit<'_>> = changes.iter().map(Unit::new).collect();
        let mut failures = batch::Failures::default();
        let zones = p.by_zone(&units, &mut failures);
        assert_eq!(zones.values().map(Vec::len).sum::<usize>(), 1);
        let Err(ProviderError::Partial { failures }) = failures.into_result() else {
            panic!("expected the out-of-zone change to fail")
        };
        assert_eq!(
            failures.iter().map(|f| f.key.dns_name.as_str()).collect::<Vec<_>>(),
            vec!["web.example.com"]
        );
    }

    #[test]
    fn a_bad_target_is_an_error_naming_it() {
        let p = provider(&["example.org"]);
        let bad = Change::Create(Endpoint::new("bad.example.org", RecordType::A, ["not-an-ip"]));
        let got = p.updates_for(&TxtWire::new(), &bad);
        assert!(
            got.as_ref().is_err_and(|e| e.to_string().contains("not-an-ip")),
            "{:?}",
            got.map(|r| r.len())
        );
    }

    #[test]
    fn written_ttls_are_raised_to_the_minimum() {
        let p = provider(&["example.org"]);
        assert_eq!(p.write_ttl(Ttl(0)), 60);
        assert_eq!(p.write_ttl(Ttl(30)), 60);
        assert_eq!(p.write_ttl(Ttl(3600)), 3600);
    }

    #[test]
    fn an_update_removes_the_old_records_and_adds_the_new_ones() {
        let p = provider(&["example.org"]);
        let old = Endpoint::new("w.example.org", RecordType::A, ["192.0.2.1"]).with_ttl(Ttl(300));
        let new = Endpoint::new("w.example.org", RecordType::A, ["192.0.2.2"]).with_ttl(Ttl(600));
        let records = p
            .updates_for(&TxtWire::new(), &Change::update(old, new))
            .unwrap_or_default();
        assert_eq!(records.len(), 2);
        assert_eq!((records[0].dns_class, records[0].ttl), (DNSClass::NONE, 0));
        assert_eq!((records[1].dns_class, records[1].ttl), (DNSClass::IN, 600));
    }

    #[tokio::test]
    async fn adjust_endpoints_unquotes_txt_and_raises_low_ttls() {
        let p = provider(&["example.org"]);
        let eps = vec![
            Endpoint::new("t.example.org", RecordType::Txt, ["\"heritage=external-dns\""]).with_ttl(Ttl(10)),
            Endpoint::new("A.Example.org", RecordType::A, ["192.0.2.1"]),
        ];
        let out = p.adjust_endpoints(eps).await.unwrap_or_default();
        assert_eq!(out[1].dns_name, "a.example.org");
        assert_eq!(out[0].targets.0, vec!["heritage=external-dns".to_string()]);
        assert_eq!(out[0].record_ttl, Ttl(60));
        assert_eq!(out[1].record_ttl, Ttl(0), "an unset TTL stays unset");
    }

    #[test]
    fn tls_file_errors_name_their_setting() {
        let config = |tls: TlsOptions| Rfc2136Config {
            hosts: vec!["127.0.0.1".into()],
            zones: vec!["example.org".into()],
            insecure: true,
            tls: Some(tls),
            ..Rfc2136Config::default()
        };
        let setting = |tls| Rfc2136Provider::new(&config(tls)).err().map(|e| e.setting());
        let ca = TlsOptions {
            ca_file: Some("/nonexistent/ca.pem".into()),
            ..TlsOptions::default()
        };
        assert_eq!(setting(ca), Some(Setting::TlsCa));
        let key = TlsOptions {
            client_cert: Some("/nonexistent/cert.pem".into()),
            client_key: Some("/nonexistent/key.pem".into()),
            ..TlsOptions::default()
        };
        assert_eq!(setting(key), Some(Setting::TlsClientCert));
    }

    #[test]
    fn the_domain_filter_is_the_configured_zones() {
        let p = provider(&["example.org"]);
        let f = p.domain_filter();
        assert!(f.matches("a.example.org"));
        assert!(!f.matches("a.example.com"));
    }

    #[test]
    fn refusals_split_but_zone_wide_answers_do_not() {
        use hickory_proto::op::ResponseCode;
        assert!(splittable(ResponseCode::Refused));
        assert!(splittable(ResponseCode::NotZone));
        assert!(splittable(ResponseCode::FormErr));
        assert!(!splittable(ResponseCode::NotAuth));
        assert!(!splittable(ResponseCode::NotImp));
    }
}
