//! Writes the API server refuses for want of RBAC (403): extdns's finalizer or a provider object's status.
//! Neither stops a provider: the leader runs every object it can read (without the finalizer, a deletion
//! only stops the pipeline; without the status, nothing is said on the object), logs the missing grant
//! once per object and write, and counts it in `extdns_provider_manager_forbidden_writes`, which stays 1
//! while it lasts, so an alert can name what to grant.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use extdns_controller::Metrics;
use extdns_dnsprovider::ProviderId;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use tracing::{info, warn};

/// A write the manager makes on a provider object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Write {
    /// Adding or removing extdns's finalizer: `patch` on the kind.
    Finalizer,
    /// The status: `patch` on the kind's `status` subresource.
    Status,
}

impl Write {
    /// The resource the write needs `patch` on, for `id`'s kind (`clusterdnsproviders/status`).
    pub fn resource(self, id: &ProviderId) -> String {
        let plural = id.kind().plural();
        match self {
            Write::Finalizer => plural.to_string(),
            Write::Status => format!("{plural}/status"),
        }
    }

    fn what(self) -> &'static str {
        match self {
            Write::Finalizer => "without extdns's finalizer: deleting it stops its pipeline without saying so",
            Write::Status => "its status is not written",
        }
    }
}

type Labels = Vec<(String, String)>;

/// The writes refused so far, by object.
pub struct Forbidden {
    refused: Mutex<BTreeSet<(ProviderId, Write)>>,
    gauge: Family<Labels, Gauge>,
}

impl fmt::Debug for Forbidden {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let refused = self.refused.lock().unwrap_or_else(PoisonError::into_inner);
        f.debug_struct("Forbidden").field("refused", &*refused).finish()
    }
}

impl Forbidden {
    /// A tracker whose gauge is registered on `metrics` (the deployment's, before they are shared).
    pub fn register(metrics: &mut Metrics) -> Arc<Forbidden> {
        let forbidden = Arc::new(Forbidden {
            refused: Mutex::new(BTreeSet::new()),
            gauge: Family::default(),
        });
        let gauge = forbidden.gauge.clone();
        metrics.register_with_prefix("extdns_provider_manager", |r| {
            r.register(
                "forbidden_writes",
                "Writes on a provider object the API server refuses (403): 1 per provider, verb and resource \
                 while it lasts",
                gauge,
            );
        });
        forbidden
    }

    fn labels(id: &ProviderId, write: Write) -> Labels {
        vec![
            ("provider".to_string(), id.to_string()),
            ("verb".to_string(), "patch".to_string()),
            ("resource".to_string(), write.resource(id)),
        ]
    }

    /// `write` on `id` was refused with `error`: logged the first time in a row only; whether it was.
    pub fn refused(&self, id: &ProviderId, write: Write, error: &dyn fmt::Display) -> bool {
        let first = self
            .refused
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert((id.clone(), write));
        self.gauge.get_or_create(&Forbidden::labels(id, write)).set(1);
        if first {
            warn!(provider = %id, verb = "patch", resource = %write.resource(id), %error,
                  "extdns may not write this provider object; it runs all the same, {}; grant patch on {}",
                  write.what(), write.resource(id));
        }
        first
    }

    /// `write` on `id` went through: a refusal before is over.
    pub fn allowed(&self, id: &ProviderId, write: Write) {
        let was = self
            .refused
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&(id.clone(), write));
        if was {
            self.gauge.remove(&Forbidden::labels(id, write));
            info!(provider = %id, resource = %write.resource(id), "extdns may write this provider object again");
        }
    }

    /// Whether `write` on `id` is refused now.
    pub fn is_refused(&self, id: &ProviderId, write: Write) -> bool {
        self.refused
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(&(id.clone(), write))
    }
}

/// Whether a kube error is the API server's 403.
pub(crate) fn is_forbidden(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 403)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_write_is_logged_once_and_shown_in_a_metric_until_it_is_allowed() {
        let mut metrics = Metrics::for_providers("test", "test");
        let forbidden = Forbidden::register(&mut metrics);
        let id = ProviderId::Cluster { name: "p".into() };
        assert!(forbidden.refused(&id, Write::Status, &"403 forbidden"));
        assert!(!forbidden.refused(&id, Write::Status, &"403 forbidden"), "logged once");
        assert!(forbidden.is_refused(&id, Write::Status));
        assert!(!forbidden.is_refused(&id, Write::Finalizer));
        let line = "extdns_provider_manager_forbidden_writes{provider=\"ClusterDNSProvider/p\",verb=\"patch\",\
                    resource=\"clusterdnsproviders/status\"} 1";
        assert!(metrics.encode().contains(line), "{}", metrics.encode());
        forbidden.allowed(&id, Write::Status);
        assert!(!forbidden.is_refused(&id, Write::Status));
        assert!(!metrics.encode().contains("clusterdnsproviders/status"));
        assert!(
            forbidden.refused(&id, Write::Status, &"403"),
            "refused again after a success: logged again"
        );
    }
}
