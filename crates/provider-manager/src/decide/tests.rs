use super::*;

const INTERVAL: Duration = Duration::from_secs(60);

/// A provider object as the watch delivers it.
fn object(kind: &str, name: &str, generation: i64, spec: serde_json::Value, extra: serde_json::Value) -> DynamicObject {
    let mut v = serde_json::json!({
        "apiVersion": "externaldns.k8s.io/v1alpha1", "kind": kind,
        "metadata": { "name": name, "generation": generation, "finalizers": [FINALIZER],
                      "creationTimestamp": format!("2026-01-0{generation}T00:00:00Z") },
        "spec": spec,
    });
    if kind == "DNSProvider" {
        v["metadata"]["namespace"] = serde_json::json!("team-a");
    }
    if let (Some(v), Some(extra)) = (v["metadata"].as_object_mut(), extra.as_object()) {
        v.extend(extra.clone());
    }
    serde_json::from_value(v).unwrap_or_else(|e| panic!("test object: {e}"))
}

fn cluster(name: &str, generation: i64) -> DynamicObject {
    object(
        "ClusterDNSProvider",
        name,
        generation,
        serde_json::json!({ "type": "inmemory", "domainFilter": { "include": ["example.org"] } }),
        serde_json::json!({}),
    )
}

/// ClusterDNSProvider `p` of type inmemory with `extra` metadata.
fn inmemory(extra: serde_json::Value) -> DynamicObject {
    object(
        "ClusterDNSProvider",
        "p",
        1,
        serde_json::json!({ "type": "inmemory" }),
        extra,
    )
}

fn row(o: &DynamicObject, secret: SecretRead, pipeline: Option<Pipeline>) -> Row {
    let (seen, object) = Seen::of(o);
    Row {
        seen: Some(seen),
        object,
        secret,
        pipeline,
    }
}

/// The row of `o` whose generation-1 pipeline has run since `t` on Secret version 7, the Secret not
/// read again this time.
fn kept(o: &DynamicObject, t: Instant) -> Row {
    row(o, SecretRead::NotRead, Some(running(1, "7", t)))
}

/// The status of a provider being deleted, with its text.
fn deleting_says(text: &str) -> Option<(Reason, String)> {
    Some((Reason::Deleting, text.to_string()))
}

/// The leader's decision at `t` for `o` with nothing running and its Secret not read yet.
fn unread(o: &DynamicObject, t: Instant) -> Decision {
    decide(&row(o, SecretRead::NotRead, None), None, leader(t))
}

/// A provider object of type inmemory over `domain`, its records owned as `owner`.
fn owning(kind: &str, name: &str, generation: i64, domain: &str, owner: &str) -> DynamicObject {
    let spec = serde_json::json!({ "type": "inmemory", "domainFilter": { "include": [domain] },
                                   "registry": { "txtOwnerId": owner } });
    object(kind, name, generation, spec, serde_json::json!({}))
}

fn read(version: &str) -> SecretRead {
    SecretRead::Read(Some(version.to_string()))
}

/// A pipeline running since `read_at` (its Secret read then), synced once.
fn running(generation: i64, version: &str, read_at: Instant) -> Pipeline {
    Pipeline {
        uid: None,
        generation,
        secret_version: Some(version.to_string()),
        secret_read: read_at,
        failures: 0,
        started: read_at,
        synced: true,
        state: PipelineState::Running,
    }
}

/// A pipeline held refused for `reason` at `at`.
/// The pipeline of [`running`] (generation 1, Secret version 7, read at `t`) after `failures` failures,
/// now in `state`.
fn failed(failures: u32, state: PipelineState, t: Instant) -> Pipeline {
    Pipeline {
        failures,
        state,
        ..running(1, "7", t)
    }
}

fn refused(generation: i64, reason: Reason, at: Instant) -> Pipeline {
    Pipeline {
        secret_version: None,
        synced: false,
        state: PipelineState::Refused {
            reason,
            at,
            retry: false,
        },
        ..running(generation, "", at)
    }
}

fn leader(at: Instant) -> Now {
    Now {
        at,
        leader: true,
        interval: INTERVAL,
    }
}

fn follower(at: Instant) -> Now {
    Now {
        leader: false,
        ..leader(at)
    }
}

/// Nothing to do but look again after `secs`.
fn look_again(secs: u64) -> Decision {
    Decision {
        requeue: Some(Duration::from_secs(secs)),
        ..Decision::default()
    }
}

fn id(name: &str) -> ProviderId {
    ProviderId::Cluster { name: name.into() }
}

#[test]
fn a_failing_pipeline_waits_longer_each_time_up_to_five_minutes() {
    let waits: Vec<u64> = (1..=9).map(|n| rebuild_after(n).as_secs()).collect();
    assert_eq!(waits, [5, 10, 20, 40, 80, 160, 300, 300, 300]);
    assert_eq!(rebuild_after(u32::MAX), REBUILD_AFTER_MAX);
}

#[test]
fn an_added_object_has_its_secret_read_then_its_pipeline_started_pending() {
    let t = Instant::now();
    let o = cluster("p", 1);
    let d = unread(&o, t);
    assert_eq!(d.pipeline, Act::ReadSecret);
    assert_eq!(d.status, None);
    let d = decide(&row(&o, read("7"), None), None, leader(t));
    assert_eq!(d.pipeline, Act::Start { failures: 0 });
    assert_eq!(d.status, Some((Reason::Pending, PENDING.to_string())));
    assert_eq!(d.requeue, Some(INTERVAL), "the Secret is read again every --interval");
}

#[test]
fn a_leader_that_may_not_add_the_finalizer_runs_the_provider_all_the_same() {
    // kube-runtime's helper adds the finalizer before the leader decides; an object without it is one
    // extdns may not patch (RBAC), and it runs.
    let t = Instant::now();
    let o = inmemory(serde_json::json!({ "finalizers": [] }));
    let d = unread(&o, t);
    assert_eq!(d.pipeline, Act::ReadSecret);
    let d = decide(&row(&o, read("1"), None), None, leader(t));
    assert_eq!(d.pipeline, Act::Start { failures: 0 });
}

#[test]
fn a_follower_runs_the_pipeline_but_never_writes_a_finalizer() {
    let t = Instant::now();
    let o = inmemory(serde_json::json!({ "finalizers": [] }));
    let d = decide(&row(&o, read("1"), None), None, follower(t));
    assert_eq!(d.pipeline, Act::Start { failures: 0 });
    // Deleted while it follows: stopped, and the finalizer and the status left to the leader.
    let deleting = inmemory(serde_json::json!({ "deletionTimestamp": "2026-01-02T00:00:00Z" }));
    let d = decide(
        &row(&deleting, SecretRead::NotRead, Some(running(1, "1", t))),
        None,
        follower(t),
    );
    assert_eq!(
        d,
        Decision {
            pipeline: Act::Stop,
            ..Decision::default()
        }
    );
}

#[test]
fn an_unchanged_object_within_the_interval_is_left_alone_until_its_secret_is_due() {
    let t = Instant::now();
    let o = cluster("p", 1);
    let d = decide(&kept(&o, t), None, leader(t + Duration::from_secs(20)));
    assert_eq!(d, look_again(40));
}

#[test]
fn a_secret_read_again_unchanged_keeps_the_pipeline() {
    let t = Instant::now();
    let o = cluster("p", 1);
    let later = leader(t + INTERVAL);
    let d = decide(&kept(&o, t), None, later);
    assert_eq!(d.pipeline, Act::ReadSecret);
    let d = decide(&row(&o, read("7"), Some(running(1, "7", t))), None, later);
    assert_eq!(d.pipeline, Act::SecretChecked);
    assert_eq!(d.status, None);
    assert_eq!(d.requeue, Some(INTERVAL));
}

#[test]
fn a_changed_generation_rebuilds_at_once() {
    let t = Instant::now();
    let o = cluster("p", 2);
    let d = decide(&kept(&o, t), None, leader(t));
    assert_eq!(d.pipeline, Act::ReadSecret, "not waiting for the interval");
    let d = decide(&row(&o, read("7"), Some(running(1, "7", t))), None, leader(t));
    assert_eq!(d.pipeline, Act::Rebuild { failures: 0 });
    assert_eq!(d.status, Some((Reason::Pending, PENDING.to_string())));
}

#[test]
fn a_rotated_secret_rebuilds_and_starts_its_failures_again() {
    let t = Instant::now();
    let o = cluster("p", 1);
    let refusal = PipelineState::Refused {
        reason: Reason::ConfigInvalid,
        at: t,
        retry: false,
    };
    let failing = failed(3, refusal, t);
    let d = decide(&row(&o, read("8"), Some(failing)), None, leader(t + INTERVAL));
    assert_eq!(d.pipeline, Act::Rebuild { failures: 0 });
}

#[test]
fn a_missing_secret_refuses_the_provider_and_is_read_again_each_interval() {
    let t = Instant::now();
    let o = cluster("p", 1);
    let why = "Secret ns/tsig (spec.credentialsRef) not found";
    let d = decide(
        &row(&o, SecretRead::Invalid(why.into()), Some(running(1, "7", t))),
        None,
        leader(t + INTERVAL),
    );
    assert_eq!(
        d.pipeline,
        Act::Refuse {
            reason: Reason::CredentialsInvalid,
            retry: false,
            failures: 0
        }
    );
    assert_eq!(d.status, Some((Reason::CredentialsInvalid, why.to_string())));
    assert_eq!(d.requeue, Some(INTERVAL));
}

#[test]
fn an_unreachable_api_server_keeps_what_runs() {
    let t = Instant::now();
    let o = cluster("p", 1);
    let d = decide(
        &row(
            &o,
            SecretRead::Unreachable("connection refused".into()),
            Some(running(1, "7", t)),
        ),
        None,
        leader(t + INTERVAL),
    );
    assert_eq!(
        d,
        Decision {
            requeue: Some(REBUILD_AFTER),
            ..Decision::default()
        }
    );
}

fn deleting(records: Option<u64>, finalizers: &[&str]) -> DynamicObject {
    let extra = serde_json::json!({ "deletionTimestamp": "2026-01-02T00:00:00Z", "finalizers": finalizers });
    let mut o = inmemory(extra);
    if let Some(n) = records {
        o.data["status"] = serde_json::json!({ "records": n });
    }
    o
}

#[test]
fn deleted_with_the_finalizer_says_the_records_stay_then_lets_it_go() {
    let t = Instant::now();
    let o = deleting(Some(3), &[FINALIZER]);
    let d = decide(&kept(&o, t), None, leader(t));
    assert_eq!(
        d,
        Decision {
            pipeline: Act::Stop,
            status: deleting_says("stopped; its 3 records are left in place"),
            ..Decision::default()
        }
    );
    let one = unread(&deleting(Some(1), &[FINALIZER]), t);
    assert_eq!(one.pipeline, Act::Leave, "nothing runs: nothing to stop");
    assert_eq!(one.status, deleting_says("stopped; its 1 record is left in place"));
}

#[test]
fn deleted_without_our_finalizer_or_gone_only_stops_the_pipeline() {
    let t = Instant::now();
    let o = deleting(None, &["someone-else"]);
    let d = decide(&kept(&o, t), None, leader(t));
    assert_eq!(
        d,
        Decision {
            pipeline: Act::Stop,
            ..Decision::default()
        }
    );
    let gone = Row {
        seen: None,
        object: None,
        secret: SecretRead::NotRead,
        pipeline: Some(running(1, "7", t)),
    };
    assert_eq!(decide(&gone, None, leader(t)).pipeline, Act::Stop);
}

fn undecodable(generation: i64, deleting: bool) -> DynamicObject {
    let extra = if deleting {
        serde_json::json!({ "deletionTimestamp": "2026-01-02T00:00:00Z" })
    } else {
        serde_json::json!({})
    };
    object(
        "ClusterDNSProvider",
        "p",
        generation,
        serde_json::json!({ "type": "" }),
        extra,
    )
}

#[test]
fn a_spec_that_does_not_decode_is_config_invalid_once() {
    let t = Instant::now();
    let o = undecodable(2, false);
    let d = decide(&kept(&o, t), None, leader(t));
    assert!(matches!(
        d.pipeline,
        Act::Refuse {
            reason: Reason::ConfigInvalid,
            retry: false,
            ..
        }
    ));
    assert!(
        d.status
            .as_ref()
            .is_some_and(|(r, why)| *r == Reason::ConfigInvalid && why.contains("spec.type")),
        "{d:?}"
    );
    let held = refused(2, Reason::ConfigInvalid, t);
    let again = decide(&row(&o, SecretRead::NotRead, Some(held)), None, leader(t + INTERVAL));
    assert_eq!(again, Decision::default(), "the same bad spec: nothing new to do");
    // Deleting it is not stuck on its bad spec.
    let d = unread(&undecodable(2, true), t);
    assert_eq!(d.status, deleting_says("stopped; its records are left in place"));
}

#[test]
fn of_two_providers_with_one_owner_over_one_zone_the_newer_is_refused_until_the_older_goes() {
    let t = Instant::now();
    let mut rows = BTreeMap::new();
    rows.insert(id("old"), row(&cluster("old", 1), read("1"), None));
    let newer = owning("ClusterDNSProvider", "new", 2, "a.example.org", "old");
    rows.insert(id("new"), row(&newer, read("1"), None));
    let d = decide_all(&rows, leader(t));
    assert_eq!(d[&id("old")].pipeline, Act::Start { failures: 0 });
    assert!(matches!(
        d[&id("new")].pipeline,
        Act::Refuse {
            reason: Reason::Conflict,
            ..
        }
    ));
    assert!(
        d[&id("new")]
            .status
            .as_ref()
            .is_some_and(|(_, why)| why.contains("ClusterDNSProvider/old")),
        "{d:?}"
    );
    // The older one goes: the newer starts at once, its Secret read with no interval waited.
    rows.remove(&id("old"));
    if let Some(r) = rows.get_mut(&id("new")) {
        r.secret = SecretRead::NotRead;
        r.pipeline = Some(Pipeline {
            secret_version: Some("1".into()),
            ..refused(2, Reason::Conflict, t)
        });
    }
    let d = decide_all(&rows, leader(t + Duration::from_secs(1)));
    assert_eq!(d[&id("new")].pipeline, Act::ReadSecret);
    if let Some(r) = rows.get_mut(&id("new")) {
        r.secret = read("1");
    }
    let d = decide_all(&rows, leader(t + Duration::from_secs(1)));
    assert_eq!(d[&id("new")].pipeline, Act::Rebuild { failures: 0 });
}

#[test]
fn a_panicked_pipeline_is_backed_off_then_rebuilt() {
    let t = Instant::now();
    let o = cluster("p", 1);
    let panic = Some("a bug in one provider".into());
    let ended = failed(1, PipelineState::Ended { panic }, t);
    let d = decide(&row(&o, SecretRead::NotRead, Some(ended)), None, leader(t));
    assert_eq!(
        d.pipeline,
        Act::Refuse {
            reason: Reason::SyncFailed,
            retry: true,
            failures: 2
        }
    );
    assert_eq!(
        d.status,
        Some((
            Reason::SyncFailed,
            "the provider's pipeline panicked: a bug in one provider; built again in 10s".into()
        ))
    );
    assert_eq!(d.requeue, Some(Duration::from_secs(10)));
    let backed_off = Pipeline {
        failures: 2,
        state: PipelineState::Refused {
            reason: Reason::SyncFailed,
            at: t,
            retry: true,
        },
        ..running(1, "7", t)
    };
    let early = decide(
        &row(&o, SecretRead::NotRead, Some(backed_off.clone())),
        None,
        leader(t + Duration::from_secs(4)),
    );
    assert_eq!(early, look_again(6));
    let due = leader(t + Duration::from_secs(10));
    let d = decide(&row(&o, SecretRead::NotRead, Some(backed_off.clone())), None, due);
    assert_eq!(d.pipeline, Act::ReadSecret);
    let d = decide(&row(&o, read("7"), Some(backed_off)), None, due);
    assert_eq!(
        d.pipeline,
        Act::Rebuild { failures: 2 },
        "the failures in a row carry over"
    );
}

#[test]
fn a_failed_build_is_retried_after_its_backoff_only_when_it_may_pass() {
    let d = build_failed(0, true, "--provider=webhook: connection refused");
    assert_eq!(
        d.pipeline,
        Act::Refuse {
            reason: Reason::ConfigInvalid,
            retry: true,
            failures: 1
        }
    );
    assert_eq!(d.requeue, Some(REBUILD_AFTER));
    assert_eq!(build_failed(2, false, "bad flag").requeue, None);
}

#[test]
fn a_kind_that_cannot_be_listed_leaves_the_other_kinds_providers_running() {
    let t = Instant::now();
    // Only ClusterDNSProviders are listed: they start.
    let mut rows = BTreeMap::new();
    rows.insert(id("p"), row(&cluster("p", 1), read("1"), None));
    let d = decide_all(&rows, leader(t));
    assert_eq!(d[&id("p")].pipeline, Act::Start { failures: 0 });
    // And readiness does not wait for the kind that cannot be listed, only for the first list.
    assert!(ready(&[KindState::Listed, KindState::Unavailable], [true]));
    assert!(!ready(&[KindState::Listed, KindState::Waiting], [true]));
    assert!(!ready(&[KindState::Listed, KindState::Listed], [true, false]));
    assert!(ready(&[KindState::Listed, KindState::Listed], []));
}

#[test]
fn a_dns_provider_and_a_cluster_dns_provider_of_one_name_are_two_providers_with_owner_ids_of_their_own() {
    let t = Instant::now();
    let namespaced = owning("DNSProvider", "p", 1, "team-a.example.org", "team-a");
    let mut rows = BTreeMap::new();
    rows.insert(id("p"), row(&cluster("p", 1), read("1"), None));
    let team = ProviderId::Namespaced {
        namespace: "team-a".into(),
        name: "p".into(),
    };
    rows.insert(team.clone(), row(&namespaced, read("1"), None));
    let d = decide_all(&rows, leader(t));
    assert_eq!(d.len(), 2);
    assert_eq!(d[&id("p")].pipeline, Act::Start { failures: 0 });
    assert_eq!(d[&team].pipeline, Act::Start { failures: 0 });
}

/// ClusterDNSProvider `p` of uid `uid`, generation 1.
fn with_uid(uid: &str) -> DynamicObject {
    inmemory(serde_json::json!({ "uid": uid }))
}

#[test]
fn a_pipeline_that_never_syncs_is_looked_at_less_and_less_often_and_its_status_says_so() {
    let t = Instant::now();
    let o = cluster("p", 1);
    // The Secret is read again hourly: only the looks at the pipeline bring the object back sooner.
    let hourly = |at: Instant| Now {
        interval: Duration::from_secs(3600),
        ..leader(at)
    };
    let unsynced = Pipeline {
        synced: false,
        ..running(1, "7", t)
    };
    let look = |after: u64| {
        decide(
            &row(&o, SecretRead::NotRead, Some(unsynced.clone())),
            None,
            hourly(t + Duration::from_secs(after)),
        )
    };
    let first = look(0);
    assert_eq!((first.requeue, first.first_sync), (Some(Duration::from_secs(1)), None));
    let waits: Vec<u64> = [1, 2, 4, 8, 160, 300, 1000]
        .into_iter()
        .map(|after| look(after).requeue.map_or(0, |d| d.as_secs()))
        .collect();
    assert_eq!(
        waits,
        [1, 2, 4, 8, 160, 300, 300],
        "doubling, at most five minutes apart"
    );
    assert_eq!(
        look(8).first_sync.as_deref(),
        Some("waiting for the first sync: none completed in 8s; looked at again in 8s")
    );
    assert_eq!(
        look(8).status,
        None,
        "said only while no sync's own outcome is (the runner's part)"
    );
    // Synced once: only the Secret brings it back.
    let synced = decide(&kept(&o, t), None, hourly(t + Duration::from_secs(8)));
    assert_eq!(synced, look_again(3592));
}

#[test]
fn an_object_made_again_under_its_name_is_not_the_old_ones_pipeline() {
    let t = Instant::now();
    let old = Pipeline {
        uid: Some("old".into()),
        ..running(1, "7", t)
    };
    // Same name, generation and Secret, another uid: the old pipeline stops, the new object's starts.
    let d = decide(
        &row(&with_uid("new"), SecretRead::NotRead, Some(old.clone())),
        None,
        leader(t),
    );
    assert_eq!(d.pipeline, Act::ReadSecret, "not left alone as the old object's");
    let d = decide(&row(&with_uid("new"), read("7"), Some(old)), None, leader(t));
    assert_eq!(d.pipeline, Act::Rebuild { failures: 0 });
    // Nor is the old object's refusal the new one's.
    let refused_old = Pipeline {
        uid: Some("old".into()),
        ..refused(1, Reason::ConfigInvalid, t)
    };
    let d = decide(&row(&with_uid("new"), read("7"), Some(refused_old)), None, leader(t));
    assert_eq!(d.pipeline, Act::Rebuild { failures: 0 });
    // The same object: left alone.
    let same = Pipeline {
        uid: Some("new".into()),
        ..running(1, "7", t)
    };
    let d = decide(&row(&with_uid("new"), SecretRead::NotRead, Some(same)), None, leader(t));
    assert_eq!(d.pipeline, Act::Leave);
}

#[test]
fn only_a_list_refused_for_good_makes_a_kind_unavailable() {
    assert!(unavailable(Some(404)), "the CRD is not installed");
    assert!(unavailable(Some(403)), "extdns may not list it");
    for transient in [Some(500), Some(503), Some(429), Some(410), None] {
        assert!(!unavailable(transient), "{transient:?}");
    }
}
