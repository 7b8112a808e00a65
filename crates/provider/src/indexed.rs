//! The shape most providers share: a read that yields the endpoints and an index the writes need (zones,
//! record ids, keys, ETags), handed back through [`ReadState`] or read again when nothing was handed back.
//! A provider implements [`IndexedProvider`] and gets [`Provider`] from it, so it writes only what is its
//! own: how it reads, how it writes units against its index, and how it canonicalises endpoints.

use std::any::Any;

use async_trait::async_trait;
use extdns_endpoint::{DomainFilter, Endpoint};

use crate::batch::Unit;
use crate::zone::Placement;
use crate::{Provider, ProviderError, ReadState, Records};

/// A provider whose read yields endpoints and an index its writes need. Every such type is a
/// [`Provider`]: [`Provider::records`] reads and keeps the index as the read's state;
/// [`Provider::apply`] writes against the index handed back, or reads one first when the caller had
/// none (a webhook call, [`crate::apply_changes`]).
#[async_trait]
pub trait IndexedProvider: Send + Sync {
    /// What a read learnt that the writes need.
    type Index: Any + Send + Sync;

    /// Every record in the zones this provider manages, and the index of what was read.
    async fn read(&self) -> Result<(Vec<Endpoint>, Self::Index), ProviderError>;

    /// Apply the units against `index`, each whole or not at all, as [`Provider::apply`] documents.
    async fn write(&self, index: &Self::Index, units: &[Unit<'_>]) -> Result<(), ProviderError>;

    /// As [`Provider::adjust_endpoints`], one endpoint at a time: a desired endpoint spelt as this
    /// provider stores it (a TTL it ignores cleared, a property set to its default). Leaves it as it is
    /// unless overridden.
    fn canonicalise(&self, _endpoint: &mut Endpoint) {}

    /// As [`Provider::domain_filter`]: the names this provider can manage.
    fn domains(&self) -> DomainFilter;

    /// As [`Provider::placement`], against the index of a read: which of its zones holds `name` (the
    /// zone `write` would send it to). Unknown unless overridden.
    fn zone_of(&self, _index: &Self::Index, _name: &str) -> Placement {
        Placement::Unknown
    }

    /// As [`Provider::ownership_room`]: none unless overridden.
    fn ownership_room(&self, _endpoint: &Endpoint) -> Option<usize> {
        None
    }

    /// As [`Provider::read_state_outlives_writes`]: whether `write` keeps the index true to the zones
    /// (what it wrote folded in), so that it serves the writes after it until the next read. False, the
    /// safe default.
    fn index_outlives_writes(&self) -> bool {
        false
    }
}

#[async_trait]
impl<P: IndexedProvider> Provider for P {
    async fn records(&self) -> Result<Records, ProviderError> {
        let (endpoints, index) = self.read().await?;
        Ok(Records::with_state(endpoints, index))
    }

    async fn apply(&self, read: &ReadState, units: &[Unit<'_>]) -> Result<(), ProviderError> {
        let index = read.get_or_read(|| async { Ok(self.read().await?.1) }).await?;
        self.write(&index, units).await
    }

    async fn adjust_endpoints(&self, mut endpoints: Vec<Endpoint>) -> Result<Vec<Endpoint>, ProviderError> {
        endpoints.iter_mut().for_each(|ep| self.canonicalise(ep));
        Ok(endpoints)
    }

    fn domain_filter(&self) -> DomainFilter {
        self.domains()
    }

    fn placement(&self, read: &ReadState, name: &str) -> Placement {
        read.get::<P::Index>()
            .map_or(Placement::Unknown, |index| self.zone_of(index, name))
    }

    fn ownership_room(&self, endpoint: &Endpoint) -> Option<usize> {
        IndexedProvider::ownership_room(self, endpoint)
    }

    fn read_state_outlives_writes(&self) -> bool {
        self.index_outlives_writes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apply_changes;
    use extdns_endpoint::{Change, RecordType};
    use std::sync::Mutex;

    /// Counts its reads and records the index each write was given.
    #[derive(Default)]
    struct Counting {
        reads: Mutex<u32>,
        written_with: Mutex<Vec<u32>>,
    }

    #[async_trait]
    impl IndexedProvider for Counting {
        type Index = u32;

        async fn read(&self) -> Result<(Vec<Endpoint>, u32), ProviderError> {
            let mut reads = self.reads.lock().map_err(|_| ProviderError::fatal("poisoned"))?;
            *reads += 1;
            let web = Endpoint::new("web.example.org", RecordType::A, ["192.0.2.1"]);
            Ok((vec![web], 100 + *reads))
        }

        async fn write(&self, index: &u32, _units: &[Unit<'_>]) -> Result<(), ProviderError> {
            let mut written = self.written_with.lock().map_err(|_| ProviderError::fatal("poisoned"))?;
            written.push(*index);
            Ok(())
        }

        fn domains(&self) -> DomainFilter {
            DomainFilter::new(&["example.org"], &[])
        }
    }

    #[tokio::test]
    async fn a_write_uses_the_index_handed_back_and_reads_only_without_one() {
        let p = Counting::default();
        let read = p.records().await.expect("read");
        assert_eq!(read.endpoints.len(), 1);
        let change = Change::Create(Endpoint::new("www.example.org", RecordType::A, ["192.0.2.2"]));
        let units = [Unit::new(&change)];
        p.apply(&read.state, &units).await.expect("apply with the read's state");
        apply_changes(&p, std::slice::from_ref(&change))
            .await
            .expect("apply without a read");
        assert_eq!(
            *p.reads.lock().expect("reads"),
            2,
            "only the write without a state read"
        );
        assert_eq!(*p.written_with.lock().expect("writes"), vec![101, 102]);
        assert_eq!(p.domain_filter().includes(), ["example.org"]);
        let adjusted = p.adjust_endpoints(read.endpoints.clone()).await.expect("adjust");
        assert_eq!(
            adjusted, read.endpoints,
            "the default canonicalisation keeps endpoints as they are"
        );
    }
}
