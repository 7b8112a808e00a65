//! One provider object's settings: the deployment's command line with the provider's flags applied, checked by
//! the same parser and settings as any command line, with the provider's Secret as its environment.

use std::ffi::OsString;

use extdns_dnsprovider::{Credentials, FlagValue, ProviderId, ProviderObject, check_tenant, tenant_flags};
use extdns_source::ProviderRoute;

use crate::flags::{Cli, Command, Flags};
use crate::settings::fleet::FleetSettings;
use crate::settings::{self, Settings, SourceSettings, ValidationError};

/// The flags whose value is a file on the controller (`--azure-config-file`, `--tls-client-cert`, ...):
/// the controller's file is the controller's identity, so a DNSProvider may not name one and never inherits
/// the deployment's (or the default's). The reserved ones (`--kubeconfig`, `--manifests`) are refused anyway.
pub fn file_flags() -> Vec<String> {
    crate::flags::command()
        .get_arguments()
        .filter(|a| {
            a.get_value_names()
                .is_some_and(|n| n.iter().any(|n| n == "FILE" || n == "PATH"))
        })
        .filter_map(|a| a.get_long().map(str::to_string))
        .filter(|f| !extdns_dnsprovider::RESERVED_FLAGS.iter().any(|(r, _)| r == f))
        .collect()
}

/// The deployment's command line with `provider`'s flags applied ([`extdns_dnsprovider::command_line`]), each
/// flag's value syntax as the clap command has it.
pub fn command_line(base: &[OsString], provider: &[FlagValue]) -> Vec<OsString> {
    let command = crate::flags::command();
    extdns_dnsprovider::command_line(base, provider, |name| {
        command
            .get_arguments()
            .find(|a| a.get_long() == Some(name))
            .is_some_and(|a| a.get_action().takes_values() && !a.is_require_equals_set())
    })
}

/// Where a provider object's pipeline takes its records from, as the sources' admission check reads it.
pub fn route(id: &ProviderId) -> ProviderRoute {
    match id {
        ProviderId::Cluster { name } => ProviderRoute::cluster(name),
        ProviderId::Namespaced { namespace, name } => ProviderRoute::namespaced(namespace, name),
    }
}

/// The settings of `object`'s pipeline: its command line parsed and checked as the deployment's was, its
/// environment the Secret's variables (a ClusterDNSProvider's then the process's: ambient identity; a
/// DNSProvider's never, and the metadata server of the node is off for it), its sources among the
/// deployment's, its records routed to it.
pub fn provider_settings(
    fleet: &FleetSettings,
    object: &ProviderObject,
    credentials: &Credentials,
) -> Result<Settings, ValidationError> {
    let cli = parse(&fleet.args, object, &credentials.flags)?;
    check_tenant(object, credentials).map_err(|e| ValidationError(e.to_string()))?;
    let tenant = object.id.namespace().is_some();
    let env = |name: &str| credentials.env_var(name, tenant, |n| std::env::var(n).ok());
    let flags = command_flags(cli);
    let mut settings = settings::controller_with_env(&flags, &env)?;
    settings::log_warnings(&flags);
    watched(&fleet.sources, &settings.sources)?;
    settings.sources.set_route(route(&object.id));
    Ok(settings)
}

/// `object`'s command line (the deployment's `base`, a command's name included, with the object's flags and
/// `extra` applied), parsed by the same clap command.
pub fn parse(base: &[OsString], object: &ProviderObject, extra: &[FlagValue]) -> Result<Cli, ValidationError> {
    let mut flags = extdns_dnsprovider::flag_args(object).map_err(|e| ValidationError(e.to_string()))?;
    flags.extend(extra.iter().cloned());
    tenant_flags(object, &mut flags, file_flags()).map_err(|e| ValidationError(e.to_string()))?;
    crate::flags::try_parse_from(command_line(base, &flags)).map_err(|e| ValidationError(clap_message(&e)))
}

/// The flags of the command line's command (`extdns plan`'s, `extdns endpoints`'), or the controller's.
pub fn command_flags(cli: Cli) -> Flags {
    match cli.command {
        Some(Command::Endpoints(args)) => args.flags,
        Some(Command::Plan(args)) => args.flags,
        Some(Command::Explain(args)) => args.flags,
        _ => cli.flags,
    }
}

/// A provider's sources must be among the deployment's: the one set of informers watches only what those
/// read.
pub fn watched(deployment: &SourceSettings, provider: &SourceSettings) -> Result<(), ValidationError> {
    match provider.enabled.iter().find(|s| !deployment.enabled.contains(s)) {
        None => Ok(()),
        Some(extra) => Err(ValidationError(format!(
            "spec.config.source: the deployment does not watch what source {extra:?} reads; add it to the \
             deployment's --source"
        ))),
    }
}

/// clap's error as one line, without its usage block.
fn clap_message(e: &clap::Error) -> String {
    let text = e.to_string();
    let first = text.lines().next().unwrap_or_default();
    first.strip_prefix("error: ").unwrap_or(first).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fleet(args: &[&str]) -> FleetSettings {
        let line: Vec<OsString> = std::iter::once("extdns")
            .chain(args.iter().copied())
            .map(OsString::from)
            .collect();
        let cli = crate::flags::try_parse_from(&line).unwrap_or_else(|e| panic!("{e}"));
        crate::settings::fleet::fleet(&cli.flags, &line).unwrap_or_else(|e| panic!("{e}"))
    }

    fn object(id: ProviderId, spec: serde_json::Value) -> ProviderObject {
        let (kind, namespace) = match id.namespace() {
            Some(ns) => ("DNSProvider", Some(ns.to_string())),
            None => ("ClusterDNSProvider", None),
        };
        let o: kube::api::DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": "externaldns.k8s.io/v1alpha1", "kind": kind,
            "metadata": { "name": id.name(), "namespace": namespace, "generation": 1 },
            "spec": spec,
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        ProviderObject::from_dynamic(&o).unwrap_or_else(|e| panic!("{e}"))
    }

    fn secret(pairs: &[(&str, &str)]) -> Credentials {
        Credentials::from_secret("ns/s", pairs.iter().map(|(k, v)| (*k, v.as_bytes())))
            .unwrap_or_else(|e| panic!("{e}"))
    }

    fn token(s: &Settings) -> Option<String> {
        match &s.provider {
            crate::settings::ProviderSettings::Cloudflare(c) => match &c.auth {
                extdns_provider_cloudflare::Auth::Token(t) => Some(t.clone()),
                _ => None,
            },
            _ => None,
        }
    }

    /// Why `object`'s settings are refused with `credentials`, if they are.
    fn refusal(fleet: &FleetSettings, object: &ProviderObject, credentials: &Credentials) -> Option<String> {
        provider_settings(fleet, object, credentials)
            .err()
            .map(|e| e.to_string())
    }

    #[test]
    fn two_providers_of_one_type_each_see_only_their_own_secret() -> Result<(), ValidationError> {
        let fleet = fleet(&["--source=service", "--source=ingress", "--dns-provider-crds"]);
        let spec = serde_json::json!({ "type": "cloudflare", "domainFilter": { "include": ["example.com"] } });
        let a = object(ProviderId::Cluster { name: "a".into() }, spec.clone());
        let b = object(ProviderId::Cluster { name: "b".into() }, spec);
        let sa = provider_settings(&fleet, &a, &secret(&[("CF_API_TOKEN", "token-a")]))?;
        let sb = provider_settings(&fleet, &b, &secret(&[("CF_API_TOKEN", "token-b")]))?;
        assert_eq!(token(&sa).as_deref(), Some("token-a"));
        assert_eq!(token(&sb).as_deref(), Some("token-b"));
        assert_eq!(
            sa.controller.plan.owner_id, "a",
            "the owner id defaults to the object's name"
        );
        assert_eq!(sa.sources.common().route, Some(ProviderRoute::cluster("a")));
        Ok(())
    }

    #[test]
    fn a_dns_provider_gets_its_namespace_its_secret_and_nothing_of_the_process() {
        let fleet = fleet(&["--source=service", "--dns-provider-crds"]);
        let id = ProviderId::Namespaced {
            namespace: "team-a".into(),
            name: "zone".into(),
        };
        let o = object(id.clone(), serde_json::json!({ "type": "cloudflare" }));
        let e = refusal(&fleet, &o, &Credentials::default());
        assert!(
            e.is_some_and(|e| e.contains("CF_API_TOKEN")),
            "no process credentials for a tenant"
        );
        let s = provider_settings(&fleet, &o, &secret(&[("CF_API_TOKEN", "t")])).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.sources.common().namespace.as_deref(), Some("team-a"));
        assert_eq!(
            s.sources.common().route,
            Some(ProviderRoute::namespaced("team-a", "zone"))
        );
    }

    #[test]
    fn a_dns_provider_never_inherits_the_deployments_secret_flags() -> Result<(), ValidationError> {
        let base: Vec<OsString> = [
            "extdns",
            "--source=service",
            "--dns-provider-crds",
            "--pdns-api-key",
            "deploy",
        ]
        .iter()
        .map(OsString::from)
        .collect();
        let spec = serde_json::json!({ "type": "pdns", "config": { "pdns-server": "https://tenant.example" } });
        let tenant = object(
            ProviderId::Namespaced {
                namespace: "team-a".into(),
                name: "p".into(),
            },
            spec.clone(),
        );
        let cluster = object(ProviderId::Cluster { name: "p".into() }, spec);
        assert_eq!(command_flags(parse(&base, &tenant, &[])?).pdns.api_key, "");
        let own = [FlagValue {
            flag: "pdns-api-key".into(),
            values: vec!["tenant".into()],
        }];
        assert_eq!(command_flags(parse(&base, &tenant, &own)?).pdns.api_key, "tenant");
        assert_eq!(
            command_flags(parse(&base, &cluster, &[])?).pdns.api_key,
            "deploy",
            "a ClusterDNSProvider is the deployment's: it keeps its defaults"
        );
        Ok(())
    }

    #[test]
    fn a_dns_provider_may_not_name_or_inherit_the_controllers_files() {
        let fleet = fleet(&["--source=service", "--dns-provider-crds", "--tls-ca=/etc/ca.pem"]);
        let id = ProviderId::Namespaced {
            namespace: "team-a".into(),
            name: "p".into(),
        };
        let files = file_flags();
        for f in ["azure-config-file", "tls-client-cert", "tls-client-cert-key", "tls-ca"] {
            assert!(files.iter().any(|g| g == f), "{f} in {files:?}");
        }
        let named = object(
            id.clone(),
            serde_json::json!({ "type": "azure", "config": { "azure-config-file": "/etc/kubernetes/azure.json" } }),
        );
        let e = refusal(&fleet, &named, &Credentials::default());
        assert!(e.is_some_and(|e| e.contains("--azure-config-file")));
        // Azure's default file is the controller's too: not read for a tenant.
        let azure = object(id.clone(), serde_json::json!({ "type": "azure" }));
        let e = refusal(&fleet, &azure, &Credentials::default());
        assert!(
            e.as_ref().is_some_and(|e| !e.contains("/etc/kubernetes/azure.json")),
            "{e:?}"
        );
        let base = &fleet.args;
        let cli = parse(
            base,
            &object(id.clone(), serde_json::json!({ "type": "inmemory" })),
            &[],
        );
        assert_eq!(cli.map(|c| command_flags(c).provider.tls_ca).ok().as_deref(), Some(""));
        let google = object(id.clone(), serde_json::json!({ "type": "google" }));
        let e = refusal(&fleet, &google, &Credentials::default());
        assert!(
            e.is_some_and(|e| e.contains("metadata server")),
            "no GKE identity for a tenant"
        );
        for var in [
            "AWS_WEB_IDENTITY_TOKEN_FILE",
            "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
            "HOME",
        ] {
            let aws = object(id.clone(), serde_json::json!({ "type": "aws" }));
            let e = provider_settings(&fleet, &aws, &secret(&[(var, "/var/run/secrets/token")]))
                .err()
                .map(|e| e.to_string());
            assert!(e.is_some_and(|e| e.contains(var)), "{var}");
        }
    }

    #[test]
    fn a_bad_value_a_source_not_watched_and_a_reserved_key_are_refused_with_the_flag_named() {
        let fleet = fleet(&["--source=service", "--dns-provider-crds"]);
        for (config, named) in [
            (serde_json::json!({ "policy": "nonsense" }), "--policy"),
            (serde_json::json!({ "source": "ingress" }), "spec.config.source"),
            (serde_json::json!({ "txt-owner-id": "x" }), "spec.config.txt-owner-id"),
        ] {
            let o = object(
                ProviderId::Cluster { name: "p".into() },
                serde_json::json!({ "type": "inmemory", "config": config }),
            );
            let e = refusal(&fleet, &o, &Credentials::default());
            assert!(e.as_deref().is_some_and(|e| e.contains(named)), "{named}: {e:?}");
        }
    }
}
