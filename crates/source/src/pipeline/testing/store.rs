//! Stores loaded from objects as the API server holds them, through the manifest loader.

use std::path::Path;

use extdns_informer::manifests::{Format, Loader};
use extdns_informer::{ClusterStore, LoadOptions};
use serde_json::Value;

use super::Flags;
use crate::SourceConfig;
use crate::template::TemplateKind;

/// A store holding `objects`; panics on an object the loader refuses or warns about.
pub fn load<'a>(objects: impl IntoIterator<Item = &'a Value>, options: LoadOptions) -> ClusterStore {
    let mut loader = Loader::new(options);
    add(&mut loader, objects);
    let loaded = loader.finish();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    loaded.store
}

/// A store holding `objects` read leniently, as the controller reads manifests: an object that does not
/// decode is recorded as undecodable, not refused.
pub fn load_lenient<'a>(objects: impl IntoIterator<Item = &'a Value>, options: LoadOptions) -> ClusterStore {
    let mut loader = Loader::lenient(options);
    add(&mut loader, objects);
    loader.finish().store
}

/// A store holding the objects of `yaml` (documents separated by `---`); panics on an object the loader
/// refuses or warns about.
pub fn load_yaml(yaml: &str, options: LoadOptions) -> ClusterStore {
    let mut loader = Loader::new(options);
    if let Err(e) = loader.add_str(yaml, Path::new("test.yaml"), Format::Yaml) {
        panic!("{yaml}: {e}");
    }
    let loaded = loader.finish();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    loaded.store
}

fn add<'a>(loader: &mut Loader, objects: impl IntoIterator<Item = &'a Value>) {
    for o in objects {
        if let Err(e) = loader.add_str(&o.to_string(), Path::new("test.json"), Format::Json) {
            panic!("{o}: {e}");
        }
    }
}

/// A store holding `objects`, keeping the fields `config`'s FQDN template reads from objects of `kind`.
/// Panics on an object the loader warns about.
pub fn store(objects: &[Value], config: &SourceConfig, kind: TemplateKind) -> ClusterStore {
    let mut options = LoadOptions::default();
    options.template_fields = super::kept_fields(kind, config.fqdn_template.as_deref(), None);
    load(objects, options)
}

impl<S> Flags<S> {
    /// A store holding `objects`, keeping the fields these flags' templates read from objects of `kind`.
    /// Panics on an object the loader warns about.
    pub fn store<'a>(&self, objects: impl IntoIterator<Item = &'a Value>, kind: TemplateKind) -> ClusterStore {
        load(objects, self.load_options(&[kind]))
    }
}
