use extdns_informer::view::{
    LoadBalancerIngress, Meta, ParentReference, Route, RouteKind, RouteParentStatus, Service, ServicePort,
};

use extdns_template::ExecErrorKind;

use super::*;

fn service() -> Service {
    Service {
        meta: Meta {
            name: "web".into(),
            namespace: "prod".into(),
            labels: [("app", "shop"), ("tier", "front")].into_iter().collect(),
            annotations: [("note", "{\"zone\":\"eu\",\"n\":3}"), ("owner", "team-a")]
                .into_iter()
                .collect(),
        },
        service_type: "LoadBalancer".into(),
        cluster_ip: Some("10.0.0.7".into()),
        cluster_ips: ["10.0.0.7".into()].into(),
        external_ips: [].into(),
        external_name: None,
        external_traffic_policy: Some("Cluster".into()),
        publish_not_ready_addresses: false,
        selector: [("app", "shop")].into_iter().collect(),
        ports: [
            ServicePort {
                name: Some("http".into()),
                protocol: None,
                port: 80,
                node_port: Some(30080),
                target_port: Some("8080".into()),
            },
            ServicePort {
                name: Some("https".into()),
                protocol: Some("TCP".into()),
                port: 443,
                node_port: None,
                target_port: Some("https".into()),
            },
        ]
        .into(),
        load_balancer_ingress: [LoadBalancerIngress {
            ip: Some("34.1.2.3".into()),
            hostname: None,
        }]
        .into(),
        template_fields: None,
    }
}

fn route(kind: RouteKind) -> Route {
    Route {
        kind,
        meta: Meta {
            name: "echo".into(),
            namespace: "apps".into(),
            ..Meta::default()
        },
        hostnames: vec!["echo.example.org".into()],
        parent_refs: vec![ParentReference {
            name: "gw".into(),
            section_name: Some("https".into()),
            ..Default::default()
        }],
        parents: vec![RouteParentStatus {
            parent_ref: ParentReference {
                name: "gw".into(),
                ..Default::default()
            },
            accepted: Some("True".into()),
        }],
        template_fields: None,
    }
}

fn tmpl(text: &str) -> Result<FqdnTemplate, TemplateError> {
    match FqdnTemplate::parse(&[text.to_string()])? {
        Some(t) => Ok(t),
        None => panic!("blank template {text:?}"),
    }
}

fn run_on(text: &str, obj: &dyn TemplateObject, source: &str) -> Result<String, TemplateError> {
    tmpl(text)?.execute_raw(obj, source, &Annotations::default())
}

fn run(text: &str) -> Result<String, TemplateError> {
    run_on(text, &service(), "service")
}

/// Asserts that executing `text` fails with an error that says `message`.
fn fails_with(text: &str, message: &str) {
    match run(text) {
        Err(e @ TemplateError::Execute { .. }) => assert!(e.to_string().contains(message), "{text}: {e}"),
        other => panic!("{text}: expected an execution error, got {other:?}"),
    }
}

type T = Result<(), TemplateError>;

// ------------------------------------------------------------------------------------------ parsing

#[test]
fn blank_templates_are_not_configured() -> T {
    assert!(FqdnTemplate::parse(&[]).map(|t| t.is_none())?);
    assert!(FqdnTemplate::parse(&[" \n ".into()]).map(|t| t.is_none())?);
    // Two values always join with a comma: configured, producing no hostnames.
    let two = FqdnTemplate::parse(&[" ".into(), "".into()])?;
    assert_eq!(
        two.map(|t| t.execute(&service(), "service", &Annotations::default()))
            .transpose()?,
        Some(vec![])
    );
    Ok(())
}

#[test]
fn flag_values_are_joined_with_commas() -> T {
    let t = FqdnTemplate::parse(&["{{.Name}}.a.com".into(), "{{.Name}}.b.com".into()])?;
    let hosts = t
        .map(|t| t.execute(&service(), "service", &Annotations::default()))
        .transpose()?;
    assert_eq!(hosts, Some(vec!["web.a.com".to_string(), "web.b.com".to_string()]));
    Ok(())
}

#[test]
fn parse_errors_name_the_failing_value() {
    let err = FqdnTemplate::parse(&["{{.Name}}.a.com".into(), "{{.Name".into()]).err();
    match err {
        Some(TemplateError::Parse { value, source }) => {
            assert_eq!(value, "{{.Name");
            assert_eq!(source.line, 1);
            assert!(source.message.contains("unclosed action"), "{source}");
        }
        other => panic!("expected a parse error, got {other:?}"),
    }
    let text = FqdnTemplate::parse(&["{{ nope .Name }}".into()])
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        text.contains("{{ nope .Name }}") && text.contains("function \"nope\" not defined"),
        "{text}"
    );
}

#[test]
fn duplicate_define_blocks_are_a_parse_error_naming_the_second_value() {
    let values = [
        "{{define \"x\"}}a{{end}}".to_string(),
        "{{define \"x\"}}b{{end}}".to_string(),
    ];
    match FqdnTemplate::parse(&values) {
        Err(TemplateError::Parse { value, source }) => {
            assert_eq!(value, values[1]);
            assert!(
                source.message.contains("multiple definition of template \"x\""),
                "{source}"
            );
        }
        other => panic!("expected a parse error, got {other:?}"),
    }
}

#[test]
fn name_template() -> T {
    assert_eq!(
        tmpl("{{.Name}}.example.com")?.execute(&service(), "service", &Annotations::default())?,
        vec!["web.example.com"]
    );
    Ok(())
}

#[test]
fn name_and_namespace_template() -> T {
    let out = tmpl("{{.Name}}.{{.Namespace}}.example.com")?.execute(&service(), "service", &Annotations::default())?;
    assert_eq!(out, vec!["web.prod.example.com"]);
    Ok(())
}

#[test]
fn is_source_selects_per_source_templates() -> T {
    let t = tmpl(
        "{{ if isSource \"service\" }}{{.Name}}.svc.example.com{{end}}\
         {{ if isSource \"gateway-httproute\" }}{{.Name}}.gw.example.com{{end}}",
    )?;
    assert_eq!(
        t.execute(&service(), "service", &Annotations::default())?,
        vec!["web.svc.example.com"]
    );
    assert_eq!(
        t.execute(&route(RouteKind::Http), "gateway-httproute", &Annotations::default())?,
        vec!["echo.gw.example.com"]
    );
    Ok(())
}

#[test]
fn is_source_is_case_insensitive_and_rejects_unknown_sources() -> T {
    assert_eq!(run("{{ isSource \"Service\" }}")?, "true");
    assert_eq!(run("{{ isSource \"ingress\" }}")?, "false");
    fails_with("{{ isSource \"serviceX\" }}", "\"servicex\" is not a known source type");
    Ok(())
}

#[test]
fn json_key_retry_reads_unstructured_fields() -> T {
    assert_eq!(run("{{.Spec.clusterIP}}")?, "10.0.0.7");
    assert_eq!(
        run("{{.Spec.type}}-{{(index .Spec.ports 0).nodePort}}")?,
        "LoadBalancer-30080"
    );
    assert_eq!(run("{{.Object.metadata.name}}")?, "web");
    Ok(())
}

#[test]
fn missing_field_fails_on_both_views_naming_the_object() {
    let result = run("{{.Spec.Nope}}");
    if let Err(e) = &result {
        let cause = std::error::Error::source(e).and_then(|c| c.downcast_ref::<ExecError>());
        assert!(
            cause.is_some(),
            "the Go-named view's error is the unboxed source: {e:?}"
        );
    }
    match result {
        Err(TemplateError::Execute { object, typed, json }) => {
            assert_eq!(object, "service prod/web");
            assert_eq!(typed.line, Some(1));
            assert!(
                matches!(&typed.kind, ExecErrorKind::NoSuchField { field, .. } if field == "Nope"),
                "{typed:?}"
            );
            assert!(
                typed
                    .to_string()
                    .contains("line 1: at <.Spec.Nope>: can't evaluate field Nope"),
                "{typed}"
            );
            assert!(
                matches!(&json.kind, ExecErrorKind::NoMapKey { field, .. } if field == "Nope"),
                "{json:?}"
            );
        }
        other => panic!("expected an execution error, got {other:?}"),
    }
}

#[test]
fn json_view_treats_missing_keys_as_errors() {
    // externalName is absent from the JSON, and the typed field is spelled differently.
    fails_with("{{.Spec.externalName}}", "map has no entry for key \"externalName\"");
}

#[test]
fn typed_view_exposes_go_field_names() -> T {
    let out = run(
        "{{.Kind}} {{.APIVersion}} {{.ObjectMeta.Name}} {{.ObjectMeta.Namespace}} {{.Spec.Type}} \
         {{.Spec.ClusterIP}} {{.Spec.ClusterIPs}} {{.Spec.ExternalIPs}} [{{.Spec.ExternalName}}] \
         {{.Spec.Selector.app}} {{(index .Status.LoadBalancer.Ingress 0).IP}} {{.TypeMeta.Kind}} \
         {{.ObjectMeta.Labels.tier}}",
    )?;
    assert_eq!(
        out,
        "Service v1 web prod LoadBalancer 10.0.0.7 [10.0.0.7] [] [] shop 34.1.2.3 Service front"
    );
    Ok(())
}

#[test]
fn route_templates_see_route_fields() -> T {
    let r = route(RouteKind::Http);
    assert_eq!(
        run_on(
            "{{.Kind}} {{.APIVersion}} {{index .Spec.Hostnames 0}} {{(index .Spec.ParentRefs 0).Name}}",
            &r,
            "gateway-httproute"
        )?,
        "HTTPRoute gateway.networking.k8s.io/v1 echo.example.org gw"
    );
    assert_eq!(
        run_on(
            "{{(index .Spec.ParentRefs 0).SectionName}} {{(index .Spec.ParentRefs 0).Port}}",
            &r,
            "x"
        )?,
        "https <nil>"
    );
    assert_eq!(run_on("{{(index .Spec.parentRefs 0).sectionName}}", &r, "x")?, "https");
    assert_eq!(
        run_on("{{range .Status.Parents}}{{.ParentRef.Name}}{{end}}", &r, "x")?,
        "gw"
    );
    assert_eq!(r.describe(), "httproute apps/echo");
    Ok(())
}

#[test]
fn tcp_routes_have_no_hostnames_field() -> T {
    let r = route(RouteKind::Tcp);
    assert_eq!(
        run_on("{{.Kind}} {{.APIVersion}}", &r, "gateway-tcproute")?,
        "TCPRoute gateway.networking.k8s.io/v1"
    );
    assert!(matches!(
        run_on("{{.Spec.Hostnames}}", &r, "gateway-tcproute"),
        Err(TemplateError::Execute { .. })
    ));
    Ok(())
}

#[test]
fn output_is_split_trimmed_undotted_deduplicated_and_sorted() -> T {
    let t = tmpl(" b.example.com. ,a.example.com,, b.example.com ,{{\"\"}}")?;
    assert_eq!(
        t.execute(&service(), "service", &Annotations::default())?,
        vec!["a.example.com", "b.example.com"]
    );
    assert_eq!(
        t.execute_raw(&service(), "service", &Annotations::default())?,
        " b.example.com. ,a.example.com,, b.example.com ,"
    );
    Ok(())
}

#[test]
fn variables_declare_and_assign() -> T {
    assert_eq!(run("{{$h := .Name}}{{$h = printf \"%s-x\" $h}}{{$h}}")?, "web-x");
    assert!(run("{{$}}")?.starts_with("{Service v1 {Service v1} web prod map[app:shop tier:front]"));
    Ok(())
}

#[test]
fn a_failed_template_becomes_a_source_error_that_keeps_it() {
    let Err(err) = run("{{.Spec.Nope}}") else {
        panic!("expected an execution error")
    };
    let text = err.to_string();
    let source_error = err.into_source_error("service");
    assert_eq!(source_error.to_string(), format!("service: {text}"));
    let kept = std::error::Error::source(&source_error).map(ToString::to_string);
    assert_eq!(kept, Some(text));
}

#[test]
fn is_source_needs_one_string() {
    fails_with(
        "{{ isSource }}",
        "error calling isSource: wrong number of args for isSource: want 1 got 0",
    );
    fails_with("{{ isSource 1 }}", "wrong type for value; expected string; got int");
}

mod fields;

/// external-dns #6611: a template evaluates alike on typed objects and unstructured ones; a JSON-keyed
/// path (`.Spec.clusterIP`, `.Metadata.name`, `.Object.spec`) that fails on the typed object is read from
/// the unstructured shape, where a missing key is an error rather than `<no value>`.
#[test]
fn typed_and_unstructured_alike_6611_json_paths_on_typed_objects() -> T {
    assert_eq!(run("{{.Metadata.name}}.{{.Spec.clusterIP}}")?, "web.10.0.0.7");
    assert_eq!(run("{{.Kind}}/{{.APIVersion}}")?, "Service/v1");
    assert_eq!(
        run_on(
            "{{index .Spec.hostnames 0}}",
            &route(RouteKind::Http),
            "gateway-httproute"
        )?,
        "echo.example.org"
    );
    // The typed view has no `Metadata`; the unstructured one has no `typo` key: an error, not `<no value>`.
    fails_with("{{.Metadata.typo}}", "typo");
    Ok(())
}

/// external-dns #6703: with the legacy prefix read, templates see every legacy key also under the
/// configured prefix (the configured key winning when both are set), in both views; the legacy keys stay.
#[test]
fn legacy_annotation_prefix_6703_templates_see_legacy_keys_under_the_configured_prefix() -> T {
    let mut svc = service();
    svc.meta.annotations = [
        ("external-dns.alpha.kubernetes.io/team", "blue"),
        ("external-dns.alpha.kubernetes.io/tier", "old"),
        ("external-dns.kubernetes.io/tier", "new"),
    ]
    .into_iter()
    .collect();
    let typed = tmpl(
        "{{index .Annotations \"external-dns.kubernetes.io/team\"}}-{{index .Annotations \"external-dns.kubernetes.io/tier\"}}-{{index .ObjectMeta.Annotations \"external-dns.alpha.kubernetes.io/team\"}}",
    )?;
    let json = tmpl("{{index .Metadata.annotations \"external-dns.kubernetes.io/team\"}}.example.org")?;
    // extdns's default reads both prefixes, as external-dns with --enable-legacy-annotation-prefix does.
    let both = Annotations::default();
    assert_eq!(typed.execute_raw(&svc, "service", &both)?, "blue-new-blue");
    assert_eq!(json.execute_raw(&svc, "service", &both)?, "blue.example.org");
    let custom = match Annotations::with_legacy_prefix("dns.example.org/") {
        Ok(a) => a,
        Err(e) => panic!("{e}"),
    };
    let custom_key = tmpl("{{index .Annotations \"dns.example.org/team\"}}")?;
    assert_eq!(custom_key.execute_raw(&svc, "service", &custom)?, "blue");
    // One prefix read (--annotation-prefix without the flag): no copies (`index` gives Go's zero value).
    let ga_only = match Annotations::with_prefix("external-dns.kubernetes.io/") {
        Ok(a) => a,
        Err(e) => panic!("{e}"),
    };
    assert_eq!(typed.execute_raw(&svc, "service", &ga_only)?, "-new-blue");
    assert!(
        json.execute_raw(&svc, "service", &ga_only)
            .is_ok_and(|out| !out.contains("blue"))
    );
    Ok(())
}
