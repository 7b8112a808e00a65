//! The server as a process runs it (the controller, the webhook server, a provider object): the zones its
//! configuration describes, the provider that writes them, the listeners bound on them, and its metrics
//! registered, the records and serial of each zone among them. Bound before the first sync, so a busy or
//! foreign address fails the start rather than leaving a replica that syncs but never answers.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;
use tracing::info;

use crate::{DnsServer, DnsServerProvider, ServerConfig, ServerError, ServerMetrics, Zones};

/// The prefix of the server's metrics.
pub const METRICS_PREFIX: &str = "extdns_dns_server";

/// `config`'s zones (empty but for their SOA, NS and glue) and the provider that writes them. The serial
/// starts at the clock's seconds, so a restarted server never offers a serial older than one a secondary
/// already holds (as BIND's `serial-update-method unixtime`).
pub fn zones_and_provider(config: &ServerConfig) -> (DnsServerProvider, Arc<Zones>) {
    let serial = u32::try_from(extdns_dns_wire::unix_now()).unwrap_or(u32::MAX);
    let zones = Arc::new(Zones::new(&config.zones, serial, config.limits));
    (DnsServerProvider::new(zones.clone(), config.default_ttl), zones)
}

/// The provider the controller writes, and the server answering from what it wrote, bound but not serving
/// yet ([`DnsServer::run`]). The server's metrics, and a gauge of the records served and the serial of each
/// zone, go into `registry` (the binary's, under [`METRICS_PREFIX`]); each address is logged with the `dig`
/// line that asks it.
pub fn bind_serving(
    config: &Arc<ServerConfig>,
    registry: &mut Registry,
) -> Result<(DnsServerProvider, DnsServer), ServerError> {
    let (provider, zones) = zones_and_provider(config);
    let metrics = ServerMetrics::default();
    metrics.register(registry);
    registry.register_collector(Box::new(ServedZones(zones.clone())));
    let server = DnsServer::bind(config.clone(), zones, metrics)?;
    let zone_names: Vec<String> = config.zones.iter().map(|z| z.origin.to_ascii()).collect();
    for address in server.local_addrs() {
        let zone = zone_names.first().map_or(".", String::as_str);
        info!(
            %address,
            zones = %zone_names.join(","),
            "answering DNS for the zones on {address} (UDP and TCP); try: {}",
            dig_command(address, zone)
        );
    }
    Ok((provider, server))
}

/// The `dig` line that asks the server at `address` for `zone`'s SOA: a wildcard address is asked on its
/// loopback, which it includes.
pub fn dig_command(address: SocketAddr, zone: &str) -> String {
    let ip = match address.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    format!("dig @{ip} -p {} +norecurse {zone} SOA", address.port())
}

/// `extdns_dns_server_zone_records{zone}` and `extdns_dns_server_zone_serial{zone}`, read from the zones at
/// each scrape (one read lock, a count kept by the zone): nothing to keep in step on writes.
#[derive(Debug)]
struct ServedZones(Arc<Zones>);

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ZoneLabel {
    zone: String,
}

/// One zone's figures at a scrape.
struct Served {
    label: ZoneLabel,
    records: i64,
    serial: i64,
}

/// A gauge family: its name, its help, and its value for a zone.
type Family = (&'static str, &'static str, fn(&Served) -> i64);

impl Collector for ServedZones {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let set = self.0.read();
        let zones: Vec<Served> = set
            .zones()
            .iter()
            .map(|z| Served {
                label: ZoneLabel {
                    zone: z.origin().to_ascii(),
                },
                records: i64::try_from(z.record_count()).unwrap_or(i64::MAX),
                serial: i64::from(z.serial()),
            })
            .collect();
        drop(set);
        let families: [Family; 2] = [
            (
                "zone_records",
                "Records served in each zone (the SOA, apex NS and glue included)",
                |z| z.records,
            ),
            (
                "zone_serial",
                "The SOA serial each zone is served with (bumped by every write that changes it)",
                |z| z.serial,
            ),
        ];
        for (name, help, value) in families {
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
            for zone in &zones {
                ConstGauge::new(value(zone)).encode(family.encode_family(&zone.label)?)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dig_line_asks_loopback_for_a_wildcard_address() {
        let dig = |a: &str| a.parse().map(|a| dig_command(a, "example.org.")).unwrap_or_default();
        assert_eq!(
            dig("0.0.0.0:1053"),
            "dig @127.0.0.1 -p 1053 +norecurse example.org. SOA"
        );
        assert_eq!(dig("[::]:53"), "dig @::1 -p 53 +norecurse example.org. SOA");
        assert_eq!(
            dig("192.0.2.1:5353"),
            "dig @192.0.2.1 -p 5353 +norecurse example.org. SOA"
        );
    }
}
