//! `extdns endpoints --dns-provider-crds`: the DNSProvider and ClusterDNSProvider objects among the manifests,
//! each one's sources run over the same objects as its pipeline would run them (its command line, its route,
//! its namespace), and each record shown with the provider it goes to (its domain filter applied). Nothing
//! here talks to a cluster or a provider, and no Secret is read: what a provider would publish does not depend
//! on its credentials.

use std::ffi::OsString;
use std::io::Write;
use std::sync::Arc;

use extdns_dnsprovider::{ProviderObject, decode_all, manifest_kinds};
use extdns_endpoint::{DomainFilter, Endpoint};
use extdns_informer::{SkippedKinds, load_keeping};
use extdns_report::endpoints::{Routed, render_json_by_provider, render_table_by_provider, sort};
use extdns_source::resolver::Resolver;

use crate::endpoints::EndpointsError;
use crate::flags::OutputFormat;
use crate::settings::{self, EndpointsSettings, ValidationError};
use crate::wiring;

/// What the preview found.
#[derive(Debug, Default)]
pub struct Preview {
    /// Every provider's records, by provider label, then as `extdns endpoints` sorts them.
    pub routed: Vec<Routed>,
    /// The objects left out for their kind.
    pub skipped: SkippedKinds,
    /// The provider objects left out, each with why (a spec or a flag its pipeline would refuse too).
    pub refused: Vec<String>,
}

/// The records each provider object of the manifests would publish. `command_line` is the command's own
/// (program name first), every provider's defaults as the deployment's are.
pub async fn collect(
    command_line: &[OsString],
    settings: &EndpointsSettings,
    resolver: Option<Arc<dyn Resolver>>,
) -> Result<Preview, EndpointsError> {
    let resolver = match resolver {
        Some(r) => r,
        None => wiring::default_resolver(&settings.sources)?,
    };
    let mut options = settings.sources.load_options.clone();
    options.skip_unknown_kinds = true;
    options.keep_kinds = manifest_kinds();
    let (loaded, skipped) = load_keeping(&settings.manifests, &options)?;
    let (objects, mut refused) = decode_all(loaded.kept);
    let mut routed = Vec::new();
    for object in &objects {
        let (sources, filter) = match provider_sources(command_line, settings, object) {
            Ok(s) => s,
            Err(e) => {
                refused.push(format!("{}: {e}", object.id));
                continue;
            }
        };
        let output = wiring::build_pipeline_with(&sources, resolver.clone())
            .evaluate(&loaded.store, None)
            .await?;
        let mut endpoints: Vec<Endpoint> = output
            .endpoints
            .into_iter()
            .filter(|e| filter.matches(&e.dns_name))
            .collect();
        sort(&mut endpoints);
        let provider = object.id.label();
        routed.extend(endpoints.into_iter().map(|endpoint| Routed {
            provider: provider.clone(),
            endpoint,
        }));
    }
    Ok(Preview {
        routed,
        skipped,
        refused,
    })
}

/// `object`'s sources (its route and namespace set) and domain filter, from the command line as its pipeline
/// would have it.
fn provider_sources(
    command_line: &[OsString],
    settings: &EndpointsSettings,
    object: &ProviderObject,
) -> Result<(settings::SourceSettings, DomainFilter), ValidationError> {
    let flags = super::args::command_flags(super::args::parse(command_line, object, &[])?);
    let mut sources = settings::sources(&flags)?;
    super::args::watched(&settings.sources, &sources)?;
    sources.set_route(super::args::route(&object.id));
    Ok((sources, settings::domain_filter(&flags)?))
}

/// The command: collect, then print in the chosen format on `out`; on `err` one line for each provider
/// object left out and one counting the objects skipped for their kind.
pub async fn run(
    command_line: &[OsString],
    settings: &EndpointsSettings,
    output: OutputFormat,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<(), EndpointsError> {
    let preview = collect(command_line, settings, None).await?;
    for why in &preview.refused {
        writeln!(err, "provider left out: {why}")?;
    }
    if !preview.skipped.is_empty() {
        writeln!(err, "{}", preview.skipped)?;
    }
    let text = match output {
        OutputFormat::Json => render_json_by_provider(&preview.routed),
        OutputFormat::Table => render_table_by_provider(&preview.routed),
    };
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flags::Command;
    use extdns_source::resolver::StaticResolver;

    const OBJECTS: &str = r#"
apiVersion: externaldns.k8s.io/v1alpha1
kind: ClusterDNSProvider
metadata: { name: internal }
spec: { type: inmemory, domainFilter: { include: [example.org] } }
---
apiVersion: externaldns.k8s.io/v1alpha1
kind: ClusterDNSProvider
metadata: { name: public }
spec:
  type: inmemory
  domainFilter: { include: [example.org] }
  config: { annotation-filter: external-dns.kubernetes.io/cluster-provider }
---
apiVersion: externaldns.k8s.io/v1alpha1
kind: DNSProvider
metadata: { name: zone, namespace: team-a }
spec: { type: inmemory, domainFilter: { include: [team-a.example.com] } }
---
apiVersion: externaldns.k8s.io/v1alpha1
kind: ClusterDNSProvider
metadata: { name: wrong }
spec: { type: inmemory, config: { source: ingress } }
---
apiVersion: v1
kind: Service
metadata:
  name: app
  namespace: team-a
  annotations: { external-dns.alpha.kubernetes.io/hostname: app.team-a.example.com }
spec: { type: LoadBalancer }
status: { loadBalancer: { ingress: [ { ip: 10.0.0.3 } ] } }
---
"#;

    #[tokio::test]
    async fn each_record_is_shown_with_every_provider_it_goes_to() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let line = super::super::tests::manifests_line(
            "endpoints",
            dir.path(),
            &[
                OBJECTS,
                super::super::tests::SHOP_SERVICE,
                super::super::tests::WEB_SERVICE,
            ]
            .concat(),
        )?;
        let cli = crate::flags::try_parse_from(&line)?;
        let Some(Command::Endpoints(args)) = cli.command else {
            return Err("not the endpoints command".into());
        };
        let settings = settings::endpoints(&args.flags)?;
        let preview = collect(&line, &settings, Some(Arc::new(StaticResolver::new()))).await?;
        let shown: Vec<String> = preview
            .routed
            .iter()
            .map(|r| format!("{} {}", r.provider, r.endpoint.dns_name))
            .collect();
        assert_eq!(
            shown,
            [
                "internal shop.example.org",
                "internal web.example.org",
                "public shop.example.org",
                "team-a/zone app.team-a.example.com",
            ]
        );
        assert_eq!(preview.refused.len(), 1, "{:?}", preview.refused);
        assert!(preview.refused[0].contains("wrong") && preview.refused[0].contains("spec.config.source"));
        let table = render_table_by_provider(&preview.routed);
        assert!(table.starts_with("PROVIDER      NAME"), "{table}");
        let json: serde_json::Value = serde_json::from_str(&render_json_by_provider(&preview.routed))?;
        assert_eq!(json[3]["provider"], "team-a/zone");
        assert_eq!(json[3]["dnsName"], "app.team-a.example.com");
        Ok(())
    }
}
