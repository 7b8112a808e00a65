//! `--txt-ownership=metadata`: ownership kept on the record itself, where the provider keeps metadata on
//! its records (a Cloudflare record's comment, an Azure record set's metadata), instead of in a TXT record
//! beside it, so a zone holds one record per record rather than two (Cloudflare's and Azure's zones cap
//! the number of records). The payload is [`payload`]'s, which the provider hands over and takes back as
//! the endpoint's [`OWNERSHIP_PROPERTY`].
//!
//! The same registry serves `--txt-ownership=txt` over such a provider, so each way is a migration that
//! leaves no record unowned at any moment, decided from what each read shows (no state between calls):
//!
//! * to metadata: a record owned through its TXT record gets the payload written (an update, the TXT
//!   record kept); once a read shows both, the TXT record is deleted;
//! * back to TXT: a record owned through its payload gets its TXT record written (the payload kept); once
//!   a read shows both, the payload is cleared.
//!
//! A record carrying both is owned either way, never a conflict. Each step is an update of the record in
//! the plan, so `extdns plan` shows the migration before it is made. Records of another owner, or owned by
//! external-dns through its TXT records, are never written, as under the TXT registry.

pub mod payload;

use std::collections::HashSet;
use std::sync::Arc;

use async_trait::async_trait;
use extdns_endpoint::{Change, DomainFilter, Endpoint, Labels, RecordType, label};
use extdns_provider::failure::FailureKind;
use extdns_provider::metadata::OWNERSHIP_PROPERTY;
use extdns_provider::{ChangeFailure, Provider, Unit};

use crate::placement::{self, Once, Pairing};
use crate::txt::{FORCE_UPDATE, TxtRegistry, TxtRegistryConfig};
use crate::{OwnershipStore, Registry, RegistryError, RegistryState, Snapshot, Written};

/// A record by name, type and set identifier.
type Key = (String, RecordType, String);

fn key_of(e: &Endpoint) -> Key {
    (e.dns_name.clone(), e.record_type.clone(), e.set_identifier.clone())
}

/// What a read learnt beside the records: which of them carried a payload (read back).
#[derive(Debug, Default)]
struct Carried(HashSet<Key>);

/// What a write to metadata sent, for the fold: the TXT records it deleted.
#[derive(Debug, Default)]
struct Sent {
    /// Per change written (in order): whether it was withheld.
    withheld: Vec<bool>,
    /// The TXT records deleted: name and set identifier.
    txt_deleted: Vec<(String, String)>,
}

/// Whether `provider`'s records keep metadata at all: where they do, this registry serves
/// `--txt-ownership=txt` too, so records owned through their metadata are migrated back.
pub fn keeps_metadata(provider: &dyn Provider) -> bool {
    let probe = Endpoint::new("probe", RecordType::A, std::iter::empty::<&str>());
    provider.ownership_room(&probe).is_some()
}

/// The TXT registry's ownership, written on the records themselves where [`OwnershipStore::Metadata`]
/// says so, and read from both places always.
pub struct MetadataRegistry {
    txt: TxtRegistry,
    provider: Arc<dyn Provider>,
    store: OwnershipStore,
    /// Records already said not to fit their payload.
    warned: Once,
}

impl std::fmt::Debug for MetadataRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetadataRegistry")
            .field("owner_id", &self.txt.ownership().owner_id())
            .field("store", &self.store)
            .finish_non_exhaustive()
    }
}

impl MetadataRegistry {
    /// The registry over `provider`, writing ownership where `config.store` says. Refused when that is
    /// the records' metadata and the provider keeps none.
    pub fn new(provider: Arc<dyn Provider>, config: TxtRegistryConfig) -> Result<Self, RegistryError> {
        let store = config.store;
        if store == OwnershipStore::Metadata && !keeps_metadata(provider.as_ref()) {
            return Err(RegistryError::NoRecordMetadata);
        }
        Ok(MetadataRegistry {
            txt: TxtRegistry::new(provider.clone(), config),
            provider,
            store,
            warned: Once::default(),
        })
    }

    fn owner_id(&self) -> &str {
        self.txt.ownership().owner_id()
    }

    fn is_ours(&self, e: &Endpoint) -> bool {
        e.owner() == Some(self.owner_id())
    }

    /// Whether a change is written at all: as the TXT registry, only creates and what is ours.
    fn writes(&self, change: &Change) -> bool {
        match change {
            Change::Create(_) => true,
            Change::Delete(r) => self.is_ours(r),
            Change::Update { old, new } => self.is_ours(old) && self.is_ours(new),
        }
    }

    /// Labels from the payloads the provider handed over, and each record's step of a migration as a
    /// forced update (so the plan, and `extdns plan`, shows it).
    fn read(&self, endpoints: Vec<Endpoint>) -> (Vec<Endpoint>, crate::txt::OwnershipRecords, Carried) {
        let (mut records, present) = self.txt.read(endpoints);
        let own = self.txt.ownership();
        let mut carried = Carried::default();
        for ep in &mut records {
            let Some(raw) = ep.provider_specific.remove(OWNERSHIP_PROPERTY) else {
                continue;
            };
            let labels = match payload::decode(&raw) {
                Ok(l) => l,
                Err(e) => {
                    if self.warned.first(&format!("payload {}", ep.dns_name)) {
                        tracing::warn!(record = %ep.dns_name, error = %e, "ownership payload not read; the record is not extdns's");
                    }
                    continue;
                }
            };
            // Only a payload naming us counts as ownership read back: a TXT of ours is never deleted on the
            // strength of someone else's payload, nor of one still naming the owner we migrate from.
            let payload_owner = labels.get(label::OWNER).map(String::as_str);
            if payload_owner == Some(own.owner_id()) {
                carried.0.insert(key_of(ep));
            }
            let has_txt = present.holds(&own.txt_name(ep), &ep.set_identifier);
            if ep.owner().is_none() {
                ep.labels = labels;
                own.migrate_owner(ep);
            }
            if !self.is_ours(ep) || !self.txt.config().is_managed(&ep.record_type) {
                continue;
            }
            // Both places hold it: one of them goes (to metadata: the TXT record; back: the payload).
            // Only the payload: going back, the TXT record is written first. Only a TXT record: see below.
            let step = has_txt || self.store == OwnershipStore::Txt;
            if step {
                ep.provider_specific.set(FORCE_UPDATE, "true");
            } else {
                ep.provider_specific.remove(FORCE_UPDATE);
            }
        }
        if self.store == OwnershipStore::Metadata {
            // Owned through a TXT record alone: the payload is written first.
            for ep in records.iter_mut().filter(|ep| {
                !carried.0.contains(&key_of(ep)) && self.is_ours(ep) && self.txt.config().is_managed(&ep.record_type)
            }) {
                ep.provider_specific.set(FORCE_UPDATE, "true");
            }
        }
        (records, present, carried)
    }

    /// `r` with `labels` (owned by us) as its payload.
    fn with_payload(&self, r: &Endpoint, mut labels: Labels) -> Endpoint {
        labels.insert(label::OWNER.to_string(), self.owner_id().to_string());
        let mut out = r.clone();
        out.provider_specific.remove(FORCE_UPDATE);
        out.provider_specific.set(OWNERSHIP_PROPERTY, payload::encode(&labels));
        out
    }

    /// Why `ep`'s payload does not fit the room its provider leaves, if it does not.
    fn too_long(&self, ep: &Endpoint) -> Option<String> {
        let len = ep.provider_specific.get(OWNERSHIP_PROPERTY)?.chars().count();
        let room = self.provider.ownership_room(ep).unwrap_or(0);
        (len > room).then(|| {
            format!(
                "not written: its ownership payload ({len} characters) does not fit the {room} the provider leaves \
                 beside the record's own comment or metadata"
            )
        })
    }

    /// Apply with ownership on the records: each change with its payload, and the TXT record it replaces
    /// deleted with it once the payload was read back.
    async fn apply_metadata(&self, snapshot: &Snapshot, changes: &[Change]) -> Result<Written, RegistryError> {
        let own = self.txt.ownership();
        let present = snapshot.ownership_records.as_ref();
        let carried = snapshot.registry_state::<Carried>();
        let has_txt = |r: &Endpoint| present.is_some_and(|p| p.holds(&own.txt_name(r), &r.set_identifier));
        let read_back = |r: &Endpoint| carried.is_some_and(|c| c.0.contains(&key_of(r)));
        let mut planned: Vec<(Change, Option<Change>, Option<String>)> = Vec::new();
        for change in changes.iter().filter(|c| self.writes(c)) {
            let (written, txt) = match change {
                Change::Create(r) => (Change::Create(self.with_payload(r, own.record_labels(r))), None),
                Change::Update { old, new } => {
                    let txt = (read_back(old) && has_txt(old))
                        .then(|| own.stored_txt_record(old, present))
                        .transpose()?;
                    let new = self.with_payload(new, new.labels_as_written());
                    (Change::update(old.as_ref().clone(), new), txt.map(Change::Delete))
                }
                Change::Delete(r) => {
                    let txt = has_txt(r).then(|| own.stored_txt_record(r, present)).transpose()?;
                    (change.clone(), txt.map(Change::Delete))
                }
            };
            let refused = match &written {
                Change::Delete(_) => None,
                other => self.too_long(other.endpoint()),
            };
            if let Some(why) = &refused
                && self.warned.first(&written.endpoint().dns_name)
            {
                tracing::warn!(record = %written.endpoint().dns_name, "{why}; shorten the comment or the owner id, or use --txt-ownership=txt");
            }
            planned.push((written, txt, refused));
        }
        let mut units: Vec<Unit<'_>> = Vec::new();
        let mut apart: Vec<(&Change, &Change)> = Vec::new();
        let mut withheld = Vec::new();
        for (change, txt, refused) in &planned {
            if let Some(why) = refused {
                withheld.push(ChangeFailure::new(change.endpoint(), FailureKind::Refused, why.clone()));
                continue;
            }
            let pairing = txt.as_ref().map_or(Pairing::Together, |t| {
                placement::pairing(self.provider.as_ref(), &snapshot.provider, change, t)
            });
            match (pairing, txt) {
                (Pairing::Apart, Some(t)) => apart.push((change, t)),
                (_, txt) => units.push(Unit {
                    change,
                    ownership: txt.as_ref(),
                }),
            }
        }
        placement::write(self.provider.as_ref(), &snapshot.provider, &units, &apart, &withheld).await?;
        drop((units, apart));
        let mut sent = Sent::default();
        for (_, txt, refused) in planned {
            sent.withheld.push(refused.is_some());
            if let (None, Some(t)) = (refused, txt) {
                let t = t.endpoint();
                sent.txt_deleted.push((t.dns_name.clone(), t.set_identifier.clone()));
            }
        }
        let mut written = Written::with_registry_state(sent);
        written.withheld = withheld;
        Ok(written)
    }

    /// Going back to TXT records: an update of a record whose payload is its only ownership keeps the
    /// payload, so the TXT record the TXT registry writes with it lands before the payload goes.
    fn keep_payloads(&self, snapshot: &Snapshot, changes: &[Change]) -> Option<Vec<Change>> {
        let own = self.txt.ownership();
        let carried = snapshot.registry_state::<Carried>().filter(|c| !c.0.is_empty())?;
        let present = snapshot.ownership_records.as_ref();
        let txt_less = |r: &Endpoint| {
            carried.0.contains(&key_of(r)) && !present.is_some_and(|p| p.holds(&own.txt_name(r), &r.set_identifier))
        };
        Some(
            changes
                .iter()
                .map(|c| match c {
                    Change::Update { old, new } if self.is_ours(old) && txt_less(old) => {
                        let mut new = self.with_payload(new, new.labels_as_written());
                        new.provider_specific.remove(FORCE_UPDATE);
                        Change::update(old.as_ref().clone(), new)
                    }
                    other => other.clone(),
                })
                .collect(),
        )
    }
}

#[async_trait]
impl Registry for MetadataRegistry {
    async fn records(&self) -> Result<Snapshot, RegistryError> {
        let read = self.provider.records().await?;
        let (records, present, carried) = self.read(read.endpoints);
        Ok(Snapshot {
            records: records.into(),
            provider: read.state,
            ownership_records: Some(present),
            registry: vec![RegistryState(Box::new(carried))],
        })
    }

    async fn apply(&self, snapshot: &Snapshot, changes: &[Change]) -> Result<Written, RegistryError> {
        match self.store {
            OwnershipStore::Metadata => self.apply_metadata(snapshot, changes).await,
            OwnershipStore::Txt => match self.keep_payloads(snapshot, changes) {
                Some(kept) => self.txt.apply(snapshot, &kept).await,
                None => self.txt.apply(snapshot, changes).await,
            },
        }
    }

    fn fold_applied(&self, snapshot: &mut Snapshot, changes: &[Change], written: Written) -> bool {
        if self.store == OwnershipStore::Txt {
            return self.txt.fold_applied(snapshot, changes, written);
        }
        let Some(sent) = written.into_registry_state::<Sent>() else {
            return false;
        };
        if let Some(present) = snapshot.ownership_records.as_mut() {
            for (name, set) in &sent.txt_deleted {
                present.remove(name, set);
            }
        }
        let landed: Vec<&Change> = changes
            .iter()
            .filter(|c| self.writes(c))
            .zip(&sent.withheld)
            .filter_map(|(c, withheld)| (!withheld).then_some(c))
            .collect();
        if let Some(carried) = snapshot.registry_state_mut::<Carried>() {
            for change in &landed {
                if let Some(old) = change.previous() {
                    carried.0.remove(&key_of(old));
                }
                if !matches!(change, Change::Delete(_)) {
                    carried.0.insert(key_of(change.endpoint()));
                }
            }
        }
        let own = self.txt.ownership();
        snapshot.records.fold(landed.iter().copied(), |_, change| match change {
            Change::Create(r) => Some(own.record_labels(r)),
            Change::Update { new, .. } => Some(own.record_labels(new)),
            Change::Delete(_) => None,
        });
        self.provider.read_state_outlives_writes()
    }

    async fn adjust_endpoints(&self, endpoints: Vec<Endpoint>) -> Result<Vec<Endpoint>, RegistryError> {
        self.txt.adjust_endpoints(endpoints).await
    }

    fn domain_filter(&self) -> DomainFilter {
        self.txt.domain_filter()
    }
}

#[cfg(test)]
mod tests;
