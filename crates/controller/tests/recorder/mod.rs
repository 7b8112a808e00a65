//! The in-memory provider behind a recorder, shared by the controller's integration tests: each apply call
//! is recorded as the test's `record` makes it of the call's units, and reads are counted.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use extdns_endpoint::DomainFilter;
use extdns_provider::{InMemoryProvider, Provider, ProviderError, ReadState, Records, Unit};

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
