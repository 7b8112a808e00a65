//! `providers-churn` (issue 50): three ClusterDNSProviders in one extdns under churn, one of them throttled
//! by its cloud: two RFC 2136 providers on BIND (`a.example.org`, `b.example.org`) and one Route53 provider
//! on the strict Route53 fake (`slow.example.org`) whose account admits one request a second, with one record
//! a change request so that it needs many. Services arrive ten a second over all three. What is asserted is
//! what happened, not how long it took: every healthy provider's names answered while the throttled one was
//! still behind (some of its names not yet in the fake), then the throttled one caught up too, having been
//! answered 429 by its fake. One pipeline held back by its cloud never holds back the others.

use std::time::Duration;

use anyhow::{Result, bail};
use extdns_dnsprovider::ProviderKind;
use extdns_test_support::route53_fake::{self, Fake};
use serde_json::json;

use crate::dns;
use crate::objects as o;
use crate::proc::eventually;

use super::Ctx;
use super::providers::{SECRET_NAME, delete_providers, extdns, rfc2136, tsig_secret};
use super::wait::{CONVERGE, answers};

/// Services per provider.
const EACH: usize = 10;
/// The healthy providers' subdomains.
const FAST: [&str; 2] = ["a.example.org", "b.example.org"];
/// The throttled provider's zone.
const SLOW: &str = "slow.example.org";
/// Between two Services: ten a second.
const PACE: Duration = Duration::from_millis(100);

/// Service `i` of the zone `sub`'s address.
fn ip(zone: usize, i: usize) -> String {
    format!("198.51.100.{}", zone * EACH + i + 1)
}

pub fn run(ctx: &mut Ctx) -> Result<()> {
    let ns = ctx.namespace("providers-churn")?;
    let server = dns::bind();
    let kube = &ctx.cp.kube;
    kube.apply(&tsig_secret(&ns, SECRET_NAME))?;
    let mut names = Vec::new();
    for sub in FAST {
        let name = format!("{ns}-{}", &sub[..1]);
        let mut p = rfc2136(ProviderKind::Cluster, &ns, &name, server.port, json!({}), Some(&ns));
        p["spec"]["domainFilter"]["include"] = json!([sub]);
        kube.apply(&p)?;
        names.push(name);
    }
    // Route53's meter at one request a second for the account; extdns paces at Route53's documented five,
    // so the fake throttles it, and one record a change request makes it need many.
    let fake = Fake::start_in_background().with_limits(vec![route53_fake::per_second(1)]);
    let zone = fake.zone(SLOW, false, &[]);
    let slow = format!("{ns}-slow");
    kube.apply(&json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": { "name": "route53", "namespace": ns },
        "stringData": {
            "AWS_ACCESS_KEY_ID": "AKIDCHURN",
            "AWS_SECRET_ACCESS_KEY": "churn-secret",
            "AWS_ENDPOINT_URL_ROUTE_53": fake.url,
        },
    }))?;
    kube.apply(&json!({
        "apiVersion": "externaldns.k8s.io/v1alpha1", "kind": "ClusterDNSProvider",
        "metadata": { "name": slow },
        "spec": {
            "type": "aws",
            "domainFilter": { "include": [SLOW] },
            "config": { "aws-batch-change-size": 1, "aws-batch-change-interval": "0s", "policy": "sync" },
            "credentialsRef": { "name": "route53", "namespace": ns },
        },
    }))?;
    let mut extdns = extdns(&ns).start_own_provider(&ctx.cp, &ctx.log("providers-churn"))?;
    let result = (|| -> Result<()> {
        let subs: Vec<&str> = FAST.iter().copied().chain([SLOW]).collect();
        for i in 0..EACH {
            for (z, sub) in subs.iter().enumerate() {
                let host = format!("s{i}.{sub}");
                kube.apply(&o::lb_at(&ns, &format!("s{i}-{z}"), &host, &ip(z, i)))?;
                std::thread::sleep(PACE);
            }
        }
        for (z, sub) in FAST.iter().enumerate() {
            for i in 0..EACH {
                answers(&server, &mut extdns, &format!("s{i}.{sub}"), "A", &[&ip(z, i)])?;
            }
        }
        let published = |fake: &Fake| {
            fake.sets(&zone)
                .iter()
                .filter(|s| s.kind == "A" && s.name.starts_with('s'))
                .count()
        };
        let behind = published(&fake);
        println!("providers-churn: the healthy providers complete; the throttled one has {behind} of {EACH}");
        if behind >= EACH {
            bail!("the throttled provider was not behind when the healthy ones were complete: the test shows nothing");
        }
        eventually(
            "the throttled provider catches up",
            CONVERGE * 2,
            Duration::from_millis(200),
            || Ok((published(&fake) == EACH).then_some(())),
        )?;
        let throttled = fake.lock().requests.throttled();
        if throttled == 0 {
            bail!("the fake never throttled the slow provider");
        }
        println!("providers-churn: the throttled provider caught up after {throttled} answers 429");
        Ok(())
    })();
    let mut providers: Vec<&str> = names.iter().map(String::as_str).collect();
    providers.push(&slow);
    let cleanup = delete_providers(ctx, &mut extdns, ProviderKind::Cluster, &ns, &providers);
    extdns.terminate(Duration::from_secs(5));
    result?;
    cleanup
}
