//! TEMPORARY: the contract's `extdns_source::wrappers::PipelineOutput`, until extdns-source lands it.

use std::collections::BTreeMap;

use extdns_endpoint::Endpoint;

#[derive(Default, Debug)]
pub struct PipelineOutput {
    pub endpoints: Vec<Endpoint>,
    pub invalid: BTreeMap<(String, String), usize>,
    pub deduplicated: BTreeMap<(String, String), usize>,
}
