//! One request budget per cloud account, however many pipelines spend it. The clouds limit requests per
//! account (Route53 per AWS account, Cloudflare per token or user, Azure Resource Manager per
//! subscription, Cloud DNS per project), not per client: with several DNSProviders over one account, or
//! one per cluster, pacers of their own would each take the whole limit and together overrun it. So the
//! binary makes one [`PacerPool`] and hands it to every provider it builds (in each configuration's
//! `ApiSettings`, or Route53's own), and each provider asks it for its account's [`Pacer`] by an
//! [`AccountKey`]: every pipeline whose credentials name the same account draws from the one pacer, whose
//! waiters are served in the order they asked (tokio's mutex is fair), so the budget is shared request by
//! request and no pipeline can starve another. An explicit object rather than a static: the pool's life is
//! the process's configuration, tests make as many as they like, and nothing is shared between providers
//! the binary did not hand the same pool.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex};

use crate::pace::{Pacer, Rate};

/// Who the cloud counts a request for: the cloud, its API's address (another partition, a private
/// endpoint or a test's fake is another budget) and the account's identity there. A secret identity (a
/// Cloudflare token) is kept only as its hash, so a key can be logged.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AccountKey {
    cloud: &'static str,
    endpoint: String,
    identity: Identity,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Identity {
    /// A name that is no secret: an account id, a subscription, a project, a user's email.
    Named(String),
    /// A secret's hash.
    Secret(u64),
}

impl AccountKey {
    /// The account `identity` (an account id, subscription, project or user, no secret) of `cloud` at
    /// `endpoint`.
    pub fn named(cloud: &'static str, endpoint: &str, identity: &str) -> AccountKey {
        AccountKey {
            cloud,
            endpoint: endpoint.trim_end_matches('/').to_ascii_lowercase(),
            identity: Identity::Named(identity.to_string()),
        }
    }

    /// The account a secret stands for (a token the cloud counts by): two pipelines with the same secret
    /// share a key, and the key holds only the secret's hash.
    pub fn secret(cloud: &'static str, endpoint: &str, secret: &str) -> AccountKey {
        let mut hasher = DefaultHasher::new();
        secret.hash(&mut hasher);
        AccountKey {
            cloud,
            endpoint: endpoint.trim_end_matches('/').to_ascii_lowercase(),
            identity: Identity::Secret(hasher.finish()),
        }
    }
}

impl std::fmt::Display for AccountKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.identity {
            Identity::Named(name) => write!(f, "{} account {name} at {}", self.cloud, self.endpoint),
            Identity::Secret(hash) => write!(f, "{} token #{:08x} at {}", self.cloud, hash >> 32, self.endpoint),
        }
    }
}

/// The limits one account's pacer was made with.
type Limits = (Option<Rate>, Option<Rate>);

/// Every account's pacer, made on first use. Clone the `Arc` to hand it on; the pacers live as long as the
/// pool, so a pipeline rebuilt for a new Secret keeps its account's recent requests counted.
#[derive(Debug, Default)]
pub struct PacerPool {
    pacers: Mutex<HashMap<AccountKey, (Limits, Arc<Pacer>)>>,
}

impl PacerPool {
    /// An empty pool: a provider given one of its own shares its budget with nobody.
    pub fn new() -> PacerPool {
        PacerPool::default()
    }

    /// The pacer of `account`: every request at most `every`, the cloud's own write limit `writes`
    /// within it. The first provider of an account sets its limits; a later one asking others gets the
    /// same pacer (one budget is the point) and a warning naming both.
    pub fn pacer(&self, account: &AccountKey, every: Option<Rate>, writes: Option<Rate>) -> Arc<Pacer> {
        let mut pacers = self.pacers.lock().unwrap_or_else(|p| p.into_inner());
        let (limits, pacer) = pacers
            .entry(account.clone())
            .or_insert_with(|| ((every, writes), Arc::new(Pacer::new(every, writes))));
        if *limits != (every, writes) {
            tracing::warn!(
                %account,
                kept = %describe(*limits),
                asked = %describe((every, writes)),
                "two providers of one account ask for different request rates: the first one's is kept for both"
            );
        }
        pacer.clone()
    }

    /// How many accounts have a pacer.
    pub fn len(&self) -> usize {
        self.pacers.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// Whether no account has one yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn describe((every, writes): Limits) -> String {
    let text = |r: Option<Rate>| r.map_or_else(|| "no limit".to_string(), |r| r.to_string());
    format!("{}, writes {}", text(every), text(writes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::time::Instant;

    #[test]
    fn one_account_one_pacer_and_other_accounts_their_own() {
        let pool = PacerPool::new();
        let rate = Rate::per_second(5.0);
        let a = AccountKey::named("route53", "https://route53.amazonaws.com/", "111122223333");
        let same = AccountKey::named("route53", "https://ROUTE53.amazonaws.com", "111122223333");
        let other = AccountKey::named("route53", "https://route53.amazonaws.com", "444455556666");
        let first = pool.pacer(&a, rate, None);
        assert!(Arc::ptr_eq(&first, &pool.pacer(&same, rate, None)));
        assert!(!Arc::ptr_eq(&first, &pool.pacer(&other, rate, None)));
        assert_eq!(pool.len(), 2);
        let faster = pool.pacer(&a, Rate::per_second(50.0), None);
        assert!(
            Arc::ptr_eq(&first, &faster),
            "a second asker shares the first one's pacer"
        );
        assert_eq!(faster.every(), rate);
    }

    #[test]
    fn a_secret_is_keyed_by_its_hash_and_never_shown() {
        let a = AccountKey::secret("cloudflare", "https://api.cloudflare.com/client/v4", "tok-1");
        assert_eq!(
            a,
            AccountKey::secret("cloudflare", "https://api.cloudflare.com/client/v4", "tok-1")
        );
        assert_ne!(
            a,
            AccountKey::secret("cloudflare", "https://api.cloudflare.com/client/v4", "tok-2")
        );
        assert_ne!(
            a,
            AccountKey::named("cloudflare", "https://api.cloudflare.com/client/v4", "tok-1")
        );
        let shown = format!("{a} {a:?}");
        assert!(!shown.contains("tok-1"), "{shown}");
        assert!(shown.starts_with("cloudflare token #"), "{shown}");
    }

    #[tokio::test(start_paused = true)]
    async fn pipelines_of_one_account_share_its_rate_request_by_request() {
        let pool = Arc::new(PacerPool::new());
        let account = AccountKey::named("route53", "https://route53.amazonaws.com", "111122223333");
        let start = Instant::now();
        // Three pipelines, each asking for four requests at once.
        let tasks: Vec<_> = (0..3)
            .map(|pipeline| {
                let pacer = pool.pacer(&account, Rate::per_second(10.0), None);
                tokio::spawn(async move {
                    let mut left = Vec::new();
                    for _ in 0..4 {
                        pacer.request().await;
                        left.push((start.elapsed().as_millis(), pipeline));
                    }
                    left
                })
            })
            .collect();
        let mut all = Vec::new();
        for t in tasks {
            all.extend(t.await.unwrap_or_default());
        }
        all.sort_unstable();
        let times: Vec<u128> = all.iter().map(|(at, _)| *at).collect();
        assert_eq!(
            times,
            (0..12).map(|i| i * 100).collect::<Vec<_>>(),
            "one rate for all three"
        );
        // Served in turn: while a pipeline waits, the others take at most one slot each before it.
        for pipeline in 0..3 {
            let mine: Vec<u128> = all.iter().filter(|(_, p)| *p == pipeline).map(|(at, _)| *at).collect();
            assert_eq!(mine.len(), 4);
            for pair in mine.windows(2) {
                assert!(
                    pair[1] - pair[0] <= 300,
                    "pipeline {pipeline} waited past its turn: {all:?}"
                );
            }
        }
    }
}
