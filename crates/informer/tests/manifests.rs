//! Loading manifests from files and directories.

use std::fs;
use std::path::PathBuf;

use extdns_informer::{Cluster, LoadOptions, ManifestError, load};

fn node(name: &str) -> String {
    format!("apiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\n")
}

#[test]
fn directories_are_walked_recursively_for_yaml_yml_and_json() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    fs::create_dir_all(dir.path().join("sub/deeper"))?;
    fs::write(dir.path().join("a.yaml"), node("a"))?;
    fs::write(
        dir.path().join("sub/b.yml"),
        format!("{}---\n{}", node("b1"), node("b2")),
    )?;
    fs::write(
        dir.path().join("sub/deeper/c.json"),
        r#"{"apiVersion":"v1","kind":"Node","metadata":{"name":"c"}}"#,
    )?;
    fs::write(dir.path().join("sub/notes.txt"), "not a manifest: [")?;
    let c = load(&[dir.path().to_path_buf()], &LoadOptions::default())?;
    let names: Vec<String> = c.nodes().iter().map(|n| n.name.clone()).collect();
    assert_eq!(names, vec!["a", "b1", "b2", "c"]);
    Ok(())
}

#[test]
fn hidden_entries_are_skipped_so_a_mounted_config_map_is_read_once() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    fs::create_dir_all(dir.path().join("..2026_01_01"))?;
    fs::write(dir.path().join("..2026_01_01/svc.yaml"), node("n"))?;
    fs::write(dir.path().join(".hidden.yaml"), "broken: [")?;
    fs::write(dir.path().join("svc.yaml"), node("n"))?;
    let c = load(&[dir.path().to_path_buf()], &LoadOptions::default())?;
    assert_eq!(c.nodes().len(), 1);
    Ok(())
}

#[test]
fn files_load_in_sorted_order_so_the_last_duplicate_is_deterministic() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let svc = |v: &str| format!("apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n  labels: {{v: {v}}}\n");
    fs::write(dir.path().join("b.yaml"), svc("from-b"))?;
    fs::write(dir.path().join("a.yaml"), svc("from-a"))?;
    let c = load(&[dir.path().to_path_buf()], &LoadOptions::default())?;
    let services = c.services();
    assert_eq!(services.len(), 1);
    assert_eq!(services[0].meta.labels.get("v"), Some("from-b"));
    Ok(())
}

#[test]
fn an_explicit_file_is_read_whatever_its_extension() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("objects.txt");
    fs::write(&path, node("x"))?;
    let c = load(&[path], &LoadOptions::default())?;
    assert!(c.node("x").is_some());
    Ok(())
}

#[test]
fn errors_name_the_file_and_the_document() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("bad.yaml");
    fs::write(
        &path,
        format!(
            "{}---\napiVersion: v1\nkind: Secret\nmetadata: {{name: s}}\n",
            node("ok")
        ),
    )?;
    let err = load(&[dir.path().to_path_buf()], &LoadOptions::default()).expect_err("a Secret is not read");
    assert!(matches!(err, ManifestError::UnknownKind { .. }));
    let at = err.location().ok_or("no location")?;
    assert_eq!((at.path.clone(), at.document), (path.clone(), 2));
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
