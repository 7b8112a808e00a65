//! Real DNS servers for the integration tests: BIND 9 (`named`) and Knot (`knotd`) started as child
//! processes on 127.0.0.1 with a free port, their configuration in a temporary directory, and stopped by
//! PID when the handle drops. Tests check [`crate::Server::Bind`] or [`crate::Server::Knot`] first.
//!
//! Answers are checked with `dig` queries ([`crate::dig`]), never by reading zone files.

use std::ops::Deref;
use std::path::Path;
use std::process::Command;

use crate::loopback::{LoopbackServer, nonce, server_dir, started};
use crate::{dig, free_port, need};

/// The test TSIG key, kept with the `dig` helpers that sign with it.
pub use crate::dig::{KEY_NAME, SECRET};
/// A secret the servers do not know, for the wrong-key tests.
pub const WRONG_SECRET: &str = "d3Jvbmctc2VjcmV0LWZvci1pbnRlZ3JhdGlvbi10ZXN0cw==";

/// Which authoritative server to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// ISC BIND 9 (`named`).
    Bind,
    /// Knot DNS (`knotd`).
    Knot,
}

impl Kind {
    /// Lower-case name, for test names and messages.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Bind => "bind",
            Kind::Knot => "knot",
        }
    }
}

/// One zone the server is primary for.
#[derive(Debug, Clone, Default)]
pub struct Zone {
    /// The zone's name, no trailing dot.
    pub name: String,
    /// Extra zone-file lines (relative names are under the zone).
    pub records: Vec<String>,
    /// Owner names (fully qualified, no trailing dot) the update policy refuses.
    pub refused: Vec<String>,
    /// Open to unsigned updates and transfers from anyone (for `--rfc2136-insecure`).
    pub open: bool,
}

impl Zone {
    /// A zone with only its SOA and NS records, updatable with [`KEY_NAME`].
    pub fn new(name: &str) -> Zone {
        Zone {
            name: name.into(),
            ..Zone::default()
        }
    }
    /// Adds a zone-file line.
    pub fn with_record(mut self, line: &str) -> Zone {
        self.records.push(line.into());
        self
    }
    /// Refuses updates to `owner`.
    pub fn refusing(mut self, owner: &str) -> Zone {
        self.refused.push(owner.into());
        self
    }
    /// Allows unsigned updates and transfers.
    pub fn open(mut self) -> Zone {
        self.open = true;
        self
    }
}

/// An extra TSIG key the server knows (besides `externaldns-key`/hmac-sha256), e.g. for other algorithms.
#[derive(Debug, Clone)]
pub struct ExtraKey {
    /// Key name.
    pub name: String,
    /// Algorithm as the server spells it (`hmac-sha512`).
    pub algorithm: String,
    /// Base64 secret.
    pub secret: String,
}

/// The primary a secondary follows: where it listens, and the key its transfers and NOTIFY are signed with.
#[derive(Debug, Clone)]
pub struct Primary {
    /// The primary's port on 127.0.0.1 (UDP and TCP).
    pub port: u16,
    /// The TSIG key shared with the primary, if any; the secondary signs its SOA queries and transfers with
    /// it and accepts NOTIFY only signed with it.
    pub key: Option<ExtraKey>,
}

impl Primary {
    /// The clause of a secondary's configuration naming the key shared with the primary, as `clause`
    /// spells it for the server's syntax; empty when they share none.
    fn key_clause(&self, clause: impl Fn(&str) -> String) -> String {
        self.key.as_ref().map(|k| clause(&k.name)).unwrap_or_default()
    }
}

/// What a launched server is for its zones.
#[derive(Debug, Clone)]
enum Role {
    /// Primary, from zone files.
    Primary,
    /// Secondary of this primary, starting empty, on this port (the primary sends NOTIFY to it).
    Secondary(Primary, u16),
}

/// A running BIND or Knot, primary for the given zones (or secondary, [`DnsServer::start_secondary`]);
/// killed when dropped. Its port, log and queries are the [`LoopbackServer`]'s it dereferences to.
pub struct DnsServer {
    /// Which server it is.
    pub kind: Kind,
    /// BIND's DNS-over-TLS port, when started with [`DnsServer::start_bind_tls`]; the CA that signed its
    /// certificate (for 127.0.0.1) is `ca.crt` in [`LoopbackServer::dir`].
    pub tls_port: Option<u16>,
    server: LoopbackServer,
}

impl Deref for DnsServer {
    type Target = LoopbackServer;

    fn deref(&self) -> &LoopbackServer {
        &self.server
    }
}

fn zone_file(zone: &Zone) -> String {
    let mut s = format!(
        "$TTL 300\n$ORIGIN {z}.\n@ IN SOA ns1.{z}. hostmaster.{z}. ( 1 3600 600 86400 300 )\n  IN NS ns1.{z}.\nns1 IN A 127.0.0.1\n",
        z = zone.name
    );
    for r in &zone.records {
        s.push_str(r);
        s.push('\n');
    }
    s
}

impl DnsServer {
    /// Starts a server for `zones`; panics with the server's log if it does not come up.
    pub fn start(kind: Kind, zones: &[Zone]) -> DnsServer {
        Self::start_with_keys(kind, zones, &[])
    }

    /// [`DnsServer::start`], with more TSIG keys.
    pub fn start_with_keys(kind: Kind, zones: &[Zone], keys: &[ExtraKey]) -> DnsServer {
        Self::start_full(kind, zones, keys, false)
    }

    /// BIND with a DNS-over-TLS listener besides the plain one.
    pub fn start_bind_tls(zones: &[Zone]) -> DnsServer {
        Self::start_full(Kind::Bind, zones, &[], true)
    }

    /// A secondary on `port` (chosen with [`free_port`] before the primary starts, so the primary can name it
    /// for NOTIFY) for `zones` (names only) of the primary on 127.0.0.1. It takes them by AXFR at once,
    /// follows NOTIFY with IXFR, and serves them to `dig` (transfers too: with [`KEY_NAME`], as
    /// [`DnsServer::axfr`] signs). The zones are not loaded yet when this returns: wait for their serial.
    pub fn start_secondary(kind: Kind, port: u16, zones: &[&str], primary: &Primary) -> DnsServer {
        let zones: Vec<Zone> = zones.iter().map(|z| Zone::new(z)).collect();
        let keys: Vec<ExtraKey> = primary.key.iter().filter(|k| k.name != KEY_NAME).cloned().collect();
        Self::start_role(kind, &zones, &keys, false, &Role::Secondary(primary.clone(), port))
    }

    fn start_full(kind: Kind, zones: &[Zone], keys: &[ExtraKey], tls: bool) -> DnsServer {
        Self::start_role(kind, zones, keys, tls, &Role::Primary)
    }

    fn start_role(kind: Kind, zones: &[Zone], keys: &[ExtraKey], tls: bool, role: &Role) -> DnsServer {
        started(kind.name(), || Self::try_start(kind, zones, keys, tls, role))
    }

    fn try_start(kind: Kind, zones: &[Zone], keys: &[ExtraKey], tls: bool, role: &Role) -> Result<DnsServer, String> {
        let dir = server_dir(kind.name())?;
        let port = match role {
            Role::Secondary(_, port) => *port,
            Role::Primary => free_port(),
        };
        let nonce = nonce(port);
        let d = dir.path();
        let mut all_keys = vec![ExtraKey {
            name: KEY_NAME.into(),
            algorithm: "hmac-sha256".into(),
            secret: SECRET.into(),
        }];
        all_keys.extend_from_slice(keys);
        let tls_port = tls.then(free_port);
        let launch = Launch {
            dir: d,
            port,
            nonce: &nonce,
            zones,
            keys: &all_keys,
            role,
        };
        let mut cmd = match kind {
            Kind::Bind => bind_command(&launch, tls_port)?,
            Kind::Knot => knot_command(&launch)?,
        };
        let mut server = LoopbackServer::spawn(&mut cmd, port, dir)?;
        server.wait_ready(&nonce, || true)?;
        Ok(DnsServer { kind, tls_port, server })
    }

    /// Stops the server answering without stopping it (SIGSTOP): queries and updates go unanswered, as from
    /// a provider whose API is down, until [`DnsServer::thaw`]; its zones are untouched meanwhile.
    pub fn freeze(&self) {
        self.server.signal("-STOP");
    }

    /// Lets a [`DnsServer::freeze`]d server answer again (SIGCONT).
    pub fn thaw(&self) {
        self.server.signal("-CONT");
    }

    /// Makes the server read its configuration again (SIGHUP), so a test that edited `named.conf` in
    /// [`LoopbackServer::dir`] (an update policy, a key) applies it without a restart; BIND keeps what its
    /// dynamic zones hold. Returns at once: wait for the server's log to say the reload finished.
    pub fn reload(&self) {
        self.server.signal("-HUP");
    }

    /// The zone by AXFR with the test key, sorted, without the SOA.
    pub fn axfr(&self, zone: &str) -> anyhow::Result<Vec<dig::Record>> {
        dig::axfr(self.port, zone)
    }
}

/// What either server is started with: its directory, DNS port, version string (the nonce that tells this
/// start's server from a stale one), zones, keys and role.
struct Launch<'a> {
    dir: &'a Path,
    port: u16,
    nonce: &'a str,
    zones: &'a [Zone],
    keys: &'a [ExtraKey],
    role: &'a Role,
}

/// The command that starts BIND for `launch`, with DNS over TLS on `tls_port` when given.
fn bind_command(launch: &Launch<'_>, tls_port: Option<u16>) -> Result<Command, String> {
    let (d, port, nonce) = (launch.dir, launch.port, launch.nonce);
    let (zones, keys, role) = (launch.zones, launch.keys, launch.role);
    let named = need("named");
    let mut conf = String::new();
    let mut tls_listen = String::new();
    if let Some(tls_port) = tls_port {
        // A CA and a server certificate for 127.0.0.1 signed by it (a self-signed CA certificate cannot be
        // the server's own certificate for rustls).
        crate::tls::Ca::for_localhost(d).map_err(|e| format!("{e:#}"))?;
        conf.push_str(&format!(
            "tls local-tls {{ key-file \"{0}/server.key\"; cert-file \"{0}/server.crt\"; }};\n",
            d.display()
        ));
        tls_listen = format!(" listen-on port {tls_port} tls local-tls {{ 127.0.0.1; }};\n");
    }
    for k in keys {
        conf.push_str(&format!(
            "key \"{}\" {{ algorithm {}; secret \"{}\"; }};\n",
            k.name, k.algorithm, k.secret
        ));
    }
    let dp = d.display();
    conf.push_str(&format!(
        "options {{\n directory \"{dp}\";\n pid-file \"{dp}/named.pid\";\n session-keyfile \"{dp}/session.key\";\n \
         managed-keys-directory \"{dp}\";\n listen-on port {port} {{ 127.0.0.1; }};\n{tls_listen} listen-on-v6 {{ none; }};\n \
         recursion no;\n allow-query {{ any; }};\n dnssec-validation no;\n notify no;\n version \"{nonce}\";\n}};\n\
         controls {{ }};\n"
    ));
    for z in zones {
        if let Role::Secondary(primary, _) = role {
            let key = primary.key_clause(|name| format!(" key \"{name}\""));
            conf.push_str(&format!(
                "zone \"{n}\" {{ type secondary; primaries {{ 127.0.0.1 port {p}{key}; }}; file \"{dp}/{n}.secondary\"; \
                 allow-transfer {{ any; }}; }};\n",
                n = z.name,
                p = primary.port,
            ));
            continue;
        }
        std::fs::write(d.join(format!("{}.zone", z.name)), zone_file(z)).map_err(|e| e.to_string())?;
        let (update, transfer) = if z.open {
            (
                "allow-update { any; };".to_string(),
                "allow-transfer { any; };".to_string(),
            )
        } else {
            let mut policy = String::from("update-policy {");
            for owner in &z.refused {
                for k in keys {
                    policy.push_str(&format!(" deny \"{}\" name {owner}. ANY;", k.name));
                }
            }
            for k in keys {
                policy.push_str(&format!(" grant \"{}\" zonesub ANY;", k.name));
            }
            policy.push_str(" };");
            let names: Vec<String> = keys.iter().map(|k| format!("key \"{}\";", k.name)).collect();
            (policy, format!("allow-transfer {{ {} }};", names.join(" ")))
        };
        conf.push_str(&format!(
            "zone \"{n}\" {{ type primary; file \"{dp}/{n}.zone\"; {update} {transfer} }};\n",
            n = z.name
        ));
    }
    let path = d.join("named.conf");
    std::fs::write(&path, conf).map_err(|e| e.to_string())?;
    let mut cmd = Command::new(named);
    cmd.arg("-g").arg("-c").arg(&path);
    Ok(cmd)
}

/// The command that starts Knot for `launch`.
fn knot_command(launch: &Launch<'_>) -> Result<Command, String> {
    let (d, port, nonce) = (launch.dir, launch.port, launch.nonce);
    let (zones, keys, role) = (launch.zones, launch.keys, launch.role);
    let knotd = need("knotd");
    let dp = d.display();
    std::fs::create_dir_all(d.join("zones")).map_err(|e| e.to_string())?;
    std::fs::create_dir_all(d.join("db")).map_err(|e| e.to_string())?;
    let mut conf = format!(
        "server:\n    rundir: \"{dp}\"\n    pidfile: \"{dp}/knot.pid\"\n    listen: 127.0.0.1@{port}\n    version: \"{nonce}\"\n\
         log:\n  - target: stderr\n    any: info\ndatabase:\n    storage: \"{dp}/db\"\ncontrol:\n    listen: \"{dp}/knot.sock\"\nkey:\n"
    );
    for k in keys {
        conf.push_str(&format!(
            "  - id: {}\n    algorithm: {}\n    secret: {}\n",
            k.name, k.algorithm, k.secret
        ));
    }
    let key_list: Vec<&str> = keys.iter().map(|k| k.name.as_str()).collect();
    conf.push_str(&format!(
        "acl:\n  - id: externaldns\n    key: [{}]\n    action: [update, transfer]\n  - id: open\n    address: 127.0.0.0/8\n    action: [update, transfer]\n",
        key_list.join(", ")
    ));
    if let Role::Secondary(primary, _) = role {
        let key = primary.key_clause(|name| format!("\n    key: {name}"));
        conf.push_str(&format!(
            "  - id: from-primary\n    address: 127.0.0.1{key}\n    action: notify\n\
             remote:\n  - id: primary\n    address: 127.0.0.1@{}{key}\n",
            primary.port
        ));
    }
    // Knot's ACLs cannot refuse one owner name inside an otherwise allowed update, so refusal tests use BIND.
    assert!(
        zones.iter().all(|z| z.refused.is_empty()),
        "refused names are only supported with BIND"
    );
    conf.push_str("zone:\n");
    for z in zones {
        if matches!(role, Role::Secondary(..)) {
            // Kept in memory only (no zone file, no journal): what it serves is what it transferred.
            conf.push_str(&format!(
                "  - domain: {}\n    storage: \"{dp}/zones\"\n    master: primary\n    acl: [from-primary, externaldns]\n    \
                 zonefile-sync: -1\n    zonefile-load: none\n    journal-content: none\n",
                z.name
            ));
            continue;
        }
        std::fs::write(d.join("zones").join(format!("{}.zone", z.name)), zone_file(z)).map_err(|e| e.to_string())?;
        let acl = if z.open { "open" } else { "externaldns" };
        conf.push_str(&format!(
            "  - domain: {}\n    storage: \"{dp}/zones\"\n    file: \"{}.zone\"\n    acl: [{acl}]\n",
            z.name, z.name
        ));
    }
    let path = d.join("knot.conf");
    std::fs::write(&path, conf).map_err(|e| e.to_string())?;
    let mut cmd = Command::new(knotd);
    cmd.arg("-c").arg(&path);
    Ok(cmd)
}
