//! TEMPORARY until extdns_source::wrappers lands.
use extdns_endpoint::Endpoint;
use extdns_informer::Cluster;
use extdns_source::SourceError;
use std::collections::BTreeMap;
pub struct Pipeline;
impl Pipeline {
    pub async fn endpoints(&self, _c: &dyn Cluster) -> Result<PipelineOutput, SourceError> {
        Ok(PipelineOutput::default())
    }
}
#[derive(Default, Debug)]
pub struct PipelineOutput {
    pub endpoints: Vec<Endpoint>,
    pub invalid: BTreeMap<(String, String), usize>,
    pub deduplicated: BTreeMap<(String, String), usize>,
}
