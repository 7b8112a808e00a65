//! FQDN templates (`--fqdn-template`, `--fqdn-target-template`) with Go `text/template` semantics (docs/templates.md),
//! run by [`extdns_template`] on the views of our objects.
//!
//! Users paste templates from their external-dns deployments, so they must mean the same thing here:
//! Go field names over the typed object (`{{.Name}}`, `{{.Spec.ClusterIP}}`), `<no value>` for absent map
//! keys, and external-dns's functions. When the typed view fails, the template is retried on an
//! unstructured view with JSON keys (`{{.Spec.clusterIP}}`) where an absent key is an error, as
//! external-dns does (#6611: typed and unstructured objects evaluate alike). Both views show the
//! annotations as the sources read them: a key set only under a lower-precedence prefix is also there under
//! the first one (external-dns v0.23 copies legacy keys so with `--enable-legacy-annotation-prefix`, #6703;
//! [`Annotations::with_copies`]). What binds the engine to extdns lives here: the object views
//! ([`TemplateObject`]), and `isSource`, which must know the source running the template.

mod objects;
pub mod schema;
mod target;

use std::fmt;

use extdns_endpoint::Endpoint;
use extdns_informer::view::{Meta, MetaRef};
use extdns_informer::{FieldTree, ResourceKind, StrMap, TemplateFields};
use extdns_template::{
    ExecError, ExecOptions, FieldPath, FuncError, Funcs, MapValues, MissingKey, ParseError, Template, Value,
};

pub use schema::TemplateKind;
pub use target::{TargetPair, target_endpoints, target_pairs};

use crate::SourceError;
use crate::annotations::Annotations;

/// The `--source` names `isSource` accepts (external-dns's source types).
pub const KNOWN_SOURCES: &[&str] = &[
    "service",
    "ingress",
    "node",
    "pod",
    "gateway-httproute",
    "gateway-grpcroute",
    "gateway-tlsroute",
    "gateway-tcproute",
    "gateway-udproute",
    "istio-gateway",
    "istio-virtualservice",
    "ambassador-host",
    "contour-httpproxy",
    "gloo-proxy",
    "traefik-proxy",
    "openshift-route",
    "skipper-routegroup",
    "kong-tcpingress",
    "f5-virtualserver",
    "f5-transportserver",
    "crd",
    "unstructured",
    "connector",
    "fake",
    "empty",
];

/// external-dns's `isSource NAME`: whether the template runs for source `NAME` (any case). A name that is
/// no source type at all is an error, so a typo does not silently select nothing.
struct SourceFuncs<'a> {
    source_name: &'a str,
}

/// For parsing, where only the names matter.
const PARSE_FUNCS: SourceFuncs<'static> = SourceFuncs { source_name: "" };

impl Funcs for SourceFuncs<'_> {
    fn defines(&self, name: &str) -> bool {
        name == "isSource"
    }

    fn call(&self, name: &str, args: &[Value]) -> Result<Value, FuncError> {
        let [wanted] = extdns_template::fixed_args(name, args)?;
        let wanted = wanted.as_str_arg()?.to_ascii_lowercase();
        if !KNOWN_SOURCES.contains(&wanted.as_str()) {
            return Err(FuncError::invalid(format!("{wanted:?} is not a known source type")));
        }
        Ok(Value::Bool(wanted.eq_ignore_ascii_case(self.source_name)))
    }
}

/// What every object a template runs on has, in one value so each kind states it once.
#[derive(Debug, Clone, Copy)]
pub struct TemplateParts<'a> {
    /// Identity, labels and the annotations as set.
    pub meta: MetaRef<'a>,
    /// The Go type the object is, for the fields beyond the view.
    pub kind: TemplateKind,
    /// The fields templates read beyond the view, kept by the informer as JSON text ([`template_fields`]).
    pub kept_fields: Option<&'a str>,
}

impl<'a> TemplateParts<'a> {
    /// The parts of an object of `kind` with `meta` and the fields the informer kept for templates.
    pub fn new(meta: &'a Meta, kind: TemplateKind, kept_fields: Option<&'a str>) -> Self {
        TemplateParts::of(MetaRef::from(meta), kind, kept_fields)
    }

    /// The parts of an object whose view keeps its metadata apart (Nodes, Pods).
    pub fn of(meta: MetaRef<'a>, kind: TemplateKind, kept_fields: Option<&'a str>) -> Self {
        TemplateParts {
            meta,
            kind,
            kept_fields,
        }
    }
}

/// An object a template can run on.
pub trait TemplateObject {
    /// Its metadata, Go type and kept fields.
    fn parts(&self) -> TemplateParts<'_>;
    /// The typed view, with Go field names (`.Name`, `.Spec.ClusterIP`), showing `annotations`.
    fn typed(&self, annotations: &StrMap) -> Value;
    /// The unstructured view with JSON keys (`.Spec.clusterIP`), tried when the typed one fails, showing
    /// `annotations`.
    fn unstructured(&self, annotations: &StrMap) -> Value;
    /// Names the object in errors and logs: `service default/web`.
    fn describe(&self) -> String {
        let TemplateParts { meta, kind, .. } = self.parts();
        format!(
            "{} {}/{}",
            kind.api_kind().to_ascii_lowercase(),
            meta.namespace,
            meta.name
        )
    }
    /// The object's annotations as set.
    fn annotations(&self) -> &StrMap {
        self.parts().meta.annotations
    }
    /// The Go type the object is, for the fields beyond the view.
    fn kind(&self) -> TemplateKind {
        self.parts().kind
    }
    /// The fields templates read beyond the view, kept by the informer as JSON text ([`template_fields`]).
    fn kept_fields(&self) -> Option<&str> {
        self.parts().kept_fields
    }
}

/// The kept fields, decoded. The informer wrote the text, so it always decodes; should it not, the
/// template sees Go's zero values.
fn kept_json(obj: &dyn TemplateObject) -> Option<serde_json::Value> {
    serde_json::from_str(obj.kept_fields()?).ok()
}

/// The typed view with every field of the Go type: the kept fields rendered by the schema (Go's zero
/// values for the rest), the compact view's own fields on top.
fn full_typed(obj: &dyn TemplateObject, kept: Option<&serde_json::Value>, annotations: &StrMap) -> Value {
    let base = schema::render(schema::Ty::Struct(obj.kind().schema()), kept);
    let mut typed = schema::overlay(base, obj.typed(annotations));
    fill_getters(&mut typed);
    if let Value::Struct(_, fields) = &mut typed
        && let Some(i) = fields.iter().position(|(n, _)| *n == "ObjectMeta")
    {
        fill_getters(&mut fields[i].1);
        promote_meta(fields, i);
    }
    typed
}

/// ObjectMeta is embedded, so `.Annotations` is `.ObjectMeta.Annotations`: the promoted fields show what
/// the merged ObjectMeta holds, kept fields included (a Pod's view keeps only some annotations; a template
/// reading the others has them kept).
fn promote_meta(fields: &mut [(&'static str, Value)], meta: usize) {
    let Value::Struct(_, meta_fields) = &fields[meta].1 else {
        return;
    };
    let promoted: Vec<(usize, Value)> = fields
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != meta)
        .filter_map(|(i, (name, _))| {
            let (_, v) = meta_fields.iter().find(|(n, _)| n == name)?;
            Some((i, v.clone()))
        })
        .collect();
    for (i, v) in promoted {
        fields[i].1 = v;
    }
}

/// The metadata getters (`GetName`, ...) answer what the fields they stand for hold, which for name,
/// namespace, labels and annotations comes from the view rather than the kept JSON.
fn fill_getters(value: &mut Value) {
    let Value::Struct(_, fields) = value else { return };
    let copies: Vec<(usize, Value)> = fields
        .iter()
        .enumerate()
        .filter_map(|(i, (name, _))| {
            let field = name.strip_prefix("Get")?;
            let (_, v) = fields.iter().find(|(n, _)| *n == field)?;
            Some((i, v.clone()))
        })
        .collect();
    for (i, v) in copies {
        fields[i].1 = v;
    }
}

/// The unstructured view with the kept fields added.
fn full_unstructured(obj: &dyn TemplateObject, kept: Option<&serde_json::Value>, annotations: &StrMap) -> Value {
    let Some(kept) = kept else {
        return obj.unstructured(annotations);
    };
    let part = |key: &str| {
        kept.get(key)
            .map_or_else(|| Value::Map(Default::default()), schema::plain)
    };
    let base = Value::Struct(
        "unstructured",
        vec![
            ("Metadata", part("metadata")),
            ("Spec", part("spec")),
            ("Status", part("status")),
            ("Object", schema::plain(kept)),
        ],
    );
    schema::overlay(base, obj.unstructured(annotations))
}

/// A template that cannot be parsed or run. Each message is complete on its own; `source()` is the
/// parser's error, the missing field, or the execution error with Go's field names (the boxed ones
/// unboxed, so callers can downcast them).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TemplateError {
    /// `value` is the configured value that made the template unparsable.
    Parse {
        /// The flag's value.
        value: String,
        /// The parser's reason.
        source: ParseError,
    },
    /// The template reads a field that none of the kinds it runs on has.
    NoSuchField {
        /// The flag the template came from.
        template: &'static str,
        /// The kinds it runs on.
        kinds: String,
        /// The field path read, and where it leaves the first kind's schema (boxed: it would make every
        /// result large).
        field: Box<schema::NoSuchField>,
    },
    /// The template failed on both views of `object` (boxed: two errors would make every result large).
    Execute {
        /// The object, as `kind/namespace/name`.
        object: String,
        /// The error with Go's field names.
        typed: Box<ExecError>,
        /// The error with the JSON field names.
        json: Box<ExecError>,
    },
}

impl std::fmt::Display for TemplateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TemplateError::Parse { value, source } => write!(f, "cannot parse template {value:?}: {source}"),
            TemplateError::NoSuchField { template, kinds, field } => write!(
                f,
                "template {template} reads {}, which no {kinds} has: {} has {}",
                field.path, field.kind, field.problem
            ),
            TemplateError::Execute { object, typed, json } => {
                write!(
                    f,
                    "template failed on {object}: {typed} (and with JSON field names: {json})"
                )
            }
        }
    }
}

impl std::error::Error for TemplateError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TemplateError::Parse { source, .. } => Some(source),
            TemplateError::NoSuchField { field, .. } => Some(field.as_ref()),
            TemplateError::Execute { typed, .. } => Some(typed.as_ref()),
        }
    }
}

impl TemplateError {
    /// The source error a failed template becomes when the whole `endpoints()` call must fail.
    pub fn into_source_error(self, source_name: &str) -> SourceError {
        SourceError::Template {
            source_name: source_name.to_string(),
            source: self,
        }
    }
}

/// A parsed FQDN template: all flag values joined with ',' into one Go template.
#[derive(Clone)]
pub struct FqdnTemplate {
    text: String,
    template: Template,
}

impl fmt::Debug for FqdnTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("FqdnTemplate").field(&self.text).finish()
    }
}

impl FqdnTemplate {
    /// Parse the flag values, joined with ','. `None` when the join is blank. As external-dns does, the
    /// values are parsed cumulatively (the first, then the first two, ...) so the error names the value
    /// that broke the template.
    pub fn parse(values: &[String]) -> Result<Option<FqdnTemplate>, TemplateError> {
        let joined = values.join(",");
        if joined.trim().is_empty() {
            return Ok(None);
        }
        let mut template = None;
        for i in 1..=values.len() {
            let text = values[..i].join(",");
            match Template::parse_with(&text, &PARSE_FUNCS) {
                Ok(t) => template = Some(t),
                Err(source) => {
                    return Err(TemplateError::Parse {
                        value: values[i - 1].clone(),
                        source,
                    });
                }
            }
        }
        match template {
            Some(template) => Ok(Some(FqdnTemplate { text: joined, template })),
            None => Ok(None),
        }
    }

    /// The template as given (the joined flag values).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The field paths the template reads from the object it runs on.
    pub fn field_paths(&self) -> Vec<FieldPath> {
        self.template.field_paths()
    }

    /// Run on `obj` (its annotations read under `prefixes`) and return the hostnames: output split on ',',
    /// each trimmed, one trailing '.' dropped, empties dropped, deduplicated and sorted.
    pub fn execute(
        &self,
        obj: &dyn TemplateObject,
        source_name: &str,
        prefixes: &Annotations,
    ) -> Result<Vec<String>, TemplateError> {
        let raw = self.execute_raw(obj, source_name, prefixes)?;
        let mut out: Vec<String> = raw
            .split(',')
            .map(str::trim)
            .map(|s| s.strip_suffix('.').unwrap_or(s))
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        out.sort();
        out.dedup();
        Ok(out)
    }

    /// Run on `obj` and return the output as written (`--fqdn-target-template` splits it itself).
    pub fn execute_raw(
        &self,
        obj: &dyn TemplateObject,
        source_name: &str,
        prefixes: &Annotations,
    ) -> Result<String, TemplateError> {
        let funcs = SourceFuncs { source_name };
        let typed_options = ExecOptions::with_funcs(&funcs);
        let kept = kept_json(obj);
        let copies = prefixes.with_copies(obj.annotations());
        let annotations = copies.as_ref().unwrap_or(obj.annotations());
        let typed = match self
            .template
            .execute(&full_typed(obj, kept.as_ref(), annotations), &typed_options)
        {
            Ok(out) => return Ok(out),
            Err(e) => e,
        };
        let json_options = typed_options.missing_key(MissingKey::Error).map_values(MapValues::Any);
        self.template
            .execute(&full_unstructured(obj, kept.as_ref(), annotations), &json_options)
            .map_err(|json| TemplateError::Execute {
                object: obj.describe(),
                typed: Box::new(typed),
                json: Box::new(json),
            })
    }
}

/// One template step of a source (external-dns's `CombineWithEndpoints`): with `combine`
/// (`--combine-fqdn-annotation`) what `step` makes is added to `endpoints`; without, `step` runs only when
/// `endpoints` is empty, and its endpoints are the result.
pub fn combine_step<E>(
    endpoints: &mut Vec<Endpoint>,
    combine: bool,
    step: impl FnOnce() -> Result<Vec<Endpoint>, E>,
) -> Result<(), E> {
    if !combine && !endpoints.is_empty() {
        return Ok(());
    }
    let mut made = step()?;
    endpoints.append(&mut made);
    Ok(())
}

/// One configured template and the kinds of object it runs on.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct TemplateUse<'a> {
    /// Names the template in errors: `fqdn-template`.
    pub name: &'static str,
    /// The parsed template.
    pub template: &'a FqdnTemplate,
    /// The kinds it runs on.
    pub kinds: &'a [TemplateKind],
}

impl<'a> TemplateUse<'a> {
    /// `name` is the flag, for messages.
    pub fn new(name: &'static str, template: &'a FqdnTemplate, kinds: &'a [TemplateKind]) -> Self {
        TemplateUse { name, template, kinds }
    }
}

/// The fields the informer must keep so the templates can read them: for each kind, the JSON paths of
/// the fields its templates read beyond the views. A field that none of a template's kinds has is an
/// error naming it (a template with `isSource` branches may read a field of one kind only, so a field is
/// checked against every kind the template runs on, and kept for those that have it).
pub fn template_fields(uses: &[TemplateUse<'_>]) -> Result<TemplateFields, TemplateError> {
    let mut trees: Vec<(TemplateKind, FieldTree)> = Vec::new();
    for u in uses {
        let paths = u.template.field_paths();
        let mut missing_everywhere: Option<Vec<schema::NoSuchField>> = None;
        for &kind in u.kinds {
            let (tree_paths, missing) = schema::field_tree_paths(kind, &paths);
            let slot = match trees.iter_mut().find(|(k, _)| *k == kind) {
                Some(slot) => &mut slot.1,
                None => {
                    trees.push((kind, FieldTree::default()));
                    let last = trees.len() - 1;
                    &mut trees[last].1
                }
            };
            for (json, whole) in tree_paths {
                slot.insert(&json, whole);
            }
            missing_everywhere = Some(match missing_everywhere {
                None => missing,
                Some(before) => before
                    .into_iter()
                    .filter(|m| missing.iter().any(|n| n.path == m.path))
                    .collect(),
            });
        }
        if let Some(first) = missing_everywhere.and_then(|m| m.into_iter().next()) {
            let kinds: Vec<&str> = u.kinds.iter().map(|k| k.kind()).collect();
            return Err(TemplateError::NoSuchField {
                template: u.name,
                kinds: kinds.join(" or "),
                field: Box::new(first),
            });
        }
    }
    let mut fields = TemplateFields::default();
    for (kind, tree) in trees {
        let resource = match kind {
            TemplateKind::Service => ResourceKind::Service,
            TemplateKind::Route(r) => ResourceKind::Route(r),
            TemplateKind::Ingress => ResourceKind::Ingress,
            TemplateKind::Node => ResourceKind::Node,
            TemplateKind::Pod => ResourceKind::Pod,
            // --- contour-httpproxy and openshift-route sources ---
            TemplateKind::HttpProxy => ResourceKind::HttpProxy,
            TemplateKind::OpenShiftRoute => ResourceKind::OpenShiftRoute,
            TemplateKind::IstioGateway => ResourceKind::IstioGateway,
            TemplateKind::VirtualService => ResourceKind::VirtualService,
        };
        fields.set(resource, tree);
    }
    Ok(fields)
}

#[cfg(test)]
mod tests;
