//! The built binary, as users run it: exit codes, messages, output formats, flag syntax.

use std::path::{Path, PathBuf};
use std::process::Output;

type Error = Box<dyn std::error::Error>;

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

/// Runs extdns with a clean `EXTERNAL_DNS_*` environment plus `env`.
fn extdns(args: &[&str], env: &[(&str, &str)]) -> Result<Output, Error> {
    let mut cmd = extdns_test_support::cli::command(env!("CARGO_BIN_EXE_extdns"), &[]);
    cmd.args(args).envs(env.iter().copied());
    Ok(cmd.output()?)
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The stderr of a run that must have exited with `code`.
fn stderr_after_exit(o: &Output, code: i32) -> String {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(code), "{err}");
    err
}

/// The JSON endpoints of `extdns endpoints --output json ...`, after checking it succeeded.
fn json_endpoints(args: &[&str], env: &[(&str, &str)]) -> Result<Vec<serde_json::Value>, Error> {
    let mut all = vec!["endpoints", "--output", "json"];
    all.extend_from_slice(args);
    let out = extdns(&all, env)?;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out))?;
    Ok(v.as_array().cloned().ok_or("output is not a JSON array")?)
}

/// [`json_endpoints`] over the examples directory.
fn example_endpoints(args: &[&str], env: &[(&str, &str)]) -> Result<Vec<serde_json::Value>, Error> {
    let ex = examples();
    json_endpoints(&[&["--manifests", ex.to_str().ok_or("path")?], args].concat(), env)
}

fn find<'a>(eps: &'a [serde_json::Value], name: &str, record_type: &str) -> Option<&'a serde_json::Value> {
    eps.iter()
        .find(|e| e["dnsName"] == name && e["recordType"] == record_type)
}

fn targets(e: Option<&serde_json::Value>) -> Vec<String> {
    let mut t: Vec<String> = e
        .and_then(|e| e["targets"].as_array())
        .map(|a| a.iter().filter_map(|t| t.as_str().map(String::from)).collect())
        .unwrap_or_default();
    t.sort();
    t
}

/// `extdns endpoints --source=service` over `manifests` (a file or a directory).
fn service_endpoints(manifests: impl AsRef<Path>) -> Result<Output, Error> {
    let manifests = manifests.as_ref().to_str().ok_or("path")?;
    extdns(&["endpoints", "--manifests", manifests, "--source=service"], &[])
}

/// [`service_endpoints`] over one file `name` holding `yaml`.
fn service_endpoints_of(name: &str, yaml: &str) -> Result<Output, Error> {
    let dir = tempfile::tempdir()?;
    let file = dir.path().join(name);
    std::fs::write(&file, yaml)?;
    service_endpoints(file)
}

#[test]
fn endpoints_over_the_examples_prints_a_sorted_json_array() -> Result<(), Error> {
    let eps = example_endpoints(&["--source=service"], &[])?;
    assert!(!eps.is_empty());
    assert_eq!(targets(find(&eps, "web.example.com", "A")), ["203.0.113.10"]);
    assert_eq!(
        find(&eps, "web.example.com", "A").map(|e| e["recordTTL"].clone()),
        Some(serde_json::json!(300))
    );
    assert_eq!(
        targets(find(&eps, "legacy.example.com", "CNAME")),
        ["db.legacy.example.net"]
    );
    let keys: Vec<(String, String, String)> = eps
        .iter()
        .map(|e| {
            let s = |k: &str| e[k].as_str().unwrap_or_default().to_string();
            (s("dnsName"), s("recordType"), s("setIdentifier"))
        })
        .collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted, "endpoints are sorted by name, type and set identifier");
    Ok(())
}

#[test]
fn table_output_is_the_default() -> Result<(), Error> {
    let ex = examples();
    let out = service_endpoints(ex)?;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let text = stdout(&out);
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or_default().split_whitespace().collect();
    assert_eq!(header, ["NAME", "TYPE", "TTL", "TARGETS", "SET-ID"]);
    assert!(
        text.lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["web.example.com", "A", "300", "203.0.113.10", "-"]),
        "{text}"
    );
    Ok(())
}

#[test]
fn a_broken_manifest_fails_naming_the_file_and_document() -> Result<(), Error> {
    let dir = tempfile::tempdir()?;
    std::fs::write(
        dir.path().join("good.yaml"),
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: a\n  namespace: default\nspec:\n  type: ClusterIP\n",
    )?;
    std::fs::write(
        dir.path().join("broken.yaml"),
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: b\n---\napiVersion: v1\nkind: Service\nmetadata: [unclosed\n",
    )?;
    let out = service_endpoints(dir.path())?;
    let err = stderr_after_exit(&out, 1);
    assert!(err.contains("broken.yaml") && err.contains("document 2"), "{err}");
    assert!(
        stdout(&out).is_empty(),
        "nothing is printed on stdout when the input is bad"
    );
    Ok(())
}

/// A dump of a cluster as kubectl writes it (a `List` of every kind, then more documents) previews what the
/// controller would publish from that cluster: the kinds extdns does not read are skipped, as the
/// controller never watches them, and counted on stderr in one line.
#[test]
fn a_kubectl_dump_is_read_and_the_kinds_extdns_does_not_read_are_counted() -> Result<(), Error> {
    let dump = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/kubectl-get-all-A.yaml");
    let out = extdns(
        &[
            "endpoints",
            "--manifests",
            dump.to_str().ok_or("path")?,
            "--source=service",
            "--source=ingress",
        ],
        &[],
    )?;
    let err = stderr_after_exit(&out, 0);
    let skipped: Vec<&str> = err.lines().filter(|l| l.contains("skipped")).collect();
    assert_eq!(
        skipped,
        [
            "skipped 11 objects of kinds extdns does not read: ConfigMap (4), Deployment (1), Endpoints (1), \
          ReplicaSet (1), Secret (1), ServiceAccount (1), StatefulSet (1), extensions/v1beta1 Ingress (1)"
        ]
    );
    assert_eq!(
        stdout(&out).lines().collect::<Vec<_>>(),
        [
            "NAME                  TYPE   TTL   TARGETS        SET-ID",
            "db-0.db.example.org   A      -     10.244.1.7     -",
            "db.example.org        A      -     10.244.1.7     -",
            "shop.example.org      A      -     203.0.113.80   -",
            "www.example.org       A      -     203.0.113.81   -",
        ]
    );
    // A bad object of a kind extdns reads still stops the preview, naming it.
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("dump.yaml");
    let text = std::fs::read_to_string(&dump)?.replace(
        "    name: web\n    namespace: shop\n    resourceVersion: \"48150\"",
        "    namespace: shop\n    resourceVersion: \"48150\"",
    );
    std::fs::write(&file, text)?;
    let out = service_endpoints(file)?;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("items[2]") && stderr(&out).contains("Service has no metadata.name"),
        "{}",
        stderr(&out)
    );
    Ok(())
}

#[test]
fn plan_exit_codes_say_whether_the_zone_would_change() -> Result<(), Error> {
    let ex = examples();
    let ex = ex.to_str().ok_or("path")?;
    let empty = tempfile::tempdir()?;
    let empty = empty.path().to_str().ok_or("path")?;
    let flags = ["--source=service", "--provider=inmemory", "--txt-owner-id=cli"];
    let plan = |manifests: &str, extra: &[&str]| {
        let mut args = vec!["plan", "--manifests", manifests];
        args.extend_from_slice(&flags);
        args.extend_from_slice(extra);
        extdns(&args, &[])
    };

    // The in-memory zone starts empty: every record of the examples is a create.
    let out = plan(ex, &[])?;
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let table = stdout(&out);
    assert!(table.starts_with("ACTION "), "{table}");
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("create") && l.contains("web.example.com") && l.contains("service/")),
        "{table}"
    );
    assert!(
        !stderr(&out).contains("would create"),
        "info lines repeat the table: {}",
        stderr(&out)
    );
    let out = plan(ex, &["--output=json"])?;
    assert_eq!(out.status.code(), Some(2));
    let json: serde_json::Value = serde_json::from_str(&stdout(&out))?;
    assert!(json["changes"].as_array().is_some_and(|c| !c.is_empty()), "{json}");

    let out = plan(empty, &[])?;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).starts_with("no changes"), "{}", stdout(&out));

    for bad in [&["--no-such-flag"][..], &["--policy=none"], &["--provider=linode"]] {
        let out = plan(ex, bad)?;
        assert_eq!(out.status.code(), Some(1), "{bad:?}: {}", stderr(&out));
        assert!(stdout(&out).is_empty(), "{bad:?}");
    }
    let out = extdns(&["plan", "--help"], &[])?;
    assert_eq!(out.status.code(), Some(0));
    Ok(())
}

#[test]
fn unknown_flags_are_rejected() -> Result<(), Error> {
    let out = extdns(&["--source=service", "--provider=inmemory", "--no-such-flag"], &[])?;
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--no-such-flag"), "{}", stderr(&out));
    Ok(())
}

#[test]
fn unknown_enum_values_are_rejected_while_parsing() -> Result<(), Error> {
    let out = extdns(&["--source=services", "--provider=inmemory"], &[])?;
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("services"), "{}", stderr(&out));
    Ok(())
}

#[test]
fn help_lists_the_flag_groups() -> Result<(), Error> {
    let out = extdns(&["--help"], &[])?;
    assert_eq!(out.status.code(), Some(0));
    let help = stdout(&out);
    for group in [
        "Kubernetes:",
        "Sources:",
        "Service source:",
        "Gateway API sources:",
        "Providers and domains:",
        "Policy and registry:",
        "Control loop, logging and metrics:",
        "Webhook provider:",
        "In-memory provider:",
        "RFC2136 provider:",
        "PowerDNS provider:",
        "AWS provider:",
        "CoreDNS provider:",
        "Cloudflare provider:",
    ] {
        assert!(help.lines().any(|l| l == group), "--help lacks the group {group:?}");
    }
    assert!(help.contains("--exclude-unschedulable") && help.contains("EXTERNAL_DNS_SOURCE"));
    Ok(())
}

#[test]
fn no_flag_forms_turn_booleans_off() -> Result<(), Error> {
    let ex = examples();
    let base = ["--manifests", ex.to_str().ok_or("path")?, "--source=service"];
    let on = json_endpoints(&base, &[])?;
    assert_eq!(
        targets(find(&on, "ingress.example.com", "A")),
        ["198.51.100.1", "198.51.100.2"]
    );
    let mut args = base.to_vec();
    args.push("--no-exclude-unschedulable");
    let off = json_endpoints(&args, &[])?;
    assert_eq!(
        targets(find(&off, "ingress.example.com", "A")),
        ["198.51.100.1", "198.51.100.2", "198.51.100.3"]
    );
    Ok(())
}

#[test]
fn flags_come_from_external_dns_environment_variables() -> Result<(), Error> {
    let ex = examples();
    let ex = ex.to_str().ok_or("path")?;
    let eps = json_endpoints(
        &[],
        &[
            ("EXTERNAL_DNS_MANIFESTS", ex),
            ("EXTERNAL_DNS_SOURCE", "service"),
            ("EXTERNAL_DNS_EXCLUDE_UNSCHEDULABLE", "false"),
            ("EXTERNAL_DNS_SERVICE_TYPE_FILTER", "NodePort\nExternalName"),
        ],
    )?;
    assert_eq!(
        targets(find(&eps, "ingress.example.com", "A")),
        ["198.51.100.1", "198.51.100.2", "198.51.100.3"]
    );
    assert!(find(&eps, "legacy.example.com", "CNAME").is_some());
    assert!(
        find(&eps, "web.example.com", "A").is_none(),
        "the LoadBalancer Service is filtered out"
    );
    // The command line wins over the environment.
    let eps = json_endpoints(
        &["--service-type-filter=LoadBalancer"],
        &[("EXTERNAL_DNS_MANIFESTS", ex), ("EXTERNAL_DNS_SOURCE", "service")],
    )?;
    assert!(find(&eps, "web.example.com", "A").is_some() && find(&eps, "legacy.example.com", "CNAME").is_none());
    Ok(())
}

fn one_line_error(args: &[&str]) -> Result<String, Error> {
    let out = extdns(args, &[])?;
    assert_eq!(out.status.code(), Some(2), "{args:?}: stderr {}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    Ok(err.trim_end().to_string())
}

/// [`one_line_error`] of the service source and the in-memory provider with `extra`.
fn inmemory_error(extra: &[&str]) -> Result<String, Error> {
    one_line_error(&[&["--source=service", "--provider=inmemory"], extra].concat())
}

/// [`one_line_error`] of `extdns endpoints` with the service source and `extra`.
fn preview_error(extra: &[&str]) -> Result<String, Error> {
    one_line_error(&[&["endpoints", "--manifests=x", "--source=service"], extra].concat())
}

#[test]
fn validation_errors_exit_2_with_one_line() -> Result<(), Error> {
    assert_eq!(
        inmemory_error(&["--ignore-hostname-annotation"])?,
        "error: --ignore-hostname-annotation requires at least one --fqdn-template"
    );
    assert_eq!(
        one_line_error(&["--source=service", "--source=unstructured", "--provider=inmemory"])?,
        "error: source unstructured is not supported by extdns yet"
    );
    assert_eq!(
        inmemory_error(&["--txt-prefix=a", "--txt-suffix=b"])?,
        "error: --txt-prefix and --txt-suffix are mutually exclusive"
    );
    let gss = one_line_error(&[
        "--source=service",
        "--provider=rfc2136",
        "--rfc2136-host=127.0.0.1",
        "--rfc2136-zone=example.com",
        "--rfc2136-gss-tsig",
    ])?;
    assert!(
        gss.starts_with("error: Kerberos/GSS-TSIG is not supported by extdns"),
        "{gss}"
    );
    let prefix = preview_error(&["--annotation-prefix=example.com"])?;
    assert!(
        prefix.contains("--annotation-prefix") && prefix.contains('/'),
        "{prefix}"
    );
    Ok(())
}

/// external-dns #6610: invalid filters stop the start, as every invalid flag does.
#[test]
fn filter_validation_6610_an_invalid_filter_exits_2_naming_the_flag() -> Result<(), Error> {
    for (flag, says) in [
        (
            "--annotation-filter=team!=dns",
            "error: --annotation-filter \"team!=dns\" is not a valid selector: ",
        ),
        (
            "--label-filter=team in (a",
            "error: --label-filter \"team in (a\" is not a valid selector: ",
        ),
    ] {
        let err = inmemory_error(&[flag])?;
        assert!(err.starts_with(says), "{flag}: {err}");
    }
    Ok(())
}

/// external-dns #6703: `--enable-legacy-annotation-prefix` (or its environment variable) reads the legacy
/// prefix after `--annotation-prefix`; a key set under both with different values takes the configured
/// value, with one warning naming the object, both keys and both values.
#[test]
fn legacy_annotation_prefix_6703_the_configured_prefix_wins_with_one_warning() -> Result<(), Error> {
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("svc.yaml");
    std::fs::write(
        &file,
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n  namespace: apps\n  annotations:\n    \
         dns.example.org/hostname: web.example.com\n    external-dns.alpha.kubernetes.io/hostname: old.example.com\n    \
         external-dns.alpha.kubernetes.io/ttl: \"300\"\nspec:\n  type: LoadBalancer\nstatus:\n  loadBalancer:\n    \
         ingress:\n      - ip: 192.0.2.1\n",
    )?;
    let manifests = file.to_str().ok_or("path")?;
    let json = ["endpoints", "--output", "json"];
    let prefix = "--annotation-prefix=dns.example.org/";
    let service = [prefix, "--manifests", manifests, "--source=service"];
    let runs = [
        extdns(
            &[&json[..], &service, &["--enable-legacy-annotation-prefix"]].concat(),
            &[],
        )?,
        extdns(
            &[&json[..], &service].concat(),
            &[("EXTERNAL_DNS_ENABLE_LEGACY_ANNOTATION_PREFIX", "true")],
        )?,
    ];
    for out in runs {
        let err = stderr_after_exit(&out, 0);
        let eps: serde_json::Value = serde_json::from_str(&stdout(&out))?;
        let eps = eps.as_array().cloned().unwrap_or_default();
        let web = find(&eps, "web.example.com", "A");
        assert_eq!(targets(web), ["192.0.2.1"]);
        assert_eq!(
            web.map(|e| e["recordTTL"].clone()),
            Some(serde_json::json!(300)),
            "the legacy ttl is read"
        );
        assert!(find(&eps, "old.example.com", "A").is_none(), "{eps:?}");
        let warnings: Vec<&str> = err.lines().filter(|l| l.contains("ignoring annotation")).collect();
        assert_eq!(warnings.len(), 1, "{err}");
        for part in [
            "Service apps/web",
            "external-dns.alpha.kubernetes.io/hostname=\"old.example.com\"",
            "dns.example.org/hostname=\"web.example.com\"",
        ] {
            assert!(warnings[0].contains(part), "{part}: {}", warnings[0]);
        }
    }
    // Without the flag, only the configured prefix is read.
    let eps = json_endpoints(&service, &[])?;
    let web = find(&eps, "web.example.com", "A");
    assert!(
        web.is_some_and(|e| e.get("recordTTL").is_none_or(|t| t == 0)),
        "{web:?}"
    );
    Ok(())
}

#[test]
fn the_preview_ignores_provider_settings() -> Result<(), Error> {
    let eps = example_endpoints(
        &[
            "--source=service",
            "--provider=rfc2136",
            "--rfc2136-gss-tsig",
            "--txt-prefix=a",
            "--txt-suffix=b",
        ],
        &[],
    )?;
    assert!(find(&eps, "web.example.com", "A").is_some());
    Ok(())
}

/// A Helm block scalar gives a multi-line `--fqdn-template`: on the command line it is one template. (Split
/// at its newline, the action spanning two lines would be cut in two; the pieces, joined with ',' as
/// several templates are, no longer parse.)
#[test]
fn a_multi_line_fqdn_template_on_the_command_line_is_one_template() -> Result<(), Error> {
    let template = "{{printf \"%s.tmpl.example.com\"\n    .Name}}";
    let eps = example_endpoints(
        &[
            "--source=service",
            "--ignore-hostname-annotation",
            "--fqdn-template",
            template,
        ],
        &[],
    )?;
    assert!(find(&eps, "web.tmpl.example.com", "A").is_some(), "{eps:?}");
    Ok(())
}

/// The newline delimiter is kingpin's for environment values only: there, each line is one value.
#[test]
fn a_repeatable_flag_from_the_environment_is_split_at_newlines() -> Result<(), Error> {
    let eps = example_endpoints(
        &["--ignore-hostname-annotation"],
        &[
            ("EXTERNAL_DNS_SOURCE", "service"),
            (
                "EXTERNAL_DNS_FQDN_TEMPLATE",
                "{{.Name}}.one.example.com\n{{.Name}}.two.example.com",
            ),
        ],
    )?;
    assert!(find(&eps, "web.one.example.com", "A").is_some(), "{eps:?}");
    assert!(find(&eps, "web.two.example.com", "A").is_some(), "{eps:?}");
    Ok(())
}

/// Bad configuration exits 2 wherever it is found: an unsupported provider or registry is only found while
/// wiring, an invalid encryption key while checking the flags.
#[test]
fn bad_configuration_exits_2_everywhere() -> Result<(), Error> {
    let ex = examples();
    let ex = ex.to_str().ok_or("path")?;
    for (args, message) in [
        (
            vec!["--once", "--source=service", "--provider=linode", "--manifests", ex],
            "provider linode is not supported",
        ),
        (
            vec![
                "--once",
                "--source=service",
                "--provider=inmemory",
                "--registry=aws-sd",
                "--manifests",
                ex,
            ],
            "registry aws-sd is not supported",
        ),
        (
            vec![
                "--once",
                "--source=service",
                "--provider=inmemory",
                "--registry=dynamodb",
                "--dynamodb-table=",
                "--manifests",
                ex,
            ],
            "--dynamodb-table must not be empty",
        ),
        (
            vec![
                "--once",
                "--source=service",
                "--provider=inmemory",
                "--txt-encrypt-enabled",
                "--txt-encrypt-aes-key=short",
                "--manifests",
                ex,
            ],
            "32 bytes",
        ),
    ] {
        let out = extdns(&args, &[])?;
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(message), "{args:?}: {}", stderr(&out));
    }
    Ok(())
}

/// An error says its cause once ("cannot read X: No such file ..." and not that text twice).
#[test]
fn an_error_names_its_cause_once() -> Result<(), Error> {
    let out = extdns(
        &[
            "--once",
            "--source=service",
            "--provider=inmemory",
            "--manifests",
            "/nonexistent/extdns",
        ],
        &[],
    )?;
    let err = stderr_after_exit(&out, 1);
    assert!(err.contains("/nonexistent/extdns"), "{err}");
    assert_eq!(err.matches("No such file").count(), 1, "{err}");
    Ok(())
}

/// The YAML parser's hints to programmers ("set DuplicateKeyPolicy in Options") and its source snippet never
/// reach users; the message names the file, the document, the line and the key.
#[test]
fn parser_hints_for_programmers_never_reach_users() -> Result<(), Error> {
    let out = service_endpoints_of(
        "dup.yaml",
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: a\n  name: b\n",
    )?;
    let err = stderr_after_exit(&out, 1);
    assert!(!err.contains("DuplicateKeyPolicy") && !err.contains("Options"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("dup.yaml") && err.contains("duplicate mapping key: name"),
        "{err}"
    );
    Ok(())
}

/// A type error names the object and the field path.
#[test]
fn type_errors_name_the_field_path() -> Result<(), Error> {
    let out = service_endpoints_of(
        "type.yaml",
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: a\n  namespace: default\nspec:\n  ports: 5\n",
    )?;
    let err = stderr_after_exit(&out, 1);
    assert!(err.contains("Service default/a") && err.contains("spec.ports"), "{err}");
    Ok(())
}

/// Warnings repeat a value up to 200 characters, then cut it with an ellipsis: a megabyte annotation does
/// not become a megabyte log line.
#[test]
fn warnings_cut_long_values() -> Result<(), Error> {
    let long = format!("{}.example.com", "x".repeat(5000));
    let out = service_endpoints_of(
        "svc.yaml",
        &format!(
            "apiVersion: v1\nkind: Service\nmetadata:\n  name: a\n  namespace: default\n  annotations:\n    \
             external-dns.kubernetes.io/hostname: web.example.com\n    external-dns.kubernetes.io/target: \"{long}/x\"\n\
             spec:\n  type: LoadBalancer\nstatus:\n  loadBalancer:\n    ingress:\n      - ip: 192.0.2.1\n"
        ),
    )?;
    let err = stderr_after_exit(&out, 0);
    assert!(err.contains("target annotation") && err.contains('…'), "{err}");
    assert!(!err.contains(&"x".repeat(201)), "the value is cut: {} bytes", err.len());
    Ok(())
}

#[test]
fn a_template_reading_a_field_the_kind_lacks_exits_2_naming_it() -> Result<(), Error> {
    let err = inmemory_error(&["--fqdn-template={{.Name}}.{{.Spec.TrafficDistributon}}.example.org"])?;
    assert_eq!(
        err,
        "error: template --fqdn-template reads .Spec.TrafficDistributon, which no Service has: \
         Service has no field TrafficDistributon in v1.ServiceSpec"
    );
    // Checked against every kind the template runs on: a route field is fine when a route source is on.
    let routes_only = preview_error(&[
        "--source=gateway-httproute",
        "--fqdn-template={{range .Spec.Rules}}{{.}}{{end}}",
    ])?;
    assert!(
        routes_only.contains(".Spec.Rules") && routes_only.contains("Service or HTTPRoute"),
        "{routes_only}"
    );
    Ok(())
}

#[test]
fn a_multi_line_template_reads_fields_beyond_the_view() -> Result<(), Error> {
    let dir = tempfile::tempdir()?;
    std::fs::write(
        dir.path().join("svc.yaml"),
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n  namespace: prod\n  labels: {app: shop, tier: front}\n\
         spec:\n  type: LoadBalancer\n  ipFamilies: [IPv4, IPv6]\n  trafficDistribution: PreferClose\n  ports:\n  - {port: 80}\n\
         status:\n  loadBalancer:\n    ingress:\n    - ip: 34.1.2.3\n",
    )?;
    let manifests = format!("--manifests={}", dir.path().display());
    // What a Helm block scalar passes: newlines and commas in the template's text, only its output split.
    let template = "{{- range $k, $v := .ObjectMeta.Labels }}\n{{ $k }}-{{ $v }}.example.org,\n{{- end }}\n\
                    {{- range .Spec.IPFamilies }}{{ . | toLower }}.{{ $.Spec.TrafficDistribution | toLower }}.example.org,{{ end }}";
    let eps = json_endpoints(
        &[&manifests, "--source=service", &format!("--fqdn-template={template}")],
        &[],
    )?;
    let mut names: Vec<&str> = eps.iter().filter_map(|e| e["dnsName"].as_str()).collect();
    names.dedup();
    assert_eq!(
        names,
        vec![
            "app-shop.example.org",
            "ipv4.preferclose.example.org",
            "ipv6.preferclose.example.org",
            "tier-front.example.org"
        ]
    );
    assert_eq!(
        targets(find(&eps, "ipv6.preferclose.example.org", "A")),
        vec!["34.1.2.3"]
    );
    // An environment value is a list of lines, as kingpin reads it: two templates, joined with a comma.
    let eps = json_endpoints(
        &[&manifests, "--source=service"],
        &[(
            "EXTERNAL_DNS_FQDN_TEMPLATE",
            "{{.Name}}.a.example.org\n{{.Name}}.b.example.org",
        )],
    )?;
    let mut names: Vec<&str> = eps.iter().filter_map(|e| e["dnsName"].as_str()).collect();
    names.dedup();
    assert_eq!(names, vec!["web.a.example.org", "web.b.example.org"]);
    Ok(())
}

/// The boolean flags `--help` lists (shown as `--flag[=<BOOL>]`).
fn boolean_flags_in_help() -> Result<Vec<String>, Error> {
    let out = extdns(&["--help"], &[])?;
    assert_eq!(out.status.code(), Some(0));
    Ok(stdout(&out)
        .lines()
        .filter_map(|l| l.trim().strip_prefix("--")?.strip_suffix("[=<BOOL>]").map(String::from))
        .collect())
}

/// external-dns v0.23's boolean flags (`BoolVar` in pkg/apis/externaldns/types.go).
const EXTERNAL_DNS_BOOLEANS: &[&str] = &[
    "enable-legacy-annotation-prefix",
    "resolve-service-load-balancer-hostname",
    "listen-endpoint-events",
    "always-publish-not-ready-addresses",
    "force-default-targets",
    "prefer-alias",
    "exclude-unschedulable",
    "expose-internal-ipv6",
    "gateway-listener-sets",
    "ignore-hostname-annotation",
    "ignore-ingress-rules-spec",
    "ignore-ingress-tls-spec",
    "publish-host-ip",
    "publish-internal-services",
    "create-ptr",
    "aws-evaluate-target-health",
    "aws-prefer-cname",
    "aws-zone-match-parent",
    "aws-sd-service-cleanup",
    "cloudflare-proxied",
    "cloudflare-custom-hostnames",
    "cloudflare-regional-services",
    "coredns-strictly-owned",
    "oci-auth-instance-principal",
    "ovh-enable-cname-relative",
    "pdns-skip-tls-verify",
    "ns1-ignoressl",
    "godaddy-api-ote",
    "rfc2136-insecure",
    "rfc2136-axfr",
    "rfc2136-tsig-axfr",
    "rfc2136-gss-tsig",
    "rfc2136-use-tls",
    "rfc2136-skip-tls-verify",
    "pihole-tls-skip-verify",
    "txt-encrypt-enabled",
    "once",
    "dry-run",
    "events",
    "webhook-server",
    "combine-fqdn-annotation",
];

/// external-dns booleans of sources and providers extdns does not have: the flag comes with the source or
/// provider.
const BOOLEANS_OF_MISSING_SOURCES_AND_PROVIDERS: &[&str] = &[
    "traefik-enable-legacy",
    "traefik-disable-new",
    "ignore-non-host-network-pods",
    "aws-sd-service-cleanup",
    "oci-auth-instance-principal",
    "ovh-enable-cname-relative",
    "ns1-ignoressl",
    "godaddy-api-ote",
];

#[test]
fn every_external_dns_boolean_of_what_extdns_has_is_a_boolean_flag() -> Result<(), Error> {
    let ours = boolean_flags_in_help()?;
    for flag in EXTERNAL_DNS_BOOLEANS {
        let missing = BOOLEANS_OF_MISSING_SOURCES_AND_PROVIDERS.contains(flag);
        assert_eq!(
            !ours.iter().any(|f| f == flag),
            missing,
            "--{flag}: extdns {} it as a boolean",
            if missing { "lists" } else { "does not list" }
        );
    }
    Ok(())
}

/// A Helm chart renders `extraArgs: {flag: false}` as `--no-flag`: every boolean flag takes that form, all at
/// once on one command line, with the two that default to true turned off for real.
#[test]
fn every_boolean_flag_takes_its_no_form() -> Result<(), Error> {
    let flags = boolean_flags_in_help()?;
    assert!(
        flags.len() >= 30,
        "only {} boolean flags in --help: {flags:?}",
        flags.len()
    );
    for default_true in ["exclude-unschedulable", "aws-evaluate-target-health"] {
        assert!(flags.iter().any(|f| f == default_true), "{default_true}");
    }
    let ex = examples();
    let mut args = vec![
        "--manifests".to_string(),
        ex.to_str().ok_or("path")?.to_string(),
        "--source=service".to_string(),
    ];
    args.extend(flags.iter().map(|f| format!("--no-{f}")));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let eps = json_endpoints(&args, &[])?;
    // --no-exclude-unschedulable took effect: the cordoned node's address is published.
    assert_eq!(
        targets(find(&eps, "ingress.example.com", "A")),
        ["198.51.100.1", "198.51.100.2", "198.51.100.3"]
    );
    // And `--no-` of something that is not a boolean flag is still an unknown flag.
    let out = extdns(&["--source=service", "--provider=inmemory", "--no-source"], &[])?;
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    Ok(())
}

#[test]
fn endpoints_over_an_ingress_manifest() -> Result<(), Error> {
    let file = examples().join("ingress.yaml");
    let file = file.to_str().ok_or("path")?;
    let eps = json_endpoints(&["--manifests", file, "--source=ingress", "--ingress-class=nginx"], &[])?;
    assert_eq!(targets(find(&eps, "store.example.com", "A")), ["198.51.100.20"]);
    assert_eq!(targets(find(&eps, "checkout.example.com", "A")), ["198.51.100.20"]);
    assert_eq!(
        find(&eps, "store.example.com", "A").map(|e| e["recordTTL"].clone()),
        Some(60.into())
    );
    let other = json_endpoints(
        &["--manifests", file, "--source=ingress", "--ingress-class=public"],
        &[],
    )?;
    assert!(other.is_empty(), "another class publishes nothing: {other:?}");
    let rules_only = json_endpoints(
        &["--manifests", file, "--source=ingress", "--ignore-ingress-tls-spec"],
        &[],
    )?;
    assert!(find(&rules_only, "checkout.example.com", "A").is_none());
    assert!(find(&rules_only, "store.example.com", "A").is_some());
    Ok(())
}

/// `extdns endpoints` previews the node and pod sources from a `kubectl get nodes,pods -A -o yaml` dump:
/// Nodes at their addresses (naming themselves), hostNetwork Pods at their Node's and their own addresses.
#[test]
fn endpoints_preview_the_node_and_pod_sources_over_manifests() -> Result<(), Error> {
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("nodes-pods.yaml");
    std::fs::write(
        &file,
        r#"
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: worker-1.nodes.example.org}
  status: {addresses: [{type: InternalIP, address: 10.0.0.1}, {type: ExternalIP, address: 192.0.2.1}]}
- apiVersion: v1
  kind: Node
  metadata: {name: cordoned.nodes.example.org}
  spec: {unschedulable: true}
  status: {addresses: [{type: ExternalIP, address: 192.0.2.2}]}
- apiVersion: v1
  kind: Pod
  metadata:
    name: agent
    namespace: kube-system
    annotations:
      external-dns.alpha.kubernetes.io/hostname: agent.example.org
      external-dns.alpha.kubernetes.io/internal-hostname: agent.internal.example.org
  spec: {hostNetwork: true, nodeName: worker-1.nodes.example.org, containers: [{name: a, image: a}]}
  status: {podIP: 10.0.0.1, podIPs: [{ip: 10.0.0.1}]}
"#,
    )?;
    let manifests = file.to_str().ok_or("path")?;
    let eps = json_endpoints(&["--manifests", manifests, "--source=node", "--source=pod"], &[])?;
    let node = find(&eps, "worker-1.nodes.example.org", "A");
    assert_eq!(targets(node), ["192.0.2.1"]);
    assert_eq!(
        node.map(|e| e["labels"]["resource"].clone()),
        Some(serde_json::json!("node/worker-1.nodes.example.org"))
    );
    assert!(find(&eps, "cordoned.nodes.example.org", "A").is_none(), "unschedulable");
    assert_eq!(targets(find(&eps, "agent.example.org", "A")), ["192.0.2.1"]);
    assert_eq!(targets(find(&eps, "agent.internal.example.org", "A")), ["10.0.0.1"]);
    Ok(())
}

// --- contour-httpproxy and openshift-route sources ---

#[test]
fn endpoints_over_an_httpproxy_manifest() -> Result<(), Error> {
    let file = examples().join("contour-httpproxy.yaml");
    let file = file.to_str().ok_or("path")?;
    let eps = json_endpoints(&["--manifests", file, "--source=contour-httpproxy"], &[])?;
    assert_eq!(targets(find(&eps, "cafe.example.com", "A")), ["198.51.100.30"]);
    assert_eq!(targets(find(&eps, "www.cafe.example.com", "A")), ["198.51.100.30"]);
    assert_eq!(
        find(&eps, "cafe.example.com", "A").map(|e| e["labels"]["resource"].clone()),
        Some("HTTPProxy/default/cafe".into())
    );
    assert_eq!(
        find(&eps, "cafe.example.com", "A").map(|e| e["recordTTL"].clone()),
        Some(120.into())
    );
    Ok(())
}

#[test]
fn endpoints_over_an_openshift_route_manifest() -> Result<(), Error> {
    let file = examples().join("openshift-route.yaml");
    let file = file.to_str().ok_or("path")?;
    let first = json_endpoints(&["--manifests", file, "--source=openshift-route"], &[])?;
    assert_eq!(
        targets(find(&first, "shop.apps.example.com", "CNAME")),
        ["router-default.apps.example.com"]
    );
    assert_eq!(
        find(&first, "shop.apps.example.com", "CNAME").map(|e| e["labels"]["resource"].clone()),
        Some("route/default/shop".into())
    );
    let named = json_endpoints(
        &[
            "--manifests",
            file,
            "--source=openshift-route",
            "--openshift-router-name=internal",
        ],
        &[],
    )?;
    assert_eq!(
        targets(find(&named, "shop.apps.example.com", "CNAME")),
        ["router-internal.apps.example.com"]
    );
    Ok(())
}

#[test]
fn endpoints_over_a_traefik_manifest() -> Result<(), Error> {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/traefik.yaml");
    let file = file.to_str().ok_or("path")?;
    let eps = json_endpoints(&["--manifests", file, "--source=traefik-proxy"], &[])?;
    assert_eq!(targets(find(&eps, "shop.example.com", "A")), ["198.51.100.30"]);
    assert_eq!(targets(find(&eps, "www.shop.example.com", "A")), ["198.51.100.30"]);
    assert_eq!(
        find(&eps, "shop.example.com", "A").map(|e| e["recordTTL"].clone()),
        Some(120.into())
    );
    assert_eq!(targets(find(&eps, "db.example.com", "CNAME")), ["lb.example.net"]);
    assert_eq!(targets(find(&eps, "dns.example.com", "A")), ["198.51.100.31"]);
    assert!(
        find(&eps, "old.example.com", "A").is_none(),
        "the legacy group is not read by default"
    );
    assert!(
        find(&eps, "blog.example.com", "A").is_none(),
        "no target: nothing, as external-dns"
    );
    assert_eq!(eps.len(), 4, "{eps:?}");
    let legacy = json_endpoints(
        &["--manifests", file, "--source=traefik-proxy", "--traefik-enable-legacy"],
        &[],
    )?;
    assert_eq!(targets(find(&legacy, "old.example.com", "A")), ["198.51.100.32"]);
    let discovered = json_endpoints(
        &[
            "--manifests",
            file,
            "--source=traefik-proxy",
            "--traefik-service=traefik/traefik",
        ],
        &[],
    )?;
    assert_eq!(targets(find(&discovered, "blog.example.com", "A")), ["203.0.113.40"]);
    assert_eq!(
        targets(find(&discovered, "shop.example.com", "A")),
        ["198.51.100.30"],
        "the annotation still wins"
    );
    Ok(())
}

// --- ambassador-host source ---

/// `extdns endpoints` previews the ambassador-host source over manifests: a Host (either served version) at
/// the address of the Service its `external-dns.ambassador-service` annotation names, a Host with a target
/// annotation at that target, and a Host without the Service annotation not at all.
#[test]
fn endpoints_over_ambassador_host_manifests() -> Result<(), Error> {
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("emissary.yaml");
    std::fs::write(
        &file,
        r#"
apiVersion: getambassador.io/v3alpha1
kind: Host
metadata:
  name: shop
  namespace: default
  annotations: {external-dns.ambassador-service: emissary/emissary-ingress, external-dns.alpha.kubernetes.io/ttl: "120"}
spec: {hostname: shop.example.org, ambassador_id: [default]}
---
apiVersion: getambassador.io/v2
kind: Host
metadata:
  name: blog
  namespace: default
  annotations: {external-dns.ambassador-service: emissary-ingress.emissary}
spec: {hostname: blog.example.org}
---
apiVersion: getambassador.io/v3alpha1
kind: Host
metadata:
  name: pinned
  namespace: default
  annotations: {external-dns.ambassador-service: emissary/gone, external-dns.alpha.kubernetes.io/target: lb.example.net}
spec: {hostname: pinned.example.org}
---
apiVersion: getambassador.io/v3alpha1
kind: Host
metadata: {name: unannotated, namespace: default}
spec: {hostname: unannotated.example.org}
---
apiVersion: v1
kind: Service
metadata: {name: emissary-ingress, namespace: emissary}
spec: {type: LoadBalancer, ports: [{port: 80}]}
status: {loadBalancer: {ingress: [{ip: 198.51.100.40}]}}
"#,
    )?;
    let file = file.to_str().ok_or("path")?;
    let eps = json_endpoints(&["--manifests", file, "--source=ambassador-host"], &[])?;
    assert_eq!(targets(find(&eps, "shop.example.org", "A")), ["198.51.100.40"]);
    assert_eq!(
        find(&eps, "shop.example.org", "A").map(|e| (e["labels"]["resource"].clone(), e["recordTTL"].clone())),
        Some(("host/default/shop".into(), 120.into()))
    );
    assert_eq!(targets(find(&eps, "blog.example.org", "A")), ["198.51.100.40"]);
    assert_eq!(targets(find(&eps, "pinned.example.org", "CNAME")), ["lb.example.net"]);
    assert_eq!(eps.len(), 3, "{eps:?}");
    Ok(())
}
