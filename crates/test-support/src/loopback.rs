//! What every real DNS server the tests start has in common: a child process answering on a 127.0.0.1
//! port, its configuration and log in a temporary directory, waited for until it answers `version.bind`
//! with this start's nonce (so a stale server on a reused port is never taken for it), asked with `dig`,
//! and killed by PID when dropped. BIND and Knot ([`crate::dns_server`]) and PowerDNS ([`crate::pdns`])
//! are each one of these and what is theirs; they dereference to it, so `server.dig(..)` reads alike.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::dig;
use crate::proc::OwnedChild;

/// The tries every launcher makes: a port can be taken between choosing it and the server binding it, so
/// a failed start is tried again, three times in all; panics naming `what` with the last failure (its log).
pub fn started<T>(what: &str, mut try_start: impl FnMut() -> Result<T, String>) -> T {
    let mut last = String::new();
    for _ in 0..3 {
        match try_start() {
            Ok(server) => return server,
            Err(e) => last = e,
        }
    }
    panic!("{what} did not start: {last}");
}

/// A directory of its own for a server (`extdns-<name>-…`): its configuration, data and log, removed with
/// the server.
pub fn server_dir(name: &str) -> Result<tempfile::TempDir, String> {
    tempfile::Builder::new()
        .prefix(&format!("extdns-{name}-"))
        .tempdir()
        .map_err(|e| format!("cannot make a directory for {name}: {e}"))
}

/// The version a server on `port` is told to report: unique to this process and port, so that
/// [`LoopbackServer::wait_ready`] never takes a stale server on a reused port for the one it started.
pub fn nonce(port: u16) -> String {
    format!("extdns-test-{}-{port}", std::process::id())
}

/// A DNS server child process on a loopback port; killed when dropped.
pub struct LoopbackServer {
    /// The DNS port on 127.0.0.1 (UDP and TCP).
    pub port: u16,
    child: OwnedChild,
    dir: tempfile::TempDir,
}

impl LoopbackServer {
    /// The server `cmd` starts, answering on `port`, its files in `dir`; its output goes to `server.log`
    /// there. Not waited for: see [`LoopbackServer::wait_ready`].
    pub(crate) fn spawn(cmd: &mut Command, port: u16, dir: tempfile::TempDir) -> Result<LoopbackServer, String> {
        let log = std::fs::File::create(dir.path().join("server.log")).map_err(|e| e.to_string())?;
        let log2 = log.try_clone().map_err(|e| e.to_string())?;
        let child = cmd
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log2)
            .spawn()
            .map_err(|e| format!("cannot start {cmd:?}: {e}"))?;
        Ok(LoopbackServer {
            port,
            child: OwnedChild(child),
            dir,
        })
    }

    /// Waits (20 s at most) until the server answers `version.bind` with `nonce` and `ready` holds too
    /// (another door of the server open, say); an error with its log when it exits or does not get there.
    pub(crate) fn wait_ready(&mut self, nonce: &str, ready: impl Fn() -> bool) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!("exited with {status} during startup; log:\n{}", self.log()));
            }
            if self.dig_raw(&["version.bind", "CH", "TXT", "+short"]).contains(nonce) && ready() {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!("not ready after 20s; log:\n{}", self.log()));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Sends `signal` (`-STOP`, `-CONT`) to the server, by its PID.
    pub(crate) fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .arg(signal)
            .arg(self.child.id().to_string())
            .status();
        assert!(status.is_ok_and(|s| s.success()), "kill {signal} {}", self.child.id());
    }

    /// The server's log so far, for failure messages.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }

    /// The server's working directory (configuration, zones, certificates).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// `dig @127.0.0.1 -p PORT args…`, its whole output.
    pub(crate) fn dig_raw(&self, args: &[&str]) -> String {
        dig::dig(self.port, args)
    }

    /// The answers to `name TYPE` over TCP, sorted (`dig +short` form: TXT values quoted).
    pub fn dig(&self, name: &str, rtype: &str) -> Vec<String> {
        dig::short(self.port, name, rtype)
    }

    /// The TLSA, SVCB or HTTPS answers to `name TYPE` in canonical text, sorted ([`dig::typed`]).
    pub fn dig_typed(&self, name: &str, rtype: &str) -> Vec<String> {
        dig::typed(self.port, name, rtype)
    }

    /// The TTL of the `name TYPE` answer.
    pub fn ttl(&self, name: &str, rtype: &str) -> Option<u32> {
        dig::ttl(self.port, name, rtype)
    }

    /// The zone's SOA serial, read with a query.
    pub fn serial(&self, zone: &str) -> u32 {
        dig::serial(self.port, zone)
    }
}
