//! TEMPORARY stand-ins for `extdns_source::{resolver, wrappers}` (the source-commons engineer's, not landed
//! yet), with the agreed API so the wiring compiles and the commands run. The stand-in pipeline only
//! concatenates the sources' endpoints; the wrappers (dedup, target filter, NAT64, PTR, default targets,
//! min TTL, provider properties) come with the real one. Delete this module when it lands.

use std::collections::BTreeMap;
use std::net::IpAddr;

use async_trait::async_trait;
use extdns_endpoint::{Endpoint, TargetNetFilter, Ttl};
use extdns_informer::{Cluster, ResourceKind};
use extdns_source::{Source, SourceError};

#[derive(Debug, thiserror::Error)]
#[error("cannot resolve {0}")]
pub struct ResolveError(pub String);

#[async_trait]
pub trait Resolver: Send + Sync {
    async fn lookup_ip(&self, host: &str) -> Result<Vec<IpAddr>, ResolveError>;
}

/// Resolves nothing (the stand-in for the system resolver).
#[derive(Default)]
pub struct SystemResolver;

impl SystemResolver {
    pub fn new() -> Self {
        SystemResolver
    }
}

#[async_trait]
impl Resolver for SystemResolver {
    async fn lookup_ip(&self, host: &str) -> Result<Vec<IpAddr>, ResolveError> {
        Err(ResolveError(host.to_string()))
    }
}

#[async_trait]
impl extdns_source_service::shim::Resolver for SystemResolver {
    async fn lookup_ip(&self, host: &str) -> Result<Vec<IpAddr>, extdns_source_service::shim::ResolveError> {
        Err(extdns_source_service::shim::ResolveError::NotFound(host.to_string()))
    }
}

#[derive(Debug, Clone, Default)]
pub struct PipelineConfig {
    pub default_targets: Vec<String>,
    pub force_default_targets: bool,
    pub target_net_filter: TargetNetFilter,
    pub nat64_networks: Vec<ipnet::Ipv6Net>,
    pub manage_ptr: bool,
    pub create_ptr: bool,
    pub min_ttl: Ttl,
    pub provider: String,
    pub prefer_alias: bool,
}

#[derive(Debug, Default)]
pub struct PipelineOutput {
    pub endpoints: Vec<Endpoint>,
    pub invalid: BTreeMap<(String, String), usize>,
    pub deduplicated: BTreeMap<(String, String), usize>,
}

pub struct Pipeline {
    sources: Vec<Box<dyn Source>>,
    #[allow(dead_code)]
    config: PipelineConfig,
}

impl Pipeline {
    pub fn new(sources: Vec<Box<dyn Source>>, config: PipelineConfig) -> Self {
        Pipeline { sources, config }
    }

    pub fn watched_kinds(&self) -> Vec<ResourceKind> {
        let mut kinds: Vec<ResourceKind> = self.sources.iter().flat_map(|s| s.watched_kinds()).collect();
        kinds.sort();
        kinds.dedup();
        kinds
    }

    pub async fn endpoints(&self, cluster: &dyn Cluster) -> Result<PipelineOutput, SourceError> {
        let mut out = PipelineOutput::default();
        for s in &self.sources {
            out.endpoints.extend(s.endpoints(cluster).await?);
        }
        Ok(out)
    }
}
