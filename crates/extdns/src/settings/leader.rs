//! `--leader-elect*` → [`LeaderSettings`]: kube-scheduler's flags, checked here so a timing that would let
//! two replicas write at once fails before anything starts.

use extdns_leader::LeaseTiming;

pub use extdns_wiring::LeaderSettings;

use super::ValidationError;
use crate::flags::LeaderFlags;

/// `None` without `--leader-elect`.
pub fn config(flags: &LeaderFlags) -> Result<Option<LeaderSettings>, ValidationError> {
    if !flags.leader_elect {
        return Ok(None);
    }
    let (duration, deadline, retry) = (
        flags.leader_elect_lease_duration,
        flags.leader_elect_renew_deadline,
        flags.leader_elect_retry_period,
    );
    if deadline >= duration {
        return Err(ValidationError(format!(
            "--leader-elect-renew-deadline ({deadline:?}) must be shorter than --leader-elect-lease-duration \
             ({duration:?}): a leader that lost the lease would still write when another replica takes it"
        )));
    }
    if retry >= deadline {
        return Err(ValidationError(format!(
            "--leader-elect-retry-period ({retry:?}) must be shorter than --leader-elect-renew-deadline \
             ({deadline:?})"
        )));
    }
    let timing = LeaseTiming::new(duration, deadline, retry).map_err(|e| {
        ValidationError(format!(
            "--leader-elect-lease-duration/--leader-elect-renew-deadline/--leader-elect-retry-period: {e}"
        ))
    })?;
    if flags.leader_elect_resource_name.is_empty() {
        return Err(ValidationError("--leader-elect-resource-name must not be empty".into()));
    }
    Ok(Some(LeaderSettings {
        name: flags.leader_elect_resource_name.clone(),
        namespace: Some(flags.leader_elect_resource_namespace.clone()).filter(|n| !n.is_empty()),
        timing,
    }))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::settings::tests::test_flags;

    fn parse(args: &[&str]) -> Result<Option<LeaderSettings>, ValidationError> {
        let flags = test_flags(["--source=service", "--provider=inmemory"].iter().chain(args).copied());
        config(&flags.leader)
    }

    #[test]
    fn off_by_default() {
        assert_eq!(parse(&[]), Ok(None));
    }

    #[test]
    fn kube_schedulers_defaults() {
        let s = parse(&["--leader-elect"]).expect("valid").expect("on");
        assert_eq!(s.name, "extdns");
        assert_eq!(s.namespace, None);
        assert_eq!(s.timing, LeaseTiming::default());
        assert_eq!(s.timing.lease_duration, Duration::from_secs(15));
        assert_eq!(s.timing.renew_deadline, Duration::from_secs(10));
        assert_eq!(s.timing.retry_period, Duration::from_secs(2));
    }

    #[test]
    fn every_flag_is_read() {
        let s = parse(&[
            "--leader-elect=true",
            "--leader-elect-lease-duration=30s",
            "--leader-elect-renew-deadline=20s",
            "--leader-elect-retry-period=500ms",
            "--leader-elect-resource-name=dns",
            "--leader-elect-resource-namespace=kube-system",
        ])
        .expect("valid")
        .expect("on");
        assert_eq!(s.name, "dns");
        assert_eq!(s.namespace.as_deref(), Some("kube-system"));
        assert_eq!(s.timing.lease_duration, Duration::from_secs(30));
        assert_eq!(s.timing.renew_deadline, Duration::from_secs(20));
        assert_eq!(s.timing.retry_period, Duration::from_millis(500));
    }

    #[test]
    fn unsafe_timings_are_refused_naming_the_flags() {
        let err = parse(&["--leader-elect", "--leader-elect-renew-deadline=15s"]).expect_err("equal");
        assert!(err.0.contains("--leader-elect-renew-deadline"), "{err}");
        assert!(err.0.contains("--leader-elect-lease-duration"), "{err}");
        let err = parse(&["--leader-elect", "--leader-elect-retry-period=10s"]).expect_err("equal");
        assert!(err.0.contains("--leader-elect-retry-period"), "{err}");
        let err = parse(&["--leader-elect", "--leader-elect-resource-name="]).expect_err("empty");
        assert!(err.0.contains("--leader-elect-resource-name"), "{err}");
        // Without --leader-elect the timing flags are not checked (as kube-scheduler).
        assert_eq!(parse(&["--leader-elect-renew-deadline=15s"]), Ok(None));
    }

    #[test]
    fn leader_election_needs_a_long_running_controller_on_the_api_server() {
        let controller = |args: &[&str]| {
            let all = ["--source=service", "--provider=inmemory", "--leader-elect"]
                .iter()
                .chain(args);
            crate::settings::controller(&test_flags(all.copied()))
        };
        let err = controller(&["--once"]).expect_err("with --once");
        assert!(err.0.contains("--leader-elect") && err.0.contains("--once"), "{err}");
        let err = controller(&["--manifests=objects.yaml"]).expect_err("with --manifests");
        assert!(
            err.0.contains("--leader-elect") && err.0.contains("--manifests"),
            "{err}"
        );
        let settings = controller(&[]).expect("valid");
        assert_eq!(settings.leader.map(|l| l.name), Some("extdns".to_string()));
    }
}
