//! `--provider=cloudflare`: the `--cloudflare-*` flags, the shared batch flags and external-dns's `CF_*`
//! credentials into the provider's configuration.

use extdns_endpoint::DomainFilter;
use extdns_provider_cloudflare::{Auth, CloudflareConfig};

use super::{Env, ValidationError, batching, env_value};
use crate::flags::Flags;

/// extdns's own variable pointing the provider at another API endpoint (a proxy, a test fake).
pub const BASE_URL_ENV: &str = "EXTDNS_CLOUDFLARE_API_URL";

/// The Cloudflare provider's configuration; `env` reads one environment variable (tests pass their own).
pub fn config(flags: &Flags, domain_filter: &DomainFilter, env: Env<'_>) -> Result<CloudflareConfig, ValidationError> {
    let f = &flags.cloudflare;
    let invalid = |m: String| Err(ValidationError(m));
    if f.custom_hostnames {
        return invalid("--cloudflare-custom-hostnames is not supported by extdns yet".into());
    }
    if f.regional_services {
        return invalid("--cloudflare-regional-services is not supported by extdns yet".into());
    }
    if !f.region_key.trim().is_empty() {
        return invalid(format!(
            "--cloudflare-region-key turns on Cloudflare's regional services, which extdns does not support yet \
             (got {:?})",
            f.region_key
        ));
    }
    for (flag, value, default) in [
        (
            "--cloudflare-custom-hostnames-min-tls-version",
            &f.custom_hostnames_min_tls_version,
            "1.0",
        ),
        (
            "--cloudflare-custom-hostnames-certificate-authority",
            &f.custom_hostnames_certificate_authority,
            "none",
        ),
    ] {
        if value.trim() != default {
            return invalid(format!(
                "{flag} configures Cloudflare custom hostnames, which extdns does not support yet (got {value:?})"
            ));
        }
    }
    let Ok(per_page @ 1..=5000) = u32::try_from(f.dns_records_per_page) else {
        return invalid(format!(
            "--cloudflare-dns-records-per-page must be between 1 and 5000 (got {})",
            f.dns_records_per_page
        ));
    };
    // --cloudflare-record-comment-limit (issue 50): Cloudflare's plans allow 100 or 500 characters.
    let comment_limit @ 1..=extdns_provider_cloudflare::comment::PAID_PLAN_COMMENT_LIMIT = f.record_comment_limit
    else {
        return invalid(format!(
            "--cloudflare-record-comment-limit must be between 1 and 500, the paid plans' limit (got {})",
            f.record_comment_limit
        ));
    };
    let batch = batching(
        "--batch-change-size",
        flags.provider.batch_change_size,
        flags.provider.batch_change_interval,
        true,
    )?;
    let auth = Auth::from_env(env).map_err(|e| ValidationError(e.to_string()))?;
    let mut config = CloudflareConfig::new(auth);
    if let Some(url) = env_value(env, BASE_URL_ENV) {
        config.base_url = url;
    }
    config.proxied_by_default = f.proxied;
    config.records_per_page = per_page;
    config.record_comment = Some(f.record_comment.clone()).filter(|c| !c.is_empty());
    config.comment_limit = comment_limit;
    config.batch = batch;
    // Each zone's plan sizes its batches (issue 50) unless --batch-change-size says otherwise.
    config.batch_size_by_plan = !flags.provider.batch_change_size_explicit;
    config.zones = super::zones(flags, domain_filter);
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::tests::{env_of, provider_flags};

    fn cloudflare(args: &[&str], env: &[(&str, &str)]) -> Result<CloudflareConfig, ValidationError> {
        config(
            &provider_flags("cloudflare", args),
            &DomainFilter::default(),
            &env_of(env),
        )
    }

    #[test]
    fn flags_and_token_are_read() {
        let c = cloudflare(
            &[
                "--cloudflare-proxied",
                "--cloudflare-dns-records-per-page=500",
                "--batch-change-size=50",
            ],
            &[("CF_API_TOKEN", "tok")],
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(c.proxied_by_default);
        assert_eq!((c.records_per_page, c.batch.size), (500, 50));
        assert!(
            !c.batch_size_by_plan,
            "--batch-change-size given overrides the zones' plans"
        );
        assert!(matches!(c.auth, Auth::Token(ref t) if t == "tok"));
        assert_eq!(c.base_url, extdns_provider_cloudflare::DEFAULT_BASE_URL);
    }

    /// Without `--batch-change-size`, each zone's plan sizes its batches (issue 50); given, even at its
    /// default value, it holds for every zone.
    #[test]
    fn the_batch_size_follows_the_plan_unless_given() {
        let token = [("CF_API_TOKEN", "t")];
        let c = cloudflare(&[], &token).unwrap_or_else(|e| panic!("{e}"));
        assert!(c.batch_size_by_plan);
        assert_eq!(c.batch.size, 200, "the fallback for an unknown plan");
        let c = cloudflare(&["--batch-change-size=200"], &token).unwrap_or_else(|e| panic!("{e}"));
        assert!(!c.batch_size_by_plan);
    }

    #[test]
    fn key_and_email_or_a_token_file_work_too() {
        let c = cloudflare(&[], &[("CF_API_KEY", "k"), ("CF_API_EMAIL", "a@b.c")]).unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(c.auth, Auth::Key { ref key, ref email } if key == "k" && email == "a@b.c"));
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("token");
        std::fs::write(&path, "from-file\n").unwrap_or_else(|e| panic!("{e}"));
        let c =
            cloudflare(&[], &[("CF_API_TOKEN", &format!("file:{}", path.display()))]).unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(c.auth, Auth::Token(ref t) if t == "from-file"));
    }

    /// `--cloudflare-record-comment-limit` (issue 50): the Free plan's 100 by default, up to the paid plans' 500.
    #[test]
    fn the_comment_limit_is_the_free_plans_unless_raised_to_at_most_500() {
        let token = [("CF_API_TOKEN", "t")];
        let limit = |args: &[&str]| cloudflare(args, &token).map(|c| c.comment_limit);
        assert_eq!(limit(&[]).ok(), Some(100));
        assert_eq!(limit(&["--cloudflare-record-comment-limit=500"]).ok(), Some(500));
        for bad in [
            "--cloudflare-record-comment-limit=0",
            "--cloudflare-record-comment-limit=501",
        ] {
            let e = limit(&[bad]).err();
            assert!(
                e.is_some_and(|e| e.0.starts_with("--cloudflare-record-comment-limit must be")),
                "{bad}"
            );
        }
    }

    #[test]
    fn bad_settings_are_named() {
        let e = cloudflare(&[], &[]).err();
        assert!(e.is_some_and(|e| e.0.contains("CF_API_TOKEN")));
        let e = cloudflare(&["--cloudflare-dns-records-per-page=5001"], &[("CF_API_TOKEN", "t")]).err();
        assert!(e.is_some_and(|e| e.0.contains("--cloudflare-dns-records-per-page")));
        let e = cloudflare(&["--cloudflare-custom-hostnames"], &[("CF_API_TOKEN", "t")]).err();
        assert!(e.is_some_and(|e| e.0.contains("--cloudflare-custom-hostnames")));
        let e = cloudflare(&["--cloudflare-region-key=eu"], &[("CF_API_TOKEN", "t")]).err();
        assert!(e.is_some_and(|e| e.0.starts_with("--cloudflare-region-key turns on")));
        let e = cloudflare(
            &["--cloudflare-custom-hostnames-certificate-authority=google"],
            &[("CF_API_TOKEN", "t")],
        )
        .err();
        assert!(e.is_some_and(|e| {
            e.0.starts_with("--cloudflare-custom-hostnames-certificate-authority configures")
        }));
        assert!(
            cloudflare(
                &["--cloudflare-custom-hostnames-min-tls-version=1.0"],
                &[("CF_API_TOKEN", "t")]
            )
            .is_ok()
        );
    }
}
