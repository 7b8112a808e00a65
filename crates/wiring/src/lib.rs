//! The trait objects extdns runs, built from typed settings: [`ProviderSettings`], one configuration per
//! provider extdns implements, into an `Arc<dyn Provider>` ([`build_provider`]); [`SourceSettings`], the
//! enabled sources' configurations, into the source pipeline ([`build_pipeline`]), the same for every
//! command, so the preview runs exactly what the controller runs; [`Settings`], all the controller reads,
//! into the controller over the cluster view, the pipeline and the registry ([`build_controller`]).
//!
//! The settings are values of the libraries' own configuration types: reading and checking the flags that
//! fill them is the binary's (`extdns::settings`), and so is naming a flag in an error: a provider that
//! cannot be built says which provider and why ([`BuildError`]), and the binary puts the flag in front.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().build()?.block_on(async {
//! use extdns_wiring::{Instruments, ProviderSettings, build_provider};
//!
//! let settings = ProviderSettings::InMemory { zones: vec!["example.org".into()], write_rate: None };
//! assert_eq!(settings.name(), "inmemory");
//! let provider = build_provider(&settings, &Instruments::default()).await?;
//! assert!(provider.records().await.is_ok());
//!
//! let refused = build_provider(&ProviderSettings::Unsupported("ns1"), &Instruments::default()).await;
//! assert_eq!(refused.err().map(|e| e.to_string()).as_deref(), Some("provider ns1 is not supported by extdns yet"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # })
//! # .map_err(|e: Box<dyn std::error::Error>| e)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod controller;
mod provider;
mod sources;

pub use controller::shared_registry;
pub use controller::{
    ClusterSettings, Error, KubeSettings, LeaderSettings, RegistryError, RegistrySettings, Settings, build_cluster,
    build_controller, build_registry, controller_with_cluster, controller_with_pipeline, kube_client, live_options,
    watched_kinds,
};
pub use controller::{controller_with_registry, registry_for};
pub use provider::{BuildError, CLOUD_REREAD_INTERVAL, Instruments, ProviderSettings, build_provider};
pub use sources::{EnabledSource, SourceSettings, build_pipeline, build_sources, default_resolver};

#[cfg(test)]
mod tests;
