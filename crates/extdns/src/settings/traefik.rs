//! `--source=traefik-proxy`: the `--traefik-*` flags on top of what every source shares.

use extdns_source::SourceConfig;
use extdns_source_service::ServiceSourceConfig;
use extdns_source_traefik::{TraefikService, TraefikSourceConfig};
use extdns_wiring::EnabledSource;

use super::{ValidationError, fail};
use crate::flags::Flags;

/// The Traefik source's configuration on top of `common`. `--traefik-service` names a Service the
/// informer must see: with `--namespace` set, Services are watched in that namespace only, so another
/// namespace is refused rather than never found. external-dns runs `--fqdn-target-template` on Traefik
/// routers too; extdns runs it on Services, Nodes and Pods only, so with the Traefik source selected it is
/// refused rather than silently publishing less than external-dns would (docs/migration.md).
pub(crate) fn config(
    flags: &Flags,
    enabled: &[EnabledSource],
    service: &ServiceSourceConfig,
    common: SourceConfig,
) -> Result<TraefikSourceConfig, ValidationError> {
    if enabled.contains(&EnabledSource::Traefik) && service.fqdn_target_template.is_some() {
        return fail(
            "--fqdn-target-template is not run on traefik-proxy routers by extdns (only on Services, Nodes and \
             Pods); remove it or run traefik-proxy with external-dns (see docs/migration.md)"
                .to_string(),
        );
    }
    let t = &flags.traefik;
    let service = match t.traefik_service.trim() {
        "" => None,
        value => {
            let service: TraefikService = value
                .parse()
                .map_err(|e| super::invalid(format!("--traefik-service: {e}")))?;
            if let Some(ns) = common.namespace.as_deref()
                && ns != service.namespace
            {
                return fail(format!(
                    "--traefik-service {service} is outside --namespace={ns}, where Services are watched"
                ));
            }
            Some(service)
        }
    };
    Ok(TraefikSourceConfig::new(
        common,
        t.traefik_enable_legacy,
        t.traefik_disable_new,
        service,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::tests::provider_flags;

    fn config_of(args: &[&str]) -> Result<TraefikSourceConfig, String> {
        let flags = provider_flags("inmemory", args);
        let mut common = SourceConfig::default();
        common.namespace = Some(flags.sources.namespace.clone()).filter(|n| !n.is_empty());
        config(
            &flags,
            &[EnabledSource::Traefik],
            &ServiceSourceConfig::default(),
            common,
        )
        .map_err(|e| e.0)
    }

    #[test]
    fn the_groups_and_the_service_are_read_from_their_flags() {
        let c = config_of(&[
            "--traefik-enable-legacy=true",
            "--traefik-disable-new=true",
            "--traefik-service=traefik/traefik",
        ])
        .expect("valid");
        assert!(c.enable_legacy && c.disable_new);
        assert_eq!(c.service.map(|s| s.to_string()).as_deref(), Some("traefik/traefik"));
        let d = config_of(&[]).expect("valid");
        assert!(!d.enable_legacy && !d.disable_new && d.service.is_none());
    }

    #[test]
    fn a_service_that_is_not_namespace_slash_name_or_outside_the_namespace_is_refused() {
        let e = config_of(&["--traefik-service=traefik"]).err().unwrap_or_default();
        assert!(e.starts_with("--traefik-service:"), "{e}");
        let e = config_of(&["--namespace=apps", "--traefik-service=traefik/traefik"])
            .err()
            .unwrap_or_default();
        assert!(e.contains("outside --namespace=apps"), "{e}");
        assert!(config_of(&["--namespace=traefik", "--traefik-service=traefik/traefik"]).is_ok());
    }
}
