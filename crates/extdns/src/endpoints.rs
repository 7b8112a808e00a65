//! `extdns endpoints`: the sources run over manifest files, through the same pipeline the controller
//! builds, and the endpoints printed. Nothing here talks to a cluster or a DNS provider.

use std::io::Write;
use std::sync::Arc;

use extdns_endpoint::Endpoint;
use extdns_informer::SkippedKinds;
use extdns_informer::manifests::{self, ManifestError};
pub use extdns_report::endpoints::{render_json, render_table, sort};
use extdns_source::SourceError;
use extdns_source::resolver::Resolver;

use crate::flags::OutputFormat;
use crate::settings::{EndpointsSettings, ValidationError};
use crate::wiring;

/// Why `extdns endpoints` failed; decides the exit code.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EndpointsError {
    /// The settings cannot be put to work, e.g. no system resolver for hostname lookups (exit code 2).
    #[error(transparent)]
    Config(#[from] ValidationError),
    /// A manifest could not be read; the message names the file and the document.
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    /// A source could not evaluate the objects.
    #[error("source failed: {0}")]
    Source(#[from] SourceError),
    /// Standard output went away (a closed pipe).
    #[error("cannot write the output: {0}")]
    Output(#[from] std::io::Error),
}

/// The endpoints the configured sources produce from the manifests, sorted by name, type, set identifier
/// (then targets, so the order never depends on the input's), and the objects left out because extdns does
/// not read their kind: as the controller never watches them, a dump of a cluster (`kubectl get ... -A -o
/// yaml`: ConfigMaps, Deployments, ...) previews what the controller would publish from that cluster.
/// `resolver` answers `--resolve-service-load-balancer-hostname` lookups; the system resolver when `None`.
pub async fn collect_counting_skipped(
    settings: &EndpointsSettings,
    resolver: Option<Arc<dyn Resolver>>,
) -> Result<(Vec<Endpoint>, SkippedKinds), EndpointsError> {
    let resolver = match resolver {
        Some(r) => r,
        None => wiring::default_resolver(&settings.sources)?,
    };
    let pipeline = wiring::build_pipeline_with(&settings.sources, resolver);
    let mut options = settings.sources.load_options.clone();
    options.skip_unknown_kinds = true;
    let (cluster, skipped) = manifests::load_counting_skipped(&settings.manifests, &options)?;
    let output = pipeline.evaluate(&cluster, None).await?;
    for ((record_type, source), n) in &output.invalid {
        tracing::warn!(source = %source, record_type = %record_type, count = n, "invalid endpoints dropped");
    }
    let mut endpoints = output.endpoints;
    sort(&mut endpoints);
    Ok((endpoints, skipped))
}

/// The command: collect, then print in the chosen format on `out`, and on `err` one line counting the
/// objects skipped for their kind, if any.
pub async fn run(
    settings: &EndpointsSettings,
    output: OutputFormat,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<(), EndpointsError> {
    let (endpoints, skipped) = collect_counting_skipped(settings, None).await?;
    if !skipped.is_empty() {
        writeln!(err, "{skipped}")?;
    }
    let text = match output {
        OutputFormat::Json => render_json(&endpoints),
        OutputFormat::Table => render_table(&endpoints),
    };
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}
