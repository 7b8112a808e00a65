//! Scenario 1: every source kind, created through the API server (status through the status subresource),
//! published by one `extdns --once`, read back from BIND.

use std::collections::BTreeMap;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::controllers::{OWNER, Run, Which};
use crate::dns::{self, DnsServer};
use crate::kube::Kube;
use crate::objects::{self as o, Parent, RouteKind, annotations};

use super::Ctx;

/// `(name, type)` → sorted answers, as `dig +short` prints them.
pub type Expected = BTreeMap<(String, &'static str), Vec<String>>;

pub const GATEWAY_ADDRESS: &str = "203.0.113.100";

/// Creates one object of every kind the sources read in `ns` (Nodes named after `ns`) and returns what
/// extdns must publish for them.
pub fn create_every_kind(kube: &Kube, ns: &str) -> Result<Expected> {
    let mut want = Expected::new();
    let mut expect = |name: &str, t: &'static str, answers: &[&str]| {
        let mut v: Vec<String> = answers.iter().map(|s| s.to_string()).collect();
        v.sort();
        want.insert((name.to_string(), t), v);
    };

    // LoadBalancer: an IP (with a TTL), a hostname, both address families.
    kube.apply(&lb_ip(ns, "203.0.113.10"))?;
    expect("lb-ip.example.org", "A", &["203.0.113.10"]);
    kube.apply(&o::lb_service(
        ns,
        "lb-host",
        annotations(&[("hostname", "lb-host.example.org")]),
        json!([{ "hostname": "lb-1.elb.example.net" }]),
    ))?;
    expect("lb-host.example.org", "CNAME", &["lb-1.elb.example.net."]);
    kube.apply(&o::dual_stack_lb_service(
        ns,
        "lb-dual",
        annotations(&[("hostname", "lb-dual.example.org")]),
        json!([{ "ip": "203.0.113.11" }, { "ip": "2001:db8::11" }]),
    ))?;
    expect("lb-dual.example.org", "A", &["203.0.113.11"]);
    expect("lb-dual.example.org", "AAAA", &["2001:db8::11"]);

    // ClusterIP with internal-hostname: the ClusterIP the API server allocated.
    let internal = kube.apply(&o::cluster_ip_service(
        ns,
        "internal",
        annotations(&[("internal-hostname", "internal.example.org")]),
    ))?;
    let cluster_ip = internal["spec"]["clusterIP"]
        .as_str()
        .context("the API server allocated no ClusterIP")?
        .to_string();
    expect("internal.example.org", "A", &[&cluster_ip]);
    // A plain ClusterIP Service publishes nothing.
    kube.apply(&o::cluster_ip_service(
        ns,
        "private",
        annotations(&[("hostname", "private.example.org")]),
    ))?;

    // Headless: Pods and EndpointSlices (written here, as the endpoint-slice controller would).
    let node1 = format!("{ns}-node-1");
    let node2 = format!("{ns}-node-2");
    create_db(kube, ns, [&node1, &node2])?;
    expect("db.example.org", "A", &["10.1.0.10", "10.1.0.11"]);
    expect("db-0.db.example.org", "A", &["10.1.0.10"]);
    expect("db-1.db.example.org", "A", &["10.1.0.11"]);

    // NodePort: the Nodes' external addresses, and an SRV record with the node port the API server chose.
    kube.apply(&o::node(
        &node1,
        &[("InternalIP", "10.2.0.1"), ("ExternalIP", "198.51.100.1")],
    ))?;
    kube.apply(&o::node(
        &node2,
        &[("InternalIP", "10.2.0.2"), ("ExternalIP", "198.51.100.2")],
    ))?;
    let np = kube.apply(&o::nodeport_service(
        ns,
        "nodeport",
        annotations(&[("hostname", "np.example.org")]),
    ))?;
    let node_port = np["spec"]["ports"][0]["nodePort"]
        .as_i64()
        .context("the API server allocated no nodePort")?;
    expect("np.example.org", "A", &["198.51.100.1", "198.51.100.2"]);
    expect(
        "_nodeport._tcp.np.example.org",
        "SRV",
        &[&format!("0 50 {node_port} np.example.org.")],
    );

    // ExternalName.
    kube.apply(&o::external_name_service(
        ns,
        "extname",
        "external.example.net",
        annotations(&[("hostname", "extname.example.org")]),
    ))?;
    expect("extname.example.org", "CNAME", &["external.example.net."]);

    // Gateway API: a Gateway with a listener per protocol, a ListenerSet, one route of each kind.
    kube.apply(&o::gateway_class())?;
    kube.apply(&o::gateway(ns, "gw", GATEWAY_ADDRESS))?;
    kube.apply(&o::listener_set(ns, "ls", "gw", "*.ls.example.org"))?;
    let none = json!({});
    for (kind, name, hostnames, section, dns_name) in [
        (
            RouteKind::Http,
            "web",
            Some(&["web.apps.example.org"][..]),
            "http",
            "web.apps.example.org",
        ),
        (
            RouteKind::Grpc,
            "grpc",
            Some(&["grpc.apps.example.org"][..]),
            "https",
            "grpc.apps.example.org",
        ),
        (
            RouteKind::Tls,
            "tls",
            Some(&["db.tls.example.org"][..]),
            "tls",
            "db.tls.example.org",
        ),
    ] {
        kube.apply(&o::route(
            kind,
            ns,
            name,
            none.clone(),
            hostnames,
            &Parent::gateway("gw", section),
            true,
        ))?;
        expect(dns_name, "A", &[GATEWAY_ADDRESS]);
    }
    for (kind, name) in [(RouteKind::Tcp, "tcp"), (RouteKind::Udp, "udp")] {
        let host = format!("{name}.example.org");
        kube.apply(&o::annotated_route(kind, ns, name, &host, name))?;
        expect(&host, "A", &[GATEWAY_ADDRESS]);
    }
    kube.apply(&o::route(
        RouteKind::Http,
        ns,
        "via-ls",
        none.clone(),
        Some(&["app.ls.example.org"]),
        &Parent::listener_set("ls"),
        true,
    ))?;
    expect("app.ls.example.org", "A", &[GATEWAY_ADDRESS]);
    // Not accepted by its Gateway: nothing.
    kube.apply(&o::route(
        RouteKind::Http,
        ns,
        "rejected",
        none,
        Some(&["rejected.apps.example.org"]),
        &Parent::gateway("gw", "http"),
        false,
    ))?;

    // Ingresses: rule and TLS hosts at the load balancer's IP; the hostname annotation with a TTL at the load
    // balancer's hostname; the target annotation over the status; `ingress-hostname-source: annotation-only`.
    kube.apply(&o::ingress_tls(
        o::ingress_at(ns, "ing-rules", "ing-a.example.org", "203.0.113.30"),
        &["ing-tls.example.org"],
    ))?;
    expect("ing-a.example.org", "A", &["203.0.113.30"]);
    expect("ing-tls.example.org", "A", &["203.0.113.30"]);
    kube.apply(&o::ingress(
        ns,
        "ing-annotated",
        annotations(&[("hostname", "ing-ann.example.org"), ("ttl", "90")]),
        &[],
        json!([{ "hostname": "lb-ing.elb.example.net" }]),
    ))?;
    expect("ing-ann.example.org", "CNAME", &["lb-ing.elb.example.net."]);
    kube.apply(&o::ingress(
        ns,
        "ing-target",
        annotations(&[("target", "203.0.113.31")]),
        &["ing-target.example.org"],
        json!([{ "ip": "203.0.113.99" }]),
    ))?;
    expect("ing-target.example.org", "A", &["203.0.113.31"]);
    kube.apply(&o::ingress(
        ns,
        "ing-only",
        annotations(&[
            ("hostname", "ing-only.example.org"),
            ("ingress-hostname-source", "annotation-only"),
        ]),
        &["ing-skipped.example.org"],
        json!([{ "ip": "203.0.113.32" }]),
    ))?;
    expect("ing-only.example.org", "A", &["203.0.113.32"]);
    Ok(want)
}

/// Service `lb-ip`: lb-ip.example.org, with a TTL of 120 s, at the load balancer address `ip`.
pub fn lb_ip(ns: &str, ip: &str) -> Value {
    o::lb_service(
        ns,
        "lb-ip",
        annotations(&[("hostname", "lb-ip.example.org"), ("ttl", "120")]),
        json!([{ "ip": ip }]),
    )
}

/// Headless Service `db` at `db.example.org`: Pods `db-0` (10.1.0.10) and `db-1` (10.1.0.11) on `nodes`, in
/// EndpointSlice `db-a`.
pub fn create_db(kube: &Kube, ns: &str, nodes: [&str; 2]) -> Result<()> {
    kube.apply(&o::headless_at(ns, "db", "db.example.org"))?;
    kube.apply(&o::pod(ns, "db-0", "db", "10.1.0.10", nodes[0]))?;
    kube.apply(&o::pod(ns, "db-1", "db", "10.1.0.11", nodes[1]))?;
    kube.apply(&o::endpoint_slice(
        ns,
        "db-a",
        "db",
        &[("10.1.0.10", "db-0"), ("10.1.0.11", "db-1")],
    ))?;
    Ok(())
}

/// Names that must not be published.
pub const ABSENT: [(&str, &str); 3] = [
    ("private.example.org", "A"),
    ("rejected.apps.example.org", "A"),
    ("ing-skipped.example.org", "A"),
];

/// Every expected answer is there, the absent names are absent, and every record has its ownership TXT.
pub fn check_published(server: &DnsServer, want: &Expected) -> Result<()> {
    let mut wrong = Vec::new();
    for ((name, t), answers) in want {
        let got = dns::answers(server, name, t);
        if &got != answers {
            wrong.push(format!("{name} {t}: want {answers:?}, got {got:?}"));
        }
    }
    // Absent from the zone itself (a query could be answered by a wildcard record).
    let zone = dns::zone(server)?;
    for (name, t) in ABSENT {
        let got: Vec<_> = dns::records_of(&zone, name)
            .into_iter()
            .filter(|r| r.rtype == t)
            .collect();
        if !got.is_empty() {
            wrong.push(format!("{name} {t}: want nothing, got {got:?}"));
        }
    }
    if !wrong.is_empty() {
        bail!("{}", wrong.join("\n"));
    }
    // Each record has exactly one ownership record, and each ownership record a record.
    let owned = dns::owned_txt(&zone, OWNER);
    for (name, t) in want.keys() {
        let txt = format!("{}-{name}", t.to_ascii_lowercase());
        let n = owned.iter().filter(|r| r.name == format!("{txt}.")).count();
        if n != 1 {
            wrong.push(format!("{name} {t}: {n} ownership records {txt}"));
        }
    }
    for r in &owned {
        let claimed = r.name.split_once('-').and_then(|(t, name)| {
            let t = t.to_ascii_uppercase();
            zone.iter().find(|x| x.name == name && x.rtype == t)
        });
        if claimed.is_none() {
            wrong.push(format!("ownership record without its record: {r}"));
        }
    }
    eprintln!(
        "  {} names and types checked, {} ownership records, zone of {} records",
        want.len(),
        owned.len(),
        zone.len()
    );
    if !wrong.is_empty() {
        bail!("{}", wrong.join("\n"));
    }
    Ok(())
}

pub fn run(ctx: &mut Ctx) -> Result<()> {
    let ns = ctx.namespace("sources")?;
    let server = dns::bind();
    let want = create_every_kind(&ctx.cp.kube, &ns)?;
    let run = Run::new(Which::Extdns, &ns);
    run.once(&ctx.cp, &server)?;
    check_published(&server, &want)?;
    assert_ttl(&server, "lb-ip.example.org", "A", 120)?;
    // A second start finds nothing to do.
    let serial = server.serial(dns::ZONE);
    let before = dns::zone(&server)?;
    let second = run.once(&ctx.cp, &server)?;
    if server.serial(dns::ZONE) != serial {
        let changed = dns::differences(&before, &dns::zone(&server)?);
        bail!(
            "a second extdns --once changed the zone (- first run, + second run):\n{}\nits log:\n{}",
            changed.join("\n"),
            String::from_utf8_lossy(&second.stderr) + String::from_utf8_lossy(&second.stdout)
        );
    }
    Ok(())
}

pub fn assert_ttl(server: &DnsServer, name: &str, t: &str, ttl: u32) -> Result<()> {
    match server.ttl(name, t) {
        Some(got) if got == ttl => Ok(()),
        got => bail!("{name} {t}: want TTL {ttl}, got {got:?}"),
    }
}
