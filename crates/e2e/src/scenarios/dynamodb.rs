//! `--registry=dynamodb` against external-dns v0.23.0: `--provider=aws` on moto's Route53 and the registry
//! on the strict DynamoDB fake (moto's PartiQL cannot run the parameterised `INSERT` and `DELETE` external-dns
//! sends), both controllers pointed there by the standard `AWS_ENDPOINT_URL_ROUTE_53` and
//! `AWS_ENDPOINT_URL_DYNAMODB`. external-dns publishes first, then extdns runs on its zone and table and
//! changes nothing; the other way round on a fresh zone and table; and both write the same items. Then the
//! migration from TXT ownership records: external-dns's TXT registry publishes two zones, each controller
//! migrates one into its table, the items are the same again, and each takes over the other's.

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use extdns_test_support::dynamodb_fake::Fake;
use extdns_test_support::moto::Moto;

use crate::controllers::{OWNER, Run, Which};
use crate::dns::{self, DnsServer, ZONE};
use crate::objects::{self as o, annotations};

use super::Ctx;

const TABLE: &str = "external-dns";

pub fn run(ctx: &mut Ctx) -> Result<()> {
    let ns = ctx.namespace("dynamodb")?;
    let kube = &ctx.cp.kube;
    kube.apply(&o::lb_at(&ns, "web", "web.example.org", "203.0.113.40"))?;
    kube.apply(&o::lb_service(
        &ns,
        "api",
        annotations(&[("hostname", "api.example.org")]),
        json!([{ "ip": "203.0.113.41" }, { "ip": "2001:db8::41" }]),
    ))?;
    kube.apply(&o::lb_service(
        &ns,
        "lb",
        annotations(&[("hostname", "lb.example.org")]),
        json!([{ "hostname": "lb-1.elb.example.net" }]),
    ))?;
    // Unused by the AWS runs, which name their own provider flags; `Run` takes a server.
    let bind = dns::bind();

    let theirs = Backends::start(ctx)?;
    theirs.once(ctx, Which::ExternalDns, &ns, &bind)?;
    let items = theirs.items();
    let keys: Vec<&str> = items.iter().filter_map(|i| i["k"]["S"].as_str()).collect();
    if keys
        != [
            "api.example.org#A#",
            "api.example.org#AAAA#",
            "lb.example.org#CNAME#",
            "web.example.org#A#",
        ]
    {
        bail!("external-dns wrote these items: {items:#?}");
    }
    theirs.unchanged_by(
        ctx,
        Which::Extdns,
        &ns,
        &bind,
        "extdns on external-dns's zone and table",
    )?;

    let ours = Backends::start(ctx)?;
    ours.once(ctx, Which::Extdns, &ns, &bind)?;
    if ours.items() != items {
        bail!(
            "the items differ:\nexternal-dns: {items:#?}\nextdns: {:#?}",
            ours.items()
        );
    }
    eprintln!("  identical items: {}", items.len());
    ours.unchanged_by(
        ctx,
        Which::ExternalDns,
        &ns,
        &bind,
        "external-dns on extdns's zone and table",
    )?;

    let (theirs, ours) = (Backends::start(ctx)?, Backends::start(ctx)?);
    for b in [&theirs, &ours] {
        b.once_with(ctx, Which::ExternalDns, &ns, &bind, Registry::Txt)?;
        if !b.items().is_empty() || !b.zone_text(ctx).contains("<Name>a-web.example.org.</Name>") {
            bail!(
                "external-dns's TXT registry did not publish its ownership records:\n{}",
                b.zone_text(ctx)
            );
        }
    }
    theirs.once(ctx, Which::ExternalDns, &ns, &bind)?;
    ours.once(ctx, Which::Extdns, &ns, &bind)?;
    if theirs.items() != items || ours.items() != items {
        bail!(
            "the migrated items differ:\nexternal-dns: {:#?}\nextdns: {:#?}",
            theirs.items(),
            ours.items()
        );
    }
    eprintln!("  identical items migrated from TXT ownership records: {}", items.len());
    theirs.unchanged_by(
        ctx,
        Which::Extdns,
        &ns,
        &bind,
        "extdns on external-dns's migrated table",
    )?;
    ours.unchanged_by(
        ctx,
        Which::ExternalDns,
        &ns,
        &bind,
        "external-dns on extdns's migrated table",
    )
}

/// Where a run keeps ownership.
#[derive(Clone, Copy)]
enum Registry {
    Txt,
    Dynamodb,
}

/// One Route53 zone on its own moto and one table on its own DynamoDB fake.
struct Backends {
    moto: Moto,
    zone: String,
    dynamodb: Fake,
}

impl Backends {
    fn start(ctx: &Ctx) -> Result<Backends> {
        let moto = Moto::start();
        let zone = ctx.cp.kube.block_on(moto.zone(ZONE, false, &[]));
        let dynamodb = Fake::start_in_background();
        dynamodb.table(TABLE);
        Ok(Backends { moto, zone, dynamodb })
    }

    fn run<'a>(&self, which: Which, ns: &'a str, registry: Registry) -> Run<'a> {
        let mut run = Run::new(which, ns);
        let mut flags: Vec<String> = [
            "--provider=aws",
            "--aws-batch-change-interval=0s",
            &format!("--domain-filter={ZONE}"),
            &format!("--txt-owner-id={OWNER}"),
            "--policy=sync",
        ]
        .map(String::from)
        .to_vec();
        flags.extend(match registry {
            Registry::Txt => vec!["--registry=txt".to_string()],
            Registry::Dynamodb => vec![
                "--registry=dynamodb".to_string(),
                format!("--dynamodb-table={TABLE}"),
                "--dynamodb-region=eu-west-1".to_string(),
            ],
        });
        run.provider = Some(flags);
        run.env = vec![
            ("AWS_ENDPOINT_URL_ROUTE_53", self.moto.url.clone()),
            ("AWS_ENDPOINT_URL_DYNAMODB", self.dynamodb.url.clone()),
            ("AWS_ACCESS_KEY_ID", "AKIDE2E".to_string()),
            ("AWS_SECRET_ACCESS_KEY", "secret".to_string()),
            ("AWS_REGION", "us-east-1".to_string()),
        ];
        run
    }

    fn once(&self, ctx: &Ctx, which: Which, ns: &str, bind: &DnsServer) -> Result<()> {
        self.once_with(ctx, which, ns, bind, Registry::Dynamodb)
    }

    fn once_with(&self, ctx: &Ctx, which: Which, ns: &str, bind: &DnsServer, registry: Registry) -> Result<()> {
        self.run(which, ns, registry).once(&ctx.cp, bind)?;
        let zone = self.zone_text(ctx);
        for want in ["web.example.org.", "api.example.org.", "lb.example.org."] {
            if !zone.contains(&format!("<Name>{want}</Name>")) {
                bail!("{} did not publish {want}:\n{zone}", which.name());
            }
        }
        Ok(())
    }

    fn zone_text(&self, ctx: &Ctx) -> String {
        ctx.cp.kube.block_on(self.moto.record_sets(&self.zone))
    }

    fn items(&self) -> Vec<Value> {
        self.dynamodb.items(TABLE)
    }

    /// `which` runs once and neither the zone nor the table changes; it sends no write at all.
    fn unchanged_by(&self, ctx: &Ctx, which: Which, ns: &str, bind: &DnsServer, what: &str) -> Result<()> {
        let (zone, items) = (self.zone_text(ctx), self.items());
        let statements = self.dynamodb.lock().statements.len();
        let out = self
            .run(which, ns, Registry::Dynamodb)
            .once(&ctx.cp, bind)
            .with_context(|| what.to_string())?;
        let log = || crate::proc::tail(&String::from_utf8_lossy(&out.stderr), 20);
        if self.zone_text(ctx) != zone {
            bail!(
                "{what}: the zone changed:\nbefore: {zone}\nafter: {}\n{}",
                self.zone_text(ctx),
                log()
            );
        }
        if self.items() != items {
            bail!(
                "{what}: the table changed:\nbefore: {items:#?}\nafter: {:#?}\n{}",
                self.items(),
                log()
            );
        }
        let sent = &self.dynamodb.lock().statements[statements..];
        if !sent.is_empty() {
            bail!("{what}: statements sent: {sent:#?}\n{}", log());
        }
        eprintln!("  take-over clean: {what}");
        Ok(())
    }
}
