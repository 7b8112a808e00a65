//! The signed zones' keys on a real API server: two replicas started together make and keep one key (they
//! race to create the Secret, one wins and the other reads its key), log the same DS, and `extdns dnssec
//! ds` prints it back from the Secret. A rollover asked for with `extdns dnssec rollover` is taken through
//! its steps by both replicas from the Secret, with an Unbound validating each replica's answers every
//! 100 ms throughout.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use extdns_test_support::control_plane::{Binaries, ControlPlane};
use extdns_test_support::proc::OwnedChild;
use extdns_test_support::unbound::{Stub, Unbound};
use extdns_test_support::{free_port, require};

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
    /// Held to be killed when dropped.
    _child: OwnedChild,
    log: PathBuf,
}

impl Replica {
    fn start(dir: &Path, n: usize, kubeconfig: &Path) -> Replica {
        Replica::with(dir, n, &flags(kubeconfig))
    }

    fn with(dir: &Path, n: usize, args: &[String]) -> Replica {
        let log = dir.join(format!("replica-{n}.log"));
        let file = std::fs::File::create(&log).expect("log file");
        let child = extdns()
            .args(args)
            .stdout(file.try_clone().expect("log file"))
            .stderr(file)
            .stdin(Stdio::null())
            .spawn()
            .expect("extdns starts");
        Replica {
            _child: OwnedChild(child),
            log,
        }
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

    /// The DS of the line of the log that holds `message`, if it is there yet.
    fn ds_after(&self, message: &str) -> Option<String> {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        text.lines()
            .filter(|l| l.contains(message))
            .find_map(|l| l.split("ds=").nth(1))
            .map(|ds| ds.trim().to_owned())
    }

    fn logged(&self, message: &str) -> bool {
        std::fs::read_to_string(&self.log).is_ok_and(|t| t.contains(message))
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

/// `extdns dnssec rollover ARGS…` with the replicas' flags; its output, after asserting it succeeded.
fn rollover_command(args: &[&str], flags: &[String]) -> String {
    let out = extdns()
        .args(["dnssec", "rollover"])
        .args(args)
        .args(flags)
        .output()
        .expect("runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_rollover_asked_by_the_command_is_followed_by_every_replica_and_never_fails_a_resolver() {
    require!(Etcd, KubeApiserver, Kubectl, Unbound);
    let bins = Binaries::control_plane_from_env(PathBuf::from(env!("CARGO_BIN_EXE_extdns"))).expect("binaries");
    let cp = ControlPlane::start(&bins).expect("control plane");
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = cp.admin_kubeconfig.clone();
    // Seconds for every wait: DNSKEY TTL 2 s, largest TTL 3 s, propagation 1 s + the 1 s check interval,
    // the parent's DS TTL 2 s.
    let timed = |port: u16| -> Vec<String> {
        let mut args: Vec<String> = flags(&kubeconfig)
            .into_iter()
            .filter(|f| !f.starts_with("--dns-server-listen"))
            .collect();
        args.extend([
            format!("--dns-server-listen=127.0.0.1:{port}"),
            "--dns-server-ttl=2s".into(),
            "--dns-server-soa-minimum=2s".into(),
            "--dns-server-dnssec-max-zone-ttl=3s".into(),
            "--dns-server-dnssec-propagation-delay=1s".into(),
            "--dns-server-dnssec-parent-ds-ttl=2s".into(),
            "--dns-server-dnssec-key-check-interval=1s".into(),
        ]);
        args
    };
    let ports = [free_port(), free_port()];
    let replicas: Vec<Replica> = (0..2).map(|n| Replica::with(dir.path(), n, &timed(ports[n]))).collect();
    let ds = replicas[0].logged_ds();
    assert_eq!(replicas[1].logged_ds(), ds, "one key");
    let anchor = |ds: &str| ds.replacen(" IN DS ", " DS ", 1);
    // One resolver a replica: `early` learns the new DS at the swap, `late` holds the old one for the
    // parent's DS TTL after it.
    let resolvers: Vec<Unbound> = ports
        .iter()
        .map(|&port| {
            Unbound::start(
                &[anchor(&ds)],
                &[Stub {
                    zone: "example.org",
                    port,
                }],
            )
        })
        .collect();
    let (early, late) = (&resolvers[0], &resolvers[1]);
    let questions = [
        ("example.org", "SOA"),
        ("example.org", "DNSKEY"),
        ("nope.example.org", "A"),
        ("example.org", "TXT"),
    ];
    let printed = rollover_command(&["--zone=example.org"], &timed(ports[0]));
    assert!(printed.contains("example.org. rollover requested"), "{printed}");

    let (mut queries, mut failures) = (0usize, Vec::new());
    let (mut swapped, mut late_swapped, mut over) = (None::<Instant>, false, None::<Instant>);
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut next_query = Instant::now();
    while over.is_none_or(|t| t.elapsed() < Duration::from_secs(4)) {
        assert!(
            Instant::now() < deadline,
            "the rollover did not end; logs:\n{}\n{}",
            std::fs::read_to_string(&replicas[0].log).unwrap_or_default(),
            std::fs::read_to_string(&replicas[1].log).unwrap_or_default()
        );
        if swapped.is_none()
            && let Some(new_ds) = replicas.iter().find_map(|r| r.ds_after("the new key signs"))
        {
            // The operator gives the parent the DS the rollover logged, and says so.
            assert_ne!(new_ds, ds, "a new key");
            early.set_anchors(&[anchor(&new_ds)]);
            let printed = rollover_command(&["--zone=example.org", "--ds-swapped"], &timed(ports[0]));
            assert!(printed.contains("ds-swapped="), "{printed}");
            swapped = Some(Instant::now());
        }
        if let Some(at) = swapped
            && !late_swapped
            && at.elapsed() >= Duration::from_secs(2)
        {
            let new_ds = replicas
                .iter()
                .find_map(|r| r.ds_after("the new key signs"))
                .expect("logged");
            late.set_anchors(&[anchor(&new_ds)]);
            late_swapped = true;
        }
        if over.is_none() && replicas.iter().any(|r| r.logged("DNSSEC rollover: over")) {
            over = Some(Instant::now());
        }
        for unbound in [early, late] {
            let (qname, qtype) = questions[queries % questions.len()];
            let v = unbound.ask(qname, qtype);
            queries += 1;
            if v.status == "SERVFAIL" || !v.authenticated {
                failures.push(format!("{qname} {qtype}: {v:?}\n{}", unbound.log()));
            }
        }
        next_query += Duration::from_millis(100);
        std::thread::sleep(next_query.saturating_duration_since(Instant::now()));
    }
    eprintln!(
        "rollover through the binary: {queries} queries, {} SERVFAIL or insecure",
        failures.len()
    );
    assert!(failures.is_empty(), "every answer secure, none SERVFAIL: {failures:#?}");
    assert!(late_swapped, "the late resolver took the new DS before the end");
    for unbound in [early, late] {
        let keys = unbound.ask("example.org", "DNSKEY");
        assert!(
            keys.authenticated && keys.answers.len() == 1,
            "the new key alone: {keys:?}"
        );
    }
    let printed = rollover_command(&["--zone=example.org", "--ds-swapped=false"], &timed(ports[0]));
    assert!(
        printed.contains("example.org. rollover requested"),
        "asked again: {printed}"
    );
}
