//! `--source=f5-virtualserver` and `--source=f5-transportserver`: no flag of their own, and one refusal.

use extdns_source::SourceConfig;
use extdns_source_f5::{F5SourceConfig, source_name};
use extdns_source_service::ServiceSourceConfig;
use extdns_wiring::EnabledSource;

use super::{ValidationError, fail};

/// The F5 sources' configuration: what every source shares. external-dns runs `--fqdn-target-template`
/// on F5 objects too; extdns runs it on Services only, so with an F5 source selected it is refused rather
/// than silently publishing less than external-dns would (docs/migration.md).
pub(crate) fn config(
    enabled: &[EnabledSource],
    service: &ServiceSourceConfig,
    common: SourceConfig,
) -> Result<F5SourceConfig, ValidationError> {
    let f5 = enabled.iter().find_map(|e| match e {
        EnabledSource::F5(kind) => Some(source_name(*kind)),
        _ => None,
    });
    if let (Some(name), Some(_)) = (f5, &service.fqdn_target_template) {
        return fail(format!(
            "--fqdn-target-template is not run on {name} objects by extdns (only on Services); remove it or run \
             {name} with external-dns (see docs/migration.md)"
        ));
    }
    Ok(F5SourceConfig::new(common))
}
