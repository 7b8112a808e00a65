//! The manifest view's files, each read into the store on its own, so that reading them again parses only
//! the files whose content changed.
//!
//! The controller reads its manifests at every sync; a directory of 10,000 records parsed again every second
//! to take a one-file change costs the CPU the served zone needs (the `bench serve` churn). Each file's
//! content digest and the objects it put in the store are kept; a reload reads every file (so a file
//! rewritten in place with the same size and time is still seen), parses the changed ones into a store of
//! their own, drops from the controller's store the objects a changed or removed file no longer holds, and
//! moves the new objects in. The result is the store [`crate::manifests::load_lenient`] builds from all
//! the files, warnings and all: each file's objects replace their earlier versions, and a file that is
//! gone takes its objects with it.
//!
//! Files are independent only while no object is in two of them (a later copy replaces the earlier one,
//! with a warning): when one is, or a change would make one so, every file is read again into a fresh
//! store, in order, as a full load does.

use std::collections::{BTreeSet, HashMap};
use std::fs;
use std::hash::{DefaultHasher, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::manifests::{Format, LoadOptions, Loader, Location, ManifestError, ManifestWarning, SkippedKinds, files_of};
use crate::{ClusterStore, ObjectKey};

/// What a file held when it was last parsed.
#[derive(Debug)]
struct FileObjects {
    path: PathBuf,
    /// The content's length and hash: the file is parsed again only when it differs. A fixed-key hash:
    /// the files are the operator's own, not input chosen to collide.
    digest: (usize, u64),
    /// The objects it put in the store (views and undecodable records), sorted.
    keys: Vec<ObjectKey>,
    /// Its warnings, as logged.
    warnings: Vec<String>,
    /// Its objects of kinds extdns does not read.
    skipped: SkippedKinds,
}

/// One reading of the files, as the view reports it.
#[derive(Debug, Default)]
pub(crate) struct Read {
    /// Every warning of every file, and of the directory walk.
    pub(crate) warnings: Vec<String>,
    /// The objects of kinds extdns does not read, over every file.
    pub(crate) skipped: SkippedKinds,
    /// How many files were parsed (the others were unchanged).
    pub(crate) parsed: usize,
}

/// The files last read, in reading order.
#[derive(Debug, Default)]
pub(crate) struct ManifestFiles {
    files: Vec<FileObjects>,
    /// Some object is in two files: a change in one may uncover the other's copy, so every reload reads all.
    overlapping: bool,
}

/// A file's text and digest, read before anything changes (a read error must leave the view as it was).
struct Text {
    path: PathBuf,
    digest: (usize, u64),
    /// Kept only for a file to parse.
    text: Option<String>,
}

/// A file parsed into a store of its own, waiting to move into the view's.
struct Parsed {
    store: ClusterStore,
    file: FileObjects,
    seen: HashMap<ObjectKey, Location>,
}

impl ManifestFiles {
    /// Reads every file into a new store.
    pub(crate) fn load(paths: &[PathBuf], opts: &LoadOptions) -> Result<(Self, ClusterStore, Read), ManifestError> {
        let mut files = ManifestFiles::default();
        let mut listed = Vec::new();
        let texts = read(paths, &[], &mut listed)?;
        let store = ClusterStore::new();
        let read = files.load_all(texts, listed, opts, &store);
        Ok((files, store, read))
    }

    /// Reads the files again into `store`: in place, parsing only the changed files, or (objects in two
    /// files) into a fresh store that replaces it. On a read error nothing changes.
    pub(crate) fn reload(
        &mut self,
        paths: &[PathBuf],
        opts: &LoadOptions,
        store: &mut Arc<ClusterStore>,
    ) -> Result<Read, ManifestError> {
        let mut listed = Vec::new();
        let known = if self.overlapping { &[][..] } else { &self.files[..] };
        let mut texts = read(paths, known, &mut listed)?;
        if !self.overlapping {
            if let Some(read) = self.reload_changed(&texts, &listed, opts, store) {
                return Ok(read);
            }
            // Every file again, the unchanged ones too: read their text a second time rather than keep it.
            texts = read(paths, &[], &mut Vec::new())?;
        }
        let fresh = store.sharing_interner();
        let read = self.load_all(texts, listed, opts, &fresh);
        *store = Arc::new(fresh);
        Ok(read)
    }

    /// Parses every file of `texts` into `store`, in order, as a full load does.
    fn load_all(
        &mut self,
        texts: Vec<Text>,
        listed: Vec<ManifestWarning>,
        opts: &LoadOptions,
        store: &ClusterStore,
    ) -> Read {
        let mut read = Read {
            warnings: listed.iter().map(ToString::to_string).collect(),
            ..Read::default()
        };
        let mut seen: HashMap<ObjectKey, Location> = HashMap::new();
        let mut owned: BTreeSet<ObjectKey> = BTreeSet::new();
        self.overlapping = false;
        self.files.clear();
        for t in texts {
            let parsed = parse(&t.path, t.digest, t.text.as_deref().unwrap_or_default(), opts, store);
            read.parsed += 1;
            // A later copy of an object replaces the earlier one, as the one loader over all files warns.
            let mut again: Vec<(&ObjectKey, &Location)> = parsed.seen.iter().collect();
            again.sort_by_key(|(k, _)| *k);
            for (object, at) in again {
                if let Some(earlier) = seen.insert(object.clone(), at.clone()) {
                    let w = ManifestWarning::Duplicate {
                        at: at.clone(),
                        earlier,
                        object: object.clone(),
                    };
                    read.warnings.push(w.to_string());
                }
            }
            for key in &parsed.file.keys {
                self.overlapping |= !owned.insert(key.clone());
            }
            store.absorb(parsed.store);
            self.files.push(parsed.file);
        }
        self.report_into(&mut read);
        read
    }

    /// Moves only the changed files' objects into `store`; `None` when that would not give what a full load
    /// gives (an object now in two files), and nothing was changed.
    fn reload_changed(
        &mut self,
        texts: &[Text],
        listed: &[ManifestWarning],
        opts: &LoadOptions,
        store: &ClusterStore,
    ) -> Option<Read> {
        let old: HashMap<&Path, &FileObjects> = self.files.iter().map(|f| (f.path.as_path(), f)).collect();
        if old.len() != self.files.len() {
            return None;
        }
        let mut parsed: Vec<Parsed> = Vec::new();
        let mut new_keys: BTreeSet<&ObjectKey> = BTreeSet::new();
        let mut paths: BTreeSet<&Path> = BTreeSet::new();
        for t in texts {
            if !paths.insert(&t.path) {
                // One file named twice: its objects are in two places.
                return None;
            }
            if let Some(text) = &t.text {
                parsed.push(parse(&t.path, t.digest, text, opts, store));
            }
        }
        for p in &parsed {
            let before = old.get(p.file.path.as_path()).map(|f| &f.keys[..]).unwrap_or_default();
            for key in &p.file.keys {
                let elsewhere = store.knows(key) && before.binary_search(key).is_err();
                if elsewhere || !new_keys.insert(key) {
                    return None;
                }
            }
        }
        // Each changed or removed file's objects leave, the new ones move in: no object is in two files, so
        // no order between files matters.
        let now: BTreeSet<&Path> = texts.iter().map(|t| t.path.as_path()).collect();
        for f in &self.files {
            if !now.contains(f.path.as_path()) {
                f.keys.iter().for_each(|k| {
                    store.forget(k);
                });
            }
        }
        let count = parsed.len();
        let mut by_path: HashMap<PathBuf, Parsed> = parsed.into_iter().map(|p| (p.file.path.clone(), p)).collect();
        let mut old: HashMap<PathBuf, FileObjects> = std::mem::take(&mut self.files)
            .into_iter()
            .map(|f| (f.path.clone(), f))
            .collect();
        for t in texts {
            let kept = old.remove(&t.path);
            match by_path.remove(&t.path) {
                Some(p) => {
                    for gone in kept.iter().flat_map(|f| &f.keys) {
                        if p.file.keys.binary_search(gone).is_err() {
                            store.forget(gone);
                        }
                    }
                    store.absorb(p.store);
                    self.files.push(p.file);
                }
                None => self.files.extend(kept),
            }
        }
        let mut read = Read {
            warnings: listed.iter().map(ToString::to_string).collect(),
            parsed: count,
            ..Read::default()
        };
        self.report_into(&mut read);
        Some(read)
    }

    /// Adds every file's warnings and skipped kinds to `read`.
    fn report_into(&self, read: &mut Read) {
        for f in &self.files {
            read.warnings.extend(f.warnings.iter().cloned());
            read.skipped.add(&f.skipped);
        }
    }
}

/// Lists and reads the files `paths` name; keeps the text of those not in `known` with the same digest.
fn read(
    paths: &[PathBuf],
    known: &[FileObjects],
    listed: &mut Vec<ManifestWarning>,
) -> Result<Vec<Text>, ManifestError> {
    let digests: HashMap<&Path, (usize, u64)> = known.iter().map(|f| (f.path.as_path(), f.digest)).collect();
    let mut texts = Vec::new();
    for p in paths {
        for path in files_of(p, listed)? {
            let text = fs::read_to_string(&path).map_err(|source| ManifestError::Io {
                path: path.clone(),
                source,
            })?;
            let digest = digest(&text);
            let unchanged = digests.get(path.as_path()) == Some(&digest);
            texts.push(Text {
                path,
                digest,
                text: (!unchanged).then_some(text),
            });
        }
    }
    Ok(texts)
}

fn digest(text: &str) -> (usize, u64) {
    let mut h = DefaultHasher::new();
    h.write(text.as_bytes());
    (text.len(), h.finish())
}

/// Parses one file, leniently, into a store sharing `like`'s strings.
fn parse(path: &Path, digest: (usize, u64), text: &str, opts: &LoadOptions, like: &ClusterStore) -> Parsed {
    let mut loader = Loader::lenient_into(opts.clone(), like.sharing_interner());
    let mut warnings = Vec::new();
    // Lenient: every bad document is a warning, never an error; kept as one should that change.
    if let Err(e) = loader.add_str(text, path, Format::of(path)) {
        warnings.push(ManifestWarning::Skipped(e).to_string());
    }
    let mut loaded = loader.finish();
    let skipped = loaded.take_skipped_kinds();
    warnings.splice(0..0, loaded.warnings.iter().map(ToString::to_string));
    let keys = loaded.store.keys();
    Parsed {
        store: loaded.store,
        file: FileObjects {
            path: path.to_path_buf(),
            digest,
            keys,
            warnings,
            skipped,
        },
        seen: loaded.seen,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifests::load_lenient;

    fn service(name: &str, version: &str) -> String {
        format!(
            "apiVersion: v1\nkind: Service\nmetadata: {{name: {name}, namespace: default, labels: {{v: \"{version}\"}}}}\n"
        )
    }

    /// Every object the store knows with its `v` label (`!` for an undecodable one).
    fn contents(store: &ClusterStore) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = store
            .services()
            .iter()
            .map(|s| {
                (
                    s.meta.name.clone(),
                    s.meta.labels.get("v").unwrap_or_default().to_string(),
                )
            })
            .collect();
        out.extend(store.undecodable().into_iter().map(|k| (k.name, "!".to_string())));
        out.sort();
        out
    }

    /// What one loader over every file gives: what the view must hold after each reload.
    fn full(paths: &[PathBuf]) -> Result<Vec<(String, String)>, ManifestError> {
        Ok(contents(&load_lenient(paths, &LoadOptions::default())?.store))
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
    }

    #[test]
    fn only_changed_files_are_parsed_and_the_store_is_what_a_full_load_gives() -> Result<(), Box<dyn std::error::Error>>
    {
        let dir = tempfile::tempdir()?;
        let paths = vec![dir.path().to_path_buf()];
        fs::write(dir.path().join("a.yaml"), service("a", "1"))?;
        fs::write(
            dir.path().join("b.yaml"),
            format!("{}---\n{}", service("b", "1"), service("c", "1")),
        )?;
        let opts = LoadOptions::default();
        let (mut files, store, read) = ManifestFiles::load(&paths, &opts)?;
        assert_eq!(read.parsed, 2);
        let mut store = Arc::new(store);
        let first = Arc::clone(&store);

        let read = files.reload(&paths, &opts, &mut store)?;
        assert_eq!(read.parsed, 0, "nothing changed, nothing parsed");

        // b drops c and changes b; a new file adds d; a stays as it was.
        fs::write(dir.path().join("b.yaml"), service("b", "2"))?;
        fs::write(dir.path().join("d.yaml"), service("d", "1"))?;
        let read = files.reload(&paths, &opts, &mut store)?;
        assert_eq!(read.parsed, 2, "the changed file and the new one");
        assert!(Arc::ptr_eq(&first, &store), "changed in place");
        assert_eq!(contents(&store), pairs(&[("a", "1"), ("b", "2"), ("d", "1")]));
        assert_eq!(contents(&store), full(&paths)?);

        // A removed file takes its objects with it.
        fs::remove_file(dir.path().join("a.yaml"))?;
        let read = files.reload(&paths, &opts, &mut store)?;
        assert_eq!(read.parsed, 0);
        assert_eq!(contents(&store), pairs(&[("b", "2"), ("d", "1")]));
        assert_eq!(contents(&store), full(&paths)?);
        Ok(())
    }

    #[test]
    fn a_bad_document_in_a_changed_file_is_warned_of_and_an_undecodable_object_recorded()
    -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let paths = vec![dir.path().to_path_buf()];
        let file = dir.path().join("a.yaml");
        fs::write(&file, format!("{}---\n{}", service("a", "1"), service("b", "1")))?;
        let opts = LoadOptions::default();
        let (mut files, store, _) = ManifestFiles::load(&paths, &opts)?;
        let mut store = Arc::new(store);

        let broken =
            "apiVersion: v1\nkind: Service\nmetadata: {name: a, namespace: default}\nspec: {ports: [{port: eighty}]}\n";
        fs::write(
            &file,
            format!("{broken}---\nkind: [unclosed\n---\n{}", service("b", "2")),
        )?;
        let read = files.reload(&paths, &opts, &mut store)?;
        assert_eq!(read.parsed, 1);
        // `a` cannot be decoded: recorded so, which holds its records; the unparsable document is skipped.
        assert_eq!(contents(&store), pairs(&[("a", "!"), ("b", "2")]));
        assert_eq!(contents(&store), full(&paths)?);
        assert!(
            read.warnings.iter().any(|w| w.contains("invalid Service default/a")),
            "{:?}",
            read.warnings
        );
        assert!(
            read.warnings.iter().any(|w| w.contains("document 2")),
            "{:?}",
            read.warnings
        );

        // Fixed again: decoded, no longer undecodable.
        fs::write(&file, service("a", "3"))?;
        let read = files.reload(&paths, &opts, &mut store)?;
        assert!(read.warnings.is_empty(), "{:?}", read.warnings);
        assert_eq!(contents(&store), pairs(&[("a", "3")]));
        Ok(())
    }

    #[test]
    fn an_object_in_two_files_is_the_later_ones_and_the_earlier_copy_returns_when_it_goes()
    -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let paths = vec![dir.path().to_path_buf()];
        fs::write(dir.path().join("a.yaml"), service("x", "early"))?;
        let opts = LoadOptions::default();
        let (mut files, store, _) = ManifestFiles::load(&paths, &opts)?;
        let mut store = Arc::new(store);

        // The object moves into a second file too: the later file's copy wins, with a warning.
        fs::write(dir.path().join("b.yaml"), service("x", "late"))?;
        let read = files.reload(&paths, &opts, &mut store)?;
        assert_eq!(contents(&store), pairs(&[("x", "late")]));
        assert_eq!(contents(&store), full(&paths)?);
        assert!(
            read.warnings.iter().any(|w| w.contains("appears again")),
            "{:?}",
            read.warnings
        );

        // Gone from the later file: the earlier copy is the object again.
        fs::write(dir.path().join("b.yaml"), service("y", "1"))?;
        files.reload(&paths, &opts, &mut store)?;
        assert_eq!(contents(&store), pairs(&[("x", "early"), ("y", "1")]));
        assert_eq!(contents(&store), full(&paths)?);

        // Files independent again: only the changed one is parsed.
        fs::write(dir.path().join("b.yaml"), service("y", "2"))?;
        let read = files.reload(&paths, &opts, &mut store)?;
        assert_eq!(read.parsed, 1);
        assert_eq!(contents(&store), pairs(&[("x", "early"), ("y", "2")]));
        Ok(())
    }

    #[test]
    fn an_unreadable_path_changes_nothing() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let file = dir.path().join("a.yaml");
        fs::write(&file, service("a", "1"))?;
        let paths = vec![file.clone()];
        let opts = LoadOptions::default();
        let (mut files, store, _) = ManifestFiles::load(&paths, &opts)?;
        let mut store = Arc::new(store);
        fs::remove_file(&file)?;
        assert!(files.reload(&paths, &opts, &mut store).is_err());
        assert_eq!(contents(&store), pairs(&[("a", "1")]));
        fs::write(&file, service("a", "1"))?;
        let read = files.reload(&paths, &opts, &mut store)?;
        assert_eq!(read.parsed, 0, "the same content as before");
        Ok(())
    }
}
