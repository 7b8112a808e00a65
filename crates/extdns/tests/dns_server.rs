//! `--provider=dns-server` in the built binary, as the README's first command runs it: the examples synced
//! into zones the process answers for, asked with `dig` on the port it chose and logged; `/readyz` and the
//! server's metrics on the metrics listener; a busy address failing the start.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use extdns_test_support::cli::assert_mentions;
use extdns_test_support::dig::short;
use extdns_test_support::proc::{Proc, eventually};
use extdns_test_support::{free_port, http_get, require};

type Error = Box<dyn std::error::Error>;

// Shared with tests/observability.rs, which scrapes the same process.
#[allow(dead_code)]
mod support;

use support::dns_server::{served_port, start, wait_ready};

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

#[test]
fn once_syncs_the_examples_then_answers_dig_on_the_logged_port_until_terminated() -> Result<(), Error> {
    require!(DnsClients);
    let dir = tempfile::tempdir()?;
    let mut extdns = start(dir.path(), &["--once"])?;
    let port = served_port(&extdns)?;
    let log = |p: &Proc| p.log_text();
    assert!(
        log(&extdns).contains(&format!("try: dig @127.0.0.1 -p {port} +norecurse example.com. SOA")),
        "{}",
        log(&extdns)
    );
    eventually(
        "the sync to finish",
        Duration::from_secs(30),
        Duration::from_millis(50),
        || Ok(log(&extdns).contains("answering from the synced records").then_some(())),
    )?;
    assert_eq!(short(port, "web.example.com", "A"), ["203.0.113.10"]);
    assert_eq!(
        short(port, "shop.example.com", "A"),
        ["203.0.113.20"],
        "an HTTPRoute's record"
    );
    // The first command's registry is noop: no ownership TXT beside the records.
    assert!(short(port, "web.example.com", "TXT").is_empty());
    assert!(short(port, "a-web.example.com", "TXT").is_empty());
    assert!(extdns.exited().is_none(), "--once keeps serving with the dns-server");
    assert!(extdns.terminate(Duration::from_secs(10)), "SIGTERM stops it");
    assert!(!log(&extdns).contains("error"), "{}", log(&extdns));
    Ok(())
}

#[test]
fn the_loop_is_ready_after_its_first_sync_and_exports_the_servers_metrics() -> Result<(), Error> {
    require!(DnsClients);
    let dir = tempfile::tempdir()?;
    let metrics = free_port();
    let address = format!("--metrics-address=127.0.0.1:{metrics}");
    let extdns = start(dir.path(), &[&address])?;
    let port = served_port(&extdns)?;
    wait_ready(metrics)?;
    // Ready means synced: the records are served.
    assert_eq!(short(port, "web.example.com", "A"), ["203.0.113.10"]);
    let scrape = http_get(metrics, "/metrics")?;
    assert_mentions(
        &scrape,
        &[
            "extdns_dns_server_zone_records{zone=\"example.com.\"}",
            "extdns_dns_server_zone_serial{zone=\"example.com.\"}",
            "extdns_dns_server_answers_total{",
        ],
    );
    let records: u64 = scrape
        .lines()
        .find_map(|l| l.strip_prefix("extdns_dns_server_zone_records{zone=\"example.com.\"} "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_default();
    // Every example record plus the SOA and the apex NS.
    assert!(records >= 10, "{records} records served:\n{scrape}");
    Ok(())
}

/// Each thread of process `pid`: its name, its nice value and its scheduling policy (5: `SCHED_IDLE`),
/// from `/proc/PID/task/*/stat`.
#[cfg(target_os = "linux")]
fn threads_nice(pid: u32) -> Result<Vec<(String, i32, u32)>, Error> {
    let mut threads = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))? {
        let Ok(stat) = std::fs::read_to_string(task?.path().join("stat")) else {
            continue; // the thread ended meanwhile
        };
        // "TID (NAME) STATE PPID ...": the name may hold spaces, so the fields are counted after its ')';
        // nice is the 19th field, the 17th after the name; the policy the 41st, the 39th after it.
        let (head, fields) = stat.rsplit_once(')').ok_or("a stat line without its name")?;
        let name = head.split_once('(').ok_or("a stat line without its name")?.1;
        let field = |n: usize| fields.split_whitespace().nth(n).ok_or("a short stat line");
        threads.push((name.to_string(), field(16)?.parse()?, field(38)?.parse()?));
    }
    Ok(threads)
}

#[cfg(target_os = "linux")]
#[test]
fn the_udp_workers_run_ahead_of_every_thread_of_the_controller() -> Result<(), Error> {
    // Started at the lowest priority already (a runner under `nice -n 19`), no thread can go lower, and
    // there is nothing to tell apart.
    let own = threads_nice(std::process::id())?
        .first()
        .map(|&(_, nice, _)| nice)
        .ok_or("no thread of this test")?;
    if own >= 19 {
        eprintln!("skipped: this test runs at nice {own}, the lowest priority, so no thread can be lowered");
        return Ok(());
    }
    let dir = tempfile::tempdir()?;
    let metrics = free_port();
    let address = format!("--metrics-address=127.0.0.1:{metrics}");
    let extdns = start(dir.path(), &[&address, "--dns-server-udp-workers=2"])?;
    wait_ready(metrics)?;
    let pid = extdns.pid().ok_or("extdns exited")?;
    let threads = threads_nice(pid)?;
    let of = |prefix: &str| -> Vec<(i32, u32)> {
        threads
            .iter()
            .filter(|(name, _, _)| name.starts_with(prefix))
            .map(|&(_, nice, policy)| (nice, policy))
            .collect()
    };
    // The runtime's workers: `tokio-rt-worker` (the kernel keeps 15 bytes of a name).
    let (udp, serving, runtime) = (of("dns-udp"), of("dns-serve"), of("tokio-r"));
    let main = of("extdns");
    assert_eq!(udp.len(), 2, "a thread per UDP worker: {threads:?}");
    assert!(
        !serving.is_empty() && !runtime.is_empty() && !main.is_empty(),
        "{threads:?}"
    );
    let answering: Vec<(i32, u32)> = udp.iter().chain(&serving).copied().collect();
    let controller: Vec<(i32, u32)> = runtime.iter().chain(&main).copied().collect();
    let slowest_answering = answering.iter().map(|&(nice, _)| nice).max();
    let fastest_controller = controller.iter().map(|&(nice, _)| nice).min();
    assert!(
        slowest_answering < fastest_controller,
        "every answering thread runs ahead (a lower nice) of every thread of the controller: {threads:?}"
    );
    const SCHED_IDLE: u32 = 5;
    assert!(
        answering.iter().all(|&(_, policy)| policy != SCHED_IDLE)
            && controller.iter().all(|&(_, policy)| policy == SCHED_IDLE),
        "the controller's threads, and only they, run on SCHED_IDLE: {threads:?}"
    );
    Ok(())
}

#[test]
fn as_a_webhook_server_it_answers_what_the_webhook_client_writes() -> Result<(), Error> {
    require!(DnsClients);
    let dir = tempfile::tempdir()?;
    let hook = free_port();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_extdns"));
    cmd.env_remove("RUST_LOG")
        .args([
            "--webhook-server",
            "--source=service",
            "--provider=dns-server",
            "--dns-server-zone=example.com",
        ])
        .args(["--dns-server-listen=127.0.0.1:0", "--metrics-address=127.0.0.1:0"])
        .arg(format!("--webhook-server-address=127.0.0.1:{hook}"));
    let extdns = Proc::spawn("extdns", cmd, &dir.path().join("extdns.log"))?;
    let port = served_port(&extdns)?;
    let body = r#"{"Create":[{"dnsName":"hook.example.com","targets":["192.0.2.7"],"recordType":"A"}]}"#;
    let media = "application/external.dns.webhook+json;version=1";
    let post = format!(
        "POST /records HTTP/1.1\r\nHost: x\r\nContent-Type: {media}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let answer = eventually(
        "the webhook server to take the write",
        Duration::from_secs(30),
        Duration::from_millis(50),
        || {
            let Ok(mut stream) = TcpStream::connect(("127.0.0.1", hook)) else {
                return Ok(None);
            };
            stream.write_all(post.as_bytes())?;
            let mut out = String::new();
            stream.read_to_string(&mut out)?;
            Ok(Some(out))
        },
    )?;
    assert!(answer.starts_with("HTTP/1.1 204"), "{answer}");
    assert_eq!(short(port, "hook.example.com", "A"), ["192.0.2.7"]);
    Ok(())
}

#[test]
fn a_busy_address_fails_the_start_naming_it() -> Result<(), Error> {
    let taken = std::net::UdpSocket::bind("127.0.0.1:0")?;
    let busy = format!("--dns-server-listen={}", taken.local_addr()?);
    let out = Command::new(env!("CARGO_BIN_EXE_extdns"))
        .args([
            "--provider=dns-server",
            "--dns-server-zone=example.com",
            &busy,
            "--source=service",
        ])
        .arg("--manifests")
        .arg(examples())
        .output()?;
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("--dns-server-listen") && err.contains(&taken.local_addr()?.to_string()),
        "{err}"
    );
    Ok(())
}
