//! A provider object's command line: the deployment's with the object's flags applied, and what a
//! DNSProvider (a tenant's) may never take from the deployment. Pure text on argv: the binary parses the
//! result with the very clap command that parsed the deployment's.

use std::collections::BTreeSet;
use std::ffi::OsString;

use crate::FlagValue;

/// The flags that carry a secret a provider sends to the server it is configured with. A DNSProvider never
/// inherits the deployment's (from its command line or its `EXTERNAL_DNS_*` environment): a tenant naming a
/// server of its own would be sent the deployment's key. Its own Secret (or spec) gives them.
pub const SECRET_FLAGS: &[&str] = &[
    "rfc2136-tsig-secret",
    "rfc2136-kerberos-password",
    "pdns-api-key",
    "pihole-password",
];

/// Whether a DNSProvider's Secret may not set the environment variable `name`: one that names a file or
/// directory of the controller's (its service account token for IRSA or EKS Pod Identity, its cloud
/// config, its home with `~/.aws` and gcloud's files) would lend a tenant the controller's identity.
pub fn names_a_file(name: &str) -> bool {
    name.ends_with("_FILE")
        || matches!(
            name,
            "HOME" | "GOOGLE_APPLICATION_CREDENTIALS" | "CLOUDSDK_CONFIG" | "AZURE_AUTH_LOCATION" | "KUBECONFIG"
        )
}

/// The deployment's command line `base` with every occurrence of the flags `provider` sets taken out (both
/// `--x=v` and `--x v`, and a boolean's `--no-x`), then `provider`'s appended: a provider's flag replaces the
/// deployment's values, repeatable ones included. `--dns-provider-crds` is dropped: a provider is one
/// provider. `separate_value` says whether `--name` without `=` takes the next argument as its value.
pub fn command_line(base: &[OsString], provider: &[FlagValue], separate_value: impl Fn(&str) -> bool) -> Vec<OsString> {
    let mut replaced: BTreeSet<&str> = provider.iter().map(|f| f.flag.as_str()).collect();
    replaced.insert("dns-provider-crds");
    let mut out = Vec::with_capacity(base.len() + provider.len());
    let mut args = base.iter();
    if let Some(program) = args.next() {
        out.push(program.clone());
    }
    while let Some(arg) = args.next() {
        let text = arg.to_string_lossy();
        let Some(flag) = text.strip_prefix("--").filter(|f| !f.is_empty()) else {
            out.push(arg.clone());
            continue;
        };
        let (name, inline) = match flag.split_once('=') {
            Some((name, _)) => (name, true),
            None => (flag, false),
        };
        let value = (!inline && separate_value(name)).then(|| args.next()).flatten();
        let base_name = name
            .strip_prefix("no-")
            .filter(|n| replaced.contains(n))
            .unwrap_or(name);
        if replaced.contains(base_name) {
            continue;
        }
        out.push(arg.clone());
        out.extend(value.cloned());
    }
    out.extend(provider.iter().flat_map(FlagValue::to_args).map(OsString::from));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Flags that take a value apart, as the binary's clap command says for these.
    fn separate(name: &str) -> bool {
        matches!(name, "source" | "policy" | "annotation-filter" | "interval")
    }

    fn line(base: &[&str], provider: &[(&str, &[&str])]) -> Vec<String> {
        let base: Vec<OsString> = base.iter().map(OsString::from).collect();
        let provider: Vec<FlagValue> = provider
            .iter()
            .map(|(f, v)| FlagValue {
                flag: f.to_string(),
                values: v.iter().map(|s| s.to_string()).collect(),
            })
            .collect();
        command_line(&base, &provider, separate)
            .into_iter()
            .map(|s| s.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn a_provider_flag_replaces_every_occurrence_of_the_deployments_in_both_spellings() {
        let out = line(
            &[
                "extdns",
                "--source=service",
                "--source",
                "ingress",
                "--policy",
                "sync",
                "--dns-provider-crds",
                "--interval=30s",
                "--no-events",
            ],
            &[
                ("source", &["ingress"]),
                ("policy", &["upsert-only"]),
                ("events", &["true"]),
            ],
        );
        assert_eq!(
            out,
            [
                "extdns",
                "--interval=30s",
                "--source=ingress",
                "--policy=upsert-only",
                "--events=true"
            ]
        );
    }

    #[test]
    fn a_value_that_looks_like_a_flag_stays_with_its_flag() {
        let out = line(
            &["extdns", "--annotation-filter", "--source", "--source=service"],
            &[("source", &["crd"])],
        );
        assert_eq!(out, ["extdns", "--annotation-filter", "--source", "--source=crd"]);
    }

    #[test]
    fn a_tenant_may_not_name_the_controllers_files_in_its_environment() {
        for name in ["AWS_WEB_IDENTITY_TOKEN_FILE", "HOME", "KUBECONFIG"] {
            assert!(names_a_file(name), "{name}");
        }
        assert!(!names_a_file("CF_API_TOKEN"));
    }
}
