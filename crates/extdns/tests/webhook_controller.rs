//! The controller over `--provider=webhook` against extdns's own webhook server in the same process: the
//! domain filter the server negotiates is ANDed with `--domain-filter`, and a failed read plans nothing.

use std::path::Path;
use std::sync::Arc;

use extdns::flags::try_parse_from;
use extdns::providers::build_provider;
use extdns::run::run_once_with;
use extdns::settings::{self, Settings};
use extdns_controller::CancellationToken;
use extdns_endpoint::RecordType;
use extdns_provider::InMemoryProvider;
use extdns_provider_webhook::{ServerOptions, start_server};

type Error = Box<dyn std::error::Error>;

fn service(name: &str, host: &str, ip: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: {name}\n  namespace: default\n  annotations:\n    \
         external-dns.kubernetes.io/hostname: {host}\nspec:\n  type: LoadBalancer\n  clusterIP: 10.96.0.1\n  \
         ports:\n    - port: 80\nstatus:\n  loadBalancer:\n    ingress:\n      - ip: {ip}\n"
    )
}

fn settings(dir: &Path, url: &str, extra: &[&str]) -> Result<Settings, Error> {
    let dir = dir.to_str().ok_or("path")?;
    let url = format!("--webhook-provider-url={url}");
    let mut args = vec![
        "extdns",
        "--source=service",
        "--provider=webhook",
        "--registry=noop",
        "--policy=sync",
        "--manifests",
        dir,
        &url,
    ];
    args.extend_from_slice(extra);
    Ok(settings::controller(&try_parse_from(args)?.flags)?)
}

/// A webhook server over an in-memory backend with the zone example.org, and a directory with `docs` as its
/// manifests; returns the backend, the URL and the directory.
async fn served(
    shutdown: &CancellationToken,
    docs: &[String],
) -> Result<(Arc<InMemoryProvider>, String, tempfile::TempDir), Error> {
    let backend = Arc::new(InMemoryProvider::new(vec!["example.org".to_string()]));
    let s = start_server(
        "127.0.0.1:0",
        backend.clone(),
        ServerOptions::default(),
        shutdown.clone(),
    )
    .await?;
    let dir = tempfile::tempdir()?;
    std::fs::write(dir.path().join("objects.yaml"), docs.join("---\n"))?;
    Ok((backend, format!("http://{}", s.local_addr), dir))
}

#[tokio::test]
async fn the_negotiated_filter_and_the_local_filter_both_apply() -> Result<(), Error> {
    let shutdown = CancellationToken::new();
    let _stop = shutdown.clone().drop_guard();
    let docs = [
        service("a", "a.example.org", "203.0.113.1"),
        service("b", "b.example.org", "203.0.113.2"),
        service("c", "c.example.com", "203.0.113.3"),
    ];
    let (backend, url, dir) = served(&shutdown, &docs).await?;
    // Local filter: a.example.org and example.com; the server's: example.org. Only a.example.org is in both.
    let f = settings(
        dir.path(),
        &url,
        &["--domain-filter=a.example.org", "--domain-filter=example.com"],
    )?;
    let report = run_once_with(&f, build_provider(&f.provider).await?).await?;
    assert!(report.applied);
    let names: Vec<String> = backend
        .snapshot()
        .into_iter()
        .filter(|e| e.record_type == RecordType::A)
        .map(|e| e.dns_name)
        .collect();
    assert_eq!(names, ["a.example.org"]);
    Ok(())
}

#[tokio::test]
async fn a_failed_read_plans_nothing_and_is_retryable() -> Result<(), Error> {
    let shutdown = CancellationToken::new();
    let _stop = shutdown.clone().drop_guard();
    let (backend, url, dir) = served(&shutdown, &[service("a", "a.example.org", "203.0.113.1")]).await?;
    let f = settings(dir.path(), &url, &[])?;
    let provider = build_provider(&f.provider).await?;
    backend.set_unavailable(true);
    let err = run_once_with(&f, provider.clone())
        .await
        .err()
        .map(|e| format!("{e:#}"));
    assert!(
        err.as_deref()
            .is_some_and(|e| e.contains("/records") && e.contains("500")),
        "{err:?}"
    );
    assert_eq!(backend.apply_calls(), 0, "nothing was written after the failed read");
    backend.set_unavailable(false);
    let report = run_once_with(&f, provider).await?;
    assert!(report.applied && backend.snapshot().len() == 1);
    Ok(())
}

#[tokio::test]
async fn an_unreachable_webhook_fails_startup_naming_the_url() -> Result<(), Error> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let dir = tempfile::tempdir()?;
    let url = format!("http://127.0.0.1:{port}");
    let f = settings(dir.path(), &url, &[])?;
    let err = tokio::time::timeout(std::time::Duration::from_secs(120), build_provider(&f.provider))
        .await?
        .err()
        .map(|e| e.to_string());
    assert!(
        err.as_deref().is_some_and(|e| e.contains(&format!("GET {url}/"))),
        "{err:?}"
    );
    Ok(())
}
