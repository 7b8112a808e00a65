//! `--provider=dns-server`: the `--dns-server-*` flags into the built-in server's [`ServerConfig`]. Every
//! value is checked here, once, and a bad one fails startup with the flag and the value named (never a
//! TSIG secret).

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use base64::Engine as _;
use extdns_dns_server::{Limits, Secondary, ServerConfig, ZoneConfig};
use extdns_dns_wire::{TsigAlgorithm, TsigKey};
use hickory_proto::rr::Name;

use super::{ValidationError, fail};
use crate::flags::Flags;

/// The port a `--dns-server-secondary` without one is sent NOTIFY on.
const DNS_PORT: u16 = 53;

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
    if let Some((name, ip)) = name_servers
        .iter()
        .find_map(|(n, ip)| ip.map(|ip| (n, ip)).filter(|_| !origins.iter().any(|z| z.zone_of(n))))
    {
        return fail(format!(
            "--dns-server-ns={}={ip}: an address is glue, served only for a name inside a --dns-server-zone, \
             and {} is in none; drop =IP",
            text(name),
            text(name)
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
        .iter()
        .map(|origin| {
            let default_ns = [(prepend("ns1", origin)?, None)];
            let servers = if name_servers.is_empty() {
                &default_ns[..]
            } else {
                &name_servers[..]
            };
            Ok(ZoneConfig {
                origin: origin.clone(),
                mname: servers[0].0.clone(),
                rname: match &rname {
                    Some(r) => r.clone(),
                    None => prepend("hostmaster", origin)?,
                },
                refresh,
                retry,
                expire,
                minimum,
                ttl: default_ttl,
                name_servers: servers.iter().map(|(n, _)| n.clone()).collect(),
                glue: servers
                    .iter()
                    .filter_map(|(n, ip)| ip.filter(|_| origin.zone_of(n)).map(|ip| (n.clone(), ip)))
                    .collect(),
            })
        })
        .collect::<Result<Vec<_>, ValidationError>>()?;
    let keys = tsig_keys(&f.dns_server_tsig_key)?;
    let secondaries = f
        .dns_server_secondary
        .iter()
        .map(|s| secondary(s, &keys))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ServerConfig {
        listen,
        zones,
        default_ttl,
        secondaries,
        keys,
        limits: Limits::default(),
    })
}

/// `--dns-server-zone`: at least one, each a valid name, none twice.
fn zones(values: &[String]) -> Result<Vec<Name>, ValidationError> {
    let mut zones: Vec<Name> = Vec::new();
    for value in values.iter().map(|v| v.trim()).filter(|v| !v.is_empty()) {
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
fn name_servers(values: &[String]) -> Result<Vec<(Name, Option<IpAddr>)>, ValidationError> {
    let mut out: Vec<(Name, Option<IpAddr>)> = Vec::new();
    for value in values.iter().map(|v| v.trim()).filter(|v| !v.is_empty()) {
        let (host, ip) = match value.split_once('=') {
            Some((host, ip)) => {
                let ip = ip.trim().parse::<IpAddr>().map_err(|_| {
                    ValidationError(format!(
                        "--dns-server-ns={value}: {ip:?} is not an IP address (want NAME or NAME=IP)"
                    ))
                })?;
                (host.trim(), Some(ip))
            }
            None => (value, None),
        };
        let host = name("--dns-server-ns", host)?;
        if out.iter().any(|(n, _)| *n == host) {
            return fail(format!("--dns-server-ns: {} is given twice", text(&host)));
        }
        out.push((host, ip));
    }
    Ok(out)
}

/// `--dns-server-tsig-key=NAME:ALGORITHM:BASE64-SECRET`; messages never show the secret.
fn tsig_keys(values: &[String]) -> Result<Vec<TsigKey>, ValidationError> {
    let mut keys: Vec<TsigKey> = Vec::new();
    for value in values.iter().map(|v| v.trim()).filter(|v| !v.is_empty()) {
        let mut parts = value.splitn(3, ':');
        let (Some(key_name), Some(algorithm), Some(secret)) = (parts.next(), parts.next(), parts.next()) else {
            let shown = value.split(':').next().unwrap_or_default();
            return fail(format!(
                "--dns-server-tsig-key (key {shown:?}): want NAME:ALGORITHM:BASE64-SECRET"
            ));
        };
        let flag = format!("--dns-server-tsig-key (key {key_name:?})");
        let algorithm: TsigAlgorithm = algorithm.parse().map_err(|e| ValidationError(format!("{flag}: {e}")))?;
        let secret = base64::engine::general_purpose::STANDARD
            .decode(secret.trim())
            .map_err(|_| ValidationError(format!("{flag}: the secret is not standard base64")))?;
        let key = TsigKey::new(key_name, algorithm, &secret).map_err(|e| ValidationError(format!("{flag}: {e}")))?;
        if keys.iter().any(|k| k.name().eq_ignore_ascii_case(&key.name())) {
            return fail(format!("{flag} is given twice"));
        }
        keys.push(key);
    }
    Ok(keys)
}

/// `--dns-server-secondary=ADDR[:PORT][/KEY-NAME]`: an IP address (transfers are allowed by source
/// address), and the name of a `--dns-server-tsig-key`.
fn secondary(value: &str, keys: &[TsigKey]) -> Result<Secondary, ValidationError> {
    let value = value.trim();
    let (address, key) = match value.rsplit_once('/') {
        Some((address, key)) => (address.trim(), Some(key.trim())),
        None => (value, None),
    };
    let address = address
        .parse::<SocketAddr>()
        .or_else(|_| {
            address
                .trim_matches(['[', ']'])
                .parse::<IpAddr>()
                .map(|ip| SocketAddr::new(ip, DNS_PORT))
        })
        .map_err(|_| {
            ValidationError(format!(
                "--dns-server-secondary={value}: {address:?} is not an IP address, with or without a port \
                 (192.0.2.1, 192.0.2.1:5353, [2001:db8::1]:53)"
            ))
        })?;
    let key = match key {
        None => None,
        Some(k) => {
            let Some(known) = keys
                .iter()
                .find(|known| known.name().eq_ignore_ascii_case(k.trim_end_matches('.')))
            else {
                return fail(format!(
                    "--dns-server-secondary={value}: no --dns-server-tsig-key is named {k:?}"
                ));
            };
            Some(name("--dns-server-secondary", &known.name())?)
        }
    };
    Ok(Secondary { address, key })
}

/// A domain name from a flag, fully qualified and lower case.
fn name(flag: &str, value: &str) -> Result<Name, ValidationError> {
    let bad = |why: &str| ValidationError(format!("{flag}={value}: not a domain name ({why})"));
    if value.is_empty() || value == "." {
        return Err(bad("empty"));
    }
    let mut n = Name::from_ascii(value).map_err(|e| bad(&e.to_string()))?;
    n.set_fqdn(true);
    Ok(n.to_lowercase())
}

/// `label.<origin>`.
fn prepend(label: &str, origin: &Name) -> Result<Name, ValidationError> {
    Name::from_ascii(label)
        .and_then(|l| l.append_domain(origin))
        .map_err(|e| ValidationError(format!("{label}.{}: {e}", text(origin))))
}

/// A duration in a SOA or TTL field: whole seconds, at least `min`, at most 2^31 - 1 (RFC 2181 section 8
/// for TTLs; BIND and Knot read the SOA timers as signed 32-bit values too).
fn seconds(flag: &str, d: Duration, min: u32) -> Result<u32, ValidationError> {
    let shown = extdns_endpoint::go_duration::format(d);
    if d.subsec_nanos() != 0 {
        return fail(format!("{flag}={shown}: want whole seconds"));
    }
    match u32::try_from(d.as_secs()).ok().filter(|&s| s <= i32::MAX as u32) {
        None => fail(format!(
            "{flag}={shown}: at most 2147483647s (about 68 years), the largest value a SOA or TTL field holds"
        )),
        Some(s) if s < min => fail(format!("{flag}={shown}: want at least {min}s")),
        Some(s) => Ok(s),
    }
}

/// A name as users write it: no trailing dot.
fn text(n: &Name) -> String {
    n.to_ascii().trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(args: &[&str]) -> Flags {
        crate::settings::test_flags(
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
        let other = crate::settings::test_flags(["--source=service", "--provider=inmemory"]);
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
}
