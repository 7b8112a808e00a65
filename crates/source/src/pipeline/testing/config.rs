//! The flags a test case sets and the configuration they make.

use std::sync::Arc;

use extdns_informer::{LoadOptions, TemplateFields};

use crate::template::{TemplateKind, TemplateUse, template_fields};
use crate::{FqdnTemplate, Selector, SourceConfig};

/// A template of one flag value; panics on one that does not parse (a bug of the test).
pub fn template(text: &str) -> Arc<FqdnTemplate> {
    match FqdnTemplate::parse(&[text.to_string()]) {
        Ok(Some(t)) => Arc::new(t),
        other => panic!("template {text:?}: {other:?}"),
    }
}

/// The flags every source shares that a case sets, and the source's own ones (`S`, `()` for a source with
/// none), so that a case reads `Flags { label_filter: "app=x", ..none() }` whatever its source.
#[derive(Debug, Clone, Default)]
pub struct Flags<S = ()> {
    /// `--namespace`.
    pub namespace: Option<&'static str>,
    /// `--annotation-filter`.
    pub annotation_filter: &'static str,
    /// `--label-filter`.
    pub label_filter: &'static str,
    /// `--fqdn-template`.
    pub fqdn_template: Option<&'static str>,
    /// `--fqdn-target-template` (read by the sources that have it).
    pub fqdn_target_template: Option<&'static str>,
    /// `--combine-fqdn-annotation`.
    pub combine: bool,
    /// `--ignore-hostname-annotation`.
    pub ignore_hostname_annotation: bool,
    /// The source's own flags.
    pub source: S,
}

impl<S: Default> Flags<S> {
    /// The default flags but for the source's own (`Flags::own(Own { kops: true, ..Own::default() })`): what
    /// every source crate with flags of its own wrote as a local `own`.
    pub fn own(source: S) -> Self {
        Flags {
            source,
            ..Flags::default()
        }
    }
}

impl<S> Flags<S> {
    /// The configuration the shared flags make. Panics on a filter or template that does not parse.
    pub fn config(&self) -> SourceConfig {
        let parse = |s: &str| Selector::parse(s).unwrap_or_else(|e| panic!("selector {s:?}: {e}"));
        SourceConfig {
            namespace: self.namespace.map(String::from),
            annotation_filter: parse(self.annotation_filter),
            label_filter: parse(self.label_filter),
            fqdn_template: self.fqdn_template.map(template),
            combine_fqdn_annotation: self.combine,
            ignore_hostname_annotation: self.ignore_hostname_annotation,
            ..SourceConfig::default()
        }
    }

    /// `--fqdn-target-template`'s template, when set.
    pub fn target_template(&self) -> Option<Arc<FqdnTemplate>> {
        self.fqdn_target_template.map(template)
    }

    /// Load options keeping the fields both templates read from objects of `kinds`, as the binary would.
    pub fn load_options(&self, kinds: &[TemplateKind]) -> LoadOptions {
        let mut options = LoadOptions::default();
        options.template_fields = fields(
            kinds,
            self.fqdn_template.map(template).as_deref(),
            self.target_template().as_deref(),
        );
        options
    }
}

/// The fields the informer keeps for `--fqdn-template` and `--fqdn-target-template` (either may be absent)
/// running on objects of `kind`; panics on a field the kind lacks.
pub fn kept_fields(
    kind: TemplateKind,
    fqdn_template: Option<&FqdnTemplate>,
    fqdn_target_template: Option<&FqdnTemplate>,
) -> TemplateFields {
    fields(&[kind], fqdn_template, fqdn_target_template)
}

fn fields(
    kinds: &[TemplateKind],
    fqdn_template: Option<&FqdnTemplate>,
    fqdn_target_template: Option<&FqdnTemplate>,
) -> TemplateFields {
    let uses: Vec<TemplateUse<'_>> = [
        ("--fqdn-template", fqdn_template),
        ("--fqdn-target-template", fqdn_target_template),
    ]
    .into_iter()
    .filter_map(|(flag, t)| Some(TemplateUse::new(flag, t?, kinds)))
    .collect();
    template_fields(&uses).unwrap_or_else(|e| panic!("template fields: {e}"))
}
