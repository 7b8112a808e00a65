//! The `--events` latency benchmark: Services created one at a time, and the time from the create call to
//! the first DNS answer from BIND, for extdns and for external-dns v0.23.0 in the same run, on the same API
//! server and BIND (one controller at a time, each in its own namespace with its own owner id).

use std::time::{Duration, Instant};

use anyhow::{Result, bail};

use crate::controllers::{Run, Which};
use crate::dns;
use crate::objects::{self as o, annotations};

use super::Ctx;
use super::wait::{CONVERGE, answers};

/// The flags both controllers get beyond the common ones: sync on events, no periodic sync in the way, and
/// event-driven syncs at least a second apart (instead of the default 5 s, only so the run is shorter).
pub const FLAGS: [&str; 3] = ["--events", "--min-event-sync-interval=1s", "--interval=1h"];

/// The wait after an answer before the next Service: longer than `--min-event-sync-interval`, so every
/// Service is created in a quiet cluster and the figure is the reaction to one change, not a rate limit.
const PAUSE: Duration = Duration::from_millis(1200);

pub struct Figures {
    pub which: Which,
    pub samples: Vec<Duration>,
}

impl Figures {
    fn percentile(&self, p: f64) -> Duration {
        let mut s = self.samples.clone();
        s.sort();
        if s.is_empty() {
            return Duration::ZERO;
        }
        let rank = ((p / 100.0) * s.len() as f64).ceil() as usize;
        s[rank.clamp(1, s.len()) - 1]
    }
    pub fn median(&self) -> Duration {
        self.percentile(50.0)
    }
    pub fn p99(&self) -> Duration {
        self.percentile(99.0)
    }
}

pub fn run(mut ctx: Ctx, count: usize) -> Result<()> {
    let server = dns::bind();
    let mut all = Vec::new();
    for which in [Which::Extdns, Which::ExternalDns] {
        all.push(measure(&mut ctx, &server, which, count)?);
    }
    println!("\n| controller | Services | median | p99 |\n|---|---|---|---|");
    for f in &all {
        println!(
            "| {} | {} | {} ms | {} ms |",
            f.which.name(),
            f.samples.len(),
            f.median().as_millis(),
            f.p99().as_millis()
        );
    }
    println!(
        "\nflags (both): {} and the common e2e flags (RFC2136 to BIND, TXT registry); {} ms between an \
         answer and the next Service",
        FLAGS.join(" "),
        PAUSE.as_millis()
    );
    Ok(())
}

fn measure(ctx: &mut Ctx, server: &dns::DnsServer, which: Which, count: usize) -> Result<Figures> {
    let ns = ctx.namespace(&format!("latency-{}", which.name()))?;
    let owner = format!("latency-{}", which.name());
    let mut run = Run::new(which, &ns);
    run.owner = &owner;
    for f in FLAGS {
        run = run.flag(f);
    }
    let mut controller = run.start(&ctx.cp, server, &ctx.log(&format!("latency-{}", which.name())))?;
    // Warm up: the controller has listed, synced once and is watching.
    let warm = format!("warm-{}.example.org", which.name());
    let created = ctx.cp.kube.apply(&o::cluster_ip_service(
        &ns,
        "warm",
        annotations(&[("internal-hostname", &warm)]),
    ))?;
    let ip = created["spec"]["clusterIP"].as_str().unwrap_or_default().to_string();
    answers(server, &mut controller, &warm, "A", &[&ip])?;
    // Let the sync the warm-up triggered finish, so the first sample does not wait for it.
    std::thread::sleep(Duration::from_secs(2));

    let mut samples = Vec::with_capacity(count);
    for i in 0..count {
        let host = format!("lat-{i}-{}.example.org", which.name());
        let svc = o::cluster_ip_service(&ns, &format!("lat-{i}"), annotations(&[("internal-hostname", &host)]));
        let t0 = Instant::now();
        ctx.cp.kube.apply(&svc)?;
        loop {
            if dns::query_a_count(server.port, &host, Duration::from_millis(200))?.is_some_and(|n| n > 0) {
                break;
            }
            if t0.elapsed() > CONVERGE {
                bail!(
                    "{}: {host} not answered after {:?}:\n{}",
                    which.name(),
                    CONVERGE,
                    controller.log_tail(20)
                );
            }
            if let Some(status) = controller.exited() {
                bail!("{} exited with {status}", which.name());
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        let took = t0.elapsed();
        eprintln!("  {} #{i}: {} ms", which.name(), took.as_millis());
        samples.push(took);
        std::thread::sleep(PAUSE);
    }
    controller.terminate(Duration::from_secs(5));
    Ok(Figures { which, samples })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_p99_are_nearest_rank() {
        let f = Figures {
            which: Which::Extdns,
            samples: (1..=100).map(Duration::from_millis).collect(),
        };
        assert_eq!(f.median(), Duration::from_millis(50));
        assert_eq!(f.p99(), Duration::from_millis(99));
        let small = Figures {
            which: Which::Extdns,
            samples: vec![
                Duration::from_millis(3),
                Duration::from_millis(1),
                Duration::from_millis(2),
            ],
        };
        assert_eq!(small.median(), Duration::from_millis(2));
        assert_eq!(small.p99(), Duration::from_millis(3));
    }
}
