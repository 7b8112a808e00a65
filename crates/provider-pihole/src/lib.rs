//! The Pi-hole provider: Pi-hole's local DNS records through its v6 REST API, as external-dns's `pihole`
//! provider (v0.22 and later) writes them. A and AAAA records are items `"IP HOSTNAME"` of `dns.hosts`,
//! CNAME records items `"NAME,TARGET[,TTL]"` of `dns.cnameRecords`; each target is one item, added with
//! `PUT /api/config/dns/<list>/<item>` and removed with `DELETE`. Pi-hole stores no other record type, so
//! external-dns's tutorial runs it with `--registry=noop`.
//!
//! Session: the first request logs in (`POST /api/auth`), every request sends the session id as
//! `X-FTL-SID`, and a 401 (the session expired: Pi-hole ends it after `webserver.session.timeout` without use)
//! logs in again once and repeats the request. A Pi-hole without a password is called without a session.
//!
//! Differences from external-dns: a change is applied whole or not at all (the items of a change that
//! landed before one was refused are taken back), so one refused record names Pi-hole's reason and leaves
//! the others to land, where external-dns stops the whole sync at the first error; an update writes only
//! the targets that differ (adding before removing, so a name keeps an address throughout), and an update
//! of a CNAME's TTL alone is written (external-dns skips it); entries with several names (`"IP a b"`,
//! `"a,b,TARGET"`, as Pi-hole allows) are read name by name and never rewritten, where external-dns misreads
//! them; a record whose type Pi-hole cannot store (the TXT registry's ownership records), a wildcard, a
//! CNAME with several targets or a set identifier is refused with a warning naming it, never reported as
//! written. A wrong password is reported by the first sync, not at startup.
//!
//! ```
//! use extdns_provider_pihole::{PiholeConfig, PiholeProvider};
//!
//! // Building the provider checks its settings; Pi-hole is first called (and logged in to) by the first sync.
//! let mut config = PiholeConfig::new("http://pi.hole");
//! config.password = Some("secret".to_string());
//! let provider = PiholeProvider::new(config)?;
//! # drop(provider);
//! # Ok::<(), extdns_provider_pihole::ConfigError>(())
//! ```

mod api;
mod config;

use std::collections::HashMap;
use std::net::IpAddr;

use async_trait::async_trait;
use extdns_endpoint::{Change, DomainFilter, Endpoint, RecordType, Ttl};
use extdns_provider::batch::{self, Failures, Unit};
use extdns_provider::gather::Gather;
use extdns_provider::{CallError, FailureKind, IndexedProvider, ProviderError};

pub use api::{ApiError, List, Outcome, path_escape};
pub use config::{ConfigError, PiholeConfig};

use api::Api;

/// One item of one of Pi-hole's two lists.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Item {
    list: List,
    text: String,
}

/// One write: add or remove an item.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Op {
    add: bool,
    item: Item,
}

/// What a read learnt: for each record (lower-case name, type, target), the item it was read from as
/// Pi-hole spells it and how many names that item serves.
/// Opaque outside this crate: the provider's [`IndexedProvider::Index`], kept in the read's state.
#[derive(Debug, Default)]
pub struct Index {
    items: HashMap<(String, RecordType, String), Stored>,
}

#[derive(Debug, Clone)]
struct Stored {
    text: String,
    names: usize,
}

/// The provider. Cheap to share: `Arc<PiholeProvider>` as `Arc<dyn Provider>`.
#[derive(Debug)]
pub struct PiholeProvider {
    api: Api,
    config: PiholeConfig,
}

impl PiholeProvider {
    /// Checks the settings and builds the HTTP client; makes no request, so a wrong password shows on the
    /// first sync as an authentication error.
    pub fn new(config: PiholeConfig) -> Result<PiholeProvider, ConfigError> {
        let server = config.server.trim();
        if server.is_empty() {
            return Err(ConfigError::NoServer);
        }
        if !(server.starts_with("http://") || server.starts_with("https://")) {
            return Err(ConfigError::BadServer(config.server.clone()));
        }
        Ok(PiholeProvider {
            api: Api::new(&config)?,
            config,
        })
    }

    /// The writes of one unit, in order, or why Pi-hole cannot hold it.
    fn ops(&self, index: &Index, unit: &Unit<'_>) -> Result<Vec<Op>, Unfit> {
        let mut ops = Vec::new();
        for change in unit.changes() {
            check(change.endpoint())?;
            if let Some(previous) = change.previous() {
                check(previous)?;
            }
            match change {
                Change::Create(ep) => ops.extend(ep.targets.iter().map(|t| Op {
                    add: true,
                    item: item(ep, t.as_str()),
                })),
                Change::Delete(ep) => {
                    for t in ep.targets.iter() {
                        ops.push(Op {
                            add: false,
                            item: stored(index, ep, t.as_str())?,
                        });
                    }
                }
                Change::Update { old, new } => {
                    let has = |ep: &Endpoint, t: &str| ep.targets.iter().any(|x| x.as_str() == t);
                    let mut removes = Vec::new();
                    for t in old.targets.iter() {
                        let kept = has(new, t.as_str()) && item(old, t.as_str()) == item(new, t.as_str());
                        if !kept {
                            removes.push(Op {
                                add: false,
                                item: stored(index, old, t.as_str())?,
                            });
                        }
                    }
                    let adds = new
                        .targets
                        .iter()
                        .filter(|t| !(has(old, t.as_str()) && item(old, t.as_str()) == item(new, t.as_str())))
                        .map(|t| Op {
                            add: true,
                            item: item(new, t.as_str()),
                        });
                    // dnsmasq takes one CNAME per name, so the old goes first; an address is added before
                    // the one it replaces goes, so the name keeps answering.
                    if new.record_type == RecordType::Cname {
                        ops.extend(removes);
                        ops.extend(adds);
                    } else {
                        ops.extend(adds);
                        ops.extend(removes);
                    }
                }
            }
        }
        Ok(ops)
    }

    /// Runs a unit's writes in order. When one fails, the ones that changed Pi-hole are taken back (last
    /// first), so the unit lands whole or not at all; a failure to take one back is logged.
    async fn run(&self, unit: &Unit<'_>, ops: &[Op]) -> Result<(), ApiError> {
        let mut done: Vec<&Op> = Vec::new();
        for op in ops {
            match self.api.write(op.item.list, &op.item.text, op.add).await {
                Ok(Outcome::Changed) => done.push(op),
                Ok(Outcome::AlreadyDone) => {
                    tracing::debug!(item = %op.item.text, add = op.add, "Pi-hole already had it so");
                }
                Err(e) => {
                    for undo in done.iter().rev() {
                        if let Err(u) = self.api.write(undo.item.list, &undo.item.text, !undo.add).await {
                            tracing::warn!(record = %unit.record_name(), item = %undo.item.text, error = %u,
                                "could not take back a write of a change that failed");
                        }
                    }
                    return Err(e);
                }
            }
        }
        Ok(())
    }
}

/// Why Pi-hole cannot hold a record, or cannot change it without touching other names.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Unfit {
    /// Pi-hole's local DNS records are addresses and CNAMEs only.
    #[error(
        "Pi-hole stores only A, AAAA and CNAME records, not {0} (with Pi-hole, run --registry=noop as \
         external-dns's Pi-hole tutorial says)"
    )]
    RecordType(RecordType),
    /// A name with `*`.
    #[error("Pi-hole cannot serve wildcard names")]
    Wildcard,
    /// A record with a set identifier.
    #[error("Pi-hole has no set identifiers")]
    SetIdentifier,
    /// A CNAME with several targets.
    #[error("a Pi-hole CNAME record has one target")]
    CnameTargets,
    /// A record without targets.
    #[error("the record has no target")]
    NoTarget,
    /// The item to remove also serves other names, which removing it would take with it.
    #[error(
        "the Pi-hole entry {0:?} also serves other names; extdns does not rewrite shared entries, edit it in \
         Pi-hole"
    )]
    SharedEntry(String),
}

/// Why Pi-hole cannot hold `ep`, if it cannot.
fn check(ep: &Endpoint) -> Result<(), Unfit> {
    if !matches!(ep.record_type, RecordType::A | RecordType::Aaaa | RecordType::Cname) {
        return Err(Unfit::RecordType(ep.record_type.clone()));
    }
    if ep.dns_name.contains('*') {
        return Err(Unfit::Wildcard);
    }
    if !ep.set_identifier.is_empty() {
        return Err(Unfit::SetIdentifier);
    }
    if ep.record_type == RecordType::Cname && ep.targets.len() > 1 {
        return Err(Unfit::CnameTargets);
    }
    if ep.targets.is_empty() {
        return Err(Unfit::NoTarget);
    }
    Ok(())
}

/// The item of one target of `ep`, as external-dns writes it.
fn item(ep: &Endpoint, target: &str) -> Item {
    let name = ep.dns_name.as_str();
    if ep.record_type == RecordType::Cname {
        let text = if ep.record_ttl.is_configured() {
            format!("{name},{target},{}", ep.record_ttl.0)
        } else {
            format!("{name},{target}")
        };
        Item {
            list: List::Cnames,
            text,
        }
    } else {
        Item {
            list: List::Hosts,
            text: format!("{target} {name}"),
        }
    }
}

/// The item a record to remove was read from, as Pi-hole spells it (or as extdns writes it, for a record
/// not read); refused when that item also serves other names, which removing it would take with it.
fn stored(index: &Index, ep: &Endpoint, target: &str) -> Result<Item, Unfit> {
    let mut it = item(ep, target);
    let key = (
        ep.dns_name.to_ascii_lowercase(),
        ep.record_type.clone(),
        target.to_string(),
    );
    if let Some(s) = index.items.get(&key) {
        if s.names > 1 {
            return Err(Unfit::SharedEntry(s.text.clone()));
        }
        it.text = s.text.clone();
    }
    Ok(it)
}

/// One item read back: its names, type, target and TTL.
#[derive(Debug, PartialEq)]
struct Parsed {
    names: Vec<String>,
    rtype: RecordType,
    target: String,
    ttl: Ttl,
}

/// `"IP HOSTNAME [HOSTNAME...] [# comment]"`, as Pi-hole validates `dns.hosts`.
fn parse_host(line: &str) -> Option<Parsed> {
    let mut fields = line.split_whitespace();
    let ip = fields.next().and_then(|f| f.parse::<IpAddr>().ok());
    let names: Vec<String> = fields.take_while(|f| !f.starts_with('#')).map(str::to_string).collect();
    match ip {
        Some(ip) if !names.is_empty() => Some(Parsed {
            names,
            rtype: if ip.is_ipv4() { RecordType::A } else { RecordType::Aaaa },
            target: ip.to_string(),
            ttl: Ttl(0),
        }),
        _ => {
            tracing::warn!(
                entry = line,
                "skipping a Pi-hole dns.hosts entry that is not \"IP HOSTNAME\""
            );
            None
        }
    }
}

/// `"CNAME[,CNAME...],TARGET[,TTL]"`, as Pi-hole validates `dns.cnameRecords` (and dnsmasq's `cname=`
/// reads it: a last field that is a number is the TTL).
fn parse_cname(line: &str) -> Option<Parsed> {
    let mut fields: Vec<&str> = line.split(',').map(str::trim).collect();
    let mut ttl = Ttl(0);
    if fields.len() >= 3
        && let Some(t) = fields.last().and_then(|f| f.parse::<u32>().ok())
    {
        ttl = Ttl(i64::from(t));
        fields.pop();
    }
    if fields.len() < 2 || fields.iter().any(|f| f.is_empty()) {
        tracing::warn!(
            entry = line,
            "skipping a Pi-hole dns.cnameRecords entry that is not \"NAME,TARGET[,TTL]\""
        );
        return None;
    }
    let target = fields.pop().unwrap_or_default().to_string();
    Some(Parsed {
        names: fields.into_iter().map(str::to_string).collect(),
        rtype: RecordType::Cname,
        target,
        ttl,
    })
}

#[async_trait]
impl IndexedProvider for PiholeProvider {
    type Index = Index;

    async fn read(&self) -> Result<(Vec<Endpoint>, Self::Index), ProviderError> {
        let hosts = self
            .api
            .list(List::Hosts)
            .await
            .map_err(|e| ProviderError::from_call("reading Pi-hole's dns.hosts", e))?;
        let cnames = self
            .api
            .list(List::Cnames)
            .await
            .map_err(|e| ProviderError::from_call("reading Pi-hole's dns.cnameRecords", e))?;
        let mut gathered = Gather::default();
        let mut index = Index::default();
        let records = hosts
            .iter()
            .filter_map(|line| parse_host(line).map(|r| (line, r)))
            .chain(cnames.iter().filter_map(|line| parse_cname(line).map(|r| (line, r))));
        for (line, parsed) in records {
            for name in &parsed.names {
                let rtype = parsed.rtype.clone();
                gathered.add(name, &rtype, &parsed.target, || {
                    Endpoint::new(name, rtype.clone(), [parsed.target.as_str()]).with_ttl(parsed.ttl)
                });
                index.items.insert(
                    (name.to_ascii_lowercase(), rtype, parsed.target.clone()),
                    Stored {
                        text: line.clone(),
                        names: parsed.names.len(),
                    },
                );
            }
        }
        Ok((gathered.into_endpoints(), index))
    }

    async fn write(&self, index: &Index, units: &[Unit<'_>]) -> Result<(), ProviderError> {
        let mut sorted = units.to_vec();
        batch::sort_for_apply(&mut sorted);
        let mut failures = Failures::default();
        for unit in &sorted {
            let ops = match self.ops(index, unit) {
                Ok(ops) => ops,
                Err(reason) => {
                    failures.refuse(unit, reason);
                    continue;
                }
            };
            match self.run(unit, &ops).await {
                Ok(()) => tracing::info!(record = %unit.record_name(), action = unit.change.action(), "applied"),
                // Pi-hole down or the password refused: every other write would fail the same way.
                Err(e) if e.kind().is_transient() || e.kind() == FailureKind::Auth => {
                    return Err(ProviderError::from_call(format!("writing {}", unit.record_name()), e));
                }
                Err(e) => {
                    tracing::warn!(record = %unit.record_name(), error = %e, "Pi-hole refused the change");
                    failures.push(unit.failure(e.kind(), e.to_string()));
                }
            }
        }
        failures.into_result()
    }

    fn canonicalise(&self, ep: &mut Endpoint) {
        // Pi-hole's hosts entries have no TTL (it answers with its local TTL), so a TTL asked for an address
        // is not a difference to write again every sync.
        if matches!(ep.record_type, RecordType::A | RecordType::Aaaa) {
            ep.record_ttl = Ttl(0);
        }
    }

    fn domains(&self) -> DomainFilter {
        self.config.domain_filter.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pi-hole's lists hold addresses and CNAMEs: TLSA, SVCB and HTTPS are refused naming the type.
    #[test]
    fn tlsa_svcb_and_https_are_refused_by_name() {
        for (rt, target) in extdns_test_support::rdata::structured_samples() {
            let ep = Endpoint::new("web.example.org", rt.clone(), [target]);
            let why = check(&ep).err().map(|e| e.to_string()).unwrap_or_default();
            assert!(why.contains(&format!("not {rt} ")), "{rt}: {why}");
        }
    }

    #[test]
    fn hosts_entries_are_read_name_by_name() {
        let p = parse_host("192.0.2.1\tweb.example.org  www.example.org # set by hand");
        assert_eq!(
            p,
            Some(Parsed {
                names: vec!["web.example.org".into(), "www.example.org".into()],
                rtype: RecordType::A,
                target: "192.0.2.1".into(),
                ttl: Ttl(0),
            })
        );
        assert_eq!(
            parse_host("2001:db8::1 v6.example.org").map(|p| p.rtype),
            Some(RecordType::Aaaa)
        );
        assert_eq!(parse_host("192.0.2.1"), None);
        assert_eq!(parse_host("not-an-ip web.example.org"), None);
    }

    #[test]
    fn cname_entries_take_a_last_number_as_the_ttl() {
        let p = parse_cname("alias.example.org,web.example.org,300");
        assert_eq!(
            p.map(|p| (p.names, p.target, p.ttl)),
            Some((vec!["alias.example.org".into()], "web.example.org".into(), Ttl(300)))
        );
        let p = parse_cname("a.example.org,b.example.org,web.example.org");
        assert_eq!(
            p.map(|p| (p.names, p.target, p.ttl)),
            Some((
                vec!["a.example.org".into(), "b.example.org".into()],
                "web.example.org".into(),
                Ttl(0)
            ))
        );
        assert_eq!(parse_cname("alias.example.org"), None);
        assert_eq!(parse_cname("alias.example.org,,web.example.org"), None);
    }

    #[test]
    fn items_are_spelt_as_external_dns_writes_them() {
        let a = Endpoint::new("web.example.org", RecordType::A, ["192.0.2.1"]);
        assert_eq!(item(&a, "192.0.2.1").text, "192.0.2.1 web.example.org");
        let c = Endpoint::new("alias.example.org", RecordType::Cname, ["web.example.org"]);
        assert_eq!(item(&c, "web.example.org").text, "alias.example.org,web.example.org");
        let c = c.with_ttl(Ttl(60));
        assert_eq!(item(&c, "web.example.org").text, "alias.example.org,web.example.org,60");
        assert_eq!(item(&c, "web.example.org").list, List::Cnames);
    }

    #[test]
    fn what_pihole_cannot_hold_is_refused_with_the_reason() {
        let txt = Endpoint::new("a-web.example.org", RecordType::Txt, ["\"heritage=external-dns\""]);
        assert!(check(&txt).is_err_and(|r| r.to_string().contains("--registry=noop")));
        let wild = Endpoint::new("*.example.org", RecordType::A, ["192.0.2.1"]);
        assert_eq!(check(&wild), Err(Unfit::Wildcard));
        let two = Endpoint::new("c.example.org", RecordType::Cname, ["a.example.org", "b.example.org"]);
        assert_eq!(check(&two), Err(Unfit::CnameTargets));
        let mut weighted = Endpoint::new("w.example.org", RecordType::A, ["192.0.2.1"]);
        weighted.set_identifier = "eu".into();
        assert_eq!(check(&weighted), Err(Unfit::SetIdentifier));
    }
}
