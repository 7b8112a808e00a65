//! The election of the pod this process runs in: the Lease's namespace and this replica's identity found
//! where client-go's leader election finds them, so every command that elects (the controller, the
//! provider manager) competes alike.

use tracing::info;

use crate::{ElectionConfig, LeaseTiming, NAMESPACE_FILE, identity, pod_namespace};

impl ElectionConfig {
    /// The Lease `name` in `namespace`, else the pod's own (its service-account namespace, else
    /// `POD_NAMESPACE`, else `default`), held under this pod's name (`POD_NAME`, else `HOSTNAME`, else
    /// `/etc/hostname`, else `extdns`) and a random suffix.
    pub fn for_this_pod(name: &str, namespace: Option<&str>, timing: LeaseTiming) -> ElectionConfig {
        let namespace = match namespace {
            Some(ns) => ns.to_string(),
            None => pod_namespace(
                std::fs::read_to_string(NAMESPACE_FILE).ok().as_deref(),
                std::env::var("POD_NAMESPACE").ok().as_deref(),
            ),
        };
        let hostname = std::env::var("POD_NAME")
            .or_else(|_| std::env::var("HOSTNAME"))
            .ok()
            .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
            .map(|h| h.trim().to_string())
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "extdns".to_string());
        let identity = identity(&hostname, random_u64());
        info!(lease = %name, %namespace, %identity, "leader election: competing for the lease");
        ElectionConfig::new(namespace, name, identity, timing)
    }
}

/// A random number for the lease identity, from the standard library's randomly seeded hasher (no
/// cryptographic strength is needed: it only has to differ between two pods of the same name).
fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    if let Ok(t) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        h.write_u128(t.as_nanos());
    }
    h.finish()
}
