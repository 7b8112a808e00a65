//! `/summary` on the metrics port (external-dns #5017): how many names each object kind has in each state,
//! and the names that are not published with why, a page at a time (`?limit=&continue=`, as the
//! Kubernetes API pages its lists), as JSON.
//!
//! Counts are by kind and reason rather than per object, so the answer stays small on a cluster of
//! thousands of objects; the list is what an operator reads to find who to talk to, so it is bounded
//! ([`MAX_LIMIT`]) and paged by the last item's key (stable when names come and go between pages, unlike
//! an offset). It reads the outcomes the syncs left ([`crate::NameBook`]): serving it costs no sync.

use std::collections::BTreeMap;

use extdns_informer::ObjectKey;
use serde::Serialize;

use crate::name_status::{NameOutcome, NameRef, NameState, NameStatuses, Reason};

/// The page size when `limit` is not given.
pub const DEFAULT_LIMIT: usize = 100;
/// The largest page: a larger `limit` is cut to it.
pub const MAX_LIMIT: usize = 1000;

/// What `/summary` was asked: a page size and where the last page ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SummaryQuery {
    /// At most this many names in the list (`DEFAULT_LIMIT` when unset, at most `MAX_LIMIT`).
    pub limit: Option<usize>,
    /// The `continue` token of the previous page.
    pub continue_from: Option<String>,
}

impl SummaryQuery {
    /// Reads `limit=` and `continue=` from a URL query string; unknown and malformed parameters are
    /// ignored (a bad `limit` means the default), so a typo costs a default page, not an error.
    pub fn parse(query: &str) -> SummaryQuery {
        let mut q = SummaryQuery::default();
        for pair in query.split('&') {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            match key {
                "limit" => q.limit = value.parse().ok().filter(|n| *n > 0),
                "continue" => q.continue_from = Some(percent_decode(value)).filter(|v| !v.is_empty()),
                _ => {}
            }
        }
        q
    }

    fn limit(&self) -> usize {
        self.limit.unwrap_or(DEFAULT_LIMIT).min(MAX_LIMIT)
    }
}

/// One name that is not published, with its object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NotPublished {
    /// The object's kind (`Service`, `HTTPRoute`, `DNSEndpoint`).
    pub kind: &'static str,
    /// Empty for cluster-scoped objects.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// The object's name.
    pub object: String,
    /// The name and why.
    #[serde(flatten)]
    pub name: NameOutcome,
    /// The reason in words, as the object's status says it.
    pub message: String,
}

/// The `/summary` answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// Per object kind, per reason, how many names.
    pub names: BTreeMap<&'static str, BTreeMap<&'static str, usize>>,
    /// Per object kind, per reason (the worst of its names'), how many objects.
    pub objects: BTreeMap<&'static str, BTreeMap<&'static str, usize>>,
    /// This page of the names that are not published.
    pub not_published: Vec<NotPublished>,
    /// Pass as `continue=` for the next page; absent on the last.
    #[serde(rename = "continue", skip_serializing_if = "Option::is_none")]
    pub continue_token: Option<String>,
}

/// A `continue=` that no `/summary` page gave: refused (`400`, as the Kubernetes API refuses a list's bad
/// continue token) rather than answered with the first page again, which a client following the tokens
/// would take for the next one and list the same names twice, or forever.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("continue={0:?} is not a token a /summary page gave; list again without continue")]
pub struct BadContinue(pub String);

impl Summary {
    /// The page `query` asks for, or why its `continue` token cannot say where the page starts.
    pub fn page(statuses: &NameStatuses, query: &SummaryQuery) -> Result<Summary, BadContinue> {
        match &query.continue_from {
            Some(token) if parse_token(token).is_none() => Err(BadContinue(token.clone())),
            _ => Ok(Summary::of(statuses, query)),
        }
    }

    /// The summary of `statuses`, the page `query` asks for (from the first page when its `continue` token
    /// is not one; [`Summary::page`] refuses it).
    pub fn of(statuses: &NameStatuses, query: &SummaryQuery) -> Summary {
        let mut names: BTreeMap<&'static str, BTreeMap<&'static str, usize>> = BTreeMap::new();
        let mut objects: BTreeMap<&'static str, BTreeMap<&'static str, usize>> = BTreeMap::new();
        let limit = query.limit();
        let mut page = Vec::new();
        let mut continue_token = None;
        let after = query.continue_from.as_deref().and_then(parse_token);
        for (key, object) in statuses.iter() {
            let kind = key.kind.kind();
            if let Some(r) = object.reason() {
                *objects.entry(kind).or_default().entry(r.as_str()).or_default() += 1;
            }
            for n in &object.names {
                let reason = n.state.reason();
                *names.entry(kind).or_default().entry(reason.as_str()).or_default() += 1;
                if reason == Reason::Published {
                    continue;
                }
                if after.as_ref().is_some_and(|after| position_of(key, &n) <= *after) {
                    continue;
                }
                if page.len() == limit {
                    // One more exists: the page ends at the last one taken.
                    if continue_token.is_none() {
                        continue_token = page.last().map(|p: &(String, NotPublished)| p.0.clone());
                    }
                    continue;
                }
                page.push((
                    token_of(&key.resource_label(), &n),
                    NotPublished {
                        kind,
                        namespace: key.namespace.clone(),
                        object: key.name.clone(),
                        name: n.to_outcome(),
                        message: message(n.state),
                    },
                ));
            }
        }
        Summary {
            names,
            objects,
            not_published: page.into_iter().map(|(_, p)| p).collect(),
            continue_token,
        }
    }
}

fn message(state: &NameState) -> String {
    state.to_string()
}

/// The key a page ends at: the object's `resource` label, the name, type and set identifier, joined by
/// `|` (which none but the set identifier, kept last, may hold).
fn token_of(object: &str, n: &NameRef<'_>) -> String {
    format!("{object}|{}|{}|{}", n.name, n.record_type, n.set_identifier)
}

/// Where a token puts an item, comparable with [`position_of`]: the list's own order (objects in key
/// order, names in order within). `None` for a token this server did not make.
fn parse_token(token: &str) -> Option<Position> {
    let mut parts = token.splitn(4, '|');
    let object = ObjectKey::from_resource_label(parts.next()?)?;
    let name = parts.next()?.to_string();
    let record_type = parts.next()?.to_string();
    let set_identifier = parts.next()?.to_string();
    Some((object, name, record_type, set_identifier))
}

type Position = (ObjectKey, String, String, String);

fn position_of(key: &ObjectKey, n: &NameRef<'_>) -> Position {
    (
        key.clone(),
        n.name.to_string(),
        n.record_type.to_string(),
        n.set_identifier.to_string(),
    )
}

/// `%XX` and `+` as a query string encodes them; anything malformed is kept as it is.
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                match std::str::from_utf8(&bytes[i + 1..i + 3])
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                {
                    Some(b) => {
                        out.push(b);
                        i += 3;
                        continue;
                    }
                    None => out.push(b'%'),
                }
            }
            b'+' => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use extdns_informer::ResourceKind;

    use super::*;
    use crate::name_status::{NameBook, ObjectNames, Party};

    fn statuses() -> NameStatuses {
        let outcome = |name: String, state: NameState| NameOutcome {
            name: name.into(),
            record_type: "A".into(),
            set_identifier: Box::default(),
            state,
        };
        let published = NameState::published("rfc2136", None);
        let mut update = BTreeMap::new();
        for i in 0..5 {
            let names = vec![
                outcome(format!("ok{i}.example.org"), published.clone()),
                outcome(
                    format!("taken{i}.example.org"),
                    NameState::conflict(Party::Owner("b".into())),
                ),
            ];
            update.insert(
                ObjectKey::new(ResourceKind::Service, "shop", &format!("web{i}")),
                ObjectNames {
                    uid: None,
                    names: names.into(),
                },
            );
        }
        update.insert(
            ObjectKey::new(ResourceKind::Ingress, "shop", "site"),
            ObjectNames {
                uid: None,
                names: vec![outcome("site.example.org".into(), NameState::Pending)].into(),
            },
        );
        let book = NameBook::default();
        book.fold(update, None);
        NameStatuses::clone(&book.latest())
    }

    #[test]
    fn counts_by_kind_and_reason_and_lists_the_unpublished() {
        let s = Summary::of(&statuses(), &SummaryQuery::default());
        assert_eq!(s.names["Service"]["Published"], 5);
        assert_eq!(s.names["Service"]["Conflict"], 5);
        assert_eq!(s.objects["Service"]["Conflict"], 5);
        assert_eq!(s.objects["Ingress"]["Pending"], 1);
        assert_eq!(s.not_published.len(), 6);
        assert!(s.continue_token.is_none());
        let json = serde_json::to_value(&s).unwrap_or_default();
        let first = &json["notPublished"][0];
        assert_eq!(first["reason"], "Conflict");
        assert_eq!(first["with"]["owner"], "b");
        assert_eq!(first["kind"], "Service");
    }

    #[test]
    fn pages_cover_every_unpublished_name_once() {
        let all = statuses();
        let mut seen = BTreeSet::new();
        let mut query = SummaryQuery::parse("limit=4");
        let mut pages = 0;
        loop {
            let page = Summary::of(&all, &query);
            assert!(page.not_published.len() <= 4);
            pages += 1;
            for p in &page.not_published {
                assert!(seen.insert((p.object.clone(), p.name.name.clone())), "{p:?} twice");
            }
            let Some(token) = page.continue_token else { break };
            // As a client sends it back: percent-encoded.
            query = SummaryQuery::parse(&format!("limit=4&continue={}", token.replace('/', "%2F")));
            assert!(pages < 10, "the pages never end");
        }
        assert_eq!((seen.len(), pages), (6, 2));
    }

    #[test]
    fn a_continue_token_no_page_gave_is_refused_not_read_as_the_first_page() {
        let all = statuses();
        for token in ["garbage", "widget/x/y|a|A|", "service/shop/web0"] {
            let query = SummaryQuery::parse(&format!("limit=2&continue={token}"));
            assert_eq!(Summary::page(&all, &query), Err(BadContinue(token.into())), "{token}");
        }
        let first = Summary::page(&all, &SummaryQuery::parse("limit=2"));
        let token = first
            .as_ref()
            .ok()
            .and_then(|s| s.continue_token.clone())
            .unwrap_or_default();
        let next = Summary::page(&all, &SummaryQuery::parse(&format!("limit=2&continue={token}")));
        assert!(
            next.is_ok_and(|s| s.not_published.len() == 2),
            "a token a page gave is read"
        );
    }

    #[test]
    fn the_limit_is_bounded() {
        assert_eq!(SummaryQuery::parse("limit=5000").limit(), MAX_LIMIT);
        assert_eq!(SummaryQuery::parse("limit=x").limit(), DEFAULT_LIMIT);
        assert_eq!(SummaryQuery::parse("").limit(), DEFAULT_LIMIT);
    }
}
