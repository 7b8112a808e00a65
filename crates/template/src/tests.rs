//! The engine on a Service-shaped value (the typed view extdns builds), so the tests read like the
//! templates users write. Tests that need the extdns objects themselves, or the JSON-key retry, live in
//! extdns-source.

use std::collections::BTreeMap;

use super::*;

fn map(pairs: &[(&str, &str)]) -> Value {
    Value::string_map(pairs.iter().copied())
}

fn port(name: &str, port: i64, node_port: i64, target: &str) -> Value {
    Value::Struct(
        "v1.ServicePort",
        vec![
            ("Name", Value::str(name)),
            ("Protocol", Value::str("TCP")),
            ("Port", Value::Int(port)),
            ("NodePort", Value::Int(node_port)),
            ("TargetPort", Value::str(target)),
        ],
    )
}

/// A LoadBalancer Service `prod/web`, with the Go field names of `*v1.Service`.
fn web() -> Value {
    let labels = map(&[("app", "shop"), ("tier", "front")]);
    let annotations = map(&[("note", "{\"zone\":\"eu\",\"n\":3}"), ("owner", "team-a")]);
    let spec = Value::Struct(
        "v1.ServiceSpec",
        vec![
            ("Type", Value::str("LoadBalancer")),
            ("ClusterIP", Value::str("10.0.0.7")),
            ("ClusterIPs", Value::List(vec![Value::str("10.0.0.7")])),
            ("ExternalIPs", Value::List(vec![])),
            ("ExternalName", Value::str("")),
            ("Selector", map(&[("app", "shop")])),
            (
                "Ports",
                Value::List(vec![port("http", 80, 30080, "8080"), port("https", 443, 0, "https")]),
            ),
        ],
    );
    let ingress = Value::Struct(
        "v1.LoadBalancerIngress",
        vec![("IP", Value::str("34.1.2.3")), ("Hostname", Value::str(""))],
    );
    let status = Value::Struct(
        "v1.ServiceStatus",
        vec![(
            "LoadBalancer",
            Value::Struct("v1.LoadBalancerStatus", vec![("Ingress", Value::List(vec![ingress]))]),
        )],
    );
    Value::Struct(
        "*v1.Service",
        vec![
            ("Kind", Value::str("Service")),
            ("Name", Value::str("web")),
            ("Namespace", Value::str("prod")),
            ("Labels", labels),
            ("Annotations", annotations),
            ("Spec", spec),
            ("Status", status),
        ],
    )
}

fn run_with(text: &str, options: &ExecOptions<'_>) -> Result<String, Error> {
    Ok(Template::parse(text)?.execute(&web(), options)?)
}

fn run(text: &str) -> Result<String, Error> {
    run_with(text, &ExecOptions::default())
}

fn exec_err(text: &str) -> String {
    match run(text) {
        Err(Error::Exec(e)) => e.to_string(),
        other => format!("expected an execution error, got {other:?}"),
    }
}

fn parse_err(text: &str) -> String {
    match Template::parse(text) {
        Err(e) => e.to_string(),
        Ok(t) => format!("expected a parse error, got {t:?}"),
    }
}

type T = Result<(), Error>;

/// Checks what each template of `cases` renders on the Service.
fn renders(cases: &[(&str, &str)]) -> T {
    for (text, expected) in cases {
        assert_eq!(run(text)?, *expected, "{text}");
    }
    Ok(())
}

// ------------------------------------------------------------------------------------------- errors

#[test]
fn parse_errors_carry_the_line() {
    match Template::parse("a\nb {{.Name}}\n{{ if }}") {
        Err(e) => {
            assert_eq!(e.line, 3, "{e}");
            assert!(e.message.contains("missing value for if"), "{e}");
            assert_eq!(e.to_string(), format!("line 3: {}", e.message));
        }
        Ok(t) => panic!("expected a parse error, got {t:?}"),
    }
    assert!(parse_err("{{ nope .Name }}").contains("function \"nope\" not defined"));
}

#[test]
fn field_errors_name_the_operand_the_field_and_the_line() {
    match run("ok\n{{.Spec.Nope}}") {
        Err(Error::Exec(e)) => {
            assert_eq!(e.line, Some(2));
            assert_eq!(
                e.kind,
                ExecErrorKind::NoSuchField {
                    at: ".Spec.Nope".into(),
                    field: "Nope".into(),
                    type_name: "v1.ServiceSpec",
                }
            );
            assert_eq!(
                e.to_string(),
                "line 2: at <.Spec.Nope>: can't evaluate field Nope in type v1.ServiceSpec"
            );
        }
        other => panic!("expected an execution error, got {other:?}"),
    }
}

#[test]
fn call_errors_name_the_function_and_keep_its_error() {
    match run("{{toLower 5}}") {
        Err(Error::Exec(e)) => {
            assert!(
                matches!(&e.kind, ExecErrorKind::Call { function, .. } if function == "toLower"),
                "{e:?}"
            );
            let source = std::error::Error::source(&e).map(ToString::to_string);
            assert_eq!(
                source.as_deref(),
                Some("wrong type for value; expected string; got int")
            );
        }
        other => panic!("expected an execution error, got {other:?}"),
    }
}

#[test]
fn missing_key_error_makes_absent_map_keys_fail() -> T {
    let strict = ExecOptions::default().missing_key(MissingKey::Error);
    assert_eq!(run_with("{{.Labels.app}}", &strict)?, "shop");
    match run_with("{{.Labels.nope}}", &strict) {
        Err(Error::Exec(e)) => assert_eq!(
            e.kind,
            ExecErrorKind::NoMapKey {
                at: ".Labels.nope".into(),
                field: "nope".into()
            }
        ),
        other => panic!("expected an execution error, got {other:?}"),
    }
    Ok(())
}

#[test]
fn index_of_an_absent_key_is_the_zero_value_of_the_map_elements() -> T {
    renders(&[("{{ printf \"%v\" (index .Labels \"nope\") }}", "")])?;
    let any = ExecOptions::default().map_values(MapValues::Any);
    assert_eq!(run_with("{{ index .Labels \"nope\" }}", &any)?, "<nil>");
    Ok(())
}

// ----------------------------------------------------------------------------------- host functions

/// A host function that knows something about the execution, as `isSource` knows the source.
struct Greeter<'a> {
    name: &'a str,
}

impl Funcs for Greeter<'_> {
    fn defines(&self, name: &str) -> bool {
        matches!(name, "greet" | "len")
    }

    fn call(&self, name: &str, args: &[Value]) -> Result<Value, FuncError> {
        match name {
            "greet" => {
                let [whom] = fixed_args(name, args)?;
                Ok(Value::Str(format!("{} greets {}", self.name, whom.as_str_arg()?)))
            }
            _ => Ok(Value::str("overridden")),
        }
    }
}

#[test]
fn host_functions_are_known_at_parse_time_and_run_with_their_context() -> Result<(), Error> {
    assert!(parse_err("{{greet .Name}}").contains("function \"greet\" not defined"));
    let t = Template::parse_with("{{greet .Name}} {{len .Name}}", &Greeter { name: "a" })?;
    let alice = Greeter { name: "alice" };
    assert_eq!(
        t.execute(&web(), &ExecOptions::with_funcs(&alice))?,
        "alice greets web overridden"
    );
    let bob = Greeter { name: "bob" };
    assert_eq!(
        t.execute(&web(), &ExecOptions::with_funcs(&bob))?,
        "bob greets web overridden"
    );
    Ok(())
}

#[test]
fn host_function_errors_are_call_errors() -> Result<(), Error> {
    let g = Greeter { name: "a" };
    let t = Template::parse_with("{{greet}}", &g)?;
    let err = t
        .execute(&web(), &ExecOptions::with_funcs(&g))
        .err()
        .map(|e| e.to_string());
    assert_eq!(
        err.as_deref(),
        Some("line 1: error calling greet: wrong number of args for greet: want 1 got 0")
    );
    // Executed without the host's functions, the call cannot be made.
    let err = t.execute(&web(), &ExecOptions::default()).err().map(|e| e.to_string());
    assert_eq!(
        err.as_deref(),
        Some("line 1: error calling greet: function \"greet\" not defined")
    );
    Ok(())
}

#[test]
fn values_print_like_go() -> T {
    assert!(run("{{.}}")?.starts_with("{Service web prod map[app:shop tier:front]"));
    let m: BTreeMap<String, Value> = [("k".to_string(), Value::Nil)].into();
    let t = Template::parse("{{.}}")?;
    assert_eq!(t.execute(&Value::Map(m), &ExecOptions::default())?, "map[k:<nil>]");
    Ok(())
}

// ------------------------------------------------------------------------------------------ parsing

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

#[test]
fn ranging_over_a_huge_integer_meets_the_step_limit_instead_of_allocating_every_item() {
    // Found by the fuzzer: `range N` collected N items before the first step, so a large N exhausted memory.
    // Collected, `range` up to i64::MAX would abort the process; lazily it stops at the step limit.
    let err = exec_err(&format!("{{{{range {}}}}}{{{{end}}}}", i64::MAX));
    assert!(err.contains("steps"), "{err}");
    assert_eq!(run("{{range 3}}{{.}}{{end}}").ok().as_deref(), Some("012"));
    assert_eq!(run("{{range 0}}x{{else}}none{{end}}").ok().as_deref(), Some("none"));
}

#[test]
fn index_reads_labels() -> T {
    renders(&[("{{ index .Labels \"app\" }}.example.com", "shop.example.com")])?;
    // A missing key is the map's zero value, an empty string.
    assert_eq!(run("[{{ index .Labels \"nope\" }}]")?, "[]");
    assert_eq!(run("{{ index .Annotations \"owner\" }}")?, "team-a");
    Ok(())
}

#[test]
fn range_over_ports() -> T {
    let out = run("{{range .Spec.Ports}}{{.Name}}-{{.Port}}-{{.NodePort}}-{{.Protocol}}-{{.TargetPort}},{{end}}")?;
    assert_eq!(out, "http-80-30080-TCP-8080,https-443-0-TCP-https,");
    assert_eq!(
        run("{{range $i, $p := .Spec.Ports}}{{$p.Name}}{{$i}}.{{$.Name}}.example.com,{{end}}")?,
        "http0.web.example.com,https1.web.example.com,"
    );
    Ok(())
}

#[test]
fn missing_map_key_prints_no_value_on_the_typed_view() -> T {
    renders(&[("{{.Labels.missing}}", "<no value>"), ("{{.Labels.app}}", "shop")])
}

#[test]
fn contains_checks_substrings() -> T {
    renders(&[("{{contains .Name \"e\"}} {{contains .Name \"x\"}}", "true false")])
}

#[test]
fn trim_prefix_and_suffix() -> T {
    renders(&[(
        "{{trimPrefix .Name \"w\"}} {{trimSuffix .Name \"b\"}} {{trimPrefix .Name \"x\"}}",
        "eb we web",
    )])
}

#[test]
fn trim_removes_surrounding_whitespace() -> T {
    renders(&[("[{{trim \"  a b \\n\"}}]", "[a b]")])
}

#[test]
fn to_lower_lowercases() -> T {
    renders(&[("{{toLower .Spec.Type}}", "loadbalancer")])
}

#[test]
fn replace_takes_old_new_then_string() -> T {
    renders(&[
        ("{{replace \".\" \"-\" \"a.b.c\"}}", "a-b-c"),
        ("{{.Spec.ClusterIP | replace \".\" \"-\"}}", "10-0-0-7"),
    ])
}

#[test]
fn is_ipv4_and_is_ipv6_follow_record_type_rules() -> T {
    renders(&[
        (
            "{{isIPv4 \"1.2.3.4\"}} {{isIPv4 \"2001:db8::1\"}} {{isIPv4 \"01.2.3.4\"}}",
            "true false false",
        ),
        (
            "{{isIPv6 \"2001:db8::1\"}} {{isIPv6 \"::ffff:1.2.3.4\"}} {{isIPv6 \"x\"}}",
            "true true false",
        ),
    ])
}

#[test]
fn has_key_checks_map_keys() -> T {
    renders(&[("{{hasKey .Labels \"app\"}} {{hasKey .Labels \"nope\"}}", "true false")])
}

#[test]
fn from_json_parses_and_yields_nil_on_invalid_json() -> T {
    renders(&[
        (
            "{{ (fromJson .Annotations.note).zone }}-{{ (fromJson .Annotations.note).n }}",
            "eu-3",
        ),
        ("{{ fromJson \"not json\" }}", "<nil>"),
        ("{{ with fromJson \"{]\" }}x{{else}}none{{end}}", "none"),
    ])
}

#[test]
fn function_argument_errors_fail_execution() {
    assert!(exec_err("{{toLower 5}}").contains("expected string; got int"));
    assert!(exec_err("{{contains \"a\"}}").contains("wrong number of args for contains: want 2 got 1"));
}

#[test]
fn printf_and_print() -> T {
    renders(&[
        ("{{printf \"%s-%d.example.com\" .Name 7}}", "web-7.example.com"),
        ("{{print .Name 1 2}}", "web1 2"),
        ("{{.Name | printf \"%s.x\"}}", "web.x"),
    ])
}

#[test]
fn comparisons_follow_go_rules() -> T {
    renders(&[
        (
            "{{eq .Spec.Type \"ClusterIP\" \"LoadBalancer\"}} {{ne .Name \"web\"}}",
            "true false",
        ),
        (
            "{{lt 1 2}} {{le 2 2}} {{gt \"b\" \"a\"}} {{ge 1 2}}",
            "true true true false",
        ),
        ("{{eq .Labels.missing \"x\"}}", "false"),
    ])?;
    assert!(exec_err("{{eq 1 \"1\"}}").contains("incompatible types for comparison"));
    assert!(exec_err("{{lt true false}}").contains("invalid type for comparison"));
    Ok(())
}

#[test]
fn and_or_return_operands_and_short_circuit() -> T {
    renders(&[
        ("{{and 1 0 (index .Labels 5)}}", "0"),
        ("{{or 0 \"\" .Name}}", "web"),
        ("{{or .Name (index .Labels 5)}}", "web"),
        ("{{not 0}} {{not .Name}}", "true false"),
    ])
}

#[test]
fn len_index_and_slice() -> T {
    renders(&[
        ("{{len .Name}} {{len .Spec.Ports}} {{len .Labels}}", "3 2 2"),
        (
            "{{index .Spec.ClusterIPs 0}} {{slice .Name 1}} {{slice .Name 0 2}}",
            "10.0.0.7 eb we",
        ),
    ])?;
    assert!(exec_err("{{index .Spec.ClusterIPs 3}}").contains("index out of range: 3"));
    Ok(())
}

#[test]
fn escaping_functions() -> T {
    renders(&[(
        "{{html \"<a&b>\"}} {{urlquery \"a b&c\"}} {{js \"it's\"}}",
        "&lt;a&amp;b&gt; a+b%26c it\\'s",
    )])
}

#[test]
fn if_else_if_else() -> T {
    let t = "{{if eq .Spec.Type \"ClusterIP\"}}a{{else if eq .Spec.Type \"LoadBalancer\"}}b{{else}}c{{end}}";
    assert_eq!(run(t)?, "b");
    assert_eq!(run("{{if .Spec.ExternalIPs}}x{{else}}none{{end}}")?, "none");
    Ok(())
}

#[test]
fn range_else_runs_only_without_iterations() -> T {
    renders(&[
        ("{{range .Spec.ExternalIPs}}{{.}}{{else}}empty{{end}}", "empty"),
        ("{{range .Spec.ClusterIPs}}{{.}}{{else}}empty{{end}}", "10.0.0.7"),
    ])
}

#[test]
fn range_over_a_map_is_in_key_order() -> T {
    renders(&[(
        "{{range $k, $v := .Labels}}{{$k}}={{$v}};{{end}}",
        "app=shop;tier=front;",
    )])
}

#[test]
fn range_break_and_continue() -> T {
    renders(&[
        (
            "{{range .Spec.Ports}}{{if eq .Port 80}}{{continue}}{{end}}{{.Name}}{{end}}",
            "https",
        ),
        ("{{range .Spec.Ports}}{{.Name}}{{break}}{{end}}", "http"),
        ("{{range 3}}{{.}}{{end}}", "012"),
    ])
}

#[test]
fn with_sets_dot_and_has_else() -> T {
    renders(&[
        ("{{with .Spec}}{{.Type}}{{end}}", "LoadBalancer"),
        ("{{with .Spec.ExternalName}}{{.}}{{else}}no-name{{end}}", "no-name"),
        ("{{with $x := .Name}}{{$x}}{{end}}", "web"),
    ])
}

#[test]
fn define_template_and_block() -> T {
    renders(&[
        (
            "{{define \"host\"}}{{.Name}}.example.com{{end}}{{template \"host\" .}}",
            "web.example.com",
        ),
        ("{{block \"b\" .}}{{.Namespace}}{{end}}", "prod"),
    ])?;
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
fn trim_markers_and_comments() -> T {
    renders(&[("a  {{- .Name -}}  b{{/* note */}}c {{- /* x */ -}} d", "awebbcd")])
}

#[test]
fn literals() -> T {
    renders(&[(
        "{{1}} {{-2}} {{0x1F}} {{1.5}} {{'a'}} {{true}} {{`raw\\n`}} {{\"q\\tq\"}}",
        "1 -2 31 1.5 97 true raw\\n q\tq",
    )])
}

#[test]
fn non_function_arguments_are_rejected() {
    assert!(exec_err("{{.Name \"x\"}}").contains("can't give argument to non-function"));
    assert!(exec_err("{{range .Name}}{{end}}").contains("range can't iterate over web"));
    assert!(exec_err("{{.Name.Foo}}").contains("can't evaluate field Foo in type string"));
}

// ------------------------------------------------------------------------------------------ field paths

/// The paths a template reads, in their display form, `*` marking the ones read whole.
fn paths(text: &str) -> Result<Vec<String>, ParseError> {
    let t = Template::parse(text)?;
    Ok(t.field_paths()
        .into_iter()
        .map(|p| format!("{}{}", p.display(), if p.whole { "" } else { " (walked)" }))
        .collect())
}

#[test]
fn field_paths_of_plain_fields() -> Result<(), ParseError> {
    assert_eq!(
        paths("{{.Name}}.{{.ObjectMeta.Namespace | toLower}}.{{index .Labels \"app\"}}")?,
        vec![".Labels", ".Name", ".ObjectMeta.Namespace"]
    );
    Ok(())
}

#[test]
fn field_paths_follow_range_with_and_variables() -> Result<(), ParseError> {
    assert_eq!(
        paths("{{range .Spec.Ports}}{{.Port}},{{end}}{{with $s := .Status}}{{$s.LoadBalancer.Ingress}}{{end}}")?,
        vec![
            ".Spec.Ports (walked)",
            ".Spec.Ports[] (walked)",
            ".Spec.Ports[].Port",
            ".Status (walked)",
            ".Status.LoadBalancer.Ingress",
        ]
    );
    assert_eq!(
        paths("{{range $k, $v := .ObjectMeta.Labels}}{{$k}}={{$v}},{{end}}{{$.Name}}")?,
        vec![
            ".Name",
            ".ObjectMeta.Labels (walked)",
            ".ObjectMeta.Labels[] (walked)",
            ".ObjectMeta.Labels[]"
        ]
    );
    Ok(())
}

#[test]
fn field_paths_follow_defines_and_stop_at_recursion() -> Result<(), ParseError> {
    assert_eq!(
        paths("{{define \"p\"}}{{.Port}}{{template \"p\" .}}{{end}}{{range .Spec.Ports}}{{template \"p\" .}}{{end}}")?,
        vec![".Spec.Ports (walked)", ".Spec.Ports[] (walked)", ".Spec.Ports[].Port"]
    );
    Ok(())
}

#[test]
fn field_paths_through_functions_keep_the_argument_whole() -> Result<(), ParseError> {
    // The element is read from what `index` returns, so the list is needed whole.
    assert_eq!(
        paths("{{(index .Spec.Ports 0).Port}}{{(.Spec).Type}}{{if .Spec.IPFamilies}}x{{end}}")?,
        vec![".Spec.IPFamilies", ".Spec.Ports", ".Spec.Type"]
    );
    // A literal dot has no path: nothing below it is recorded.
    assert_eq!(paths("{{with fromJson \"{}\"}}{{.A}}{{end}}")?, Vec::<String>::new());
    assert_eq!(paths("{{.}}")?, vec!["."]);
    Ok(())
}
