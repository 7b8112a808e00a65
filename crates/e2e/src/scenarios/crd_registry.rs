//! `--registry=crd`: ownership in external-dns v0.23's DNSRecord objects (its CRD, from its chart).
//!
//! - `crd-registry`: the registry crate on the API server with the deploy/ ServiceAccount (its
//!   components/crd-registry Role): records created, read back, updated and deleted, with the objects as
//!   external-dns writes them (name, owner label, `spec.endpoint`, `Ready`); a record the provider refuses
//!   leaves its object `Failed` (a create) or still claiming the old record (an update); another owner's
//!   object is never taken. Then the controllers, external-dns v0.23.0 and extdns with the same flags on
//!   Services against BIND, each way round (each with a BIND and a DNSRecord namespace of its own: object
//!   names do not depend on the owner): the second changes nothing (zone serial, every DNSRecord's
//!   resourceVersion, no record written), and both ways end in identical zones and DNSRecords.
//! - `upstream-chart-crd`: external-dns v0.23.0's chart with `registry: crd` and
//!   `extraArgs: {enable-legacy-annotation-prefix: true}`, the extdns image, its rendered ServiceAccount,
//!   ClusterRole and arguments: a Service annotated under the legacy prefix publishes, its DNSRecord is
//!   external-dns's, external-dns with the same arguments changes nothing, and a delete removes record and
//!   object.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use extdns_endpoint::{Change, Endpoint, RecordType, label};
use extdns_provider::{InMemoryProvider, Provider, ProviderError, Unit};
use extdns_registry::{Registry, RegistryError};
use extdns_registry_crd::object as dnsrecord;
use extdns_registry_crd::{CrdRegistry, CrdRegistryConfig, object_name};
use kube::api::{Api, DynamicObject, ListParams, PostParams};
use serde_json::{Value, json};

use crate::controllers::{OWNER, Run, Which};
use crate::dns::{self, DnsServer, KEY_NAME, SECRET, ZONE};
use crate::kube::Kube;
use crate::objects::{self as o, annotations};
use crate::proc::eventually;

use super::Ctx;
use super::install::{
    apply_file, apply_json, container_command, from_env, helm_template, rendered_pod, rfc2136_values, start_extdns,
    tsig_secret,
};
use super::wait::record_writes;
use super::wait::{alive, answers};
use crate::dns::differences;

/// DNSRecords by name: resourceVersion, and what the controllers read of them.
type DnsRecords = BTreeMap<String, (String, Value)>;

/// Where deploy/ (its components/crd-registry Role) lets the ServiceAccount keep DNSRecords.
const NAMESPACE: &str = "extdns";

pub fn run(ctx: &mut Ctx) -> Result<()> {
    install_crd(ctx)?;
    library(ctx).context("the registry crate on the API server")?;
    controllers(ctx)
}

/// external-dns's DNSRecord CRD, from its chart, served.
fn install_crd(ctx: &Ctx) -> Result<()> {
    let chart = from_env("EXTDNS_TEST_EXTERNAL_DNS_CHART")?;
    apply_file(ctx, &chart.join("crds/dnsrecords.externaldns.k8s.io.yaml"))?;
    let api = records_api(&ctx.cp.kube, NAMESPACE);
    eventually(
        "the DNSRecord CRD serves",
        Duration::from_secs(30),
        Duration::from_millis(200),
        || Ok(ctx.cp.kube.block_on(api.list(&ListParams::default())).ok().map(drop)),
    )
}

fn records_api(kube: &Kube, namespace: &str) -> Api<DynamicObject> {
    Api::namespaced_with(kube.client(), namespace, &dnsrecord::api_resource())
}

fn a(name: &str, ip: &str) -> Endpoint {
    Endpoint::new(name, RecordType::A, [ip]).with_label(label::RESOURCE, "service/lib/web")
}

/// The DNSRecord's `Ready` condition has this status and reason.
fn ensure_ready(o: &DynamicObject, status: &str, reason: &str) -> Result<()> {
    let (found_status, found_reason) = condition(o);
    ensure!(
        found_status == status && found_reason == reason,
        "{} is Ready {found_status} ({found_reason}), not {status} ({reason})",
        o.metadata.name.as_deref().unwrap_or_default()
    );
    Ok(())
}

fn condition(o: &DynamicObject) -> (String, String) {
    let ready = o.data["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == "Ready"))
        .cloned()
        .unwrap_or_default();
    (
        ready["status"].as_str().unwrap_or_default().to_string(),
        ready["reason"].as_str().unwrap_or_default().to_string(),
    )
}

fn refused_records(e: &RegistryError) -> Vec<String> {
    match e {
        RegistryError::Provider(ProviderError::Partial { failures }) => failures
            .iter()
            .map(|f| format!("{} {}", f.key.dns_name, f.key.record_type))
            .collect(),
        _ => Vec::new(),
    }
}

/// The registry over an in-memory provider, with the ServiceAccount's own client.
fn library(ctx: &Ctx) -> Result<()> {
    let sa = Kube::from_kubeconfig(&ctx.cp.sa_kubeconfig)?;
    let admin = records_api(&ctx.cp.kube, NAMESPACE);
    let provider = Arc::new(InMemoryProvider::new(vec!["example.org".into()]));
    let config = CrdRegistryConfig::new("lib", NAMESPACE)?;
    let registry = CrdRegistry::new(sa.client(), provider.clone(), config);
    let get =
        |e: &Endpoint| -> Result<Option<DynamicObject>> { Ok(ctx.cp.kube.block_on(admin.get_opt(&object_name(e)))?) };

    // Three creates; the provider already holds `taken`, so it refuses that one.
    let (web, mail, taken) = (
        a("web.example.org", "192.0.2.1"),
        a("mail.example.org", "192.0.2.2"),
        a("taken.example.org", "192.0.2.3"),
    );
    provider.insert([Endpoint::new("taken.example.org", RecordType::A, ["192.0.2.99"])]);
    let snapshot = sa.block_on(registry.records())?;
    ensure!(snapshot.records.is_empty(), "no DNSRecords of owner lib yet");
    let creates = [web.clone(), mail.clone(), taken.clone()].map(Change::Create);
    let refused = match sa.block_on(registry.apply(&snapshot, &creates)) {
        Err(e) => refused_records(&e),
        Ok(_) => Vec::new(),
    };
    ensure!(refused == ["taken.example.org A"], "refused {refused:?}");
    let object = get(&web)?.context("web's DNSRecord")?;
    ensure!(
        object.metadata.name.as_deref() == Some("web-example-org-43fd9d43"),
        "{:?}",
        object.metadata.name
    );
    ensure!(dnsrecord::owner(&object) == Some("lib"), "{:?}", object.metadata.labels);
    ensure!(
        object.data["spec"]["endpoint"]
            == json!({"dnsName": "web.example.org", "targets": ["192.0.2.1"], "recordType": "A",
                      "labels": {"owner": "lib", "resource": "service/lib/web"}}),
        "{}",
        object.data["spec"]
    );
    ensure_ready(&object, "True", "Programmed")?;
    let failed = get(&taken)?.context("taken's DNSRecord")?;
    ensure_ready(&failed, "False", "Failed")?;

    // Read back: the two Ready ones, owned.
    let snapshot = sa.block_on(registry.records())?;
    let mut names: Vec<String> = snapshot.records.iter().map(|r| r.dns_name.clone()).collect();
    names.sort();
    ensure!(names == ["mail.example.org", "web.example.org"], "{names:?}");
    let owned = |n: &str| snapshot.records.iter().find(|r| r.dns_name == n).cloned();
    let (web, mail) = (owned("web.example.org"), owned("mail.example.org"));
    let (Some(web), Some(mail)) = (web, mail) else {
        bail!("web and mail read back")
    };
    ensure!(web.owner() == Some("lib"), "{:?}", web.labels);

    // An update written, and one refused: the refused one's object still claims the old record.
    let new_web = Endpoint {
        targets: a("x", "192.0.2.11").targets,
        ..web.clone()
    };
    let new_mail = Endpoint {
        targets: a("x", "192.0.2.12").targets,
        ..mail.clone()
    };
    provider.set_fail_on(Some(Arc::new(|e: &Endpoint| {
        (e.dns_name == "mail.example.org").then(|| "refused by the test".to_string())
    })));
    let updates = [
        Change::update(web.clone(), new_web.clone()),
        Change::update(mail.clone(), new_mail),
    ];
    let refused = match sa.block_on(registry.apply(&snapshot, &updates)) {
        Err(e) => refused_records(&e),
        Ok(_) => Vec::new(),
    };
    provider.set_fail_on(None);
    ensure!(refused == ["mail.example.org A"], "refused {refused:?}");
    let object = get(&web)?.context("web's DNSRecord")?;
    ensure!(
        object.data["spec"]["endpoint"]["targets"] == json!(["192.0.2.11"]),
        "{}",
        object.data["spec"]
    );
    ensure!(condition(&object).1 == "Programmed", "{:?}", condition(&object));
    let object = get(&mail)?.context("mail's DNSRecord")?;
    ensure!(
        object.data["spec"]["endpoint"]["targets"] == json!(["192.0.2.2"]),
        "{}",
        object.data["spec"]
    );
    ensure_ready(&object, "True", "Programmed")?;
    ensure!(
        provider
            .snapshot()
            .iter()
            .any(|r| r.dns_name == "mail.example.org" && r.targets == mail.targets),
        "the provider kept mail's old address"
    );

    // The refused create again, the provider's own record gone: the Failed object (ours, 409 on create) is
    // taken over and made Ready.
    let theirs_taken = Endpoint::new("taken.example.org", RecordType::A, ["192.0.2.99"]);
    sa.block_on(provider.apply(&Default::default(), &[Unit::new(&Change::Delete(theirs_taken))]))?;
    let snapshot = sa.block_on(registry.records())?;
    ensure!(
        !snapshot.records.iter().any(|r| r.dns_name == "taken.example.org"),
        "a Failed DNSRecord is no current record"
    );
    sa.block_on(registry.apply(&snapshot, &[Change::Create(taken.clone())]))?;
    let object = get(&taken)?.context("taken's DNSRecord")?;
    ensure!(
        object.metadata.uid == failed.metadata.uid,
        "the Failed object was replaced, not taken over"
    );
    ensure_ready(&object, "True", "Programmed")?;

    // A delete: the record, then its object.
    let snapshot = sa.block_on(registry.records())?;
    sa.block_on(registry.apply(&snapshot, &[Change::Delete(new_web.clone())]))?;
    ensure!(get(&new_web)?.is_none(), "web's DNSRecord deleted");
    ensure!(
        !provider.snapshot().iter().any(|r| r.dns_name == "web.example.org"),
        "web deleted from the provider"
    );

    // Another owner's object at the same name is left alone, and its record not written.
    let other = a("other.example.org", "192.0.2.4");
    let theirs = dnsrecord::new_object(&object_name(&other), NAMESPACE, "someone", &other);
    let theirs = ctx.cp.kube.block_on(admin.create(&PostParams::default(), &theirs))?;
    let snapshot = sa.block_on(registry.records())?;
    let refused = match sa.block_on(registry.apply(&snapshot, &[Change::Create(other.clone())])) {
        Err(e) => refused_records(&e),
        Ok(_) => Vec::new(),
    };
    ensure!(refused == ["other.example.org A"], "refused {refused:?}");
    let after = get(&other)?.context("the other owner's DNSRecord")?;
    ensure!(
        after.metadata.resource_version == theirs.metadata.resource_version,
        "the other owner's DNSRecord was written"
    );
    ensure!(
        !provider.snapshot().iter().any(|r| r.dns_name == "other.example.org"),
        "the other owner's record was written to the provider"
    );
    eprintln!("  registry crate: create, read, update, delete, refusals and another owner's object as expected");
    Ok(())
}

/// RFC2136 to `port` with the CRD registry keeping its DNSRecords in `namespace`.
fn crd_flags(namespace: &str, port: u16) -> Vec<String> {
    [
        "--provider=rfc2136",
        "--rfc2136-host=127.0.0.1",
        &format!("--rfc2136-port={port}"),
        &format!("--rfc2136-zone={ZONE}"),
        &format!("--rfc2136-tsig-keyname={KEY_NAME}"),
        &format!("--rfc2136-tsig-secret={SECRET}"),
        "--rfc2136-tsig-secret-alg=hmac-sha256",
        "--rfc2136-axfr",
        &format!("--domain-filter={ZONE}"),
        "--registry=crd",
        &format!("--txt-owner-id={OWNER}"),
        &format!("--crd-registry-namespace={namespace}"),
        "--policy=sync",
    ]
    .map(String::from)
    .to_vec()
}

/// The DNSRecords in `namespace` by name: resourceVersion, and what the controllers read (labels, spec,
/// the Ready condition's status and reason).
fn dnsrecords(ctx: &Ctx, namespace: &str) -> Result<DnsRecords> {
    let api = records_api(&ctx.cp.kube, namespace);
    let list = ctx.cp.kube.block_on(api.list(&ListParams::default()))?;
    let mut out = BTreeMap::new();
    for o in list.items {
        let (status, reason) = condition(&o);
        let read = json!({"labels": o.metadata.labels, "spec": o.data["spec"], "ready": [status, reason]});
        let version = o.metadata.resource_version.clone().unwrap_or_default();
        out.insert(o.metadata.name.clone().unwrap_or_default(), (version, read));
    }
    Ok(out)
}

/// A namespace for one controller's DNSRecords, with the deploy/ Role (components/crd-registry) bound to
/// the ServiceAccount there.
fn registry_namespace(ctx: &mut Ctx, prefix: &str) -> Result<String> {
    let ns = ctx.namespace(prefix)?;
    let role = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "extdns-crd-registry", "namespace": ns},
        "rules": get_role(ctx)?,
    });
    apply_json(ctx, &role)?;
    apply_json(
        ctx,
        &json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "extdns-crd-registry", "namespace": ns},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "extdns-crd-registry"},
            "subjects": [{"kind": "ServiceAccount", "name": "extdns", "namespace": NAMESPACE}],
        }),
    )?;
    Ok(ns)
}

/// The rules of deploy/'s Role, as the harness applied it.
fn get_role(ctx: &Ctx) -> Result<Value> {
    let role = super::install::get(ctx, "role", NAMESPACE, "extdns-crd-registry")?;
    Ok(role["rules"].clone())
}

/// Services of several shapes: an address, two addresses with a TTL, a load balancer hostname (CNAME),
/// two hostnames on one Service.
fn create_services(ctx: &Ctx, ns: &str) -> Result<usize> {
    let kube = &ctx.cp.kube;
    kube.apply(&o::lb_at(ns, "web", &format!("web.{ZONE}"), "203.0.113.60"))?;
    kube.apply(&o::lb_service(
        ns,
        "pair",
        annotations(&[("hostname", &format!("pair.{ZONE}")), ("ttl", "120")]),
        json!([{ "ip": "203.0.113.61" }, { "ip": "203.0.113.62" }]),
    ))?;
    kube.apply(&o::lb_service(
        ns,
        "elb",
        annotations(&[("hostname", &format!("elb.{ZONE}"))]),
        json!([{ "hostname": "lb-1.elb.example.net" }]),
    ))?;
    kube.apply(&o::lb_at(ns, "two", &format!("a.{ZONE},b.{ZONE}"), "203.0.113.63"))?;
    Ok(5)
}

/// `first` writes the zone and the DNSRecords (twice: its own result is stable), then `second` with the
/// same flags changes nothing. Returns the zone and the DNSRecords.
fn hand_over(
    ctx: &Ctx,
    (first, second): (&Run<'_>, &Run<'_>),
    server: &DnsServer,
    namespace: &str,
    records: usize,
) -> Result<(Vec<dns::Record>, DnsRecords)> {
    first.once(&ctx.cp, server)?;
    first.once(&ctx.cp, server)?;
    let zone = dns::zone(server)?;
    let objects = dnsrecords(ctx, namespace)?;
    ensure!(
        objects.len() == records,
        "{} wrote {} DNSRecords, not {records}: {:?}",
        first.which.name(),
        objects.len(),
        objects.keys()
    );
    ensure!(
        objects
            .values()
            .all(|(_, v)| v["ready"] == json!(["True", "Programmed"])),
        "{} left DNSRecords not Ready: {objects:?}",
        first.which.name()
    );
    let serial = server.serial(ZONE);
    let out = second.once(&ctx.cp, server)?;
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let what = format!("{} after {}", second.which.name(), first.which.name());
    let after = dns::zone(server)?;
    if server.serial(ZONE) != serial || after != zone {
        bail!("{what}: the zone changed:\n{}", differences(&zone, &after).join("\n"));
    }
    let objects_after = dnsrecords(ctx, namespace)?;
    if objects_after != objects {
        bail!("{what}: the DNSRecords changed:\nbefore {objects:#?}\nafter {objects_after:#?}");
    }
    // What each logs for a write: extdns a line per record, external-dns's RFC2136 provider one per RR; and
    // external-dns says when its plan is empty.
    let writes: Vec<&str> = record_writes(&log)
        .into_iter()
        .chain(
            log.lines()
                .filter(|l| l.contains("Adding RR") || l.contains("Removing RR")),
        )
        .collect();
    ensure!(writes.is_empty(), "{what} wrote records:\n{}", writes.join("\n"));
    let quiet = match second.which {
        Which::ExternalDns => log.contains("All records are already up to date"),
        _ => log
            .lines()
            .any(|l| l.contains("sync complete") && l.contains("changes=0")),
    };
    ensure!(quiet, "{what} planned changes:\n{}", crate::proc::tail(&log, 20));
    eprintln!("  take-over clean: {what} ({} DNSRecords)", objects.len());
    Ok((zone, objects))
}

/// Both controllers with `--registry=crd` on the same Services, each way round, each on its own BIND and
/// DNSRecord namespace.
fn controllers(ctx: &mut Ctx) -> Result<()> {
    let ns = ctx.namespace("crd-registry")?;
    let records = create_services(ctx, &ns)?;
    let (theirs_ns, ours_ns) = (
        registry_namespace(ctx, "dnsrecords-theirs")?,
        registry_namespace(ctx, "dnsrecords-ours")?,
    );
    let run = |which: Which, registry: &str, server: &DnsServer| {
        let mut run = Run::new(which, &ns);
        run.provider = Some(crd_flags(registry, server.port));
        run
    };

    let theirs = dns::bind();
    let (external_dns, extdns) = (
        run(Which::ExternalDns, &theirs_ns, &theirs),
        run(Which::Extdns, &theirs_ns, &theirs),
    );
    let (zone_theirs, objects_theirs) = hand_over(ctx, (&external_dns, &extdns), &theirs, &theirs_ns, records)?;

    let ours = dns::bind();
    let (external_dns, extdns) = (
        run(Which::ExternalDns, &ours_ns, &ours),
        run(Which::Extdns, &ours_ns, &ours),
    );
    let (zone_ours, objects_ours) = hand_over(ctx, (&extdns, &external_dns), &ours, &ours_ns, records)?;

    let zones = differences(&zone_theirs, &zone_ours);
    ensure!(
        zones.is_empty(),
        "the zones differ (- external-dns, + extdns):\n{}",
        zones.join("\n")
    );
    let strip =
        |m: &DnsRecords| -> BTreeMap<String, Value> { m.iter().map(|(k, (_, v))| (k.clone(), v.clone())).collect() };
    let (theirs, ours) = (strip(&objects_theirs), strip(&objects_ours));
    if theirs != ours {
        bail!("the DNSRecords differ:\nexternal-dns {theirs:#?}\nextdns {ours:#?}");
    }
    eprintln!(
        "  identical zones ({} records) and DNSRecords ({})",
        zone_ours.len(),
        ours.len()
    );
    Ok(())
}

/// external-dns v0.23.0's chart, `registry: crd` and the legacy annotation prefix, run with the extdns image.
pub fn upstream_chart(ctx: &mut Ctx) -> Result<()> {
    install_crd(ctx)?;
    let ns = ctx.namespace("upstream-chart-crd")?;
    let server = dns::bind();
    let dir = tempfile::tempdir()?;
    let mut values = rfc2136_values(&server, "upstream-crd");
    values["registry"] = json!("crd");
    values["extraArgs"]["enable-legacy-annotation-prefix"] = json!(true);
    values["image"] = json!({ "repository": "ghcr.io/extdns/extdns", "tag": "v0.1.0" });
    let release = format!("external-dns-{ns}");
    values["fullnameOverride"] = json!(release);
    let chart = from_env("EXTDNS_TEST_EXTERNAL_DNS_CHART")?;
    apply_file(ctx, &helm_template(&chart, "e2e", &ns, &values, dir.path())?)?;
    apply_json(ctx, &tsig_secret(&ns, "tsig", "secret"))?;
    let (c, kubeconfig) = rendered_pod(
        ctx,
        &ns,
        &release,
        "external-dns",
        &["--registry=crd", "--txt-owner-id=chart-e2e"],
        dir.path(),
    )?;
    ensure!(
        c.args
            .iter()
            .any(|a| a.starts_with("--enable-legacy-annotation-prefix")),
        "the rendered arguments lack the legacy prefix: {:?}",
        c.args
    );
    // Annotated under the legacy prefix only, which the flag turns on.
    let name = format!("legacy.{ZONE}");
    let mut svc = o::lb_service(
        &ns,
        "legacy",
        json!({ "external-dns.alpha.kubernetes.io/hostname": name }),
        json!([{ "ip": "203.0.113.85" }]),
    );
    svc["metadata"]["labels"] = json!({ "e2e-install": "upstream-crd" });
    ctx.cp.kube.apply(&svc)?;
    let mut extdns = start_extdns(ctx, &c, &kubeconfig, &[], "upstream-chart-crd-extdns")?;
    answers(&server, &mut extdns, &name, "A", &["203.0.113.85"])?;
    // Neither --crd-registry-namespace nor a namespace in the kubeconfig or the pod: `default`, as
    // external-dns finds it outside a cluster.
    let record = object_name(&Endpoint::new(&name, RecordType::A, ["203.0.113.85"]));
    let api = records_api(&ctx.cp.kube, "default");
    let object = eventually(
        "the Service's DNSRecord Ready",
        Duration::from_secs(10),
        Duration::from_millis(100),
        || {
            let o = ctx.cp.kube.block_on(api.get_opt(&record))?;
            Ok(o.filter(|o| condition(o).1 == "Programmed"))
        },
    )?;
    ensure!(
        dnsrecord::owner(&object) == Some("chart-e2e"),
        "{:?}",
        object.metadata.labels
    );
    ensure!(
        object.data["spec"]["endpoint"]["labels"]
            == json!({"owner": "chart-e2e", "resource": format!("service/{ns}/legacy")}),
        "{}",
        object.data["spec"]
    );

    // external-dns v0.23.0 with the same arguments and token finds everything right.
    let before = (
        server.serial(ZONE),
        dns::zone(&server)?,
        object.metadata.resource_version.clone(),
    );
    let mut cmd = container_command(&ctx.cp.binaries().external_dns, &c, &c.args, &kubeconfig)?;
    let out = cmd.arg("--once").output().context("running external-dns --once")?;
    ensure!(
        out.status.success(),
        "external-dns --once with the chart's arguments failed with {}:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let after = ctx
        .cp
        .kube
        .block_on(api.get_opt(&record))?
        .context("the DNSRecord after external-dns")?;
    let after = (
        server.serial(ZONE),
        dns::zone(&server)?,
        after.metadata.resource_version,
    );
    ensure!(before == after, "external-dns changed extdns's zone or DNSRecord");
    eprintln!("  external-dns v0.23.0 with the same chart changes nothing");

    ctx.cp.kube.delete("v1", "Service", Some(&ns), "legacy")?;
    answers(&server, &mut extdns, &name, "A", &[])?;
    eventually(
        "the DNSRecord deleted",
        Duration::from_secs(10),
        Duration::from_millis(100),
        || Ok(ctx.cp.kube.block_on(api.get_opt(&record))?.is_none().then_some(())),
    )?;
    alive(&mut extdns)
}
