//! Shared names over the TXT registry and the in-memory provider, driven as the controller drives them
//! (read, maintain, plan, apply): several owners on one zone, each an extdns of its own cluster.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use async_trait::async_trait;
use extdns_endpoint::{Change, DomainFilter, Endpoint, ObjectKey, RecordType, shared};
use extdns_plan::{PlanConfig, calculate};
use extdns_provider::failure::FailureKind;
use extdns_provider::zone::Placement;
use extdns_provider::{InMemoryProvider, Provider, ProviderError, ReadState, Records, Unit};

use super::format::{Contribution, Format, Heartbeat, SharedValue};
use super::heartbeat::SETTLE_WRITES;
use super::{Clock, SharedConfig, SharedRegistry};
use crate::mapper::NameMapper;
use crate::{AesKey, Ownership, OwnershipConfig, Registry, RegistryError, TxtRegistry, TxtRegistryConfig};

type Res = Result<(), Box<dyn std::error::Error>>;

/// The in-memory provider, counting the units written to it.
struct Counting {
    inner: InMemoryProvider,
    units: AtomicUsize,
}

#[async_trait]
impl Provider for Counting {
    async fn records(&self) -> Result<Records, ProviderError> {
        self.inner.records().await
    }
    async fn apply(&self, read: &ReadState, units: &[Unit<'_>]) -> Result<(), ProviderError> {
        self.units.fetch_add(units.len(), Ordering::Relaxed);
        self.inner.apply(read, units).await
    }
    fn domain_filter(&self) -> DomainFilter {
        self.inner.domain_filter()
    }
    fn placement(&self, read: &ReadState, name: &str) -> Placement {
        self.inner.placement(read, name)
    }
    fn read_state_outlives_writes(&self) -> bool {
        true
    }
}

impl Counting {
    fn zone() -> Arc<Counting> {
        Arc::new(Counting {
            inner: InMemoryProvider::new(vec!["example.org".to_string()]),
            units: AtomicUsize::new(0),
        })
    }
    fn take(&self) -> usize {
        self.units.swap(0, Ordering::Relaxed)
    }
    async fn all(&self) -> Result<Vec<Endpoint>, ProviderError> {
        Ok(self.inner.records().await?.endpoints)
    }
    /// The targets of the `A` record `name`, sorted; empty when there is none.
    async fn a(&self, name: &str) -> Result<Vec<String>, ProviderError> {
        let mut t: Vec<String> = self
            .all()
            .await?
            .into_iter()
            .filter(|e| e.dns_name == name && e.record_type == RecordType::A)
            .flat_map(|e| e.targets.iter().map(|t| t.to_string()).collect::<Vec<_>>())
            .collect();
        t.sort();
        Ok(t)
    }
    /// How many TXT records hold shared bookkeeping.
    async fn bookkeeping(&self) -> Result<usize, ProviderError> {
        Ok(self
            .all()
            .await?
            .iter()
            .filter(|e| e.record_type == RecordType::Txt && e.targets.iter().any(|t| t.contains("extdns-shared")))
            .count())
    }
}

/// A clock the test moves, in Unix seconds.
fn clock(at: &Arc<AtomicU64>) -> Clock {
    let at = at.clone();
    Arc::new(move || at.load(Ordering::Relaxed))
}

fn owner(
    provider: &Arc<Counting>,
    id: &str,
    now: &Arc<AtomicU64>,
) -> Result<SharedRegistry, Box<dyn std::error::Error>> {
    let ownership = Ownership::new(OwnershipConfig {
        owner_id: id.to_string(),
        ..OwnershipConfig::default()
    })?;
    let txt = Arc::new(TxtRegistry::new(
        provider.clone(),
        TxtRegistryConfig::new(ownership.clone()),
    ));
    Ok(
        SharedRegistry::new(txt, provider.clone(), &ownership, SharedConfig::default())?
            .with_clock(clock(now), format!("{id}-process")),
    )
}

/// A shared A record as a source asks for it, from the Service `default/<svc>`.
fn shared_a(name: &str, targets: &[&str], svc: &str) -> Endpoint {
    let mut e = Endpoint::new(name, RecordType::A, targets.iter().copied());
    e.ref_objects
        .extend(ObjectKey::from_resource_label(&format!("service/default/{svc}")));
    shared::mark(&mut e);
    e
}

/// Two owners on one zone, `cluster-a` (192.0.2.1) and `cluster-b` (192.0.2.2), each after one sync
/// publishing `web.example.org` shared, with the clock they read and what each asks for.
struct TwoOwners {
    zone: Arc<Counting>,
    now: Arc<AtomicU64>,
    a: SharedRegistry,
    b: SharedRegistry,
    web_a: [Endpoint; 1],
    web_b: [Endpoint; 1],
}

async fn web_shared_by_two() -> Result<TwoOwners, Box<dyn std::error::Error>> {
    let zone = Counting::zone();
    let now = Arc::new(AtomicU64::new(1_000_000));
    let (a, b) = (owner(&zone, "cluster-a", &now)?, owner(&zone, "cluster-b", &now)?);
    let web_a = [shared_a("web.example.org", &["192.0.2.1"], "web")];
    let web_b = [shared_a("web.example.org", &["192.0.2.2"], "web")];
    sync(&a, &web_a).await?;
    sync(&b, &web_b).await?;
    Ok(TwoOwners {
        zone,
        now,
        a,
        b,
        web_a,
        web_b,
    })
}

/// One full sync as the controller runs it, that must write all it plans; returns the changes planned.
async fn sync(registry: &SharedRegistry, desired: &[Endpoint]) -> Result<Vec<Change>, RegistryError> {
    let (changes, refused) = sync_refusing(registry, desired).await?;
    assert!(refused.is_empty(), "refused: {refused:?}");
    Ok(changes)
}

/// One full sync as the controller runs it; returns the changes planned and those the registry refused.
async fn sync_refusing(
    registry: &SharedRegistry,
    desired: &[Endpoint],
) -> Result<(Vec<Change>, Vec<extdns_provider::ChangeFailure>), RegistryError> {
    let mut snapshot = registry.records().await?;
    registry.maintain(&mut snapshot).await?;
    let desired = registry.adjust_endpoints(desired.to_vec()).await?;
    let config = PlanConfig {
        owner_id: registry.owner.clone(),
        ..PlanConfig::default()
    };
    let mut changes = calculate(&config, &snapshot.records, &desired, &registry.domain_filter()).changes;
    changes.retain(Change::is_effective);
    let mut refused = Vec::new();
    if !changes.is_empty() {
        refused = registry.apply(&snapshot, &changes).await?.withheld().to_vec();
    }
    Ok((changes, refused))
}

#[tokio::test]
async fn the_record_is_the_union_and_each_owner_removes_only_its_own() -> Res {
    let zone = Counting::zone();
    let now = Arc::new(AtomicU64::new(1_000_000));
    let (a, b) = (owner(&zone, "cluster-a", &now)?, owner(&zone, "cluster-b", &now)?);
    let web_a = shared_a("web.example.org", &["192.0.2.1"], "web");
    let web_b = shared_a("web.example.org", &["192.0.2.2", "192.0.2.3"], "web-b");

    sync(&a, std::slice::from_ref(&web_a)).await?;
    assert_eq!(zone.a("web.example.org").await?, ["192.0.2.1"]);
    sync(&b, std::slice::from_ref(&web_b)).await?;
    assert_eq!(
        zone.a("web.example.org").await?,
        ["192.0.2.1", "192.0.2.2", "192.0.2.3"]
    );
    // At rest: nothing planned by either, and the record stays the union.
    assert!(sync(&a, std::slice::from_ref(&web_a)).await?.is_empty());
    assert!(sync(&b, std::slice::from_ref(&web_b)).await?.is_empty());
    assert_eq!(
        zone.a("web.example.org").await?,
        ["192.0.2.1", "192.0.2.2", "192.0.2.3"]
    );

    // b changes its targets: a's stays.
    let web_b2 = shared_a("web.example.org", &["192.0.2.3"], "web-b");
    sync(&b, std::slice::from_ref(&web_b2)).await?;
    assert_eq!(zone.a("web.example.org").await?, ["192.0.2.1", "192.0.2.3"]);
    // a leaves: only b's remain, and a's contribution record goes.
    sync(&a, &[]).await?;
    assert_eq!(zone.a("web.example.org").await?, ["192.0.2.3"]);
    // b, the last owner, leaves: the record and every bookkeeping record but heartbeats go.
    sync(&b, &[]).await?;
    assert!(zone.a("web.example.org").await?.is_empty());
    sync(&a, &[]).await?;
    sync(&b, &[]).await?;
    assert_eq!(zone.bookkeeping().await?, 0, "{:?}", zone.all().await?);
    Ok(())
}

#[tokio::test]
async fn shared_records_are_invisible_to_plain_ownership() -> Res {
    // The TXT registry of a third owner (external-dns's format) sees the shared record as nobody's.
    let zone = Counting::zone();
    let now = Arc::new(AtomicU64::new(1_000_000));
    let a = owner(&zone, "cluster-a", &now)?;
    sync(&a, &[shared_a("web.example.org", &["192.0.2.1"], "web")]).await?;
    let third = TxtRegistry::new(
        zone.clone(),
        TxtRegistryConfig::new(Ownership::new(OwnershipConfig {
            owner_id: "default".to_string(),
            ..OwnershipConfig::default()
        })?),
    );
    let snapshot = third.records().await?;
    let web: Vec<&Endpoint> = snapshot
        .records
        .iter()
        .filter(|e| e.dns_name == "web.example.org")
        .collect();
    assert_eq!(web.len(), 1);
    assert_eq!(
        web[0].owner(),
        None,
        "external-dns's registry must see no owner: {web:?}"
    );
    Ok(())
}

#[tokio::test]
async fn at_rest_each_owner_writes_one_heartbeat_per_domain_per_interval() -> Res {
    let zone = Counting::zone();
    let now = Arc::new(AtomicU64::new(1_000_000));
    let owners = [
        owner(&zone, "a", &now)?,
        owner(&zone, "b", &now)?,
        owner(&zone, "c", &now)?,
    ];
    let desired: Vec<Vec<Endpoint>> = (0..3)
        .map(|o| {
            (0..1000)
                .map(|n| {
                    shared_a(
                        &format!("app-{n}.example.org"),
                        &[&format!("10.{o}.{}.{}", n / 250, n % 250)],
                        "app",
                    )
                })
                .collect()
        })
        .collect();
    for (r, d) in owners.iter().zip(&desired) {
        sync(r, d).await?;
    }
    assert_eq!(zone.a("app-7.example.org").await?, ["10.0.0.7", "10.1.0.7", "10.2.0.7"]);
    zone.take();
    for interval in 1..=3u64 {
        now.fetch_add(60, Ordering::Relaxed);
        for (r, d) in owners.iter().zip(&desired) {
            assert!(sync(r, d).await?.is_empty());
        }
        assert_eq!(
            zone.take(),
            3,
            "interval {interval}: one heartbeat per owner in the one domain"
        );
    }
    // Within an interval (an incremental or extra sync) nothing is written at all.
    now.fetch_add(5, Ordering::Relaxed);
    for (r, d) in owners.iter().zip(&desired) {
        sync(r, d).await?;
    }
    assert_eq!(zone.take(), 0);
    assert_eq!(
        owners.iter().map(|o| o.stats().heartbeats_written()).sum::<u64>(),
        3 * 3 + 3
    );
    Ok(())
}

#[tokio::test]
async fn a_dead_owner_is_pruned_after_the_ttl_and_not_before() -> Res {
    let TwoOwners {
        zone,
        now,
        a,
        b,
        web_a,
        web_b,
    } = web_shared_by_two().await?;
    // b dies. a syncs every minute; at exactly the TTL b is still there.
    for _ in 0..10 {
        now.fetch_add(60, Ordering::Relaxed);
        sync(&a, &web_a).await?;
    }
    assert_eq!(
        zone.a("web.example.org").await?,
        ["192.0.2.1", "192.0.2.2"],
        "pruned at the TTL, not after it"
    );
    assert_eq!(a.stats().owners_pruned(), 0);
    now.fetch_add(60, Ordering::Relaxed);
    sync(&a, &web_a).await?;
    assert_eq!(zone.a("web.example.org").await?, ["192.0.2.1"]);
    assert_eq!(a.stats().owners_pruned(), 1);
    // b's contribution and heartbeat are gone: a's two records remain.
    assert_eq!(zone.bookkeeping().await?, 2, "{:?}", zone.all().await?);
    // b comes back (a restart): its targets return, a's stay.
    sync(&b, &web_b).await?;
    assert_eq!(zone.a("web.example.org").await?, ["192.0.2.1", "192.0.2.2"]);
    Ok(())
}

#[tokio::test]
async fn the_last_owner_is_never_pruned() -> Res {
    let zone = Counting::zone();
    let now = Arc::new(AtomicU64::new(1_000_000));
    let (a, b) = (owner(&zone, "cluster-a", &now)?, owner(&zone, "cluster-b", &now)?);
    sync(&a, &[shared_a("web.example.org", &["192.0.2.1"], "web")]).await?;
    // a dies; b publishes other names only, so it is no owner of web: web keeps a's targets.
    now.fetch_add(3600, Ordering::Relaxed);
    sync(&b, &[shared_a("api.example.org", &["192.0.2.9"], "api")]).await?;
    now.fetch_add(3600, Ordering::Relaxed);
    sync(&b, &[shared_a("api.example.org", &["192.0.2.9"], "api")]).await?;
    assert_eq!(zone.a("web.example.org").await?, ["192.0.2.1"]);
    assert_eq!(b.stats().owners_pruned(), 0);
    Ok(())
}

#[tokio::test]
async fn nothing_is_pruned_from_an_incomplete_view() -> Res {
    // An incomplete read is an error from the registry, and maintenance never runs without a snapshot:
    // here a zone that fails to list.
    struct Failing;
    #[async_trait]
    impl Provider for Failing {
        async fn records(&self) -> Result<Records, ProviderError> {
            Err(ProviderError::Failed {
                kind: extdns_provider::failure::FailureKind::Transient,
                message: "listing the zone failed".into(),
                source: None,
            })
        }
        async fn apply(&self, _: &ReadState, _: &[Unit<'_>]) -> Result<(), ProviderError> {
            panic!("nothing may be written from an incomplete view");
        }
    }
    let provider: Arc<dyn Provider> = Arc::new(Failing);
    let ownership = Ownership::new(OwnershipConfig {
        owner_id: "a".into(),
        ..OwnershipConfig::default()
    })?;
    let txt = Arc::new(TxtRegistry::new(
        provider.clone(),
        TxtRegistryConfig::new(ownership.clone()),
    ));
    let r = SharedRegistry::new(txt, provider, &ownership, SharedConfig::default())?;
    assert!(r.records().await.is_err());
    Ok(())
}

#[tokio::test]
async fn a_plain_owner_and_a_shared_owner_on_one_name_write_nothing() -> Res {
    let zone = Counting::zone();
    let now = Arc::new(AtomicU64::new(1_000_000));
    let (a, b) = (owner(&zone, "cluster-a", &now)?, owner(&zone, "cluster-b", &now)?);
    sync(&a, &[shared_a("web.example.org", &["192.0.2.1"], "web")]).await?;
    // b wants web as a plain record: refused, named, counted; a's record untouched.
    let mut plain = shared_a("web.example.org", &["192.0.2.2"], "web");
    shared::unmark(&mut plain);
    let snapshot = b.records().await?;
    let config = PlanConfig {
        owner_id: "cluster-b".into(),
        ..PlanConfig::default()
    };
    let changes = calculate(&config, &snapshot.records, &[plain], &b.domain_filter()).changes;
    let written = b.apply(&snapshot, &changes).await?;
    assert_eq!(written.withheld().len(), 1);
    assert!(
        written.withheld()[0].reason.message.contains("\"cluster-a\""),
        "{:?}",
        written.withheld()
    );
    assert_eq!(b.stats().conflicts(), 1);
    assert_eq!(zone.a("web.example.org").await?, ["192.0.2.1"]);

    // A plain ownership record (external-dns's) beside the shared one: a writes nothing more for the name.
    extdns_provider::apply_changes(
        &zone.inner,
        &[Change::Create(Endpoint::new(
            "a-web.example.org",
            RecordType::Txt,
            ["\"heritage=external-dns,external-dns/owner=default\""],
        ))],
    )
    .await?;
    let snapshot = a.records().await?;
    let desired = [shared_a("web.example.org", &["192.0.2.1", "192.0.2.5"], "web")];
    let config = PlanConfig {
        owner_id: "cluster-a".into(),
        ..PlanConfig::default()
    };
    let changes = calculate(&config, &snapshot.records, &desired, &a.domain_filter()).changes;
    let written = a.apply(&snapshot, &changes).await?;
    assert_eq!(written.withheld().len(), 1, "{changes:?}");
    assert!(written.withheld()[0].reason.message.contains("\"default\""));
    assert_eq!(a.stats().conflicts(), 1);
    assert_eq!(zone.a("web.example.org").await?, ["192.0.2.1"]);
    Ok(())
}

/// Syncs `registry` an interval apart until it writes all of `desired`, at most [`SETTLE_WRITES`] refused
/// syncs (a process holding a heartbeat it took over); returns how many were refused.
async fn syncs_until_written(
    registry: &SharedRegistry,
    desired: &[Endpoint],
    now: &AtomicU64,
) -> Result<u64, RegistryError> {
    let mut refused = 0;
    while !sync_refusing(registry, desired).await?.1.is_empty() {
        refused += 1;
        assert!(refused <= SETTLE_WRITES, "still refused after {refused} syncs");
        now.fetch_add(60, Ordering::Relaxed);
    }
    Ok(refused)
}

#[tokio::test]
async fn two_processes_under_one_owner_id_are_a_conflict_and_a_restart_is_not() -> Res {
    let zone = Counting::zone();
    let now = Arc::new(AtomicU64::new(1_000_000));
    let first = owner(&zone, "cluster-a", &now)?;
    let web = [shared_a("web.example.org", &["192.0.2.1"], "web")];
    sync(&first, &web).await?;
    // A second process under the same id (another instance) takes the first one's heartbeat over and waits;
    // the first finds it taken and takes it back: from then on each sees the other (a conflict at every
    // sync, nothing remembered) and neither writes anything shared.
    let second = owner(&zone, "cluster-a", &now)?.with_clock(clock(&now), "second-process");
    let changed = [shared_a("web.example.org", &["192.0.2.7"], "web")];
    for _ in 0..4 {
        now.fetch_add(60, Ordering::Relaxed);
        sync_refusing(&first, &web).await?;
        assert_eq!(sync_refusing(&second, &changed).await?.1.len(), 1);
    }
    assert!(second.stats().conflicts() >= 3, "{}", second.stats().conflicts());
    assert!(first.stats().conflicts() >= 3, "{}", first.stats().conflicts());
    assert_eq!(zone.a("web.example.org").await?, ["192.0.2.1"]);
    // The first process stops: the second holds the heartbeat untouched for SETTLE_WRITES of its writes,
    // then writes.
    syncs_until_written(&second, &changed, &now).await?;
    assert_eq!(zone.a("web.example.org").await?, ["192.0.2.7"]);
    // A restart (the old process gone, its heartbeat left) waits the same, and is no conflict.
    now.fetch_add(60, Ordering::Relaxed);
    let third = owner(&zone, "cluster-a", &now)?.with_clock(clock(&now), "third-process");
    let waited = syncs_until_written(&third, &web, &now).await?;
    assert!(waited > 0, "a restart waits for the heartbeat to stay its own");
    assert_eq!(zone.a("web.example.org").await?, ["192.0.2.1"]);
    assert_eq!(third.stats().conflicts(), 0);
    Ok(())
}

/// A heartbeat of ours left by a process that stopped where we contribute nothing (its last name removed,
/// the heartbeat not yet deleted) holds our first shared name there back only until it is taken over.
#[tokio::test]
async fn a_heartbeat_left_where_we_share_nothing_is_taken_over() -> Res {
    let zone = Counting::zone();
    let now = Arc::new(AtomicU64::new(1_000_000));
    let left = Heartbeat {
        owner: "cluster-a".into(),
        instance: "gone-process".into(),
        seq: 9,
        from: None,
        contested: false,
        at: 999_000,
    };
    let value = Format::new(NameMapper::new("", "", ""), None, false).heartbeat_value(&left)?;
    zone.inner.insert([Endpoint::new(
        &Format::heartbeat_name("cluster-a", "example.org"),
        RecordType::Txt,
        [value],
    )]);
    let a = owner(&zone, "cluster-a", &now)?;
    let web = [shared_a("web.example.org", &["192.0.2.1"], "web")];
    syncs_until_written(&a, &web, &now).await?;
    assert_eq!(zone.a("web.example.org").await?, ["192.0.2.1"]);
    assert_eq!(a.stats().conflicts(), 0);
    Ok(())
}

/// The check between two processes under one owner id reads no clock: the second process's clock behind
/// or ahead of the first's by ten intervals (when the old check took a live process for a stopped one, and
/// the two overwrote each other) changes nothing: both see the conflict and neither writes shared names
/// while both run, and the one left writes again once the other stopped.
#[tokio::test]
async fn a_second_process_is_found_whether_its_clock_lags_or_leads() -> Res {
    for skew in [-600_i64, 600] {
        let zone = Counting::zone();
        let now_first = Arc::new(AtomicU64::new(1_000_000));
        let now_second = Arc::new(AtomicU64::new(1_000_000_u64.saturating_add_signed(skew)));
        let first = owner(&zone, "cluster-a", &now_first)?;
        let second = owner(&zone, "cluster-a", &now_second)?.with_clock(clock(&now_second), "second-process");
        let web = [shared_a("web.example.org", &["192.0.2.1"], "web")];
        let changed = [shared_a("web.example.org", &["192.0.2.7"], "web")];
        sync(&first, &web).await?;
        for round in 0..5 {
            for now in [&now_first, &now_second] {
                now.fetch_add(60, Ordering::Relaxed);
            }
            sync_refusing(&first, &web).await?;
            let (_, refused) = sync_refusing(&second, &changed).await?;
            assert_eq!(refused.len(), 1, "skew {skew}, round {round}");
            assert_eq!(
                zone.a("web.example.org").await?,
                ["192.0.2.1"],
                "skew {skew}, round {round}"
            );
        }
        assert!(first.stats().conflicts() > 0, "skew {skew}");
        assert!(second.stats().conflicts() > 0, "skew {skew}");
        // The second stops: the first writes again within SETTLE_WRITES syncs.
        let moved = [shared_a("web.example.org", &["192.0.2.3"], "web")];
        syncs_until_written(&first, &moved, &now_first).await?;
        assert_eq!(zone.a("web.example.org").await?, ["192.0.2.3"], "skew {skew}");
    }
    Ok(())
}

#[tokio::test]
async fn an_owner_whose_heartbeat_was_not_read_is_kept() -> Res {
    let TwoOwners {
        zone, now, a, web_a, ..
    } = web_shared_by_two().await?;
    // b's heartbeat is not in what a reads (a zone outside a's filters, a partial list, b placing its
    // heartbeat elsewhere): that is no evidence b is dead, however long it lasts.
    let beat: Vec<Endpoint> = zone
        .all()
        .await?
        .into_iter()
        .filter(|e| e.dns_name == "_extdns-heartbeat.cluster-b.example.org")
        .collect();
    assert_eq!(beat.len(), 1);
    extdns_provider::apply_changes(&zone.inner, &[Change::Delete(beat[0].clone())]).await?;
    for _ in 0..3 {
        now.fetch_add(3600, Ordering::Relaxed);
        sync(&a, &web_a).await?;
    }
    assert_eq!(zone.a("web.example.org").await?, ["192.0.2.1", "192.0.2.2"]);
    assert_eq!(a.stats().owners_pruned(), 0);
    let shown = a.preview(&a.records().await?);
    let b_share = shown[0].owners.iter().find(|o| o.owner == "cluster-b");
    assert_eq!(b_share.map(|o| (o.heartbeat_age, o.pruned)), Some((None, false)));
    Ok(())
}

#[test]
fn contribution_and_heartbeat_values_round_trip() -> Res {
    let key = AesKey::from_bytes([7; 32]);
    let long_owner = "Cluster.EU-West-1/Production-Environment-With-A-Very-Long-Owner-Id-Indeed";
    let formats = [
        ("", "", Format::new(NameMapper::new("", "", ""), None, false)),
        (
            "",
            "",
            Format::new(NameMapper::new("", "", ""), Some(key.clone()), true),
        ),
        (
            "txt-%{record_type}.",
            "",
            Format::new(NameMapper::new("txt-%{record_type}.", "", ""), None, false),
        ),
        (
            "",
            "-own",
            Format::new(NameMapper::new("", "-own", ""), Some(key.clone()), true),
        ),
    ];
    for (prefix, suffix, f) in &formats {
        for owner in ["cluster-a", long_owner] {
            let c = Contribution {
                owner: owner.to_string(),
                record: "web.example.org".to_string(),
                record_type: RecordType::Aaaa,
                resource: Some("service/default/web".to_string()),
                targets: vec!["2001:db8::1".to_string(), "2001:db8::2".to_string()],
                unhealthy: vec!["2001:db8::2".to_string()],
            };
            let value = f.contribution_value(&c)?;
            assert_eq!(
                f.parse(&value),
                Some(SharedValue::Contribution(c.clone())),
                "{prefix}{suffix}"
            );
            let name = f.contribution_name(owner, &c.record, &c.record_type);
            assert!(name.split('.').all(|l| !l.is_empty() && l.len() <= 63), "{name}");
            assert!(name.ends_with(".example.org"), "{name}");
            for (from, contested) in [(None, false), (Some("fedcba9876543210"), true)] {
                let h = Heartbeat {
                    owner: owner.to_string(),
                    instance: "0123456789abcdef".to_string(),
                    seq: 3,
                    from: from.map(str::to_string),
                    contested,
                    at: 1_764_000_000,
                };
                assert_eq!(f.parse(&f.heartbeat_value(&h)?), Some(SharedValue::Heartbeat(h)));
            }
            assert!(
                Format::heartbeat_name(owner, "example.org")
                    .split('.')
                    .all(|l| l.len() <= 63)
            );
        }
    }
    // Sealed values need the key; external-dns's values and users' TXT values are not ours.
    let sealed = formats[1].2.contribution_value(&Contribution {
        owner: "a".into(),
        record: "web.example.org".into(),
        record_type: RecordType::A,
        resource: None,
        targets: vec!["192.0.2.1".into()],
        unhealthy: Vec::new(),
    })?;
    assert_eq!(formats[0].2.parse(&sealed), None);
    assert_eq!(
        formats[0].2.parse("\"heritage=external-dns,external-dns/owner=a\""),
        None
    );
    assert_eq!(formats[0].2.parse("\"v=spf1 -all\""), None);
    Ok(())
}

/// The test vectors of docs/shared-names.md.
#[test]
fn names_and_values_match_the_specification() -> Res {
    let f = Format::new(NameMapper::new("", "", ""), None, false);
    assert_eq!(Format::owner_label("cluster-a"), "cluster-a");
    assert_eq!(Format::owner_label("Cluster-A"), "x--5qvd4vzl7x6k5jss");
    assert_eq!(
        f.contribution_name("cluster-a", "web.example.org", &RecordType::A),
        "cluster-a._extdns-shared.a-web.example.org"
    );
    assert_eq!(
        Format::heartbeat_name("cluster-a", "example.org"),
        "_extdns-heartbeat.cluster-a.example.org"
    );
    let c = Contribution {
        owner: "cluster-a".into(),
        record: "web.example.org".into(),
        record_type: RecordType::A,
        resource: Some("service/default/web".into()),
        targets: vec!["192.0.2.1".into(), "192.0.2.2".into()],
        unhealthy: Vec::new(),
    };
    assert_eq!(
        f.contribution_value(&c)?,
        "\"heritage=extdns-shared,kind=targets,owner=cluster-a,record=web.example.org,type=A,resource=service/default/web,targets=192.0.2.1 192.0.2.2\""
    );
    let unhealthy = Contribution {
        unhealthy: vec!["192.0.2.2".into()],
        ..c
    };
    assert_eq!(
        f.contribution_value(&unhealthy)?,
        "\"heritage=extdns-shared,kind=targets,owner=cluster-a,record=web.example.org,type=A,resource=service/default/web,targets=192.0.2.1 192.0.2.2,unhealthy=192.0.2.2\""
    );
    let mut h = Heartbeat {
        owner: "cluster-a".into(),
        instance: "5f0c2a9e4b7d1c33".into(),
        seq: 1,
        from: None,
        contested: false,
        at: 1_764_000_000,
    };
    assert_eq!(
        f.heartbeat_value(&h)?,
        "\"heritage=extdns-shared,kind=heartbeat,owner=cluster-a,instance=5f0c2a9e4b7d1c33,seq=1,at=1764000000\""
    );
    h.from = Some("0a1b2c3d4e5f6a7b".into());
    h.contested = true;
    assert_eq!(
        f.heartbeat_value(&h)?,
        "\"heritage=extdns-shared,kind=heartbeat,owner=cluster-a,instance=5f0c2a9e4b7d1c33,seq=1,from=0a1b2c3d4e5f6a7b,contested=true,at=1764000000\""
    );
    // A heartbeat of an older writer, without the counter, still reads.
    let older = "\"heritage=extdns-shared,kind=heartbeat,owner=cluster-a,instance=5f0c2a9e4b7d1c33,at=1764000000\"";
    assert!(matches!(
        f.parse(older),
        Some(SharedValue::Heartbeat(Heartbeat { seq: 0, from: None, .. }))
    ));
    Ok(())
}

#[tokio::test]
async fn the_preview_shows_each_owners_contribution_and_what_pruning_would_do() -> Res {
    let TwoOwners { zone, now, a, .. } = web_shared_by_two().await?;
    now.fetch_add(601, Ordering::Relaxed);
    zone.take();
    let shown = a.preview(&a.records().await?);
    assert_eq!(zone.take(), 0, "a preview writes nothing");
    assert_eq!(shown.len(), 1);
    let web = &shown[0];
    assert_eq!(
        (web.name.as_str(), &web.record_type),
        ("web.example.org", &RecordType::A)
    );
    assert_eq!(web.published, ["192.0.2.1", "192.0.2.2"]);
    let parts: Vec<(&str, &[String], Option<u64>, bool)> = web
        .owners
        .iter()
        .map(|o| (o.owner.as_str(), o.targets.as_slice(), o.heartbeat_age, o.pruned))
        .collect();
    assert_eq!(
        parts,
        [
            ("cluster-a", &["192.0.2.1".to_string()][..], Some(601), false),
            ("cluster-b", &["192.0.2.2".to_string()][..], Some(601), true),
        ]
    );
    Ok(())
}

#[tokio::test]
async fn a_record_that_lost_an_owners_targets_is_repaired_by_the_upkeep() -> Res {
    let TwoOwners {
        zone, now, a, web_a, ..
    } = web_shared_by_two().await?;
    // A write racing b's left only a's target in the record; b's contribution is intact.
    let held = Endpoint::new("web.example.org", RecordType::A, ["192.0.2.1", "192.0.2.2"]);
    let raced = Endpoint::new("web.example.org", RecordType::A, ["192.0.2.1"]);
    extdns_provider::apply_changes(&zone.inner, &[Change::update(held, raced)]).await?;
    now.fetch_add(60, Ordering::Relaxed);
    sync(&a, &web_a).await?;
    assert_eq!(zone.a("web.example.org").await?, ["192.0.2.1", "192.0.2.2"]);
    assert_eq!(a.stats().owners_pruned(), 0);
    Ok(())
}

/// `shared_a` with `unhealthy` of its targets named as the controller's prober names them.
fn with_unhealthy(mut e: Endpoint, unhealthy: &[&str]) -> Endpoint {
    super::health::set_unhealthy(&mut e, unhealthy.iter().map(|t| t.to_string()));
    e
}

#[tokio::test]
async fn two_owners_whose_targets_are_all_unhealthy_keep_everything_published() -> Res {
    let TwoOwners { zone, a, b, .. } = web_shared_by_two().await?;
    let a_down = [with_unhealthy(
        shared_a("web.example.org", &["192.0.2.1"], "web"),
        &["192.0.2.1"],
    )];
    let b_down = [with_unhealthy(
        shared_a("web.example.org", &["192.0.2.2"], "web"),
        &["192.0.2.2"],
    )];
    // Both fail within one interval, in either order: neither withdrawal empties the record.
    sync(&a, &a_down).await?;
    assert_eq!(zone.a("web.example.org").await?, ["192.0.2.2"]);
    sync(&b, &b_down).await?;
    assert_eq!(zone.a("web.example.org").await?, ["192.0.2.1", "192.0.2.2"]);
    // At rest both agree: nothing is planned, nothing repaired.
    zone.take();
    assert!(sync(&a, &a_down).await?.is_empty());
    assert!(sync(&b, &b_down).await?.is_empty());
    assert_eq!(zone.take(), 0);
    assert_eq!(zone.a("web.example.org").await?, ["192.0.2.1", "192.0.2.2"]);
    Ok(())
}

#[tokio::test]
async fn one_healthy_owner_withdraws_the_others_unhealthy_targets_until_they_recover() -> Res {
    let TwoOwners {
        zone,
        a,
        b,
        web_a,
        web_b,
        ..
    } = web_shared_by_two().await?;
    let a_down = [with_unhealthy(
        shared_a("web.example.org", &["192.0.2.1"], "web"),
        &["192.0.2.1"],
    )];
    sync(&a, &a_down).await?;
    assert_eq!(zone.a("web.example.org").await?, ["192.0.2.2"]);
    // b's upkeep and syncs compute the same set: they keep a's unhealthy target out.
    assert!(sync(&b, &web_b).await?.is_empty());
    assert_eq!(zone.a("web.example.org").await?, ["192.0.2.2"]);
    // a recovers: its target returns.
    assert_eq!(sync(&a, &web_a).await?.len(), 1);
    assert_eq!(zone.a("web.example.org").await?, ["192.0.2.1", "192.0.2.2"]);
    // A partly unhealthy owner keeps its healthy targets.
    let a_two = [with_unhealthy(
        shared_a("web.example.org", &["192.0.2.1", "192.0.2.3"], "web"),
        &["192.0.2.3"],
    )];
    sync(&a, &a_two).await?;
    assert_eq!(zone.a("web.example.org").await?, ["192.0.2.1", "192.0.2.2"]);
    Ok(())
}

#[tokio::test]
async fn a_contribution_without_health_counts_as_healthy() -> Res {
    // cluster-old writes contributions as extdns did before health travelled in them.
    let zone = Counting::zone();
    let old = Endpoint::new(
        "cluster-old._extdns-shared.a-web.example.org",
        RecordType::Txt,
        ["\"heritage=extdns-shared,kind=targets,owner=cluster-old,record=web.example.org,type=A,targets=192.0.2.9\""],
    );
    zone.inner
        .insert([old, Endpoint::new("web.example.org", RecordType::A, ["192.0.2.9"])]);
    let now = Arc::new(AtomicU64::new(1_000_000));
    let a = owner(&zone, "cluster-a", &now)?;
    sync(
        &a,
        &[with_unhealthy(
            shared_a("web.example.org", &["192.0.2.1"], "web"),
            &["192.0.2.1"],
        )],
    )
    .await?;
    assert_eq!(zone.a("web.example.org").await?, ["192.0.2.9"]);
    // What an older reader sees of ours: every target, healthy or not (it ignores the field).
    let ours = zone
        .all()
        .await?
        .into_iter()
        .find(|e| e.dns_name == "cluster-a._extdns-shared.a-web.example.org")
        .ok_or("our contribution")?;
    assert!(
        ours.targets
            .iter()
            .any(|t| t.to_string().contains("targets=192.0.2.1,unhealthy=192.0.2.1")),
        "{ours:?}"
    );
    Ok(())
}

#[tokio::test]
async fn the_health_verdict_never_reaches_the_provider() -> Res {
    let zone = Counting::zone();
    let now = Arc::new(AtomicU64::new(1_000_000));
    let a = owner(&zone, "cluster-a", &now)?;
    let down = with_unhealthy(
        shared_a("web.example.org", &["192.0.2.1", "192.0.2.2"], "web"),
        &["192.0.2.2"],
    );
    let adjusted = a.adjust_endpoints(vec![down]).await?;
    assert_eq!(
        super::health::unhealthy_of(&adjusted[0]),
        ["192.0.2.2"],
        "kept for the plan"
    );
    sync(&a, &adjusted).await?;
    assert_eq!(zone.a("web.example.org").await?, ["192.0.2.1"]);
    let stored = zone.all().await?;
    assert!(
        stored
            .iter()
            .all(|e| e.provider_specific.get(super::health::UNHEALTHY).is_none() && !shared::is_shared(e)),
        "{stored:?}"
    );
    Ok(())
}

/// The changes `registry` plans for `desired`, and what applying them returns.
async fn plan_and_apply(
    registry: &SharedRegistry,
    desired: &[Endpoint],
) -> Result<(Vec<Change>, Result<crate::Written, RegistryError>), RegistryError> {
    let snapshot = registry.records().await?;
    let desired = registry.adjust_endpoints(desired.to_vec()).await?;
    let config = PlanConfig {
        owner_id: registry.owner.clone(),
        ..PlanConfig::default()
    };
    let mut changes = calculate(&config, &snapshot.records, &desired, &registry.domain_filter()).changes;
    changes.retain(Change::is_effective);
    let result = registry.apply(&snapshot, &changes).await;
    Ok((changes, result))
}

#[tokio::test]
async fn a_shared_change_refused_for_good_is_reported_refused_and_the_others_written() -> Res {
    let zone = Counting::zone();
    let now = Arc::new(AtomicU64::new(1_000_000));
    let a = owner(&zone, "cluster-a", &now)?;
    sync(&a, &[shared_a("web.example.org", &["192.0.2.1"], "web")]).await?;
    // The provider refuses any change to api.example.org, whatever the batch holds.
    zone.inner.set_fail_on(Some(Arc::new(|e: &Endpoint| {
        (e.dns_name == "api.example.org").then(|| "the zone's policy forbids this name".to_string())
    })));
    let desired = [
        shared_a("web.example.org", &["192.0.2.1", "192.0.2.5"], "web"),
        shared_a("api.example.org", &["192.0.2.7"], "api"),
        Endpoint::new("plain.example.org", RecordType::A, ["192.0.2.8"]),
    ];
    let (changes, result) = plan_and_apply(&a, &desired).await?;
    assert_eq!(changes.len(), 3, "{changes:?}");
    let Err(RegistryError::Provider(ProviderError::Partial { failures })) = result else {
        return Err(format!("expected a partial failure, got {result:?}").into());
    };
    let named: Vec<(&str, FailureKind)> = failures
        .iter()
        .map(|f| (f.key.dns_name.as_str(), f.reason.kind))
        .collect();
    assert_eq!(named, [("api.example.org", FailureKind::Refused)]);
    assert!(failures[0].reason.message.contains("forbids"), "{failures:?}");
    // Everything else landed: the plain record and the other shared change.
    assert_eq!(zone.a("web.example.org").await?, ["192.0.2.1", "192.0.2.5"]);
    assert_eq!(zone.a("plain.example.org").await?, ["192.0.2.8"]);
    assert!(zone.a("api.example.org").await?.is_empty());
    Ok(())
}

/// The in-memory zone failing every write that touches a shared record or its bookkeeping with `kind`.
struct FailingShared {
    inner: Arc<Counting>,
    fail: fn() -> ProviderError,
}

#[async_trait]
impl Provider for FailingShared {
    async fn records(&self) -> Result<Records, ProviderError> {
        self.inner.records().await
    }
    async fn apply(&self, read: &ReadState, units: &[Unit<'_>]) -> Result<(), ProviderError> {
        let shared = units
            .iter()
            .flat_map(Unit::changes)
            .any(|c| c.endpoint().dns_name.contains("web.example.org"));
        if shared {
            return Err((self.fail)());
        }
        self.inner.apply(read, units).await
    }
    fn domain_filter(&self) -> DomainFilter {
        self.inner.domain_filter()
    }
    fn read_state_outlives_writes(&self) -> bool {
        true
    }
}

#[tokio::test]
async fn a_failed_shared_write_beside_written_plain_changes_keeps_the_providers_kind() -> Res {
    let zone = Counting::zone();
    let now = Arc::new(AtomicU64::new(1_000_000));
    let cases: [(fn() -> ProviderError, FailureKind); 2] = [
        (|| ProviderError::fatal("the zone is locked"), FailureKind::Fatal),
        (
            || ProviderError::transient("the server is busy"),
            FailureKind::Transient,
        ),
    ];
    for (fail, kind) in cases {
        let provider: Arc<dyn Provider> = Arc::new(FailingShared {
            inner: zone.clone(),
            fail,
        });
        let ownership = Ownership::new(OwnershipConfig {
            owner_id: "cluster-a".to_string(),
            ..OwnershipConfig::default()
        })?;
        let txt = Arc::new(TxtRegistry::new(
            provider.clone(),
            TxtRegistryConfig::new(ownership.clone()),
        ));
        let a = SharedRegistry::new(txt, provider, &ownership, SharedConfig::default())?
            .with_clock(clock(&now), "cluster-a-process");
        let plain = format!("plain-{kind:?}.example.org").to_ascii_lowercase();
        let desired = [
            shared_a("web.example.org", &["192.0.2.1"], "web"),
            Endpoint::new(&plain, RecordType::A, ["192.0.2.8"]),
        ];
        let (_, result) = plan_and_apply(&a, &desired).await?;
        let Err(RegistryError::Provider(ProviderError::Partial { failures })) = result else {
            return Err(format!("expected a partial failure, got {result:?}").into());
        };
        let named: Vec<(&str, FailureKind)> = failures
            .iter()
            .map(|f| (f.key.dns_name.as_str(), f.reason.kind))
            .collect();
        assert_eq!(named, [("web.example.org", kind)]);
        assert_eq!(zone.a(&plain).await?, ["192.0.2.8"], "the plain change was written");
        // Alone (the plain record is there now), the shared change fails as the call did.
        let (changes, result) = plan_and_apply(&a, &desired).await?;
        assert_eq!(changes.len(), 1, "{changes:?}");
        let Err(RegistryError::Provider(e)) = result else {
            return Err(format!("expected the call's error, got {result:?}").into());
        };
        assert_eq!(e.kind(), Some(kind));
    }
    Ok(())
}
