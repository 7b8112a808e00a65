//! TEMPORARY: stands in for extdns_source::resolver until it lands.
use std::net::IpAddr;

#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    #[error("{0} not found")]
    NotFound(String),
}

#[async_trait::async_trait]
pub trait Resolver: Send + Sync {
    async fn lookup_ip(&self, host: &str) -> Result<Vec<IpAddr>, ResolveError>;
}

pub struct T<'a>(pub &'a extdns_informer::view::Service);
impl extdns_source::TemplateObject for T<'_> {
    fn describe(&self) -> String {
        format!("service {}/{}", self.0.meta.namespace, self.0.meta.name)
    }
    fn typed(&self) -> extdns_source::template::Value {
        extdns_source::template::Value::Nil
    }
    fn unstructured(&self) -> extdns_source::template::Value {
        extdns_source::template::Value::Nil
    }
}
