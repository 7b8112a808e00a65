//! The provider against moto's Route53: zone selection, paging, and create / update / delete of every
//! record kind extdns writes, alias and routing-policy records included.

use extdns_endpoint::{Change, DomainFilter, Endpoint, ProviderSpecific, RecordType, Ttl};
use extdns_provider::{Provider, apply_changes};
use extdns_provider_aws::{AwsConfig, AwsProvider, Credentials, ZoneType};
use extdns_test_support::moto::Moto;
use extdns_test_support::require;

fn config(url: &str) -> AwsConfig {
    let mut c = AwsConfig::new(url.parse().expect("moto's URL"), Credentials::new("test", "test"));
    c.batch.interval = std::time::Duration::ZERO;
    c.api.requests = AwsConfig::account_rate(100.0);
    c
}

fn provider(c: AwsConfig) -> AwsProvider {
    AwsProvider::new(c).expect("a valid configuration")
}

async fn zone_names(p: &AwsProvider) -> Vec<String> {
    let mut names: Vec<String> = p
        .zones()
        .await
        .expect("zones")
        .iter()
        .map(|z| format!("{}{}", z.name, if z.private { " (private)" } else { "" }))
        .collect();
    names.sort();
    names
}

fn ps(pairs: &[(&str, &str)]) -> ProviderSpecific {
    let mut p = ProviderSpecific::default();
    for (k, v) in pairs {
        p.set(*k, *v);
    }
    p
}

async fn records(p: &AwsProvider) -> Vec<Endpoint> {
    let mut eps = p.records().await.expect("records").endpoints;
    eps.retain(|e| e.record_type != RecordType::Ns);
    eps.sort_by(|a, b| {
        (&a.dns_name, a.record_type.as_str(), &a.set_identifier).cmp(&(
            &b.dns_name,
            b.record_type.as_str(),
            &b.set_identifier,
        ))
    });
    eps
}

/// moto with one public zone, example.com, and a provider against it.
async fn example_com() -> (Moto, AwsProvider) {
    let moto = Moto::start();
    moto.zone("example.com", false, &[]).await;
    let p = provider(config(&moto.url));
    (moto, p)
}

/// What the provider makes of the desired CNAME `name` → `target`.
async fn adjusted(p: &AwsProvider, name: &str, target: &str) -> Vec<Endpoint> {
    let cname = Endpoint::new(name, RecordType::Cname, [target]);
    p.adjust_endpoints(vec![cname]).await.expect("adjusted")
}

fn find<'a>(eps: &'a [Endpoint], name: &str, kind: RecordType) -> Option<&'a Endpoint> {
    eps.iter().find(|e| e.dns_name == name && e.record_type == kind)
}

#[tokio::test]
async fn zones_are_selected_by_domain_type_and_tags() {
    require!(Moto);
    let moto = Moto::start();
    moto.zone("example.com", false, &[("team", "a")]).await;
    moto.zone("example.org", false, &[]).await;
    moto.zone("private.example.com", true, &[]).await;
    moto.zone("other.net", false, &[("team", "a"), ("env", "prod")]).await;

    let all = provider(config(&moto.url));
    assert_eq!(
        zone_names(&all).await,
        [
            "example.com",
            "example.org",
            "other.net",
            "private.example.com (private)"
        ]
    );

    let mut c = config(&moto.url);
    c.zones.domain_filter = DomainFilter::new(&["example.com"], &[]);
    assert_eq!(
        zone_names(&provider(c)).await,
        ["example.com", "private.example.com (private)"]
    );

    let mut c = config(&moto.url);
    c.zone_type = Some(ZoneType::Private);
    assert_eq!(zone_names(&provider(c)).await, ["private.example.com (private)"]);
    let mut c = config(&moto.url);
    c.zone_type = Some(ZoneType::Public);
    assert_eq!(zone_names(&provider(c)).await.len(), 3);

    let mut c = config(&moto.url);
    c.zone_tags = vec![("team".into(), "a".into())];
    assert_eq!(zone_names(&provider(c)).await, ["example.com", "other.net"]);
    let mut c = config(&moto.url);
    c.zone_tags = vec![("team".into(), "a".into()), ("env".into(), "prod".into())];
    assert_eq!(zone_names(&provider(c)).await, ["other.net"]);

    // A filter below a zone selects the zone only when parents may match.
    let mut c = config(&moto.url);
    c.zones.domain_filter = DomainFilter::new(&["app.example.org"], &[]);
    assert!(zone_names(&provider(c.clone())).await.is_empty());
    c.zone_match_parent = true;
    assert_eq!(zone_names(&provider(c)).await, ["example.org"]);
}

#[tokio::test]
async fn hundreds_of_records_are_written_and_read_back_across_pages() {
    require!(Moto);
    let (_moto, p) = example_com().await;
    let changes: Vec<Change> = (0..650)
        .map(|i| {
            Change::Create(
                Endpoint::new(
                    &format!("r{i:03}.example.com"),
                    RecordType::A,
                    [format!("10.0.{}.{}", i / 250, i % 250)],
                )
                .with_ttl(Ttl(60)),
            )
        })
        .collect();
    apply_changes(&p, &changes).await.expect("the creates land");
    let eps = records(&p).await;
    assert_eq!(eps.iter().filter(|e| e.record_type == RecordType::A).count(), 650);
    let last = find(&eps, "r649.example.com", RecordType::A).expect("the last record");
    assert_eq!(last.targets[0].as_str(), "10.0.2.149");
    assert_eq!(last.record_ttl, Ttl(60));
}

#[tokio::test]
async fn records_of_every_kind_are_created_updated_and_deleted() {
    require!(Moto);
    let (_moto, p) = example_com().await;

    let a = Endpoint::new("a.example.com", RecordType::A, ["1.2.3.4", "1.2.3.5"]).with_ttl(Ttl(60));
    let aaaa = Endpoint::new("a.example.com", RecordType::Aaaa, ["2001:db8::1"]);
    let cname = adjusted(&p, "c.example.com", "target.example.org").await.remove(0);
    let txt = Endpoint::new(
        "a-a.example.com",
        RecordType::Txt,
        ["\"heritage=external-dns,external-dns/owner=x\""],
    );
    let srv = Endpoint::new("_sip._tcp.example.com", RecordType::Srv, ["0 50 5060 sip.example.com."]);
    let mx = Endpoint::new("example.com", RecordType::Mx, ["10 mail.example.com"]);
    let weighted: Vec<Endpoint> = [("blue", "10", "1.1.1.1"), ("green", "90", "2.2.2.2")]
        .iter()
        .map(|(id, w, ip)| {
            Endpoint::new("w.example.com", RecordType::A, [*ip])
                .with_set_identifier(*id)
                .with_provider_specific(ps(&[("aws/weight", w)]))
        })
        .collect();
    let aliases = adjusted(&p, "lb.example.com", "my-lb-1.us-east-1.elb.amazonaws.com").await;
    assert_eq!(
        aliases.len(),
        2,
        "a CNAME to a load balancer becomes A and AAAA aliases"
    );

    let mut creates: Vec<Change> = [a.clone(), aaaa, cname, txt.clone(), srv, mx]
        .into_iter()
        .chain(weighted.clone())
        .chain(aliases.clone())
        .map(Change::Create)
        .collect();
    creates.reverse();
    apply_changes(&p, &creates).await.expect("creates");
    let eps = records(&p).await;
    let got_a = find(&eps, "a.example.com", RecordType::A).expect("A");
    assert!(got_a.targets.same(&a.targets) && got_a.record_ttl == Ttl(60));
    assert_eq!(
        find(&eps, "a.example.com", RecordType::Aaaa).expect("AAAA").record_ttl,
        Ttl(300)
    );
    let got_cname = find(&eps, "c.example.com", RecordType::Cname).expect("CNAME");
    assert_eq!(got_cname.targets[0].as_str(), "target.example.org");
    assert_eq!(got_cname.provider_specific.get("alias"), Some("false"));
    assert_eq!(
        find(&eps, "a-a.example.com", RecordType::Txt).expect("TXT").targets[0].as_str(),
        "\"heritage=external-dns,external-dns/owner=x\""
    );
    assert_eq!(
        find(&eps, "_sip._tcp.example.com", RecordType::Srv)
            .expect("SRV")
            .targets[0]
            .as_str(),
        "0 50 5060 sip.example.com."
    );
    assert_eq!(
        find(&eps, "example.com", RecordType::Mx).expect("MX").targets[0].as_str(),
        "10 mail.example.com"
    );
    for kind in [RecordType::A, RecordType::Aaaa] {
        let alias = find(&eps, "lb.example.com", kind.clone()).expect("alias");
        assert_eq!(alias.targets[0].as_str(), "my-lb-1.us-east-1.elb.amazonaws.com");
        assert_eq!(alias.provider_specific.get("alias"), Some("true"));
        assert_eq!(alias.provider_specific.get("aws/evaluate-target-health"), Some("true"));
        assert_eq!(alias.record_ttl, Ttl(300));
    }
    let ws: Vec<_> = eps.iter().filter(|e| e.dns_name == "w.example.com").collect();
    assert_eq!(ws.len(), 2);
    assert_eq!(
        ws.iter()
            .map(|e| (e.set_identifier.as_str(), e.provider_specific.get("aws/weight")))
            .collect::<Vec<_>>(),
        [("blue", Some("10")), ("green", Some("90"))]
    );

    // What was read is what a second plan would compare with: the desired endpoints match it.
    let mut new_a = got_a.clone();
    new_a.targets = extdns_endpoint::Targets::new(["9.9.9.9"]);
    let mut new_green = ws[1].clone().clone();
    new_green.provider_specific.set("aws/weight", "50");
    let updates = vec![
        Change::update(got_a.clone(), new_a),
        Change::update(ws[1].clone(), new_green),
        Change::Delete(find(&eps, "a-a.example.com", RecordType::Txt).expect("TXT").clone()),
        Change::Delete(find(&eps, "lb.example.com", RecordType::Aaaa).expect("alias").clone()),
        Change::Delete(
            find(&eps, "_sip._tcp.example.com", RecordType::Srv)
                .expect("SRV")
                .clone(),
        ),
    ];
    apply_changes(&p, &updates).await.expect("updates and deletes");
    let eps = records(&p).await;
    assert_eq!(
        find(&eps, "a.example.com", RecordType::A).expect("A").targets[0].as_str(),
        "9.9.9.9"
    );
    let green = eps.iter().find(|e| e.set_identifier == "green").expect("green");
    assert_eq!(green.provider_specific.get("aws/weight"), Some("50"));
    assert!(find(&eps, "a-a.example.com", RecordType::Txt).is_none());
    assert!(find(&eps, "lb.example.com", RecordType::Aaaa).is_none());
    assert!(find(&eps, "lb.example.com", RecordType::A).is_some());
    assert!(find(&eps, "_sip._tcp.example.com", RecordType::Srv).is_none());
}

#[tokio::test]
async fn every_routing_policy_round_trips_through_moto() {
    require!(Moto);
    let (_moto, p) = example_com().await;
    let cases: Vec<(&str, Vec<(&str, &str)>)> = vec![
        ("weighted", vec![("aws/weight", "10")]),
        ("latency", vec![("aws/region", "eu-west-1")]),
        (
            "failover",
            vec![("aws/failover", "PRIMARY"), ("aws/health-check-id", "hc-1")],
        ),
        ("continent", vec![("aws/geolocation-continent-code", "EU")]),
        (
            "country",
            vec![
                ("aws/geolocation-country-code", "US"),
                ("aws/geolocation-subdivision-code", "CA"),
            ],
        ),
        ("multi", vec![("aws/multi-value-answer", "")]),
    ];
    let changes: Vec<Change> = cases
        .iter()
        .enumerate()
        .map(|(i, (id, props))| {
            Change::Create(
                Endpoint::new(
                    &format!("{id}.example.com"),
                    RecordType::A,
                    [format!("192.0.2.{}", i + 1)],
                )
                .with_ttl(Ttl(60))
                .with_set_identifier(*id)
                .with_provider_specific(ps(props)),
            )
        })
        .collect();
    apply_changes(&p, &changes).await.expect("creates");
    let eps = records(&p).await;
    for (id, props) in &cases {
        let ep = eps
            .iter()
            .find(|e| e.set_identifier == *id)
            .unwrap_or_else(|| panic!("{id} read back: {eps:?}"));
        assert!(
            ep.provider_specific.same_set(&ps(props)),
            "{id}: {:?}",
            ep.provider_specific
        );
    }
}

/// When each request left: its answer's instant less its duration, as the client's request hook reports it.
#[derive(Default)]
struct Sent(std::sync::Mutex<Vec<(std::time::Instant, String)>>);

impl extdns_provider::http::Observe for Sent {
    fn observe(
        &self,
        method: &reqwest::Method,
        url: &reqwest::Url,
        _status: Option<reqwest::StatusCode>,
        elapsed: std::time::Duration,
    ) {
        let left = std::time::Instant::now() - elapsed;
        let what = format!("{method} {}", url.path());
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push((left, what));
    }
}

#[tokio::test]
async fn a_stream_of_applies_sends_moto_at_most_five_change_requests_a_second() {
    use std::time::Duration;
    require!(Moto);
    let moto = Moto::start();
    moto.zone("example.com", false, &[]).await;
    let sent = std::sync::Arc::new(Sent::default());
    let mut c = config(&moto.url);
    c.api.requests = AwsConfig::new(c.endpoint.clone(), Credentials::new("a", "b"))
        .api
        .requests;
    c.batch.size = 2;
    c.zones_cache_duration = Duration::from_secs(3600);
    c.observer = extdns_provider::http::Observer(Some(sent.clone()));
    let p = std::sync::Arc::new(provider(c));
    // 12 applies 20 ms apart (50 a second), each of three creates in batches of two: 24 change requests.
    let mut running = Vec::new();
    for t in 0..12 {
        let p = p.clone();
        running.push(tokio::spawn(async move {
            let changes: Vec<Change> = (0..3)
                .map(|i| {
                    Change::Create(
                        Endpoint::new(&format!("s{t}-{i}.example.com"), RecordType::A, ["10.0.0.1"]).with_ttl(Ttl(60)),
                    )
                })
                .collect();
            apply_changes(p.as_ref(), &changes).await
        }));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for r in running {
        r.await.expect("the apply task").expect("applied");
    }
    let eps = records(&p).await;
    assert_eq!(eps.iter().filter(|e| e.record_type == RecordType::A).count(), 36);

    let sent = sent.0.lock().unwrap_or_else(|e| e.into_inner());
    let mut changes: Vec<std::time::Instant> = sent
        .iter()
        .filter(|(_, what)| what.starts_with("POST") && what.ends_with("/rrset/"))
        .map(|(at, _)| *at)
        .collect();
    changes.sort();
    assert_eq!(changes.len(), 24, "{sent:?}");
    let mut every: Vec<std::time::Instant> = sent.iter().map(|(at, _)| *at).collect();
    every.sort();
    for (what, instants) in [("change requests", &changes), ("requests", &every)] {
        for (i, w) in instants.windows(6).enumerate() {
            // The instants are the answers' less the requests' durations, as the client's hook reports
            // them: 25 ms of slack for a loaded machine's scheduling between the pacer and the send.
            let span = w[5].duration_since(w[0]);
            assert!(
                span >= Duration::from_millis(975),
                "{what} {i}..{}: six within {span:?}",
                i + 5
            );
        }
    }
}

/// moto takes TLSA, HTTPS and SVCB values as Route53 does (presentation format, kept as written); the
/// provider writes them, reads them back equal, updates and deletes them.
#[tokio::test]
async fn tlsa_https_and_svcb_round_trip_through_moto() {
    require!(Moto);
    let (_moto, p) = example_com().await;
    let tlsa_data = format!("3 1 1 {}", "0a".repeat(32));
    let tlsa = Endpoint::new("_443._tcp.www.example.com", RecordType::Tlsa, [tlsa_data.as_str()]).with_ttl(Ttl(300));
    let https = Endpoint::new("www.example.com", RecordType::Https, ["1 . alpn=h2,h3"]).with_ttl(Ttl(300));
    let svcb = Endpoint::new("_dns.example.com", RecordType::Svcb, ["0 svc.example.net."]).with_ttl(Ttl(300));
    let wanted = [tlsa.clone(), https.clone(), svcb.clone()];
    apply_changes(&p, &wanted.clone().map(Change::Create))
        .await
        .expect("created");
    let typed = |eps: Vec<Endpoint>| -> Vec<(String, String, Vec<String>)> {
        eps.into_iter()
            .filter(|e| e.record_type.has_typed_rdata())
            .map(|e| {
                let targets = e.targets.iter().map(|t| t.as_str().to_string()).collect();
                (e.dns_name, e.record_type.as_str().to_string(), targets)
            })
            .collect()
    };
    let want = |https: &str| {
        vec![
            (
                "_443._tcp.www.example.com".to_string(),
                "TLSA".to_string(),
                vec![tlsa_data.clone()],
            ),
            (
                "_dns.example.com".to_string(),
                "SVCB".to_string(),
                vec!["0 svc.example.net.".to_string()],
            ),
            (
                "www.example.com".to_string(),
                "HTTPS".to_string(),
                vec![https.to_string()],
            ),
        ]
    };
    assert_eq!(typed(records(&p).await), want("1 . alpn=h2,h3"));
    let https2 = Endpoint::new("www.example.com", RecordType::Https, ["1 . alpn=h2 port=8443"]).with_ttl(Ttl(300));
    apply_changes(&p, &[Change::update(https, https2.clone())])
        .await
        .expect("updated");
    assert_eq!(typed(records(&p).await), want("1 . alpn=h2 port=8443"));
    apply_changes(&p, &[tlsa, https2, svcb].map(Change::Delete))
        .await
        .expect("deleted");
    assert_eq!(typed(records(&p).await), vec![]);
}
