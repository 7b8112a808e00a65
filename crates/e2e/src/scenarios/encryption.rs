//! `--txt-encrypt-enabled` with `--events`, on BIND and on the strict Route53 fake: a Service's load balancer
//! address changes three times, then the Service goes. Each incremental sync plans against the cache, so the
//! cache must hold each encrypted ownership record exactly as written (the same nonce): one sealed again would
//! name a value the zone does not hold, and RFC 2136 would keep the old one beside the new (Route53 refuses the
//! batch). Exactly one ownership value per name after each update, none after the delete.

use anyhow::{Context, Result, bail};

use extdns_test_support::route53_fake::{Fake, Set};

use crate::controllers::{OWNER, Run, Which};
use crate::dns::{self, ZONE};
use crate::objects as o;
use crate::proc::{Proc, eventually};

use super::Ctx;
use super::wait::{self, CONVERGE, answers};

/// 32 bytes: `--txt-encrypt-aes-key` takes them raw or in base64.
const KEY: &str = "0123456789abcdef0123456789abcdef";
const NAME: &str = "web.example.org";
const ADDRESSES: [&str; 4] = ["203.0.113.30", "203.0.113.31", "203.0.113.32", "203.0.113.33"];

pub fn run(ctx: &mut Ctx) -> Result<()> {
    let ns = ctx.namespace("encryption")?;
    let server = dns::bind();
    let run = encrypted(Run::new(Which::Extdns, &ns));
    let mut extdns = run.start(&ctx.cp, &server, &ctx.log("encryption-bind"))?;
    let ownership_values = |extdns: &mut Proc, want: usize| {
        eventually(
            &format!("{want} ownership value(s) at a-{NAME}"),
            CONVERGE,
            std::time::Duration::from_millis(100),
            || {
                wait::alive(extdns)?;
                Ok((dns::answers(&server, &format!("a-{NAME}"), "TXT").len() == want).then_some(()))
            },
        )
    };
    for ip in ADDRESSES {
        ctx.cp.kube.apply(&web(&ns, ip))?;
        answers(&server, &mut extdns, NAME, "A", &[ip])?;
        ownership_values(&mut extdns, 1)
            .with_context(|| format!("after {ip}: {:?}", dns::answers(&server, &format!("a-{NAME}"), "TXT")))?;
    }
    ctx.cp.kube.delete("v1", "Service", Some(&ns), "web")?;
    answers(&server, &mut extdns, NAME, "A", &[])?;
    ownership_values(&mut extdns, 0)?;
    no_warnings(&extdns)?;
    drop(extdns);

    // The same on Route53, whose DELETE and UPSERT must name a record set exactly.
    let ns = ctx.namespace("encryption-route53")?;
    let fake = Fake::start_in_background();
    let zone = fake.zone(ZONE, false, &[]);
    let mut run = encrypted(Run::new(Which::Extdns, &ns));
    run.provider = Some(route53_flags());
    run.env = route53_env(&fake.url);
    let mut extdns = run.start(&ctx.cp, &server, &ctx.log("encryption-route53"))?;
    let set = |name: &str, kind: &str| fake.find(&zone, name, kind);
    for ip in ADDRESSES {
        ctx.cp.kube.apply(&web(&ns, ip))?;
        eventually(
            &format!("{NAME} A = {ip} on Route53"),
            CONVERGE,
            std::time::Duration::from_millis(100),
            || {
                wait::alive(&mut extdns)?;
                Ok((values(&set(NAME, "A")) == [ip]).then_some(()))
            },
        )?;
        let txt = values(&set(&format!("a-{NAME}"), "TXT"));
        if txt.len() != 1 {
            bail!("after {ip}: ownership values {txt:?}\n{}", extdns.log_tail(25));
        }
    }
    ctx.cp.kube.delete("v1", "Service", Some(&ns), "web")?;
    eventually(
        "web and its ownership record gone from Route53",
        CONVERGE,
        std::time::Duration::from_millis(100),
        || {
            wait::alive(&mut extdns)?;
            Ok((set(NAME, "A").is_none() && set(&format!("a-{NAME}"), "TXT").is_none()).then_some(()))
        },
    )?;
    no_warnings(&extdns)
}

/// A LoadBalancer Service `web` at `ip`.
fn web(ns: &str, ip: &str) -> serde_json::Value {
    o::lb_at(ns, "web", NAME, ip)
}

/// `run` long-running with `--events` and encrypted ownership records.
fn encrypted(run: Run<'_>) -> Run<'_> {
    run.flag("--events")
        .flag("--interval=1h")
        .flag("--txt-encrypt-enabled")
        .flag(format!("--txt-encrypt-aes-key={KEY}"))
}

fn route53_flags() -> Vec<String> {
    [
        "--provider=aws",
        "--aws-batch-change-interval=0s",
        &format!("--domain-filter={ZONE}"),
        "--registry=txt",
        &format!("--txt-owner-id={OWNER}"),
        "--policy=sync",
    ]
    .map(String::from)
    .to_vec()
}

/// Route53 at the fake, with static keys (nothing else of the credential chain is asked).
fn route53_env(url: &str) -> Vec<(&'static str, String)> {
    vec![
        ("AWS_ENDPOINT_URL_ROUTE_53", url.to_string()),
        ("AWS_ACCESS_KEY_ID", "AKIDE2E".to_string()),
        ("AWS_SECRET_ACCESS_KEY", "secret".to_string()),
        ("AWS_REGION", "us-east-1".to_string()),
    ]
}

fn values(set: &Option<Set>) -> Vec<String> {
    set.iter()
        .flat_map(|s| s.resource_records.iter().flat_map(|r| &r.items))
        .map(|v| v.value.clone())
        .collect()
}

/// A write the provider refused would be logged as a warning or an error: none is expected.
fn no_warnings(extdns: &Proc) -> Result<()> {
    let log = extdns.log_text();
    let refused: Vec<&str> = log
        .lines()
        .filter(|l| l.contains(" WARN ") || l.contains(" ERROR "))
        .collect();
    if !refused.is_empty() {
        bail!("{} warned:\n{}", extdns.name, refused.join("\n"));
    }
    Ok(())
}
