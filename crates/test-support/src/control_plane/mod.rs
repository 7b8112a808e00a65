//! A real Kubernetes control plane on 127.0.0.1: etcd and kube-apiserver (no controller-manager, scheduler
//! or kubelet), the Gateway API CRDs, and `deploy/` applied with `kubectl kustomize`. extdns and
//! external-dns reach it with a token of the deploy/ ServiceAccount, so its RBAC is what they get.
//!
//! What a controller-manager would do, the tests do themselves: EndpointSlices, load balancer status, route
//! status, Pod status. Namespaces never finish deleting here, so every test uses a fresh one.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use base64::Engine;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::{Value, json};

use crate::proc::{Proc, eventually, output};
use crate::try_free_port;

pub mod crds;
pub mod kube;
pub mod pki;

use self::kube::Kube;
use self::pki::Pki;

/// The programs the tests run.
#[derive(Debug, Clone)]
pub struct Binaries {
    /// etcd.
    pub etcd: PathBuf,
    /// kube-apiserver.
    pub kube_apiserver: PathBuf,
    /// kubectl.
    pub kubectl: PathBuf,
    /// external-dns v0.23.0, the reference of the differential tests.
    pub external_dns: PathBuf,
    /// external-dns v0.22.0, the release users upgrading from it hand zones over from.
    pub external_dns_previous: PathBuf,
    /// The extdns binary under test.
    pub extdns: PathBuf,
}

impl Binaries {
    /// The control plane's programs from the variables `cargo xtask test` sets (`EXTDNS_TEST_ETCD`,
    /// `EXTDNS_TEST_KUBE_APISERVER`, `EXTDNS_TEST_KUBECTL`) and `extdns`, for a test that runs no
    /// external-dns; which variable is missing or wrong is the error.
    pub fn control_plane_from_env(extdns: PathBuf) -> Result<Binaries, String> {
        Ok(Binaries {
            etcd: crate::env_program("EXTDNS_TEST_ETCD")?,
            kube_apiserver: crate::env_program("EXTDNS_TEST_KUBE_APISERVER")?,
            kubectl: crate::env_program("EXTDNS_TEST_KUBECTL")?,
            external_dns: PathBuf::new(),
            external_dns_previous: PathBuf::new(),
            extdns,
        })
    }
}

/// A running etcd and kube-apiserver on 127.0.0.1 with deploy/ applied; stopped when dropped.
pub struct ControlPlane {
    /// Working directory: certificates, kubeconfigs, logs.
    pub dir: PathBuf,
    pki: Pki,
    bins: Binaries,
    etcd: Proc,
    /// etcd's client port.
    pub etcd_port: u16,
    apiserver: Option<Proc>,
    /// kube-apiserver's secure port.
    pub port: u16,
    /// A kubeconfig with the admin (system:masters) client certificate.
    pub admin_kubeconfig: PathBuf,
    /// A kubeconfig with a token of the `extdns` ServiceAccount from deploy/.
    pub sa_kubeconfig: PathBuf,
    /// A client with the admin credentials.
    pub kube: Kube,
    /// The audit log (JSON lines, Metadata level) of the controllers' ServiceAccount, when started with
    /// [`ControlPlane::start_audited`].
    pub audit_log: Option<PathBuf>,
    /// `--feature-gates` of kube-apiserver (kept across restarts), e.g. `WatchList=false`.
    feature_gates: Vec<String>,
    /// Kept last: the directory goes after the processes that write into it.
    _tmp: tempfile::TempDir,
}

impl ControlPlane {
    /// Starts etcd and kube-apiserver, installs the CRDs, applies deploy/ and mints the ServiceAccount token.
    pub fn start(bins: &Binaries) -> Result<ControlPlane> {
        Self::start_with(bins, false, &crds::gateway_api(), &[])
    }

    /// [`ControlPlane::start`] with these CRDs in place of the generated Gateway API ones (a Gateway API
    /// release's, [`crds::gateway_api_release`]): a CRD's stored versions pin it, so another channel needs
    /// another control plane.
    pub fn start_with_crds(bins: &Binaries, crds: &[CustomResourceDefinition]) -> Result<ControlPlane> {
        Self::start_with(bins, false, crds, &[])
    }

    /// [`ControlPlane::start`], with every request of the controllers' ServiceAccount in an audit log, so a
    /// benchmark can count them (by user agent: both controllers use the same token).
    pub fn start_audited(bins: &Binaries) -> Result<ControlPlane> {
        Self::start_with(bins, true, &crds::gateway_api(), &[])
    }

    /// [`ControlPlane::start_audited`] with kube-apiserver's `--feature-gates` set to these (`WatchList=false`:
    /// a server without streaming lists).
    pub fn start_audited_with_feature_gates(bins: &Binaries, gates: &[&str]) -> Result<ControlPlane> {
        Self::start_with(bins, true, &crds::gateway_api(), gates)
    }

    fn start_with(
        bins: &Binaries,
        audit: bool,
        crds: &[CustomResourceDefinition],
        gates: &[&str],
    ) -> Result<ControlPlane> {
        let tmp = tempfile::Builder::new().prefix("extdns-e2e-").tempdir()?;
        let dir = tmp.path().to_path_buf();
        let pki = Pki::create(&dir.join("pki"))?;
        let (etcd, etcd_port) = start_etcd(&bins.etcd, &dir)?;
        let port = try_free_port()?;
        let admin_kubeconfig = dir.join("admin.kubeconfig");
        write_kubeconfig(
            &admin_kubeconfig,
            port,
            &pki.ca_cert,
            json!({ "client-certificate": pki.admin_cert, "client-key": pki.admin_key }),
        )?;
        let kube = Kube::from_kubeconfig(&admin_kubeconfig)?;
        let mut cp = ControlPlane {
            dir: dir.clone(),
            pki,
            bins: bins.clone(),
            etcd,
            etcd_port,
            apiserver: None,
            port,
            admin_kubeconfig,
            sa_kubeconfig: dir.join("extdns.kubeconfig"),
            kube,
            audit_log: audit.then(|| dir.join("audit.log")),
            feature_gates: gates.iter().map(|g| g.to_string()).collect(),
            _tmp: tmp,
        };
        cp.start_apiserver()?;
        cp.kube.install_crds(crds)?;
        cp.deploy()?;
        Ok(cp)
    }

    fn apiserver_command(&self) -> Command {
        let p = &self.pki;
        let mut cmd = Command::new(&self.bins.kube_apiserver);
        cmd.arg(format!("--etcd-servers=http://127.0.0.1:{}", self.etcd_port))
            .arg("--bind-address=127.0.0.1")
            .arg(format!("--secure-port={}", self.port))
            .arg("--advertise-address=127.0.0.1")
            // The default reconciler refuses 127.0.0.1 for the `kubernetes` Endpoints.
            .arg("--endpoint-reconciler-type=none")
            .arg(format!("--tls-cert-file={}", p.server_cert.display()))
            .arg(format!("--tls-private-key-file={}", p.server_key.display()))
            .arg(format!("--client-ca-file={}", p.ca_cert.display()))
            .arg("--authorization-mode=RBAC")
            .arg(format!("--service-account-issuer=https://127.0.0.1:{}", self.port))
            .arg(format!("--service-account-key-file={}", p.sa_pub.display()))
            .arg(format!("--service-account-signing-key-file={}", p.sa_key.display()))
            // Dual-stack, so Services can ask for both families like on a real dual-stack cluster.
            .arg("--service-cluster-ip-range=10.0.0.0/16,fd00:10::/108")
            .arg("--allow-privileged=true")
            .arg("--disable-admission-plugins=ServiceAccount")
            .arg("--enable-priority-and-fairness=false")
            .arg("--profiling=false")
            .arg(format!("--cert-dir={}", self.dir.join("apiserver-certs").display()))
            .arg("--v=1");
        if !self.feature_gates.is_empty() {
            cmd.arg(format!("--feature-gates={}", self.feature_gates.join(",")));
        }
        if let Some(log) = &self.audit_log {
            cmd.arg(format!(
                "--audit-policy-file={}",
                self.dir.join("audit-policy.json").display()
            ))
            .arg(format!("--audit-log-path={}", log.display()));
        }
        cmd
    }

    fn start_apiserver(&mut self) -> Result<()> {
        if self.audit_log.is_some() {
            // The ServiceAccount's requests only (the harness's own would swamp them), one event per stage
            // after the request was received.
            let policy = json!({
                "apiVersion": "audit.k8s.io/v1", "kind": "Policy",
                "omitStages": ["RequestReceived"],
                "rules": [
                    { "level": "Metadata", "users": ["system:serviceaccount:extdns:extdns"] },
                    { "level": "None" },
                ],
            });
            std::fs::write(self.dir.join("audit-policy.json"), policy.to_string())?;
        }
        let log = self.dir.join("kube-apiserver.log");
        let mut proc = Proc::spawn("kube-apiserver", self.apiserver_command(), &log)?;
        let started = Instant::now();
        let deadline = started + Duration::from_secs(120);
        loop {
            if let Some(status) = proc.exited() {
                bail!(
                    "kube-apiserver exited with {status} during startup:\n{}",
                    proc.log_tail(30)
                );
            }
            if self.kube.ready() {
                break;
            }
            if Instant::now() > deadline {
                bail!("kube-apiserver not ready after 120 s:\n{}", proc.log_tail(30));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        eprintln!(
            "  kube-apiserver ready on 127.0.0.1:{} in {:.1} s",
            self.port,
            started.elapsed().as_secs_f64()
        );
        self.apiserver = Some(proc);
        Ok(())
    }

    /// Stops kube-apiserver (SIGTERM, SIGKILL after 15 s); etcd keeps running.
    pub fn stop_apiserver(&mut self) {
        if let Some(mut p) = self.apiserver.take() {
            p.terminate(Duration::from_secs(15));
        }
    }

    /// Starts kube-apiserver again on the same port, with the same etcd and keys (tokens stay valid).
    pub fn restart_apiserver(&mut self) -> Result<()> {
        self.stop_apiserver();
        self.start_apiserver()
    }

    /// kube-apiserver's `--feature-gates` from its next (re)start on.
    pub fn set_feature_gates(&mut self, gates: &[&str]) {
        self.feature_gates = gates.iter().map(|g| g.to_string()).collect();
    }

    /// kube-apiserver's process id, while it runs (for its memory).
    pub fn apiserver_pid(&self) -> Option<u32> {
        self.apiserver.as_ref().and_then(Proc::pid)
    }

    /// The programs this control plane runs.
    pub fn binaries(&self) -> &Binaries {
        &self.bins
    }

    /// kubectl with the admin kubeconfig.
    pub fn kubectl(&self) -> Command {
        let mut cmd = Command::new(&self.bins.kubectl);
        cmd.arg(format!("--kubeconfig={}", self.admin_kubeconfig.display()));
        cmd
    }

    /// `kubectl kustomize crates/e2e/deploy` (deploy/base with the leader-election component) applied, then a
    /// token of the extdns ServiceAccount.
    fn deploy(&mut self) -> Result<()> {
        let deploy = Path::new(env!("CARGO_MANIFEST_DIR")).join("../e2e/deploy");
        let mut kustomize = Command::new(&self.bins.kubectl);
        kustomize.arg("kustomize").arg(&deploy);
        let manifests = output(kustomize)?;
        let file = self.dir.join("deploy.yaml");
        std::fs::write(&file, &manifests)?;
        let mut apply = self.kubectl();
        apply.args(["apply", "--server-side", "-f"]).arg(&file);
        output(apply).context("applying deploy/")?;
        let mut token = self.kubectl();
        token.args(["create", "token", "extdns", "--namespace=extdns", "--duration=24h"]);
        let token = output(token)?.trim().to_string();
        if token.is_empty() {
            bail!("kubectl create token printed nothing");
        }
        write_kubeconfig(
            &self.sa_kubeconfig,
            self.port,
            &self.pki.ca_cert,
            json!({ "token": token }),
        )?;
        Ok(())
    }

    /// Writes a key into etcd outside the API server's prefix and compacts etcd's history up to it, so any
    /// watch that resumes from an older resourceVersion is answered `410 Gone` and must relist. Returns
    /// the compacted revision.
    pub fn compact_etcd(&self) -> Result<i64> {
        let b64 = base64::engine::general_purpose::STANDARD;
        let put = self.etcd_post(
            "/v3/kv/put",
            &json!({ "key": b64.encode("extdns-e2e/compaction"), "value": b64.encode(format!("{:?}", Instant::now())) }),
        )?;
        let revision: i64 = put
            .pointer("/header/revision")
            .and_then(|r| r.as_str().and_then(|s| s.parse().ok()).or_else(|| r.as_i64()))
            .with_context(|| format!("etcd put answered without a revision: {put}"))?;
        self.etcd_post(
            "/v3/kv/compaction",
            &json!({ "revision": revision.to_string(), "physical": true }),
        )?;
        Ok(revision)
    }

    fn etcd_post(&self, path: &str, body: &Value) -> Result<Value> {
        let text = http_request(self.etcd_port, "POST", path, Some(&body.to_string()))?;
        serde_json::from_str(json_body(&text)).with_context(|| format!("etcd {path} answered {text}"))
    }
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        // The API server first: one whose etcd is gone does not shut down gracefully.
        self.stop_apiserver();
        self.etcd.terminate(Duration::from_secs(5));
    }
}

fn start_etcd(etcd: &Path, dir: &Path) -> Result<(Proc, u16)> {
    let mut last = String::new();
    // A port can be taken between choosing and binding it: try a few.
    for attempt in 0..3 {
        let (client, peer) = (try_free_port()?, try_free_port()?);
        let name = format!("extdns-e2e-{}-{attempt}", std::process::id());
        let mut cmd = Command::new(etcd);
        cmd.arg(format!("--name={name}"))
            .arg(format!("--data-dir={}", dir.join(format!("etcd-{attempt}")).display()))
            .arg(format!("--listen-client-urls=http://127.0.0.1:{client}"))
            .arg(format!("--advertise-client-urls=http://127.0.0.1:{client}"))
            .arg(format!("--listen-peer-urls=http://127.0.0.1:{peer}"))
            .arg(format!("--initial-advertise-peer-urls=http://127.0.0.1:{peer}"))
            .arg(format!("--initial-cluster={name}=http://127.0.0.1:{peer}"))
            .arg("--initial-cluster-state=new")
            .arg("--unsafe-no-fsync")
            .arg("--log-level=warn");
        let mut proc = Proc::spawn("etcd", cmd, &dir.join("etcd.log"))?;
        let ready = eventually(
            "etcd healthy",
            Duration::from_secs(30),
            Duration::from_millis(100),
            || {
                if let Some(status) = proc.exited() {
                    bail!("etcd exited with {status}");
                }
                let health = http_request(client, "GET", "/health", None).unwrap_or_default();
                if !health.contains("\"health\":\"true\"") {
                    return Ok(None);
                }
                // Our etcd, not someone else's on a reused port: its member list names this run.
                let members = http_request(client, "POST", "/v3/cluster/member/list", Some("{}"))?;
                Ok(members.contains(&name).then_some(()))
            },
        );
        match ready {
            Ok(()) => return Ok((proc, client)),
            Err(e) => last = format!("{e:#}\n{}", proc.log_tail(20)),
        }
    }
    bail!("etcd did not start: {last}")
}

/// A kubeconfig for the API server on `port`, trusting `ca`, with `user` as the credentials.
fn write_kubeconfig(path: &Path, port: u16, ca: &Path, user: Value) -> Result<()> {
    let config = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{ "name": "e2e", "cluster": {
            "server": format!("https://127.0.0.1:{port}"),
            "certificate-authority": ca,
        }}],
        "users": [{ "name": "e2e", "user": user }],
        "contexts": [{ "name": "e2e", "context": { "cluster": "e2e", "user": "e2e" } }],
        "current-context": "e2e",
    });
    std::fs::write(path, serde_json::to_string_pretty(&config)?)?;
    Ok(())
}

/// One plain HTTP/1.1 request to 127.0.0.1 (etcd's JSON gateway); the whole response as text.
fn http_request(port: u16, method: &str, path: &str, body: Option<&str>) -> Result<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    let body = body.unwrap_or("");
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    )?;
    let mut text = String::new();
    stream.read_to_string(&mut text)?;
    Ok(text)
}

/// The JSON document of an HTTP response (from the first `{` to the last `}`, which also skips chunk sizes).
fn json_body(response: &str) -> &str {
    match (response.find('{'), response.rfind('}')) {
        (Some(a), Some(b)) if a <= b => &response[a..=b],
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_body_skips_headers_and_chunk_sizes() {
        let r =
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1a\r\n{\"header\":{\"revision\":\"7\"}}\r\n0\r\n\r\n";
        assert_eq!(json_body(r), "{\"header\":{\"revision\":\"7\"}}");
        assert_eq!(json_body("HTTP/1.1 500\r\n\r\n"), "");
    }
}
