//! What `--events-emit` says about a sync, read from a sink that keeps the events.

use super::*;
use crate::{DeletionGuard, EventKind, EventReason, EventSink, EventsConfig, RecordEvent};
use extdns_informer::view::{Meta, Service};
use extdns_informer::{ObjectKey, ResourceKind, Uid};

#[derive(Default)]
pub(super) struct KeptEvents(Mutex<Vec<RecordEvent>>);

#[async_trait]
impl EventSink for KeptEvents {
    async fn emit(&self, events: Vec<RecordEvent>) {
        if let Ok(mut kept) = self.0.lock() {
            kept.extend(events);
        }
    }
}

impl KeptEvents {
    pub(super) fn take(&self) -> Vec<RecordEvent> {
        self.0.lock().map(|mut e| std::mem::take(&mut *e)).unwrap_or_default()
    }

    /// The one event kept; a test failure if there are more or none.
    fn the_one(&self) -> RecordEvent {
        match <[RecordEvent; 1]>::try_from(self.take()) {
            Ok([event]) => event,
            Err(events) => panic!("want one event, got {events:?}"),
        }
    }
}

fn web() -> ObjectKey {
    ObjectKey::new(ResourceKind::Service, "shop", "web")
}

/// The Service `shop/shop`, beside [`web`].
fn shop() -> ObjectKey {
    ObjectKey::new(ResourceKind::Service, "shop", "shop")
}

/// A record the service source would produce for `shop/web`.
pub(super) fn of_web(e: Endpoint) -> Endpoint {
    e.with_ref_object(web()).with_label(label::RESOURCE, "service/shop/web")
}

fn all() -> EventsConfig {
    EventsConfig::new(true, true, true)
}

/// A controller over a synced cluster, `source` and `registry`, emitting the `events` asked for into the sink
/// returned.
fn with_events(
    source: &Arc<FakeSource>,
    registry: &Arc<FakeRegistry>,
    config: ControllerConfig,
    events: EventsConfig,
) -> (Controller, Arc<KeptEvents>) {
    with_events_on(&FakeCluster::new(true), source, registry, config, events)
}

/// [`with_events`] over `cluster`.
fn with_events_on(
    cluster: &Arc<FakeCluster>,
    source: &Arc<FakeSource>,
    registry: &Arc<FakeRegistry>,
    config: ControllerConfig,
    events: EventsConfig,
) -> (Controller, Arc<KeptEvents>) {
    let c = controller(cluster, source, registry, config);
    let sink = Arc::new(KeptEvents::default());
    let dyn_sink: Arc<dyn EventSink> = sink.clone();
    (c.with_events(events, dyn_sink), sink)
}

#[tokio::test]
async fn a_created_record_is_ready_on_its_object_and_a_no_op_sync_says_nothing() -> Result<(), SyncError> {
    let source = FakeSource::with(vec![of_web(a("web.example.com", "10.0.0.1"))]);
    let registry = FakeRegistry::new(vec![]);
    let (c, sink) = with_events(&source, &registry, ControllerConfig::default(), all());

    c.run_once().await?;
    let events = sink.take();
    assert_eq!(
        events,
        vec![RecordEvent {
            object: web(),
            uid: None,
            kind: EventKind::Normal,
            reason: EventReason::RecordReady,
            action: "CreateRecord",
            note: "(external-dns) record:web.example.com,owner:default,type:A,ttl:0,targets:10.0.0.1".into(),
        }]
    );

    c.run_once().await?;
    assert_eq!(sink.take(), vec![]);
    Ok(())
}

/// The uid comes from the store the watcher fills, so the sink records the event on that very object
/// without reading it back; an object the store does not hold (gone) gets its event without one.
#[tokio::test]
async fn an_event_carries_the_uid_the_store_holds_for_its_object() -> Result<(), SyncError> {
    let uid = Uid::parse("3f2b7c1e-9a4d-4e0b-8c6f-0123456789ab");
    let store = web_with_uid(uid);
    let gone = ObjectKey::new(ResourceKind::Service, "shop", "gone");
    let source = FakeSource::with(vec![
        of_web(a("web.example.com", "10.0.0.1")),
        a("gone.example.com", "10.0.0.2").with_ref_object(gone.clone()),
    ]);
    let registry = FakeRegistry::new(vec![]);
    let cluster = FakeCluster::holding(store, true);
    let (c, sink) = with_events_on(&cluster, &source, &registry, ControllerConfig::default(), all());

    c.run_once().await?;
    let uids: Vec<(ObjectKey, Option<Uid>)> = sink.take().into_iter().map(|e| (e.object, e.uid)).collect();
    assert!(uid.is_some());
    assert_eq!(uids, vec![(gone, None), (web(), uid)]);
    Ok(())
}

/// A store holding Service shop/web with `uid`.
fn web_with_uid(uid: Option<Uid>) -> ClusterStore {
    let mut store = ClusterStore::new();
    let service = Service {
        meta: Meta {
            name: "web".into(),
            namespace: "shop".into(),
            ..Meta::default()
        },
        ..Service::default()
    };
    store.add_with_uid(ResourceKind::Service, service, uid);
    store
}

/// The write may take long: a Service deleted and made again under its name while it runs is another
/// object, and the events of records planned for the old one are not attached to it.
#[tokio::test]
async fn an_event_carries_the_uid_its_object_had_when_the_sync_planned_it() -> Result<(), SyncError> {
    let planned = Uid::parse("3f2b7c1e-9a4d-4e0b-8c6f-0123456789ab");
    let made_again = Uid::parse("77777777-9a4d-4e0b-8c6f-0123456789ab");
    let source = FakeSource::with(vec![of_web(a("web.example.com", "10.0.0.1"))]);
    let registry = FakeRegistry::new(vec![]);
    let cluster = FakeCluster::holding(web_with_uid(planned), true);
    if let Ok(mut later) = cluster.later.lock() {
        *later = Some(Arc::new(web_with_uid(made_again)));
    }
    let (c, sink) = with_events_on(&cluster, &source, &registry, ControllerConfig::default(), all());

    c.run_once().await?;
    let event = sink.the_one();
    assert!(planned.is_some() && made_again.is_some());
    assert_eq!((event.object, event.uid), (web(), planned));
    Ok(())
}

#[tokio::test]
async fn records_of_one_object_make_one_event_listing_them_all() -> Result<(), SyncError> {
    let source = FakeSource::with(vec![
        of_web(a("web.example.com", "10.0.0.1")),
        of_web(a("www.example.com", "10.0.0.1")),
    ]);
    let registry = FakeRegistry::new(vec![]);
    let (c, sink) = with_events(&source, &registry, ControllerConfig::default(), all());

    c.run_once().await?;
    let event = sink.the_one();
    assert!(event.note.contains("record:web.example.com,"), "{}", event.note);
    assert!(event.note.contains("record:www.example.com,"), "{}", event.note);
    Ok(())
}

#[tokio::test]
async fn a_failed_apply_is_a_warning_on_every_object_it_touched() {
    let source = FakeSource::with(vec![of_web(a("web.example.com", "10.0.0.1"))]);
    let registry = FakeRegistry::failing(vec![], 1, |_| ProviderError::transient("timeout"));
    let (c, sink) = with_events(&source, &registry, ControllerConfig::default(), all());

    assert!(c.run_once().await.is_err());
    let event = sink.the_one();
    assert_eq!(
        (event.kind, event.reason, event.object),
        (EventKind::Warning, EventReason::RecordError, web())
    );
}

#[tokio::test]
async fn a_partial_failure_is_ready_for_what_landed_and_an_error_for_the_rest() {
    let shop = shop();
    let source = FakeSource::with(vec![
        of_web(a("web.example.com", "10.0.0.1")),
        a("shop.example.com", "10.0.0.2").with_ref_object(shop.clone()),
    ]);
    let registry = FakeRegistry::failing(vec![], 1, |_| ProviderError::Partial {
        failures: vec![ChangeFailure::new(
            &a("shop.example.com", "10.0.0.2"),
            FailureKind::Refused,
            "REFUSED",
        )],
    });
    let (c, sink) = with_events(&source, &registry, ControllerConfig::default(), all());

    assert!(c.run_once().await.is_err());
    let events = sink.take();
    let refused = events.iter().find(|e| e.reason == EventReason::RecordError);
    let note = refused.map(|e| e.note.as_str()).unwrap_or_default();
    assert!(
        note.contains("record:shop.example.com,") && note.ends_with("(refused: REFUSED)"),
        "{note}"
    );
    let got: Vec<(String, EventReason)> = events.into_iter().map(|e| (e.object.name, e.reason)).collect();
    assert_eq!(
        got,
        vec![
            // Ordered by object.
            ("shop".to_string(), EventReason::RecordError),
            ("web".to_string(), EventReason::RecordReady),
        ]
    );
}

#[tokio::test]
async fn a_change_the_registry_withheld_is_an_error_on_its_object_never_ready() -> Result<(), SyncError> {
    let shop = shop();
    let source = FakeSource::with(vec![
        of_web(a("web.example.com", "10.0.0.1")),
        a("*.shop.example.com", "10.0.0.2").with_ref_object(shop.clone()),
    ]);
    let registry = FakeRegistry::new(vec![]).withholding(&["*.shop.example.com"]);
    let (c, sink) = with_events(&source, &registry, ControllerConfig::default(), all());

    let report = c.run_once().await?;
    assert!(report.applied, "the sync succeeds: the rest was written");
    assert_eq!(report.owned, Some(1), "the withheld record is not counted as owned");
    assert_eq!(names(&registry.snapshot()), ["web.example.com A 10.0.0.1"]);
    let got: Vec<(String, EventReason)> = sink.take().into_iter().map(|e| (e.object.name, e.reason)).collect();
    assert_eq!(
        got,
        vec![
            ("shop".to_string(), EventReason::RecordError),
            ("web".to_string(), EventReason::RecordReady),
        ],
        "the withheld record is not reported written"
    );
    Ok(())
}

#[tokio::test]
async fn an_object_that_could_not_be_evaluated_gets_a_warning_naming_why() -> Result<(), SyncError> {
    let source = FakeSource::with(vec![]);
    if let Ok(mut f) = source.failed.lock() {
        f.insert("service/shop/web".into());
    }
    if let Ok(mut w) = source.why.lock() {
        w.insert(
            "service/shop/web".into(),
            "target annotation: \"a b\" is not a target".into(),
        );
    }
    let registry = FakeRegistry::new(vec![]);
    let (c, sink) = with_events(&source, &registry, ControllerConfig::default(), all());

    c.run_once().await?;
    let event = sink.the_one();
    assert_eq!(
        (event.kind, event.reason, &event.object),
        (EventKind::Warning, EventReason::InvalidInput, &web())
    );
    assert!(event.note.contains("target annotation"), "{}", event.note);
    Ok(())
}

#[tokio::test]
async fn deletes_are_reported_on_the_object_the_record_label_names_only_when_asked() -> Result<(), SyncError> {
    let record = || {
        owned(
            a("web.example.com", "10.0.0.1").with_label(label::RESOURCE, "service/shop/web"),
            OWNER,
        )
    };
    for (config, want) in [
        (EventsConfig::new(true, true, false), vec![EventReason::RecordDeleted]),
        (EventsConfig::new(true, false, true), vec![]),
    ] {
        let source = FakeSource::with(vec![]);
        let registry = FakeRegistry::new(vec![record()]);
        let (c, sink) = with_events(&source, &registry, ControllerConfig::default(), config);
        c.run_once().await?;
        let events = sink.take();
        assert_eq!(events.iter().map(|e| e.reason).collect::<Vec<_>>(), want, "{config:?}");
        assert!(events.iter().all(|e| e.object == web() && e.action == "DeleteRecord"));
    }
    Ok(())
}

#[tokio::test]
async fn held_back_deletes_are_warnings_on_their_objects() -> Result<(), SyncError> {
    let source = FakeSource::with(vec![]);
    let records: Vec<Endpoint> = (0..4)
        .map(|i| {
            owned(
                a(&format!("r{i}.example.com"), "10.0.0.1").with_label(label::RESOURCE, "service/shop/web"),
                OWNER,
            )
        })
        .collect();
    let registry = FakeRegistry::new(records);
    let config = ControllerConfig {
        deletion_guard: DeletionGuard::new(50, 1),
        ..ControllerConfig::default()
    };
    let (c, sink) = with_events(&source, &registry, config, all());

    let report = c.run_once().await?;
    assert_eq!(report.held_back.len(), 4);
    let event = sink.the_one();
    assert_eq!(
        (event.kind, event.reason),
        (EventKind::Warning, EventReason::DeletionHeldBack)
    );
    assert!(event.note.contains("record:r3.example.com"), "{}", event.note);
    Ok(())
}

#[tokio::test]
async fn without_any_event_asked_for_the_sink_is_never_called() -> Result<(), SyncError> {
    let source = FakeSource::with(vec![of_web(a("web.example.com", "10.0.0.1"))]);
    let registry = FakeRegistry::failing(vec![], 1, |_| ProviderError::transient("timeout"));
    let (c, sink) = with_events(&source, &registry, ControllerConfig::default(), EventsConfig::default());
    assert!(c.run_once().await.is_err());
    c.run_once().await?;
    assert_eq!(sink.take(), vec![]);
    Ok(())
}

#[tokio::test]
async fn a_dry_run_emits_nothing() -> Result<(), SyncError> {
    let source = FakeSource::with(vec![of_web(a("web.example.com", "10.0.0.1"))]);
    let registry = FakeRegistry::new(vec![]);
    let config = ControllerConfig {
        dry_run: true,
        ..ControllerConfig::default()
    };
    let (c, sink) = with_events(&source, &registry, config, all());
    c.run_once().await?;
    assert_eq!(sink.take(), vec![]);
    Ok(())
}
