//! Where the DNSRecords are kept when the configuration names no namespace: the controller's own, found as
//! external-dns finds it, once the client that knows its context's namespace exists.

use std::sync::Arc;

use extdns_provider::Provider;
use tracing::info;

use crate::{CrdRegistry, CrdRegistryConfig, default_namespace};

impl CrdRegistry {
    /// [`CrdRegistry::new`], with an empty `config.namespace` replaced by the controller's namespace
    /// ([`default_namespace`] of the client's namespace and `POD_NAMESPACE`).
    pub fn in_controller_namespace(
        client: kube::Client,
        provider: Arc<dyn Provider>,
        mut config: CrdRegistryConfig,
    ) -> CrdRegistry {
        if config.namespace.is_empty() {
            let pod = std::env::var("POD_NAMESPACE").ok();
            config.namespace = default_namespace(client.default_namespace(), pod.as_deref());
            info!(
                namespace = %config.namespace,
                "--crd-registry-namespace not given: the DNSRecords are kept in the controller's namespace"
            );
        }
        CrdRegistry::new(client, provider, config)
    }
}
