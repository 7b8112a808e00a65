//! The Kubernetes client through the proxy of the environment, as external-dns's Go client goes: a real
//! kube-apiserver on 127.0.0.1, extdns run as a child with the proxy variables set on it, and a CONNECT proxy
//! written here that counts the tunnels it opened.
//!
//! Go never proxies loopback, so the proxied run names the API server `kube-apiserver.extdns.test` (which
//! resolves nowhere: only the proxy, which sends every tunnel to 127.0.0.1, can reach it), with the
//! certificate's name `localhost` as `tls-server-name`.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::{Arc, Mutex};

use extdns_test_support::control_plane::{Binaries, ControlPlane};
use extdns_test_support::require;

type Error = Box<dyn std::error::Error>;

/// The name the proxied runs give the API server.
const NAME: &str = "kube-apiserver.extdns.test";

/// A CONNECT proxy on 127.0.0.1: every tunnel goes to 127.0.0.1 at the port asked for, whatever the host;
/// the targets asked for are kept in order.
struct ConnectProxy {
    url: String,
    targets: Arc<Mutex<Vec<String>>>,
}

impl ConnectProxy {
    fn start() -> Result<ConnectProxy, Error> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let url = format!("http://{}", listener.local_addr()?);
        let targets = Arc::new(Mutex::new(Vec::new()));
        let seen = targets.clone();
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let seen = seen.clone();
                std::thread::spawn(move || tunnel(client, &seen));
            }
        });
        Ok(ConnectProxy { url, targets })
    }

    fn targets(&self) -> Vec<String> {
        self.targets.lock().map(|t| t.clone()).unwrap_or_default()
    }
}

/// Reads `CONNECT host:port`, answers 200 and copies bytes both ways until either side closes.
fn tunnel(client: TcpStream, seen: &Mutex<Vec<String>>) -> std::io::Result<()> {
    let mut reader = BufReader::new(client.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 || header == "\r\n" {
            break;
        }
    }
    let mut parts = line.split_whitespace();
    let (Some("CONNECT"), Some(target)) = (parts.next(), parts.next()) else {
        return (&client).write_all(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n");
    };
    if let Ok(mut targets) = seen.lock() {
        targets.push(target.to_string());
    }
    let port = target
        .rsplit_once(':')
        .and_then(|(_, p)| p.parse::<u16>().ok())
        .unwrap_or(443);
    let upstream = TcpStream::connect(("127.0.0.1", port))?;
    (&client).write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")?;
    let (mut up_read, mut up_write) = (upstream.try_clone()?, upstream);
    let mut down_write = client;
    std::thread::spawn(move || std::io::copy(&mut up_read, &mut down_write));
    // What the reader buffered beyond the head is the start of the TLS handshake.
    up_write.write_all(reader.buffer())?;
    let mut rest = reader.into_inner();
    std::io::copy(&mut rest, &mut up_write)?;
    Ok(())
}

/// The admin kubeconfig with the server at `server` and, when given, TLS checked against `tls_server_name`.
fn kubeconfig(cp: &ControlPlane, server: &str, tls_server_name: Option<&str>) -> Result<PathBuf, Error> {
    let mut config: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&cp.admin_kubeconfig)?)?;
    let cluster = &mut config["clusters"][0]["cluster"];
    cluster["server"] = server.into();
    if let Some(name) = tls_server_name {
        cluster["tls-server-name"] = name.into();
    }
    let path = cp
        .dir
        .join(format!("proxy-{}.kubeconfig", std::process::id() ^ server.len() as u32));
    std::fs::write(&path, config.to_string())?;
    Ok(path)
}

/// `extdns --once` over Services into the in-memory provider, with only `vars` of the proxy variables.
fn extdns(kubeconfig: &Path, vars: &[(&str, &str)]) -> Result<Output, Error> {
    let mut cmd = extdns_test_support::cli::command(env!("CARGO_BIN_EXE_extdns"), &[]);
    for name in [
        "HTTPS_PROXY",
        "https_proxy",
        "HTTP_PROXY",
        "http_proxy",
        "NO_PROXY",
        "no_proxy",
        "ALL_PROXY",
    ] {
        cmd.env_remove(name);
    }
    cmd.envs(vars.iter().copied());
    let config = kubeconfig.to_str().ok_or("kubeconfig path")?;
    let args = [
        "--once",
        "--source=service",
        "--provider=inmemory",
        "--kubeconfig",
        config,
    ];
    Ok(cmd.args(args).output()?)
}

fn control_plane() -> Result<ControlPlane, Error> {
    let bins = Binaries::control_plane_from_env(PathBuf::from(env!("CARGO_BIN_EXE_extdns")))?;
    Ok(ControlPlane::start(&bins)?)
}

#[test]
fn the_api_server_is_reached_through_https_proxy_and_not_where_go_would_not_use_it() -> Result<(), Error> {
    require!(Etcd, KubeApiserver, Kubectl);
    let cp = control_plane()?;
    let proxy = ConnectProxy::start()?;

    // Named: through the proxy, and the start no longer fails for want of kube's proxy support.
    let named = kubeconfig(&cp, &format!("https://{NAME}:{}", cp.port), Some("localhost"))?;
    let out = extdns(
        &named,
        &[("HTTPS_PROXY", &proxy.url), ("NO_PROXY", "example.org,10.0.0.0/8")],
    )?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let targets = proxy.targets();
    assert!(!targets.is_empty(), "no tunnel through the proxy: {stderr}");
    let expected = format!("{NAME}:{}", cp.port);
    assert!(targets.iter().all(|t| *t == expected), "{targets:?}");

    // 127.0.0.1 named by NO_PROXY, and 127.0.0.1 alone (Go never proxies loopback): direct, no tunnel.
    let direct = kubeconfig(&cp, &format!("https://127.0.0.1:{}", cp.port), None)?;
    for vars in [
        &[("HTTPS_PROXY", proxy.url.as_str()), ("NO_PROXY", "127.0.0.1")][..],
        &[("https_proxy", proxy.url.as_str())][..],
    ] {
        let before = proxy.targets().len();
        let out = extdns(&direct, vars)?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{vars:?}: {stderr}");
        assert_eq!(proxy.targets().len(), before, "{vars:?}: a tunnel was opened");
    }

    Ok(())
}
