//! A real dnsmasq (Debian's `dnsmasq-base`, the binary alone) on a free 127.0.0.1 port, serving a hosts
//! file and `cname=` lines as Pi-hole's FTL (a dnsmasq fork) does: its `dns.hosts` become a hosts file
//! (`addn-hosts`), its `dns.cnameRecords` `cname=` lines of its dnsmasq configuration. The Pi-hole fake
//! ([`crate::pihole_fake`]) loads its lists here after every change, so `dig` sees what a client wrote.
//! Tests check [`crate::Server::Dnsmasq`] first.
//!
//! dnsmasq reads `cname=` lines only when it starts (a SIGHUP re-reads hosts files alone), so a load
//! restarts it, as FTL restarts its resolver when its CNAME list changes.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::loopback::server_dir;
use crate::proc::OwnedChild;
use crate::{dig, free_port, need};

/// A running dnsmasq; killed (by PID) when dropped.
pub struct Dnsmasq {
    /// The DNS port on 127.0.0.1 (UDP and TCP).
    pub port: u16,
    child: Option<OwnedChild>,
    dir: tempfile::TempDir,
    /// A name always in the hosts it serves, answered once it is up.
    marker: String,
}

impl Dnsmasq {
    /// A dnsmasq serving nothing yet; panics with its log if it does not come up.
    pub fn start() -> Dnsmasq {
        let dir = server_dir("dnsmasq").unwrap_or_else(|e| panic!("{e}"));
        // dnsmasq started as root reads its files as `nobody`.
        allow_reading(dir.path());
        let port = free_port();
        let marker = format!("ready-{}-{port}.extdns.test", std::process::id());
        let mut server = Dnsmasq {
            port,
            child: None,
            dir,
            marker,
        };
        if let Err(e) = server.load(&[], &[]) {
            panic!("dnsmasq did not start: {e}");
        }
        server
    }

    fn path(&self, file: &str) -> PathBuf {
        self.dir.path().join(file)
    }

    /// Serve these hosts entries (`"IP HOSTNAME..."`) and CNAME definitions (`"NAME,TARGET[,TTL]"`): the
    /// files are written, and dnsmasq restarted and waited for. An error holds dnsmasq's own words.
    pub fn load(&mut self, hosts: &[String], cnames: &[String]) -> Result<(), String> {
        let config = self.write(hosts, cnames)?;
        // The running one, if any, is killed and reaped before the new one binds the port.
        self.child = None;
        let log = std::fs::File::create(self.path("dnsmasq.log")).map_err(|e| e.to_string())?;
        let log2 = log.try_clone().map_err(|e| e.to_string())?;
        let child = Command::new(need("dnsmasq"))
            .arg("--no-daemon")
            .arg(format!("--conf-file={}", config.display()))
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log2)
            .spawn()
            .map_err(|e| format!("cannot start dnsmasq: {e}"))?;
        self.child = Some(OwnedChild(child));
        self.wait_ready()
    }

    /// Whether dnsmasq accepts these CNAME definitions (`dnsmasq --test`), with its message when not: how
    /// FTL checks a new configuration before it restarts its resolver.
    pub fn check(&self, cnames: &[String]) -> Result<(), String> {
        let mut lines = String::new();
        for c in cnames {
            lines.push_str(&format!("cname={c}\n"));
        }
        let file = self.path("check.conf");
        std::fs::write(&file, lines).map_err(|e| e.to_string())?;
        let out = Command::new(need("dnsmasq"))
            .arg("--test")
            .arg(format!("--conf-file={}", file.display()))
            .output()
            .map_err(|e| format!("cannot run dnsmasq --test: {e}"))?;
        if out.status.success() {
            return Ok(());
        }
        let text = String::from_utf8_lossy(&out.stderr).trim().to_string();
        Err(text.replace(&file.display().to_string(), "/etc/pihole/dnsmasq.conf"))
    }

    /// Writes the hosts file, the CNAME lines and the configuration naming them; the configuration's path.
    fn write(&self, hosts: &[String], cnames: &[String]) -> Result<PathBuf, String> {
        let hosts_file = self.path("custom.list");
        let marker_file = self.path("marker.hosts");
        let mut hosts_text = String::new();
        for h in hosts {
            hosts_text.push_str(h);
            hosts_text.push('\n');
        }
        std::fs::write(&hosts_file, hosts_text).map_err(|e| e.to_string())?;
        std::fs::write(&marker_file, format!("127.0.0.1 {}\n", self.marker)).map_err(|e| e.to_string())?;
        let mut conf = format!(
            "port={}\nlisten-address=127.0.0.1\nbind-interfaces\nno-resolv\nno-hosts\nlog-facility=-\n\
             pid-file=\naddn-hosts={}\naddn-hosts={}\n",
            self.port,
            marker_file.display(),
            hosts_file.display()
        );
        for c in cnames {
            conf.push_str(&format!("cname={c}\n"));
        }
        let path = self.path("dnsmasq.conf");
        std::fs::write(&path, conf).map_err(|e| e.to_string())?;
        for f in [&hosts_file, &marker_file, &path] {
            allow_reading(f);
        }
        Ok(path)
    }

    fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(Ok(Some(status))) = self.child.as_mut().map(|c| c.try_wait()) {
                return Err(format!("dnsmasq exited with {status}; log:\n{}", self.log()));
            }
            if dig::short(self.port, &self.marker, "A") == ["127.0.0.1"] {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!("dnsmasq not ready after 20s; log:\n{}", self.log()));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// dnsmasq's log since it last started.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.path("dnsmasq.log")).unwrap_or_default()
    }

    /// The answers to `name TYPE` over TCP, sorted (`dig +short` form).
    pub fn dig(&self, name: &str, rtype: &str) -> Vec<String> {
        dig::short(self.port, name, rtype)
    }
}

fn allow_reading(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let mode = if path.is_dir() { 0o755 } else { 0o644 };
    let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode));
}
