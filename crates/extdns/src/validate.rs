//! Startup checks of flag combinations (§4 "Validation"), each failing with one line that names the flags
//! and what to do. They run before anything connects anywhere, so a bad Deployment fails fast and plainly.
//!
//! Two levels: [`sources`] checks what the sources and the pipeline read (both commands); [`controller`]
//! adds what only the controller reads (provider, registry, Kubernetes client), so `extdns endpoints`
//! accepts a Deployment's arguments without caring about its provider settings.

use extdns_endpoint::DomainFilter;
use extdns_source::FqdnTemplate;

use crate::flags::{Flags, ProviderName, RegistryName, SourceName};
use crate::wiring;

/// A configuration extdns refuses to start with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ValidationError(pub String);

fn fail<T>(message: impl Into<String>) -> Result<T, ValidationError> {
    Err(ValidationError(message.into()))
}

/// Sources extdns implements; the other external-dns names parse but are refused here.
pub fn is_supported(source: SourceName) -> bool {
    matches!(
        source,
        SourceName::Service
            | SourceName::GatewayHttpRoute
            | SourceName::GatewayGrpcRoute
            | SourceName::GatewayTlsRoute
            | SourceName::GatewayTcpRoute
            | SourceName::GatewayUdpRoute
    )
}

/// What the sources and the source pipeline read.
pub fn sources(flags: &Flags) -> Result<(), ValidationError> {
    let s = &flags.sources;
    if s.source.is_empty() {
        return fail("at least one --source is required");
    }
    if let Some(unsupported) = s.source.iter().find(|name| !is_supported(**name)) {
        return fail(format!("source {unsupported} is not supported by extdns yet"));
    }
    let fqdn_template = FqdnTemplate::parse(&s.fqdn_template)
        .map_err(|e| ValidationError(format!("--fqdn-template is not a valid template: {e}")))?;
    if s.ignore_hostname_annotation && fqdn_template.is_none() {
        return fail("--ignore-hostname-annotation requires at least one --fqdn-template");
    }
    if s.create_ptr && !flags.provider.managed_record_types.iter().any(|t| t == "PTR") {
        return fail("--create-ptr requires PTR in --managed-record-types (e.g. --managed-record-types=PTR)");
    }
    // Building the configurations checks the rest (prefix, selectors, templates, networks) with the same
    // code the commands then run.
    let common = wiring::source_config(flags)?;
    wiring::service_source_config(flags, common.clone())?;
    wiring::gateway_source_config(flags, common)?;
    wiring::pipeline_config(flags)?;
    Ok(())
}

/// Everything the controller reads: [`sources`] plus provider, registry and client settings.
pub fn controller(flags: &Flags) -> Result<(), ValidationError> {
    sources(flags)?;
    let k = &flags.kube;
    if k.kube_api_qps <= 0 {
        return fail(format!(
            "--kube-api-qps must be greater than 0 (got {})",
            k.kube_api_qps
        ));
    }
    if k.kube_api_burst <= 0 {
        return fail(format!(
            "--kube-api-burst must be greater than 0 (got {})",
            k.kube_api_burst
        ));
    }
    let Some(provider) = flags.provider.provider else {
        return fail("--provider is required (e.g. --provider=rfc2136 or --provider=inmemory)");
    };
    let p = &flags.provider;
    DomainFilter::with_regex(&p.regex_domain_filter, &p.regex_domain_exclusion)
        .map_err(|e| ValidationError(format!("--regex-domain-filter/--regex-domain-exclusion: {e}")))?;
    let r = &flags.registry;
    if !r.txt_prefix.is_empty() && !r.txt_suffix.is_empty() {
        return fail("--txt-prefix and --txt-suffix are mutually exclusive");
    }
    if r.registry != RegistryName::Noop && r.txt_owner_id.is_empty() {
        return fail(format!(
            "--txt-owner-id must not be empty with --registry={}",
            r.registry.as_str()
        ));
    }
    if provider == ProviderName::Rfc2136 {
        rfc2136(flags)?;
    }
    Ok(())
}

fn rfc2136(flags: &Flags) -> Result<(), ValidationError> {
    let r = &flags.rfc2136;
    if r.gss_tsig {
        return fail("Kerberos/GSS-TSIG is not supported by extdns (--rfc2136-gss-tsig); use TSIG keys instead");
    }
    if r.batch_change_size < 1 {
        return fail(format!(
            "--rfc2136-batch-change-size must be at least 1 (got {})",
            r.batch_change_size
        ));
    }
    // The provider checks the rest (TSIG key and algorithm, TLS files) when it is built.
    if r.host.iter().all(|h| h.trim().is_empty()) {
        return fail("--rfc2136-host is required with --provider=rfc2136");
    }
    if r.zone.iter().all(|z| z.trim().is_empty()) {
        return fail("--rfc2136-zone is required with --provider=rfc2136: name every zone extdns may update");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flags::try_parse_from;

    fn flags<S: AsRef<str>>(args: &[S]) -> Flags {
        match try_parse_from(std::iter::once("extdns").chain(args.iter().map(AsRef::as_ref))) {
            Ok(cli) => cli.flags,
            Err(e) => panic!("{:?}: {e}", args.iter().map(AsRef::as_ref).collect::<Vec<_>>()),
        }
    }

    fn sources_err<S: AsRef<str>>(args: &[S]) -> String {
        sources(&flags(args)).err().map(|e| e.0).unwrap_or_default()
    }

    fn controller_err<S: AsRef<str>>(args: &[S]) -> String {
        controller(&flags(args)).err().map(|e| e.0).unwrap_or_default()
    }

    const RFC2136: &[&str] = &[
        "--source=service",
        "--provider=rfc2136",
        "--rfc2136-host=127.0.0.1",
        "--rfc2136-zone=example.com",
        "--rfc2136-tsig-keyname=k",
        "--rfc2136-tsig-secret=c2VjcmV0",
    ];

    fn rfc2136_with(extra: &[&str]) -> Vec<String> {
        RFC2136.iter().chain(extra).map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_plain_configuration_is_valid() {
        assert_eq!(sources(&flags(&["--source=service"])), Ok(()));
        assert_eq!(controller(&flags(&["--source=service", "--provider=inmemory"])), Ok(()));
        assert_eq!(controller(&flags(RFC2136)), Ok(()));
    }

    #[test]
    fn ignore_hostname_annotation_requires_an_fqdn_template() {
        let e = sources_err(&["--source=service", "--ignore-hostname-annotation"]);
        assert_eq!(e, "--ignore-hostname-annotation requires at least one --fqdn-template");
        let ok = flags(&[
            "--source=service",
            "--ignore-hostname-annotation",
            "--fqdn-template={{.Name}}.example.com",
        ]);
        assert_eq!(sources(&ok), Ok(()));
    }

    #[test]
    fn unsupported_sources_are_a_clear_startup_error() {
        assert_eq!(
            sources_err(&["--source=service", "--source=ingress"]),
            "source ingress is not supported by extdns yet"
        );
    }

    #[test]
    fn selectors_must_parse() {
        let e = sources_err(&["--source=service", "--label-filter=a in (b"]);
        assert!(
            e.starts_with("--label-filter \"a in (b\" is not a valid selector"),
            "{e}"
        );
        let e = sources_err(&["--source=service", "--annotation-filter=a=b=c"]);
        assert!(e.starts_with("--annotation-filter"), "{e}");
        let e = sources_err(&["--source=service", "--gateway-label-filter=in in in"]);
        assert!(e.starts_with("--gateway-label-filter"), "{e}");
        assert_eq!(
            sources(&flags(&["--source=service", "--label-filter=app in (a,b),!skip"])),
            Ok(())
        );
    }

    #[test]
    fn annotation_prefix_must_end_with_a_slash() {
        let e = sources_err(&["--source=service", "--annotation-prefix=example.com"]);
        assert!(e.contains("--annotation-prefix") && e.contains("'/'"), "{e}");
        let e = sources_err(&["--source=service", "--annotation-prefix="]);
        assert!(e.contains("--annotation-prefix") && e.contains("empty"), "{e}");
        assert_eq!(
            sources(&flags(&["--source=service", "--annotation-prefix=example.com/"])),
            Ok(())
        );
    }

    #[test]
    fn templates_must_parse() {
        let e = sources_err(&["--source=service", "--fqdn-template={{.Name"]);
        assert!(e.starts_with("--fqdn-template is not a valid template"), "{e}");
        let e = sources_err(&["--source=service", "--fqdn-target-template={{end}}"]);
        assert!(e.starts_with("--fqdn-target-template is not a valid template"), "{e}");
    }

    #[test]
    fn networks_must_parse() {
        let e = sources_err(&["--source=service", "--target-net-filter=10.0.0.0/33"]);
        assert!(e.contains("--target-net-filter") && e.contains("10.0.0.0/33"), "{e}");
        let e = sources_err(&["--source=service", "--exclude-target-net=nope"]);
        assert!(e.contains("--exclude-target-net"), "{e}");
        let e = sources_err(&["--source=service", "--nat64-networks=64:ff9b::/64"]);
        assert!(e.contains("--nat64-networks") && e.contains("/96"), "{e}");
        let e = sources_err(&["--source=service", "--nat64-networks=10.0.0.0/96"]);
        assert!(e.contains("--nat64-networks"), "{e}");
        assert_eq!(
            sources(&flags(&["--source=service", "--nat64-networks=64:ff9b::/96"])),
            Ok(())
        );
    }

    #[test]
    fn create_ptr_requires_ptr_to_be_managed() {
        let e = sources_err(&["--source=service", "--create-ptr"]);
        assert!(
            e.starts_with("--create-ptr requires PTR in --managed-record-types"),
            "{e}"
        );
        let ok = flags(&[
            "--source=service",
            "--create-ptr",
            "--managed-record-types=A",
            "--managed-record-types=PTR",
        ]);
        assert_eq!(sources(&ok), Ok(()));
    }

    #[test]
    fn provider_is_required_by_the_controller_only() {
        let f = flags(&["--source=service"]);
        assert_eq!(sources(&f), Ok(()));
        assert!(controller_err(&["--source=service"]).starts_with("--provider is required"));
    }

    #[test]
    fn kube_client_rates_must_be_positive() {
        let e = controller_err(&["--source=service", "--provider=inmemory", "--kube-api-qps=0"]);
        assert_eq!(e, "--kube-api-qps must be greater than 0 (got 0)");
        let e = controller_err(&["--source=service", "--provider=inmemory", "--kube-api-burst=-1"]);
        assert_eq!(e, "--kube-api-burst must be greater than 0 (got -1)");
    }

    #[test]
    fn txt_prefix_and_suffix_are_mutually_exclusive() {
        let e = controller_err(&[
            "--source=service",
            "--provider=inmemory",
            "--txt-prefix=a-",
            "--txt-suffix=-b",
        ]);
        assert_eq!(e, "--txt-prefix and --txt-suffix are mutually exclusive");
    }

    #[test]
    fn txt_owner_id_must_not_be_empty() {
        let e = controller_err(&["--source=service", "--provider=inmemory", "--txt-owner-id="]);
        assert!(e.starts_with("--txt-owner-id must not be empty"), "{e}");
        let ok = flags(&[
            "--source=service",
            "--provider=inmemory",
            "--txt-owner-id=",
            "--registry=noop",
        ]);
        assert_eq!(controller(&ok), Ok(()));
    }

    #[test]
    fn regex_domain_filters_must_compile() {
        let e = controller_err(&["--source=service", "--provider=inmemory", "--regex-domain-filter=(a"]);
        assert!(e.starts_with("--regex-domain-filter"), "{e}");
    }

    #[test]
    fn rfc2136_gss_tsig_is_refused() {
        let e = controller_err(&rfc2136_with(&["--rfc2136-gss-tsig"]));
        assert!(e.starts_with("Kerberos/GSS-TSIG is not supported by extdns"), "{e}");
    }

    #[test]
    fn rfc2136_batch_size_must_be_at_least_one() {
        let e = controller_err(&rfc2136_with(&["--rfc2136-batch-change-size=0"]));
        assert_eq!(e, "--rfc2136-batch-change-size must be at least 1 (got 0)");
    }

    #[test]
    fn rfc2136_needs_a_host_and_a_zone() {
        let e = controller_err(&["--source=service", "--provider=rfc2136", "--rfc2136-zone=example.com"]);
        assert_eq!(e, "--rfc2136-host is required with --provider=rfc2136");
        let e = controller_err(&["--source=service", "--provider=rfc2136", "--rfc2136-host=ns1"]);
        assert!(
            e.starts_with("--rfc2136-zone is required with --provider=rfc2136"),
            "{e}"
        );
    }

    #[test]
    fn rfc2136_checks_apply_only_to_the_rfc2136_provider() {
        let f = flags(&[
            "--source=service",
            "--provider=inmemory",
            "--rfc2136-gss-tsig",
            "--rfc2136-batch-change-size=0",
        ]);
        assert_eq!(controller(&f), Ok(()));
    }

    #[test]
    fn provider_settings_do_not_affect_the_source_checks() {
        let f = flags(&[
            "--source=service",
            "--provider=rfc2136",
            "--rfc2136-gss-tsig",
            "--txt-prefix=a",
            "--txt-suffix=b",
        ]);
        assert_eq!(sources(&f), Ok(()));
    }
}
