//! The provider against real BIND 9 and Knot servers on 127.0.0.1: what it writes is read back with `dig`.

use std::time::Duration;

use extdns_endpoint::{Changes, Endpoint, RecordType, Ttl};
use extdns_provider::{Provider, ProviderError, Unit};
use extdns_provider_rfc2136::{Rfc2136Config, Rfc2136Provider};
use extdns_test_support::dns_server::{DnsServer, ExtraKey, KEY_NAME, Kind, SECRET, WRONG_SECRET, Zone};
use extdns_test_support::require;

fn config(server: &DnsServer, zones: &[&str]) -> Rfc2136Config {
    Rfc2136Config {
        hosts: vec!["127.0.0.1".into()],
        port: server.port,
        zones: zones.iter().map(|z| z.to_string()).collect(),
        tsig_keyname: KEY_NAME.into(),
        tsig_secret: SECRET.into(),
        tsig_secret_alg: "hmac-sha256".into(),
        axfr: true,
        timeout: Duration::from_secs(5),
        ..Rfc2136Config::default()
    }
}

/// [`config`] without TSIG (`--rfc2136-insecure`), for zones that take unsigned updates.
fn unsigned(server: &DnsServer, zones: &[&str]) -> Rfc2136Config {
    Rfc2136Config {
        insecure: true,
        tsig_keyname: String::new(),
        tsig_secret: String::new(),
        tsig_secret_alg: String::new(),
        ..config(server, zones)
    }
}

fn provider(c: &Rfc2136Config) -> Rfc2136Provider {
    Rfc2136Provider::new(c).unwrap_or_else(|e| panic!("config rejected: {e}"))
}

fn ep(name: &str, rt: RecordType, targets: &[&str], ttl: i64) -> Endpoint {
    Endpoint::new(name, rt, targets.iter().copied()).with_ttl(Ttl(ttl))
}

fn find<'a>(eps: &'a [Endpoint], name: &str, rt: RecordType) -> Option<&'a Endpoint> {
    eps.iter().find(|e| e.dns_name == name && e.record_type == rt)
}

/// The create of `name` A `ip`, TTL 60.
fn a_create(name: &str, ip: &str) -> Changes {
    Changes {
        create: vec![ep(name, RecordType::A, &[ip], 60)],
        ..Changes::default()
    }
}

/// Creates `name` A `ip` through `p`: the server answers it and `p` reads it back.
async fn creates_and_reads_back(p: &Rfc2136Provider, server: &DnsServer, name: &str, ip: &str) {
    p.apply_changes(&a_create(name, ip))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(server.dig(name, "A"), vec![ip]);
    assert!(find(&records(p).await, name, RecordType::A).is_some());
}

async fn records(p: &Rfc2136Provider) -> Vec<Endpoint> {
    p.records().await.unwrap_or_else(|e| panic!("records: {e}")).endpoints
}

/// One write as a sync makes it: the zones are read first (their read state goes with the write), then each
/// change is applied as its own unit.
trait ApplyChanges {
    async fn apply_changes(&self, changes: &Changes) -> Result<(), ProviderError>;
}

impl ApplyChanges for Rfc2136Provider {
    async fn apply_changes(&self, changes: &Changes) -> Result<(), ProviderError> {
        let state = self.records().await.map(|r| r.state).unwrap_or_default();
        let changes = changes
            .clone()
            .into_changes()
            .map_err(|e| ProviderError::fatal(e.to_string()))?;
        let units: Vec<Unit<'_>> = changes.iter().map(Unit::new).collect();
        self.apply(&state, &units).await
    }
}

const HERITAGE: &str = "\"heritage=external-dns,external-dns/owner=default,external-dns/resource=service/default/web\"";

async fn create_update_delete(kind: Kind) {
    let server = DnsServer::start(kind, &[Zone::new("example.org"), Zone::new("2.0.192.in-addr.arpa")]);
    let p = provider(&config(&server, &["example.org", "2.0.192.in-addr.arpa"]));
    let long_txt = "x".repeat(300);
    let created = vec![
        ep("web.example.org", RecordType::A, &["192.0.2.10", "192.0.2.11"], 120),
        ep("web.example.org", RecordType::Aaaa, &["2001:db8::10"], 120),
        ep("alias.example.org", RecordType::Cname, &["web.example.org"], 120),
        ep("web.example.org", RecordType::Txt, &[HERITAGE], 120),
        ep("long.example.org", RecordType::Txt, &[long_txt.as_str()], 120),
        ep(
            "_http._tcp.example.org",
            RecordType::Srv,
            &["0 50 8080 web.example.org."],
            120,
        ),
        ep("10.2.0.192.in-addr.arpa", RecordType::Ptr, &["web.example.org"], 120),
    ];
    let serial = server.serial("example.org");
    p.apply_changes(&Changes {
        create: created.clone(),
        ..Changes::default()
    })
    .await
    .unwrap_or_else(|e| panic!("create on {kind:?}: {e}\n{}", server.log()));

    assert_eq!(server.dig("web.example.org", "A"), vec!["192.0.2.10", "192.0.2.11"]);
    assert_eq!(server.dig("web.example.org", "AAAA"), vec!["2001:db8::10"]);
    assert_eq!(server.dig("alias.example.org", "CNAME"), vec!["web.example.org."]);
    assert_eq!(server.dig("web.example.org", "TXT"), vec![HERITAGE.to_string()]);
    assert_eq!(
        server.dig("long.example.org", "TXT"),
        vec![format!("\"{}\" \"{}\"", "x".repeat(255), "x".repeat(45))]
    );
    assert_eq!(
        server.dig("_http._tcp.example.org", "SRV"),
        vec!["0 50 8080 web.example.org."]
    );
    assert_eq!(server.dig("10.2.0.192.in-addr.arpa", "PTR"), vec!["web.example.org."]);
    assert_eq!(server.ttl("web.example.org", "A"), Some(120));
    assert!(
        server.serial("example.org") > serial,
        "the SOA serial moves with an update"
    );

    // Reading back: what was written, canonical TXT, no SOA or apex NS.
    let read = records(&p).await;
    let a = find(&read, "web.example.org", RecordType::A).map(|e| (e.targets.clone(), e.record_ttl));
    assert_eq!(
        a,
        Some((vec!["192.0.2.10".to_string(), "192.0.2.11".into()].into(), Ttl(120)))
    );
    let txt = find(&read, "web.example.org", RecordType::Txt)
        .map(|e| e.targets.iter().map(ToString::to_string).collect::<Vec<_>>());
    assert_eq!(txt, Some(vec![HERITAGE.trim_matches('"').to_string()]));
    let long = find(&read, "long.example.org", RecordType::Txt)
        .map(|e| e.targets.iter().map(ToString::to_string).collect::<Vec<_>>());
    assert_eq!(long, Some(vec![long_txt.clone()]));
    let srv = find(&read, "_http._tcp.example.org", RecordType::Srv)
        .map(|e| e.targets.iter().map(ToString::to_string).collect::<Vec<_>>());
    assert_eq!(srv, Some(vec!["0 50 8080 web.example.org.".to_string()]));
    let ptr = find(&read, "10.2.0.192.in-addr.arpa", RecordType::Ptr)
        .map(|e| e.targets.iter().map(ToString::to_string).collect::<Vec<_>>());
    assert_eq!(ptr, Some(vec!["web.example.org".to_string()]));
    assert!(
        find(&read, "ns1.example.org", RecordType::A).is_some(),
        "other records are listed"
    );
    assert!(
        !read
            .iter()
            .any(|e| e.record_type == RecordType::Ns && e.dns_name == "example.org"),
        "apex NS excluded"
    );
    assert!(!read.iter().any(|e| e.record_type.as_str() == "SOA"), "SOA excluded");

    // Update: new targets, a new TTL, a new TXT value; old sides come from what was read.
    let old: Vec<Endpoint> = ["web.example.org"]
        .iter()
        .flat_map(|n| [RecordType::A, RecordType::Txt].map(|t| find(&read, n, t).cloned()))
        .flatten()
        .chain(find(&read, "alias.example.org", RecordType::Cname).cloned())
        .chain(find(&read, "_http._tcp.example.org", RecordType::Srv).cloned())
        .collect();
    let new = vec![
        ep("web.example.org", RecordType::A, &["192.0.2.20"], 600),
        ep(
            "web.example.org",
            RecordType::Txt,
            &["\"heritage=external-dns,external-dns/owner=other\""],
            600,
        ),
        ep("alias.example.org", RecordType::Cname, &["other.example.org"], 600),
        ep(
            "_http._tcp.example.org",
            RecordType::Srv,
            &["10 60 9090 web.example.org."],
            600,
        ),
    ];
    assert_eq!(old.len(), new.len());
    p.apply_changes(&Changes {
        update_old: old,
        update_new: new,
        ..Changes::default()
    })
    .await
    .unwrap_or_else(|e| panic!("update on {kind:?}: {e}"));
    assert_eq!(server.dig("web.example.org", "A"), vec!["192.0.2.20"]);
    assert_eq!(server.ttl("web.example.org", "A"), Some(600));
    assert_eq!(
        server.dig("web.example.org", "TXT"),
        vec!["\"heritage=external-dns,external-dns/owner=other\""]
    );
    assert_eq!(server.dig("alias.example.org", "CNAME"), vec!["other.example.org."]);
    assert_eq!(
        server.dig("_http._tcp.example.org", "SRV"),
        vec!["10 60 9090 web.example.org."]
    );

    // Delete everything that was created, as read back.
    let read = records(&p).await;
    let delete: Vec<Endpoint> = read.into_iter().filter(|e| !e.dns_name.starts_with("ns1.")).collect();
    assert_eq!(delete.len(), created.len());
    p.apply_changes(&Changes {
        delete,
        ..Changes::default()
    })
    .await
    .unwrap_or_else(|e| panic!("delete: {e}"));
    for (name, t) in [
        ("web.example.org", "A"),
        ("web.example.org", "AAAA"),
        ("web.example.org", "TXT"),
        ("long.example.org", "TXT"),
        ("alias.example.org", "CNAME"),
        ("_http._tcp.example.org", "SRV"),
        ("10.2.0.192.in-addr.arpa", "PTR"),
    ] {
        assert_eq!(server.dig(name, t), Vec::<String>::new(), "{name} {t} deleted");
    }
    let left: Vec<String> = records(&p)
        .await
        .iter()
        .map(|e| format!("{} {}", e.dns_name, e.record_type))
        .collect();
    assert_eq!(
        left,
        vec!["ns1.2.0.192.in-addr.arpa A", "ns1.example.org A"],
        "zones are read longest first"
    );
}

async fn wrong_key_changes_nothing(kind: Kind) {
    let server = DnsServer::start(kind, &[Zone::new("example.org")]);
    let p = provider(&Rfc2136Config {
        tsig_secret: WRONG_SECRET.into(),
        ..config(&server, &["example.org"])
    });
    let serial = server.serial("example.org");
    let changes = a_create("web.example.org", "192.0.2.1");
    match p.apply_changes(&changes).await {
        Err(ProviderError::Failed {
            kind: extdns_provider::FailureKind::Auth,
            message,
            source,
        }) => {
            assert!(
                message.contains("BADSIG") && message.contains(KEY_NAME) && message.contains("secret"),
                "{message}"
            );
            let cause = source.as_deref().map(ToString::to_string).unwrap_or_default();
            assert!(
                cause.contains("rejected the TSIG key") && cause.contains("BADSIG"),
                "{cause}"
            );
        }
        other => panic!("expected an authentication failure on {kind:?}, got {other:?}"),
    }
    match p.records().await {
        Err(ProviderError::Failed {
            kind: extdns_provider::FailureKind::Auth,
            message,
            ..
        }) => assert!(message.contains("BADSIG"), "{message}"),
        other => panic!("expected an authentication failure reading {kind:?}, got {other:?}"),
    }
    assert_eq!(server.dig("web.example.org", "A"), Vec::<String>::new());
    assert_eq!(server.serial("example.org"), serial);
}

async fn each_change_goes_to_its_zone(kind: Kind) {
    let server = DnsServer::start(kind, &[Zone::new("example.org"), Zone::new("k8s.example.org")]);
    let p = provider(&config(&server, &["example.org", "k8s.example.org"]));
    let (parent, child) = (server.serial("example.org"), server.serial("k8s.example.org"));
    let changes = Changes {
        create: vec![
            ep("a.example.org", RecordType::A, &["192.0.2.1"], 60),
            ep("b.k8s.example.org", RecordType::A, &["192.0.2.2"], 60),
            ep("k8s.example.org", RecordType::Txt, &["apex of the child zone"], 60),
        ],
        ..Changes::default()
    };
    p.apply_changes(&changes)
        .await
        .unwrap_or_else(|e| panic!("{kind:?}: {e}"));
    assert_eq!(server.dig("a.example.org", "A"), vec!["192.0.2.1"]);
    assert_eq!(server.dig("b.k8s.example.org", "A"), vec!["192.0.2.2"]);
    assert_eq!(
        server.serial("example.org"),
        parent + 1,
        "one update message to the parent zone"
    );
    assert_eq!(
        server.serial("k8s.example.org"),
        child + 1,
        "one update message to the child zone"
    );
    let read = records(&p).await;
    assert!(find(&read, "b.k8s.example.org", RecordType::A).is_some());
    assert!(find(&read, "k8s.example.org", RecordType::Txt).is_some());
}

async fn every_tsig_algorithm_signs(kind: Kind) {
    let algs = ["hmac-sha1", "hmac-sha224", "hmac-sha384", "hmac-sha512"];
    let keys: Vec<ExtraKey> = algs
        .iter()
        .map(|a| ExtraKey {
            name: format!("key-{a}"),
            algorithm: a.to_string(),
            secret: SECRET.into(),
        })
        .collect();
    let server = DnsServer::start_with_keys(kind, &[Zone::new("example.org")], &keys);
    for k in &keys {
        let c = Rfc2136Config {
            tsig_keyname: k.name.clone(),
            tsig_secret_alg: k.algorithm.clone(),
            ..config(&server, &["example.org"])
        };
        let p = provider(&c);
        let name = format!("{}.example.org", k.algorithm);
        let changes = a_create(&name, "192.0.2.7");
        p.apply_changes(&changes)
            .await
            .unwrap_or_else(|e| panic!("{kind:?} {}: {e}", k.algorithm));
        assert_eq!(server.dig(&name, "A"), vec!["192.0.2.7"], "{}", k.algorithm);
        let read = p
            .records()
            .await
            .unwrap_or_else(|e| panic!("AXFR with {}: {e}", k.algorithm))
            .endpoints;
        assert!(find(&read, &name, RecordType::A).is_some(), "{}", k.algorithm);
    }
}

/// A SHA-256 digest of `byte` repeated, in hex of the case given.
fn digest(byte: &str) -> String {
    byte.repeat(32)
}

/// TLSA, HTTPS and SVCB written, read back in canonical text, updated and deleted, each step checked with
/// `dig` (whose spelling, upper-case hex and quoted `alpn` on BIND, is parsed into the same canonical text).
async fn typed_records(kind: Kind) {
    let server = DnsServer::start(kind, &[Zone::new("example.org")]);
    let p = provider(&config(&server, &["example.org"]));
    let tlsa = format!("3 1 1 {}", digest("AB"));
    let created = vec![
        ep("_443._tcp.web.example.org", RecordType::Tlsa, &[tlsa.as_str()], 120),
        ep(
            "web.example.org",
            RecordType::Https,
            &[
                "1 . alpn=h2,h3 port=8443 ipv4hint=192.0.2.10",
                "2 alt.example.org. alpn=h2",
            ],
            120,
        ),
        ep(
            "_dns.example.org",
            RecordType::Svcb,
            &["1 dns.example.org. alpn=dot port=853 ech=AEj+DQBE key65000=\"x y\""],
            120,
        ),
        ep("pool.example.org", RecordType::Svcb, &["0 pool.svc.example.net."], 120),
    ];
    p.apply_changes(&Changes {
        create: created.clone(),
        ..Changes::default()
    })
    .await
    .unwrap_or_else(|e| panic!("create on {kind:?}: {e}\n{}", server.log()));
    let canonical = |rt: &RecordType, t: &str| {
        extdns_endpoint::canonical_target(rt, t)
            .ok()
            .flatten()
            .unwrap_or_else(|| panic!("{t}"))
    };
    let read = records(&p).await;
    for e in &created {
        let mut want: Vec<String> = e.targets.iter().map(|t| canonical(&e.record_type, t)).collect();
        want.sort();
        assert_eq!(
            server.dig_typed(&e.dns_name, e.record_type.as_str()),
            want,
            "{kind:?} {e}"
        );
        let back = find(&read, &e.dns_name, e.record_type.clone()).unwrap_or_else(|| panic!("{e} not read"));
        let mut got: Vec<String> = back.targets.iter().map(ToString::to_string).collect();
        got.sort();
        assert_eq!(got, want, "{kind:?}: read back in canonical text");
        assert_eq!(back.record_ttl, Ttl(120));
    }

    let tlsa2 = format!("3 1 1 {}", digest("cd"));
    let updated = vec![
        ep("_443._tcp.web.example.org", RecordType::Tlsa, &[tlsa2.as_str()], 300),
        ep("web.example.org", RecordType::Https, &["1 . alpn=h3 port=443"], 300),
    ];
    p.apply_changes(&Changes {
        update_old: vec![created[0].clone(), created[1].clone()],
        update_new: updated.clone(),
        ..Changes::default()
    })
    .await
    .unwrap_or_else(|e| panic!("update on {kind:?}: {e}\n{}", server.log()));
    assert_eq!(
        server.dig_typed("_443._tcp.web.example.org", "TLSA"),
        vec![tlsa2.clone()]
    );
    assert_eq!(
        server.dig_typed("web.example.org", "HTTPS"),
        vec!["1 . alpn=h3 port=443"]
    );
    assert_eq!(server.ttl("web.example.org", "HTTPS"), Some(300));

    let mut gone = updated;
    gone.extend(created[2..].iter().cloned());
    p.apply_changes(&Changes {
        delete: gone.clone(),
        ..Changes::default()
    })
    .await
    .unwrap_or_else(|e| panic!("delete on {kind:?}: {e}\n{}", server.log()));
    for e in &gone {
        assert!(
            server.dig(&e.dns_name, e.record_type.as_str()).is_empty(),
            "{kind:?} {e} left"
        );
    }
    let read = records(&p).await;
    assert!(read.iter().all(|e| !e.record_type.has_typed_rdata()), "{read:?}");
}

macro_rules! on_both {
    ($($scenario:ident => $bind:ident, $knot:ident;)*) => {$(
        #[tokio::test]
        async fn $bind() {
            require!(Bind);
            $scenario(Kind::Bind).await
        }
        #[tokio::test]
        async fn $knot() {
            require!(Knot);
            $scenario(Kind::Knot).await
        }
    )*};
}

on_both! {
    create_update_delete => bind_create_update_delete_a_aaaa_cname_txt_srv_ptr, knot_create_update_delete_a_aaaa_cname_txt_srv_ptr;
    wrong_key_changes_nothing => bind_wrong_key_changes_nothing_and_says_why, knot_wrong_key_changes_nothing_and_says_why;
    each_change_goes_to_its_zone => bind_each_change_goes_to_its_zone, knot_each_change_goes_to_its_zone;
    every_tsig_algorithm_signs => bind_every_tsig_algorithm_signs, knot_every_tsig_algorithm_signs;
    typed_records => bind_tlsa_https_svcb_written_read_updated_deleted, knot_tlsa_https_svcb_written_read_updated_deleted;
}

#[tokio::test]
async fn bind_refused_record_is_split_out_and_the_others_land() {
    require!(Bind);
    let server = DnsServer::start(Kind::Bind, &[Zone::new("example.org").refusing("refused.example.org")]);
    let p = provider(&config(&server, &["example.org"]));
    let names = ["a", "b", "refused", "c", "d"];
    let create = names
        .iter()
        .map(|n| ep(&format!("{n}.example.org"), RecordType::A, &["192.0.2.5"], 60))
        .collect();
    match p
        .apply_changes(&Changes {
            create,
            ..Changes::default()
        })
        .await
    {
        Err(ProviderError::Partial { failures }) => {
            assert_eq!(failures.len(), 1, "{failures:?}");
            assert_eq!(failures[0].key.dns_name, "refused.example.org");
            assert!(failures[0].reason.message.contains("REFUSED"), "{}", failures[0].reason);
        }
        other => panic!("expected a partial failure, got {other:?}"),
    }
    for n in ["a", "b", "c", "d"] {
        assert_eq!(
            server.dig(&format!("{n}.example.org"), "A"),
            vec!["192.0.2.5"],
            "{n} landed"
        );
    }
    assert_eq!(server.dig("refused.example.org", "A"), Vec::<String>::new());
}

#[tokio::test]
async fn bind_more_changes_than_the_batch_size_all_land_in_few_messages() {
    require!(Bind);
    let server = DnsServer::start(Kind::Bind, &[Zone::new("example.org")]);
    let p = provider(&Rfc2136Config {
        batch_change_size: 50,
        ..config(&server, &["example.org"])
    });
    let serial = server.serial("example.org");
    let create = (0..120)
        .map(|i| ep(&format!("h{i}.example.org"), RecordType::A, &["192.0.2.9"], 60))
        .collect();
    p.apply_changes(&Changes {
        create,
        ..Changes::default()
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let read = records(&p).await;
    assert_eq!(read.iter().filter(|e| e.dns_name.starts_with('h')).count(), 120);
    assert_eq!(
        server.serial("example.org"),
        serial + 3,
        "120 changes in batches of 50 are three updates"
    );
}

#[tokio::test]
async fn bind_insecure_updates_need_no_key() {
    require!(Bind);
    let server = DnsServer::start(Kind::Bind, &[Zone::new("open.example").open()]);
    let c = unsigned(&server, &["open.example"]);
    let p = provider(&c);
    creates_and_reads_back(&p, &server, "w.open.example", "192.0.2.3").await;
}

#[tokio::test]
async fn bind_a_dead_first_host_fails_over_to_the_next() {
    require!(Bind);
    let server = DnsServer::start(Kind::Bind, &[Zone::new("example.org")]);
    // Nothing listens on 127.0.0.2 at this port: connection refused, then the next host.
    let c = Rfc2136Config {
        hosts: vec!["127.0.0.2".into(), "127.0.0.1".into()],
        ..config(&server, &["example.org"])
    };
    let p = provider(&c);
    creates_and_reads_back(&p, &server, "f.example.org", "192.0.2.4").await;
}

#[tokio::test]
async fn no_server_listening_is_a_transient_error() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
        l.local_addr().map(|a| a.port()).unwrap_or(1)
    };
    let c = Rfc2136Config {
        hosts: vec!["127.0.0.1".into()],
        port,
        zones: vec!["example.org".into()],
        tsig_keyname: KEY_NAME.into(),
        tsig_secret: SECRET.into(),
        tsig_secret_alg: "hmac-sha256".into(),
        axfr: true,
        ..Rfc2136Config::default()
    };
    let p = provider(&c);
    assert!(p.records().await.is_err_and(|e| e.is_transient()));
    let changes = a_create("x.example.org", "192.0.2.1");
    let got = p.apply_changes(&changes).await;
    assert!(matches!(&got, Err(e) if e.is_transient()), "{got:?}");
}

#[tokio::test]
async fn bind_txt_written_in_other_chunks_reads_whole_and_deletes() {
    require!(Bind);
    let zone = Zone::new("example.org").with_record("odd IN TXT \"heritage=\" \"external-dns\"");
    let server = DnsServer::start(Kind::Bind, &[zone]);
    let p = provider(&config(&server, &["example.org"]));
    let read = records(&p).await;
    let odd = find(&read, "odd.example.org", RecordType::Txt).cloned();
    assert_eq!(
        odd.as_ref()
            .map(|e| e.targets.iter().map(ToString::to_string).collect::<Vec<_>>()),
        Some(vec!["heritage=external-dns".to_string()])
    );
    let delete = odd.into_iter().collect();
    p.apply_changes(&Changes {
        delete,
        ..Changes::default()
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(server.dig("odd.example.org", "TXT"), Vec::<String>::new());
}

fn tls_config(server: &DnsServer, tls: extdns_provider_rfc2136::TlsOptions) -> Rfc2136Config {
    Rfc2136Config {
        port: server.tls_port.unwrap_or_else(|| panic!("no TLS port")),
        tls: Some(tls),
        ..config(server, &["example.org"])
    }
}

#[tokio::test]
async fn bind_over_tls_with_the_servers_ca_writes_and_transfers() {
    require!(Bind, OpenSsl);
    let server = DnsServer::start_bind_tls(&[Zone::new("example.org")]);
    let tls = extdns_provider_rfc2136::TlsOptions {
        ca_file: Some(server.dir().join("ca.crt")),
        ..Default::default()
    };
    let p = provider(&tls_config(&server, tls));
    let changes = a_create("tls.example.org", "192.0.2.43");
    p.apply_changes(&changes)
        .await
        .unwrap_or_else(|e| panic!("update over TLS: {e}\n{}", server.log()));
    assert_eq!(server.dig("tls.example.org", "A"), vec!["192.0.2.43"]);
    let read = p
        .records()
        .await
        .unwrap_or_else(|e| panic!("AXFR over TLS: {e}\n{}", server.log()))
        .endpoints;
    assert!(find(&read, "tls.example.org", RecordType::A).is_some());
}

#[tokio::test]
async fn bind_over_tls_refuses_an_unknown_certificate_unless_told_to_skip_verification() {
    require!(Bind, OpenSsl);
    let server = DnsServer::start_bind_tls(&[Zone::new("example.org")]);
    let changes = a_create("tls.example.org", "192.0.2.44");
    // The system roots do not know the test CA.
    let strict = provider(&tls_config(&server, extdns_provider_rfc2136::TlsOptions::default()));
    let got = strict.apply_changes(&changes).await;
    assert!(
        matches!(&got, Err(ProviderError::Failed { kind: extdns_provider::FailureKind::Transient, message: m, .. }) if m.contains("TLS")),
        "{got:?}"
    );
    assert_eq!(server.dig("tls.example.org", "A"), Vec::<String>::new());

    let skip = extdns_provider_rfc2136::TlsOptions {
        skip_verify: true,
        ..Default::default()
    };
    provider(&tls_config(&server, skip))
        .apply_changes(&changes)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(server.dig("tls.example.org", "A"), vec!["192.0.2.44"]);
}

/// A DNS server on `127.0.0.2:port` that answers one zone transfer with its first message only (the SOA and
/// `partial.<zone>`), then hangs up.
fn half_transfer_server(port: u16, zone: &str) -> std::thread::JoinHandle<()> {
    use hickory_proto::op::{Message, MessageType, OpCode};
    use hickory_proto::rr::rdata::{A, SOA};
    use hickory_proto::rr::{Name, RData, Record};
    use std::io::{Read, Write};

    let listener = std::net::TcpListener::bind(("127.0.0.2", port)).unwrap_or_else(|e| panic!("bind: {e}"));
    let zone = zone.to_string();
    std::thread::spawn(move || {
        let Ok((mut conn, _)) = listener.accept() else { return };
        let mut len = [0u8; 2];
        if conn.read_exact(&mut len).is_err() {
            return;
        }
        let mut query = vec![0u8; usize::from(u16::from_be_bytes(len))];
        if conn.read_exact(&mut query).is_err() {
            return;
        }
        let Ok(query) = Message::from_vec(&query) else { return };
        let name = |n: &str| Name::from_ascii(n).unwrap_or_else(|e| panic!("{n}: {e}"));
        let apex = name(&format!("{zone}."));
        let mut answer = Message::new(query.metadata.id, MessageType::Response, OpCode::Query);
        let soa = SOA::new(apex.clone(), apex.clone(), 1, 60, 60, 60, 60);
        answer.add_answer(Record::from_rdata(apex, 60, RData::SOA(soa)));
        let partial = name(&format!("partial.{zone}."));
        answer.add_answer(Record::from_rdata(partial, 60, RData::A(A::new(192, 0, 2, 99))));
        let Ok(wire) = answer.to_vec() else { return };
        let Ok(len) = u16::try_from(wire.len()) else { return };
        let _ = conn.write_all(&len.to_be_bytes());
        let _ = conn.write_all(&wire);
        // Dropped here: the transfer ends before its closing SOA.
    })
}

#[tokio::test]
async fn bind_a_transfer_cut_short_leaves_nothing_when_the_next_host_answers() {
    require!(Bind);
    let server = DnsServer::start(Kind::Bind, &[Zone::new("open.example").open()]);
    let c = Rfc2136Config {
        hosts: vec!["127.0.0.2".into(), "127.0.0.1".into()],
        ..unsigned(&server, &["open.example"])
    };
    let p = provider(&c);
    p.apply_changes(&a_create("whole.open.example", "192.0.2.5"))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    // A provider of its own: the write's read found nothing on the first host and moved on from it.
    let fake = half_transfer_server(server.port, "open.example");
    let read = records(&provider(&c)).await;
    let _ = fake.join();
    assert!(
        find(&read, "whole.open.example", RecordType::A).is_some(),
        "the second host's zone is read: {read:?}"
    );
    assert!(
        find(&read, "partial.open.example", RecordType::A).is_none(),
        "nothing of the transfer cut short is kept: {read:?}"
    );
}
