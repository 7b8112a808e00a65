//! The plan: the changes that take the current DNS records to the desired ones.
//!
//! The rules are external-dns's (`plan/plan.go`): records are filtered by domain and managed type, grouped in
//! rows by (normalised name, set identifier), and each row decides its creates, updates and deletes under the
//! conflict resolver. Ownership is what keeps extdns from damaging records it does not manage: updates and
//! deletes only touch records whose `owner` label is ours, and a create at a name only happens when every
//! record already at that name is ours. Unlike external-dns, the output order is deterministic (sorted by
//! name, type and set identifier), so two runs over the same input send the same requests.
//!
//! ```
//! use extdns_endpoint::{Change, DomainFilter, Endpoint, RecordType, label};
//! use extdns_plan::{PlanConfig, calculate};
//!
//! let config = PlanConfig { owner_id: "my-cluster".to_string(), ..PlanConfig::default() };
//! // In DNS: a record we own with an old address, and a record somebody else owns.
//! let current = [
//!     Endpoint::new("web.example.org", RecordType::A, ["192.0.2.1"]).with_label(label::OWNER, "my-cluster"),
//!     Endpoint::new("mail.example.org", RecordType::A, ["192.0.2.9"]).with_label(label::OWNER, "another"),
//! ];
//! // What the cluster asks for: a new address for `web`, a new name `api`, and `mail`, which is not ours.
//! let desired = [
//!     Endpoint::new("web.example.org", RecordType::A, ["192.0.2.2"]),
//!     Endpoint::new("api.example.org", RecordType::A, ["192.0.2.3"]),
//!     Endpoint::new("mail.example.org", RecordType::A, ["192.0.2.4"]),
//! ];
//! let outcome = calculate(&config, &current, &desired, &DomainFilter::default());
//! // Updates come before creates; the record somebody else owns is left alone.
//! assert_eq!(outcome.changes.len(), 2);
//! assert!(matches!(&outcome.changes[0], Change::Update { new, .. } if new.dns_name == "web.example.org"));
//! assert!(matches!(&outcome.changes[1], Change::Create(e) if e.dns_name == "api.example.org"));
//! assert!(outcome.changes.iter().all(|c| c.endpoint().dns_name != "mail.example.org"));
//! ```

mod conflict;
mod handover;
mod named;
mod policy;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, RandomState};

use extdns_endpoint::{Change, DomainFilter, Endpoint, RecordType, Targets, label};

pub use conflict::{cname_conflicts, resolve_create, resolve_update};
pub use extdns_endpoint::name::{name_key, normalize_dns_name};
pub use policy::{Policy, UnknownPolicy};

/// How to plan: the policy, the record types extdns manages, the user's domain filter and the owner id.
#[derive(Debug, Clone)]
pub struct PlanConfig {
    /// `--policy`: whether the plan may update and delete, or only create.
    pub policy: Policy,
    /// `--managed-record-types` (default A, AAAA, CNAME). Exact, case-sensitive types.
    pub managed_types: Vec<RecordType>,
    /// `--exclude-record-types`; wins over `managed_types`.
    pub excluded_types: Vec<RecordType>,
    /// `--domain-filter` / `--exclude-domains` / the regex pair. The provider's filter is applied as well.
    pub domain_filter: DomainFilter,
    /// The owner id of the registry's records. Empty means "no ownership" (the noop registry): nothing is
    /// owner-filtered. The binary sets it from the same ownership settings the registry is built from.
    pub owner_id: String,
    /// `--migrate-from-txt-owner`: while set, every owned record is updated so its TXT is rewritten.
    pub old_owner_id: Option<String>,
    /// `--txt-release-to-owner`: the owner id our records are handed over to. While set, records we own
    /// are neither updated nor deleted; each gets the release written into its ownership record once.
    pub release_to: Option<String>,
    /// `--txt-adopt-from-owner`: the owner id whose released records we take over, those identical to
    /// what we would write.
    pub adopt_from: Option<String>,
}

impl Default for PlanConfig {
    fn default() -> Self {
        PlanConfig {
            policy: Policy::Sync,
            managed_types: default_managed_types(),
            excluded_types: Vec::new(),
            domain_filter: DomainFilter::default(),
            owner_id: String::new(),
            old_owner_id: None,
            release_to: None,
            adopt_from: None,
        }
    }
}

/// external-dns's default `--managed-record-types`.
pub fn default_managed_types() -> Vec<RecordType> {
    vec![RecordType::A, RecordType::Aaaa, RecordType::Cname]
}

impl PlanConfig {
    /// Whether the plan looks at records of this type at all.
    pub fn is_managed(&self, t: &RecordType) -> bool {
        self.managed_types.contains(t) && !self.excluded_types.contains(t)
    }
}

/// What a plan produced: the changes to apply, and the creates it refused because another owner (or nobody)
/// holds a record at the same name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PlanOutcome {
    /// Deletes, then updates, then creates, each sorted by name, type and set identifier.
    pub changes: Vec<Change>,
    /// One entry per foreign record that blocked a create; feeds the
    /// `registry_skipped_records_owner_mismatch_per_sync` gauge.
    pub owner_mismatches: Vec<OwnerMismatch>,
    /// The records left alone because they are not ours.
    pub not_owned: NotOwned,
}

/// Current records the plan looked at (managed type, inside the domain filters) that another owner id, or
/// nobody, owns: left alone whatever the cluster asks for. None without an owner id (noop registry).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NotOwned {
    /// How many: what `extdns plan` reports as left alone.
    pub records: usize,
    /// Of those, the ones at a name (and set identifier) the cluster asks for: what it asks there is not
    /// published while they stand.
    pub wanted: usize,
}

/// A record at a name we wanted to create at, held by someone else (labels of the external-dns gauge).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OwnerMismatch {
    /// The type of the foreign record.
    pub record_type: String,
    /// Our owner id.
    pub owner: String,
    /// The foreign record's owner label, or its set identifier when it has no owner (as external-dns reports).
    pub foreign_owner: String,
    /// The record's name without its first label (the whole name when only one label would remain).
    pub domain: String,
}

/// Compute the changes from `current` (the registry's records, with ownership labels) to `desired` (the
/// sources' endpoints after the provider's adjustment). `provider_filter` is the provider's (registry's)
/// domain filter; a record must pass it and `config.domain_filter`.
pub fn calculate(
    config: &PlanConfig,
    current: &[Endpoint],
    desired: &[Endpoint],
    provider_filter: &DomainFilter,
) -> PlanOutcome {
    let mut planned = plan(config, current, desired, provider_filter);
    planned.fill_creates(|at| desired[at].clone());
    planned.finish()
}

/// [`calculate`], moving the records it creates out of `desired` instead of copying them: on a first sync
/// every desired record is created, and the copies would sit beside the originals at the sync's peak.
pub fn calculate_owned(
    config: &PlanConfig,
    current: &[Endpoint],
    mut desired: Vec<Endpoint>,
    provider_filter: &DomainFilter,
) -> PlanOutcome {
    let mut planned = plan(config, current, &desired, provider_filter);
    planned.fill_creates(|at| std::mem::take(&mut desired[at]));
    drop(desired);
    planned.finish()
}

/// A plan whose creates are still to be filled in from the desired records.
struct Planned {
    changes: Vec<Change>,
    /// Where each create's record is in the desired records, in the order of the creates in `changes`
    /// (`None`: the create holds its record already).
    creates_from: Vec<Option<usize>>,
    mismatches: Vec<OwnerMismatch>,
    not_owned: NotOwned,
}

impl Planned {
    /// Puts each create's record in, as `take(position in desired)` gives it.
    fn fill_creates(&mut self, mut take: impl FnMut(usize) -> Endpoint) {
        debug_assert_eq!(
            self.changes.iter().filter(|c| matches!(c, Change::Create(_))).count(),
            self.creates_from.len(),
            "a create was dropped or added after planning"
        );
        let creates = self.changes.iter_mut().filter_map(|c| match c {
            Change::Create(e) => Some(e),
            _ => None,
        });
        for (e, from) in creates.zip(&self.creates_from) {
            if let Some(at) = *from {
                *e = take(at);
            }
        }
    }

    fn finish(self) -> PlanOutcome {
        let Planned {
            mut changes,
            mut mismatches,
            not_owned,
            ..
        } = self;
        // Kept through the write (and a first sync's peak): no room to spare.
        changes.shrink_to_fit();
        sort_changes(&mut changes);
        mismatches.sort();
        PlanOutcome {
            changes,
            owner_mismatches: mismatches,
            not_owned,
        }
    }
}

/// The rows planned, creates left empty (policy and the owner filter keep every create, in order).
fn plan(config: &PlanConfig, current: &[Endpoint], desired: &[Endpoint], provider_filter: &DomainFilter) -> Planned {
    let filters: Vec<&DomainFilter> = [&config.domain_filter, provider_filter]
        .into_iter()
        .filter(|f| f.is_configured())
        .collect();
    let admitted = |e: &Endpoint| config.is_managed(&e.record_type) && filters.iter().all(|f| f.matches(&e.dns_name));

    // The plan table, built without an allocation per row (a 100,000-record plan is mostly allocator time
    // otherwise): every admitted record gets its row number, then one counting sort lays the rows out
    // contiguously, current records before candidates and each side in input order.
    let mut rows_index = RowIndex::with_capacity(current.len().max(desired.len()));
    let mut placed: Vec<(u32, bool, &Endpoint)> = Vec::with_capacity(current.len() + desired.len());
    for (is_current, list) in [(true, current), (false, desired)] {
        for e in list.iter().filter(|e| admitted(e)) {
            let row = rows_index.row(&name_key(&e.dns_name), &e.set_identifier);
            placed.push((row, is_current, e));
        }
    }
    let rows = rows_index.len();
    drop(rows_index);
    let mut starts = vec![0u32; rows + 1];
    for &(row, _, _) in &placed {
        starts[row as usize + 1] += 1;
    }
    for i in 0..rows {
        starts[i + 1] += starts[i];
    }
    let mut current_counts = vec![0u32; rows];
    let mut fill = starts.clone();
    let mut table: Vec<&Endpoint> = vec![&*EMPTY; placed.len()];
    for &(row, is_current, e) in &placed {
        let slot = &mut fill[row as usize];
        table[*slot as usize] = e;
        *slot += 1;
        if is_current {
            current_counts[row as usize] += 1;
        }
    }
    drop(placed);

    let mut changes = Vec::new();
    let mut creates_from = Vec::new();
    let mut mismatches = Vec::new();
    let mut not_owned = NotOwned::default();
    let mut scratch = Scratch::default();
    for row in 0..rows {
        let all = &table[starts[row] as usize..starts[row + 1] as usize];
        let (cur, cand) = all.split_at(current_counts[row] as usize);
        if !config.owner_id.is_empty() {
            let foreign = cur
                .iter()
                .filter(|e| e.owner() != Some(config.owner_id.as_str()))
                .count();
            not_owned.records += foreign;
            if !cand.is_empty() {
                not_owned.wanted += foreign;
            }
        }
        let out = RowOut {
            changes: &mut changes,
            creates_from: &mut creates_from,
            mismatches: &mut mismatches,
        };
        plan_row(config, desired, cur, cand, &mut scratch, out);
    }

    config.policy.apply(&mut changes);
    if !config.owner_id.is_empty() {
        let owned = |e: &Endpoint| e.owner() == Some(config.owner_id.as_str());
        let mut deleted = std::collections::HashSet::new();
        changes.retain(|c| match c {
            Change::Create(_) => true,
            Change::Delete(e) => owned(e) && deleted.insert(e.key()),
            // The new side carries the current owner (copied in `plan_row`), so both sides agree; an
            // adoption's new side is ours.
            Change::Update { old, new } => (owned(old) || handover::adoptable(config, old)) && owned(new),
        });
        if let Some(to) = config.release_to.as_deref().filter(|t| !t.is_empty()) {
            handover::release(to, current.iter().filter(|e| admitted(e)), owned, &mut changes);
        }
    }
    Planned {
        changes,
        creates_from,
        mismatches,
        not_owned,
    }
}

/// Where one row's changes go.
struct RowOut<'o> {
    changes: &'o mut Vec<Change>,
    creates_from: &'o mut Vec<Option<usize>>,
    mismatches: &'o mut Vec<OwnerMismatch>,
}

/// Where `candidate` is in `desired`: candidates are borrowed from it, so their address says which.
fn position_in(desired: &[Endpoint], candidate: &Endpoint) -> Option<usize> {
    let offset = (candidate as *const Endpoint as usize).checked_sub(desired.as_ptr() as usize)?;
    let at = offset / std::mem::size_of::<Endpoint>();
    desired.get(at).filter(|d| std::ptr::eq(*d, candidate)).map(|_| at)
}

/// Row numbers by key (normalised name, set identifier).
///
/// Built for speed on 100,000-record plans, where the time goes to cache misses: the hash table holds only
/// 64-bit keyed hashes (16-byte buckets), and the keys it is checked against are copied into one contiguous
/// arena rather than compared where they live, scattered over the heap. Two keys with one hash (practically
/// impossible with a keyed 64-bit SipHash, but not excluded) go to an ordinary map.
struct RowIndex<S = RandomState> {
    hasher: S,
    by_hash: HashMap<u64, u32, BuildHasherDefault<PrehashedHasher>>,
    /// Per row: where its key starts in `arena`, the name's length and the set identifier's length.
    spans: Vec<(usize, u32, u32)>,
    arena: String,
    collided: HashMap<(String, String), u32>,
}

impl RowIndex {
    fn with_capacity(n: usize) -> Self {
        Self::with_hasher(n, RandomState::new())
    }
}

impl<S: BuildHasher> RowIndex<S> {
    fn with_hasher(n: usize, hasher: S) -> Self {
        RowIndex {
            hasher,
            by_hash: HashMap::with_capacity_and_hasher(n, BuildHasherDefault::default()),
            spans: Vec::with_capacity(n),
            arena: String::with_capacity(n * 32),
            collided: HashMap::new(),
        }
    }

    fn len(&self) -> usize {
        self.spans.len()
    }

    fn push(&mut self, name: &str, set_identifier: &str) -> u32 {
        let row = self.spans.len() as u32;
        self.spans
            .push((self.arena.len(), name.len() as u32, set_identifier.len() as u32));
        self.arena.push_str(name);
        self.arena.push_str(set_identifier);
        row
    }

    fn is_key_of(&self, row: u32, name: &str, set_identifier: &str) -> bool {
        let (start, n, s) = self.spans[row as usize];
        let (n, s) = (n as usize, s as usize);
        n == name.len()
            && s == set_identifier.len()
            && self.arena.get(start..start + n) == Some(name)
            && self.arena.get(start + n..start + n + s) == Some(set_identifier)
    }

    fn row(&mut self, name: &str, set_identifier: &str) -> u32 {
        let h = self.hasher.hash_one((name, set_identifier));
        if let Some(&row) = self.by_hash.get(&h) {
            if self.is_key_of(row, name, set_identifier) {
                return row;
            }
            if let Some(&row) = self.collided.get(&(name.to_string(), set_identifier.to_string())) {
                return row;
            }
            let row = self.push(name, set_identifier);
            self.collided
                .insert((name.to_string(), set_identifier.to_string()), row);
            return row;
        }
        let row = self.push(name, set_identifier);
        self.by_hash.insert(h, row);
        row
    }
}

#[cfg(test)]
mod row_index_tests {
    use super::*;

    /// Every key hashes alike, so every lookup after the first goes through the collision path.
    #[derive(Default)]
    struct Constant;
    impl BuildHasher for Constant {
        type Hasher = PrehashedHasher;
        fn build_hasher(&self) -> PrehashedHasher {
            PrehashedHasher(0)
        }
    }

    #[test]
    fn keys_with_the_same_hash_still_get_their_own_rows() {
        let mut index = RowIndex::with_hasher(4, Constant);
        let rows: Vec<u32> = [("a", ""), ("b", ""), ("a", ""), ("a", "blue"), ("b", ""), ("ab", "")]
            .iter()
            .map(|(n, s)| index.row(n, s))
            .collect();
        assert_eq!(rows, [0, 1, 0, 2, 1, 3]);
        assert_eq!(index.len(), 4);
    }

    #[test]
    fn row_names_borrow_normal_names_and_normalise_the_others() {
        assert!(matches!(
            name_key("a.example.com."),
            std::borrow::Cow::Borrowed("a.example.com")
        ));
        assert_eq!(name_key(" A.Example.com "), "a.example.com");
        assert_eq!(name_key("bücher.example"), "xn--bcher-kva.example");
    }
}

/// A hasher for keys that already are hashes (and, in tests, for keys that must collide).
#[derive(Default)]
struct PrehashedHasher(u64);

impl std::hash::Hasher for PrehashedHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, _bytes: &[u8]) {}
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// A placeholder for the table's initial fill; every slot is overwritten.
static EMPTY: std::sync::LazyLock<Endpoint> = std::sync::LazyLock::new(Endpoint::default);

/// Buffers reused from row to row.
#[derive(Default)]
struct Scratch<'a> {
    types: Vec<&'a RecordType>,
    candidates: Vec<&'a Endpoint>,
    creates: Vec<&'a Endpoint>,
}

/// One row: `cur` the current records, `cand` the candidates, at one (normalised name, set identifier).
fn plan_row<'a>(
    config: &PlanConfig,
    desired: &[Endpoint],
    cur: &[&'a Endpoint],
    cand: &[&'a Endpoint],
    scratch: &mut Scratch<'a>,
    out: RowOut<'_>,
) {
    let RowOut {
        changes,
        creates_from,
        mismatches,
    } = out;
    if cand.is_empty() {
        changes.extend(cur.iter().map(|&e| Change::Delete(e.clone())));
        return;
    }
    let discard_cnames = cname_conflicts(cand);
    if discard_cnames {
        tracing::info!(name = %cand[0].dns_name, "conflicting record type candidates; discarding CNAME record");
    }
    scratch.types.clear();
    for e in cur.iter().chain(cand) {
        if !scratch.types.contains(&&e.record_type) {
            scratch.types.push(&e.record_type);
        }
    }
    scratch.creates.clear();
    for ti in 0..scratch.types.len() {
        let t = scratch.types[ti];
        // The last current record of a type wins, as in external-dns.
        let current = cur.iter().rev().find(|e| e.record_type == *t).copied();
        scratch.candidates.clear();
        if !(discard_cnames && *t == RecordType::Cname) {
            scratch.candidates.extend(cand.iter().filter(|e| e.record_type == *t));
        }
        let candidates = scratch.candidates.as_slice();
        match (current, candidates.is_empty()) {
            (Some(current), true) => changes.push(Change::Delete(current.clone())),
            (None, false) => scratch.creates.extend(resolve_create(candidates)),
            (Some(current), false) => {
                let desired = match candidates {
                    [only] => *only,
                    _ => match resolve_update(current, candidates) {
                        Some(d) => d,
                        None => continue,
                    },
                };
                if handover::adoptable(config, current) {
                    if record_differs(desired, current) {
                        tracing::info!(record = %current, "not adopting a released record: it differs from what we would write");
                    } else {
                        let mut new = desired.clone();
                        named::keep_named_object(&mut new, current);
                        changes.push(handover::adopt(config, current, new));
                    }
                    continue;
                }
                if needs_update(config, desired, current) {
                    let mut new = desired.clone();
                    named::keep_named_object(&mut new, current);
                    // The new side keeps the current owner so the owner filter treats both sides alike.
                    new.labels
                        .insert(label::OWNER.to_string(), current.owner().unwrap_or("").to_string());
                    changes.push(Change::update(current.clone(), new));
                }
            }
            (None, true) => {}
        }
    }
    if scratch.creates.is_empty() {
        return;
    }
    // A free name needs no ownership check; at a taken name every record must be ours.
    if !cur.is_empty() && !config.owner_id.is_empty() {
        let mut blocked = false;
        for e in cur.iter().filter(|e| e.owner() != Some(config.owner_id.as_str())) {
            blocked = true;
            tracing::debug!(
                record = %e,
                owner = e.owner().unwrap_or(""),
                "not creating records at a name held by another owner"
            );
            mismatches.push(OwnerMismatch {
                record_type: e.record_type.to_string(),
                owner: config.owner_id.clone(),
                foreign_owner: match e.owner() {
                    Some(o) if !o.is_empty() => o.to_string(),
                    _ => e.set_identifier.clone(),
                },
                domain: parent_domain(&e.dns_name).to_string(),
            });
        }
        if blocked {
            return;
        }
    }
    for &e in &scratch.creates {
        // Filled in once the plan is known; a record not from `desired` (none is) is copied now.
        let from = position_in(desired, e);
        changes.push(Change::Create(if from.is_some() {
            Endpoint::default()
        } else {
            e.clone()
        }));
        creates_from.push(from);
    }
}

/// external-dns's update conditions: the record differs ([`record_differs`]), or an owner migration is in
/// progress; and a release no longer declared (`--txt-release-to-owner` taken back), so its mark goes.
fn needs_update(config: &PlanConfig, desired: &Endpoint, current: &Endpoint) -> bool {
    record_differs(desired, current)
        || config
            .old_owner_id
            .as_deref()
            .is_some_and(|old| !old.is_empty() && current.owner().unwrap_or("") != old)
        || (config.release_to.is_none() && current.label(label::RELEASED_TO).is_some())
}

/// Whether the record written would differ from `current`: a configured TTL that differs, different
/// targets, different provider-specific properties.
fn record_differs(desired: &Endpoint, current: &Endpoint) -> bool {
    (desired.record_ttl.is_configured() && desired.record_ttl != current.record_ttl)
        || !targets_same(&desired.targets, &current.targets)
        || provider_specific_differs(desired, current)
}

/// [`Targets::same`], without its sorting allocations for the usual single target.
fn targets_same(a: &Targets, b: &Targets) -> bool {
    match (a.as_slice(), b.as_slice()) {
        ([x], [y]) => x.eq_ignore_ascii_case(y) || a.same(b),
        _ => a.same(b),
    }
}

/// Compared by name: a property only one side has, or with another value, is a difference. Properties the
/// provider returns but the sources never set therefore cause an update every sync unless the provider's
/// `adjust_endpoints` sets them too (external-dns behaves the same).
fn provider_specific_differs(desired: &Endpoint, current: &Endpoint) -> bool {
    if desired.provider_specific.is_empty() && current.provider_specific.is_empty() {
        return false;
    }
    let mut wanted: HashMap<&str, &str> = desired
        .provider_specific
        .iter()
        .map(|p| (p.name.as_str(), p.value.as_str()))
        .collect();
    for p in current.provider_specific.iter() {
        match wanted.remove(p.name.as_str()) {
            Some(v) if v == p.value => {}
            _ => return true,
        }
    }
    !wanted.is_empty()
}

/// The gauge's `domain` label: the name without its first label, unless that leaves a single label.
fn parent_domain(name: &str) -> &str {
    match name.split_once('.') {
        Some((_, rest)) if rest.contains('.') => rest,
        _ => name,
    }
}

fn sort_key(e: &Endpoint) -> (&str, &RecordType, &str) {
    (e.dns_name.as_str(), &e.record_type, e.set_identifier.as_str())
}

/// Apply order first (deletes, updates, creates), then name, type and set identifier; an update sorts by its
/// new side. In place: a stable sort's buffer would be a second copy of every change at a first sync's peak,
/// and changes with one key (only duplicate records a provider returned) are interchangeable.
fn sort_changes(changes: &mut [Change]) {
    changes.sort_unstable_by(|a, b| {
        (a.apply_order(), sort_key(a.endpoint())).cmp(&(b.apply_order(), sort_key(b.endpoint())))
    });
}
