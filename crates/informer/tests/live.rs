//! The live cluster against a fake API server: a tower service handed to `kube::Client::new` that serves a
//! LIST per resource path (held back until the test releases it) and then a chunked WATCH stream the test
//! writes events into.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use extdns_informer::view::RouteKind;
use extdns_informer::{Cluster, LiveCluster, LiveOptions, ObjectKey, ResourceKind, UnavailableReason};
use extdns_test_support::logs::Logs;
use futures::StreamExt;
use futures::channel::mpsc;
use http::{Request, Response};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Bytes, Frame};
use serde_json::{Value, json};
use tokio::sync::watch;

type Body = UnsyncBoxBody<Bytes, Infallible>;
type TestResult = Result<(), Box<dyn std::error::Error>>;

/// One resource path the fake serves.
struct Resource {
    list: Value,
    release: watch::Receiver<bool>,
    /// Taken by the first WATCH request; later ones get a stream that never ends.
    events: Option<mpsc::UnboundedReceiver<String>>,
    /// Streaming lists cut short: each of the next streaming watches sends one of these as ADDED objects and
    /// ends, without the bookmark that ends the initial events, once the test lets it.
    cut_short: VecDeque<(Vec<Value>, watch::Receiver<bool>)>,
}

#[derive(Clone, Default)]
struct FakeApi {
    resources: Arc<Mutex<HashMap<String, Resource>>>,
    requests: Arc<Mutex<Vec<http::Uri>>>,
    /// Paths answered with a fixed status and body instead (403 for a forbidden list, 500, the discovery
    /// document at `/apis`).
    fixed: Arc<Mutex<HashMap<String, (u16, Value)>>>,
    /// Whether a watch with `sendInitialEvents=true` streams the list (WatchList); otherwise it is refused
    /// with 422, as a server with the feature off refuses it.
    streaming: Arc<AtomicBool>,
}

/// The test's handle on one resource path.
struct Handle {
    release: watch::Sender<bool>,
    events: mpsc::UnboundedSender<String>,
}

impl Handle {
    fn release(&self) {
        self.release.send_replace(true);
    }

    fn send(&self, kind: &str, object: Value) {
        let line = json!({"type": kind, "object": object}).to_string() + "\n";
        self.events.unbounded_send(line).expect("the watch stream is open");
    }
}

impl FakeApi {
    fn serve(&self, path: &str, list_kind: &str, api_version: &str, items: Vec<Value>) -> Handle {
        let (release_tx, release_rx) = watch::channel(false);
        let (events_tx, events_rx) = mpsc::unbounded();
        let list =
            json!({"apiVersion": api_version, "kind": list_kind, "metadata": {"resourceVersion": "1"}, "items": items});
        self.resources.lock().expect("lock").insert(
            path.to_string(),
            Resource {
                list,
                release: release_rx,
                events: Some(events_rx),
                cut_short: VecDeque::new(),
            },
        );
        Handle {
            release: release_tx,
            events: events_tx,
        }
    }

    /// The next streaming list of `path` sends `items` and its stream ends there, once the returned sender
    /// says `true`; the one after it is served as usual.
    fn cut_short(&self, path: &str, items: Vec<Value>) -> watch::Sender<bool> {
        let (end_tx, end_rx) = watch::channel(false);
        if let Some(r) = self.resources.lock().expect("lock").get_mut(path) {
            r.cut_short.push_back((items, end_rx));
        }
        end_tx
    }

    /// What a list of `path` now holds.
    fn set_items(&self, path: &str, items: Vec<Value>) {
        if let Some(r) = self.resources.lock().expect("lock").get_mut(path) {
            r.list["items"] = Value::Array(items);
        }
    }

    /// Answers `path` with `code` and a Status (or, for 200, `body`) until [`serve`](Self::serve)d.
    fn answer(&self, path: &str, code: u16, body: Value) {
        self.fixed.lock().expect("lock").insert(path.to_string(), (code, body));
    }

    fn forbid(&self, path: &str) {
        let status = json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Forbidden",
            "message": "forbidden", "code": 403});
        self.answer(path, 403, status);
    }

    /// Aggregated discovery (`GET /apis`) listing these (group, version, plural).
    fn discovery(&self, resources: &[(&str, &str, &str)]) {
        let with_kinds: Vec<_> = resources.iter().map(|&(g, v, plural)| (g, v, plural, "X")).collect();
        self.discovery_of_kinds(&with_kinds);
    }

    /// Aggregated discovery listing these Gateway API (version, plural) pairs.
    fn discovery_of_gateway_api(&self, resources: &[(&str, &str)]) {
        let gw = "gateway.networking.k8s.io";
        let resources: Vec<_> = resources.iter().map(|&(v, plural)| (gw, v, plural)).collect();
        self.discovery(&resources);
    }

    /// Aggregated discovery (`GET /apis`) listing these (group, version, plural, kind).
    fn discovery_of_kinds(&self, resources: &[(&str, &str, &str, &str)]) {
        let mut groups: BTreeMap<&str, BTreeMap<&str, Vec<Value>>> = BTreeMap::new();
        for (g, v, plural, kind) in resources {
            groups.entry(g).or_default().entry(v).or_default().push(
                json!({"resource": plural, "responseKind": {"group": g, "version": v, "kind": kind},
                    "scope": "Namespaced", "verbs": ["list", "watch"]}),
            );
        }
        let items: Vec<Value> = groups
            .into_iter()
            .map(|(g, versions)| {
                let versions: Vec<Value> = versions
                    .into_iter()
                    .map(|(v, resources)| json!({"version": v, "resources": resources}))
                    .collect();
                json!({"metadata": {"name": g}, "versions": versions})
            })
            .collect();
        self.answer(
            "/apis",
            200,
            json!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {}, "items": items}),
        );
    }

    /// A core (`v1`) resource at `/api/v1/{path}`.
    fn serve_core(&self, path: &str, list_kind: &str, items: Vec<Value>) -> Handle {
        self.serve(&format!("/api/v1/{path}"), list_kind, "v1", items)
    }

    /// An empty list of Gateway API routes at `version`.
    fn serve_no_routes(&self, version: &str, plural: &str, list_kind: &str) -> Handle {
        let gw = "gateway.networking.k8s.io";
        self.serve(
            &format!("/apis/{gw}/{version}/{plural}"),
            list_kind,
            &format!("{gw}/{version}"),
            vec![],
        )
    }

    fn requests(&self) -> Vec<http::Uri> {
        self.requests.lock().expect("lock").clone()
    }

    fn client(&self) -> kube::Client {
        let fake = self.clone();
        let svc = tower::service_fn(move |req: Request<kube::client::Body>| {
            let fake = fake.clone();
            async move { Ok::<_, Infallible>(fake.handle(req).await) }
        });
        kube::Client::new(svc, "default")
    }

    /// A watch with `sendInitialEvents=true`: 422 when the fake does not stream lists; otherwise (once the
    /// test releases the list) every item as ADDED, the bookmark that ends the initial events, then the
    /// events the test sends. `None` for a path it does not serve (answered 404 like a list).
    async fn streaming_list(&self, path: &str) -> Option<Response<Body>> {
        if !self.streaming.load(Ordering::Relaxed) {
            let status = json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Invalid",
                "message": "ListOptions.meta.k8s.io \"\" is invalid: sendInitialEvents: Forbidden: sendInitialEvents \
                    is forbidden for watch unless the WatchList feature gate is enabled", "code": 422});
            return Some(
                Response::builder()
                    .status(422)
                    .header("content-type", "application/json")
                    .body(Full::new(Bytes::from(status.to_string())).boxed_unsync())
                    .expect("response"),
            );
        }
        let (list, mut release, cut_short) = {
            let mut resources = self.resources.lock().expect("lock");
            let r = resources.get_mut(path)?;
            (r.list.clone(), r.release.clone(), r.cut_short.pop_front())
        };
        let _ = release.wait_for(|r| *r).await;
        if let Some((items, mut end)) = cut_short {
            let lines = items.into_iter().map(|o| {
                let line = json!({"type": "ADDED", "object": o}).to_string() + "\n";
                Ok::<_, Infallible>(Frame::data(Bytes::from(line)))
            });
            let ends = futures::stream::once(async move {
                let _ = end.wait_for(|e| *e).await;
            })
            .filter_map(|()| async { None });
            return Some(
                Response::builder()
                    .header("content-type", "application/json")
                    .body(StreamBody::new(futures::stream::iter(lines).chain(ends)).boxed_unsync())
                    .expect("response"),
            );
        }
        let events = self
            .resources
            .lock()
            .expect("lock")
            .get_mut(path)
            .and_then(|r| r.events.take());
        let mut lines: Vec<String> = list["items"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|o| json!({"type": "ADDED", "object": o}).to_string() + "\n")
            .collect();
        let end = json!({"type": "BOOKMARK", "object": {"apiVersion": list["apiVersion"], "kind": list["kind"].as_str()
            .and_then(|k| k.strip_suffix("List")), "metadata": {"resourceVersion": list["metadata"]["resourceVersion"],
            "annotations": {"k8s.io/initial-events-end": "true"}}}});
        lines.push(end.to_string() + "\n");
        let initial = futures::stream::iter(lines).map(|s| Ok::<_, Infallible>(Frame::data(Bytes::from(s))));
        let body: Body = match events {
            Some(rx) => StreamBody::new(initial.chain(rx.map(|s| Ok::<_, Infallible>(Frame::data(Bytes::from(s))))))
                .boxed_unsync(),
            None => StreamBody::new(initial.chain(futures::stream::pending())).boxed_unsync(),
        };
        Some(
            Response::builder()
                .header("content-type", "application/json")
                .body(body)
                .expect("response"),
        )
    }

    async fn handle(&self, req: Request<kube::client::Body>) -> Response<Body> {
        let uri = req.uri().clone();
        self.requests.lock().expect("lock").push(uri.clone());
        let is_watch = uri.query().is_some_and(|q| q.split('&').any(|p| p == "watch=true"));
        let path = uri.path().to_string();
        let fixed = self.fixed.lock().expect("lock").get(&path).cloned();
        if let Some((code, body)) = fixed.filter(|_| !self.resources.lock().expect("lock").contains_key(&path)) {
            return Response::builder()
                .status(code)
                .header("content-type", "application/json")
                .body(Full::new(Bytes::from(body.to_string())).boxed_unsync())
                .expect("response");
        }
        let streaming_list = uri
            .query()
            .is_some_and(|q| q.split('&').any(|p| p == "sendInitialEvents=true"));
        if is_watch && streaming_list {
            if let Some(response) = self.streaming_list(&path).await {
                return response;
            }
        } else if is_watch {
            let events = self
                .resources
                .lock()
                .expect("lock")
                .get_mut(&path)
                .and_then(|r| r.events.take());
            let body: Body = match events {
                Some(rx) => {
                    StreamBody::new(rx.map(|s| Ok::<_, Infallible>(Frame::data(Bytes::from(s))))).boxed_unsync()
                }
                None => StreamBody::new(futures::stream::pending::<Result<Frame<Bytes>, Infallible>>()).boxed_unsync(),
            };
            return Response::builder()
                .header("content-type", "application/json")
                .body(body)
                .expect("response");
        }
        let found = self
            .resources
            .lock()
            .expect("lock")
            .get(&path)
            .map(|r| (r.list.clone(), r.release.clone()));
        let Some((list, mut release)) = found else {
            // What kube-apiserver answers for a resource it does not serve (a CRD not installed): plain text,
            // to a list and to a watch alike.
            return Response::builder()
                .status(404)
                .header("content-type", "text/plain; charset=utf-8")
                .body(Full::new(Bytes::from("404 page not found\n")).boxed_unsync())
                .expect("response");
        };
        // The list is held back until the test releases it, so the unsynced state can be observed.
        let _ = release.wait_for(|r| *r).await;
        Response::builder()
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(list.to_string())).boxed_unsync())
            .expect("response")
    }
}

fn pod(name: &str, rv: &str, labels: Value, image: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "resourceVersion": rv, "labels": labels,
            "managedFields": [{"manager": "kubelet", "operation": "Update"}]},
        "spec": {"nodeName": "node-1", "containers": [{"name": "app", "image": image}]},
        "status": {"phase": "Running", "podIP": "10.0.0.1", "conditions": [{"type": "Ready", "status": "True"}]}
    })
}

fn service(name: &str, namespace: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": namespace, "resourceVersion": "1"},
        "spec": {"type": "ClusterIP", "clusterIP": "None"}})
}

/// Polls `done` every 10 ms for up to 5 s.
async fn wait_for(what: &str, mut done: impl FnMut() -> bool) -> TestResult {
    tokio::time::timeout(Duration::from_secs(5), async {
        while !done() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .map_err(|_| format!("timed out waiting for {what}"))?;
    Ok(())
}

/// Waits for the change counter to move past `seen`, returning the new value.
async fn next_change(rx: &mut watch::Receiver<u64>, seen: u64) -> Result<u64, Box<dyn std::error::Error>> {
    tokio::time::timeout(Duration::from_secs(5), rx.wait_for(|c| *c > seen)).await??;
    Ok(*rx.borrow())
}

#[tokio::test]
async fn synced_only_after_every_initial_list_completes() -> TestResult {
    let fake = FakeApi::default();
    let pods = fake.serve_core("pods", "PodList", vec![pod("a", "1", json!({"app": "web"}), "img:1")]);
    let services = fake.serve_core("services", "ServiceList", vec![service("web", "default")]);
    let cluster = LiveCluster::start(
        fake.client(),
        &[ResourceKind::Pod, ResourceKind::Service],
        LiveOptions::default(),
    )?;

    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!cluster.synced(), "no list has completed yet");
    assert!(cluster.store().pods("default").is_empty());

    pods.release();
    wait_for("pod a", || cluster.store().pod("default", "a").is_some()).await?;
    assert!(!cluster.synced(), "Services are still listing");
    assert_eq!(cluster.unsynced_kinds(), vec![ResourceKind::Service]);
    assert_eq!(
        *cluster.changes().borrow(),
        0,
        "nothing counts as a change before the view is synced"
    );

    services.release();
    cluster.wait_until_synced(Duration::from_secs(5)).await?;
    assert!(cluster.synced());
    assert_eq!(cluster.store().services().len(), 1);
    assert!(*cluster.changes().borrow() >= 1, "becoming synced is announced");
    Ok(())
}

/// The watcher keeps each object's uid beside its view: what reports on the object (Events, status) reads
/// it from the store, never from the API server. An object made again under its name is a change.
#[tokio::test]
async fn the_uid_of_each_object_comes_with_it_from_the_watcher() -> TestResult {
    const FIRST: &str = "3f2b7c1e-9a4d-4e0b-8c6f-0123456789ab";
    const SECOND: &str = "9e1d2c3b-4a59-4687-b5a4-0123456789ab";
    let with_uid = |uid: &str, rv: &str| {
        let mut s = service("web", "default");
        s["metadata"]["uid"] = json!(uid);
        s["metadata"]["resourceVersion"] = json!(rv);
        s
    };
    let fake = FakeApi::default();
    let services = fake.serve_core("services", "ServiceList", vec![with_uid(FIRST, "1")]);
    services.release();
    let cluster = LiveCluster::start(fake.client(), &[ResourceKind::Service], LiveOptions::default())?;
    cluster.wait_until_synced(Duration::from_secs(5)).await?;
    let key = ObjectKey::new(ResourceKind::Service, "default", "web");
    let uid = |cluster: &LiveCluster| cluster.store().uid(&key).map(|u| u.to_string());
    assert_eq!(uid(&cluster).as_deref(), Some(FIRST));

    let mut changes = cluster.changes();
    let seen = *changes.borrow_and_update();
    services.send("DELETED", with_uid(FIRST, "2"));
    services.send("ADDED", with_uid(SECOND, "3"));
    next_change(&mut changes, seen).await?;
    wait_for("the new uid", || uid(&cluster).as_deref() == Some(SECOND)).await?;
    Ok(())
}

#[tokio::test]
async fn added_modified_and_deleted_objects_reach_the_store_and_bump_changes() -> TestResult {
    let fake = FakeApi::default();
    let pods = fake.serve_core("pods", "PodList", vec![pod("a", "1", json!({"app": "web"}), "img:1")]);
    pods.release();
    let cluster = LiveCluster::start(fake.client(), &[ResourceKind::Pod], LiveOptions::default())?;
    cluster.wait_until_synced(Duration::from_secs(5)).await?;
    let a = cluster.store().pod("default", "a").ok_or("pod a listed")?;
    assert_eq!(a.labels.get("app"), Some("web"));
    assert!(a.ready);

    let mut changes = cluster.changes();
    let c0 = *changes.borrow_and_update();

    pods.send("MODIFIED", pod("a", "2", json!({"app": "api"}), "img:1"));
    let c1 = next_change(&mut changes, c0).await?;
    assert_eq!(
        cluster.store().pod("default", "a").ok_or("pod a")?.labels.get("app"),
        Some("api")
    );

    pods.send("ADDED", pod("b", "3", json!({"app": "web"}), "img:1"));
    let c2 = next_change(&mut changes, c1).await?;
    assert!(cluster.store().pod("default", "b").is_some());
    assert_eq!(cluster.store().pods("default").len(), 2);

    pods.send("DELETED", pod("a", "4", json!({"app": "api"}), "img:1"));
    let c3 = next_change(&mut changes, c2).await?;
    assert!(cluster.store().pod("default", "a").is_none());
    assert_eq!(cluster.store().pods("default").len(), 1);

    // A change to a field no source reads (the image) leaves the view as it was and wakes nobody; the
    // next real change is then the only bump.
    pods.send("MODIFIED", pod("b", "5", json!({"app": "web"}), "img:2"));
    pods.send("MODIFIED", pod("b", "6", json!({"app": "web", "v": "2"}), "img:2"));
    let c4 = next_change(&mut changes, c3).await?;
    assert_eq!(
        cluster.store().pod("default", "b").ok_or("pod b")?.labels.get("v"),
        Some("2")
    );
    assert_eq!(c4, c3 + 1, "the image-only update must not count as a change");
    Ok(())
}

#[tokio::test]
async fn namespaces_and_label_selectors_are_sent_to_the_server() -> TestResult {
    let fake = FakeApi::default();
    // Experimental-channel CRDs: TCPRoute served at v1alpha2 only, so it is watched there.
    fake.discovery_of_gateway_api(&[("v1", "gateways"), ("v1", "listenersets"), ("v1alpha2", "tcproutes")]);
    let handles = [
        fake.serve_core("namespaces/prod/services", "ServiceList", vec![service("web", "prod")]),
        fake.serve_core(
            "nodes",
            "NodeList",
            vec![json!({"metadata": {"name": "n1", "resourceVersion": "1"}})],
        ),
        fake.serve(
            "/apis/gateway.networking.k8s.io/v1/namespaces/infra/gateways",
            "GatewayList",
            "gateway.networking.k8s.io/v1",
            vec![],
        ),
        fake.serve(
            "/apis/gateway.networking.k8s.io/v1/listenersets",
            "ListenerSetList",
            "gateway.networking.k8s.io/v1",
            vec![],
        ),
        fake.serve(
            "/apis/gateway.networking.k8s.io/v1alpha2/namespaces/prod/tcproutes",
            "TCPRouteList",
            "gateway.networking.k8s.io/v1alpha2",
            vec![],
        ),
    ];
    for h in &handles {
        h.release();
    }
    let mut opts = LiveOptions::default();
    opts.namespace = Some("prod".into());
    opts.gateway_namespace = Some("infra".into());
    opts.label_selectors = BTreeMap::from([
        (ResourceKind::Service, "app=web".to_string()),
        (ResourceKind::Gateway, "team in (a,b)".to_string()),
    ]);
    let kinds = [
        ResourceKind::Service,
        ResourceKind::Node,
        ResourceKind::Gateway,
        ResourceKind::ListenerSet,
        ResourceKind::Route(RouteKind::Tcp),
    ];
    let cluster = LiveCluster::start(fake.client(), &kinds, opts)?;
    cluster.wait_until_synced(Duration::from_secs(5)).await?;
    assert_eq!(cluster.store().services().len(), 1);
    assert!(cluster.store().node("n1").is_some());

    let requests = fake.requests();
    let query_of = |path: &str| -> Option<String> {
        requests
            .iter()
            .find(|u| u.path() == path)
            .map(|u| u.query().unwrap_or_default().to_string())
    };
    let svc = query_of("/api/v1/namespaces/prod/services").ok_or("Services listed in prod")?;
    assert!(svc.contains("labelSelector=app%3Dweb"), "{svc}");
    let gw = query_of("/apis/gateway.networking.k8s.io/v1/namespaces/infra/gateways").ok_or("Gateways in infra")?;
    assert!(gw.contains("labelSelector=team"), "{gw}");
    let nodes = query_of("/api/v1/nodes").ok_or("Nodes listed cluster-wide")?;
    assert!(!nodes.contains("labelSelector"), "{nodes}");
    assert!(
        query_of("/apis/gateway.networking.k8s.io/v1/listenersets").is_some(),
        "ListenerSets cluster-wide"
    );
    assert!(query_of("/apis/gateway.networking.k8s.io/v1alpha2/namespaces/prod/tcproutes").is_some());
    assert!(
        requests
            .iter()
            .all(|u| !u.path().contains("pods") && !u.path().contains("endpointslices")),
        "only the requested kinds are watched: {requests:?}"
    );
    Ok(())
}

#[tokio::test]
async fn watch_errors_are_retried_and_keep_the_view_unsynced() -> TestResult {
    // The server fails every list: the view is not complete, and nothing says the kind is missing.
    let fake = FakeApi::default();
    let status =
        json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 500, "message": "etcd down"});
    fake.answer("/apis/gateway.networking.k8s.io/v1/udproutes", 500, status);
    let cluster = LiveCluster::start(
        fake.client(),
        &[ResourceKind::Route(RouteKind::Udp)],
        LiveOptions::default(),
    )?;
    let err = cluster
        .wait_until_synced(Duration::from_millis(300))
        .await
        .expect_err("cannot sync");
    assert!(
        err.to_string()
            .contains("the initial list of UDPRoute did not complete"),
        "{err}"
    );
    assert!(!cluster.synced());
    assert!(
        cluster.store().unavailable_kinds().is_empty(),
        "a failing server is not a missing kind"
    );
    assert!(!fake.requests().is_empty(), "the watcher did try");
    Ok(())
}

fn count(text: &str, needle: &str) -> usize {
    text.matches(needle).count()
}

#[tokio::test]
async fn a_forbidden_or_absent_kind_is_unavailable_the_rest_syncs_and_it_returns_without_a_restart() -> TestResult {
    let logs = Logs::default();
    let _guard = logs.capture();
    let fake = FakeApi::default();
    fake.discovery(&[("discovery.k8s.io", "v1", "endpointslices")]);
    let services = fake.serve_core("services", "ServiceList", vec![service("web", "default")]);
    services.release();
    fake.forbid("/api/v1/nodes");
    let cluster = LiveCluster::start(
        fake.client(),
        &[
            ResourceKind::Service,
            ResourceKind::Node,
            ResourceKind::Route(RouteKind::Tcp),
        ],
        LiveOptions::default(),
    )?;
    cluster.wait_until_synced(Duration::from_secs(5)).await?;
    let store = cluster.store();
    assert_eq!(store.services().len(), 1, "Services sync without Nodes");
    let nodes = store.unavailable(ResourceKind::Node).ok_or("Nodes are unavailable")?;
    assert_eq!((nodes.reason, nodes.status), (UnavailableReason::Forbidden, 403));
    let tcp = store
        .unavailable(ResourceKind::Route(RouteKind::Tcp))
        .ok_or("TCPRoutes are unavailable")?;
    assert_eq!(tcp.reason, UnavailableReason::CrdAbsent);
    assert_eq!(tcp.missing, "CRD tcproutes.gateway.networking.k8s.io");
    assert!(cluster.unsynced_kinds().is_empty(), "unavailable is not unsynced");

    // The watchers re-check with backoff (the first retry comes after about a second); each cause is
    // warned about once.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let text = logs.text();
    assert_eq!(count(&text, "cannot list this kind"), 2, "{text}");
    assert!(
        text.contains("kind=Node") && text.contains("resources [nodes], verbs [get, list, watch]"),
        "{text}"
    );
    let tried = |path: &str| fake.requests().iter().filter(|u| u.path() == path).count();
    assert!(tried("/api/v1/nodes") >= 2, "Nodes are re-checked");

    // The CRD is installed (served at v1alpha2 only) and the Role granted: both are picked up.
    fake.discovery_of_gateway_api(&[("v1alpha2", "tcproutes")]);
    let route = json!({"apiVersion": "gateway.networking.k8s.io/v1alpha2", "kind": "TCPRoute",
        "metadata": {"name": "db", "namespace": "default", "resourceVersion": "1"},
        "spec": {"parentRefs": [{"name": "gw"}], "rules": [{"backendRefs": [{"name": "db", "port": 5432}]}]}});
    fake.serve(
        "/apis/gateway.networking.k8s.io/v1alpha2/tcproutes",
        "TCPRouteList",
        "gateway.networking.k8s.io/v1alpha2",
        vec![route],
    )
    .release();
    fake.serve_core("nodes", "NodeList", vec![]).release();
    let mut changes = cluster.changes();
    let seen = *changes.borrow();
    wait_for("both kinds available", || {
        cluster.store().unavailable_kinds().is_empty() && cluster.store().routes(RouteKind::Tcp).len() == 1
    })
    .await?;
    next_change(&mut changes, seen).await?;
    assert!(
        cluster.take_changes().is_everything(),
        "availability changes every source's view"
    );
    assert!(cluster.synced());
    Ok(())
}

#[tokio::test]
async fn each_kind_is_watched_at_the_served_version_discovery_finds() -> TestResult {
    let fake = FakeApi::default();
    // Gateway API's standard channel: TCPRoute at v1 (v1alpha2 not served); the experimental TLSRoute
    // at v1alpha3.
    fake.discovery_of_gateway_api(&[
        ("v1", "tcproutes"),
        ("v1alpha3", "tlsroutes"),
        ("v1alpha2", "tlsroutes"),
    ]);
    let gw = "gateway.networking.k8s.io";
    fake.serve_no_routes("v1", "tcproutes", "TCPRouteList").release();
    fake.serve(
        &format!("/apis/{gw}/v1alpha3/tlsroutes"),
        "TLSRouteList",
        &format!("{gw}/v1alpha3"),
        vec![],
    )
    .release();
    let cluster = LiveCluster::start(
        fake.client(),
        &[ResourceKind::Route(RouteKind::Tcp), ResourceKind::Route(RouteKind::Tls)],
        LiveOptions::default(),
    )?;
    cluster.wait_until_synced(Duration::from_secs(5)).await?;
    assert!(cluster.store().unavailable_kinds().is_empty());
    let discoveries = fake.requests().iter().filter(|u| u.path() == "/apis").count();
    assert_eq!(discoveries, 1, "one discovery request for every kind");
    Ok(())
}

#[tokio::test]
async fn initial_lists_stream_when_the_server_serves_them_and_fall_back_to_pages_when_refused() -> TestResult {
    let fake = FakeApi::default();
    fake.streaming.store(true, Ordering::Relaxed);
    let services = fake.serve_core(
        "services",
        "ServiceList",
        vec![service("web", "default"), service("api", "default")],
    );
    services.release();
    let cluster = LiveCluster::start(fake.client(), &[ResourceKind::Service], LiveOptions::default())?;
    cluster.wait_until_synced(Duration::from_secs(5)).await?;
    assert_eq!(cluster.store().services().len(), 2);
    let requests = fake.requests();
    let to = |path: &str| {
        requests
            .iter()
            .filter(|u| u.path() == path)
            .cloned()
            .collect::<Vec<_>>()
    };
    let services_requests = to("/api/v1/services");
    assert_eq!(services_requests.len(), 1, "one watch, no LIST: {services_requests:?}");
    let query = services_requests[0].query().unwrap_or_default();
    assert!(
        query.contains("watch=true") && query.contains("sendInitialEvents=true"),
        "{query}"
    );
    // The same watch goes on after the initial events.
    let mut changes = cluster.changes();
    let seen = *changes.borrow_and_update();
    let mut db = service("db", "default");
    db["metadata"]["resourceVersion"] = json!("11");
    services.send("ADDED", db);
    next_change(&mut changes, seen).await?;
    assert_eq!(cluster.store().services().len(), 3);
    drop(cluster);

    // A kind whose CRD is not installed: its streaming watch is answered with text, not a Status; it is
    // found unavailable by a paged list, and streams again once installed.
    let logs = Logs::default();
    let guard = logs.capture();
    let gw = "gateway.networking.k8s.io";
    fake.discovery(&[]);
    let cluster = LiveCluster::start(
        fake.client(),
        &[ResourceKind::Service, ResourceKind::Route(RouteKind::Tcp)],
        LiveOptions::default(),
    )?;
    cluster.wait_until_synced(Duration::from_secs(5)).await?;
    let tcp = cluster
        .store()
        .unavailable(ResourceKind::Route(RouteKind::Tcp))
        .ok_or("TCPRoutes are unavailable")?;
    assert_eq!((tcp.reason, tcp.status), (UnavailableReason::CrdAbsent, 404));
    fake.discovery(&[(gw, "v1", "tcproutes")]);
    fake.serve_no_routes("v1", "tcproutes", "TCPRouteList").release();
    wait_for("TCPRoutes available", || cluster.store().unavailable_kinds().is_empty()).await?;
    assert_eq!(count(&logs.text(), "cannot list this kind"), 1, "{}", logs.text());
    assert_eq!(
        count(&logs.text(), "does not serve streaming lists"),
        0,
        "{}",
        logs.text()
    );
    assert_eq!(
        count(&logs.text(), "watch failed"),
        0,
        "the text answer is no watch failure: {}",
        logs.text()
    );
    drop(guard);
    drop(cluster);

    // A server without WatchList (422): every kind lists in pages, and says so once.
    let logs = Logs::default();
    let _guard = logs.capture();
    let old = FakeApi::default();
    old.serve_core("services", "ServiceList", vec![service("web", "default")])
        .release();
    old.serve_core("pods", "PodList", vec![pod("a", "1", json!({"app": "web"}), "img:1")])
        .release();
    let cluster = LiveCluster::start(
        old.client(),
        &[ResourceKind::Service, ResourceKind::Pod],
        LiveOptions::default(),
    )?;
    cluster.wait_until_synced(Duration::from_secs(5)).await?;
    assert_eq!(cluster.store().services().len(), 1);
    assert_eq!(cluster.store().pods("default").len(), 1);
    let requests = old.requests();
    for path in ["/api/v1/services", "/api/v1/pods"] {
        let of_path: Vec<&http::Uri> = requests.iter().filter(|u| u.path() == path).collect();
        let streamed = of_path
            .iter()
            .filter(|u| u.query().is_some_and(|q| q.contains("sendInitialEvents=true")))
            .count();
        let listed = of_path
            .iter()
            .filter(|u| !u.query().unwrap_or_default().contains("watch="))
            .count();
        assert!(streamed <= 1, "{path}: refused once at most: {of_path:?}");
        assert_eq!(listed, 1, "{path}: one paged LIST: {of_path:?}");
    }
    assert_eq!(
        count(&logs.text(), "does not serve streaming lists"),
        1,
        "{}",
        logs.text()
    );
    Ok(())
}

#[tokio::test]
async fn a_configured_kind_is_watched_at_the_plural_discovery_finds_and_named_as_configured() -> TestResult {
    let logs = Logs::default();
    let _guard = logs.capture();
    let mut opts = LiveOptions::default();
    // `--crd-source-apiversion=externaldns.nginx.org/v1 --crd-source-kind=DNSRecord`: the configured guess
    // at the plural is the kind in lower case plus `s`; the server serves it elsewhere.
    opts.overrides.set_resource(
        ResourceKind::DnsEndpoint,
        "externaldns.nginx.org/v1",
        "DNSRecord",
        "dnsrecords",
    );
    let fake = FakeApi::default();
    fake.discovery_of_kinds(&[("externaldns.nginx.org", "v1", "dnsrecordz", "DNSRecord")]);
    let record = json!({"apiVersion": "externaldns.nginx.org/v1", "kind": "DNSRecord",
        "metadata": {"name": "web", "namespace": "default", "resourceVersion": "1"},
        "spec": {"endpoints": [{"dnsName": "web.example.org", "recordType": "A", "targets": ["192.0.2.1"]}]}});
    fake.serve(
        "/apis/externaldns.nginx.org/v1/dnsrecordz",
        "DNSRecordList",
        "externaldns.nginx.org/v1",
        vec![record],
    )
    .release();
    let cluster = LiveCluster::start(fake.client(), &[ResourceKind::DnsEndpoint], opts.clone())?;
    cluster.wait_until_synced(Duration::from_secs(5)).await?;
    let store = cluster.store();
    assert_eq!(store.dns_endpoints().len(), 1);
    let watched = store
        .watched_at(ResourceKind::DnsEndpoint)
        .ok_or("no resource recorded")?;
    assert_eq!(
        (
            watched.api_version.as_str(),
            watched.kind.as_str(),
            watched.plural.as_str()
        ),
        ("externaldns.nginx.org/v1", "DNSRecord", "dnsrecordz")
    );
    drop(cluster);

    // Not installed: the warning names the configured group, kind and plural, not the table's DNSEndpoint.
    let absent = FakeApi::default();
    absent.discovery(&[]);
    let cluster = LiveCluster::start(absent.client(), &[ResourceKind::DnsEndpoint], opts)?;
    cluster.wait_until_synced(Duration::from_secs(5)).await?;
    let why = cluster
        .store()
        .unavailable(ResourceKind::DnsEndpoint)
        .ok_or("unavailable")?;
    assert_eq!(why.api_version, "externaldns.nginx.org/v1");
    assert_eq!(why.missing, "CRD dnsrecords.externaldns.nginx.org");
    let text = logs.text();
    let warning = text
        .lines()
        .find(|l| l.contains("cannot list this kind"))
        .ok_or("no warning")?;
    assert!(
        warning.contains("kind=DNSRecord") && warning.contains("CRD dnsrecords.externaldns.nginx.org"),
        "{warning}"
    );
    assert!(
        !text.contains("DNSEndpoint") && !text.contains("externaldns.k8s.io"),
        "{text}"
    );
    Ok(())
}

/// Something only an object's body carries, to prove bodies are never logged.
const BODY_MARKER: &str = "only-in-the-object-body";

fn tls_route(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "TLSRoute",
        "metadata": {"name": name, "namespace": "apps", "resourceVersion": "1",
            "annotations": {"note": BODY_MARKER}},
        "spec": spec})
}

#[tokio::test]
async fn an_undecodable_route_is_skipped_and_recorded_and_the_informer_still_syncs() -> TestResult {
    let logs = Logs::default();
    let _guard = logs.capture();
    let fake = FakeApi::default();
    let routes = fake.serve(
        "/apis/gateway.networking.k8s.io/v1/tlsroutes",
        "TLSRouteList",
        "gateway.networking.k8s.io/v1",
        vec![
            tls_route(
                "good",
                json!({"hostnames": ["a.example.com"], "parentRefs": [{"name": "gw"}],
                    "rules": [{"backendRefs": [{"name": "svc", "port": 443}]}]}),
            ),
            // A port of the wrong type: the API server would refuse it, but a CRD without a schema (or a
            // different version's) may serve anything.
            tls_route(
                "bad",
                json!({"hostnames": ["b.example.com"], "parentRefs": [{"name": "gw", "port": "https"}]}),
            ),
            // Stored through v1alpha2, where spec.hostnames is optional, and served through v1 without it.
            tls_route(
                "stored-through-v1alpha2",
                json!({"parentRefs": [{"name": "gw"}], "rules": []}),
            ),
        ],
    );
    routes.release();
    let nodes = fake.serve_core(
        "nodes",
        "NodeList",
        vec![json!({"metadata": {"name": "n1", "resourceVersion": "1"}})],
    );
    nodes.release();
    let cluster = LiveCluster::start(
        fake.client(),
        &[ResourceKind::Route(RouteKind::Tls), ResourceKind::Node],
        LiveOptions::default(),
    )?;
    cluster.wait_until_synced(Duration::from_secs(5)).await?;

    let store = cluster.store();
    let listed: Vec<(String, Vec<String>)> = store
        .routes(RouteKind::Tls)
        .iter()
        .map(|r| (r.meta.name.clone(), r.hostnames.clone()))
        .collect();
    assert_eq!(
        listed,
        vec![
            ("good".to_string(), vec!["a.example.com".to_string()]),
            ("stored-through-v1alpha2".to_string(), vec![]),
        ]
    );
    assert!(store.node("n1").is_some(), "the other kinds sync as usual");
    let bad: Vec<String> = store.undecodable().iter().map(ToString::to_string).collect();
    assert_eq!(bad, vec!["TLSRoute apps/bad"]);

    let text = logs.text();
    let warning = text
        .lines()
        .find(|l| l.contains("cannot be decoded"))
        .ok_or_else(|| format!("no warning logged:\n{text}"))?;
    assert!(
        warning.contains("TLSRoute apps/bad") && warning.contains("spec.parentRefs[0].port"),
        "{warning}"
    );
    assert!(warning.contains("https"), "the offending value is quoted: {warning}");
    assert!(!text.contains(BODY_MARKER), "an object body was logged:\n{text}");

    // Fixed: it decodes now, joins the routes and leaves the record; deleted: gone from both.
    let mut changes = cluster.changes();
    let c0 = *changes.borrow_and_update();
    routes.send(
        "MODIFIED",
        tls_route(
            "bad",
            json!({"hostnames": ["b.example.com"], "parentRefs": [{"name": "gw", "port": 443}]}),
        ),
    );
    let c1 = next_change(&mut changes, c0).await?;
    assert_eq!(store.routes(RouteKind::Tls).len(), 3);
    assert!(store.undecodable().is_empty());
    routes.send("MODIFIED", tls_route("good", json!({"hostnames": "not-a-list"})));
    let c2 = next_change(&mut changes, c1).await?;
    assert_eq!(store.routes(RouteKind::Tls).len(), 2, "the stale view is not served");
    assert_eq!(store.undecodable().len(), 1);
    routes.send("DELETED", tls_route("good", json!({"hostnames": "not-a-list"})));
    next_change(&mut changes, c2).await?;
    assert!(store.undecodable().is_empty());
    Ok(())
}

#[tokio::test]
async fn an_undecodable_service_is_skipped_and_recorded_and_the_informer_still_syncs() -> TestResult {
    let logs = Logs::default();
    let _guard = logs.capture();
    let fake = FakeApi::default();
    let mut bad = service("bad", "default");
    bad["spec"]["ports"] = json!([{"port": "eighty"}]);
    bad["metadata"]["annotations"] = json!({"note": BODY_MARKER});
    let services = fake.serve_core(
        "services",
        "ServiceList",
        vec![service("web", "default"), bad, service("api", "default")],
    );
    services.release();
    let cluster = LiveCluster::start(fake.client(), &[ResourceKind::Service], LiveOptions::default())?;
    cluster.wait_until_synced(Duration::from_secs(5)).await?;

    let store = cluster.store();
    let names: Vec<String> = store.services().iter().map(|s| s.meta.name.clone()).collect();
    assert_eq!(
        names,
        vec!["api", "web"],
        "sorted by namespace and name; the bad one skipped"
    );
    let bad: Vec<String> = store.undecodable().iter().map(ToString::to_string).collect();
    assert_eq!(bad, vec!["Service default/bad"]);
    let text = logs.text();
    assert!(
        text.lines()
            .any(|l| l.contains("Service default/bad") && l.contains("spec.ports[0].port")),
        "{text}"
    );
    assert!(!text.contains(BODY_MARKER), "an object body was logged:\n{text}");
    Ok(())
}

#[test]
fn starting_outside_a_runtime_is_an_error() {
    let client = FakeApi::default();
    let rt = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
    let client = rt.block_on(async { client.client() });
    drop(rt);
    assert!(LiveCluster::start(client, &[ResourceKind::Pod], LiveOptions::default()).is_err());
}

/// An API server answers a list at `resourceVersion=0` from its watch cache whole, ignoring `limit`: 66 MB of
/// JSON for 10,000 Pods held at once, with every object decoded from it (docs/performance.md, "Resident
/// memory"). On a server without streaming lists (the fake refuses them), the watcher's first list must be a
/// paged one, whatever kube's defaults become.
#[tokio::test]
async fn initial_lists_are_paged_and_never_ask_for_the_cache_whole() -> TestResult {
    let fake = FakeApi::default();
    let pods = fake.serve_core("pods", "PodList", vec![]);
    pods.release();
    let cluster = LiveCluster::start(fake.client(), &[ResourceKind::Pod], LiveOptions::default())?;
    cluster.wait_until_synced(Duration::from_secs(5)).await?;
    let requests = fake.requests();
    let list = requests
        .iter()
        .filter(|u| u.path() == "/api/v1/pods")
        .filter_map(|u| u.query())
        .find(|q| !q.contains("watch="))
        .ok_or("Pods listed")?;
    let params: Vec<&str> = list.split('&').collect();
    assert!(params.contains(&"limit=500"), "{list}");
    assert!(!params.contains(&"resourceVersion=0"), "{list}");
    Ok(())
}

fn headless(name: &str, selector: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": "default", "resourceVersion": "2"},
        "spec": {"type": "ClusterIP", "clusterIP": "None", "selector": selector}})
}

/// The label selectors of the requests for `path`, decoded, in the order they were made.
fn selectors_requested(fake: &FakeApi, path: &str) -> Vec<String> {
    fake.requests()
        .iter()
        .filter(|u| u.path() == path)
        .map(|u| {
            let query = u.query().unwrap_or_default();
            let selector = query
                .split('&')
                .find_map(|p| p.strip_prefix("labelSelector="))
                .unwrap_or_default();
            [
                ("+", " "),
                ("%20", " "),
                ("%28", "("),
                ("%29", ")"),
                ("%2C", ","),
                ("%3D", "="),
            ]
            .into_iter()
            .fold(selector.to_string(), |s, (from, to)| s.replace(from, to))
        })
        .collect()
}

/// A fake API server that streams lists.
fn streaming_fake() -> FakeApi {
    let fake = FakeApi::default();
    fake.streaming.store(true, Ordering::Relaxed);
    fake
}

/// A live view of Pods and Services on `fake` (its paths served first), keeping Pods on demand.
fn start_on_demand(fake: &FakeApi) -> Result<LiveCluster, Box<dyn std::error::Error>> {
    let mut opts = LiveOptions::default();
    opts.pods_on_demand = true;
    Ok(LiveCluster::start(
        fake.client(),
        &[ResourceKind::Pod, ResourceKind::Service],
        opts,
    )?)
}

/// Pods `db-0` (app db, tier data), `db-1` (app db, tier cache) and `web-0` (app web); the last two at the
/// given resource version and image generation.
fn three_pods([db1_rv, db1_image]: [&str; 2], [web0_rv, web0_image]: [&str; 2]) -> Vec<Value> {
    vec![
        pod("db-0", "1", json!({"app": "db", "tier": "data"}), "img:1"),
        pod(
            "db-1",
            db1_rv,
            json!({"app": "db", "tier": "cache"}),
            &format!("img:{db1_image}"),
        ),
        pod("web-0", web0_rv, json!({"app": "web"}), &format!("img:{web0_image}")),
    ]
}

/// A source that reads every Pod (the pod source) declares it: the Pods are then watched from the start,
/// unselected, and every one is kept, whatever the Services select.
#[tokio::test]
async fn pods_a_source_reads_whole_are_watched_and_kept_whole_beside_the_demand() -> TestResult {
    let fake = streaming_fake();
    let pods = fake.serve("/api/v1/pods", "PodList", "v1", three_pods(["1", "1"], ["1", "1"]));
    pods.release();
    let services = fake.serve_core(
        "services",
        "ServiceList",
        vec![headless("db", json!({"app": "db", "tier": "data"}))],
    );
    services.release();
    let mut opts = LiveOptions::default();
    opts.pods_on_demand = true;
    opts.read_whole.insert(ResourceKind::Pod);
    let cluster = LiveCluster::start(fake.client(), &[ResourceKind::Pod, ResourceKind::Service], opts)?;
    cluster.wait_until_synced(Duration::from_secs(5)).await?;
    let store = cluster.store();
    assert_eq!(
        selectors_requested(&fake, "/api/v1/pods"),
        [""],
        "every Pod is asked for, by no selector"
    );
    for name in ["db-0", "db-1", "web-0"] {
        assert!(
            store.pod("default", name).is_some(),
            "{name} is kept though no Service selects it"
        );
    }
    Ok(())
}

#[tokio::test]
async fn on_demand_pods_are_watched_by_what_the_services_select_once_the_services_are_listed() -> TestResult {
    let fake = streaming_fake();
    // The fake ignores selectors: it sends every Pod, and the store keeps what the demand selects.
    let pods = fake.serve("/api/v1/pods", "PodList", "v1", three_pods(["1", "1"], ["1", "1"]));
    pods.release();
    let services = fake.serve_core(
        "services",
        "ServiceList",
        vec![headless("db", json!({"app": "db", "tier": "data"}))],
    );
    let cluster = start_on_demand(&fake)?;
    let store = cluster.store();

    // The demand is known once the Services are in; only then are Pods asked for, by a cover of it.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        selectors_requested(&fake, "/api/v1/pods").is_empty(),
        "no Pod is asked for before the Services"
    );
    services.release();
    cluster.wait_until_synced(Duration::from_secs(5)).await?;
    assert_eq!(selectors_requested(&fake, "/api/v1/pods"), ["app in (db)"]);
    assert!(
        store.pod("default", "db-0").is_some(),
        "the headless Service selects it"
    );
    assert!(
        store.pod("default", "db-1").is_none(),
        "the cover sends it, the demand does not keep it"
    );
    assert!(store.pod("default", "web-0").is_none(), "nothing reads it");
    pods.send("ADDED", pod("batch-0", "2", json!({"app": "batch"}), "img:1"));

    // A new selector the cover covers: its Pods, dropped before, are listed once by it.
    let cache_pods = fake.serve_core(
        "namespaces/default/pods",
        "PodList",
        vec![pod("db-1", "3", json!({"app": "db", "tier": "cache"}), "img:2")],
    );
    services.send("ADDED", headless("cache", json!({"app": "db", "tier": "cache"})));
    wait_for("the list of the new selector", || {
        !selectors_requested(&fake, "/api/v1/namespaces/default/pods").is_empty()
    })
    .await?;
    assert_eq!(
        selectors_requested(&fake, "/api/v1/namespaces/default/pods"),
        ["app=db,tier=cache"]
    );
    assert_eq!(
        cluster.unsynced_kinds(),
        vec![ResourceKind::Pod],
        "unsynced until the Pods are in"
    );
    cache_pods.release();
    cluster.wait_until_synced(Duration::from_secs(5)).await?;
    assert!(store.pod("default", "db-1").is_some());
    assert!(store.pod("default", "batch-0").is_none());
    let changes = cluster.take_changes();
    assert!(
        changes.of_kind(ResourceKind::Pod).any(|k| k.name == "db-1"),
        "{changes:?}"
    );

    // A new selector outside the cover: the watcher starts over with a cover of the whole demand, and the
    // view waits for its list, which may have changed anything.
    let pods = fake.serve("/api/v1/pods", "PodList", "v1", three_pods(["3", "2"], ["4", "2"]));
    services.send("ADDED", headless("web", json!({"app": "web"})));
    wait_for("the watch of the wider cover", || {
        selectors_requested(&fake, "/api/v1/pods").len() == 2
    })
    .await?;
    assert_eq!(selectors_requested(&fake, "/api/v1/pods")[1], "app in (db,web)");
    assert_eq!(cluster.unsynced_kinds(), vec![ResourceKind::Pod]);
    pods.release();
    cluster.wait_until_synced(Duration::from_secs(5)).await?;
    let web = store.pod("default", "web-0").ok_or("the listed Pod is stored")?;
    assert_eq!(web.labels.get("app"), Some("web"));
    assert!(store.pod("default", "db-0").is_some() && store.pod("default", "db-1").is_some());
    assert!(cluster.take_changes().is_everything());

    // A Pod that leaves every selector is dropped; one that joins is kept.
    pods.send("MODIFIED", pod("db-0", "5", json!({"app": "gone"}), "img:1"));
    pods.send("MODIFIED", pod("batch-0", "6", json!({"app": "web"}), "img:1"));
    wait_for("the relabelled Pods", || {
        store.pod("default", "db-0").is_none() && store.pod("default", "batch-0").is_some()
    })
    .await?;
    Ok(())
}

#[tokio::test]
async fn on_demand_pods_are_not_watched_while_nothing_selects_them() -> TestResult {
    let fake = streaming_fake();
    let pods = fake.serve_core(
        "pods",
        "PodList",
        vec![pod("web-0", "1", json!({"app": "web"}), "img:1")],
    );
    pods.release();
    let lb = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "lb", "namespace": "default"},
        "spec": {"type": "LoadBalancer", "selector": {"app": "web"}}});
    let services = fake.serve_core("services", "ServiceList", vec![lb]);
    services.release();
    let cluster = start_on_demand(&fake)?;
    cluster.wait_until_synced(Duration::from_secs(5)).await?;
    assert!(
        selectors_requested(&fake, "/api/v1/pods").is_empty(),
        "nothing to watch"
    );
    assert!(cluster.store().pod("default", "web-0").is_none());

    // The first Service that reads Pods starts the watcher, and the view waits for its list.
    services.send("ADDED", headless("web", json!({"app": "web"})));
    wait_for("the Pods listed", || cluster.store().pod("default", "web-0").is_some()).await?;
    assert_eq!(selectors_requested(&fake, "/api/v1/pods"), ["app in (web)"]);
    cluster.wait_until_synced(Duration::from_secs(5)).await?;
    Ok(())
}

#[tokio::test]
async fn on_demand_pods_do_not_hold_the_view_when_services_are_forbidden() -> TestResult {
    let fake = streaming_fake();
    fake.serve_core("pods", "PodList", vec![]).release();
    fake.forbid("/api/v1/services");
    let cluster = start_on_demand(&fake)?;
    cluster.wait_until_synced(Duration::from_secs(5)).await?;
    assert!(
        cluster.store().unavailable(ResourceKind::Service).is_some(),
        "Services are known missing"
    );
    assert!(selectors_requested(&fake, "/api/v1/pods").is_empty());
    Ok(())
}

/// A watch stream's lines reach the store as the watcher's do: `type` before or after `object`, an object the
/// typed model cannot read recorded as undecodable without stopping the rest, a deletion removing its object.
#[test]
fn watch_lines_are_decoded_and_applied_as_the_watcher_does() -> TestResult {
    use k8s_openapi::api::core::v1::Service;
    let view = LiveCluster::detached(&[ResourceKind::Service], LiveOptions::default());
    let line = |event: &str, object: &Value, type_first: bool| {
        if type_first {
            format!(r#"{{"type":"{event}","object":{object}}}"#)
        } else {
            format!(r#"{{"object":{object},"type":"{event}"}}"#)
        }
    };
    let mut bad = service("bad", "default");
    bad["spec"]["ports"] = json!([{"port": "eighty"}]);
    view.apply_watch_line::<Service>(&line("ADDED", &service("web", "default"), true))?;
    view.apply_watch_line::<Service>(&line("ADDED", &service("api", "default"), false))?;
    view.apply_watch_line::<Service>(&line("ADDED", &bad, true))?;
    let names =
        |view: &LiveCluster| -> Vec<String> { view.store().services().iter().map(|s| s.meta.name.clone()).collect() };
    assert_eq!(names(&view), ["api", "web"]);
    let store = view.store();
    let undecodable: Vec<String> = store.undecodable().iter().map(ToString::to_string).collect();
    assert_eq!(undecodable.len(), 1, "{undecodable:?}");
    assert!(undecodable[0].contains("default/bad"), "{undecodable:?}");

    view.apply_watch_line::<Service>(&line("DELETED", &service("web", "default"), true))?;
    assert_eq!(names(&view), ["api"]);
    assert!(
        view.apply_watch_line::<Service>("{\"type\":\"ADDED\"").is_err(),
        "a cut line is an error"
    );
    Ok(())
}

/// The Services' names in the store, sorted.
fn service_names(cluster: &LiveCluster) -> Vec<String> {
    let mut names: Vec<String> = cluster
        .store()
        .services()
        .iter()
        .map(|s| s.meta.name.to_string())
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn a_streaming_list_cut_short_and_started_over_stores_only_what_the_completed_list_holds() -> TestResult {
    let fake = streaming_fake();
    let path = "/api/v1/services";
    let services = fake.serve(
        path,
        "ServiceList",
        "v1",
        vec![service("web", "default"), service("db", "default")],
    );
    // The first attempt sends `old` and `web`, then its stream ends; `old` was deleted before the watcher
    // started the list over, and `db` created.
    fake.cut_short(path, vec![service("old", "default"), service("web", "default")])
        .send_replace(true);
    services.release();
    let cluster = LiveCluster::start(fake.client(), &[ResourceKind::Service], LiveOptions::default())?;
    cluster.wait_until_synced(Duration::from_secs(5)).await?;
    let streamed = |fake: &FakeApi| {
        fake.requests()
            .iter()
            .filter(|u| u.path() == path && u.query().is_some_and(|q| q.contains("sendInitialEvents=true")))
            .count()
    };
    assert_eq!(
        streamed(&fake),
        2,
        "the list was started over once: {:?}",
        fake.requests()
    );
    assert_eq!(service_names(&cluster), ["db", "web"]);

    // A relist after the watch fell out of the server's window (410), cut short the same way: the view
    // listed before serves until a list completes, and then holds exactly what that list holds.
    let end = fake.cut_short(
        path,
        vec![
            service("db", "default"),
            service("web", "default"),
            service("tmp", "default"),
        ],
    );
    fake.set_items(path, vec![service("db", "default")]);
    let mut changes = cluster.changes();
    let seen = *changes.borrow_and_update();
    let gone = json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Expired",
        "message": "too old resource version", "code": 410});
    services.send("ERROR", gone);
    wait_for("the relist", || streamed(&fake) == 3).await?;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(service_names(&cluster), ["db", "web"], "a partial list changes nothing");
    end.send_replace(true);
    next_change(&mut changes, seen).await?;
    assert_eq!(streamed(&fake), 4, "{:?}", fake.requests());
    assert_eq!(service_names(&cluster), ["db"]);
    Ok(())
}
