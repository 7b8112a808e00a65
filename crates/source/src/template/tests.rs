use extdns_informer::view::{
    LoadBalancerIngress, Meta, ParentReference, Route, RouteKind, RouteParentStatus, Service, ServicePort,
};

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
        cluster_ips: vec!["10.0.0.7".into()],
        external_ips: vec![],
        external_name: None,
        external_traffic_policy: Some("Cluster".into()),
        publish_not_ready_addresses: false,
        selector: [("app", "shop")].into_iter().collect(),
        ports: vec![
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
        ],
        load_balancer_ingress: vec![LoadBalancerIngress {
            ip: Some("34.1.2.3".into()),
            hostname: None,
        }],
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
    }
}

fn tmpl(text: &str) -> Result<FqdnTemplate, TemplateError> {
    FqdnTemplate::parse(&[text.to_string()])?.ok_or_else(|| TemplateError::Parse {
        value: text.into(),
        message: "blank".into(),
    })
}

fn run_on(text: &str, obj: &dyn TemplateObject, source: &str) -> Result<String, TemplateError> {
    tmpl(text)?.execute_raw(obj, source)
}

fn run(text: &str) -> Result<String, TemplateError> {
    run_on(text, &service(), "service")
}

fn exec_err(text: &str) -> String {
    match run(text) {
        Err(TemplateError::Execute { message, .. }) => message,
        other => format!("expected an execution error, got {other:?}"),
    }
}

fn parse_err(text: &str) -> String {
    match FqdnTemplate::parse(&[text.to_string()]) {
        Err(TemplateError::Parse { message, .. }) => message,
        other => format!("expected a parse error, got {other:?}"),
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
    assert_eq!(two.map(|t| t.execute(&service(), "service")).transpose()?, Some(vec![]));
    Ok(())
}

#[test]
fn flag_values_are_joined_with_commas() -> T {
    let t = FqdnTemplate::parse(&["{{.Name}}.a.com".into(), "{{.Name}}.b.com".into()])?;
    let hosts = t.map(|t| t.execute(&service(), "service")).transpose()?;
    assert_eq!(hosts, Some(vec!["web.a.com".to_string(), "web.b.com".to_string()]));
    Ok(())
}

#[test]
fn parse_errors_name_the_failing_value() {
    let err = FqdnTemplate::parse(&["{{.Name}}.a.com".into(), "{{.Name".into()]).err();
    match err {
        Some(TemplateError::Parse { value, message }) => {
            assert_eq!(value, "{{.Name");
            assert!(message.contains("unclosed action"), "{message}");
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
        Err(TemplateError::Parse { value, message }) => {
            assert_eq!(value, values[1]);
            assert!(message.contains("multiple definition of template \"x\""), "{message}");
        }
        other => panic!("expected a parse error, got {other:?}"),
    }
}

#[test]
fn structural_parse_errors_are_reported() {
    assert!(parse_err("{{if .Name}}x").contains("without {{end}}"));
    assert!(parse_err("{{end}}").contains("unexpected {{end}}"));
    assert!(parse_err("{{else}}").contains("unexpected {{else}}"));
    assert!(parse_err("{{break}}").contains("outside {{range}}"));
    assert!(parse_err("{{$x}}").contains("undefined variable"));
    assert!(parse_err("{{(.Name}}").contains("paren"));
    assert!(parse_err("{{\"abc}}").contains("unterminated quoted string"));
    assert!(parse_err("{{/* open }}").contains("unclosed comment"));
    assert!(parse_err("{{.Name | \"x\"}}").contains("non executable command"));
    assert!(parse_err("{{ 1x }}").contains("bad number syntax"));
    assert!(parse_err("{{}}").contains("missing value"));
}

#[test]
fn hostile_nesting_is_a_parse_error_not_a_crash() {
    let fine = format!("{{{{{}1{}}}}}", "(".repeat(50), ")".repeat(50));
    assert_eq!(run(&fine).ok().as_deref(), Some("1"));
    let parens = format!("{{{{{}1{}}}}}", "(".repeat(500), ")".repeat(500));
    assert!(parse_err(&parens).contains("nests deeper"));
    let ifs = format!("{}{}", "{{if 1}}".repeat(500), "{{end}}".repeat(500));
    assert!(parse_err(&ifs).contains("nests deeper"));
}

// -------------------------------------------------------------------------------- common templates

#[test]
fn name_template() -> T {
    assert_eq!(
        tmpl("{{.Name}}.example.com")?.execute(&service(), "service")?,
        vec!["web.example.com"]
    );
    Ok(())
}

#[test]
fn name_and_namespace_template() -> T {
    let out = tmpl("{{.Name}}.{{.Namespace}}.example.com")?.execute(&service(), "service")?;
    assert_eq!(out, vec!["web.prod.example.com"]);
    Ok(())
}

#[test]
fn is_source_selects_per_source_templates() -> T {
    let t = tmpl(
        "{{ if isSource \"service\" }}{{.Name}}.svc.example.com{{end}}\
         {{ if isSource \"gateway-httproute\" }}{{.Name}}.gw.example.com{{end}}",
    )?;
    assert_eq!(t.execute(&service(), "service")?, vec!["web.svc.example.com"]);
    assert_eq!(
        t.execute(&route(RouteKind::Http), "gateway-httproute")?,
        vec!["echo.gw.example.com"]
    );
    Ok(())
}

#[test]
fn is_source_is_case_insensitive_and_rejects_unknown_sources() -> T {
    assert_eq!(run("{{ isSource \"Service\" }}")?, "true");
    assert_eq!(run("{{ isSource \"ingress\" }}")?, "false");
    assert!(exec_err("{{ isSource \"serviceX\" }}").contains("\"servicex\" is not a known source type"));
    Ok(())
}

#[test]
fn index_reads_labels() -> T {
    assert_eq!(run("{{ index .Labels \"app\" }}.example.com")?, "shop.example.com");
    // A missing key is the map's zero value, an empty string.
    assert_eq!(run("[{{ index .Labels \"nope\" }}]")?, "[]");
    assert_eq!(run("{{ index .Annotations \"owner\" }}")?, "team-a");
    Ok(())
}

#[test]
fn range_over_ports() -> T {
    let out = run("{{range .Spec.Ports}}{{.Name}}-{{.Port}}-{{.NodePort}}-{{.Protocol}}-{{.TargetPort}},{{end}}")?;
    assert_eq!(out, "http-80-30080-TCP-8080,https-443-0-TCP-https,");
    let t = tmpl("{{range $i, $p := .Spec.Ports}}{{$p.Name}}{{$i}}.{{$.Name}}.example.com,{{end}}")?;
    assert_eq!(
        t.execute(&service(), "service")?,
        vec!["http0.web.example.com", "https1.web.example.com"]
    );
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
fn missing_map_key_prints_no_value_on_the_typed_view() -> T {
    assert_eq!(run("{{.Labels.missing}}")?, "<no value>");
    assert_eq!(run("{{.Labels.app}}")?, "shop");
    Ok(())
}

#[test]
fn missing_field_fails_on_both_views_naming_the_object() {
    match run("{{.Spec.Nope}}") {
        Err(TemplateError::Execute { object, message }) => {
            assert_eq!(object, "service prod/web");
            assert!(
                message.contains("line 1: at <.Spec.Nope>: can't evaluate field Nope"),
                "{message}"
            );
            assert!(message.contains("map has no entry for key \"Nope\""), "{message}");
        }
        other => panic!("expected an execution error, got {other:?}"),
    }
}

#[test]
fn json_view_treats_missing_keys_as_errors() {
    // externalName is absent from the JSON, and the typed field is spelled differently.
    assert!(exec_err("{{.Spec.externalName}}").contains("map has no entry for key \"externalName\""));
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
        "TCPRoute gateway.networking.k8s.io/v1alpha2"
    );
    assert!(matches!(
        run_on("{{.Spec.Hostnames}}", &r, "gateway-tcproute"),
        Err(TemplateError::Execute { .. })
    ));
    Ok(())
}

// ---------------------------------------------------------------------------------------- output

#[test]
fn output_is_split_trimmed_undotted_deduplicated_and_sorted() -> T {
    let t = tmpl(" b.example.com. ,a.example.com,, b.example.com ,{{\"\"}}")?;
    assert_eq!(
        t.execute(&service(), "service")?,
        vec!["a.example.com", "b.example.com"]
    );
    assert_eq!(
        t.execute_raw(&service(), "service")?,
        " b.example.com. ,a.example.com,, b.example.com ,"
    );
    Ok(())
}

// ------------------------------------------------------------------------------ external-dns funcs

#[test]
fn contains_checks_substrings() -> T {
    assert_eq!(run("{{contains .Name \"e\"}} {{contains .Name \"x\"}}")?, "true false");
    Ok(())
}

#[test]
fn trim_prefix_and_suffix() -> T {
    assert_eq!(
        run("{{trimPrefix .Name \"w\"}} {{trimSuffix .Name \"b\"}} {{trimPrefix .Name \"x\"}}")?,
        "eb we web"
    );
    Ok(())
}

#[test]
fn trim_removes_surrounding_whitespace() -> T {
    assert_eq!(run("[{{trim \"  a b \\n\"}}]")?, "[a b]");
    Ok(())
}

#[test]
fn to_lower_lowercases() -> T {
    assert_eq!(run("{{toLower .Spec.Type}}")?, "loadbalancer");
    Ok(())
}

#[test]
fn replace_takes_old_new_then_string() -> T {
    assert_eq!(run("{{replace \".\" \"-\" \"a.b.c\"}}")?, "a-b-c");
    assert_eq!(run("{{.Spec.ClusterIP | replace \".\" \"-\"}}")?, "10-0-0-7");
    Ok(())
}

#[test]
fn is_ipv4_and_is_ipv6_follow_record_type_rules() -> T {
    assert_eq!(
        run("{{isIPv4 \"1.2.3.4\"}} {{isIPv4 \"2001:db8::1\"}} {{isIPv4 \"01.2.3.4\"}}")?,
        "true false false"
    );
    assert_eq!(
        run("{{isIPv6 \"2001:db8::1\"}} {{isIPv6 \"::ffff:1.2.3.4\"}} {{isIPv6 \"x\"}}")?,
        "true true false"
    );
    Ok(())
}

#[test]
fn has_key_checks_map_keys() -> T {
    assert_eq!(
        run("{{hasKey .Labels \"app\"}} {{hasKey .Labels \"nope\"}}")?,
        "true false"
    );
    Ok(())
}

#[test]
fn from_json_parses_and_yields_nil_on_invalid_json() -> T {
    assert_eq!(
        run("{{ (fromJson .Annotations.note).zone }}-{{ (fromJson .Annotations.note).n }}")?,
        "eu-3"
    );
    assert_eq!(run("{{ fromJson \"not json\" }}")?, "<nil>");
    assert_eq!(run("{{ with fromJson \"{]\" }}x{{else}}none{{end}}")?, "none");
    Ok(())
}

#[test]
fn function_argument_errors_fail_execution() {
    assert!(exec_err("{{toLower 5}}").contains("expected string; got int"));
    assert!(exec_err("{{contains \"a\"}}").contains("wrong number of args for contains: want 2 got 1"));
}

// ----------------------------------------------------------------------------------------- builtins

#[test]
fn printf_and_print() -> T {
    assert_eq!(run("{{printf \"%s-%d.example.com\" .Name 7}}")?, "web-7.example.com");
    assert_eq!(run("{{print .Name 1 2}}")?, "web1 2");
    assert_eq!(run("{{.Name | printf \"%s.x\"}}")?, "web.x");
    Ok(())
}

#[test]
fn comparisons_follow_go_rules() -> T {
    assert_eq!(
        run("{{eq .Spec.Type \"ClusterIP\" \"LoadBalancer\"}} {{ne .Name \"web\"}}")?,
        "true false"
    );
    assert_eq!(
        run("{{lt 1 2}} {{le 2 2}} {{gt \"b\" \"a\"}} {{ge 1 2}}")?,
        "true true true false"
    );
    assert_eq!(run("{{eq .Labels.missing \"x\"}}")?, "false");
    assert!(exec_err("{{eq 1 \"1\"}}").contains("incompatible types for comparison"));
    assert!(exec_err("{{lt true false}}").contains("invalid type for comparison"));
    Ok(())
}

#[test]
fn and_or_return_operands_and_short_circuit() -> T {
    assert_eq!(run("{{and 1 0 (index .Labels 5)}}")?, "0");
    assert_eq!(run("{{or 0 \"\" .Name}}")?, "web");
    assert_eq!(run("{{or .Name (index .Labels 5)}}")?, "web");
    assert_eq!(run("{{not 0}} {{not .Name}}")?, "true false");
    Ok(())
}

#[test]
fn len_index_and_slice() -> T {
    assert_eq!(run("{{len .Name}} {{len .Spec.Ports}} {{len .Labels}}")?, "3 2 2");
    assert_eq!(
        run("{{index .Spec.ClusterIPs 0}} {{slice .Name 1}} {{slice .Name 0 2}}")?,
        "10.0.0.7 eb we"
    );
    assert!(exec_err("{{index .Spec.ClusterIPs 3}}").contains("index out of range: 3"));
    Ok(())
}

#[test]
fn escaping_functions() -> T {
    assert_eq!(
        run("{{html \"<a&b>\"}} {{urlquery \"a b&c\"}} {{js \"it's\"}}")?,
        "&lt;a&amp;b&gt; a+b%26c it\\'s"
    );
    Ok(())
}

// ------------------------------------------------------------------------------------ control flow

#[test]
fn if_else_if_else() -> T {
    let t = "{{if eq .Spec.Type \"ClusterIP\"}}a{{else if eq .Spec.Type \"LoadBalancer\"}}b{{else}}c{{end}}";
    assert_eq!(run(t)?, "b");
    assert_eq!(run("{{if .Spec.ExternalIPs}}x{{else}}none{{end}}")?, "none");
    Ok(())
}

#[test]
fn range_else_runs_only_without_iterations() -> T {
    assert_eq!(run("{{range .Spec.ExternalIPs}}{{.}}{{else}}empty{{end}}")?, "empty");
    assert_eq!(run("{{range .Spec.ClusterIPs}}{{.}}{{else}}empty{{end}}")?, "10.0.0.7");
    Ok(())
}

#[test]
fn range_over_a_map_is_in_key_order() -> T {
    assert_eq!(
        run("{{range $k, $v := .Labels}}{{$k}}={{$v}};{{end}}")?,
        "app=shop;tier=front;"
    );
    Ok(())
}

#[test]
fn range_break_and_continue() -> T {
    assert_eq!(
        run("{{range .Spec.Ports}}{{if eq .Port 80}}{{continue}}{{end}}{{.Name}}{{end}}")?,
        "https"
    );
    assert_eq!(run("{{range .Spec.Ports}}{{.Name}}{{break}}{{end}}")?, "http");
    assert_eq!(run("{{range 3}}{{.}}{{end}}")?, "012");
    Ok(())
}

#[test]
fn with_sets_dot_and_has_else() -> T {
    assert_eq!(run("{{with .Spec}}{{.Type}}{{end}}")?, "LoadBalancer");
    assert_eq!(
        run("{{with .Spec.ExternalName}}{{.}}{{else}}no-name{{end}}")?,
        "no-name"
    );
    assert_eq!(run("{{with $x := .Name}}{{$x}}{{end}}")?, "web");
    Ok(())
}

#[test]
fn define_template_and_block() -> T {
    assert_eq!(
        run("{{define \"host\"}}{{.Name}}.example.com{{end}}{{template \"host\" .}}")?,
        "web.example.com"
    );
    assert_eq!(run("{{block \"b\" .}}{{.Namespace}}{{end}}")?, "prod");
    assert!(exec_err("{{template \"nope\"}}").contains("no such template"));
    Ok(())
}

#[test]
fn runaway_recursion_is_stopped() {
    assert!(
        exec_err("{{define \"a\"}}{{template \"a\" .}}{{end}}{{template \"a\" .}}").contains("maximum template depth")
    );
    assert!(exec_err("{{range 2000000}}{{end}}").contains("steps"));
}

#[test]
fn variables_declare_and_assign() -> T {
    assert_eq!(run("{{$h := .Name}}{{$h = printf \"%s-x\" $h}}{{$h}}")?, "web-x");
    assert!(run("{{$}}")?.starts_with("{Service v1 {Service v1} web prod map[app:shop tier:front]"));
    Ok(())
}

#[test]
fn trim_markers_and_comments() -> T {
    assert_eq!(run("a  {{- .Name -}}  b{{/* note */}}c {{- /* x */ -}} d")?, "awebbcd");
    Ok(())
}

#[test]
fn literals() -> T {
    assert_eq!(
        run("{{1}} {{-2}} {{0x1F}} {{1.5}} {{'a'}} {{true}} {{`raw\\n`}} {{\"q\\tq\"}}")?,
        "1 -2 31 1.5 97 true raw\\n q\tq"
    );
    Ok(())
}

#[test]
fn non_function_arguments_are_rejected() {
    assert!(exec_err("{{.Name \"x\"}}").contains("can't give argument to non-function"));
    assert!(exec_err("{{range .Name}}{{end}}").contains("range can't iterate over web"));
    assert!(exec_err("{{.Name.Foo}}").contains("can't evaluate field Foo in type string"));
}
