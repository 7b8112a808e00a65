//! What the controller's integration tests share: the in-memory provider behind a recorder (each apply call
//! recorded as the test's `record` makes it of the call's units, reads counted) and the controller over it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use extdns_controller::{Controller, ControllerConfig, Metrics};
use extdns_endpoint::DomainFilter;
use extdns_informer::Cluster;
use extdns_provider::{InMemoryProvider, Provider, ProviderError, ReadState, Records, Unit};
use extdns_registry::{Ownership, OwnershipConfig, RegistryError, TxtRegistry, TxtRegistryConfig};
use extdns_source::{Pipeline, PipelineConfig, Source};

/// The in-memory provider, each write taking `latency` and recorded as one `W`.
pub struct Recorder<W> {
    pub inner: InMemoryProvider,
    latency: Duration,
    record: fn(&[Unit<'_>]) -> W,
    reads: AtomicUsize,
    writes: Mutex<Vec<W>>,
}

impl<W: Clone> Recorder<W> {
    pub fn new(inner: InMemoryProvider, latency: Duration, record: fn(&[Unit<'_>]) -> W) -> Self {
        Recorder {
            inner,
            latency,
            record,
            reads: AtomicUsize::new(0),
            writes: Mutex::new(Vec::new()),
        }
    }

    /// How many times the zone was read.
    #[allow(dead_code, reason = "not every test counts reads")]
    pub fn reads(&self) -> usize {
        self.reads.load(Ordering::SeqCst)
    }

    /// The writes recorded so far.
    #[allow(dead_code, reason = "not every test keeps its writes")]
    pub fn writes(&self) -> Vec<W> {
        self.writes.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The writes recorded since the last take.
    #[allow(dead_code, reason = "not every test takes its writes")]
    pub fn take_writes(&self) -> Vec<W> {
        std::mem::take(&mut *self.writes.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

#[async_trait]
impl<W: Send + 'static> Provider for Recorder<W> {
    async fn records(&self) -> Result<Records, ProviderError> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        self.inner.records().await
    }
    async fn apply(&self, read: &ReadState, units: &[Unit<'_>]) -> Result<(), ProviderError> {
        let write = (self.record)(units);
        self.writes.lock().unwrap_or_else(|e| e.into_inner()).push(write);
        tokio::time::sleep(self.latency).await;
        self.inner.apply(read, units).await
    }
    fn domain_filter(&self) -> DomainFilter {
        self.inner.domain_filter()
    }
    fn read_state_outlives_writes(&self) -> bool {
        self.inner.read_state_outlives_writes()
    }
}

/// The controller over `cluster`'s objects as `source` reads them, writing to `provider` through the TXT
/// registry of the owner `me`, with `config` (its plan's owner set to match).
pub fn controller<W: Send + 'static>(
    cluster: Arc<dyn Cluster>,
    source: impl Source + 'static,
    provider: Arc<Recorder<W>>,
    mut config: ControllerConfig,
) -> Result<Controller, RegistryError> {
    let mut owner = OwnershipConfig::default();
    owner.owner_id = "me".to_string();
    let ownership = Ownership::new(owner)?;
    config.plan.owner_id = ownership.owner_id().to_string();
    let registry = Arc::new(TxtRegistry::new(provider, TxtRegistryConfig::new(ownership)));
    let pipeline = Pipeline::new(vec![Box::new(source)], PipelineConfig::default());
    Ok(Controller::new(
        cluster,
        Arc::new(pipeline),
        registry,
        config,
        Arc::new(Metrics::new("test", "test")),
    ))
}
