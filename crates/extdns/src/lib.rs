//! The extdns command line: external-dns's flags, read once into [`Settings`], and the wiring of trait
//! objects from those settings. The binary (`main.rs`) only calls [`main`]; tests call the same code.
//!
//! Four commands share every flag: the controller (no subcommand, [`run`]), `extdns endpoints`, the
//! preview that runs the sources over manifest files, `extdns plan` ([`plan`]), the changes the next
//! sync would make, and `extdns explain` ([`explain`]), why a name is or is not in DNS. `extdns webhook-conformance` takes no controller flag: it checks a webhook provider
//! server ([`webhook_conformance`]).
//!
//! ```
//! // Flags are external-dns's, read once into settings; bad configuration is refused before anything runs.
//! let cli = extdns::flags::try_parse_from([
//!     "extdns", "--source=service", "--provider=inmemory", "--txt-owner-id=my-cluster",
//! ])?;
//! let settings = extdns::settings::controller(&cli.flags)?;
//! assert_eq!(settings.provider.name(), "inmemory");
//!
//! let cli = extdns::flags::try_parse_from(["extdns", "--source=service"])?;
//! let refused = extdns::settings::controller(&cli.flags).err().map(|e| e.to_string());
//! assert!(refused.is_some_and(|e| e.contains("--provider is required")));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

// The kube-facing sinks live in their own crate; re-exported here so `crate::events::KubeEvents` and
// `crate::crd_status::CrdStatus` keep naming them.
pub use extdns_kube_sinks::crd_status;
pub mod allocator;
pub mod dns_providers;
pub mod dns_server;
pub mod dnssec_keys;
pub mod dnssec_rollover;
pub mod dry_run;
pub mod endpoints;
pub use extdns_kube_sinks::events;
pub mod flags;
mod foreign_flags;
pub mod logging;
pub mod plan;
pub mod plan_shared;
pub mod priority;
pub mod providers;
pub mod run;
pub mod settings;
pub mod webhook_conformance;
pub mod webhook_server;
pub mod wiring;
// --- extdns explain (issue 48) ---
pub mod explain;

use std::ffi::OsString;
use std::process::ExitCode;

pub use flags::{Cli, Command, DnssecCommand, Flags};
pub use settings::{Settings, ValidationError};
pub use wiring::build_pipeline;

/// Exit code of a bad command line or configuration (as clap uses for parse errors).
pub const EXIT_USAGE: u8 = 2;
/// Exit code of a failed run (bad manifests, a controller error).
pub const EXIT_FAILURE: u8 = 1;

/// Run extdns with these arguments (the first is the program name) and return its exit code.
pub fn main<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString>,
{
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    let command_line = args.clone();
    // `extdns plan` exits 2 when the zone would change, so its usage errors exit 1 like its other errors;
    // so do `extdns explain`'s, whose other codes a CI job gates on.
    let planning = args.get(1).is_some_and(|a| a == "plan" || a == "explain");
    let cli = match flags::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            let code = match e.exit_code() {
                0 => 0,
                _ if planning => EXIT_FAILURE,
                code => u8::try_from(code).unwrap_or(EXIT_USAGE),
            };
            return ExitCode::from(code);
        }
    };
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if dns_server::answers_first(&cli) {
        // Every thread of this runtime does the controller's work; the answers run on threads started
        // apart (`priority`).
        builder.on_thread_start(priority::lower_this_thread);
    }
    let runtime = match builder.enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(EXIT_FAILURE);
        }
    };
    match dispatch(cli, &command_line, &runtime) {
        Ok(code) | Err(code) => code,
    }
}

/// The command the command line names, run to its exit code; `Err` is a configuration refused before
/// anything ran.
fn dispatch(cli: Cli, command_line: &[OsString], runtime: &tokio::runtime::Runtime) -> Result<ExitCode, ExitCode> {
    let code = match cli.command {
        None if cli.flags.webhook.webhook_server => {
            let settings = checked(&cli.flags, settings::webhook::server)?;
            checked(&cli.flags, |f| {
                settings::dns_server::dnssec_refused_here(f, "--webhook-server")
            })?;
            settings::log_warnings(&cli.flags);
            exit(runtime.block_on(webhook_server::run(&settings)).map(|()| 0))
        }
        None if cli.flags.provider.dns_provider_crds => {
            let fleet = checked(&cli.flags, |f| settings::fleet::fleet(f, command_line))?;
            checked(&cli.flags, |f| {
                settings::dns_server::dnssec_refused_here(f, "--dns-provider-crds")
            })?;
            exit(runtime.block_on(dns_providers::run(&fleet)).map(|()| 0))
        }
        None => {
            let settings = checked(&cli.flags, settings::controller)?;
            let dnssec = checked(&cli.flags, settings::dns_server::dnssec)?;
            settings::log_warnings(&cli.flags);
            let run = async { run::run(&dnssec_rollover::with_keys(settings, dnssec.as_ref()).await?).await };
            match runtime.block_on(run) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("error: {}", error_text(&e));
                    // A provider or registry that cannot be built from the flags is bad configuration,
                    // whether it is found while checking the flags or while wiring them.
                    let usage = e.chain().any(|c| c.is::<ValidationError>());
                    ExitCode::from(if usage { EXIT_USAGE } else { EXIT_FAILURE })
                }
            }
        }
        Some(Command::Endpoints(args)) => {
            let settings = checked(&args.flags, settings::endpoints)?;
            let (mut stdout, mut stderr) = (std::io::stdout().lock(), std::io::stderr());
            let run = async {
                if args.flags.provider.dns_provider_crds {
                    let output = args.output;
                    dns_providers::preview::run(command_line, &settings, output, &mut stdout, &mut stderr).await
                } else {
                    endpoints::run(&settings, args.output, &mut stdout, &mut stderr).await
                }
            };
            match runtime.block_on(run) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::from(endpoints_exit_code(&e))
                }
            }
        }
        Some(Command::Plan(args)) if args.flags.provider.dns_provider_crds => {
            let fleet = for_plan(&args.flags, |f| settings::fleet::for_plan(f, command_line))?;
            let (mut stdout, mut stderr) = (std::io::stdout().lock(), std::io::stderr());
            let manifests = &args.flags.offline.manifests;
            let plan = dns_providers::plan::run(&fleet, manifests, args.output, &mut stdout, &mut stderr);
            exit(runtime.block_on(plan))
        }
        Some(Command::Plan(args)) => {
            let settings = for_plan(&args.flags, settings::controller)?;
            settings::log_warnings(&args.flags);
            let mut stdout = std::io::stdout().lock();
            exit(runtime.block_on(plan::run(&settings, args.output, &mut stdout)))
        }
        Some(Command::Explain(args)) if args.flags.provider.dns_provider_crds => {
            let fleet = for_plan(&args.flags, |f| settings::fleet::for_plan(f, command_line))?;
            let (mut stdout, mut stderr) = (std::io::stdout().lock(), std::io::stderr());
            let manifests = &args.flags.offline.manifests;
            let explain =
                dns_providers::explain::run(&fleet, manifests, &args.target, args.output, &mut stdout, &mut stderr);
            exit(runtime.block_on(explain))
        }
        Some(Command::Explain(args)) => {
            let settings = for_plan(&args.flags, settings::controller)?;
            settings::log_warnings(&args.flags);
            let mut stdout = std::io::stdout().lock();
            exit(runtime.block_on(explain::run(&settings, &args.target, args.output, &mut stdout)))
        }
        Some(Command::WebhookConformance(args)) => {
            let mut stdout = std::io::stdout().lock();
            ExitCode::from(runtime.block_on(webhook_conformance::run(&args, &mut stdout)))
        }
        Some(Command::Dnssec(command)) => {
            let (DnssecCommand::Ds(args)
            | DnssecCommand::Secret(args)
            | DnssecCommand::Rollover(flags::RolloverArgs { dnssec: args, .. })) = &command;
            let settings = checked(&args.flags, settings::controller)?;
            let dnssec = checked(&args.flags, settings::dns_server::dnssec)?;
            let mut stdout = std::io::stdout().lock();
            let zones = &args.zone;
            exit(match command {
                DnssecCommand::Ds(_) => {
                    runtime.block_on(dnssec_keys::print_ds(&settings, dnssec.as_ref(), zones, &mut stdout))
                }
                DnssecCommand::Secret(_) => dnssec_keys::print_secret(dnssec.as_ref(), zones, &mut stdout),

                DnssecCommand::Rollover(ref rollover) => runtime.block_on(dnssec_rollover::rollover(
                    &settings,
                    dnssec.as_ref(),
                    zones,
                    rollover.ds_swapped,
                    &mut stdout,
                )),
            })
        }
    };
    Ok(code)
}

/// A command's exit code, or its error (with its causes) on stderr and [`EXIT_FAILURE`].
fn exit(result: anyhow::Result<u8>) -> ExitCode {
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("error: {}", error_text(&e));
            ExitCode::from(EXIT_FAILURE)
        }
    }
}

/// The settings `check` reads from `flags`, then logging started as the flags say. A configuration extdns
/// refuses is reported before anything runs, with the usage exit code.
fn checked<S>(flags: &Flags, check: impl FnOnce(&Flags) -> Result<S, ValidationError>) -> Result<S, ExitCode> {
    let settings = check(flags).map_err(|e| {
        eprintln!("error: {e}");
        ExitCode::from(EXIT_USAGE)
    })?;
    logging::init(flags.control.log_format, flags.control.log_level);
    Ok(settings)
}

/// [`checked`] for `extdns plan`: a refused configuration exits 1 (2 means changes), and logging starts at
/// the plan's level ([`plan::log_level`]).
fn for_plan<S>(flags: &Flags, check: impl FnOnce(&Flags) -> Result<S, ValidationError>) -> Result<S, ExitCode> {
    let settings = check(flags).map_err(|e| {
        eprintln!("error: {e}");
        ExitCode::from(EXIT_FAILURE)
    })?;
    logging::init(flags.control.log_format, plan::log_level(flags.control.log_level));
    Ok(settings)
}

/// An error and its causes on one line. Our errors' messages already include their cause's text (see
/// DESIGN.md), contexts added on the way up do not: a cause is appended only when the message so far does
/// not already say it, so nothing is printed twice.
pub fn error_text(e: &anyhow::Error) -> String {
    let mut text = e.to_string();
    for cause in e.chain().skip(1) {
        let cause = cause.to_string();
        if !text.contains(&cause) {
            text.push_str(": ");
            text.push_str(&cause);
        }
    }
    text
}

/// A bad configuration exits 2; bad input or a failure exits 1.
fn endpoints_exit_code(e: &endpoints::EndpointsError) -> u8 {
    match e {
        endpoints::EndpointsError::Config(_) => EXIT_USAGE,
        _ => EXIT_FAILURE,
    }
}
