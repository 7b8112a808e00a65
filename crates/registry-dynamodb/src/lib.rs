//! The DynamoDB registry (`--registry=dynamodb`): ownership labels kept in a DynamoDB table instead of TXT
//! records, in external-dns's layout, so a zone and its table can pass between external-dns and extdns in
//! either direction with neither changing anything.
//!
//! The table (external-dns's `registry/dynamodb`): hash key `k` of type `S`, no range key; one item per
//! owned record, `k` = `<name>#<type>#<set identifier>`, `o` = the owner id, `l` = a map of the record's
//! other labels (`resource`, ...) as strings. Items are written with PartiQL through
//! `BatchExecuteStatement` (25 a call): `INSERT` claims a record (refused with `DuplicateItem` when another
//! owner holds the key), `UPDATE ... SET "l"` changes its labels, `DELETE ... WHERE "k"=? AND "o"=?` releases
//! only our own. A read checks the table's schema (`DescribeTable`) and reads our items (a consistent `Scan`
//! filtered on `o`).
//!
//! Ownership TXT records of the TXT registry are migrated as external-dns does: a record without an item
//! takes the labels of its TXT record and the provider-specific property `dynamodb/needs-migration`, so the
//! plan updates it and the update inserts its item; from then on its TXT record is left to the plan (deleted
//! only where TXT is a managed record type).
//!
//! Records change owner in two ways, each an update whose item statement rewrites `o` and `l` in one
//! write, on the condition that the item still names the owner it is taken from (`UPDATE ... SET "o"=?
//! SET "l"=? WHERE "k"=? AND "o"=?`), so a record is never without an item nor claimed by two:
//! - `--migrate-from-txt-owner=<old>`: the items (and the ownership TXT records) of `<old>` read as ours;
//!   the plan updates every record of ours while the flag is set, identical ones too (external-dns #6671),
//!   and each update takes its item over;
//! - the two-phase hand-over of docs/migration.md: the releaser's plan (`--txt-release-to-owner`) writes
//!   `released-to` into its items' labels; the adopter (`--txt-adopt-from-owner=<releaser>`) reads the
//!   releaser's items released to it, and the plan's adoption of a record identical to its own (the rule
//!   every registry shares, `Endpoint::adoptable_by`) takes the item over.
//!
//! Where extdns is safer than external-dns: a claim (`INSERT`) comes before the record is created, and is
//! taken back when the provider refuses that record; labels and releases are written after the provider
//! wrote the record; a refused statement fails its record alone (a warning names it, the sync reports it)
//! while the others are written; an unmatched ownership TXT record counts as ours only when it says so; items of ours whose record is gone
//! are released only inside the provider's domain filter; and nothing is cached between syncs (the
//! controller's cache serves `--txt-cache-interval`), so every full read scans the table (while migrating
//! or adopting, three owners' scans, sent at once).
//!
//! ```
//! use std::sync::Arc;
//!
//! use extdns_endpoint::{Endpoint, RecordType};
//! use extdns_provider::InMemoryProvider;
//! use extdns_registry::{Ownership, OwnershipConfig};
//! use extdns_registry_dynamodb::{DynamoDbConfig, DynamoDbRegistry, ItemKey};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut owner = OwnershipConfig::default();
//! owner.owner_id = "my-cluster".to_string();
//! // The region, endpoint and credentials come from the standard AWS variables, read through `vars`.
//! let vars = |name: &str| (name == "AWS_REGION").then(|| "eu-west-1".to_string());
//! let config = DynamoDbConfig::from_env("external-dns", "", Ownership::new(owner)?, None, &vars)?;
//! assert_eq!(config.client.endpoint.as_str(), "https://dynamodb.eu-west-1.amazonaws.com/");
//!
//! // A record's item is keyed as external-dns keys it.
//! let web = Endpoint::new("web.example.org", RecordType::A, ["192.0.2.10"]);
//! assert_eq!(ItemKey::of(&web).as_str(), "web.example.org#A#");
//!
//! // No call is made until the first read.
//! let provider = Arc::new(InMemoryProvider::new(vec!["example.org".to_string()]));
//! let _registry = DynamoDbRegistry::new(provider, config)?;
//! # Ok(())
//! # }
//! ```

pub mod client;
mod items;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use extdns_aws::{AssumeRole, CredentialSource};
use extdns_endpoint::{Change, DomainFilter, Endpoint, Labels, RecordType, label};
use extdns_provider::http::Observer;
use extdns_provider::{Backoff, CallError, ChangeFailure, FailedRecords, FailureKind, Provider, ProviderError, Unit};
use extdns_registry::{Once, Ownership, Registry, RegistryError, Snapshot, Written, claims, labels};
use url::Url;

use client::{ApiError, Client, ClientConfig, Statement, StatementError};
pub use items::ItemKey;

/// The provider-specific property of a record whose labels come from its ownership TXT record; the plan
/// updates such a record, and the update inserts its item.
pub const NEEDS_MIGRATION: &str = "dynamodb/needs-migration";

/// The registry's settings.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct DynamoDbConfig {
    /// `--dynamodb-table`.
    pub table: String,
    /// The owner id, and the `--txt-*` settings the migration reads TXT ownership records with.
    pub ownership: Ownership,
    /// Whether TXT is a managed record type (managed and not excluded): only then does the plan delete old
    /// TXT ownership records, and otherwise a read says it will not.
    pub txt_managed: bool,
    /// How DynamoDB is reached.
    pub client: ClientConfig,
}

/// A DynamoDB configuration that cannot work.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// No region: neither `--dynamodb-region` nor the environment names one.
    #[error("the DynamoDB registry needs a region: set --dynamodb-region, AWS_REGION or AWS_DEFAULT_REGION")]
    NoRegion,
    /// `--dynamodb-table` is empty.
    #[error("--dynamodb-table must not be empty")]
    NoTable,
    /// The endpoint from the environment is not an http(s) URL.
    #[error("the DynamoDB endpoint {value:?} (from {variable}) is not an http(s)://host[:port] URL")]
    Endpoint {
        /// The variable it came from.
        variable: &'static str,
        /// Its value.
        value: String,
    },
    /// The HTTP client could not be built.
    #[error("DynamoDB: {0}")]
    Client(#[source] extdns_provider::http::HttpError),
}

impl DynamoDbConfig {
    /// The registry's settings from the flags (`table`, `region` as given, possibly empty) and the standard
    /// AWS environment as the SDK reads it: the region (`AWS_REGION`, `AWS_DEFAULT_REGION`) when the flag is
    /// empty, the endpoint (`AWS_ENDPOINT_URL_DYNAMODB`, `AWS_ENDPOINT_URL`, else DynamoDB's regional one), the
    /// credential chain. `var` reads one variable.
    pub fn from_env(
        table: &str,
        region: &str,
        ownership: Ownership,
        assume_role: Option<AssumeRole>,
        var: &dyn Fn(&str) -> Option<String>,
    ) -> Result<DynamoDbConfig, ConfigError> {
        let get = |name: &str| var(name).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
        if table.trim().is_empty() {
            return Err(ConfigError::NoTable);
        }
        let region = Some(region.trim().to_string())
            .filter(|r| !r.is_empty())
            .or_else(|| get("AWS_REGION"))
            .or_else(|| get("AWS_DEFAULT_REGION"))
            .ok_or(ConfigError::NoRegion)?;
        let (variable, text) = match (get("AWS_ENDPOINT_URL_DYNAMODB"), get("AWS_ENDPOINT_URL")) {
            (Some(e), _) => ("AWS_ENDPOINT_URL_DYNAMODB", e),
            (None, Some(e)) => ("AWS_ENDPOINT_URL", e),
            (None, None) => {
                let suffix = if region.starts_with("cn-") {
                    "amazonaws.com.cn"
                } else {
                    "amazonaws.com"
                };
                ("", format!("https://dynamodb.{region}.{suffix}"))
            }
        };
        let endpoint = Url::parse(&text)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some())
            .ok_or(ConfigError::Endpoint { variable, value: text })?;
        Ok(DynamoDbConfig {
            table: table.trim().to_string(),
            ownership,
            txt_managed: false,
            client: ClientConfig {
                endpoint,
                region,
                credentials: CredentialSource::chain(var, None),
                assume_role,
                backoff: Backoff {
                    initial: Duration::from_millis(200),
                    max: Duration::from_secs(10),
                    max_attempts: 4,
                    ..Backoff::default()
                },
                request_timeout: Duration::from_secs(30),
                observer: Observer::default(),
            },
        })
    }
}

/// The DynamoDB registry over a provider.
pub struct DynamoDbRegistry {
    provider: Arc<dyn Provider>,
    client: Client,
    table: String,
    ownership: Ownership,
    txt_managed: bool,
    /// Ownership TXT records already warned about for claims of several owners (#5457): a contested record
    /// is read at every sync, its warning given once.
    contested: Once,
}

impl std::fmt::Debug for DynamoDbRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DynamoDbRegistry")
            .field("table", &self.table)
            .field("owner_id", &self.ownership.owner_id())
            .finish_non_exhaustive()
    }
}

/// What a read learnt beside the records: our items' labels by key, the keys of our items whose record
/// the provider no longer has, and the items of another owner we may take over.
#[derive(Debug, Default)]
struct ReadItems {
    items: HashMap<ItemKey, Labels>,
    orphans: HashSet<ItemKey>,
    /// Items of the owner we migrate from (read as ours) or adopt from (released to us, read as that
    /// owner's), by key: the owner their `o` holds, which an update's take-over names, and their labels.
    foreign: HashMap<ItemKey, (String, Labels)>,
}

impl ReadItems {
    /// The labels of `key`'s item, ours or one we may take over.
    fn labels(&self, key: &ItemKey) -> Option<&Labels> {
        self.items.get(key).or_else(|| self.foreign.get(key).map(|(_, l)| l))
    }
}

/// What an apply wrote, for the fold: the changes it did not write (refused claims, provider failures),
/// by position, and the items as they now are.
#[derive(Debug, Default)]
struct WrittenItems {
    skipped: HashSet<usize>,
    items: Vec<(ItemKey, Option<Labels>)>,
    orphans_released: bool,
    /// An item was not written as planned: only a read knows how it stands.
    incomplete: bool,
}

impl DynamoDbRegistry {
    /// The registry over `provider`; no call is made until the first read.
    pub fn new(provider: Arc<dyn Provider>, config: DynamoDbConfig) -> Result<DynamoDbRegistry, ConfigError> {
        Ok(DynamoDbRegistry {
            provider,
            client: Client::new(&config.client).map_err(ConfigError::Client)?,
            table: config.table,
            ownership: config.ownership,
            txt_managed: config.txt_managed,
            contested: Once::default(),
        })
    }

    fn owner(&self) -> &str {
        self.ownership.owner_id()
    }

    fn store_error(&self, what: &str, e: ApiError) -> RegistryError {
        if e.kind().is_transient() || e.kind() == FailureKind::Auth {
            return RegistryError::Provider(ProviderError::from_call(
                format!("{what} DynamoDB table {:?}", self.table),
                e,
            ));
        }
        RegistryError::Store {
            what: format!("{what} DynamoDB table {:?}", self.table),
            source: Box::new(e),
        }
    }

    /// Runs statements; one result per statement.
    async fn execute<'s>(
        &self,
        statements: impl Iterator<Item = &'s Statement>,
    ) -> Result<Vec<Result<(), StatementError>>, RegistryError> {
        let statements: Vec<Statement> = statements.cloned().collect();
        if statements.is_empty() {
            return Ok(Vec::new());
        }
        self.client
            .execute(&statements)
            .await
            .map_err(|e| self.store_error("writing to", e))
    }

    /// Checks the table is as external-dns needs it (hash key `k` of type `S`, no range key), then reads
    /// our items, and those of the owner we migrate or adopt from that we may take over.
    async fn read_items(&self) -> Result<ReadItems, RegistryError> {
        let schema = self
            .client
            .describe_table(&self.table)
            .await
            .map_err(|e| self.store_error("describing", e))?;
        let bad = |why: String| RegistryError::Store {
            what: format!("DynamoDB table {:?}", self.table),
            source: why.into(),
        };
        match schema.attributes.iter().find(|(n, _)| n == "k") {
            None => return Err(bad("the table must have attribute \"k\" of type \"S\"".into())),
            Some((_, t)) if t != "S" => return Err(bad(format!("attribute \"k\" must have type \"S\", not {t:?}"))),
            Some(_) => {}
        }
        if schema.keys.first().map(|(n, _)| n.as_str()) != Some("k") {
            return Err(bad("the table must have hash key \"k\"".into()));
        }
        if schema.keys.len() > 1 {
            return Err(bad("the table must not have a range key".into()));
        }
        let own = &self.ownership;
        let migrate = own.migrate_from();
        let adopt = own.adopt_from().filter(|f| migrate != Some(*f));
        // The three scans are independent reads of one table: sent at once, a read while migrating or
        // adopting costs one round trip of scans, not three.
        let (items, migrated, adopted) =
            tokio::try_join!(self.scan(self.owner()), self.scan_of(migrate), self.scan_of(adopt))?;
        let mut foreign = HashMap::new();
        if let (Some(old), Some(migrated)) = (migrate, migrated) {
            // `--migrate-from-txt-owner`: the old owner's items are ours, as its TXT records are.
            for (key, mut labels) in migrated {
                labels.insert(label::OWNER.to_string(), self.owner().to_string());
                foreign.insert(key, (old.to_string(), labels));
            }
        }
        if let (Some(from), Some(adopted)) = (adopt, adopted) {
            // The hand-over: only what the releaser released to us is read; the rest stays invisible.
            let probe = |labels: &Labels| {
                let e = Endpoint {
                    labels: labels.clone(),
                    ..Endpoint::default()
                };
                claims::adopts(Some(from), self.owner(), &e)
            };
            for (key, labels) in adopted {
                if probe(&labels) && !items.contains_key(&key) {
                    foreign.insert(key, (from.to_string(), labels));
                }
            }
        }
        Ok(ReadItems {
            items,
            orphans: HashSet::new(),
            foreign,
        })
    }

    /// [`scan`](Self::scan) of `owner` when there is one (the old owner of a migration, the releaser of
    /// a hand-over), nothing sent otherwise.
    async fn scan_of(&self, owner: Option<&str>) -> Result<Option<HashMap<ItemKey, Labels>>, RegistryError> {
        match owner {
            Some(owner) => self.scan(owner).await.map(Some),
            None => Ok(None),
        }
    }

    /// The items `owner` holds (a consistent `Scan` filtered on `o`). An item whose key or labels cannot
    /// be read is skipped with a warning: its record then reads as nobody's, which extdns leaves alone.
    async fn scan(&self, owner: &str) -> Result<HashMap<ItemKey, Labels>, RegistryError> {
        let raw = self
            .client
            .scan_where(&self.table, "o", owner, "k,l")
            .await
            .map_err(|e| self.store_error("scanning", e))?;
        let mut items = HashMap::with_capacity(raw.len());
        for item in raw {
            match items::parse(&item, owner) {
                Ok((key, labels)) => {
                    items.insert(key, labels);
                }
                Err(why) => {
                    tracing::warn!(table = %self.table, item = %serde_json::Value::Object(item), %why, "skipping a DynamoDB item that cannot be read; its record counts as nobody's")
                }
            }
        }
        Ok(items)
    }

    /// The provider's records with the labels of their items; ownership TXT records hidden, their labels
    /// moved to records that have no item yet (marked [`NEEDS_MIGRATION`]).
    fn label(&self, records: Vec<Endpoint>, read: &ReadItems) -> (Vec<Endpoint>, HashSet<ItemKey>) {
        let own = &self.ownership;
        let mut orphans: HashSet<&ItemKey> = read.items.keys().collect();
        // `--migrate-from-txt-owner`: an ownership TXT record of the old owner is ours, as in the TXT registry.
        let migrated = |mut l: Labels| {
            if own.migrate_from().is_some() && l.get(label::OWNER).map(String::as_str) == own.migrate_from() {
                l.insert(label::OWNER.to_string(), self.owner().to_string());
            }
            l
        };
        let mut endpoints = Vec::with_capacity(records.len());
        // Ownership TXT records (with their labels), found by (endpoint name, set identifier, AAAA or not)
        // as external-dns keys them. Of two with one key external-dns keeps the later (#5457); here their
        // claims are settled: the first is kept, read as another owner's when the two owners differ. Each
        // key keeps all its TXT records, so a claim left over is shown (and deleted) with the first.
        let mut txt_records: Vec<(Vec<Endpoint>, Labels)> = Vec::new();
        let mut txt_by_key: HashMap<(String, String, bool), usize> = HashMap::new();
        let warn = |name: &str| self.contested.first(name);
        for mut record in records {
            let key = ItemKey::of(&record);
            if let Some(l) = read.labels(&key) {
                record.labels = l.clone();
                orphans.remove(&key);
            } else if record.record_type == RecordType::Txt
                && let Some(l) = record.targets.first().and_then(|v| labels::parse(v, own.key()).ok())
            {
                let others = record.targets.iter().skip(1);
                let others = others.filter_map(|v| labels::parse(v, own.key()).ok().map(migrated));
                let l = claims::of_values(self.owner(), migrated(l), others, &record.dns_name, warn);
                let (name, rt) = own.mapper().to_endpoint_name(&record.dns_name);
                let key = (name, record.set_identifier.clone(), rt == RecordType::Aaaa);
                if let Some(&kept) = txt_by_key.get(&key) {
                    let (held, first) = &mut txt_records[kept];
                    *first = claims::settle(self.owner(), std::mem::take(first), l).labels(&record.dns_name, warn);
                    held.push(record);
                    continue;
                }
                txt_by_key.insert(key, txt_records.len());
                txt_records.push((vec![record], l));
                continue;
            }
            endpoints.push(record);
        }
        if !txt_by_key.is_empty() {
            let wildcard = own.wildcard_replacement();
            for ep in endpoints.iter_mut().filter(|e| read.labels(&ItemKey::of(e)).is_none()) {
                let name = match ep.dns_name.strip_prefix("*.") {
                    Some(rest) if !wildcard.is_empty() => format!("{wildcard}.{rest}"),
                    _ if ep.dns_name == "*" && !wildcard.is_empty() => wildcard.to_string(),
                    _ => ep.dns_name.clone(),
                };
                let k = (name, ep.set_identifier.clone(), ep.record_type == RecordType::Aaaa);
                if let Some(&at) = txt_by_key.get(&k) {
                    let (held, l) = &mut txt_records[at];
                    ep.labels.extend(l.iter().map(|(k, v)| (k.clone(), v.clone())));
                    ep.provider_specific.set(NEEDS_MIGRATION, "true");
                    held.clear();
                }
            }
        }
        // Ownership TXT records no record took: ours (by their own owner label) are shown as ours, so the
        // plan deletes them where TXT is managed; anyone else's stay hidden and untouched.
        let mut left = 0;
        for (held, l) in txt_records {
            if l.get(label::OWNER).map(String::as_str) != Some(self.owner()) {
                continue;
            }
            for mut record in held {
                record.labels = Labels::new();
                record.labels.insert(label::OWNER.to_string(), self.owner().to_string());
                endpoints.push(record);
                left += 1;
            }
        }
        if left > 0 && !self.txt_managed {
            tracing::info!(
                records = left,
                "old TXT ownership records are not deleted because TXT is not a managed record type"
            );
        }
        (endpoints, orphans.into_iter().cloned().collect())
    }
}

/// The changes the registry writes: creates, and updates and deletes of records that are ours, and the
/// update adopting a record released to us (`adopt_from` being `--txt-adopt-from-owner`).
fn writes(change: &Change, owner: &str, adopt_from: Option<&str>) -> bool {
    let ours = |e: &Endpoint| e.owner() == Some(owner);
    match change {
        Change::Create(_) => true,
        Change::Delete(r) => ours(r),
        Change::Update { old, new } => (ours(old) || claims::adopts(adopt_from, owner, old)) && ours(new),
    }
}

/// The labels an item of `r` states: its labels as written (the `resource` label rendered from the object
/// that asked for it), owned by `owner`.
fn owned_labels(r: &Endpoint, owner: &str) -> Labels {
    let mut labels = r.labels_as_written();
    labels.insert(label::OWNER.to_string(), owner.to_string());
    labels
}

#[async_trait]
impl Registry for DynamoDbRegistry {
    async fn records(&self) -> Result<Snapshot, RegistryError> {
        let (read, items) = tokio::join!(self.provider.records(), self.read_items());
        let (read, mut items) = (read?, items?);
        let (records, orphans) = self.label(read.endpoints, &items);
        items.orphans = orphans;
        Ok(Snapshot::with_registry_state(records, read.state, items))
    }

    async fn apply(&self, snapshot: &Snapshot, changes: &[Change]) -> Result<Written, RegistryError> {
        let empty = ReadItems::default();
        let read = snapshot.registry_state::<ReadItems>().unwrap_or(&empty);
        let (owner, table) = (self.owner(), self.table.as_str());
        let mut written = WrittenItems::default();
        let mut failures: Vec<ChangeFailure> = Vec::new();

        // 1. Claims: an item for every record to create, before the record; another owner's item wins.
        let mut claims: Vec<(usize, Statement)> = Vec::new();
        for (at, change) in changes.iter().enumerate() {
            if !writes(change, owner, self.ownership.adopt_from()) {
                written.skipped.insert(at);
            } else if let Change::Create(r) = change {
                let (key, labels) = (ItemKey::of(r), owned_labels(r, owner));
                let migrating = read
                    .foreign
                    .get(&key)
                    .filter(|(from, _)| self.ownership.migrate_from() == Some(from.as_str()));
                match (read.items.get(&key), migrating) {
                    (Some(old), _) if *old == labels => {}
                    (Some(_), _) => claims.push((at, items::update(table, &key, &labels))),
                    // The old owner's item of a record gone (#6617 while migrating): taken over with the create.
                    (None, Some((from, _))) => claims.push((at, items::take_over(table, &key, from, owner, &labels))),
                    (None, None) => claims.push((at, items::insert(table, &key, owner, &labels))),
                }
            }
        }
        let results = self.execute(claims.iter().map(|(_, s)| s)).await?;
        for ((at, _), result) in claims.iter().zip(results) {
            if let Err(e) = result {
                failures.push(refused(&changes[*at], table, &e));
                written.skipped.insert(*at);
            }
        }

        // 2. The records.
        let units: Vec<Unit<'_>> = changes
            .iter()
            .enumerate()
            .filter(|(at, _)| !written.skipped.contains(at))
            .map(|(_, c)| Unit::new(c))
            .collect();
        if !units.is_empty() {
            match self.provider.apply(snapshot.provider_state(), &units).await {
                Ok(()) => {}
                Err(ProviderError::Partial { failures: f }) => failures.extend(f),
                // Nothing says which records landed: the claims stay (an item of ours without its record
                // is claimed again by the next create, or released by a later write), nothing else is
                // written.
                Err(e) => return Err(e.into()),
            }
        }
        let failed = FailedRecords::of(&failures);

        // 3. After the records: a refused create's claim taken back; the labels of updated records (the
        // item inserted for a migrated one); the items of deleted records and of records gone (only ours:
        // the delete names our owner id) released.
        let mut after: Vec<(Option<usize>, ItemKey, Statement, Option<Labels>)> = Vec::new();
        let mut kept: HashSet<ItemKey> = HashSet::new();
        for (at, change) in changes.iter().enumerate() {
            if written.skipped.contains(&at) {
                continue;
            }
            let refused = failed.contains(change.endpoint());
            if refused {
                written.skipped.insert(at);
            }
            match change {
                Change::Create(r) => {
                    let key = ItemKey::of(r);
                    if !refused {
                        written.items.push((key.clone(), Some(owned_labels(r, owner))));
                        kept.insert(key);
                    } else if !read.items.contains_key(&key) {
                        after.push((None, key.clone(), items::delete(table, &key, owner), None));
                    }
                }
                Change::Update { old, new } if !refused => {
                    let key = ItemKey::of(new);
                    kept.insert(key.clone());
                    let labels = new.labels_as_written();
                    if let Some((from, _)) = read.foreign.get(&key) {
                        // A migration or an adoption: the item changes owner and labels in one write.
                        let take = items::take_over(table, &key, from, owner, &labels);
                        after.push((Some(at), key.clone(), take, Some(labels)));
                    } else if old.provider_specific.get(NEEDS_MIGRATION).is_some() {
                        let insert = items::insert(table, &key, owner, &labels);
                        after.push((Some(at), key.clone(), insert, Some(labels)));
                    } else if old.labels != labels {
                        let update = items::update(table, &key, &labels);
                        after.push((Some(at), key.clone(), update, Some(labels)));
                    }
                }
                Change::Delete(r) if !refused => {
                    let key = ItemKey::of(r);
                    // A record read as ours through a migration or an adoption still has its item under the
                    // old owner: the delete's condition names the owner the item holds.
                    let holder = read.foreign.get(&key).map_or(owner, |(from, _)| from.as_str());
                    after.push((Some(at), key.clone(), items::delete(table, &key, holder), None));
                }
                _ => {}
            }
        }
        let zones = self.provider.domain_filter();
        let written_keys: HashSet<&ItemKey> = after.iter().map(|(_, k, _, _)| k).collect();
        let mut orphans: Vec<ItemKey> = read
            .orphans
            .iter()
            .filter(|k| !kept.contains(*k) && !written_keys.contains(k) && zones.matches(k.name()))
            .cloned()
            .collect();
        orphans.sort();
        for key in orphans {
            let delete = items::delete(table, &key, owner);
            after.push((None, key, delete, None));
        }
        let results = self.execute(after.iter().map(|(_, _, s, _)| s)).await?;
        written.orphans_released = true;
        for ((at, key, _, labels), result) in after.into_iter().zip(results) {
            match (result, at) {
                (Ok(()), Some(_)) => written.items.push((key, labels)),
                (Ok(()), None) => {}
                (Err(e), Some(at)) => {
                    // The record was written, its item not: only the next read knows how the item stands.
                    failures.push(refused(&changes[at], table, &e));
                    written.incomplete = true;
                }
                (Err(e), None) => {
                    tracing::warn!(table = %table, item = %key, error = %e, "cannot delete this DynamoDB item of ours");
                    written.orphans_released = false;
                }
            }
        }
        if !failures.is_empty() {
            return Err(ProviderError::Partial { failures }.into());
        }
        Ok(Written::with_registry_state(written))
    }

    fn fold_applied(&self, snapshot: &mut Snapshot, changes: &[Change], written: Written) -> bool {
        let Some(w) = written.into_registry_state::<WrittenItems>() else {
            return false;
        };
        if w.incomplete {
            return false;
        }
        let owner = self.owner().to_string();
        let applied = changes
            .iter()
            .enumerate()
            .filter(|(at, _)| !w.skipped.contains(at))
            .map(|(_, c)| c);
        snapshot.records.fold(applied, |_, change| match change {
            Change::Create(r) => Some(owned_labels(r, &owner)),
            Change::Update { .. } | Change::Delete(_) => None,
        });
        let Some(state) = snapshot.registry_state_mut::<ReadItems>() else {
            return false;
        };
        for (key, labels) in w.items {
            state.orphans.remove(&key);
            state.foreign.remove(&key);
            match labels {
                Some(l) => {
                    state.items.insert(key, l);
                }
                None => {
                    state.items.remove(&key);
                }
            }
        }
        if w.orphans_released {
            for k in std::mem::take(&mut state.orphans) {
                state.items.remove(&k);
            }
        }
        self.provider.read_state_outlives_writes()
    }

    async fn adjust_endpoints(&self, endpoints: Vec<Endpoint>) -> Result<Vec<Endpoint>, RegistryError> {
        extdns_registry::plain_adjusted(self.provider.as_ref(), endpoints).await
    }

    fn domain_filter(&self) -> DomainFilter {
        self.provider.domain_filter()
    }
}

/// A statement DynamoDB refused for `change`'s item: a warning naming the record and the table, and the
/// failure the sync reports.
fn refused(change: &Change, table: &str, e: &StatementError) -> ChangeFailure {
    let record = change.endpoint();
    let reason = if e.code == "DuplicateItem" {
        tracing::warn!(record = %record, table = %table, "not creating the record: its DynamoDB item is held by another owner");
        format!("its DynamoDB item in table {table:?} is held by another owner")
    } else {
        tracing::warn!(record = %record, table = %table, error = %e, "the record's DynamoDB item was not written");
        format!("its DynamoDB item in table {table:?} was not written: {e}")
    };
    ChangeFailure::new(record, client::statement_kind(&e.code), reason)
}
