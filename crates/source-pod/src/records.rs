//! One Pod's records as they are gathered: targets grouped by name and record type (external-dns's
//! endpoint map keyed by name, type and TTL, one TTL per Pod), names checked as they come in.

use extdns_endpoint::{Endpoint, RecordType, Target, Ttl, validate_dns_name};

use crate::PodError;

/// The records of one Pod, in the order their names first came.
pub(crate) struct Records {
    ttl: Ttl,
    entries: Vec<(String, RecordType, Vec<Target>)>,
}

impl Records {
    /// No record yet; every one gets `ttl`.
    pub(crate) fn new(ttl: Ttl) -> Self {
        Records {
            ttl,
            entries: Vec::new(),
        }
    }

    /// Adds `target` at `name` (one trailing dot dropped), in a record of the type the target suits. An
    /// empty name adds nothing (an annotation ending in a comma); an invalid one is why the Pod fails.
    pub(crate) fn add(&mut self, name: &str, target: Target) -> Result<(), PodError> {
        let name = name.strip_suffix('.').unwrap_or(name);
        if name.is_empty() {
            return Ok(());
        }
        validate_dns_name(name).map_err(|source| PodError::InvalidName {
            name: extdns_source::shorten(name).into_owned(),
            source,
        })?;
        let record_type = target.suitable_type();
        match self.entries.iter_mut().find(|(n, t, _)| n == name && *t == record_type) {
            Some((_, _, targets)) => targets.push(target),
            None => self.entries.push((name.to_string(), record_type, vec![target])),
        }
        Ok(())
    }

    /// The records, targets sorted and deduplicated.
    pub(crate) fn into_endpoints(self) -> Vec<Endpoint> {
        let ttl = self.ttl;
        let endpoints = self
            .entries
            .into_iter()
            .map(|(name, record_type, targets)| Endpoint::new(&name, record_type, targets).with_ttl(ttl))
            .collect();
        extdns_endpoint::merge_endpoints(endpoints)
    }
}
