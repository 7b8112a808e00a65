//! `--fqdn-template` against external-dns v0.23.0: a template whose text has commas and newlines (a Helm
//! block scalar), ranges over labels, ports and IP families, and reads fields no source reads
//! (`.Spec.TrafficDistribution`, `.Spec.IPFamilies`) publishes the same names in both zones; and, with
//! `--enable-legacy-annotation-prefix`, a template reading JSON keys on a typed object (#6611) finds a key set
//! only under the legacy prefix under the configured one (#6703).

use anyhow::{Result, bail};
use serde_json::json;

use crate::controllers::{Run, Which};
use crate::dns;
use crate::objects as o;

use super::Ctx;

/// The template, as a Helm `|` block would pass it. (`toLower` on an IP family would fail in external-dns:
/// `v1.IPFamily` is a named string type, which Go's template functions do not take as a string.)
const TEMPLATE: &str = "{{- range $k, $v := .ObjectMeta.Labels }}
{{ $k }}-{{ $v }}.{{ $.Namespace }}.example.org,
{{- end }}
{{- range .Spec.Ports }}{{ .Name }}-{{ .Port }}.{{ $.Spec.TrafficDistribution | toLower }}.example.org,{{ end }}
{{- range .Spec.IPFamilies }}{{ if eq . \"IPv6\" }}ipv6{{ else }}ipv4{{ end }}.{{ $.Name }}.example.org,{{ end }}";

pub fn run(ctx: &mut Ctx) -> Result<()> {
    let ns = ctx.namespace("templates")?;
    let kube = &ctx.cp.kube;
    let mut svc = o::dual_stack_lb_service(&ns, "shop", json!({}), json!([{ "ip": "203.0.113.40" }]));
    svc["metadata"]["labels"] = json!({ "app": "shop", "tier": "front" });
    svc["spec"]["trafficDistribution"] = json!("PreferClose");
    svc["spec"]["ports"] = json!([
        { "name": "http", "port": 80, "protocol": "TCP" },
        { "name": "dns", "port": 53, "protocol": "UDP" },
    ]);
    kube.apply(&svc)?;

    let flag = format!("--fqdn-template={TEMPLATE}");
    let theirs = dns::bind();
    let ours = dns::bind();
    Run::new(Which::ExternalDns, &ns).flag(&flag).once(&ctx.cp, &theirs)?;
    Run::new(Which::Extdns, &ns).flag(&flag).once(&ctx.cp, &ours)?;

    for name in [
        format!("app-shop.{ns}.example.org"),
        format!("tier-front.{ns}.example.org"),
        "http-80.preferclose.example.org".to_string(),
        "dns-53.preferclose.example.org".to_string(),
        "ipv4.shop.example.org".to_string(),
        "ipv6.shop.example.org".to_string(),
    ] {
        let answers = dns::answers(&ours, &name, "A");
        if answers != ["203.0.113.40"] {
            bail!("{name}: extdns published {answers:?}, expected 203.0.113.40");
        }
    }
    dns::same_zones(&theirs, &ours, "with a multi-line --fqdn-template")?;
    eprintln!("  identical zones with a multi-line --fqdn-template");
    legacy_prefix_json_keys(ctx)
}

/// A Service annotated only under `external-dns.alpha.kubernetes.io/`, named by a template that reads the
/// unstructured shape (`.Metadata.annotations`, `.Spec.type`: no such fields on the typed Service, so the
/// unstructured retry answers) and the configured prefix's key.
fn legacy_prefix_json_keys(ctx: &mut Ctx) -> Result<()> {
    let ns = ctx.namespace("templates-legacy")?;
    ctx.cp.kube.apply(&o::lb_service(
        &ns,
        "legacy",
        json!({ "external-dns.alpha.kubernetes.io/team": "blue" }),
        json!([{ "ip": "203.0.113.41" }]),
    ))?;
    let flags = [
        "--fqdn-template={{ index .Metadata.annotations \"external-dns.kubernetes.io/team\" }}.{{ .Spec.type | toLower }}.tpl.example.org",
        "--enable-legacy-annotation-prefix",
    ];
    let theirs = dns::bind();
    let ours = dns::bind();
    let (mut external_dns, mut extdns) = (Run::new(Which::ExternalDns, &ns), Run::new(Which::Extdns, &ns));
    for flag in flags {
        external_dns = external_dns.flag(flag);
        extdns = extdns.flag(flag);
    }
    external_dns.once(&ctx.cp, &theirs)?;
    extdns.once(&ctx.cp, &ours)?;
    let name = "blue.loadbalancer.tpl.example.org";
    let answers = dns::answers(&ours, name, "A");
    if answers != ["203.0.113.41"] {
        bail!("{name}: extdns published {answers:?}, expected 203.0.113.41");
    }
    dns::same_zones(&theirs, &ours, "with legacy-prefix keys read through JSON keys")?;
    eprintln!("  identical zones with a template reading a legacy-prefix key through JSON keys");
    Ok(())
}
