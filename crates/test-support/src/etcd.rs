//! A real etcd for the tests: the cached Go build (`EXTDNS_TEST_ETCD`, exported by `cargo xtask test`) started
//! on 127.0.0.1 free ports with its data in a temporary directory, stopped by PID when the handle drops.
//! Contents are checked by reading etcd back over its JSON gateway, never through the provider under test.
//! Tests check [`crate::Server::Etcd`] first.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;

use crate::proc::OwnedChild;
use crate::{env_program, free_port};

/// A running etcd on 127.0.0.1; killed when dropped.
pub struct Etcd {
    /// The client URL (`http://127.0.0.1:<port>`, `https://` with TLS).
    pub url: String,
    /// Held to be killed when dropped.
    _child: OwnedChild,
    _dir: tempfile::TempDir,
}

/// Certificates for a TLS etcd ([`crate::tls`]): a CA, a server certificate for the name `etcd.test` only
/// (not 127.0.0.1, so a client must be told the name), and a client certificate. The server certificate also
/// allows client use: etcd's JSON gateway presents it when it calls etcd's own gRPC port.
pub struct Pki {
    ca: crate::tls::Ca,
    _dir: tempfile::TempDir,
}

impl Pki {
    /// Makes the CA and both certificates in a temporary directory; panics if `openssl` fails.
    pub fn create() -> Pki {
        let dir = crate::cli::tempdir();
        let made = crate::tls::Ca::create(dir.path(), "/CN=test-ca").and_then(|ca| {
            ca.leaf(
                "server",
                "/CN=server",
                "subjectAltName=DNS:etcd.test\nextendedKeyUsage=serverAuth,clientAuth",
            )?;
            ca.leaf("client", "/CN=client", "extendedKeyUsage=clientAuth")?;
            Ok(ca)
        });
        match made {
            Ok(ca) => Pki { ca, _dir: dir },
            Err(e) => panic!("etcd certificates: {e:#}"),
        }
    }

    /// Path of a file of the set: `ca.crt`, `server.crt`/`.key`, `client.crt`/`.key`.
    pub fn path(&self, file: &str) -> std::path::PathBuf {
        self.ca.path(file)
    }
}

impl Etcd {
    /// etcd serving clients over TLS only, requiring a client certificate signed by the CA. Readiness is
    /// its log line, since the plain-HTTP checks of [`Etcd::post`] cannot speak TLS.
    pub fn start_tls(pki: &Pki) -> Etcd {
        Self::spawn(Some(pki))
    }

    /// etcd over plain HTTP.
    pub fn start() -> Etcd {
        Self::spawn(None)
    }

    fn spawn(pki: Option<&Pki>) -> Etcd {
        let bin = env_program("EXTDNS_TEST_ETCD").unwrap_or_else(|e| {
            panic!("{e}: run the tests with `cargo xtask test` (it builds etcd and exports the path)")
        });
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let (client, peer) = (free_port(), free_port());
        let scheme = if pki.is_some() { "https" } else { "http" };
        let url = format!("{scheme}://127.0.0.1:{client}");
        let peer_url = format!("http://127.0.0.1:{peer}");
        let log = std::fs::File::create(dir.path().join("etcd.log")).unwrap_or_else(|e| panic!("{e}"));
        let mut cmd = Command::new(&bin);
        if let Some(pki) = pki {
            cmd.arg("--cert-file")
                .arg(pki.path("server.crt"))
                .arg("--key-file")
                .arg(pki.path("server.key"))
                .arg("--trusted-ca-file")
                .arg(pki.path("ca.crt"))
                .arg("--client-cert-auth");
        }
        let log_path = dir.path().join("etcd.log");
        let child = cmd
            .args(["--name", "t", "--data-dir"])
            .arg(dir.path().join("data"))
            .args(["--listen-client-urls", &url, "--advertise-client-urls", &url])
            .args([
                "--listen-peer-urls",
                &peer_url,
                "--initial-advertise-peer-urls",
                &peer_url,
            ])
            .args([
                "--initial-cluster",
                &format!("t={peer_url}"),
                "--initial-cluster-state",
                "new",
            ])
            .args(["--unsafe-no-fsync", "--logger", "zap", "--log-outputs", "stderr"])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn();
        let child = match child {
            Ok(c) => c,
            Err(e) => panic!("cannot start {}: {e}", bin.display()),
        };
        let etcd = Etcd {
            url,
            _child: OwnedChild(child),
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            let ready = if pki.is_some() {
                std::fs::read_to_string(&log_path).is_ok_and(|l| l.contains("serving client traffic securely"))
            } else {
                etcd.post("/health", "")
                    .is_some_and(|b| b.contains("\"health\":\"true\""))
            };
            if ready {
                return etcd;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("etcd did not become healthy at {}", etcd.url);
    }

    /// POST with curl-free plain HTTP/1.0 so the checks do not go through the client under test.
    pub fn post(&self, path: &str, body: &str) -> Option<String> {
        use std::io::{Read, Write};
        let addr = self.url.trim_start_matches("http://");
        let mut s = std::net::TcpStream::connect(addr).ok()?;
        s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
        let method = if body.is_empty() && path == "/health" {
            "GET"
        } else {
            "POST"
        };
        let req = format!(
            "{method} {path} HTTP/1.0\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        s.write_all(req.as_bytes()).ok()?;
        let mut out = String::new();
        s.read_to_string(&mut out).ok()?;
        let (head, body) = out.split_once("\r\n\r\n")?;
        head.starts_with("HTTP/1.0 200")
            .then(|| body.to_string())
            .or_else(|| head.starts_with("HTTP/1.1 200").then(|| body.to_string()))
    }

    /// Writes a key through etcd's JSON gateway; panics on failure.
    pub fn put(&self, key: &str, value: &str) {
        let body = format!(r#"{{"key":"{}","value":"{}"}}"#, B64.encode(key), B64.encode(value));
        if self.post("/v3/kv/put", &body).is_none() {
            panic!("put {key} failed");
        }
    }

    /// Every key under `prefix` with its value, sorted by key.
    pub fn dump(&self, prefix: &str) -> Vec<(String, String)> {
        let mut end = prefix.as_bytes().to_vec();
        if let Some(last) = end.last_mut() {
            *last += 1;
        }
        let body = format!(
            r#"{{"key":"{}","range_end":"{}"}}"#,
            B64.encode(prefix),
            B64.encode(&end)
        );
        let Some(text) = self.post("/v3/kv/range", &body) else {
            panic!("range {prefix} failed")
        };
        let v: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
        let decode = |s: &serde_json::Value| {
            String::from_utf8(B64.decode(s.as_str().unwrap_or_default()).unwrap_or_default()).unwrap_or_default()
        };
        let mut out: Vec<(String, String)> = v["kvs"]
            .as_array()
            .map(|a| a.iter().map(|kv| (decode(&kv["key"]), decode(&kv["value"]))).collect())
            .unwrap_or_default();
        out.sort();
        out
    }

    /// The values under `prefix` with the random id label cut from each key: `(key without id, value)`.
    pub fn records(&self, prefix: &str) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = self
            .dump(prefix)
            .into_iter()
            .map(|(k, v)| (k.rsplit_once('/').map(|(a, _)| a.to_string()).unwrap_or(k), v))
            .collect();
        out.sort();
        out
    }

    /// The etcd revision: it moves with every write, so an unchanged revision means nothing was written.
    pub fn revision(&self) -> i64 {
        let body = format!(r#"{{"key":"{}"}}"#, B64.encode("/"));
        let text = self.post("/v3/kv/range", &body).unwrap_or_default();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        v["header"]["revision"]
            .as_str()
            .and_then(|r| r.parse().ok())
            .unwrap_or(-1)
    }
}
