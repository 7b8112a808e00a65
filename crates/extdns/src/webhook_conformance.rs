//! `extdns webhook-conformance`: the conformance kit (extdns-webhook-conformance) as a command, so a webhook
//! author can check a server without writing Rust.

use std::io::Write;

use extdns_webhook_conformance::{Config, Error};

use crate::flags::WebhookConformanceArgs;
use crate::{EXIT_FAILURE, EXIT_USAGE};

/// Runs every check, prints one line per check and a summary to `out`, and returns the exit code: 0 when
/// every check passed, 1 when one failed or the kit could not run, 2 for a bad URL or zone.
pub async fn run(args: &WebhookConformanceArgs, out: &mut impl Write) -> u8 {
    let config = Config::new(&args.url).and_then(|c| match &args.zone {
        Some(zone) => c.with_zone(zone),
        None => Ok(c),
    });
    let config = match config {
        Ok(config) => config,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_USAGE;
        }
    };
    let report = match extdns_webhook_conformance::run(&config).await {
        Ok(report) => report,
        Err(e @ (Error::InvalidUrl { .. } | Error::UnsupportedScheme { .. } | Error::InvalidZone { .. })) => {
            eprintln!("error: {e}");
            return EXIT_USAGE;
        }
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_FAILURE;
        }
    };
    if let Err(e) = writeln!(out, "{report}") {
        eprintln!("error: cannot write the report: {e}");
        return EXIT_FAILURE;
    }
    if report.passed() { 0 } else { EXIT_FAILURE }
}
