//! The fields templates read beyond the views: Go names mapped to JSON paths, checked at startup, kept by
//! the informer and rendered as external-dns's Go types.

use extdns_informer::view::{Route, RouteKind, Service};
use extdns_informer::{PathStep, ResourceKind, TemplateFields};
use extdns_template::{FieldPath, Step};
use k8s_openapi::api::core::v1 as core;
use serde_json::json;

use super::super::schema::{NoSuchField, PathProblem, resolve};
use super::super::*;
use super::tmpl;

type R = Result<(), Box<dyn std::error::Error>>;

fn go(path: &str) -> FieldPath {
    let steps = path
        .split('.')
        .filter(|s| !s.is_empty())
        .flat_map(|s| match s.strip_suffix("[]") {
            Some(f) => vec![Step::Field(f.to_string()), Step::Elements],
            None => vec![Step::Field(s.to_string())],
        })
        .collect();
    FieldPath { steps, whole: true }
}

fn json_path(p: &str) -> Vec<PathStep> {
    p.split('.')
        .flat_map(|s| match s.strip_suffix("[]") {
            Some(k) => vec![PathStep::Member(k.to_string()), PathStep::Elements],
            None => vec![PathStep::Member(s.to_string())],
        })
        .collect()
}

fn resolved(kind: TemplateKind, path: &str) -> Result<Option<Vec<PathStep>>, NoSuchField> {
    resolve(kind, &go(path))
}

/// Checks the JSON path (`None`: nothing to keep) each Go path of `cases` resolves to on `kind`.
fn resolves(kind: TemplateKind, cases: &[(&str, Option<&str>)]) -> R {
    for (path, expected) in cases {
        assert_eq!(resolved(kind, path)?, expected.map(json_path), "{path}");
    }
    Ok(())
}

#[test]
fn go_names_map_to_json_paths() -> R {
    resolves(
        TemplateKind::Service,
        &[
            (".Spec.IPFamilies", Some("spec.ipFamilies")),
            (".Spec.TrafficDistribution", Some("spec.trafficDistribution")),
            (".Spec.Ports[].AppProtocol", Some("spec.ports[].appProtocol")),
            (
                ".Status.LoadBalancer.Ingress[].IP",
                Some("status.loadBalancer.ingress[].ip"),
            ),
            (
                ".Spec.SessionAffinityConfig.ClientIP.TimeoutSeconds",
                Some("spec.sessionAffinityConfig.clientIP.timeoutSeconds"),
            ),
            // ObjectMeta's fields are promoted; a map is read by key.
            (".ObjectMeta.UID", Some("metadata.uid")),
            (".CreationTimestamp", Some("metadata.creationTimestamp")),
            // What every view holds needs nothing kept.
            (".Name", None),
            (".ObjectMeta.Labels.app", None),
            (".Kind", None),
            // Metadata getters are methods in Go, called like fields.
            (".GetName", None),
            (".GetUID", Some("metadata.uid")),
        ],
    )
}

#[test]
fn route_fields_are_found_through_embedded_structs() -> R {
    resolves(
        TemplateKind::Route(RouteKind::Http),
        &[
            (".Spec.ParentRefs[].Name", Some("spec.parentRefs[].name")),
            (".Spec.CommonRouteSpec.ParentRefs", Some("spec.parentRefs")),
            (
                ".Status.Parents[].ControllerName",
                Some("status.parents[].controllerName"),
            ),
            (
                ".Status.RouteStatus.Parents[].Conditions",
                Some("status.parents[].conditions"),
            ),
        ],
    )?;
    assert!(resolved(TemplateKind::Route(RouteKind::Tcp), ".Spec.Hostnames").is_err());
    Ok(())
}

#[test]
fn json_keys_map_through_the_unstructured_view() -> R {
    resolves(
        TemplateKind::Service,
        &[
            (".Spec.clusterIP", Some("spec.clusterIP")),
            (".Object.spec.ipFamilies", Some("spec.ipFamilies")),
            (".Metadata.uid", Some("metadata.uid")),
            (".Object.kind", None),
        ],
    )
}

#[test]
fn unknown_fields_are_named_with_the_struct_that_lacks_them() {
    let err = resolved(TemplateKind::Service, ".Spec.Hostnames").err();
    assert_eq!(
        err,
        Some(NoSuchField {
            path: ".Spec.Hostnames".into(),
            kind: "Service",
            problem: PathProblem::NoField {
                field: "Hostnames".into(),
                within: "v1.ServiceSpec",
            },
        })
    );
    assert_eq!(
        err.map(|e| e.to_string()).as_deref(),
        Some(".Spec.Hostnames: Service has no field Hostnames in v1.ServiceSpec")
    );
    let rules = resolved(TemplateKind::Route(RouteKind::Http), ".Spec.Rules").err();
    assert!(
        rules
            .as_ref()
            .is_some_and(|e| matches!(e.problem, PathProblem::NotKept(why) if why.contains("route rules"))),
        "{rules:?}"
    );
    assert!(resolved(TemplateKind::Service, ".Spec.Type.Foo").is_err());
    assert!(resolved(TemplateKind::Service, ".Spec.Ports.Port").is_err());
}

fn uses<'a>(template: &'a FqdnTemplate, kinds: &'a [TemplateKind]) -> [TemplateUse<'a>; 1] {
    [TemplateUse {
        name: "fqdn-template",
        template,
        kinds,
    }]
}

#[test]
fn a_field_no_kind_has_is_an_error_naming_it() -> R {
    let t = tmpl("{{.Name}}.{{.Spec.TrafficDistributon}}.example.org")?;
    let err = template_fields(&uses(&t, &[TemplateKind::Service]))
        .err()
        .map(|e| e.to_string());
    assert_eq!(
        err.as_deref(),
        Some(
            "template fqdn-template reads .Spec.TrafficDistributon, which no Service has: \
             Service has no field TrafficDistributon in v1.ServiceSpec"
        )
    );
    Ok(())
}

#[test]
fn a_missing_field_keeps_where_the_path_leaves_the_schema_as_its_cause() -> R {
    let t = tmpl("{{.Name}}.{{.Spec.TrafficDistributon}}.example.org")?;
    let Err(err) = template_fields(&uses(&t, &[TemplateKind::Service])) else {
        return Err("v1.ServiceSpec has no TrafficDistributon".into());
    };
    let field = std::error::Error::source(&err).and_then(|s| s.downcast_ref::<NoSuchField>());
    assert_eq!(
        field.map(|f| (f.path.as_str(), f.kind)),
        Some((".Spec.TrafficDistributon", "Service"))
    );
    let problem = field
        .and_then(std::error::Error::source)
        .and_then(|s| s.downcast_ref::<PathProblem>());
    assert_eq!(
        problem,
        Some(&PathProblem::NoField {
            field: "TrafficDistributon".into(),
            within: "v1.ServiceSpec",
        })
    );
    Ok(())
}

#[test]
fn a_field_of_one_kind_is_kept_for_that_kind_only() -> R {
    let t = tmpl(
        "{{if isSource \"service\"}}{{index .Spec.IPFamilies 0}}{{else}}{{range .Spec.Hostnames}}{{.}},{{end}}{{end}}",
    )?;
    let kinds = [TemplateKind::Service, TemplateKind::Route(RouteKind::Http)];
    let fields = template_fields(&uses(&t, &kinds))?;
    let svc = json!({"spec": {"ipFamilies": ["IPv6"], "ports": [{"port": 1}]}, "metadata": {"name": "a"}});
    let route = json!({"spec": {"hostnames": ["a.example.org"], "parentRefs": []}});
    let kept =
        |kind: ResourceKind, object: &serde_json::Value| -> Result<Option<serde_json::Value>, serde_json::Error> {
            fields.keep(kind, object).map(|b| serde_json::from_str(&b)).transpose()
        };
    assert_eq!(
        kept(ResourceKind::Service, &svc)?,
        Some(json!({"spec": {"ipFamilies": ["IPv6"]}}))
    );
    assert_eq!(
        kept(ResourceKind::Route(RouteKind::Http), &route)?,
        Some(json!({"spec": {"hostnames": ["a.example.org"]}}))
    );
    Ok(())
}

#[test]
fn templates_reading_only_view_fields_keep_nothing() -> R {
    let t = tmpl("{{.Name}}.{{.Namespace}}.{{index .ObjectMeta.Labels \"app\"}}.{{.Kind}}")?;
    let fields = template_fields(&uses(&t, &[TemplateKind::Service]))?;
    assert_eq!(fields, TemplateFields::default());
    Ok(())
}

/// A Service as the API server would hold it, with the fields `templates` read kept as the informer keeps
/// them.
fn stored_service(object: serde_json::Value, template: &FqdnTemplate) -> Result<Service, Box<dyn std::error::Error>> {
    let typed: core::Service = serde_json::from_value(object)?;
    let fields = template_fields(&uses(template, &[TemplateKind::Service]))?;
    let mut view = Service::from(&typed);
    view.template_fields = fields.keep(ResourceKind::Service, &typed);
    Ok(view)
}

fn dual_stack() -> serde_json::Value {
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "web", "namespace": "prod", "uid": "u-1",
                     "labels": {"app": "shop", "tier": "front", "zone": "eu"}},
        "spec": {
            "type": "LoadBalancer", "clusterIP": "10.0.0.7",
            "ipFamilies": ["IPv4", "IPv6"], "ipFamilyPolicy": "PreferDualStack",
            "trafficDistribution": "PreferClose",
            "ports": [{"name": "http", "port": 80, "protocol": "TCP", "appProtocol": "http", "targetPort": 8080},
                      {"name": "dns", "port": 53, "protocol": "UDP", "targetPort": "dns"}]
        },
        "status": {"loadBalancer": {"ingress": [{"ip": "34.1.2.3", "ipMode": "VIP"}, {"hostname": "lb.example.net"}]}}
    })
}

fn hosts(text: &str) -> Result<Vec<String>, Box<dyn std::error::Error>> {
    let t = tmpl(text)?;
    let svc = stored_service(dual_stack(), &t)?;
    Ok(t.execute(&svc, "service", &Annotations::default())?)
}

#[test]
fn templates_read_ports_with_go_names() -> R {
    assert_eq!(
        hosts("{{range .Spec.Ports}}{{.Name}}-{{.Port}}-{{.Protocol}}-{{.TargetPort}}.{{$.Name}}.example.org,{{end}}")?,
        vec!["dns-53-UDP-dns.web.example.org", "http-80-TCP-8080.web.example.org"]
    );
    // A field the compact view does not hold comes from the kept JSON; a nil pointer prints <nil>.
    assert_eq!(
        hosts("{{range .Spec.Ports}}{{.AppProtocol}}.example.org,{{end}}")?,
        vec!["<nil>.example.org", "http.example.org"]
    );
    Ok(())
}

#[test]
fn templates_read_ip_families_and_traffic_distribution() -> R {
    assert_eq!(
        hosts("{{range .Spec.IPFamilies}}{{. | toLower}}.{{$.Name}}.example.org,{{end}}")?,
        vec!["ipv4.web.example.org", "ipv6.web.example.org"]
    );
    assert_eq!(
        hosts("{{.Spec.TrafficDistribution | toLower}}.{{.Spec.IPFamilyPolicy}}.{{len .Spec.IPFamilies}}.example.org")?,
        vec!["preferclose.PreferDualStack.2.example.org"]
    );
    Ok(())
}

#[test]
fn templates_read_load_balancer_ingress() -> R {
    assert_eq!(
        hosts(
            "{{range .Status.LoadBalancer.Ingress}}{{if .IP}}{{.IP | replace \".\" \"-\"}}.{{.IPMode}}{{else}}{{.Hostname}}{{end}}.example.org,{{end}}"
        )?,
        vec!["34-1-2-3.VIP.example.org", "lb.example.net.example.org"]
    );
    Ok(())
}

#[test]
fn range_over_labels_with_commas_and_newlines_in_the_output() -> R {
    // The template's text has commas and newlines of its own (a Helm block scalar); only its output is
    // split, each part trimmed, empties dropped.
    let text = "{{- range $k, $v := .ObjectMeta.Labels }}\n  {{ $k }}-{{ $v }}.example.org, {{ $k }}.{{ $.Name }}.example.org,\n{{- end }}\n,,";
    assert_eq!(
        hosts(text)?,
        vec![
            "app-shop.example.org",
            "app.web.example.org",
            "tier-front.example.org",
            "tier.web.example.org",
            "zone-eu.example.org",
            "zone.web.example.org",
        ]
    );
    Ok(())
}

#[test]
fn metadata_getters_read_like_fields() -> R {
    assert_eq!(
        hosts("{{.GetName}}.{{.GetNamespace}}.{{.GetUID}}.{{index .GetLabels \"app\"}}.example.org")?,
        vec!["web.prod.u-1.shop.example.org"]
    );
    Ok(())
}

#[test]
fn the_json_retry_sees_kept_fields_too() -> R {
    assert_eq!(
        hosts("{{index .Spec.ipFamilies 1 | toLower}}.{{.Metadata.uid}}.example.org")?,
        vec!["ipv6.u-1.example.org"]
    );
    Ok(())
}

#[test]
fn absent_fields_read_as_go_zero_values() -> R {
    let t = tmpl("{{.Spec.TrafficDistribution}}.{{.Spec.HealthCheckNodePort}}.{{len .Spec.IPFamilies}}.example.org")?;
    let svc = stored_service(json!({"metadata": {"name": "bare"}, "spec": {}}), &t)?;
    assert_eq!(
        t.execute(&svc, "service", &Annotations::default())?,
        vec!["<nil>.0.0.example.org"]
    );
    Ok(())
}

#[test]
fn route_templates_read_kept_status_fields() -> R {
    let t = tmpl(
        "{{range .Status.Parents}}{{.ControllerName | replace \"/\" \"-\"}}.{{.ParentRef.Name}}.example.org{{end}}",
    )?;
    let fields = template_fields(&uses(&t, &[TemplateKind::Route(RouteKind::Http)]))?;
    let object = json!({
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
        "metadata": {"name": "echo", "namespace": "apps"},
        "spec": {"parentRefs": [{"name": "gw"}], "hostnames": ["echo.example.org"]},
        "status": {"parents": [{"parentRef": {"name": "gw"}, "controllerName": "example.com/gw",
                                "conditions": []}]}
    });
    let typed: gateway_api::httproutes::HttpRoute = serde_json::from_value(object)?;
    let mut route = Route::from(&typed);
    route.template_fields = fields.keep(ResourceKind::Route(RouteKind::Http), &typed);
    assert_eq!(
        t.execute(&route, "gateway-httproute", &Annotations::default())?,
        vec!["example.com-gw.gw.example.org"]
    );
    Ok(())
}
