//! `extdns endpoints`: the sources run over manifest files, through the same pipeline the controller
//! builds, and the endpoints printed. Nothing here talks to a cluster or a DNS provider.

use std::io::Write;
use std::sync::Arc;

use extdns_endpoint::Endpoint;
use extdns_informer::SkippedKinds;
use extdns_informer::manifests::{self, ManifestError};
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
/// (then targets, so the order never depends on the input's). `resolver` answers
/// `--resolve-service-load-balancer-hostname` lookups; the system resolver when `None`.
pub async fn collect(
    settings: &EndpointsSettings,
    resolver: Option<Arc<dyn Resolver>>,
) -> Result<Vec<Endpoint>, EndpointsError> {
    Ok(collect_counting_skipped(settings, resolver).await?.0)
}

/// [`collect`], and the objects left out because extdns does not read their kind: as the controller
/// never watches them, a dump of a cluster (`kubectl get ... -A -o yaml`: ConfigMaps, Deployments, ...)
/// previews what the controller would publish from that cluster.
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

/// By name, type, set identifier, then targets.
pub fn sort(endpoints: &mut [Endpoint]) {
    endpoints.sort_by(|a, b| {
        (&a.dns_name, a.record_type.as_str(), &a.set_identifier, &a.targets.0).cmp(&(
            &b.dns_name,
            b.record_type.as_str(),
            &b.set_identifier,
            &b.targets.0,
        ))
    });
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

/// A JSON array with external-dns's field names (empty fields omitted), pretty-printed, newline-terminated.
pub fn render_json(endpoints: &[Endpoint]) -> String {
    let mut s = serde_json::to_string_pretty(endpoints).unwrap_or_else(|_| "[]".to_string());
    s.push('\n');
    s
}

/// The table's columns.
pub(crate) const COLUMNS: [&str; 5] = ["NAME", "TYPE", "TTL", "TARGETS", "SET-ID"];

/// Aligned columns NAME TYPE TTL TARGETS SET-ID; an unset TTL and an empty set identifier print as `-`.
pub fn render_table(endpoints: &[Endpoint]) -> String {
    let header = COLUMNS.map(String::from).to_vec();
    aligned(std::iter::once(header).chain(endpoints.iter().map(row)).collect())
}

/// One endpoint's cells, in [`COLUMNS`]' order.
pub(crate) fn row(e: &Endpoint) -> Vec<String> {
    vec![
        e.dns_name.clone(),
        e.record_type.to_string(),
        if e.record_ttl.is_configured() {
            e.record_ttl.0.to_string()
        } else {
            "-".into()
        },
        e.targets.join(","),
        if e.set_identifier.is_empty() {
            "-".into()
        } else {
            e.set_identifier.clone()
        },
    ]
}

/// Rows as columns three spaces apart, each as wide as its widest cell (counted in characters), the last
/// one unpadded; the tables of `extdns endpoints` and `extdns plan`.
pub(crate) fn aligned(rows: Vec<Vec<String>>) -> String {
    let mut widths: Vec<usize> = Vec::new();
    for row in &rows {
        widths.resize(widths.len().max(row.len()), 0);
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in &rows {
        let mut line = String::new();
        for (i, (cell, w)) in row.iter().zip(&widths).enumerate() {
            line.push_str(cell);
            if i + 1 < row.len() {
                line.push_str(&" ".repeat(w - cell.chars().count() + 3));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use extdns_endpoint::{RecordType, Ttl};

    #[test]
    fn endpoints_sort_by_name_type_and_set_identifier() {
        let mut eps = vec![
            Endpoint::new("b.example.com", RecordType::A, ["1.1.1.1"]),
            Endpoint::new("a.example.com", RecordType::Cname, ["x.example.com"]),
            Endpoint::new("a.example.com", RecordType::A, ["2.2.2.2"]).with_set_identifier("west"),
            Endpoint::new("a.example.com", RecordType::A, ["1.1.1.1"]).with_set_identifier("east"),
        ];
        sort(&mut eps);
        let keys: Vec<_> = eps
            .iter()
            .map(|e| format!("{} {} {}", e.dns_name, e.record_type, e.set_identifier))
            .collect();
        assert_eq!(
            keys,
            [
                "a.example.com A east",
                "a.example.com A west",
                "a.example.com CNAME ",
                "b.example.com A "
            ]
        );
    }

    #[test]
    fn json_output_uses_external_dns_field_names() -> Result<(), serde_json::Error> {
        let e = Endpoint::new("a.example.com", RecordType::A, ["1.2.3.4"])
            .with_ttl(Ttl(60))
            .with_set_identifier("s");
        let v: serde_json::Value = serde_json::from_str(&render_json(&[e]))?;
        assert_eq!(
            v,
            serde_json::json!([{"dnsName": "a.example.com", "targets": ["1.2.3.4"], "recordType": "A",
                "setIdentifier": "s", "recordTTL": 60}])
        );
        assert_eq!(render_json(&[]), "[]\n");
        Ok(())
    }

    #[test]
    fn table_output_aligns_columns() {
        let eps = [
            Endpoint::new("web.example.com", RecordType::A, ["1.2.3.4", "5.6.7.8"]).with_ttl(Ttl(300)),
            Endpoint::new("x.io", RecordType::Cname, ["lb.example.com"]).with_set_identifier("blue"),
        ];
        let table = render_table(&eps);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0], "NAME              TYPE    TTL   TARGETS           SET-ID");
        assert_eq!(lines[1], "web.example.com   A       300   1.2.3.4,5.6.7.8   -");
        assert_eq!(lines[2], "x.io              CNAME   -     lb.example.com    blue");
    }
}
