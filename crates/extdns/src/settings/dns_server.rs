//! `--provider=dns-server`: the `--dns-server-*` flags into the built-in server's [`ServerConfig`]. Every
//! value is checked here, once, by the server's own parsers ([`extdns_dns_server::values`]), and a bad one
//! fails startup with the flag and the value named (never a TSIG secret).

use std::net::SocketAddr;
use std::time::Duration;

use extdns_dns_server::MAX_UDP_WORKERS;
use extdns_dns_server::values::{domain_name, seconds as soa_seconds, text};
use extdns_dns_server::{ConfigError, Limits, NameServer, Secondary, ServerConfig, ZoneConfig};
use extdns_dns_server::{CookieSecret, RrlConfig, TlsConfig};
use extdns_dns_wire::TsigKey;
use hickory_proto::rr::Name;

use super::{ValidationError, fail};
use crate::flags::{DnsServerFlags, Flags};

/// The built-in server's configuration.
pub fn config(flags: &Flags) -> Result<ServerConfig, ValidationError> {
    let f = &flags.dns_server;
    let listen = f
        .dns_server_listen
        .iter()
        .map(|a| {
            a.trim().parse::<SocketAddr>().map_err(|_| {
                ValidationError(format!(
                    "--dns-server-listen={a}: want ADDR:PORT, e.g. 0.0.0.0:1053 or [::]:1053 (port 0 picks a free one)"
                ))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    if listen.is_empty() {
        return fail("--dns-server-listen: give at least one ADDR:PORT to answer on");
    }
    let origins = zones(&f.dns_server_zone)?;
    let name_servers = name_servers(&f.dns_server_ns)?;
    if let Some(ns) = name_servers
        .iter()
        .find(|ns| ns.glue.is_some() && !origins.iter().any(|z| z.zone_of(&ns.name)))
    {
        let (name, ip) = (text(&ns.name), ns.glue.map(|ip| ip.to_string()).unwrap_or_default());
        return fail(format!(
            "--dns-server-ns={name}={ip}: an address is glue, served only for a name inside a --dns-server-zone, \
             and {name} is in none; drop =IP"
        ));
    }
    let rname = match f.dns_server_soa_rname.trim() {
        "" => None,
        r if r.contains('@') => {
            return fail(format!(
                "--dns-server-soa-rname={r}: write the mailbox as a name (hostmaster@example.org is \
                 hostmaster.example.org)"
            ));
        }
        r => Some(name("--dns-server-soa-rname", r)?),
    };
    let refresh = seconds("--dns-server-soa-refresh", f.dns_server_soa_refresh, 1)?;
    let retry = seconds("--dns-server-soa-retry", f.dns_server_soa_retry, 1)?;
    let expire = seconds("--dns-server-soa-expire", f.dns_server_soa_expire, 1)?;
    let minimum = seconds("--dns-server-soa-minimum", f.dns_server_soa_minimum, 0)?;
    let default_ttl = seconds("--dns-server-ttl", f.dns_server_ttl, 0)?;
    let zones = origins
        .into_iter()
        .map(|origin| {
            let mut zone = ZoneConfig::served_by(origin, &name_servers, rname.clone())
                .map_err(|e| ValidationError(e.to_string()))?;
            (zone.refresh, zone.retry, zone.expire, zone.minimum) = (refresh, retry, expire, minimum);
            zone.ttl = default_ttl;
            Ok(zone)
        })
        .collect::<Result<Vec<_>, ValidationError>>()?;
    let keys = tsig_keys(&f.dns_server_tsig_key)?;
    let secondaries = f
        .dns_server_secondary
        .iter()
        .map(|s| {
            Secondary::parse(s, &keys).map_err(|e| ValidationError(format!("--dns-server-secondary={}: {e}", s.trim())))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let rrl = rrl(f, &listen)?;
    let cookie_secret = cookie_secret(&f.dns_server_cookie_secret)?;
    let tls = tls(f)?;
    let udp_workers = udp_workers(f.dns_server_udp_workers)?;
    Ok(ServerConfig {
        listen,
        zones,
        default_ttl,
        secondaries,
        keys,
        limits: Limits::default(),
        rrl,
        cookies: f.dns_server_cookies,
        cookie_secret,
        tls,
        udp_workers,
        on_udp_worker_start: crate::allocator::ANSWERING_THREAD_START,
    })
}

/// `--dns-server-udp-workers`: 0 (one per CPU) up to [`MAX_UDP_WORKERS`]; more threads than cores only
/// take turns on them.
fn udp_workers(workers: usize) -> Result<usize, ValidationError> {
    if workers > MAX_UDP_WORKERS {
        return fail(format!(
            "--dns-server-udp-workers={workers}: at most {MAX_UDP_WORKERS} (0: one per CPU the process may use)"
        ));
    }
    Ok(workers)
}

/// `--dns-server-rrl*`: the limiter, or `None`. `auto` turns it on as soon as one address is not loopback:
/// a server reachable from outside is a reflection source without it, and one on loopback only is a test
/// or a benchmark, which a limit would only skew.
fn rrl(f: &DnsServerFlags, listen: &[SocketAddr]) -> Result<Option<RrlConfig>, ValidationError> {
    let on = match f.dns_server_rrl.trim() {
        "auto" => listen.iter().any(|a| !a.ip().is_loopback()),
        "on" => true,
        "off" => false,
        other => return fail(format!("--dns-server-rrl={other}: want auto, on or off")),
    };
    let window = f.dns_server_rrl_window;
    if on && window < Duration::from_secs(1) {
        return fail(format!(
            "--dns-server-rrl-window={}: at least 1s (the limiter counts whole seconds)",
            extdns_endpoint::go_duration::format(window)
        ));
    }
    Ok(on.then(|| RrlConfig {
        responses_per_second: f.dns_server_rrl_responses_per_second,
        window,
        slip: f.dns_server_rrl_slip,
        ..RrlConfig::default()
    }))
}

/// `--dns-server-cookie-secret`; empty: the server draws one. The message never shows the value.
fn cookie_secret(value: &str) -> Result<Option<CookieSecret>, ValidationError> {
    match value.trim() {
        "" => Ok(None),
        v => v
            .parse()
            .map(Some)
            .map_err(|e| ValidationError(format!("--dns-server-cookie-secret: {e}"))),
    }
}

/// `--dns-server-tls-*`: DoT when both files are named, on every `--dns-server-tls-listen` address.
fn tls(f: &DnsServerFlags) -> Result<Option<TlsConfig>, ValidationError> {
    let (cert, key) = (f.dns_server_tls_cert_file.trim(), f.dns_server_tls_key_file.trim());
    match (cert.is_empty(), key.is_empty()) {
        (true, true) => return Ok(None),
        (false, false) => {}
        _ => {
            return fail(
                "--dns-server-tls-cert-file and --dns-server-tls-key-file: give both for DNS over TLS, or neither",
            );
        }
    }
    let listen = f
        .dns_server_tls_listen
        .iter()
        .map(|a| {
            a.trim()
                .parse::<SocketAddr>()
                .map_err(|_| ValidationError(format!("--dns-server-tls-listen={a}: want ADDR:PORT, e.g. 0.0.0.0:853")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    if listen.is_empty() {
        return fail("--dns-server-tls-listen: give at least one ADDR:PORT for DNS over TLS");
    }
    Ok(Some(TlsConfig::new(listen, cert.into(), key.into())))
}

/// The values given of a repeatable flag, blanks trimmed, empty ones dropped.
fn given(values: &[String]) -> impl Iterator<Item = &str> {
    values.iter().map(|v| v.trim()).filter(|v| !v.is_empty())
}

/// `--dns-server-zone`: at least one, each a valid name, none twice.
fn zones(values: &[String]) -> Result<Vec<Name>, ValidationError> {
    let mut zones: Vec<Name> = Vec::new();
    for value in given(values) {
        let zone = name("--dns-server-zone", value)?;
        if zones.contains(&zone) {
            return fail(format!("--dns-server-zone={value} is given twice"));
        }
        zones.push(zone);
    }
    if zones.is_empty() {
        return fail(
            "--dns-server-zone is required with --provider=dns-server: name every zone extdns answers for \
             (e.g. --dns-server-zone=home.example.org)",
        );
    }
    Ok(zones)
}

/// `--dns-server-ns=NAME[=IP]`, in order (the first is every SOA's MNAME).
fn name_servers(values: &[String]) -> Result<Vec<NameServer>, ValidationError> {
    let mut out: Vec<NameServer> = Vec::new();
    for value in given(values) {
        let ns: NameServer = value.parse().map_err(|e| refused("--dns-server-ns", value, &e))?;
        if out.iter().any(|n| n.name == ns.name) {
            return fail(format!("--dns-server-ns: {} is given twice", text(&ns.name)));
        }
        out.push(ns);
    }
    Ok(out)
}

/// `--dns-server-tsig-key=NAME:ALGORITHM:BASE64-SECRET`; messages never show the secret.
fn tsig_keys(values: &[String]) -> Result<Vec<TsigKey>, ValidationError> {
    let mut keys: Vec<TsigKey> = Vec::new();
    for value in given(values) {
        let key: TsigKey = value.parse().map_err(|e: extdns_dns_wire::KeySpecError| {
            ValidationError(format!("--dns-server-tsig-key (key {:?}): {e}", e.key()))
        })?;
        if keys.iter().any(|k| k.name().eq_ignore_ascii_case(&key.name())) {
            let written = value.split(':').next().unwrap_or_default();
            return fail(format!("--dns-server-tsig-key (key {written:?}) is given twice"));
        }
        keys.push(key);
    }
    Ok(keys)
}

/// A domain name from a flag, fully qualified and lower case.
fn name(flag: &str, value: &str) -> Result<Name, ValidationError> {
    domain_name(value).map_err(|e| refused(flag, value, &e))
}

/// `flag=value: why`.
fn refused(flag: &str, value: &str, e: &ConfigError) -> ValidationError {
    ValidationError(format!("{flag}={value}: {e}"))
}

/// A SOA timer or TTL flag in whole seconds, at least `min`, shown as Go writes durations when refused.
fn seconds(flag: &str, d: Duration, min: u32) -> Result<u32, ValidationError> {
    soa_seconds(d, min).map_err(|e| refused(flag, &extdns_endpoint::go_duration::format(d), &e))
}

// --- DNSSEC signing: `--dns-server-dnssec-*` ---

/// The signed zones and where their keys are kept (`--dns-server-dnssec-*`); the keys themselves are read
/// or made by `crate::dnssec_keys`, which talks to the cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DnssecSettings {
    /// The zones to sign, each one of `--dns-server-zone`.
    pub zones: Vec<Name>,
    /// The algorithm of keys generated.
    pub algorithm: extdns_dns_server::dnssec::KeyAlgorithm,
    /// The Secret's namespace; `None` for the controller's own.
    pub namespace: Option<String>,
    /// The Secret's name.
    pub secret: String,
    /// How long a new signature is valid, in seconds.
    pub validity_secs: u32,
    /// A rollover's waits but the DNSKEY TTL, which is each zone's own.
    pub rollover: RolloverSettings,
}

/// The waits of a key rollover that are not a zone's own (`--dns-server-dnssec-propagation-delay`,
/// `-max-zone-ttl`, `-parent-ds-ttl`, `-key-check-interval`), in seconds but the interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RolloverSettings {
    /// The propagation delay given, before the check interval is added.
    pub propagation_delay: u64,
    /// The largest TTL of a signed zone.
    pub max_zone_ttl: u64,
    /// The parent's DS TTL.
    pub parent_ds_ttl: u64,
    /// How often each replica reads the key Secret.
    pub key_check_interval: Duration,
}

impl RolloverSettings {
    /// The waits for a zone whose DNSKEY set is served with `dnskey_ttl`: a replica may see a step of
    /// the Secret up to one check interval after another wrote it, so that interval is propagation too.
    pub fn timings(&self, dnskey_ttl: u32) -> extdns_dns_server::dnssec::rollover::RollTimings {
        extdns_dns_server::dnssec::rollover::RollTimings {
            dnskey_ttl: u64::from(dnskey_ttl),
            max_zone_ttl: self.max_zone_ttl,
            propagation_delay: self
                .propagation_delay
                .saturating_add(self.key_check_interval.as_secs_f64().ceil() as u64),
            parent_ds_ttl: self.parent_ds_ttl,
        }
    }
}

/// The shortest validity taken: renewal starts at half of it and a signature begins an hour back.
const MIN_VALIDITY: u32 = 4 * 3_600;

/// `--dns-server-dnssec-*`: `None` when no zone is signed; each signed zone must be served.
pub fn dnssec(flags: &Flags) -> Result<Option<DnssecSettings>, ValidationError> {
    let f = &flags.dns_server;
    let signed: Vec<&str> = given(&f.dns_server_dnssec_zone).collect();
    if signed.is_empty() {
        return Ok(None);
    }
    let served = zones(&f.dns_server_zone)?;
    let mut zones_signed: Vec<Name> = Vec::new();
    for value in signed {
        let zone = name("--dns-server-dnssec-zone", value)?;
        if !served.contains(&zone) {
            return fail(format!(
                "--dns-server-dnssec-zone={value}: not a --dns-server-zone; only a zone the server answers for can \
                 be signed"
            ));
        }
        if !zones_signed.contains(&zone) {
            zones_signed.push(zone);
        }
    }
    let algorithm = f
        .dns_server_dnssec_algorithm
        .parse()
        .map_err(|e| ValidationError(format!("--dns-server-dnssec-algorithm: {e}")))?;
    let secret = f.dns_server_dnssec_secret.trim();
    let (namespace, secret) = match secret.split_once('/') {
        Some((ns, name)) => (Some(ns.to_owned()), name),
        None => (None, secret),
    };
    let valid = |s: &str| {
        !s.is_empty()
            && s.len() <= 253
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
    };
    if !valid(secret) || namespace.as_deref().is_some_and(|n| !valid(n)) {
        return fail(format!(
            "--dns-server-dnssec-secret={}: want a Secret name, or NAMESPACE/NAME (lower case, digits, '-', '.')",
            f.dns_server_dnssec_secret
        ));
    }
    let validity_secs = seconds(
        "--dns-server-dnssec-validity",
        f.dns_server_dnssec_validity,
        MIN_VALIDITY,
    )?;
    if f.dns_server_dnssec_key_check_interval < Duration::from_secs(1) {
        return fail(format!(
            "--dns-server-dnssec-key-check-interval={}: want at least 1s",
            extdns_endpoint::go_duration::format(f.dns_server_dnssec_key_check_interval)
        ));
    }
    let rollover = RolloverSettings {
        propagation_delay: f.dns_server_dnssec_propagation_delay.as_secs(),
        max_zone_ttl: f.dns_server_dnssec_max_zone_ttl.as_secs(),
        parent_ds_ttl: f.dns_server_dnssec_parent_ds_ttl.as_secs(),
        key_check_interval: f.dns_server_dnssec_key_check_interval,
    };
    Ok(Some(DnssecSettings {
        zones: zones_signed,
        algorithm,
        namespace,
        secret: secret.to_owned(),
        validity_secs,
        rollover,
    }))
}

/// Refuses `--dns-server-dnssec-zone` where nothing would sign (the webhook server, `--dns-provider-crds`):
/// only the controller command reads the keys yet, and a zone believed signed but served unsigned is worse
/// than a refused start.
pub fn dnssec_refused_here(flags: &Flags, mode: &str) -> Result<(), ValidationError> {
    match dnssec(flags)? {
        Some(_) => fail(format!(
            "--dns-server-dnssec-zone: signing runs in the controller command only, not with {mode} (docs/dnssec.md)"
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(args: &[&str]) -> Flags {
        crate::settings::tests::test_flags(
            ["--source=service", "--provider=dns-server"]
                .iter()
                .chain(args)
                .copied(),
        )
    }

    fn error(args: &[&str]) -> String {
        match config(&flags(args)) {
            Ok(c) => panic!("{args:?} was accepted: {c:?}"),
            Err(e) => e.0,
        }
    }

    const KEY: &str = "--dns-server-tsig-key=xfr:hmac-sha256:c2VjcmV0LXNlY3JldC1zZWNyZXQ=";

    #[test]
    fn defaults_give_each_zone_its_ns1_and_hostmaster_and_the_agreed_timers() {
        let c = config(&flags(&[
            "--dns-server-zone=Home.Example.org.",
            "--dns-server-zone=lab.example.net",
        ]))
        .unwrap_or_else(|e| panic!("{}", e.0));
        assert_eq!(
            c.listen,
            vec!["0.0.0.0:1053".parse::<SocketAddr>().unwrap_or_else(|e| panic!("{e}"))]
        );
        assert_eq!(c.default_ttl, 60);
        let z = &c.zones[0];
        assert_eq!(text(&z.origin), "home.example.org");
        assert_eq!(
            z.name_servers.iter().map(text).collect::<Vec<_>>(),
            ["ns1.home.example.org"]
        );
        assert_eq!(text(&z.mname), "ns1.home.example.org");
        assert_eq!(text(&z.rname), "hostmaster.home.example.org");
        assert_eq!((z.refresh, z.retry, z.expire, z.minimum), (3600, 600, 604_800, 30));
        assert!(z.glue.is_empty());
        assert_eq!(text(&c.zones[1].mname), "ns1.lab.example.net");
        assert!(c.secondaries.is_empty() && c.keys.is_empty());
    }

    #[test]
    fn name_servers_glue_secondaries_and_keys_are_read() {
        let c = config(&flags(&[
            "--dns-server-zone=home.example.org",
            "--dns-server-listen=127.0.0.1:0",
            "--dns-server-listen=[::1]:5353",
            "--dns-server-ns=ns.home.example.org=192.0.2.53",
            "--dns-server-ns=ns.provider.example",
            "--dns-server-soa-rname=dns.example.org",
            "--dns-server-soa-minimum=5m",
            "--dns-server-ttl=0s",
            KEY,
            "--dns-server-secondary=192.0.2.10",
            "--dns-server-secondary=[2001:db8::1]:5353/xfr",
        ]))
        .unwrap_or_else(|e| panic!("{}", e.0));
        assert_eq!(c.listen.len(), 2);
        assert_eq!(c.default_ttl, 0);
        let z = &c.zones[0];
        assert_eq!(text(&z.mname), "ns.home.example.org");
        assert_eq!(text(&z.rname), "dns.example.org");
        assert_eq!(z.minimum, 300);
        assert_eq!(z.name_servers.len(), 2);
        assert_eq!(z.glue.len(), 1);
        assert_eq!(z.glue[0].1.to_string(), "192.0.2.53");
        assert_eq!(c.keys.len(), 1);
        assert_eq!(c.secondaries[0].address.to_string(), "192.0.2.10:53");
        assert_eq!(c.secondaries[0].key, None);
        assert_eq!(c.secondaries[1].address.to_string(), "[2001:db8::1]:5353");
        assert_eq!(c.secondaries[1].key.as_ref().map(text).as_deref(), Some("xfr"));
    }

    #[test]
    fn the_registry_defaults_to_noop_with_the_dns_server_and_txt_still_works() {
        let z = "--dns-server-zone=example.org";
        let registry = |args: &[&str]| match crate::settings::controller(&flags(args)) {
            Ok(s) => s.registry.name(),
            Err(e) => panic!("{args:?}: {}", e.0),
        };
        assert_eq!(registry(&[z]), "noop");
        assert_eq!(registry(&[z, "--registry=txt"]), "txt");
        let other = crate::settings::tests::test_flags(["--source=service", "--provider=inmemory"]);
        assert!(crate::settings::controller(&other).is_ok_and(|s| s.registry.name() == "txt"));
        let e = crate::settings::controller(&flags(&[])).err().map(|e| e.0);
        assert!(e.is_some_and(|e| e.starts_with("--dns-server-zone is required")));
    }

    #[test]
    fn each_bad_value_names_its_flag() {
        let z = "--dns-server-zone=example.org";
        let cases: &[(&[&str], &str)] = &[
            (&[], "--dns-server-zone is required"),
            (
                &["--dns-server-zone=exa mple..org"],
                "--dns-server-zone=exa mple..org: not a domain name",
            ),
            (&[z, z], "--dns-server-zone=example.org is given twice"),
            (
                &[z, "--dns-server-listen=localhost:53"],
                "--dns-server-listen=localhost:53: want ADDR:PORT",
            ),
            (
                &[z, "--dns-server-listen=0.0.0.0"],
                "--dns-server-listen=0.0.0.0: want ADDR:PORT",
            ),
            (
                &[z, "--dns-server-ns=ns1.example.org=nope"],
                "--dns-server-ns=ns1.example.org=nope: \"nope\" is not an IP",
            ),
            (
                &[z, "--dns-server-ns=ns.other.net=192.0.2.1"],
                "--dns-server-ns=ns.other.net=192.0.2.1: an address is glue",
            ),
            (&[z, "--dns-server-ns=a..b"], "--dns-server-ns=a..b: not a domain name"),
            (
                &[z, "--dns-server-soa-rname=me@example.org"],
                "--dns-server-soa-rname=me@example.org: write the mailbox",
            ),
            (
                &[z, "--dns-server-soa-refresh=0s"],
                "--dns-server-soa-refresh=0s: want at least 1s",
            ),
            (
                &[z, "--dns-server-soa-retry=1500ms"],
                "--dns-server-soa-retry=1.5s: want whole seconds",
            ),
            (
                &[z, "--dns-server-soa-expire=600000h"],
                "--dns-server-soa-expire=600000h0m0s: at most 2147483647s",
            ),
            (
                &[z, "--dns-server-soa-minimum=596524h"],
                "--dns-server-soa-minimum=596524h0m0s: at most",
            ),
            (
                &[z, "--dns-server-ttl=900000h"],
                "--dns-server-ttl=900000h0m0s: at most",
            ),
            (
                &[z, "--dns-server-secondary=ns2.example.org"],
                "--dns-server-secondary=ns2.example.org: \"ns2.example.org\" is not an IP",
            ),
            (
                &[z, "--dns-server-secondary=192.0.2.1/nokey"],
                "--dns-server-secondary=192.0.2.1/nokey: no --dns-server-tsig-key is named \"nokey\"",
            ),
            (
                &[z, "--dns-server-tsig-key=xfr"],
                "--dns-server-tsig-key (key \"xfr\"): want NAME:ALGORITHM:BASE64-SECRET",
            ),
            (
                &[z, "--dns-server-tsig-key=xfr:hmac-md5:c2VjcmV0"],
                "--dns-server-tsig-key (key \"xfr\"): ",
            ),
            (
                &[z, "--dns-server-tsig-key=xfr:sha999:c2VjcmV0"],
                "--dns-server-tsig-key (key \"xfr\"): ",
            ),
            (
                &[z, "--dns-server-tsig-key=xfr:hmac-sha256:not*base64"],
                "--dns-server-tsig-key (key \"xfr\"): the secret is not standard base64",
            ),
            (&[z, KEY, KEY], "--dns-server-tsig-key (key \"xfr\") is given twice"),
        ];
        for (args, want) in cases {
            let e = error(args);
            assert!(e.starts_with(want), "{args:?}: {e}");
            assert!(!e.contains("c2VjcmV0"), "a secret in {e}");
        }
        // The algorithm errors say why: md5 is refused as insecure, an unknown name lists the known ones.
        assert!(error(&[z, "--dns-server-tsig-key=xfr:hmac-md5:c2VjcmV0"]).contains("hmac-sha256"));
        assert!(error(&[z, "--dns-server-tsig-key=xfr:sha999:c2VjcmV0"]).contains("hmac-sha512"));
    }

    #[test]
    fn rrl_is_on_beyond_loopback_by_default_and_takes_its_flags() {
        let zone = "--dns-server-zone=example.org";
        let on = config(&flags(&[zone])).unwrap_or_else(|e| panic!("{}", e.0));
        assert_eq!(on.rrl, Some(RrlConfig::default()), "0.0.0.0:1053 is beyond loopback");
        let local = config(&flags(&[
            zone,
            "--dns-server-listen=127.0.0.1:1053",
            "--dns-server-listen=[::1]:1053",
        ]))
        .unwrap_or_else(|e| panic!("{}", e.0));
        assert_eq!(local.rrl, None);
        let forced = config(&flags(&[
            zone,
            "--dns-server-listen=127.0.0.1:1053",
            "--dns-server-rrl=on",
            "--dns-server-rrl-responses-per-second=5",
            "--dns-server-rrl-window=30s",
            "--dns-server-rrl-slip=0",
        ]))
        .unwrap_or_else(|e| panic!("{}", e.0));
        let rrl = forced.rrl.unwrap_or_else(|| panic!("on"));
        assert_eq!(
            (rrl.responses_per_second, rrl.window, rrl.slip),
            (5, Duration::from_secs(30), 0)
        );
        assert_eq!(
            config(&flags(&[zone, "--dns-server-rrl=off"])).map(|c| c.rrl).ok(),
            Some(None)
        );
        assert!(error(&[zone, "--dns-server-rrl=sometimes"]).contains("auto, on or off"));
        assert!(error(&[zone, "--dns-server-rrl-window=0s"]).contains("at least 1s"));
    }

    #[test]
    fn cookies_are_on_with_a_secret_of_their_own_unless_one_is_given() {
        let zone = "--dns-server-zone=example.org";
        let c = config(&flags(&[zone])).unwrap_or_else(|e| panic!("{}", e.0));
        assert!(c.cookies && c.cookie_secret.is_none());
        let secret = "--dns-server-cookie-secret=00112233445566778899aabbccddeeff";
        let c = config(&flags(&[zone, secret, "--dns-server-cookies=false"])).unwrap_or_else(|e| panic!("{}", e.0));
        assert!(!c.cookies && c.cookie_secret.is_some());
        let e = error(&[zone, "--dns-server-cookie-secret=not-a-secret-but-long-enough-xx"]);
        assert!(
            e.contains("32 hexadecimal digits") && !e.contains("not-a-secret"),
            "{e}"
        );
    }

    #[test]
    fn dot_needs_both_files_and_listens_on_853_by_default() {
        let zone = "--dns-server-zone=example.org";
        assert!(config(&flags(&[zone])).map(|c| c.tls.is_none()).unwrap_or(false));
        let c = config(&flags(&[
            zone,
            "--dns-server-tls-cert-file=/tls/tls.crt",
            "--dns-server-tls-key-file=/tls/tls.key",
        ]))
        .unwrap_or_else(|e| panic!("{}", e.0));
        let tls = c.tls.unwrap_or_else(|| panic!("DoT on"));
        assert_eq!(
            tls.listen,
            vec!["0.0.0.0:853".parse::<SocketAddr>().unwrap_or_else(|e| panic!("{e}"))]
        );
        assert_eq!(tls.cert_file, std::path::PathBuf::from("/tls/tls.crt"));
        assert!(error(&[zone, "--dns-server-tls-cert-file=/tls/tls.crt"]).contains("give both"));
        assert!(
            error(&[
                zone,
                "--dns-server-tls-cert-file=a",
                "--dns-server-tls-key-file=b",
                "--dns-server-tls-listen=853"
            ])
            .contains("--dns-server-tls-listen=853")
        );
    }

    #[test]
    fn udp_workers_are_one_per_cpu_unless_given_and_bounded() {
        let zone = "--dns-server-zone=example.org";
        assert_eq!(config(&flags(&[zone])).map(|c| c.udp_workers).ok(), Some(0));
        let four = config(&flags(&[zone, "--dns-server-udp-workers=4"])).map(|c| c.udp_workers);
        assert_eq!(four.ok(), Some(4));
        let e = error(&[zone, "--dns-server-udp-workers=65"]);
        assert!(
            e.contains("--dns-server-udp-workers=65") && e.contains("at most 64"),
            "{e}"
        );
    }
}

#[cfg(test)]
mod dnssec_tests {
    use extdns_dns_server::dnssec::KeyAlgorithm;

    use super::*;

    fn dnssec_of(args: &[&str]) -> Result<Option<DnssecSettings>, ValidationError> {
        let all = [
            "--source=service",
            "--provider=dns-server",
            "--dns-server-zone=example.org",
        ];
        dnssec(&crate::settings::tests::test_flags(all.iter().chain(args).copied()))
    }

    #[test]
    fn signing_is_off_unless_a_zone_is_named_and_named_zones_must_be_served() {
        assert_eq!(dnssec_of(&[]).expect("valid"), None);
        let on = dnssec_of(&["--dns-server-dnssec-zone=Example.ORG."])
            .expect("valid")
            .expect("on");
        assert_eq!(on.zones, [Name::from_ascii("example.org.").expect("name")]);
        assert_eq!(on.algorithm, KeyAlgorithm::EcdsaP256);
        assert_eq!((on.namespace, on.secret.as_str()), (None, "extdns-dnssec-keys"));
        assert_eq!(on.validity_secs, 14 * 86_400);
        let err = dnssec_of(&["--dns-server-dnssec-zone=example.com"]).expect_err("not served");
        assert!(err.0.contains("--dns-server-dnssec-zone=example.com"), "{err}");
    }

    #[test]
    fn the_algorithm_secret_and_validity_are_checked() {
        let zone = "--dns-server-dnssec-zone=example.org";
        let ed = dnssec_of(&[
            zone,
            "--dns-server-dnssec-algorithm=ed25519",
            "--dns-server-dnssec-secret=dns/keys",
        ])
        .expect("valid")
        .expect("on");
        assert_eq!(ed.algorithm, KeyAlgorithm::Ed25519);
        assert_eq!((ed.namespace.as_deref(), ed.secret.as_str()), (Some("dns"), "keys"));
        for bad in [
            "--dns-server-dnssec-algorithm=RSASHA1",
            "--dns-server-dnssec-secret=Keys!",
            "--dns-server-dnssec-validity=1h",
        ] {
            let err = dnssec_of(&[zone, bad]).expect_err(bad);
            let flag = bad.split('=').next().unwrap_or_default();
            assert!(err.0.contains(flag), "{bad}: {err}");
        }
    }

    #[test]
    fn signing_is_refused_where_nothing_would_sign() {
        let flags = |args: &[&str]| {
            let all = [
                "--source=service",
                "--provider=dns-server",
                "--dns-server-zone=example.org",
            ];
            crate::settings::tests::test_flags(all.iter().chain(args).copied())
        };
        assert!(dnssec_refused_here(&flags(&[]), "--webhook-server").is_ok());
        let err = dnssec_refused_here(&flags(&["--dns-server-dnssec-zone=example.org"]), "--webhook-server")
            .expect_err("refused");
        assert!(err.0.contains("--webhook-server"), "{err}");
    }
}
