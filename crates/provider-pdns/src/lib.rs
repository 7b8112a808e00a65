//! The PowerDNS provider: reads and writes the zones of a PowerDNS Authoritative server (4.1 or later)
//! through its HTTP API, as external-dns's `pdns` provider does: zones are listed and picked by the domain
//! filter, each record change becomes an rrset `REPLACE` or `DELETE` in a `PATCH` of its zone, CNAMEs
//! marked as alias (`--prefer-alias` or the `alias` property) are written as ALIAS rrsets.
//!
//! What it adds over external-dns: TXT data is quoted as PowerDNS requires (external-dns sends unquoted
//! values PowerDNS refuses); a PATCH PowerDNS refuses (it applies a PATCH in one transaction, all or
//! nothing) is split until every good change has landed and every bad one is named with PowerDNS's reason;
//! rate limits and 5xx answers are retried, then reported as transient; the zones of a read are the zones
//! the changes planned from it are written to.
//!
//! ```
//! use extdns_provider_pdns::{PdnsConfig, PdnsProvider};
//!
//! // Building the provider checks its settings; the server is first contacted by the first sync.
//! let provider = PdnsProvider::new(&PdnsConfig::new("http://127.0.0.1:8081", "api-key"))?;
//! # drop(provider);
//! assert!(PdnsProvider::new(&PdnsConfig::new("not a url", "api-key")).is_err());
//! # Ok::<(), extdns_provider_pdns::ConfigError>(())
//! ```

mod api;
mod config;
mod wire;

use async_trait::async_trait;
use extdns_endpoint::{DomainFilter, Endpoint, RecordType};
use extdns_provider::batch::{self, Unit};
use extdns_provider::{CallError, FailureKind, Provider, ProviderError, ReadState, Records, zone};
use reqwest::StatusCode;

pub use api::ApiError;
pub use config::{ConfigError, PdnsConfig, Setting, TlsOptions};
pub use wire::{ALIAS_PROPERTY, DEFAULT_TTL};

use api::Api;
use wire::{Patch, ZoneInfo};

/// A zone extdns manages.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Zone {
    /// The API's id of the zone (used in URLs).
    id: String,
    /// Canonical name: lower case, trailing dot.
    name: String,
}

/// What a read hands to the write: the zones it read, longest name first.
#[derive(Debug)]
struct ReadZones(Vec<Zone>);

/// The provider. Cheap to share: `Arc<PdnsProvider>` as `Arc<dyn Provider>`.
#[derive(Debug)]
pub struct PdnsProvider {
    api: Api,
    domain_filter: DomainFilter,
    batch_change_size: usize,
}

impl PdnsProvider {
    /// Validate the configuration and prepare the HTTP client (TLS files are read here). No network access:
    /// an unreachable server shows at the first sync, where it is retried.
    pub fn new(config: &PdnsConfig) -> Result<PdnsProvider, ConfigError> {
        if config.batch_change_size < 1 {
            return Err(ConfigError::BatchSize);
        }
        Ok(PdnsProvider {
            api: Api::new(config)?,
            domain_filter: config.domain_filter.clone(),
            batch_change_size: config.batch_change_size,
        })
    }

    /// The zones of the server the domain filter selects (a zone whose name or one of whose sub-domains it
    /// matches, as external-dns picks them), longest name first so a record goes to its closest zone.
    async fn zones(&self) -> Result<Vec<Zone>, ProviderError> {
        let listed = self.api.list_zones().await.map_err(|e| match e {
            // The zones of an unknown server id: a setting to fix, not something a retry cures.
            ApiError::Status {
                status: StatusCode::NOT_FOUND,
                ..
            } => ProviderError::Failed {
                kind: FailureKind::Fatal,
                message: format!("{e}; check the PowerDNS server id"),
                source: Some(Box::new(e)),
            },
            e => provider_error(e),
        })?;
        Ok(select_zones(&self.domain_filter, listed))
    }

    /// Send one batch to `zone` as one PATCH. A refusal of several changes is returned as an error the
    /// shared batch helper splits on; a refusal of a single change names it with PowerDNS's reason.
    async fn send_batch(&self, zone: &Zone, batch: &[Unit<'_>]) -> Result<(), ProviderError> {
        let batch::Encoded {
            items: rrsets,
            sent,
            mut failures,
        } = batch::encode(batch, |change| wire::rrset_changes(change, &zone.name));
        if !rrsets.is_empty() {
            match self.api.patch(&zone.id, &Patch { rrsets }).await {
                Ok(()) => tracing::debug!(zone = %zone.name, changes = sent.len(), "zone patched"),
                Err(e) if e.kind() == FailureKind::Refused => {
                    let reason = format!("PowerDNS refused the change to zone {}: {e}", zone.name);
                    if sent.len() > 1 {
                        tracing::info!(zone = %zone.name, changes = sent.len(), %reason, "patch refused; splitting it");
                        return Err(ProviderError::caused(FailureKind::Refused, reason, e));
                    }
                    for unit in sent {
                        tracing::warn!(record = %unit.record_name(), %reason, "change refused");
                        failures.push(unit.refused(reason.clone()));
                    }
                }
                Err(e) => return Err(provider_error(e)),
            }
        }
        if failures.is_empty() {
            Ok(())
        } else {
            Err(ProviderError::Partial { failures })
        }
    }
}

/// The zones `filter` selects from a listing, canonical names, longest first.
fn select_zones(filter: &DomainFilter, listed: Vec<ZoneInfo>) -> Vec<Zone> {
    let mut zones: Vec<Zone> = listed
        .into_iter()
        .filter(|z| zone::selected(filter, &z.name, true))
        .map(|z| Zone {
            name: wire::fqdn(&z.name),
            id: z.id,
        })
        .collect();
    zones.sort_by(|a, b| b.name.len().cmp(&a.name.len()).then_with(|| a.name.cmp(&b.name)));
    zones
}

/// The closest zone containing `name`.
fn zone_for<'z>(zones: &'z [Zone], name: &str) -> Option<(usize, &'z Zone)> {
    zone::closest(zones, name, |z| &z.name).map(|i| (i, &zones[i]))
}

/// How an API failure reaches the controller, of the kind the call named (rate limits, 5xx, network
/// errors and a zone that vanished since the read are transient; the controller backs off and syncs
/// again); a refused key says which setting to check.
fn provider_error(e: ApiError) -> ProviderError {
    match e.kind() {
        FailureKind::Auth => ProviderError::Failed {
            kind: FailureKind::Auth,
            message: format!("{e}; check the PowerDNS API key and the server's api-key setting"),
            source: Some(Box::new(e)),
        },
        kind => ProviderError::Failed {
            kind,
            message: e.to_string(),
            source: Some(Box::new(e)),
        },
    }
}

#[async_trait]
impl Provider for PdnsProvider {
    async fn records(&self) -> Result<Records, ProviderError> {
        let zones = self.zones().await?;
        let mut endpoints: Vec<Endpoint> = Vec::new();
        for zone in &zones {
            // Any failed zone fails the whole read: nothing may be planned from a partial view.
            let data = self.api.zone(&zone.id).await.map_err(provider_error)?;
            endpoints.extend(
                data.rrsets
                    .iter()
                    .filter_map(|rrset| wire::endpoint_of(rrset, &zone.name)),
            );
        }
        Ok(Records::with_state(endpoints, ReadZones(zones)))
    }

    async fn apply(&self, read: &ReadState, units: &[Unit<'_>]) -> Result<(), ProviderError> {
        let held = read
            .get_or_read(|| async { Ok(ReadZones(self.zones().await?)) })
            .await?;
        let zones = held.0.as_slice();
        let mut failures = batch::Failures::default();
        let mut by_zone: Vec<Vec<Unit<'_>>> = vec![Vec::new(); zones.len()];
        for unit in units {
            let name = &unit.change.endpoint().dns_name;
            match zone_for(zones, name) {
                Some((i, _)) => by_zone[i].push(*unit),
                None => failures.push(unit.refused(format!("no PowerDNS zone extdns manages contains {name}"))),
            }
        }
        for (zone, zone_units) in zones.iter().zip(&mut by_zone) {
            if zone_units.is_empty() {
                continue;
            }
            batch::sort_for_apply(zone_units);
            let result =
                batch::apply_in_batches(zone_units, self.batch_change_size, |b| self.send_batch(zone, b)).await;
            failures.absorb(result)?;
        }
        failures.into_result()
    }

    /// Desired endpoints as they will read back: names in lower case and TXT data quoted (PowerDNS stores
    /// both so), no alias property on a CNAME at a zone's apex (it is an ALIAS there either way), so the plan
    /// does not update records forever over a difference of spelling.
    async fn adjust_endpoints(&self, mut endpoints: Vec<Endpoint>) -> Result<Vec<Endpoint>, ProviderError> {
        let has_alias_at = |ep: &Endpoint| {
            ep.record_type == RecordType::Cname && ep.provider_specific.get(wire::ALIAS_PROPERTY).is_some()
        };
        // The zones are listed only when a marked CNAME could be at an apex.
        let apexes: Vec<Zone> = if endpoints.iter().any(has_alias_at) {
            self.zones().await?
        } else {
            Vec::new()
        };
        for ep in &mut endpoints {
            if has_alias_at(ep) && apexes.iter().any(|z| wire::is_apex(&ep.dns_name, &z.name)) {
                ep.provider_specific.remove(wire::ALIAS_PROPERTY);
            }
            ep.dns_name.make_ascii_lowercase();
            if ep.record_type == RecordType::Txt {
                for t in ep.targets.iter_mut() {
                    if let std::borrow::Cow::Owned(quoted) = wire::quote_txt(t.as_str()) {
                        *t = quoted.into();
                    }
                }
            }
        }
        Ok(endpoints)
    }

    fn domain_filter(&self) -> DomainFilter {
        self.domain_filter.clone()
    }

    /// The zone of the read a name is patched into: the closest.
    fn placement(&self, read: &ReadState, name: &str) -> zone::Placement {
        match read.get::<ReadZones>() {
            Some(r) => zone::Placement::closest(&r.0, name, |z| &z.name),
            None => zone::Placement::Unknown,
        }
    }

    /// Its read state is the zone list, which writes do not change.
    fn read_state_outlives_writes(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(name: &str) -> ZoneInfo {
        ZoneInfo {
            id: name.into(),
            name: name.into(),
        }
    }

    #[test]
    fn zones_are_picked_by_the_domain_filter_as_external_dns_does() {
        let listed = || vec![info("example.org."), info("k8s.example.org."), info("example.com.")];
        let all = select_zones(&DomainFilter::default(), listed());
        assert_eq!(
            all.iter().map(|z| z.name.as_str()).collect::<Vec<_>>(),
            ["k8s.example.org.", "example.com.", "example.org."]
        );
        // A filter naming a sub-domain selects the zone that holds it (MatchParent) and the zones under it.
        let f = DomainFilter::new(&["apps.k8s.example.org"], &[] as &[&str]);
        let picked = select_zones(&f, listed());
        assert_eq!(
            picked.iter().map(|z| z.name.as_str()).collect::<Vec<_>>(),
            ["k8s.example.org.", "example.org."]
        );
        let f = DomainFilter::new(&["example.org"], &["k8s.example.org"]);
        let picked = select_zones(&f, listed());
        assert_eq!(
            picked.iter().map(|z| z.name.as_str()).collect::<Vec<_>>(),
            ["example.org."]
        );
    }

    #[test]
    fn each_record_goes_to_its_closest_zone() {
        let zones = select_zones(
            &DomainFilter::default(),
            vec![info("example.org."), info("k8s.example.org.")],
        );
        assert_eq!(
            zone_for(&zones, "a.k8s.example.org").map(|z| z.1.name.as_str()),
            Some("k8s.example.org.")
        );
        assert_eq!(
            zone_for(&zones, "K8S.example.org").map(|z| z.1.name.as_str()),
            Some("k8s.example.org.")
        );
        assert_eq!(
            zone_for(&zones, "a.example.org.").map(|z| z.1.name.as_str()),
            Some("example.org.")
        );
        assert_eq!(zone_for(&zones, "notexample.org"), None);
    }

    #[test]
    fn api_failures_map_to_what_the_controller_does_with_them() {
        let status = |s: u16| {
            let status = StatusCode::from_u16(s).unwrap_or(StatusCode::IM_A_TEAPOT);
            ApiError::Status {
                what: "x".into(),
                status,
                message: "m".into(),
                kind: api::kind_of(&extdns_provider::HttpAnswer::with_status(status)),
            }
        };
        assert!(provider_error(status(429)).is_transient());
        assert!(provider_error(status(503)).is_transient());
        assert!(provider_error(status(404)).is_transient());
        let refused = provider_error(status(401));
        assert!(
            matches!(&refused, ProviderError::Failed { kind: FailureKind::Auth, message, .. } if message.contains("API key")),
            "{refused:?}"
        );
        let cause = std::error::Error::source(&refused).and_then(|c| c.downcast_ref::<ApiError>());
        assert!(
            matches!(cause, Some(ApiError::Status { status, .. }) if *status == StatusCode::UNAUTHORIZED),
            "the API's answer is kept as the source: {refused:?}"
        );
        assert!(provider_error(status(403)).is_auth());
        for refused in [400, 409, 422] {
            assert_eq!(
                provider_error(status(refused)).kind(),
                Some(FailureKind::Refused),
                "{refused}"
            );
        }
        assert_eq!(provider_error(status(405)).kind(), Some(FailureKind::Fatal));
    }

    #[test]
    fn configuration_errors_name_their_setting() {
        let err = |c: PdnsConfig| PdnsProvider::new(&c).err().map(|e| (e.setting(), e.to_string()));
        let base = || PdnsConfig::new("http://127.0.0.1:8081", "key");
        assert!(PdnsProvider::new(&base()).is_ok());
        assert_eq!(
            err(PdnsConfig::new("http://127.0.0.1:8081", " ")).map(|e| e.0),
            Some(Setting::ApiKey)
        );
        let e = err(PdnsConfig::new("ftp://pdns", "key"));
        assert!(
            matches!(&e, Some((Setting::Server, m)) if m.contains("ftp://pdns")),
            "{e:?}"
        );
        let e = err(PdnsConfig::new("not a url", "key"));
        assert_eq!(e.map(|e| e.0), Some(Setting::Server));
        let mut c = base();
        c.server_id = String::new();
        assert_eq!(err(c).map(|e| e.0), Some(Setting::ServerId));
        let mut c = base();
        c.batch_change_size = 0;
        assert_eq!(err(c).map(|e| e.0), Some(Setting::BatchChangeSize));
        let mut c = base();
        c.tls.client_cert = Some("/nonexistent/cert.pem".into());
        assert_eq!(err(c).map(|e| e.0), Some(Setting::TlsClientCert));
        let mut c = base();
        c.tls.ca_file = Some("/nonexistent/ca.pem".into());
        let e = err(c);
        assert!(
            matches!(&e, Some((Setting::TlsCa, m)) if m.contains("/nonexistent/ca.pem")),
            "{e:?}"
        );
    }

    #[tokio::test]
    async fn desired_txt_data_is_quoted_and_names_lowered_as_they_read_back() {
        let p = match PdnsProvider::new(&PdnsConfig::new("http://127.0.0.1:1", "key")) {
            Ok(p) => p,
            Err(e) => panic!("{e}"),
        };
        let eps = vec![
            Endpoint::new("Txt.Example.org", RecordType::Txt, ["hello", "\"already\""]),
            Endpoint::new("a.example.org", RecordType::A, ["192.0.2.1"]),
        ];
        let out = p.adjust_endpoints(eps).await.unwrap_or_default();
        assert_eq!(out[0].dns_name, "txt.example.org");
        assert_eq!(
            out[0].targets.0,
            vec!["\"hello\"".to_string(), "\"already\"".to_string()]
        );
        assert_eq!(out[1].targets.0, vec!["192.0.2.1".to_string()]);
    }
}
