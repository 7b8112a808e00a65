//! The default command against an API server: a small fake one on 127.0.0.1 that answers lists with fixed
//! objects and holds watches open, reached through `--kubeconfig` or `--server`.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::Output;
use std::time::Duration;

type Error = Box<dyn std::error::Error>;

/// The list body for a request path, by the resource at its end.
fn list_for(path: &str) -> String {
    let resource = path
        .split('?')
        .next()
        .unwrap_or_default()
        .rsplit('/')
        .next()
        .unwrap_or_default();
    let (api_version, kind, items) = match resource {
        "services" => (
            "v1",
            "ServiceList",
            r#"[{"apiVersion":"v1","kind":"Service",
                 "metadata":{"name":"web","namespace":"default","resourceVersion":"7","uid":"u1",
                   "annotations":{"external-dns.kubernetes.io/hostname":"live.example.com"}},
                 "spec":{"type":"LoadBalancer","clusterIP":"10.96.0.10","ports":[{"port":80}]},
                 "status":{"loadBalancer":{"ingress":[{"ip":"203.0.113.77"}]}}}]"#,
        ),
        "endpointslices" => ("discovery.k8s.io/v1", "EndpointSliceList", "[]"),
        "pods" => ("v1", "PodList", "[]"),
        "nodes" => ("v1", "NodeList", "[]"),
        "namespaces" => ("v1", "NamespaceList", "[]"),
        _ => ("v1", "List", "[]"),
    };
    format!(r#"{{"apiVersion":"{api_version}","kind":"{kind}","metadata":{{"resourceVersion":"10"}},"items":{items}}}"#)
}

/// Serves one connection: lists get their body, watches get a chunked response that never ends, streaming
/// lists are refused.
fn serve(stream: TcpStream) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut writer = stream;
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line)? == 0 {
            return Ok(());
        }
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header)? == 0 || header == "\r\n" {
                break;
            }
        }
        let path = request_line.split_whitespace().nth(1).unwrap_or("/").to_string();
        if path.contains("sendInitialEvents=true") {
            // A server without streaming lists (WatchList off, or before 1.27): extdns lists in pages.
            let body = r#"{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Invalid","code":422,
                "message":"sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled"}"#;
            write!(
                writer,
                "HTTP/1.1 422 Unprocessable Entity\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{}",
                body.len(),
                body
            )?;
            writer.flush()?;
            continue;
        }
        if path.contains("watch=true") || path.contains("watch=1") {
            writer.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
            )?;
            writer.flush()?;
            // Quiet watch: hold the connection until the client goes away.
            std::thread::sleep(Duration::from_secs(600));
            return Ok(());
        }
        let body = list_for(&path);
        write!(
            writer,
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{}",
            body.len(),
            body
        )?;
        writer.flush()?;
    }
}

/// Starts the fake API server; returns its URL.
fn fake_api_server() -> Result<String, Error> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let url = format!("http://{}", listener.local_addr()?);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || serve(stream));
        }
    });
    Ok(url)
}

fn kubeconfig(dir: &Path, server: &str) -> Result<String, Error> {
    let path = dir.join("kubeconfig");
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: {server}\n\
             contexts:\n- name: fake\n  context:\n    cluster: fake\n    user: nobody\n\
             current-context: fake\nusers:\n- name: nobody\n  user: {{}}\n"
        ),
    )?;
    Ok(path.to_str().ok_or("path")?.to_string())
}

fn extdns(args: &[&str]) -> Result<Output, Error> {
    let mut cmd = extdns_test_support::cli::command(env!("CARGO_BIN_EXE_extdns"), &["KUBERNETES_"]);
    // No kubeconfig of the machine running the tests may leak in.
    cmd.env("KUBECONFIG", "/nonexistent/extdns-test-kubeconfig")
        .env("HOME", "/nonexistent");
    Ok(cmd.args(args).output()?)
}

const ARGS: &[&str] = &[
    "--once",
    "--source=service",
    "--provider=inmemory",
    "--policy=sync",
    "--log-format=json",
];

fn created_names(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["action"] == "create")
        .filter_map(|v| Some(format!("{} {}", v["name"].as_str()?, v["targets"].as_str()?)))
        .collect()
}

/// `extdns --once` with [`ARGS`] and `extra` creates the fake API server's one record.
fn creates_the_live_record(extra: &[&str]) -> Result<(), Error> {
    let out = extdns(&[ARGS, extra].concat())?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(created_names(&stderr), ["live.example.com 203.0.113.77"], "{stderr}");
    Ok(())
}

#[test]
fn once_against_an_api_server_from_a_kubeconfig_creates_the_records() -> Result<(), Error> {
    let server = fake_api_server()?;
    let dir = tempfile::tempdir()?;
    let config = kubeconfig(dir.path(), &server)?;
    creates_the_live_record(&["--kubeconfig", &config])
}

#[test]
fn server_flag_overrides_the_kubeconfig_address() -> Result<(), Error> {
    let server = fake_api_server()?;
    let dir = tempfile::tempdir()?;
    // The kubeconfig points at a port nothing listens on; --server names the real one.
    let dead = TcpListener::bind("127.0.0.1:0")?.local_addr()?;
    let config = kubeconfig(dir.path(), &format!("http://{dead}"))?;
    creates_the_live_record(&["--kubeconfig", &config, "--server", &server])
}

#[test]
fn server_flag_alone_is_enough_without_any_kubeconfig() -> Result<(), Error> {
    let server = fake_api_server()?;
    creates_the_live_record(&["--server", &server])
}

#[test]
fn unreadable_kubeconfig_is_a_startup_error_naming_the_file() -> Result<(), Error> {
    let mut args = ARGS.to_vec();
    args.extend(["--kubeconfig", "/nonexistent/kubeconfig"]);
    let out = extdns(&args)?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("cannot read --kubeconfig /nonexistent/kubeconfig"),
        "{stderr}"
    );
    Ok(())
}
