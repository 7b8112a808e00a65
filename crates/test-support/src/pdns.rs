//! A real PowerDNS Authoritative server for the integration tests: `pdns_server` from Debian started as a
//! child process on 127.0.0.1 free ports (DNS and HTTP API), with the gsqlite3 backend in a temporary
//! directory, and stopped by PID when the handle drops. Tests check [`crate::Server::PowerDns`] first.
//!
//! Answers are checked with `dig` against the server's DNS port, never by reading the database.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::ops::Deref;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::loopback::{LoopbackServer, nonce, server_dir, started};
use crate::{PDNS_SQLITE_SCHEMA as SCHEMA, free_port, need};

/// The API key the server is started with (`X-API-Key`).
pub const API_KEY: &str = "extdns-test-api-key";

/// One zone the server serves, with records extdns does not own (`name TYPE content`, names relative to
/// the zone or `@`).
#[derive(Debug, Clone, Default)]
pub struct Zone {
    /// The zone's name, no trailing dot.
    pub name: String,
    /// Records as (name, type, content).
    pub records: Vec<(String, String, String)>,
}

impl Zone {
    /// A zone with only its SOA and NS records.
    pub fn new(name: &str) -> Zone {
        Zone {
            name: name.into(),
            records: Vec::new(),
        }
    }

    /// Adds a record.
    pub fn with_record(mut self, name: &str, rtype: &str, content: &str) -> Zone {
        self.records.push((name.into(), rtype.into(), content.into()));
        self
    }
}

/// A running PowerDNS authoritative server with its HTTP API; killed when dropped. Its DNS port, log and
/// queries are the [`LoopbackServer`]'s it dereferences to.
pub struct PowerDns {
    /// The HTTP API port on 127.0.0.1.
    pub api_port: u16,
    server: LoopbackServer,
}

impl Deref for PowerDns {
    type Target = LoopbackServer;

    fn deref(&self) -> &LoopbackServer {
        &self.server
    }
}

impl PowerDns {
    /// Starts a server for `zones` on a SQLite backend; panics with the log if it does not come up.
    pub fn start(zones: &[Zone]) -> PowerDns {
        started("pdns_server", || Self::try_start(zones))
    }

    fn try_start(zones: &[Zone]) -> Result<PowerDns, String> {
        let server = need("pdns_server");
        let pdnsutil = need("pdnsutil");
        if !Path::new(SCHEMA).is_file() {
            return Err(format!(
                "{SCHEMA} is missing: install it with `apt-get install -y pdns-backend-sqlite3`"
            ));
        }
        let dir = server_dir("pdns")?;
        let d = dir.path();
        let db = d.join("pdns.sqlite3");
        let schema = std::fs::File::open(SCHEMA).map_err(|e| format!("{SCHEMA}: {e}"))?;
        let out = Command::new(need("sqlite3"))
            .arg(&db)
            .stdin(schema)
            .output()
            .map_err(|e| format!("sqlite3: {e}"))?;
        if !out.status.success() {
            return Err(format!("sqlite3 schema: {}", String::from_utf8_lossy(&out.stderr)));
        }
        let (port, api_port) = (free_port(), free_port());
        let nonce = nonce(port);
        let conf = format!(
            "launch=gsqlite3\ngsqlite3-database={db}\nlocal-address=127.0.0.1\nlocal-port={port}\n\
             api=yes\napi-key={API_KEY}\nwebserver=yes\nwebserver-address=127.0.0.1\nwebserver-port={api_port}\n\
             webserver-allow-from=127.0.0.0/8\nsocket-dir={dir}\ndaemon=no\nguardian=no\ndisable-syslog=yes\n\
             loglevel=4\nsecurity-poll-suffix=\nversion-string={nonce}\n\
             default-soa-content=ns1.@ hostmaster.@ 0 10800 3600 604800 300\ncache-ttl=0\nnegquery-cache-ttl=0\n\
             query-cache-ttl=0\nzone-cache-refresh-interval=0\n",
            db = db.display(),
            dir = d.display(),
        );
        std::fs::write(d.join("pdns.conf"), conf).map_err(|e| e.to_string())?;
        let config_dir = format!("--config-dir={}", d.display());
        for zone in zones {
            let z = zone.name.as_str();
            run(Command::new(&pdnsutil).args([&config_dir, "create-zone", z, &format!("ns1.{z}")]))?;
            // What a zone created through the API gets: every PATCH bumps the serial, which the tests
            // read to tell whether a run wrote anything.
            run(Command::new(&pdnsutil).args([&config_dir, "set-meta", z, "SOA-EDIT-API", "DEFAULT"]))?;
            for (name, rtype, content) in &zone.records {
                run(Command::new(&pdnsutil).args([&config_dir, "add-record", z, name, rtype, "300", content]))?;
            }
        }
        let mut cmd = Command::new(server);
        cmd.arg(&config_dir);
        let mut server = LoopbackServer::spawn(&mut cmd, port, dir)?;
        // Both doors open: the API too.
        server.wait_ready(&nonce, || {
            api_get(api_port, "/api/v1/servers/localhost").starts_with("HTTP/1.1 200")
        })?;
        Ok(PowerDns { api_port, server })
    }

    /// `GET path` on the API with the key; the raw answer (status line first), empty when unreachable.
    pub fn api_get(&self, path: &str) -> String {
        api_get(self.api_port, path)
    }

    /// The API's base URL, as `--pdns-server` takes it.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.api_port)
    }

    /// Add a record extdns does not own, while the server runs (`pdnsutil` writes the same database).
    pub fn add_record(&self, zone: &str, name: &str, rtype: &str, content: &str) {
        let config_dir = format!("--config-dir={}", self.dir().display());
        if let Err(e) =
            run(Command::new(need("pdnsutil")).args([&config_dir, "add-record", zone, name, rtype, "300", content]))
        {
            panic!("{e}");
        }
    }

    /// Every record of the zone by AXFR (allowed from 127.0.0.0/8 by default), as `name TYPE content` lines
    /// without TTLs, sorted.
    pub fn axfr(&self, zone: &str) -> Vec<String> {
        let mut v: Vec<String> = self
            .dig_raw(&["+tcp", "+noall", "+answer", zone, "AXFR"])
            .lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                (f.len() >= 5 && f[3] != "SOA").then(|| format!("{} {} {}", f[0], f[3], f[4..].join(" ")))
            })
            .collect();
        v.sort();
        v.dedup();
        v
    }
}

/// `GET path` on the API on `api_port` with the key; the raw answer (status line first), empty when
/// unreachable.
fn api_get(api_port: u16, path: &str) -> String {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", api_port)) else {
        return String::new();
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let req = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-API-Key: {API_KEY}\r\nConnection: close\r\n\r\n");
    if s.write_all(req.as_bytes()).is_err() {
        return String::new();
    }
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

fn run(cmd: &mut Command) -> Result<(), String> {
    let out = cmd.output().map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{cmd:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}
