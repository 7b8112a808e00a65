//! The runner against a fake API server (a function answering kube's requests, every request logged) and a
//! fake factory: what the decisions cannot show alone, the order of a reconcile's writes and builds
//! against the watch's events.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use extdns_controller::Metrics;
use extdns_test_support::kube_api::{self, ApiRequest};
use futures::FutureExt as _;
use kube::runtime::watcher::Event;
use tokio::sync::{Notify, oneshot};

use super::*;
use crate::factory::{BuildError, Built, PipelineRequest};

/// Answers a request with an HTTP status and a JSON body.
type Answer = dyn Fn(&ApiRequest) -> (u16, serde_json::Value) + Send + Sync;

/// The fake API server: every request logged, each answered by `answer`.
struct FakeApi {
    log: Mutex<Vec<ApiRequest>>,
    answer: Box<Answer>,
}

impl FakeApi {
    fn client(
        answer: impl Fn(&ApiRequest) -> (u16, serde_json::Value) + Send + Sync + 'static,
    ) -> (kube::Client, Arc<FakeApi>) {
        let api = Arc::new(FakeApi {
            log: Mutex::new(Vec::new()),
            answer: Box::new(answer),
        });
        let fake = api.clone();
        let client = kube_api::client("extdns", move |request| {
            let answer = (fake.answer)(&request);
            fake.log.lock().unwrap_or_else(PoisonError::into_inner).push(request);
            answer
        });
        (client, api)
    }

    /// The requests of `method` whose path ends with `suffix`.
    fn requests(&self, method: &str, suffix: &str) -> Vec<ApiRequest> {
        let log = self.log.lock().unwrap_or_else(PoisonError::into_inner);
        log.iter()
            .filter(|r| r.method == method && r.path.ends_with(suffix))
            .cloned()
            .collect()
    }
}

/// What the API server says when RBAC refuses.
fn forbidden() -> (u16, serde_json::Value) {
    (403, kube_api::status(403, "Forbidden"))
}

/// A fake factory: counts its builds, fails them when told, and holds a build until its gate opens.
#[derive(Default)]
struct FakeFactory {
    builds: AtomicUsize,
    fail: bool,
    gate: Mutex<Option<oneshot::Receiver<()>>>,
    building: Notify,
    cancels: Mutex<Vec<CancellationToken>>,
}

#[async_trait]
impl PipelineFactory for FakeFactory {
    async fn build(&self, request: PipelineRequest<'_>) -> Result<Built, BuildError> {
        self.builds.fetch_add(1, Ordering::SeqCst);
        self.building.notify_one();
        let gate = self.gate.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(gate) = gate {
            let _ = gate.await;
        }
        if self.fail {
            return Err(BuildError::invalid(
                "--policy: nonsense",
                std::io::Error::other("nonsense"),
            ));
        }
        let cancel = request.cancel.clone();
        self.cancels
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(cancel.clone());
        let run = async move { cancel.cancelled().await }.boxed();
        let metrics = Arc::new(Metrics::for_providers("test", "test").child());
        Ok(Built { run, metrics })
    }
}

/// ClusterDNSProvider `p` of uid `uid`, with extdns's finalizer when `finalized`.
fn provider(uid: &str, finalized: bool) -> DynamicObject {
    let finalizers: Vec<&str> = if finalized { vec![FINALIZER] } else { Vec::new() };
    serde_json::from_value(serde_json::json!({
        "apiVersion": "externaldns.k8s.io/v1alpha1", "kind": "ClusterDNSProvider",
        "metadata": { "name": "p", "uid": uid, "generation": 1, "finalizers": finalizers,
                      "creationTimestamp": "2026-01-01T00:00:00Z" },
        "spec": { "type": "inmemory" },
    }))
    .unwrap_or_else(|e| panic!("test object: {e}"))
}

fn id() -> ProviderId {
    ProviderId::Cluster { name: "p".into() }
}

/// A manager over the fake API and factory, both kinds listed, `objects` in the ClusterDNSProvider store;
/// and the forbidden writes it tracks.
struct Harness {
    manager: Arc<Manager>,
    feeds: Vec<(ProviderKind, Feeds)>,
    forbidden: Arc<Forbidden>,
}

impl Harness {
    fn new(client: kube::Client, factory: Arc<FakeFactory>, objects: &[&DynamicObject]) -> Harness {
        let mut root = Metrics::for_providers("test", "test");
        let forbidden = Forbidden::register(&mut root);
        let config = ManagerConfig {
            interval: Duration::from_secs(3600),
            namespace: "extdns".into(),
            forbidden: forbidden.clone(),
        };
        let (manager, mut feeds) = Manager::new(client, factory, Arc::new(root), Leadership::always(), config);
        for (kind, feed) in &mut feeds {
            feed.writer.apply_watcher_event(&Event::Init);
            if *kind == ProviderKind::Cluster {
                for o in objects {
                    feed.writer.apply_watcher_event(&Event::InitApply((*o).clone()));
                }
            }
            feed.writer.apply_watcher_event(&Event::InitDone);
            manager.watched(*kind, &Ok(Event::InitDone));
        }
        Harness {
            manager,
            feeds,
            forbidden,
        }
    }

    /// The ClusterDNSProvider watch delivers `event`.
    fn deliver(&mut self, event: Event<DynamicObject>) {
        if let Some((kind, feed)) = self.feeds.iter_mut().find(|(k, _)| *k == ProviderKind::Cluster) {
            feed.writer.apply_watcher_event(&event);
            self.manager.watched(*kind, &Ok(event));
        }
    }

    /// The uid of the pipeline held for `p`, if one runs.
    fn running(&self) -> Option<Option<String>> {
        let views = self.manager.held.views();
        views
            .get(&id())
            .filter(|p| p.state == crate::decide::PipelineState::Running)
            .map(|p| p.uid.clone())
    }
}

fn answer_ok(request: &ApiRequest) -> (u16, serde_json::Value) {
    let _ = request;
    (200, serde_json::to_value(provider("a", true)).unwrap_or_default())
}

#[tokio::test]
async fn a_failed_build_writes_the_status_once() {
    let (client, api) = FakeApi::client(answer_ok);
    let factory = Arc::new(FakeFactory {
        fail: true,
        ..FakeFactory::default()
    });
    let object = provider("a", true);
    let h = Harness::new(client, factory.clone(), &[&object]);
    h.manager.reconcile_one(&id(), &object).await;
    assert_eq!(factory.builds.load(Ordering::SeqCst), 1);
    let writes = api.requests("PATCH", "/clusterdnsproviders/p/status");
    assert_eq!(writes.len(), 1, "{writes:?}");
    assert!(writes[0].text().contains("ConfigInvalid") && writes[0].text().contains("--policy: nonsense"));
    assert!(h.running().is_none());
}

#[tokio::test]
async fn a_build_that_returns_after_its_object_was_deleted_starts_nothing() {
    let (client, _api) = FakeApi::client(answer_ok);
    let (open, gate) = oneshot::channel();
    let factory = Arc::new(FakeFactory {
        gate: Mutex::new(Some(gate)),
        ..FakeFactory::default()
    });
    let object = provider("a", true);
    let mut h = Harness::new(client, factory.clone(), &[&object]);
    let manager = h.manager.clone();
    let building = factory.building.notified();
    let reconcile = tokio::spawn({
        let object = object.clone();
        async move { manager.reconcile_one(&id(), &object).await }
    });
    building.await;
    // Deleted while its pipeline is built: the watch's store loses it, then the manager forgets it.
    h.deliver(Event::Delete(object));
    h.manager.clone().forget(id(), Some("a".into())).await;
    let _ = open.send(());
    let _ = reconcile.await;
    assert_eq!(factory.builds.load(Ordering::SeqCst), 1);
    assert_eq!(h.running(), None, "no pipeline runs for a deleted object");
    assert!(h.manager.held.ids().is_empty());
}

#[tokio::test]
async fn an_object_deleted_and_made_again_under_its_name_stops_the_old_pipeline_and_starts_its_own() {
    let (client, _api) = FakeApi::client(answer_ok);
    let factory = Arc::new(FakeFactory::default());
    let old = provider("a", true);
    let mut h = Harness::new(client, factory.clone(), &[&old]);
    h.manager.reconcile_one(&id(), &old).await;
    assert_eq!(h.running(), Some(Some("a".into())));
    // Deleted and made again (same name, same generation and Secret) before the manager looked again.
    let new = provider("b", true);
    h.deliver(Event::Apply(new.clone()));
    h.manager.reconcile_one(&id(), &new).await;
    assert_eq!(
        factory.builds.load(Ordering::SeqCst),
        2,
        "the new object's pipeline is built"
    );
    assert_eq!(h.running(), Some(Some("b".into())));
    let cancels = factory.cancels.lock().unwrap_or_else(PoisonError::into_inner).clone();
    assert!(
        cancels[0].is_cancelled() && !cancels[1].is_cancelled(),
        "the old one stopped"
    );
    // The old object's deletion, seen late, stops nothing of the new one's.
    h.manager.clone().forget(id(), Some("a".into())).await;
    assert_eq!(h.running(), Some(Some("b".into())));
}

#[tokio::test]
async fn a_transient_watch_error_neither_marks_a_kind_unavailable_nor_stops_a_pipeline() {
    let (client, _api) = FakeApi::client(answer_ok);
    let factory = Arc::new(FakeFactory::default());
    let (manager, _feeds) = Manager::new(
        client.clone(),
        factory.clone(),
        Arc::new(Metrics::for_providers("test", "test")),
        Leadership::always(),
        ManagerConfig {
            interval: Duration::from_secs(3600),
            namespace: "extdns".into(),
            forbidden: Forbidden::register(&mut Metrics::for_providers("test", "test")),
        },
    );
    let status = |code: u16| {
        let status = kube::core::Status::failure("", "").with_code(code);
        Err(watcher::Error::InitialListFailed(kube::Error::Api(Box::new(status))))
    };
    manager.watched(ProviderKind::Cluster, &Ok(Event::InitDone));
    manager.watched(ProviderKind::Namespaced, &status(503));
    manager.watched(ProviderKind::Namespaced, &Err(watcher::Error::NoResourceVersion));
    assert!(
        manager.a_kind_is_unlisted(),
        "a 503 is retried: the kind still waits for its list"
    );
    manager.watched(ProviderKind::Namespaced, &status(404));
    assert!(!manager.a_kind_is_unlisted(), "404: unavailable");
    assert_eq!(
        manager.kinds.lock().unwrap_or_else(PoisonError::into_inner)[&1],
        KindState::Unavailable
    );

    // Listed and running: an error afterwards stops nothing.
    let object = provider("a", true);
    let mut h = Harness::new(client, factory, &[&object]);
    h.manager.reconcile_one(&id(), &object).await;
    h.manager.watched(ProviderKind::Cluster, &status(500));
    h.deliver(Event::Init);
    assert_eq!(h.running(), Some(Some("a".into())), "a re-list under way stops nothing");
}

#[tokio::test]
async fn without_rbac_for_the_finalizer_and_the_status_the_leader_runs_the_provider_and_says_so_once() {
    let (client, api) = FakeApi::client(|r| if r.method == "PATCH" { forbidden() } else { answer_ok(r) });
    let factory = Arc::new(FakeFactory::default());
    let object = provider("a", false);
    let h = Harness::new(client, factory, &[&object]);
    let action = reconcile(Arc::new(object.clone()), h.manager.clone()).await;
    assert!(action.is_ok(), "{action:?}");
    assert_eq!(
        h.running(),
        Some(Some("a".into())),
        "the provider runs without its finalizer"
    );
    assert!(h.forbidden.is_refused(&id(), Write::Finalizer));
    assert!(h.forbidden.is_refused(&id(), Write::Status));
    assert!(!api.requests("PATCH", "/clusterdnsproviders/p").is_empty());
    // Looked at again: still running, nothing rebuilt.
    let again = reconcile(Arc::new(object), h.manager.clone()).await;
    assert!(again.is_ok());
    assert_eq!(h.running(), Some(Some("a".into())));
}

#[tokio::test]
async fn a_pipeline_not_synced_yet_is_looked_at_after_a_second_not_at_the_interval() {
    let (client, _api) = FakeApi::client(answer_ok);
    let factory = Arc::new(FakeFactory::default());
    let object = provider("a", true);
    let h = Harness::new(client, factory, &[&object]);
    h.manager.reconcile_one(&id(), &object).await;
    let action = h.manager.reconcile_one(&id(), &object).await;
    assert_eq!(action, Action::requeue(decide::FIRST_SYNC_LOOK));
}
