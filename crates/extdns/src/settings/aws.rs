//! `--provider=aws` from external-dns's `--aws-*` flags and the standard AWS environment (credentials,
//! region, endpoint). Checked here so a wrong value fails at startup naming its flag or variable.

use extdns_endpoint::DomainFilter;
use extdns_provider_aws::{AssumeRole, AwsConfig, CredentialSource, ZoneType};

use super::{Env, ValidationError, batching, count};
use crate::flags::Flags;

/// The Route53 provider's configuration; `var` reads one environment variable (tests pass their own).
pub fn config(flags: &Flags, domain_filter: &DomainFilter, var: Env<'_>) -> Result<AwsConfig, ValidationError> {
    let f = &flags.aws;
    let profiles: Vec<&str> = f.profile.iter().map(|p| p.trim()).filter(|p| !p.is_empty()).collect();
    if profiles.len() > 1 {
        return Err(ValidationError(format!(
            "--aws-profile was given {} times ({}): extdns manages the zones of one profile; run one extdns per \
             account",
            profiles.len(),
            profiles.join(", ")
        )));
    }
    let role = f.assume_role.trim();
    let external_id = f.assume_role_external_id.trim();
    if role.is_empty() && !external_id.is_empty() {
        return Err(ValidationError(
            "--aws-assume-role-external-id needs --aws-assume-role: the external id is sent when assuming that role"
                .to_string(),
        ));
    }
    let mut config = AwsConfig::from_env(var).map_err(|e| ValidationError(format!("--provider=aws: {e}")))?;
    if let (Some(profile), CredentialSource::Chain { env, .. }) = (profiles.first(), &config.credentials) {
        config.credentials = CredentialSource::Chain {
            env: env.clone(),
            profile: Some((*profile).to_string()),
        };
    }
    config.assume_role = AssumeRole::from_flags(role, external_id);
    config.batch = batching(
        "--aws-batch-change-size",
        f.batch_change_size,
        f.batch_change_interval,
        true,
    )?;
    config.batch_change_size_bytes = count("--aws-batch-change-size-bytes", f.batch_change_size_bytes, true)?;
    config.batch_change_size_values = count("--aws-batch-change-size-values", f.batch_change_size_values, true)?;
    config.api.calls.backoff.max_attempts = AwsConfig::attempts_for(count("--aws-api-retries", f.api_retries, false)?);
    config.evaluate_target_health = f.evaluate_target_health;
    config.prefer_cname = f.prefer_cname;
    config.zones_cache_duration = f.zones_cache_duration;
    config.zone_match_parent = f.zone_match_parent;
    config.zone_type = match f.zone_type.as_str() {
        "public" => Some(ZoneType::Public),
        "private" => Some(ZoneType::Private),
        _ => None,
    };
    config.zone_tags = f
        .zone_tags
        .iter()
        .filter(|t| !t.trim().is_empty())
        .map(|t| match t.split_once('=') {
            Some((k, v)) => Ok((k.trim().to_string(), v.trim().to_string())),
            None => Err(ValidationError(format!(
                "--aws-zone-tags must be key=value (got {t:?})"
            ))),
        })
        .collect::<Result<_, _>>()?;
    config.zones = super::zones(flags, domain_filter);
    config.zones.zone_ids = (config.zones.zone_ids.iter())
        .map(|z| z.trim())
        .filter(|z| !z.is_empty())
        .map(|z| z.strip_prefix("/hostedzone/").unwrap_or(z).to_string())
        .collect();
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::tests::provider_flags;

    fn env(k: &str) -> Option<String> {
        match k {
            "AWS_ACCESS_KEY_ID" => Some("AKID".into()),
            "AWS_SECRET_ACCESS_KEY" => Some("secret".into()),
            "AWS_ENDPOINT_URL" => Some("http://127.0.0.1:5555".into()),
            _ => None,
        }
    }

    fn aws(args: &[&str]) -> Result<AwsConfig, ValidationError> {
        config(&provider_flags("aws", args), &DomainFilter::default(), &env)
    }

    #[test]
    fn the_aws_flags_reach_the_provider_configuration() -> Result<(), ValidationError> {
        let c = aws(&[
            "--aws-zone-type=private",
            "--aws-zone-tags=team=a",
            "--aws-zone-tags=env = prod",
            "--aws-batch-change-size=10",
            "--aws-batch-change-size-bytes=2000",
            "--aws-batch-change-size-values=20",
            "--aws-batch-change-interval=3s",
            "--aws-api-retries=0",
            "--aws-evaluate-target-health=false",
            "--aws-prefer-cname=true",
            "--aws-zone-match-parent=true",
            "--zone-id-filter=/hostedzone/Z123",
        ])?;
        assert_eq!(c.zone_type, Some(ZoneType::Private));
        assert_eq!(
            c.zone_tags,
            [("team".into(), "a".into()), ("env".into(), "prod".into())]
        );
        assert_eq!(
            (c.batch.size, c.batch_change_size_bytes, c.batch_change_size_values),
            (10, 2000, 20)
        );
        assert_eq!(c.batch.interval, std::time::Duration::from_secs(3));
        assert_eq!(c.api.calls.backoff.max_attempts, 1, "no retry: the first call only");
        assert!(!c.evaluate_target_health && c.prefer_cname && c.zone_match_parent);
        assert_eq!(c.zones.zone_ids, ["Z123"]);
        assert_eq!(c.endpoint.as_str(), "http://127.0.0.1:5555/");
        Ok(())
    }

    #[test]
    fn bad_aws_flags_are_named() {
        let err = |args: &[&str]| aws(args).map(|_| ()).expect_err("refused").0;
        assert!(err(&["--aws-batch-change-size=0"]).contains("--aws-batch-change-size "));
        assert!(err(&["--aws-api-retries=-1"]).contains("--aws-api-retries"));
        assert!(err(&["--aws-zone-tags=team"]).contains("--aws-zone-tags"));
        assert!(err(&["--aws-assume-role-external-id=x"]).contains("needs --aws-assume-role"));
        assert!(err(&["--aws-profile=dev", "--aws-profile=prod"]).contains("dev, prod"));
    }

    #[test]
    fn the_profile_and_the_role_reach_the_credential_chain() -> Result<(), ValidationError> {
        let c = aws(&[
            "--aws-profile=dev",
            "--aws-assume-role=arn:aws:iam::1:role/dns",
            "--aws-assume-role-external-id=ext",
        ])?;
        match &c.credentials {
            CredentialSource::Chain { env, profile } => {
                assert_eq!(profile.as_deref(), Some("dev"));
                assert_eq!(env.get("AWS_ACCESS_KEY_ID").map(String::as_str), Some("AKID"));
            }
            other => panic!("not the chain: {other:?}"),
        }
        assert_eq!(
            c.assume_role,
            Some(AssumeRole {
                role_arn: "arn:aws:iam::1:role/dns".into(),
                external_id: Some("ext".into()),
            })
        );
        assert_eq!(aws(&[])?.assume_role, None);
        Ok(())
    }
}
