//! Unbound as a validating resolver for the DNSSEC tests, beside BIND's ([`crate::validator`]): on a free
//! port of 127.0.0.1, with trust anchors given as DS records (a parent's view of a zone) and each zone
//! served by a stub to a server under test, so Unbound iterates to it as to an authoritative server (no
//! forwarding: it asks the parent side for a DS, follows delegations, caches as a resolver on the internet
//! does). Every answer it gives is one it checked: `ad` when secure, SERVFAIL when bogus.
//!
//! The anchors can be swapped while it runs ([`Unbound::set_anchors`], a reload that keeps the cache): what
//! a resolver sees when the parent's DS changes during a key rollover.

use std::ops::Deref;
use std::path::PathBuf;
use std::process::Command;

use crate::loopback::{LoopbackServer, nonce, server_dir, started};
use crate::validator::{Validated, ask};
use crate::{free_port, need};

/// A running validating Unbound; killed when dropped. Its port and log are the [`LoopbackServer`]'s.
pub struct Unbound {
    server: LoopbackServer,
    config: PathBuf,
}

impl Deref for Unbound {
    type Target = LoopbackServer;

    fn deref(&self) -> &LoopbackServer {
        &self.server
    }
}

/// A zone Unbound sends to a server under test: its name (no trailing dot) and the 127.0.0.1 port.
#[derive(Debug, Clone, Copy)]
pub struct Stub<'a> {
    /// The zone.
    pub zone: &'a str,
    /// Where its authoritative server answers on 127.0.0.1.
    pub port: u16,
}

impl Unbound {
    /// Unbound trusting `anchors` (each `ZONE. DS KEYTAG ALGORITHM DIGESTTYPE HEX`, as a parent holds it)
    /// and asking each stub's server for its zone; panics with its log if it does not come up.
    pub fn start(anchors: &[String], stubs: &[Stub<'_>]) -> Unbound {
        started("the validating Unbound", || Self::try_start(anchors, stubs))
    }

    fn try_start(anchors: &[String], stubs: &[Stub<'_>]) -> Result<Unbound, String> {
        let dir = server_dir("unbound")?;
        let port = free_port();
        let nonce = nonce(port);
        let dp = dir.path().display().to_string();
        write_anchors(&dir.path().join("anchors"), anchors)?;
        // Run as whoever runs the test, in the foreground, logging to stderr (the server log); nothing is
        // asked beyond the stubs: every name the tests ask is in a stub zone, under a trust anchor.
        // `val-log-level: 2` logs why an answer is bogus; `do-not-query-localhost: no` lets it ask loopback.
        let mut conf = format!(
            "server:\n username: \"\"\n chroot: \"\"\n directory: \"{dp}\"\n pidfile: \"{dp}/unbound.pid\"\n \
             use-syslog: no\n logfile: \"\"\n verbosity: 1\n val-log-level: 2\n num-threads: 1\n \
             interface: 127.0.0.1\n port: {port}\n do-ip6: no\n so-reuseport: no\n \
             outgoing-interface: 127.0.0.1\n access-control: 127.0.0.0/8 allow\n do-not-query-localhost: no\n \
             module-config: \"validator iterator\"\n trust-anchor-file: \"{dp}/anchors\"\n \
             qname-minimisation: no\n target-fetch-policy: \"0 0 0 0 0\"\n hide-version: no\n \
             version: \"{nonce}\"\nremote-control:\n control-enable: yes\n control-interface: \"{dp}/control.sock\"\n"
        );
        for stub in stubs {
            conf.push_str(&format!(
                "stub-zone:\n name: \"{}\"\n stub-addr: 127.0.0.1@{}\n stub-prime: no\n",
                stub.zone, stub.port
            ));
        }
        let config = dir.path().join("unbound.conf");
        std::fs::write(&config, conf).map_err(|e| e.to_string())?;
        let mut cmd = Command::new(need("unbound"));
        cmd.arg("-d").arg("-c").arg(&config);
        let mut server = LoopbackServer::spawn(&mut cmd, port, dir)?;
        server.wait_ready(&nonce, || true)?;
        Ok(Unbound { server, config })
    }

    /// Asks Unbound for `name TYPE` (recursion desired, DO set) and reads what it validated.
    pub fn ask(&self, name: &str, rtype: &str) -> Validated {
        ask(self.port, name, rtype)
    }

    /// Trusts `anchors` instead, keeping the cache (`unbound-control reload_keep_cache`): the parent's DS
    /// changed, and the resolver holds what it cached before. Panics when Unbound refuses.
    pub fn set_anchors(&self, anchors: &[String]) {
        if let Err(e) = write_anchors(&self.dir().join("anchors"), anchors) {
            panic!("cannot write Unbound's anchors: {e}");
        }
        let out = Command::new(need("unbound-control"))
            .arg("-c")
            .arg(&self.config)
            .arg("reload_keep_cache")
            .output()
            .unwrap_or_else(|e| panic!("cannot run unbound-control: {e}"));
        assert!(
            out.status.success() && String::from_utf8_lossy(&out.stdout).contains("ok"),
            "unbound-control reload_keep_cache: {}{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            self.log()
        );
    }
}

/// The trust-anchor file: one DS line a zone.
fn write_anchors(path: &std::path::Path, anchors: &[String]) -> Result<(), String> {
    let mut text = String::new();
    for anchor in anchors {
        text.push_str(anchor.trim());
        text.push('\n');
    }
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}
