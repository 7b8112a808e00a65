//! `extdns plan`: what the next sync would change in the live zone, without writing.
//!
//! Not a second planner: one full sync as a dry run ([`crate::dry_run`], which `extdns explain` shares),
//! with the controller built exactly as the default command builds it. The report of that sync is what is
//! printed. Exit codes follow `terraform plan -detailed-exitcode`: 0 when nothing would
//! change, [`EXIT_CHANGES`] when something would, 1 on any error.

use std::io::Write;
use std::sync::Arc;

use crate::dry_run::dry_run;
use crate::flags::{LogLevel, OutputFormat};
use crate::providers::build_provider;
use crate::settings::Settings;
use extdns_controller::SyncReport;
use extdns_provider::Provider;
pub use extdns_report::plan::{
    EXIT_CHANGES, exit_code, render_json, render_json_by_provider, render_json_with_shared, render_table,
    render_table_by_provider,
};

/// One dry-run sync with the provider the settings name.
pub async fn plan(settings: &Settings) -> anyhow::Result<SyncReport> {
    let provider = build_provider(&settings.provider).await?;
    plan_with(settings, provider).await
}

/// One dry-run sync with a given provider (tests use an in-memory provider they filled by a real sync).
pub async fn plan_with(settings: &Settings, provider: Arc<dyn Provider>) -> anyhow::Result<SyncReport> {
    Ok(dry_run(settings, provider).await?.report)
}

/// The command: plan, print in the chosen format, and return the exit code.
pub async fn run(settings: &Settings, output: OutputFormat, out: &mut dyn Write) -> anyhow::Result<u8> {
    let provider = build_provider(&settings.provider).await?;
    run_with(settings, provider, output, out).await
}

/// [`run`] with a given provider.
pub async fn run_with(
    settings: &Settings,
    provider: Arc<dyn Provider>,
    output: OutputFormat,
    out: &mut dyn Write,
) -> anyhow::Result<u8> {
    let run = dry_run(settings, provider).await?;
    let (report, shared) = (run.report, run.shared);
    let owner = settings.controller.plan.owner_id.as_str();
    // Shared names (issue 47): each owner's contribution and what pruning would do, after the changes,
    // from the read the sync planned from.
    let text = match output {
        OutputFormat::Table => render_table(&report, owner) + &crate::plan_shared::render(&shared, owner),
        OutputFormat::Json => render_json_with_shared(&report, owner, crate::plan_shared::to_json(&shared, owner)),
    };
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(exit_code(&report))
}

/// The log level of `extdns plan`: `info` (the default, and what a pasted Deployment says) logs warnings
/// and errors only, as its lines would repeat the table on stderr; any other level as asked.
pub fn log_level(level: LogLevel) -> LogLevel {
    match level {
        LogLevel::Info => LogLevel::Warning,
        other => other,
    }
}
