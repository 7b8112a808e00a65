//! Loading manifests from files and directories.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

use extdns_informer::{
    LoadOptions, Loaded, ManifestError, ManifestWarning, load, load_counting_skipped, load_keeping, load_lenient,
};

/// Writes `text` to the file `name` in `dir` and returns its path.
fn write(dir: &Path, name: &str, text: impl AsRef<[u8]>) -> std::io::Result<PathBuf> {
    let path = dir.join(name);
    fs::write(&path, text)?;
    Ok(path)
}

/// A temporary directory holding the one file `name` with `text`, and the file's path.
fn one_file(name: &str, text: impl AsRef<[u8]>) -> std::io::Result<(tempfile::TempDir, PathBuf)> {
    let dir = tempfile::tempdir()?;
    let path = write(dir.path(), name, text)?;
    Ok((dir, path))
}

fn node(name: &str) -> String {
    format!("apiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\n")
}

#[test]
fn directories_are_walked_recursively_for_yaml_yml_and_json() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    fs::create_dir_all(dir.path().join("sub/deeper"))?;
    write(dir.path(), "a.yaml", node("a"))?;
    write(dir.path(), "sub/b.yml", format!("{}---\n{}", node("b1"), node("b2")))?;
    write(
        dir.path(),
        "sub/deeper/c.json",
        r#"{"apiVersion":"v1","kind":"Node","metadata":{"name":"c"}}"#,
    )?;
    write(dir.path(), "sub/notes.txt", "not a manifest: [")?;
    let c = load(&[dir.path().to_path_buf()], &LoadOptions::default())?;
    let names: Vec<String> = c.nodes().iter().map(|n| n.name.clone()).collect();
    assert_eq!(names, vec!["a", "b1", "b2", "c"]);
    Ok(())
}

#[test]
fn hidden_entries_are_skipped_so_a_mounted_config_map_is_read_once() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    fs::create_dir_all(dir.path().join("..2026_01_01"))?;
    write(dir.path(), "..2026_01_01/svc.yaml", node("n"))?;
    write(dir.path(), ".hidden.yaml", "broken: [")?;
    write(dir.path(), "svc.yaml", node("n"))?;
    let c = load(&[dir.path().to_path_buf()], &LoadOptions::default())?;
    assert_eq!(c.nodes().len(), 1);
    Ok(())
}

#[test]
fn files_load_in_sorted_order_so_the_last_duplicate_is_deterministic() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let svc = |v: &str| format!("apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n  labels: {{v: {v}}}\n");
    write(dir.path(), "b.yaml", svc("from-b"))?;
    write(dir.path(), "a.yaml", svc("from-a"))?;
    let c = load(&[dir.path().to_path_buf()], &LoadOptions::default())?;
    let services = c.services();
    assert_eq!(services.len(), 1);
    assert_eq!(services[0].meta.labels.get("v"), Some("from-b"));
    Ok(())
}

#[test]
fn an_explicit_file_is_read_whatever_its_extension() -> Result<(), Box<dyn std::error::Error>> {
    let (_dir, path) = one_file("objects.txt", node("x"))?;
    let c = load(&[path], &LoadOptions::default())?;
    assert!(c.node("x").is_some());
    Ok(())
}

#[test]
fn errors_name_the_file_and_the_document() -> Result<(), Box<dyn std::error::Error>> {
    let (dir, path) = one_file(
        "bad.yaml",
        node("ok") + "---\napiVersion: v1\nkind: Secret\nmetadata: {name: s}\n",
    )?;
    let err = load(&[dir.path().to_path_buf()], &LoadOptions::default()).expect_err("a Secret is not read");
    assert!(matches!(err, ManifestError::UnknownKind { .. }));
    let at = err.location().ok_or("no location")?;
    assert_eq!((&*at.path, at.document), (path.as_path(), 2));
    assert!(
        err.to_string().contains(&format!("{}: document 2", path.display())),
        "{err}"
    );
    Ok(())
}

#[test]
fn a_missing_path_is_an_io_error_naming_it() {
    let path = PathBuf::from("/nonexistent/extdns/manifests.yaml");
    let err = load(std::slice::from_ref(&path), &LoadOptions::default()).expect_err("must fail");
    assert!(matches!(err, ManifestError::Io { .. }));
    assert!(err.to_string().contains("/nonexistent/extdns/manifests.yaml"), "{err}");
}

/// `kubectl get svc -A -o yaml` of `n` plain Services: one `kind: List` document, about 58 YAML nodes each.
fn service_dump(n: usize) -> String {
    let mut out = String::with_capacity(n * 700);
    out.push_str("apiVersion: v1\nitems:\n");
    for i in 0..n {
        let ns = i % 50;
        out.push_str(&format!(
            "- apiVersion: v1\n  kind: Service\n  metadata:\n    creationTimestamp: \"2026-01-01T00:00:00Z\"\n    \
             labels:\n      app: svc-{i}\n    name: svc-{i}\n    namespace: team-{ns}\n    resourceVersion: \"{rv}\"\n    \
             uid: 0b6a7c3e-{i:04x}-4f1d-9c2e-5a8b7d6e4f3a\n  spec:\n    clusterIP: 10.96.{a}.{b}\n    clusterIPs:\n    \
             - 10.96.{a}.{b}\n    internalTrafficPolicy: Cluster\n    ipFamilies:\n    - IPv4\n    ipFamilyPolicy: SingleStack\n    \
             ports:\n    - name: http\n      port: 80\n      protocol: TCP\n      targetPort: 8080\n    selector:\n      \
             app: svc-{i}\n    sessionAffinity: None\n    type: ClusterIP\n  status:\n    loadBalancer: {{}}\n",
            rv = 100_000 + i,
            a = i / 250,
            b = i % 250 + 1,
        ));
    }
    out.push_str("kind: List\nmetadata:\n  resourceVersion: \"\"\n");
    out
}

#[test]
fn a_dump_of_ten_thousand_services_loads() -> Result<(), Box<dyn std::error::Error>> {
    let (_dir, path) = one_file("services.yaml", service_dump(10_000))?;
    let store = load(&[path], &LoadOptions::default())?;
    let services = store.services();
    assert_eq!(services.len(), 10_000);
    let first = &services[0];
    assert_eq!(
        (first.meta.namespace.as_str(), first.meta.name.as_str()),
        ("team-0", "svc-0")
    );
    assert_eq!(first.ports[0].target_port.as_deref(), Some("8080"));
    Ok(())
}

fn mkfifo(path: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let status = Command::new("mkfifo").arg(path).status()?;
    if !status.success() {
        return Err(format!("mkfifo {} failed: {status}", path.display()).into());
    }
    Ok(())
}

/// Runs `f` on its own thread and fails (rather than hangs) if it does not return within a few seconds.
fn within_seconds<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T, Box<dyn std::error::Error>> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    Ok(rx.recv_timeout(Duration::from_secs(10))?)
}

#[test]
fn a_fifo_in_a_directory_is_skipped_with_a_warning_not_waited_on() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    write(dir.path(), "a.yaml", node("a"))?;
    let fifo = dir.path().join("pipe.yaml");
    mkfifo(&fifo)?;
    let root = dir.path().to_path_buf();
    let loaded = within_seconds(move || load_lenient(&[root], &LoadOptions::default()))??;
    assert!(loaded.store.node("a").is_some());
    match &loaded.warnings[..] {
        [ManifestWarning::NotRegularFile { path }] => assert_eq!(path, &fifo),
        other => return Err(format!("expected one warning about the FIFO, got {other:?}").into()),
    }
    let root = dir.path().to_path_buf();
    let strict = within_seconds(move || load(&[root], &LoadOptions::default()))??;
    assert_eq!(strict.nodes().len(), 1);
    Ok(())
}

#[test]
fn a_fifo_named_explicitly_is_read_like_a_process_substitution() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let fifo = dir.path().join("objects");
    mkfifo(&fifo)?;
    let writer_path = fifo.clone();
    let writer = std::thread::spawn(move || fs::write(writer_path, node("from-pipe")));
    let store = within_seconds(move || load(&[fifo], &LoadOptions::default()))??;
    writer.join().map_err(|_| "the writer panicked")??;
    assert!(store.node("from-pipe").is_some());
    Ok(())
}

#[test]
fn lenient_loading_skips_bad_documents_and_keeps_the_rest() -> Result<(), Box<dyn std::error::Error>> {
    let (dir, path) = one_file(
        "mixed.yaml",
        node("n1")
            + "---\nkind: [unclosed\n---\n\
             apiVersion: v1\nkind: Service\nmetadata: {name: bad, namespace: web}\nspec: {ports: [{port: eighty}]}\n---\n\
             apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n---\n\
             apiVersion: v1\nkind: List\nitems:\n\
             - {apiVersion: v1, kind: Service, metadata: {name: ok, namespace: web}}\n\
             - {apiVersion: v1, kind: Service, metadata: {namespace: web}}\n",
    )?;
    let paths = [dir.path().to_path_buf()];
    let strict = load(&paths, &LoadOptions::default()).expect_err("strict loading stops at document 2");
    assert_eq!(strict.location().map(|l| l.document), Some(2));

    let Loaded { store, warnings, .. } = load_lenient(&paths, &LoadOptions::default())?;
    assert!(store.node("n1").is_some());
    let services: Vec<String> = store.services().iter().map(|s| s.meta.name.clone()).collect();
    assert_eq!(services, vec!["ok"]);
    let undecodable: Vec<String> = store.undecodable().iter().map(ToString::to_string).collect();
    assert_eq!(
        undecodable,
        vec!["Service web/bad"],
        "it exists, so its records must not look orphaned"
    );

    let messages: Vec<String> = warnings.iter().map(ToString::to_string).collect();
    let file = path.display().to_string();
    let expected = [
        format!("{file}: document 2 (line 6): cannot parse"),
        format!("{file}: document 3 (line 8): invalid Service web/bad: field spec.ports[0].port"),
        format!("{file}: document 4 (line 13): unknown kind Deployment"),
        format!("{file}: document 5 (line 17), items[1]: Service has no metadata.name"),
    ];
    assert_eq!(messages.len(), expected.len(), "{messages:#?}");
    for (m, e) in messages.iter().zip(&expected) {
        assert!(
            m.starts_with(e.as_str()) && m.ends_with("; skipped"),
            "{m}\nshould start with {e}"
        );
    }
    Ok(())
}

/// Objects of kinds extdns does not read are counted by kind, in `List`s and typed lists as in plain
/// documents; a kind extdns reads in another version is named with its version. The other warnings stay.
#[test]
fn skipped_kinds_are_counted_by_kind_in_one_line() -> Result<(), Box<dyn std::error::Error>> {
    let (dir, path) = one_file(
        "dump.yaml",
        "apiVersion: v1\nkind: List\nitems:\n\
         - {apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: x}}\n\
         - {apiVersion: v1, kind: Secret, metadata: {name: s, namespace: x}}\n\
         - {apiVersion: v1, kind: Service, metadata: {name: web, namespace: x}}\n\
         - {apiVersion: v1, kind: Service, metadata: {namespace: x}}\n\
         - {apiVersion: v1, kind: ConfigMap, metadata: {name: b, namespace: y}}\n\
         ---\n\
         apiVersion: v1\nkind: ConfigMapList\nitems:\n- {metadata: {name: c, namespace: z}}\n\
         ---\n\
         apiVersion: networking.k8s.io/v1beta1\nkind: Ingress\nmetadata: {name: old, namespace: x}\n",
    )?;
    let mut loaded = load_lenient(&[path], &LoadOptions::default())?;
    let skipped = loaded.take_skipped_kinds();
    assert_eq!(
        skipped.counts(),
        [
            ("ConfigMap", 3),
            ("Secret", 1),
            ("networking.k8s.io/v1beta1 Ingress", 1)
        ]
    );
    assert_eq!(
        skipped.to_string(),
        "skipped 5 objects of kinds extdns does not read: ConfigMap (3), Secret (1), \
         networking.k8s.io/v1beta1 Ingress (1)"
    );
    let rest: Vec<String> = loaded.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(rest.len(), 1, "{rest:?}");
    assert!(rest[0].contains("items[3]: Service has no metadata.name"), "{rest:?}");
    assert_eq!(loaded.store.services().len(), 1);
    assert!(loaded.take_skipped_kinds().is_empty(), "taken once");

    // The strict loader skips them only when asked to, and then returns the same count.
    let paths = [dir.path().join("dump.yaml")];
    assert!(matches!(
        load(&paths, &LoadOptions::default()),
        Err(ManifestError::UnknownKind { .. })
    ));
    let mut skip = LoadOptions::default();
    skip.skip_unknown_kinds = true;
    let err = load_counting_skipped(&paths, &skip).expect_err("the nameless Service is still an error");
    assert!(matches!(err, ManifestError::MissingName { .. }), "{err}");
    Ok(())
}

#[test]
fn lenient_loading_still_fails_on_a_missing_path() {
    let path = PathBuf::from("/nonexistent/extdns/manifests");
    let err = load_lenient(&[path], &LoadOptions::default()).expect_err("a missing path is not an empty cluster");
    assert!(matches!(err, ManifestError::Io { .. }), "{err}");
}

#[test]
fn objects_of_kinds_asked_for_are_kept_as_read_beside_the_store() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let provider = "apiVersion: externaldns.k8s.io/v1alpha1\nkind: ClusterDNSProvider\nmetadata:\n  name: public\n\
                    spec:\n  type: aws\n";
    let path = write(
        dir.path(),
        "all.yaml",
        format!(
            "{}---\n{provider}---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n",
            node("a")
        ),
    )?;
    let mut opts = LoadOptions::default();
    opts.skip_unknown_kinds = true;
    opts.keep_kinds = vec![("externaldns.k8s.io/v1alpha1".into(), "ClusterDNSProvider".into())];
    let (loaded, skipped) = load_keeping(&[path], &opts)?;
    assert_eq!(loaded.store.nodes().len(), 1);
    assert_eq!(loaded.kept.len(), 1);
    assert_eq!(loaded.kept[0]["metadata"]["name"], "public");
    assert_eq!(loaded.kept[0]["spec"]["type"], "aws");
    assert_eq!(
        skipped.counts(),
        [("ConfigMap", 1)],
        "only the kinds not asked for are skipped"
    );
    Ok(())
}
