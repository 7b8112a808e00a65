//! Kubernetes objects from files: the cluster view behind `extdns endpoints --manifests`, and the
//! controller's when it reads manifests instead of an API server.
//!
//! Two modes. [`load`] is strict, for the preview: a preview that silently skipped a document would show
//! endpoints the real controller would not produce, so every unparsable document or nameless object is an
//! error naming the file, the document (1-based), its line and, inside a `List`, the item. An object of a
//! kind extdns does not read is one too, unless [`LoadOptions::skip_unknown_kinds`] (the preview's
//! setting: the controller never watches such kinds, so a dump of a cluster previews what the controller
//! publishes from it); skipped, such objects are counted by kind ([`SkippedKinds`], one line).
//! [`load_lenient`] is for the controller: such a document (or `List` item) is skipped and reported in
//! the returned warnings, the rest loads, and an object that names itself but cannot be decoded is recorded
//! in the store as undecodable, as the live informer does. In both modes an unreadable path is an error:
//! a view missing whole files must not be mistaken for a cluster without their objects.
//!
//! Objects are decoded and converted exactly as the live informer does (the one ingest path of
//! `watched.rs`: the same per-object decoding, conversion and interning) into the same [`ClusterStore`].

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::decode::DecodeError;
use crate::kinds::{self, KindVisitor, Watched};
use crate::watched::{self, Convert, PodAnnotationPrefixes};
use crate::{ClusterStore, KindOverrides, ObjectKey, TemplateFields};

/// How objects are loaded.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct LoadOptions {
    /// The annotations Pods keep (the live informer keeps the same ones).
    pub pod_annotation_prefixes: PodAnnotationPrefixes,
    /// Skip objects of kinds extdns never reads (Deployments, ConfigMaps...), counted by kind
    /// ([`SkippedKinds`]), instead of failing. Off by default, where an unknown kind is more often a typo
    /// than an unrelated object; the preview turns it on, for dumps of whole clusters, and a typo still
    /// shows in the count. Lenient loading always skips them.
    pub skip_unknown_kinds: bool,
    /// The fields templates read, kept beyond the views (the live informer keeps the same ones).
    pub template_fields: TemplateFields,
    /// Kinds recognised by a configured apiVersion and kind instead of the table's (DNSEndpoints of
    /// `--crd-source-apiversion`/`--crd-source-kind`).
    pub overrides: KindOverrides,
    /// Objects of these kinds (apiVersion, kind), which no source reads, are kept as they are in
    /// [`Loaded::kept`] for the caller (the preview's DNSProvider and ClusterDNSProvider objects).
    pub keep_kinds: Vec<(String, String)>,
}

/// Where in the input an object came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The file, shared by every document in it.
    pub path: Arc<Path>,
    /// 1-based, counting every document of the file (empty ones too; a blank preamble before the first
    /// `---` is not a document).
    pub document: usize,
    /// The 1-based line the document starts on, when known.
    pub line: Option<usize>,
    /// The 0-based index in the `items` of a `List`.
    pub item: Option<usize>,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: document {}", self.path.display(), self.document)?;
        if let Some(line) = self.line {
            write!(f, " (line {line})")?;
        }
        if let Some(item) = self.item {
            write!(f, ", items[{item}]")?;
        }
        Ok(())
    }
}

/// Why a manifest file or document could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ManifestError {
    /// A file or directory could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The path that failed.
        path: PathBuf,
        /// The operating system's reason.
        #[source]
        source: std::io::Error,
    },
    /// A YAML document does not parse.
    #[error("{at}: cannot parse: {}", yaml_message(source))]
    Yaml {
        /// Where the document is.
        at: Location,
        /// The parser's reason (boxed: it is large).
        #[source]
        source: Box<serde_saphyr::Error>,
    },
    /// A JSON file does not parse.
    #[error("{at}: cannot parse: {source}")]
    Json {
        /// Where the document is.
        at: Location,
        /// The parser's reason.
        #[source]
        source: serde_json::Error,
    },
    /// A document that is not a mapping.
    #[error("{at}: expected a Kubernetes object, found {found}")]
    NotAnObject {
        /// Where the document is.
        at: Location,
        /// What it is instead (a list, a string, ...).
        found: &'static str,
    },
    /// A `List` whose `items` is not a sequence.
    #[error("{at}: {kind}: items is not a list")]
    ItemsNotAList {
        /// Where the document is.
        at: Location,
        /// The list's kind.
        kind: String,
    },
    /// A `List` item that is itself a `List`, which kubectl refuses too.
    #[error("{at}: a List inside a List")]
    NestedList {
        /// Where the item is.
        at: Location,
    },
    /// An object without `kind`.
    #[error("{at}: object has no kind")]
    NoKind {
        /// Where the object is.
        at: Location,
    },
    /// An object without `apiVersion`.
    #[error("{at}: {kind} has no apiVersion")]
    NoApiVersion {
        /// Where the object is.
        at: Location,
        /// Its kind.
        kind: String,
    },
    #[error(
        "{at}: unknown kind {kind} (apiVersion {api_version}); extdns reads {} and List",
        kinds::readable()
    )]
    /// A kind no source reads.
    UnknownKind {
        /// Where the object is.
        at: Location,
        /// Its `apiVersion`.
        api_version: String,
        /// Its `kind`.
        kind: String,
    },
    /// `metadata` that is not a mapping.
    #[error("{at}: {kind}: metadata is not a mapping")]
    MetadataNotAMapping {
        /// Where the object is.
        at: Location,
        /// Its kind.
        kind: String,
    },
    /// An object without a name cannot be keyed.
    #[error("{at}: {kind} has no metadata.name")]
    MissingName {
        /// Where the object is.
        at: Location,
        /// Its kind.
        kind: String,
    },
    /// A name that is not a string.
    #[error("{at}: {kind}: metadata.name must be a string, found {found}")]
    NameNotAString {
        /// Where the object is.
        at: Location,
        /// Its kind.
        kind: String,
        /// What the name is instead.
        found: &'static str,
    },
    /// The object names itself but the typed model cannot read it.
    #[error("{at}: invalid {object}: {source}")]
    Decode {
        /// Where the object is.
        at: Location,
        /// The object, so a warning names it.
        object: ObjectKey,
        /// Which field the model could not read (boxed: it is large).
        #[source]
        source: Box<DecodeError>,
    },
}

impl ManifestError {
    /// The document the error is about (none for I/O errors).
    pub fn location(&self) -> Option<&Location> {
        match self {
            ManifestError::Io { .. } => None,
            ManifestError::Yaml { at, .. }
            | ManifestError::Json { at, .. }
            | ManifestError::NotAnObject { at, .. }
            | ManifestError::ItemsNotAList { at, .. }
            | ManifestError::NestedList { at }
            | ManifestError::NoKind { at }
            | ManifestError::NoApiVersion { at, .. }
            | ManifestError::UnknownKind { at, .. }
            | ManifestError::MetadataNotAMapping { at, .. }
            | ManifestError::MissingName { at, .. }
            | ManifestError::NameNotAString { at, .. }
            | ManifestError::Decode { at, .. } => Some(at),
        }
    }
}

/// The YAML parser's message as one line for users: its first line without the `error: ` tag, and without
/// the hints addressed to programmers using the parser ("set DuplicateKeyPolicy in Options if acceptable"),
/// which name settings users cannot reach. The source snippet that follows is left out too: the location
/// (file, document, line and column) is already in the message.
fn yaml_message(e: &serde_saphyr::Error) -> String {
    let text = e.to_string();
    let first = text.lines().next().unwrap_or_default();
    let first = first.strip_prefix("error: ").unwrap_or(first);
    let first = match first.find(", set ") {
        Some(i) if first[i..].contains(" in Options") => &first[..i],
        _ => first,
    };
    first.trim_end().to_string()
}

/// Something worth telling the user that did not stop the load.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ManifestWarning {
    /// A document, `List` item or object left out (lenient loading, or a kind extdns does not read).
    #[error("{0}; skipped")]
    Skipped(#[source] ManifestError),
    /// The same object twice; the later one is used, as `kubectl apply` would.
    #[error("{at}: {object} appears again (first at {earlier}); the later one is used")]
    Duplicate {
        /// Where the later copy is.
        at: Location,
        /// Where the first one was.
        earlier: Location,
        /// The object both name.
        object: ObjectKey,
    },
    /// A FIFO, socket or device in a directory: reading it could block forever, so only regular files
    /// under a directory are read.
    #[error("{}: not a regular file; skipped", path.display())]
    NotRegularFile {
        /// The path skipped.
        path: PathBuf,
    },
}

/// A store built from files, and what was skipped or replaced on the way.
#[derive(Debug)]
pub struct Loaded {
    /// The objects, converted as the live view would.
    pub store: ClusterStore,
    /// What was skipped or replaced, for the caller to log.
    pub warnings: Vec<ManifestWarning>,
    /// The objects of [`LoadOptions::keep_kinds`], as read.
    pub kept: Vec<Value>,
    /// Where each decoded object was last seen, so one file's objects can be told apart from another's
    /// (the manifest view reads each file on its own).
    pub(crate) seen: HashMap<ObjectKey, Location>,
}

impl Loaded {
    /// Takes the objects skipped for their kind out of the warnings, counted by kind: a dump of a cluster
    /// (`kubectl get ... -A -o yaml`) holds mostly kinds extdns never reads, which are worth one line, not
    /// one per object.
    pub fn take_skipped_kinds(&mut self) -> SkippedKinds {
        let mut skipped = SkippedKinds::default();
        self.warnings.retain(|w| match w {
            ManifestWarning::Skipped(ManifestError::UnknownKind { api_version, kind, .. }) => {
                // A kind extdns reads, in a version it does not, is named with its version.
                let known = kinds::KINDS.iter().any(|s| s.name == kind);
                let name = if known {
                    format!("{api_version} {kind}")
                } else {
                    kind.clone()
                };
                *skipped.0.entry(name).or_default() += 1;
                false
            }
            _ => true,
        });
        skipped
    }
}

/// Objects left out because extdns does not read their kind, by kind (`apiVersion Kind` for a kind extdns
/// reads in other versions). Displays as one line: `skipped 12 objects of kinds extdns does not read:
/// ConfigMap (10), Secret (2)`, the most frequent first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SkippedKinds(std::collections::BTreeMap<String, usize>);

impl SkippedKinds {
    /// Whether nothing was skipped, so there is nothing to report.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Adds `other`'s counts (another file's).
    pub(crate) fn add(&mut self, other: &SkippedKinds) {
        for (kind, n) in &other.0 {
            *self.0.entry(kind.clone()).or_default() += n;
        }
    }

    /// How many objects were skipped.
    pub fn total(&self) -> usize {
        self.0.values().sum()
    }

    /// Each kind and its count, the most frequent first (then by name).
    pub fn counts(&self) -> Vec<(&str, usize)> {
        let mut counts: Vec<(&str, usize)> = self.0.iter().map(|(k, n)| (k.as_str(), *n)).collect();
        counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        counts
    }
}

impl fmt::Display for SkippedKinds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let total = self.total();
        write!(
            f,
            "skipped {total} object{} of kinds extdns does not read: ",
            if total == 1 { "" } else { "s" }
        )?;
        for (i, (kind, n)) in self.counts().into_iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{kind} ({n})")?;
        }
        Ok(())
    }
}

/// Loads every object from files and directories into a store, strictly: the first bad document is the
/// error. Warnings (duplicates, skipped files) are logged; objects of kinds extdns does not read, skipped
/// with [`LoadOptions::skip_unknown_kinds`], are counted in one line ([`SkippedKinds`]).
///
/// Directories are walked recursively for `*.yaml`, `*.yml` and `*.json`, in sorted order so the result
/// does not depend on the file system; entries whose name starts with `.` are skipped (this also reads a
/// mounted ConfigMap once, not once more through its `..data` link), and so are entries that are not
/// regular files. A path named explicitly is read whatever it is (a pipe such as `<(kubectl get ...)`
/// too) and whatever its extension: `.json` files as JSON (one or more concatenated values), anything
/// else as multi-document YAML.
pub fn load(paths: &[PathBuf], opts: &LoadOptions) -> Result<ClusterStore, ManifestError> {
    let (store, skipped) = load_counting_skipped(paths, opts)?;
    if !skipped.is_empty() {
        tracing::info!("{skipped}");
    }
    Ok(store)
}

/// [`load`], returning the objects skipped for their kind rather than logging them, for a caller that
/// reports them its own way (the preview prints the line on stderr).
pub fn load_counting_skipped(
    paths: &[PathBuf],
    opts: &LoadOptions,
) -> Result<(ClusterStore, SkippedKinds), ManifestError> {
    let (loaded, skipped) = load_keeping(paths, opts)?;
    Ok((loaded.store, skipped))
}

/// [`load_counting_skipped`], returning with the store the objects of [`LoadOptions::keep_kinds`]
/// ([`Loaded::kept`]); the warnings are logged.
pub fn load_keeping(paths: &[PathBuf], opts: &LoadOptions) -> Result<(Loaded, SkippedKinds), ManifestError> {
    let mut loader = Loader::new(opts.clone());
    let added = paths.iter().try_for_each(|p| loader.add_path(p));
    let mut loaded = loader.finish();
    let skipped = loaded.take_skipped_kinds();
    for w in std::mem::take(&mut loaded.warnings) {
        tracing::warn!("{w}");
    }
    added?;
    Ok((loaded, skipped))
}

/// Loads like [`load`] but skips what it cannot read (see the module documentation), into a fresh store;
/// meant to be called again whenever the files may have changed. The warnings are returned, not logged,
/// so a caller reading the same files every sync can report only what changed. Only an unreadable path
/// fails the load.
pub fn load_lenient(paths: &[PathBuf], opts: &LoadOptions) -> Result<Loaded, ManifestError> {
    let mut loader = Loader::lenient(opts.clone());
    for p in paths {
        loader.add_path(p)?;
    }
    Ok(loader.finish())
}

/// The input formats [`Loader::add_str`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// YAML, one or more documents.
    Yaml,
    /// JSON, one document.
    Json,
}

impl Format {
    /// The format a file is read as: JSON for `.json`, YAML for anything else.
    pub fn of(path: &Path) -> Format {
        if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("json")) {
            Format::Json
        } else {
            Format::Yaml
        }
    }
}

/// Collects objects from several inputs into a store. A later object with the same kind, namespace and
/// name replaces an earlier one (as `kubectl apply` would), with a warning.
#[derive(Debug)]
pub struct Loader {
    opts: LoadOptions,
    lenient: bool,
    store: ClusterStore,
    /// Where each object was first seen, to name both places when it appears again.
    seen: HashMap<ObjectKey, Location>,
    warnings: Vec<ManifestWarning>,
    kept: Vec<Value>,
}

impl Loader {
    /// A strict loader: every bad document is an error.
    pub fn new(opts: LoadOptions) -> Self {
        Loader {
            opts,
            lenient: false,
            store: ClusterStore::new(),
            seen: HashMap::new(),
            warnings: Vec::new(),
            kept: Vec::new(),
        }
    }

    /// A lenient loader: bad documents and items are skipped with a warning.
    pub fn lenient(opts: LoadOptions) -> Self {
        Loader {
            lenient: true,
            ..Loader::new(opts)
        }
    }

    /// A lenient loader filling `store` (one file's objects, on their way to the controller's store).
    pub(crate) fn lenient_into(opts: LoadOptions, store: ClusterStore) -> Self {
        Loader {
            store,
            ..Loader::lenient(opts)
        }
    }

    /// Adds a file, or every manifest file under a directory.
    pub fn add_path(&mut self, path: &Path) -> Result<(), ManifestError> {
        for f in files_of(path, &mut self.warnings)? {
            self.add_file(&f)?;
        }
        Ok(())
    }

    fn add_file(&mut self, path: &Path) -> Result<(), ManifestError> {
        let text = fs::read_to_string(path).map_err(|source| ManifestError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        self.add_str(&text, path, Format::of(path))
    }

    /// Adds the objects of one input text; `origin` names it in errors.
    pub fn add_str(&mut self, text: &str, origin: &Path, format: Format) -> Result<(), ManifestError> {
        let origin: Arc<Path> = Arc::from(origin);
        match format {
            Format::Json => {
                let stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
                for (i, value) in stream.enumerate() {
                    let mut at = Location {
                        path: Arc::clone(&origin),
                        document: i + 1,
                        line: None,
                        item: None,
                    };
                    match value {
                        Ok(value) => self.add_document(value, at)?,
                        Err(source) => {
                            at.line = Some(source.line());
                            // The rest of a broken JSON stream cannot be found again: stop here.
                            return self.skip_or_fail(ManifestError::Json { at, source });
                        }
                    }
                }
            }
            Format::Yaml => {
                for doc in split_yaml(text) {
                    let at = Location {
                        path: Arc::clone(&origin),
                        document: doc.number,
                        line: Some(doc.line),
                        item: None,
                    };
                    if doc.blank {
                        continue;
                    }
                    match serde_saphyr::from_str_with_options::<Value>(&doc.text, yaml_options(doc.text.len())) {
                        Ok(value) => self.add_document(value, at)?,
                        Err(source) => self.skip_or_fail(ManifestError::Yaml {
                            at,
                            source: Box::new(source),
                        })?,
                    }
                }
            }
        }
        Ok(())
    }

    /// Adds one document: an object, a `List` of objects, or null (an empty document, skipped).
    pub fn add_document(&mut self, value: Value, at: Location) -> Result<(), ManifestError> {
        let mut obj = match value {
            Value::Null => return Ok(()),
            Value::Object(m) => m,
            other => {
                let found = json_type(&other);
                return self.skip_or_fail(ManifestError::NotAnObject { at, found });
            }
        };
        let kind = str_field(&obj, "kind").unwrap_or_default().to_string();
        if !(kind.ends_with("List") && obj.contains_key("items")) {
            let added = self.add_object(obj, at);
            return self.ok_or_skip(added);
        }
        let api_version = str_field(&obj, "apiVersion").unwrap_or_default().to_string();
        let items = match obj.remove("items") {
            Some(Value::Array(items)) => items,
            Some(Value::Null) => Vec::new(),
            _ => return self.skip_or_fail(ManifestError::ItemsNotAList { at, kind }),
        };
        // A typed list (`ServiceList`) may leave kind and apiVersion out of its items.
        let item_kind = kind.strip_suffix("List").filter(|k| !k.is_empty());
        for (i, item) in items.into_iter().enumerate() {
            let item_at = Location {
                item: Some(i),
                ..at.clone()
            };
            let mut item = match item {
                Value::Object(m) => m,
                other => {
                    let found = json_type(&other);
                    self.skip_or_fail(ManifestError::NotAnObject { at: item_at, found })?;
                    continue;
                }
            };
            if let Some(k) = item_kind {
                item.entry("kind").or_insert_with(|| Value::String(k.to_string()));
                item.entry("apiVersion")
                    .or_insert_with(|| Value::String(api_version.clone()));
            }
            if str_field(&item, "kind").is_some_and(|k| k.ends_with("List")) && item.contains_key("items") {
                self.skip_or_fail(ManifestError::NestedList { at: item_at })?;
                continue;
            }
            let added = self.add_object(item, item_at);
            self.ok_or_skip(added)?;
        }
        Ok(())
    }

    /// The store of everything added, and the warnings so far.
    pub fn finish(self) -> Loaded {
        Loaded {
            store: self.store,
            warnings: self.warnings,
            kept: self.kept,
            seen: self.seen,
        }
    }

    fn ok_or_skip(&mut self, r: Result<(), ManifestError>) -> Result<(), ManifestError> {
        r.or_else(|e| self.skip_or_fail(e))
    }

    /// Strict: the error. Lenient: a warning, and an object that named itself is recorded undecodable.
    fn skip_or_fail(&mut self, e: ManifestError) -> Result<(), ManifestError> {
        let skip_kind = self.opts.skip_unknown_kinds && matches!(e, ManifestError::UnknownKind { .. });
        if !self.lenient && !skip_kind {
            return Err(e);
        }
        if let ManifestError::Decode { object, .. } = &e {
            self.store.add_undecodable(object.kind, &object.namespace, &object.name);
        }
        self.warnings.push(ManifestWarning::Skipped(e));
        Ok(())
    }

    fn add_object(&mut self, mut obj: Map<String, Value>, at: Location) -> Result<(), ManifestError> {
        let Some(kind) = str_field(&obj, "kind").map(str::to_string) else {
            return Err(ManifestError::NoKind { at });
        };
        let Some(api_version) = str_field(&obj, "apiVersion").map(str::to_string) else {
            return Err(ManifestError::NoApiVersion { at, kind });
        };
        let Some(rk) = self.opts.overrides.kind_of(&api_version, &kind) else {
            if self
                .opts
                .keep_kinds
                .iter()
                .any(|(v, k)| *v == api_version && *k == kind)
            {
                self.kept.push(Value::Object(obj));
                return Ok(());
            }
            return Err(ManifestError::UnknownKind { at, api_version, kind });
        };
        let metadata = obj.entry("metadata").or_insert_with(|| Value::Object(Map::new()));
        let Value::Object(metadata) = metadata else {
            return Err(ManifestError::MetadataNotAMapping { at, kind });
        };
        let name = match metadata.get("name") {
            Some(Value::String(n)) if !n.is_empty() => n.clone(),
            None | Some(Value::Null) | Some(Value::String(_)) => return Err(ManifestError::MissingName { at, kind }),
            Some(other) => {
                let found = json_type(other);
                return Err(ManifestError::NameNotAString { at, kind, found });
            }
        };
        let namespace = if rk.cluster_scoped() {
            metadata.remove("namespace");
            String::new()
        } else {
            match metadata.get("namespace") {
                Some(Value::String(ns)) if !ns.is_empty() => ns.clone(),
                _ => {
                    metadata.insert("namespace".into(), Value::String("default".into()));
                    "default".to_string()
                }
            }
        };

        let mut value = Value::Object(obj);
        let loaded = kinds::dispatch(
            rk,
            Load {
                value: &mut value,
                store: &mut self.store,
                opts: &self.opts,
            },
        );
        if let Err(source) = loaded {
            return Err(ManifestError::Decode {
                at,
                object: ObjectKey::new(rk, &namespace, &name),
                source: Box::new(source),
            });
        }
        let object = ObjectKey {
            kind: rk,
            namespace,
            name,
        };
        if let Some(earlier) = self.seen.insert(object.clone(), at.clone()) {
            self.warnings.push(ManifestWarning::Duplicate { at, earlier, object });
        }
        Ok(())
    }
}

/// The manifest files `path` names, in the order they are read: the file itself (whatever it is: a pipe
/// too), or a directory's `*.yaml`, `*.yml` and `*.json` files, recursively and sorted (see [`load`]).
/// Entries skipped for not being regular files are added to `warnings`.
pub(crate) fn files_of(path: &Path, warnings: &mut Vec<ManifestWarning>) -> Result<Vec<PathBuf>, ManifestError> {
    let meta = fs::metadata(path).map_err(|source| ManifestError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    if !meta.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut files = Vec::new();
    collect_files(path, &mut files, &mut HashSet::new(), warnings)?;
    files.sort();
    Ok(files)
}

fn collect_files(
    dir: &Path,
    out: &mut Vec<PathBuf>,
    seen: &mut HashSet<PathBuf>,
    warnings: &mut Vec<ManifestWarning>,
) -> Result<(), ManifestError> {
    // A symlink loop must not walk forever.
    let canonical = fs::canonicalize(dir).map_err(|source| ManifestError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    if !seen.insert(canonical) {
        return Ok(());
    }
    let entries = fs::read_dir(dir).map_err(|source| ManifestError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    for entry in entries {
        let entry = entry.map_err(|source| ManifestError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        let path = entry.path();
        if entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        // Follows symlinks: a link to a regular file is read, a link to a FIFO is not.
        let meta = fs::metadata(&path).map_err(|source| ManifestError::Io {
            path: path.clone(),
            source,
        })?;
        if meta.is_dir() {
            collect_files(&path, out, seen, warnings)?;
            continue;
        }
        let manifest = path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| ["yaml", "yml", "json"].iter().any(|x| e.eq_ignore_ascii_case(x)));
        if !manifest {
            continue;
        }
        if meta.is_file() {
            out.push(path);
        } else {
            warnings.push(ManifestWarning::NotRegularFile { path });
        }
    }
    Ok(())
}

/// The parser's default budget (250,000 nodes) refuses real dumps: `kubectl get svc -A -o yaml` of
/// 10,000 plain Services is one document of about a million nodes. The budget exists against documents
/// that expand far beyond their size (alias bombs); a node takes at least about a byte of text, so a
/// budget growing with the document's length admits every real dump while aliases stay capped by the
/// parser's own alias and anchor limits.
/// Decodes, converts and stores one object from a file, as its kind's API type.
struct Load<'a> {
    value: &'a mut Value,
    store: &'a mut ClusterStore,
    opts: &'a LoadOptions,
}

impl KindVisitor for Load<'_> {
    type Output = Result<(), DecodeError>;
    fn visit<K: Watched>(self) -> Result<(), DecodeError> {
        let object = watched::decode::<K>(self.value)?;
        let c = Convert {
            interner: self.store.interner(),
            pod_annotation_prefixes: &self.opts.pod_annotation_prefixes,
            template_fields: &self.opts.template_fields,
        };
        let view = watched::convert(&object, &c);
        self.store.add_with_uid(K::KIND, view, watched::uid(&object));
        Ok(())
    }
}

fn yaml_options(doc_bytes: usize) -> serde_saphyr::Options {
    let defaults = serde_saphyr::Budget::default();
    let max_nodes = defaults.max_nodes.saturating_add(doc_bytes);
    // A collection is two events (start and end), a scalar one, plus a few per document.
    let max_events = defaults.max_events.max(max_nodes.saturating_mul(2).saturating_add(16));
    let max_total_scalar_bytes = defaults.max_total_scalar_bytes.max(doc_bytes);
    // YAML 1.2 booleans only: `n`, `no`, `on` stay strings, so `name: n` is a name, not `false`; `0755`
    // stays a string too, as in YAML 1.2 it is not an octal number.
    serde_saphyr::options! {
        strict_booleans: true,
        leading_zero_numbers_as_strings: true,
        budget: serde_saphyr::budget! {
            max_nodes: max_nodes,
            max_events: max_events,
            max_total_scalar_bytes: max_total_scalar_bytes,
        },
    }
}

fn str_field<'a>(m: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    m.get(key).and_then(Value::as_str)
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "nothing",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// One YAML document of a stream, as text.
#[derive(Debug)]
struct YamlDoc {
    number: usize,
    line: usize,
    text: String,
    /// Only blank lines, comments and directives: an empty document.
    blank: bool,
}

/// Splits a YAML stream at its document markers so each document is parsed (and reported) on its own.
/// A line starting with `---` (alone or followed by a space) starts a document, a line `...` ends one;
/// markers are only recognised at the start of a line, where YAML requires them.
fn split_yaml(text: &str) -> Vec<YamlDoc> {
    fn is_blank_line(l: &str) -> bool {
        let t = l.trim_start();
        t.is_empty() || t.starts_with('#') || l.starts_with('%')
    }
    struct Cur {
        start: usize,
        text: String,
        blank: bool,
        first_content: Option<usize>,
        explicit: bool,
    }
    let mut docs = Vec::new();
    let mut cur = Cur {
        start: 1,
        text: String::new(),
        blank: true,
        first_content: None,
        explicit: false,
    };
    fn close(cur: &mut Cur, docs: &mut Vec<YamlDoc>, next_start: usize, explicit_next: bool) {
        let done = std::mem::replace(
            cur,
            Cur {
                start: next_start,
                text: String::new(),
                blank: true,
                first_content: None,
                explicit: explicit_next,
            },
        );
        // A blank stretch that no `---` opened (before the first marker, or after `...`) is no document.
        if done.explicit || !done.blank {
            docs.push(YamlDoc {
                number: docs.len() + 1,
                line: done.first_content.unwrap_or(done.start),
                text: done.text,
                blank: done.blank,
            });
        }
    }
    for (i, line) in text.lines().enumerate() {
        let lineno = i + 1;
        let rest = line
            .strip_prefix("---")
            .filter(|r| r.is_empty() || r.starts_with([' ', '\t']));
        if let Some(rest) = rest {
            close(&mut cur, &mut docs, lineno, true);
            // Content may follow the marker on the same line (`--- {a: 1}`).
            if !is_blank_line(rest) {
                cur.blank = false;
                cur.first_content = Some(lineno);
            }
            cur.text.push_str(rest);
            cur.text.push('\n');
            continue;
        }
        if line == "..." || line.strip_prefix("...").is_some_and(|r| r.starts_with([' ', '\t'])) {
            close(&mut cur, &mut docs, lineno + 1, false);
            continue;
        }
        if !is_blank_line(line) {
            cur.blank = false;
            cur.first_content.get_or_insert(lineno);
        }
        cur.text.push_str(line);
        cur.text.push('\n');
    }
    close(&mut cur, &mut docs, 0, false);
    docs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::RouteKind;

    fn load_yaml(text: &str) -> Result<ClusterStore, ManifestError> {
        let mut l = Loader::new(LoadOptions::default());
        l.add_str(text, Path::new("test.yaml"), Format::Yaml)?;
        Ok(l.finish().store)
    }

    /// A stream of Services, each given by its name and its one label.
    fn services_yaml(services: &[(&str, (&str, &str))]) -> String {
        let documents: Vec<String> = services
            .iter()
            .map(|(name, (k, v))| {
                format!("apiVersion: v1\nkind: Service\nmetadata: {{name: {name}, labels: {{{k}: {v}}}}}\n")
            })
            .collect();
        documents.join("---\n")
    }

    #[test]
    fn split_yaml_numbers_documents_and_skips_a_blank_preamble() {
        let docs = split_yaml("# header\n---\na: 1\n---\n---\nb: 2\n...\n");
        let summary: Vec<(usize, usize, bool)> = docs.iter().map(|d| (d.number, d.line, d.blank)).collect();
        assert_eq!(summary, vec![(1, 3, false), (2, 4, true), (3, 6, false)]);
        let docs = split_yaml("a: 1\n---\nb: 2\n");
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[1].line, 3);
    }

    #[test]
    fn split_yaml_does_not_split_on_indented_or_glued_markers() {
        let docs = split_yaml("a: |\n  ---\n  x\nb: ---x\n----\n");
        assert_eq!(docs.len(), 1);
    }

    #[test]
    fn multi_document_yaml_loads_every_object() -> Result<(), ManifestError> {
        let c = load_yaml(
            "apiVersion: v1\nkind: Service\nmetadata: {name: a}\n---\n\
             apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n---\n# only a comment\n---\n\
             apiVersion: v1\nkind: Namespace\nmetadata: {name: team}\n",
        )?;
        assert_eq!(c.services().len(), 1);
        assert_eq!(c.services()[0].meta.namespace, "default");
        assert!(c.node("n1").is_some());
        assert!(c.namespace("team").is_some());
        Ok(())
    }

    #[test]
    fn unparsable_document_error_names_file_and_document() {
        let err = load_yaml("apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n---\nkind: [unclosed\n")
            .expect_err("must fail");
        let at = err.location().expect("location");
        assert_eq!((&*at.path, at.document, at.line), (Path::new("test.yaml"), 2, Some(5)));
        assert!(matches!(err, ManifestError::Yaml { .. }));
        assert!(
            err.to_string()
                .starts_with("test.yaml: document 2 (line 5): cannot parse"),
            "{err}"
        );
    }

    #[test]
    fn yaml_1_1_booleans_stay_strings() -> Result<(), ManifestError> {
        let c = load_yaml("apiVersion: v1\nkind: Node\nmetadata: {name: n, labels: {a: yes, b: on}}\n")?;
        let node = c.node("n").expect("node named n");
        assert_eq!((node.labels.get("a"), node.labels.get("b")), (Some("yes"), Some("on")));
        Ok(())
    }

    #[test]
    fn a_name_that_is_not_a_string_is_an_error() {
        let err = load_yaml("apiVersion: v1\nkind: Node\nmetadata: {name: 12}\n").expect_err("must fail");
        assert!(err.to_string().contains("metadata.name must be a string"), "{err}");
    }

    #[test]
    fn unknown_kind_is_an_error_unless_skipping_is_asked_for() {
        let text = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n";
        let err = load_yaml(text).expect_err("must fail");
        assert!(
            matches!(&err, ManifestError::UnknownKind { kind, .. } if kind == "Deployment"),
            "{err}"
        );
        assert_eq!(err.location().map(|l| l.document), Some(1));

        let mut l = Loader::new(LoadOptions {
            skip_unknown_kinds: true,
            ..LoadOptions::default()
        });
        assert!(l.add_str(text, Path::new("x.yaml"), Format::Yaml).is_ok());
        let warnings = l.finish().warnings;
        assert!(
            matches!(
                &warnings[..],
                [ManifestWarning::Skipped(ManifestError::UnknownKind { .. })]
            ),
            "{warnings:?}"
        );
    }

    #[test]
    fn known_kind_in_an_unknown_version_is_an_error() {
        let err = load_yaml("apiVersion: v2\nkind: Service\nmetadata: {name: a}\n").expect_err("must fail");
        assert!(matches!(err, ManifestError::UnknownKind { .. }));
    }

    #[test]
    fn object_without_a_name_is_an_error() {
        let err = load_yaml("apiVersion: v1\nkind: Service\nmetadata: {namespace: x}\n").expect_err("must fail");
        assert!(
            matches!(&err, ManifestError::MissingName { kind, .. } if kind == "Service"),
            "{err}"
        );
        let err = load_yaml("apiVersion: v1\nkind: Pod\n").expect_err("must fail");
        assert!(matches!(err, ManifestError::MissingName { .. }));
    }

    #[test]
    fn object_with_a_wrongly_typed_field_is_an_error_naming_the_kind() {
        let err = load_yaml("apiVersion: v1\nkind: Service\nmetadata: {name: a}\nspec: {ports: [{port: eighty}]}\n")
            .expect_err("must fail");
        assert!(
            err.to_string()
                .contains("invalid Service default/a: field spec.ports[0].port: invalid type"),
            "{err}"
        );
        assert!(matches!(err, ManifestError::Decode { .. }));
    }

    #[test]
    fn list_items_are_loaded_and_errors_name_the_item() -> Result<(), ManifestError> {
        let c = load_yaml(
            "apiVersion: v1\nkind: List\nitems:\n\
             - {apiVersion: v1, kind: Service, metadata: {name: a, namespace: x}}\n\
             - {apiVersion: v1, kind: Service, metadata: {name: b, namespace: x}}\n",
        )?;
        assert_eq!(c.services().len(), 2);

        let err = load_yaml(
            "apiVersion: v1\nkind: Node\nmetadata: {name: n}\n---\napiVersion: v1\nkind: List\nitems:\n\
             - {apiVersion: v1, kind: Service, metadata: {name: a}}\n\
             - {apiVersion: v1, kind: Service, metadata: {}}\n",
        )
        .expect_err("must fail");
        let at = err.location().expect("location");
        assert_eq!((at.document, at.item), (2, Some(1)), "{err}");
        assert!(err.to_string().contains("document 2 (line 5), items[1]"), "{err}");
        Ok(())
    }

    #[test]
    fn typed_list_items_take_kind_from_the_list() -> Result<(), ManifestError> {
        let c = load_yaml("apiVersion: v1\nkind: NodeList\nitems:\n- metadata: {name: n1}\n- metadata: {name: n2}\n")?;
        assert_eq!(c.nodes().len(), 2);
        Ok(())
    }

    #[test]
    fn json_files_and_json_streams_load() -> Result<(), ManifestError> {
        let mut l = Loader::new(LoadOptions::default());
        l.add_str(
            r#"{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"}}
               {"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Node","metadata":{"name":"n2"}}]}"#,
            Path::new("a.json"),
            Format::Json,
        )?;
        let err = l.add_str(
            r#"{"apiVersion":"v1","kind":"Node","metadata""#,
            Path::new("b.json"),
            Format::Json,
        );
        assert!(matches!(err, Err(ManifestError::Json { .. })));
        let c = l.finish().store;
        assert_eq!(c.nodes().len(), 2);
        Ok(())
    }

    #[test]
    fn a_document_that_is_not_a_mapping_is_an_error() {
        let err = load_yaml("- a\n- b\n").expect_err("must fail");
        assert!(matches!(err, ManifestError::NotAnObject { found: "a list", .. }));
    }

    #[test]
    fn cluster_scoped_kinds_have_no_namespace_and_namespaced_default_to_default() -> Result<(), ManifestError> {
        let c = load_yaml(
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n---\n\
             apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {name: s, labels: {kubernetes.io/service-name: web}}\naddressType: IPv4\nendpoints: []\n",
        )?;
        assert!(c.pod("default", "p").is_some());
        assert_eq!(c.endpoint_slices("default", "web").len(), 1);
        Ok(())
    }

    #[test]
    fn a_later_duplicate_replaces_the_earlier_object() -> Result<(), ManifestError> {
        let c = load_yaml(&services_yaml(&[("a", ("v", "one")), ("a", ("v", "two"))]))?;
        let services = c.services();
        assert_eq!(services.len(), 1);
        assert_eq!(services[0].meta.labels.get("v"), Some("two"));
        Ok(())
    }

    #[test]
    fn gateway_api_objects_load_with_hand_written_status() -> Result<(), ManifestError> {
        let c = load_yaml(
            r#"
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: infra}
spec:
  gatewayClassName: cls
  listeners: [{name: http, port: 80, protocol: HTTP}]
status:
  addresses: [{value: 1.2.3.4}]
  listeners: [{name: http, conditions: [{type: Accepted, status: "True"}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: echo, namespace: apps}
spec:
  hostnames: [echo.example.com]
  parentRefs: [{name: gw, namespace: infra}]
status:
  parents:
  - parentRef: {name: gw, namespace: infra}
    conditions: [{type: Accepted, status: "True"}]
---
apiVersion: gateway.networking.k8s.io/v1alpha2
kind: TCPRoute
metadata: {name: t}
spec:
  parentRefs: [{name: gw, namespace: infra}]
  rules: [{backendRefs: [{name: svc, port: 80}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: ListenerSet
metadata: {name: ls}
spec:
  parentRef: {name: gw, namespace: infra}
  listeners: [{name: app, port: 443, protocol: HTTPS}]
status:
  conditions: [{type: Accepted, status: "True"}]
  listeners: [{name: app, conditions: [{type: Accepted, status: "True"}]}]
"#,
        )?;
        let gw = c.gateway("infra", "gw").expect("gateway");
        assert_eq!(gw.addresses, vec!["1.2.3.4"]);
        let routes = c.routes(RouteKind::Http);
        assert_eq!(routes.len(), 1);
        assert_eq!(routes[0].parents[0].accepted.as_deref(), Some("True"));
        assert_eq!(c.routes(RouteKind::Tcp)[0].meta.namespace, "default");
        let ls = c.listener_set("default", "ls").expect("listener set");
        assert!(ls.accepted);
        assert_eq!(ls.accepted_listeners, vec!["app"]);
        Ok(())
    }

    #[test]
    fn objects_from_files_share_their_label_keys_as_watched_ones_do() -> Result<(), ManifestError> {
        let c = load_yaml(&services_yaml(&[("a", ("app", "a")), ("b", ("app", "b"))]))?;
        let services = c.services();
        let key = |i: usize| services[i].meta.labels.iter().next().map(|(k, _)| k.as_ptr());
        assert_eq!(services.len(), 2);
        assert_eq!(key(0), key(1), "one allocation for the key both objects carry");
        Ok(())
    }

    #[test]
    fn pods_keep_only_the_configured_annotation_prefixes() -> Result<(), ManifestError> {
        let text = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations:\n    custom/target: 1.2.3.4\n    external-dns.alpha.kubernetes.io/target: 5.6.7.8\n";
        let mut l = Loader::new(LoadOptions {
            pod_annotation_prefixes: PodAnnotationPrefixes::new(["custom/"]),
            ..LoadOptions::default()
        });
        l.add_str(text, Path::new("p.yaml"), Format::Yaml)?;
        let pod = l.finish().store.pod("default", "p").expect("pod");
        assert_eq!(pod.annotations.get("custom/target"), Some("1.2.3.4"));
        assert_eq!(pod.annotations.len(), 1);
        Ok(())
    }
}
