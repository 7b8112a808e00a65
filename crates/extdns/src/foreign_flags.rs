//! Flags of external-dns v0.22 that belong to a source or provider extdns does not have. Given one, extdns
//! stops before anything starts and says whose flag it is, instead of clap's generic "unexpected argument":
//! the user learns that the flag is known, and what is missing.

/// Flag prefixes (a name is matched whole or up to a `-` after the prefix) and who reads them.
const OWNERS: &[(&str, &str)] = &[
    ("alibaba-cloud", "the alibabacloud provider"),
    ("aws-sd", "the aws-sd provider"),
    ("connector-source-server", "the connector source"),
    ("exoscale", "the exoscale provider"),
    ("gloo-namespace", "the gloo-proxy source"),
    ("godaddy", "the godaddy provider"),
    ("ns1", "the ns1 provider"),
    ("oci", "the oci provider"),
    ("ovh", "the ovh provider"),
    ("skipper-routegroup-groupversion", "the skipper-routegroup source"),
    ("unstructured-resource", "the unstructured source"),
];

/// The owner of a flag name (without `--`, `--no-` or `=value`), if it is one of those flags.
fn owner(name: &str) -> Option<&'static str> {
    OWNERS.iter().find_map(|(prefix, owner)| {
        let rest = name.strip_prefix(prefix)?;
        (rest.is_empty() || rest.starts_with('-')).then_some(*owner)
    })
}

/// The first argument before `--` that is such a flag, as a usage error (exit 2) naming its owner.
pub(crate) fn check(args: &[std::ffi::OsString]) -> Result<(), clap::Error> {
    for arg in args.iter().skip(1).take_while(|a| *a != "--") {
        let Some(flag) = arg.to_str().and_then(|a| a.strip_prefix("--")) else {
            continue;
        };
        let name = flag.split_once('=').map_or(flag, |(n, _)| n);
        let bare = name.strip_prefix("no-").filter(|n| owner(n).is_some()).unwrap_or(name);
        if let Some(owner) = owner(bare) {
            return Err(clap::Error::raw(
                clap::error::ErrorKind::UnknownArgument,
                format!(
                    "--{bare} is a flag of external-dns's {}, which extdns does not support yet\n",
                    owner.trim_start_matches("the ")
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(args: &[&str]) -> Option<String> {
        let args: Vec<std::ffi::OsString> = args.iter().map(Into::into).collect();
        check(&args).err().map(|e| e.to_string())
    }

    #[test]
    fn flags_of_missing_providers_and_sources_name_them() {
        let e = err(&["extdns", "--source=service", "--ovh-endpoint=ovh-eu"]).unwrap_or_default();
        assert!(
            e.contains("--ovh-endpoint is a flag of external-dns's ovh provider"),
            "{e}"
        );
        assert_eq!(
            err(&["extdns", "--google-project=p"]),
            None,
            "the google provider's flags are extdns's"
        );
        let e = err(&["extdns", "--no-unstructured-resource"]).unwrap_or_default();
        assert!(
            e.contains("--unstructured-resource") && e.contains("unstructured source"),
            "{e}"
        );
        assert_eq!(
            err(&["extdns", "--azure-resource-group", "rg"]),
            None,
            "the azure providers' flags are extdns's"
        );
        assert!(err(&["extdns", "--gloo-namespace=x"]).is_some_and(|e| e.contains("gloo-proxy source")));
        assert_eq!(
            err(&["extdns", "--pod-source-domain=x"]),
            None,
            "the pod source's flags are extdns's"
        );
    }

    #[test]
    fn other_flags_and_values_pass() {
        assert_eq!(err(&["extdns", "--aws-zone-type=public", "--source=service"]), None);
        assert_eq!(
            err(&["extdns", "--ingress-class=nginx", "--crd-source-kind=DNSEndpoint"]),
            None
        );
        assert_eq!(err(&["extdns", "--", "--google-project"]), None);
        assert_eq!(err(&["extdns", "--googler"]), None);
        assert_eq!(
            err(&["extdns", "--traefik-enable-legacy=true"]),
            None,
            "extdns has the traefik-proxy source"
        );
    }
}
