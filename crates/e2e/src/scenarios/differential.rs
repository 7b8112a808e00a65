//! The differential: external-dns v0.23.0 and extdns, same objects, same flags, same owner id, each against
//! its own BIND. The zones are compared by AXFR (TTLs and ownership records included); then each takes over
//! the other's zone and must change nothing. A difference fails the test unless it is one of extdns's
//! documented choices (docs/migration.md), listed in [`dns::DOCUMENTED`].

use std::time::Duration;

use anyhow::{Result, bail};
use serde_json::{Value, json};

use crate::controllers::{Run, Which};
use crate::dns::{self, DnsServer, Kind, Record, Zone, differences};
use crate::objects::{self as o, Parent, RouteKind, annotations};
use crate::proc::eventually;

use super::install::{apply_file, apply_json, from_env};
use super::{Ctx, sources};

/// How many times external-dns may need to run before its zone settles (see [`settle_external_dns`]).
/// Go's iteration order over a two-entry map is far from a coin toss: one order comes up about once in
/// eight, so a tie may take dozens of runs to land on the endpoint with the TTL. 12 runs failed in CI about
/// one time in five; 80 leave about one failure in 20,000 and cost under 15 s when needed.
const EXTERNAL_DNS_RUNS: usize = 80;

pub fn run(ctx: &mut Ctx) -> Result<()> {
    let ns = ctx.namespace("differential")?;
    compare(ctx, &ns)
}

/// The upgrade users of external-dns v0.22.0 take: v0.22.0 publishes every kind, then extdns finds its zone
/// right and changes nothing.
pub fn takeover_previous(ctx: &mut Ctx) -> Result<()> {
    let ns = ctx.namespace("takeover-previous")?;
    let want = create_objects(ctx, &ns)?;
    let theirs = dns::bind();
    let previous = Run::new(Which::ExternalDnsPrevious, &ns);
    settle_external_dns(ctx, &previous, &theirs, settled_on_ttls)?;
    sources::check_published(&theirs, &want)?;
    takeover(
        ctx,
        &Run::new(Which::Extdns, &ns),
        &theirs,
        "extdns on external-dns v0.22.0's zone",
    )
}

/// The tied endpoints of [`create_objects`] have settled on the ones with a TTL.
fn settled_on_ttls(zone: &DnsServer) -> bool {
    zone.ttl("*.apps.example.org", "A") == Some(60) && zone.ttl("ing-tie.example.org", "A") == Some(75)
}

fn compare(ctx: &mut Ctx, ns: &str) -> Result<()> {
    let want = create_objects(ctx, ns)?;
    let theirs = dns::bind();
    let ours = dns::bind();
    let external_dns = Run::new(Which::ExternalDns, ns);
    let extdns = Run::new(Which::Extdns, ns);
    settle_external_dns(ctx, &external_dns, &theirs, settled_on_ttls)?;
    extdns.once(&ctx.cp, &ours)?;
    sources::check_published(&ours, &want)?;
    identical_then_takeover(ctx, (&external_dns, &theirs), (&extdns, &ours))
}

/// The zones external-dns (`theirs`) and extdns (`ours`) published are identical but for the documented
/// differences ([`dns::DOCUMENTED`]), and each controller then takes over the other's zone without a change.
pub(super) fn identical_then_takeover(
    ctx: &Ctx,
    (external_dns, theirs): (&Run<'_>, &DnsServer),
    (extdns, ours): (&Run<'_>, &DnsServer),
) -> Result<()> {
    same_zones(theirs, ours)?;
    // Take-over, both ways: each controller finds the other's zone already right.
    takeover(ctx, extdns, theirs, "extdns on external-dns's zone")?;
    takeover(ctx, external_dns, ours, "external-dns on extdns's zone")?;
    Ok(())
}

/// external-dns's zone on `theirs` and extdns's on `ours` hold the same records, but for extdns's documented
/// choices ([`dns::DOCUMENTED`]); returns extdns's.
pub(super) fn same_zones(theirs: &DnsServer, ours: &DnsServer) -> Result<Vec<Record>> {
    let zone_theirs = dns::zone(theirs)?;
    let zone_ours = dns::zone(ours)?;
    let undocumented = differences(&zone_theirs, &zone_ours);
    if !undocumented.is_empty() {
        bail!(
            "the zones differ (- external-dns, + extdns):\n{}",
            undocumented.join("\n")
        );
    }
    eprintln!("  identical zones: {} records", zone_ours.len());
    Ok(zone_ours)
}

/// Every kind of object, plus two pairs of endpoints external-dns resolves by Go map order (see
/// [`settle_external_dns`]); returns what must be published.
fn create_objects(ctx: &Ctx, ns: &str) -> Result<sources::Expected> {
    let kube = &ctx.cp.kube;
    let want = sources::create_every_kind(kube, ns)?;
    // Two routes publishing the same name and type: one names `*.apps.example.org` itself, the other has
    // a TTL and inherits the listener's `*.apps.example.org`. Then a route without spec hostnames that names
    // itself by annotation: external-dns publishes its name and, as the route names no hostname of its own,
    // the listener's (`*.ls.example.org`) as well; an empty hostname annotation on a route with spec
    // hostnames adds nothing (v0.23, empty values skipped).
    let (gateway, listener_set) = (Parent::gateway("gw", "http"), Parent::listener_set("ls"));
    let routes: [(&str, Value, Option<&[&str]>, &Parent<'_>); 4] = [
        ("wild", json!({}), Some(&["*.apps.example.org"]), &gateway),
        ("wild-ttl", annotations(&[("ttl", "60")]), None, &gateway),
        (
            "ls-annotated",
            annotations(&[("hostname", "named.ls.example.org")]),
            None,
            &listener_set,
        ),
        (
            "empty-annotation",
            annotations(&[("hostname", "")]),
            Some(&["empty-ann.ls.example.org"]),
            &listener_set,
        ),
    ];
    for (name, annotations, hostnames, parent) in routes {
        kube.apply(&o::route(
            RouteKind::Http,
            ns,
            name,
            annotations,
            hostnames,
            parent,
            true,
        ))?;
    }
    // Two Ingresses publishing one name with the same target, one with a TTL: the tie-break
    // (extdns_source::tie). external-dns picks at random each sync and settles on the one with the TTL.
    for (name, ann) in [("tie-a", json!({})), ("tie-b", annotations(&[("ttl", "75")]))] {
        kube.apply(&o::ingress(
            ns,
            name,
            ann,
            &["ing-tie.example.org"],
            json!([{ "ip": "203.0.113.40" }]),
        ))?;
    }
    Ok(want)
}

/// external-dns resolves two endpoints that differ only in TTL by Go map order, i.e. at random in each
/// sync, and a TTL only triggers an update when it is set; so its zone settles on the endpoint with the TTL
/// after some syncs. Runs it until two consecutive runs leave the zone as it is and `settled` holds for it
/// (at most [`EXTERNAL_DNS_RUNS`] times).
pub(super) fn settle_external_dns(
    ctx: &Ctx,
    run: &Run<'_>,
    server: &DnsServer,
    settled: impl Fn(&DnsServer) -> bool,
) -> Result<()> {
    let mut serial = None;
    for i in 1..=EXTERNAL_DNS_RUNS {
        run.once(&ctx.cp, server)?;
        let now = server.serial(dns::ZONE);
        if serial == Some(now) && settled(server) {
            eprintln!("  external-dns settled after {i} runs");
            return Ok(());
        }
        serial = Some(now);
    }
    bail!("external-dns's zone did not settle in {EXTERNAL_DNS_RUNS} runs")
}

/// `run` once on the zone `server` holds: it must change nothing (the serial and every record as they were).
pub(super) fn takeover(ctx: &Ctx, run: &Run<'_>, server: &DnsServer, what: &str) -> Result<()> {
    let before = dns::zone(server)?;
    let serial = server.serial(dns::ZONE);
    let out = run.once(&ctx.cp, server)?;
    let after = dns::zone(server)?;
    if server.serial(dns::ZONE) != serial || before != after {
        let changed = differences(&before, &after);
        bail!(
            "{what}: the zone changed:\n{}\n{}",
            changed.join("\n"),
            crate::proc::tail(&String::from_utf8_lossy(&out.stderr), 20)
        );
    }
    eprintln!("  take-over clean: {what}");
    Ok(())
}

/// The reverse zone the DNSEndpoint differential's PTR records go to, beside [`dns::ZONE`].
const REVERSE: &str = "2.0.192.in-addr.arpa";

/// The DNSEndpoint source against external-dns v0.23.0: external-dns's CRD (from its chart), entries of
/// every record type with every field RFC2136 stores (TTL, provider-specific properties, labels, which the
/// TXT registry writes into the ownership records, empty targets), both controllers with `--source=crd`
/// only and every type managed, each on its own BIND with [`dns::ZONE`] and a reverse zone. Identical
/// zones, and take-over both ways changes nothing. No set identifier: RFC2136 stores none, so external-dns
/// creates a record with one on a run and deletes it on the next, and no zone of its is stable to compare
/// (the source's tests check the field is read). No space in TXT data: external-dns's RFC2136 provider
/// writes a target as zone-file text, so `hello world` becomes two strings (docs/migration.md).
pub fn crd(ctx: &mut Ctx) -> Result<()> {
    let ns = ctx.namespace("differential-crd")?;
    let chart = from_env("EXTDNS_TEST_EXTERNAL_DNS_CHART")?;
    apply_file(ctx, &chart.join("crds/dnsendpoints.externaldns.k8s.io.yaml"))?;
    apply_once_served(ctx, &crd_objects(&ns, "externaldns.k8s.io/v1alpha1"))?;
    let external_dns = crd_run(Which::ExternalDns, &ns);
    let extdns = crd_run(Which::Extdns, &ns);
    compare_crd(ctx, (&external_dns, "external-dns v0.23.0"), &extdns)
}

/// DNSEndpoints in `externaldns.nginx.org/v1` (external-dns issue #6414), read by extdns with
/// `--crd-source-apiversion`/`--crd-source-kind`, against external-dns v0.23.0 reading the same entries in
/// its own group. v0.22 ignores those two flags, so it cannot read another group itself; what extdns must
/// show is that the group changes where the objects are read and nothing else, and the release it replaces
/// is the reference for everything else. (v0.20, the last release that honours the flags, served as the
/// reference before; it also predates v0.21's trailing-dot rules, so it was a weaker reference for the
/// records, and building it cost CI nine minutes.) The deploy/ ServiceAccount is granted the group as
/// deploy/base's comment tells users to.
pub fn crd_group(ctx: &mut Ctx) -> Result<()> {
    const API_VERSION: &str = "externaldns.nginx.org/v1";
    let ns = ctx.namespace("differential-crd-group")?;
    let chart = from_env("EXTDNS_TEST_EXTERNAL_DNS_CHART")?;
    apply_file(ctx, &chart.join("crds/dnsendpoints.externaldns.k8s.io.yaml"))?;
    apply_json(ctx, &super::crd::nginx_crd())?;
    apply_json(
        ctx,
        &json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "extdns-nginx-dnsendpoints"},
            "rules": [
                {"apiGroups": ["externaldns.nginx.org"], "resources": ["dnsendpoints"], "verbs": ["get", "list", "watch"]},
                {"apiGroups": ["externaldns.nginx.org"], "resources": ["dnsendpoints/status"], "verbs": ["update"]}
            ]
        }),
    )?;
    apply_json(
        ctx,
        &json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "extdns-nginx-dnsendpoints"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "extdns-nginx-dnsendpoints"},
            "subjects": [{"kind": "ServiceAccount", "name": "extdns", "namespace": "extdns"}]
        }),
    )?;
    // The same names and entries in both groups: each controller sees only its own group's copy.
    apply_once_served(ctx, &crd_objects(&ns, "externaldns.k8s.io/v1alpha1"))?;
    apply_once_served(ctx, &crd_objects(&ns, API_VERSION))?;
    let external_dns = crd_run(Which::ExternalDns, &ns);
    let extdns = crd_run(Which::Extdns, &ns)
        .flag(format!("--crd-source-apiversion={API_VERSION}"))
        .flag("--crd-source-kind=DNSEndpoint");
    compare_crd(ctx, (&external_dns, "external-dns v0.23.0 on its own group"), &extdns)?;
    // Identical copies cannot show which group extdns read: with the copies in external-dns's group gone,
    // extdns must still publish every entry.
    let mut delete = ctx.cp.kubectl();
    delete.args(["delete", "dnsendpoints.externaldns.k8s.io", "--all", "--namespace", &ns]);
    crate::proc::output(delete)?;
    let fresh = DnsServer::start(Kind::Bind, &[Zone::new(dns::ZONE), Zone::new(REVERSE)]);
    extdns.once(&ctx.cp, &fresh)?;
    let zone = both_zones(&fresh)?;
    every_type_published(&zone)?;
    eprintln!("  read from {API_VERSION} alone: {} records", zone.len());
    Ok(())
}

/// Applies `objects`, the first as soon as the CRD just installed serves it.
pub(super) fn apply_once_served(ctx: &Ctx, objects: &[serde_json::Value]) -> Result<()> {
    eventually(
        "the CRD just installed serves",
        Duration::from_secs(30),
        Duration::from_millis(200),
        || Ok(objects.first().and_then(|o| apply_json(ctx, o).ok())),
    )?;
    for o in objects.iter().skip(1) {
        apply_json(ctx, o)?;
    }
    Ok(())
}

/// `--source=crd` alone, every record type managed, the reverse zone beside the forward one.
pub(super) fn crd_run<'a>(which: Which, ns: &'a str) -> Run<'a> {
    let mut run = Run::new(which, ns)
        .flag("--source=crd")
        .flag(format!("--rfc2136-zone={REVERSE}"))
        .flag(format!("--domain-filter={REVERSE}"));
    for t in ["TXT", "MX", "NAPTR", "PTR", "NS"] {
        run = run.flag(format!("--managed-record-types={t}"));
    }
    run.only_sources = true;
    run
}

/// Both controllers on the objects already created: `reference` twice (its zone must be stable), extdns
/// once; zones equal (both zones, by AXFR), every record type present, take-over clean both ways.
pub(super) fn compare_crd(ctx: &Ctx, reference: (&Run<'_>, &str), extdns: &Run<'_>) -> Result<()> {
    let zones = [Zone::new(dns::ZONE), Zone::new(REVERSE)];
    compare_zones(ctx, reference, extdns, &zones, every_type_published)
}

/// external-dns v0.23.0 and extdns, each configured by `run`, on the objects already created, the test zone
/// alone: [`compare_zones`], the differential of a source whose objects its scenario creates.
pub(super) fn against_v023<'a>(
    ctx: &Ctx,
    run: impl Fn(Which) -> Run<'a>,
    check: impl Fn(&[Record]) -> Result<()>,
) -> Result<()> {
    compare_zones(
        ctx,
        (&run(Which::ExternalDns), "external-dns v0.23.0"),
        &run(Which::Extdns),
        &[Zone::new(dns::ZONE)],
        check,
    )
}

/// Both controllers on the objects already created, each against its own BIND serving `zones`: `reference`
/// twice (its zones must be stable), extdns once; the zones equal by AXFR (documented differences aside),
/// `check` passing on extdns's, and take-over clean both ways. The differential of every source whose
/// objects a scenario creates itself.
pub(super) fn compare_zones(
    ctx: &Ctx,
    (reference, name): (&Run<'_>, &str),
    extdns: &Run<'_>,
    zones: &[Zone],
    check: impl Fn(&[Record]) -> Result<()>,
) -> Result<()> {
    let names: Vec<&str> = zones.iter().map(|z| z.name.as_str()).collect();
    let theirs = DnsServer::start(Kind::Bind, zones);
    let ours = DnsServer::start(Kind::Bind, zones);
    reference.once(&ctx.cp, &theirs)?;
    let first = all_zones(&theirs, &names)?;
    reference.once(&ctx.cp, &theirs)?;
    let second = all_zones(&theirs, &names)?;
    if second != first {
        bail!(
            "{name}'s zone changed on its second run:\n{}",
            differences(&first, &second).join("\n")
        );
    }
    extdns.once(&ctx.cp, &ours)?;
    let zone_theirs = all_zones(&theirs, &names)?;
    let zone_ours = all_zones(&ours, &names)?;
    let undocumented = differences(&zone_theirs, &zone_ours);
    if !undocumented.is_empty() {
        bail!("the zones differ (- {name}, + extdns):\n{}", undocumented.join("\n"));
    }
    check(&zone_ours)?;
    eprintln!("  identical zones: {} records", zone_ours.len());
    for (run, server, what) in [
        (extdns, &theirs, format!("extdns on {name}'s zones")),
        (reference, &ours, format!("{name} on extdns's zones")),
    ] {
        let before = all_zones(server, &names)?;
        let out = run.once(&ctx.cp, server)?;
        let after = all_zones(server, &names)?;
        if before != after {
            bail!(
                "{what}: the zones changed:\n{}\n{}",
                differences(&before, &after).join("\n"),
                crate::proc::tail(&String::from_utf8_lossy(&out.stderr), 20)
            );
        }
        eprintln!("  take-over clean: {what}");
    }
    Ok(())
}

/// Every record type [`crd_objects`] has entries of is in `zone` (ownership records aside).
fn every_type_published(zone: &[Record]) -> Result<()> {
    for t in ["A", "AAAA", "CNAME", "TXT", "SRV", "MX", "NAPTR", "PTR", "NS"] {
        if !zone.iter().any(|r| r.rtype == t && !is_ownership(r)) {
            bail!("no {t} record published: the comparison would prove nothing for it");
        }
    }
    Ok(())
}

pub(super) fn is_ownership(r: &Record) -> bool {
    r.rtype == "TXT" && r.rdata.contains("heritage=external-dns")
}

fn both_zones(server: &DnsServer) -> Result<Vec<Record>> {
    all_zones(server, &[dns::ZONE, REVERSE])
}

/// Every record of `zones` on `server`, by AXFR, in the order given.
fn all_zones(server: &DnsServer, zones: &[&str]) -> Result<Vec<Record>> {
    let mut all = Vec::new();
    for zone in zones {
        all.extend(server.axfr(zone)?);
    }
    Ok(all)
}

/// DNSEndpoints of `api_version` with entries of every record type and field, trailing dots where v0.22
/// allows them (CNAME, MX) or requires them (SRV).
pub(super) fn crd_objects(ns: &str, api_version: &str) -> Vec<serde_json::Value> {
    let object = |name: &str, entries: serde_json::Value| {
        json!({
            "apiVersion": api_version, "kind": "DNSEndpoint",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"endpoints": entries}
        })
    };
    let srv = json!({"dnsName": "_sip._tcp.crd.example.org", "recordType": "SRV", "targets": ["10 5 5060 a.crd.example.org."]});
    vec![
        object("srv", json!([srv])),
        object(
            "records",
            json!([
                {"dnsName": "a.crd.example.org", "recordType": "A", "targets": ["192.0.2.10", "192.0.2.11"], "recordTTL": 300},
                {"dnsName": "a.crd.example.org", "recordType": "AAAA", "targets": ["2001:db8::10"]},
                {"dnsName": "cname.crd.example.org", "recordType": "CNAME", "targets": ["a.crd.example.org"], "recordTTL": 60},
                {"dnsName": "txt.crd.example.org", "recordType": "TXT", "targets": ["hello-world", "v=spf1"]},
                {"dnsName": "mx.crd.example.org", "recordType": "MX", "targets": ["10 mail.example.net", "20 mail2.example.net."]},
                {"dnsName": "naptr.crd.example.org", "recordType": "NAPTR",
                 "targets": ["100 10 \"S\" \"SIP+D2U\" \"!^.*$!sip:info@example.org!\" _sip._udp.example.org."]},
                {"dnsName": "sub.crd.example.org", "recordType": "NS", "targets": ["ns1.example.net", "ns2.example.net"]},
                {"dnsName": "10.2.0.192.in-addr.arpa", "recordType": "PTR", "targets": ["a.crd.example.org"]}
            ]),
        ),
        object(
            "fields",
            json!([
                {"dnsName": "labelled.crd.example.org", "recordType": "A", "targets": ["192.0.2.21"],
                 "labels": {"team": "blue"}},
                {"dnsName": "specific.crd.example.org", "recordType": "CNAME", "targets": ["a.crd.example.org."],
                 "providerSpecific": [{"name": "example/weight", "value": "10"}]},
                {"dnsName": "defaults.crd.example.org", "recordType": "A", "targets": []}
            ]),
        ),
    ]
}
