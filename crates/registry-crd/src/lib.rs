//! The CRD registry (`--registry=crd`, external-dns v0.23): the ownership of each record kept in a
//! DNSRecord object (`externaldns.k8s.io/v1alpha1`) in one namespace, instead of a TXT record beside it.
//!
//! The objects are external-dns's, read and written as it does, so either controller takes over from the
//! other and neither changes anything the other wrote:
//! - one object per record, named by [`object_name`], labelled `externaldns.k8s.io/owner: <owner id>`;
//! - `spec.endpoint` is the record in external-dns's endpoint JSON (labels `owner` and `resource`
//!   included);
//! - `status.conditions` `Ready`: True with reason `Programmed` once the provider holds the record; False
//!   with `Accepted` while a write is under way and `Failed` when the provider refused it.
//!
//! The current records are the `Ready` objects of this owner id: a record in the zone without one is
//! invisible (as in external-dns, there is no migration from TXT records: the plan creates what it wants,
//! and the objects claim it). The provider is read too, for what its writes need (its read state) and its
//! zones, never for ownership.
//!
//! The order of writes keeps every record in the zone claimed by an object, and no object claiming a
//! record the provider refused:
//! - create: the object first (not `Ready`), then the record, then `Ready`. A crash in between leaves an
//!   object that is not `Ready`: the next sync creates the record again and takes the object over. A
//!   refused record leaves its object `Failed`, which claims nothing.
//! - update: the object's new spec and `Accepted` first, then the record, then `Programmed`. A refused
//!   update puts the old spec back as `Programmed`: the zone still holds the old record, and its object
//!   must keep claiming it (external-dns leaves it `Failed`, which would hand the old record to nobody).
//! - delete: the record first, then the object. The other order would leave, after a crash, a record in
//!   the zone no object claims; this one leaves at worst an object whose record is gone, which the next
//!   sync deletes again. A refused delete keeps its object.
//!
//! An object of this name that belongs to another owner id is never taken: that change is not sent to
//! the provider and is reported as failed (external-dns would overwrite the other owner's spec). The one
//! exception is the hand-over of docs/migration.md: with `--txt-adopt-from-owner=<old>`
//! ([`CrdRegistryConfig::adopting_from`]) the `Ready` objects of `<old>` whose record says it was released
//! to us (`released-to`, written into `spec.endpoint`'s labels by the releaser's plan, as any label) are
//! read too, and the plan's adoption (an update of an identical record) rewrites the object in place, owner
//! label and spec in one write: the record is never without an object claiming it, nor claimed twice.
//!
//! A record's object, as both controllers name and read it (no API server needed to see the shape):
//!
//! ```
//! use extdns_endpoint::{Endpoint, RecordType};
//! use extdns_registry_crd::object::{self, Stage};
//! use extdns_registry_crd::object_name;
//!
//! let web = Endpoint::new("web.example.org", RecordType::A, ["192.0.2.10"]);
//! let name = object_name(&web);
//! // The DNS name dashed, then 8 hex digits of sha256("web.example.org/A/").
//! assert!(name.starts_with("web-example-org-") && name.len() == "web-example-org-".len() + 8);
//!
//! let mut record = object::new_object(&name, "external-dns", "my-cluster", &web);
//! assert_eq!(object::owner(&record), Some("my-cluster"));
//! // Not current until the provider holds the record.
//! assert!(!object::is_ready(&record));
//! object::set_ready(&mut record, Stage::Programmed, "written", "2026-11-28T00:00:00Z");
//! assert!(object::is_ready(&record));
//! assert_eq!(object::endpoint(&record)?.dns_name, web.dns_name);
//! # Ok::<(), serde_json::Error>(())
//! ```

#[cfg(test)]
mod handover_tests;
mod name;
mod namespace;
pub mod object;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use extdns_endpoint::{Change, DomainFilter, Endpoint, label};
use extdns_provider::backoff::Backoff;
use extdns_provider::{ChangeFailure, FailureKind, Provider, ProviderError, Unit};
use extdns_registry::{Once, Registry, RegistryError, Snapshot, Written, claims};
use futures::StreamExt;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, PostParams};
use tracing::{debug, warn};

pub use name::{is_label_value, object_name};
use object::Stage;

/// How many DNSRecord writes are in flight at once.
const CONCURRENCY: usize = 8;
/// How many times one object is read and written again after another writer changed it meanwhile (409).
const CONFLICT_ATTEMPTS: usize = 5;
/// Objects per page of the list.
const PAGE: u32 = 500;

/// Why a CRD registry cannot be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CrdRegistryError {
    /// The owner id is empty: every record would look unowned.
    #[error("the owner id must not be empty")]
    EmptyOwnerId,
    /// The owner id cannot be the value of the owner label.
    #[error(
        "the owner id {0:?} cannot be a Kubernetes label value (at most 63 characters of A-Z, a-z, 0-9, \
         '-', '_' and '.', beginning and ending alphanumeric), which the DNSRecords' owner label needs"
    )]
    InvalidOwnerId(String),
    /// `--txt-adopt-from-owner` names our own owner id, or is no label value.
    #[error("--txt-adopt-from-owner={0:?} must be another owner id that is a Kubernetes label value")]
    InvalidAdoptFrom(String),
}

/// Why a record's DNSRecord could not be claimed before the provider writes it: the record is then not
/// written, and this is its failure.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClaimError {
    /// The API server refused or failed the write.
    #[error("cannot write {object}: {source}")]
    Write {
        /// The DNSRecord, as messages name it.
        object: String,
        /// The API's error.
        #[source]
        source: kube::Error,
    },
    /// Another owner's DNSRecord holds the record.
    #[error("{object} belongs to owner {owner:?}, not {ours:?}; the record is left alone")]
    Owned {
        /// The DNSRecord, as messages name it.
        object: String,
        /// Its owner label's value (empty without one).
        owner: String,
        /// Our owner id.
        ours: String,
    },
    /// The DNSRecord changed under every attempt to write it.
    #[error("{object} kept changing while it was written")]
    KeptChanging {
        /// The DNSRecord, as messages name it.
        object: String,
    },
}

impl ClaimError {
    /// What kind of failure it is for the record: another owner's record is refused; an API error is of
    /// its own kind ([`kind_of`]); an object that kept changing may settle by the next sync.
    pub fn kind(&self) -> FailureKind {
        match self {
            ClaimError::Write { source, .. } => kind_of(source),
            ClaimError::Owned { .. } => FailureKind::Refused,
            ClaimError::KeptChanging { .. } => FailureKind::Transient,
        }
    }
}

/// The CRD registry's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CrdRegistryConfig {
    /// `--txt-owner-id`: the owner label's value.
    pub owner_id: String,
    /// `--crd-registry-namespace`, or the controller's own ([`default_namespace`]).
    pub namespace: String,
    /// `--txt-adopt-from-owner`: the owner whose DNSRecords released to us are read and taken over.
    pub adopt_from: Option<String>,
}

impl CrdRegistryConfig {
    /// The settings, the owner id checked.
    pub fn new(owner_id: &str, namespace: &str) -> Result<Self, CrdRegistryError> {
        if owner_id.is_empty() {
            return Err(CrdRegistryError::EmptyOwnerId);
        }
        if !is_label_value(owner_id) {
            return Err(CrdRegistryError::InvalidOwnerId(owner_id.to_string()));
        }
        Ok(CrdRegistryConfig {
            owner_id: owner_id.to_string(),
            namespace: namespace.to_string(),
            adopt_from: None,
        })
    }

    /// Adopting the records `owner` releases to us (`--txt-adopt-from-owner`); an empty `owner` adopts
    /// nothing.
    pub fn adopting_from(mut self, owner: &str) -> Result<Self, CrdRegistryError> {
        if owner.is_empty() {
            self.adopt_from = None;
            return Ok(self);
        }
        if owner == self.owner_id || !is_label_value(owner) {
            return Err(CrdRegistryError::InvalidAdoptFrom(owner.to_string()));
        }
        self.adopt_from = Some(owner.to_string());
        Ok(self)
    }
}

/// The namespace of the DNSRecords when `--crd-registry-namespace` is not given, as external-dns finds its
/// own: the kubeconfig context's namespace, else in a pod `POD_NAMESPACE`, else the service account's
/// namespace (which kube's in-cluster configuration reads into `client_namespace`), else `default`.
/// `client_namespace` is the client's default namespace (`default` when nothing named one).
pub fn default_namespace(client_namespace: &str, pod_namespace: Option<&str>) -> String {
    let pod = pod_namespace.map(str::trim).filter(|n| !n.is_empty());
    match (client_namespace, pod) {
        ("default" | "", Some(pod)) => pod.to_string(),
        ("", None) => "default".to_string(),
        (ns, _) => ns.to_string(),
    }
}

/// The CRD registry over a provider, with the API server's DNSRecords as its store.
pub struct CrdRegistry {
    provider: Arc<dyn Provider>,
    api: Api<DynamicObject>,
    config: CrdRegistryConfig,
    backoff: Backoff,
    /// DNSRecords already warned about for claiming a record another owner's DNSRecord claims too
    /// (#5457): read at every sync, warned about once.
    contested: Once,
}

impl std::fmt::Debug for CrdRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CrdRegistry")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// What became of one unit at the provider.
enum Outcome<'a> {
    Written,
    Refused(&'a str),
}

impl CrdRegistry {
    /// A registry keeping `provider`'s ownership in DNSRecords through `client`.
    pub fn new(client: kube::Client, provider: Arc<dyn Provider>, config: CrdRegistryConfig) -> Self {
        let api = Api::namespaced_with(client, &config.namespace, &object::api_resource());
        CrdRegistry {
            provider,
            api,
            config,
            // API server calls are quick: a few seconds of retries, well inside a sync.
            backoff: Backoff {
                initial: Duration::from_millis(200),
                max: Duration::from_secs(5),
                ..Backoff::default()
            },
            contested: Once::default(),
        }
    }

    /// The settings the registry runs with.
    pub fn config(&self) -> &CrdRegistryConfig {
        &self.config
    }

    fn is_ours(&self, e: &Endpoint) -> bool {
        e.owner() == Some(self.config.owner_id.as_str())
    }

    /// Whether `e` is a record released to us by the owner we adopt from.
    fn adopts(&self, e: &Endpoint) -> bool {
        claims::adopts(self.config.adopt_from.as_deref(), &self.config.owner_id, e)
    }

    /// Whether a change is written at all: updates and deletes of records that are not ours are dropped,
    /// whatever the plan said, but for the update adopting a record released to us.
    fn writes(&self, change: &Change) -> bool {
        match change {
            Change::Create(_) => true,
            Change::Delete(r) => self.is_ours(r),
            Change::Update { old, new } => (self.is_ours(old) || self.adopts(old)) && self.is_ours(new),
        }
    }

    /// `r` as its object holds it: owned by us.
    fn owned(&self, r: &Endpoint) -> Endpoint {
        r.clone().with_label(label::OWNER, self.config.owner_id.clone())
    }

    /// One record per name, type and set identifier, however many DNSRecords claim it (#5457). A record
    /// has one object name, but an object made by hand under another name, or the adopted owner's beside
    /// ours (`--txt-adopt-from-owner`), may claim it too: the claims are settled by the registries' one rule
    /// ([`claims::settle`]): one owner's agree (the first is kept); two owners' make the record read as the
    /// other owner's, released to no one, so neither updates, deletes nor adopts it, and a warning names
    /// both until one claim is removed.
    fn settle_claims(&self, records: Vec<Endpoint>) -> Vec<Endpoint> {
        let mut at: std::collections::HashMap<(String, String, String), usize> = std::collections::HashMap::new();
        let mut settled: Vec<Endpoint> = Vec::with_capacity(records.len());
        for r in records {
            let key = (
                r.dns_name.to_ascii_lowercase(),
                r.record_type.to_string(),
                r.set_identifier.clone(),
            );
            let Some(&i) = at.get(&key) else {
                at.insert(key, settled.len());
                settled.push(r);
                continue;
            };
            let kept = &mut settled[i];
            let labels = claims::settle(&self.config.owner_id, std::mem::take(&mut kept.labels), r.labels);
            kept.labels = labels.labels(&self.describe(&object_name(kept)), |n| self.contested.first(n));
        }
        settled
    }

    fn describe(&self, name: &str) -> String {
        format!("DNSRecord {}/{name}", self.config.namespace)
    }

    /// Every DNSRecord of `owner`, page by page.
    async fn list(&self, owner: &str) -> Result<Vec<DynamicObject>, RegistryError> {
        let selector = format!("{}={owner}", object::OWNER_LABEL);
        let mut objects = Vec::new();
        let mut next: Option<String> = None;
        loop {
            let mut params = ListParams::default().labels(&selector).limit(PAGE);
            if let Some(token) = &next {
                params = params.continue_token(token);
            }
            let page = self
                .call("list DNSRecords", || self.api.list(&params))
                .await
                .map_err(|source| RegistryError::Store {
                    what: format!(
                        "cannot list the DNSRecords of owner {owner} in namespace {}",
                        self.config.namespace
                    ),
                    source: Box::new(source),
                })?;
            objects.extend(page.items);
            next = page.metadata.continue_.filter(|t| !t.is_empty());
            if next.is_none() {
                return Ok(objects);
            }
        }
    }

    /// One API call, retried with backoff while the API server is unavailable or overloaded.
    async fn call<T, F, Fut>(&self, what: &str, attempt: F) -> Result<T, kube::Error>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, kube::Error>>,
    {
        self.backoff.retry(what, attempt, kind_of).await
    }

    async fn get(&self, name: &str) -> Result<Option<DynamicObject>, kube::Error> {
        self.call("get a DNSRecord", || self.api.get_opt(name)).await
    }

    /// Makes `object` hold `endpoint` (when given) with `Ready` at `stage`, reading it again when
    /// another writer changed it meanwhile. Writes only what differs. `None` when the object is gone.
    async fn write(
        &self,
        mut object: DynamicObject,
        endpoint: Option<&Endpoint>,
        stage: Stage,
        message: &str,
    ) -> Result<Option<DynamicObject>, kube::Error> {
        let name = object.metadata.name.clone().unwrap_or_default();
        let now = now();
        let params = PostParams::default();
        for _ in 0..CONFLICT_ATTEMPTS {
            if let Some(e) = endpoint
                && object.data["spec"]["endpoint"] != serde_json::json!(e)
            {
                object::set_endpoint(&mut object, e);
                match self
                    .call("update a DNSRecord", || self.api.replace(&name, &params, &object))
                    .await
                {
                    Ok(o) => object = o,
                    Err(e) if code(&e) == Some(409) => {
                        let Some(o) = self.get(&name).await? else {
                            return Ok(None);
                        };
                        object = o;
                        continue;
                    }
                    Err(e) => return Err(e),
                }
            }
            let before = object.data["status"].clone();
            object::set_ready(&mut object, stage, message, &now);
            if object.data["status"] == before {
                return Ok(Some(object));
            }
            let status = || self.api.replace_status(&name, &params, &object);
            match self.call("update a DNSRecord's status", status).await {
                Ok(o) => return Ok(Some(o)),
                Err(e) if code(&e) == Some(409) => match self.get(&name).await? {
                    Some(o) => object = o,
                    None => return Ok(None),
                },
                Err(e) => return Err(e),
            }
        }
        Err(kube::Error::Api(Box::new(
            kube::core::Status::failure(
                &format!("{name} kept changing under {CONFLICT_ATTEMPTS} attempts to write it"),
                "Conflict",
            )
            .with_code(409),
        )))
    }

    /// Before the provider writes `desired` (a create, or an update's new side): its object holds it, not
    /// `Ready` (a new object has no status yet; an existing one is made `Accepted`). An object of another
    /// owner is refused.
    async fn claim(&self, desired: &Endpoint, exists: bool) -> Result<DynamicObject, ClaimError> {
        let name = object_name(desired);
        let failed = |source: kube::Error| ClaimError::Write {
            object: self.describe(&name),
            source,
        };
        let params = PostParams::default();
        for attempt in 0..CONFLICT_ATTEMPTS {
            let current = if exists || attempt > 0 {
                self.get(&name).await.map_err(failed)?
            } else {
                None
            };
            let Some(mut current) = current else {
                let new = object::new_object(&name, &self.config.namespace, &self.config.owner_id, desired);
                match self.call("create a DNSRecord", || self.api.create(&params, &new)).await {
                    Ok(o) => return Ok(o),
                    Err(e) if code(&e) == Some(409) => continue,
                    Err(e) => return Err(failed(e)),
                }
            };
            match object::owner(&current) {
                Some(owner) if owner == self.config.owner_id => {}
                // Phase 2 of a hand-over: the object changes owner in the same write as its spec.
                Some(owner)
                    if self.config.adopt_from.as_deref() == Some(owner)
                        && object::endpoint(&current).is_ok_and(|e| self.adopts(&e)) =>
                {
                    object::set_owner(&mut current, &self.config.owner_id);
                }
                other => {
                    return Err(ClaimError::Owned {
                        object: self.describe(&name),
                        owner: other.unwrap_or_default().to_string(),
                        ours: self.config.owner_id.clone(),
                    });
                }
            }
            let message = "taken into the plan; not yet written to the provider";
            match self.write(current, Some(desired), Stage::Accepted, message).await {
                Ok(Some(o)) => return Ok(o),
                Ok(None) => continue,
                Err(e) => return Err(failed(e)),
            }
        }
        Err(ClaimError::KeptChanging {
            object: self.describe(&name),
        })
    }

    /// The object a change's record needs before the provider writes it (none for a delete).
    async fn intend(&self, change: &Change) -> Result<Option<DynamicObject>, ChangeFailure> {
        let claimed = match change {
            Change::Create(r) => self.claim(&self.owned(r), false).await,
            Change::Update { new, .. } => self.claim(new, true).await,
            Change::Delete(_) => return Ok(None),
        };
        claimed
            .map(Some)
            .map_err(|e| ChangeFailure::new(change.endpoint(), e.kind(), e.to_string()))
    }

    /// After the provider: the object says what became of its record. Failures here are logged, not
    /// returned: the record's write happened (or not) either way, and the next sync's read repairs the
    /// object (an object not `Ready` is created again, a delete whose object stayed is deleted again).
    async fn settle(&self, change: &Change, object: Option<DynamicObject>, outcome: Outcome<'_>) {
        let result = match (change, object, outcome) {
            (Change::Create(_) | Change::Update { .. }, Some(o), Outcome::Written) => self
                .write(o, None, Stage::Programmed, "written to the provider")
                .await
                .map(drop),
            (Change::Create(_), Some(o), Outcome::Refused(why)) => self
                .write(
                    o,
                    None,
                    Stage::Failed,
                    &format!("the provider refused the record: {why}"),
                )
                .await
                .map(drop),
            (Change::Update { old, new }, Some(o), Outcome::Refused(why)) => {
                let message = format!(
                    "the provider refused the update to {}: {why}; the record keeps its previous value",
                    targets(new)
                );
                self.write(o, Some(old), Stage::Programmed, &message).await.map(drop)
            }
            (Change::Delete(r), _, Outcome::Written) => {
                let name = object_name(r);
                let params = DeleteParams::default();
                let delete = || self.api.delete(&name, &params);
                match self.call("delete a DNSRecord", delete).await {
                    Err(e) if code(&e) != Some(404) => Err(e),
                    _ => Ok(()),
                }
            }
            _ => Ok(()),
        };
        if let Err(e) = result {
            warn!(
                record = %change.record_name(),
                "cannot update the DNSRecord of this record after the provider's write (the next sync retries): {e}"
            );
        }
    }
}

#[async_trait]
impl Registry for CrdRegistry {
    async fn records(&self) -> Result<Snapshot, RegistryError> {
        let adopting = async {
            match self.config.adopt_from.as_deref() {
                Some(from) => self.list(from).await,
                None => Ok(Vec::new()),
            }
        };
        let (read, objects, released) =
            tokio::join!(self.provider.records(), self.list(&self.config.owner_id), adopting);
        let (read, mut objects) = (read?, objects?);
        // The adopted owner's objects count only where they are released to us (the rest stay invisible,
        // as every other owner's).
        objects.extend(
            released?
                .into_iter()
                .filter(|o| object::endpoint(o).is_ok_and(|e| self.adopts(&e))),
        );
        let mut records = Vec::with_capacity(objects.len());
        for o in &objects {
            // Only a record the provider holds is current; one still Accepted or Failed is created again.
            if !object::is_ready(o) {
                continue;
            }
            match object::endpoint(o) {
                Ok(e) => records.push(e),
                Err(e) => warn!(
                    namespace = %self.config.namespace,
                    name = o.metadata.name.as_deref().unwrap_or_default(),
                    "DNSRecord skipped: its spec.endpoint does not decode: {e}"
                ),
            }
        }
        let records = self.settle_claims(records);
        debug!(objects = objects.len(), records = records.len(), "DNSRecords read");
        Ok(Snapshot::new(records, read.state))
    }

    async fn apply(&self, snapshot: &Snapshot, changes: &[Change]) -> Result<Written, RegistryError> {
        let changes: Vec<&Change> = changes.iter().filter(|c| self.writes(c)).collect();
        // The futures are made first: a stream's closure over borrowed changes is not `Send` enough for
        // the trait's boxed future.
        let intents: Vec<_> = changes.iter().map(|c| self.intend(c)).collect();
        let intents: Vec<Result<Option<DynamicObject>, ChangeFailure>> =
            futures::stream::iter(intents).buffered(CONCURRENCY).collect().await;
        let mut failures = Vec::new();
        let mut claimed = Vec::with_capacity(changes.len());
        for (change, intent) in changes.into_iter().zip(intents) {
            match intent {
                Ok(object) => claimed.push((change, object)),
                Err(failure) => failures.push(failure),
            }
        }
        let units: Vec<Unit<'_>> = claimed.iter().map(|(c, _)| Unit::new(c)).collect();
        let result = if units.is_empty() {
            Ok(())
        } else {
            self.provider.apply(snapshot.provider_state(), &units).await
        };
        drop(units);
        // The units the provider did not write: those it names, or every one when it names none.
        let (named, whole): (&[ChangeFailure], Option<(FailureKind, String)>) = match &result {
            Ok(()) => (&[], None),
            Err(ProviderError::Partial { failures }) => (failures, None),
            Err(e) => (&[], Some((e.kind().unwrap_or(FailureKind::Fatal), e.to_string()))),
        };
        if let Some((kind, why)) = &whole
            && !failures.is_empty()
        {
            // Some changes never reached the provider: they are named beside the ones it failed.
            failures.extend(
                claimed
                    .iter()
                    .map(|(c, _)| ChangeFailure::new(c.endpoint(), *kind, why.clone())),
            );
        }
        let settled: Vec<_> = claimed
            .into_iter()
            .map(|(change, object)| {
                let failed = named.iter().find(|f| f.is_for(change.endpoint()));
                let why = whole.as_ref().map(|(_, why)| why.as_str());
                let outcome = match why.or_else(|| failed.map(|f| f.reason.message.as_str())) {
                    Some(why) => Outcome::Refused(why),
                    None => Outcome::Written,
                };
                self.settle(change, object, outcome)
            })
            .collect();
        let _: Vec<()> = futures::stream::iter(settled)
            .buffer_unordered(CONCURRENCY)
            .collect()
            .await;
        match result {
            Ok(()) if failures.is_empty() => Ok(Written::default()),
            Err(e) if failures.is_empty() => Err(e.into()),
            Err(ProviderError::Partial { failures: refused }) => {
                failures.extend(refused);
                Err(ProviderError::Partial { failures }.into())
            }
            Ok(()) | Err(_) => Err(ProviderError::Partial { failures }.into()),
        }
    }

    /// The DNSRecords this apply wrote are what a read would now find: each written change folded in, a
    /// created record owned by us.
    fn fold_applied(&self, snapshot: &mut Snapshot, changes: &[Change], _: Written) -> bool {
        let owner = self.config.owner_id.clone();
        let written = changes.iter().filter(|c| self.writes(c));
        snapshot.records.fold(written, |_, change| match change {
            Change::Create(r) => {
                let mut labels = r.labels_as_written();
                labels.insert(label::OWNER.to_string(), owner.clone());
                Some(labels)
            }
            Change::Update { new, .. } => Some(new.labels_as_written()),
            Change::Delete(_) => None,
        });
        self.provider.read_state_outlives_writes()
    }

    async fn adjust_endpoints(&self, endpoints: Vec<Endpoint>) -> Result<Vec<Endpoint>, RegistryError> {
        extdns_registry::plain_adjusted(self.provider.as_ref(), endpoints).await
    }

    fn domain_filter(&self) -> DomainFilter {
        self.provider.domain_filter()
    }
}

/// A record's targets as a list, for messages.
fn targets(r: &Endpoint) -> String {
    let all: Vec<String> = r.targets.0.iter().map(ToString::to_string).collect();
    format!("[{}]", all.join(", "))
}

/// The HTTP status of an API error.
fn code(e: &kube::Error) -> Option<u16> {
    match e {
        kube::Error::Api(s) => Some(s.code),
        _ => None,
    }
}

/// The kind of an API server's error: a 429 is throttling, a 5xx or no answer transient (worth another
/// try), 401 and 403 refused credentials, a 422 (the object is invalid: a name or label its schema
/// refuses) the one record's fault, so only that record fails; anything else final (a conflict is
/// handled where it comes).
fn kind_of(e: &kube::Error) -> FailureKind {
    match e {
        kube::Error::Api(s) => match s.code {
            429 => FailureKind::Throttled { retry_after: None },
            500..=599 => FailureKind::Transient,
            401 | 403 => FailureKind::Auth,
            422 => FailureKind::Refused,
            _ => FailureKind::Fatal,
        },
        kube::Error::HyperError(_) | kube::Error::Service(_) => FailureKind::Transient,
        _ => FailureKind::Fatal,
    }
}

/// Now, to the second (RFC 3339), as Kubernetes writes condition times.
fn now() -> String {
    use k8s_openapi::jiff::Timestamp;
    let t = Timestamp::now();
    Timestamp::from_second(t.as_second()).unwrap_or(t).to_string()
}

#[cfg(test)]
mod claim_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_namespace_defaults_as_external_dns_finds_its_own() {
        assert_eq!(default_namespace("dns", Some("pod-ns")), "dns");
        assert_eq!(default_namespace("default", Some("pod-ns")), "pod-ns");
        assert_eq!(default_namespace("default", Some(" ")), "default");
        assert_eq!(default_namespace("", None), "default");
        assert_eq!(default_namespace("sa-ns", None), "sa-ns");
    }

    #[test]
    fn owner_ids_are_checked_once() {
        assert!(matches!(
            CrdRegistryConfig::new("", "ns"),
            Err(CrdRegistryError::EmptyOwnerId)
        ));
        assert!(matches!(
            CrdRegistryConfig::new("not a label", "ns"),
            Err(CrdRegistryError::InvalidOwnerId(_))
        ));
        assert!(CrdRegistryConfig::new("cluster-1", "ns").is_ok());
    }

    #[test]
    fn only_unavailable_servers_are_retried() {
        let api = |code: u16| kube::Error::Api(Box::new(kube::core::Status::failure("x", "y").with_code(code)));
        assert_eq!(kind_of(&api(503)), FailureKind::Transient);
        assert_eq!(kind_of(&api(429)), FailureKind::Throttled { retry_after: None });
        assert_eq!(kind_of(&api(409)), FailureKind::Fatal);
        assert_eq!(kind_of(&api(403)), FailureKind::Auth);
        assert_eq!(
            kind_of(&api(422)),
            FailureKind::Refused,
            "an invalid object is its record's fault"
        );
        let owned = ClaimError::Owned {
            object: "DNSRecord ns/x".into(),
            owner: "other".into(),
            ours: "us".into(),
        };
        assert_eq!(owned.kind(), FailureKind::Refused);
        assert!(owned.to_string().contains("belongs to owner \"other\""), "{owned}");
        assert_eq!(code(&api(404)), Some(404));
    }
}
