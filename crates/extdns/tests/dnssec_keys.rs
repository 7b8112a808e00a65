//! The signed zones' keys on a real API server: two replicas started together make and keep one key (they
//! race to create the Secret, one wins and the other reads its key), log the same DS, and `extdns dnssec
//! ds` prints it back from the Secret.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use extdns_test_support::control_plane::{Binaries, ControlPlane};
use extdns_test_support::require;

/// The controller flags of a replica serving and signing example.org.
fn flags(kubeconfig: &Path) -> Vec<String> {
    vec![
        "--source=service".into(),
        "--provider=dns-server".into(),
        "--dns-server-zone=example.org".into(),
        "--dns-server-dnssec-zone=example.org".into(),
        "--dns-server-listen=127.0.0.1:0".into(),
        "--metrics-address=127.0.0.1:0".into(),
        format!("--kubeconfig={}", kubeconfig.display()),
    ]
}

fn extdns() -> Command {
    let mut cmd = extdns_test_support::cli::command(env!("CARGO_BIN_EXE_extdns"), &[]);
    cmd.env("POD_NAMESPACE", "default");
    cmd
}

/// A replica, its output in a file; killed by its PID when dropped.
struct Replica {
    child: Child,
    log: PathBuf,
}

impl Replica {
    fn start(dir: &Path, n: usize, kubeconfig: &Path) -> Replica {
        let log = dir.join(format!("replica-{n}.log"));
        let file = std::fs::File::create(&log).expect("log file");
        let child = extdns()
            .args(flags(kubeconfig))
            .stdout(file.try_clone().expect("log file"))
            .stderr(file)
            .stdin(Stdio::null())
            .spawn()
            .expect("extdns starts");
        Replica { child, log }
    }

    /// The DS the replica logged at start (60 s at most).
    fn logged_ds(&self) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let text = std::fs::read_to_string(&self.log).unwrap_or_default();
            if let Some(ds) = text.lines().find_map(|l| l.split("ds=").nth(1)) {
                return ds.trim().to_owned();
            }
            assert!(Instant::now() < deadline, "no DS logged:\n{text}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn replicas_starting_together_sign_with_one_key_kept_in_the_secret() {
    require!(Etcd, KubeApiserver, Kubectl);
    let bins = Binaries::control_plane_from_env(PathBuf::from(env!("CARGO_BIN_EXE_extdns"))).expect("binaries");
    let cp = ControlPlane::start(&bins).expect("control plane");
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = cp.admin_kubeconfig.clone();
    let replicas: Vec<Replica> = (0..2).map(|n| Replica::start(dir.path(), n, &kubeconfig)).collect();
    let logged: Vec<String> = replicas.iter().map(Replica::logged_ds).collect();
    assert!(logged[0].starts_with("example.org. IN DS "), "{logged:?}");
    assert_eq!(logged[0], logged[1], "both replicas sign with the same key");
    drop(replicas);
    let out = extdns()
        .arg("dnssec")
        .arg("ds")
        .args(flags(&kubeconfig))
        .output()
        .expect("runs");
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(printed.trim(), logged[0], "the DS read back from the Secret");
    // A replica started later reads the key kept, not a new one.
    let later = Replica::start(dir.path(), 2, &kubeconfig);
    assert_eq!(later.logged_ds(), logged[0]);
}
