//! The controller's cluster view over manifest files: a file-based source of objects.
//!
//! The files are read again at every sync (each call to [`Cluster::store`]), leniently: a bad document is
//! skipped with a warning naming the file, the document and the field, and the rest still syncs. Only the
//! files whose content changed are parsed again, their objects replaced in the store in place
//! ([`crate::manifest_files`]). Warnings
//! are logged when they first appear, not again at every sync while the file stays the same; objects of
//! kinds extdns does not read (most of a `kubectl get -A -o yaml` dump) are counted by kind in one line. A path that
//! cannot be read at all makes the view incomplete ([`Cluster::synced`] is false) until it can be read again,
//! so a file that disappeared for a moment is not mistaken for objects that were deleted.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::watch;

use crate::manifest_files::ManifestFiles;
use crate::manifests::{LoadOptions, ManifestError, SkippedKinds};
use crate::{Cluster, ClusterStore};

/// Manifest files read again at every sync.
#[derive(Debug)]
pub struct ManifestCluster {
    paths: Vec<PathBuf>,
    opts: LoadOptions,
    state: Mutex<State>,
    changes: watch::Sender<u64>,
}

#[derive(Debug)]
struct State {
    store: Arc<ClusterStore>,
    /// What each file put in the store, so a reload parses only what changed.
    files: ManifestFiles,
    /// The last read succeeded: the store holds every file.
    complete: bool,
    /// The warnings of the last read, so each is logged once while it lasts.
    warnings: HashSet<String>,
    /// The objects of kinds extdns does not read, counted in one line, logged again when the counts change.
    skipped: SkippedKinds,
    /// The error of the last failed read, so it is logged once while it lasts.
    error: Option<String>,
}

impl ManifestCluster {
    /// Reads the files once. A path that cannot be read is an error here: at startup it is a mistake in the
    /// arguments, not a file being replaced.
    pub fn load(paths: Vec<PathBuf>, opts: LoadOptions) -> Result<Self, ManifestError> {
        let (files, store, read) = ManifestFiles::load(&paths, &opts)?;
        if !read.skipped.is_empty() {
            tracing::info!("{}", read.skipped);
        }
        let warnings: HashSet<String> = read.warnings.into_iter().collect();
        for w in &warnings {
            tracing::warn!("{w}");
        }
        Ok(ManifestCluster {
            paths,
            opts,
            state: Mutex::new(State {
                store: Arc::new(store),
                files,
                complete: true,
                warnings,
                skipped: read.skipped,
                error: None,
            }),
            changes: watch::Sender::new(0),
        })
    }

    fn reload(&self, state: &mut State) {
        match state.files.reload(&self.paths, &self.opts, &mut state.store) {
            Ok(read) => {
                tracing::debug!(parsed = read.parsed, "manifests read again");
                if read.skipped != state.skipped && !read.skipped.is_empty() {
                    tracing::info!("{}", read.skipped);
                }
                state.skipped = read.skipped;
                let warnings: HashSet<String> = read.warnings.into_iter().collect();
                for w in warnings.difference(&state.warnings) {
                    tracing::warn!("{w}");
                }
                if state.error.take().is_some() {
                    tracing::info!("the manifests can be read again");
                }
                state.warnings = warnings;
                state.complete = true;
            }
            Err(e) => {
                let text = e.to_string();
                if state.error.as_deref() != Some(text.as_str()) {
                    tracing::warn!(
                        error = %text,
                        "cannot read the manifests; nothing is planned until they can be read"
                    );
                }
                state.error = Some(text);
                state.complete = false;
            }
        }
    }
}

impl Cluster for ManifestCluster {
    /// The objects as the files are now.
    fn store(&self) -> Arc<ClusterStore> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        self.reload(&mut state);
        Arc::clone(&state.store)
    }

    fn synced(&self) -> bool {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).complete
    }

    /// Files are not watched: changes are picked up on the interval.
    fn changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn service(name: &str) -> String {
        format!(
            "apiVersion: v1\nkind: Service\nmetadata:\n  name: {name}\n  namespace: default\nspec:\n  type: ClusterIP\n"
        )
    }

    fn names(store: &ClusterStore) -> Vec<String> {
        store.services().iter().map(|s| s.meta.name.clone()).collect()
    }

    #[test]
    fn a_bad_document_is_skipped_and_the_files_are_read_again_each_time() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let file = dir.path().join("objects.yaml");
        fs::write(
            &file,
            format!("{}---\nkind: [unclosed\n---\n{}", service("a"), service("b")),
        )?;
        let cluster = ManifestCluster::load(vec![dir.path().to_path_buf()], LoadOptions::default())?;
        assert!(cluster.synced());
        assert_eq!(names(&cluster.store()), ["a", "b"]);

        fs::write(&file, service("c"))?;
        assert_eq!(names(&cluster.store()), ["c"]);
        assert!(cluster.synced());
        Ok(())
    }

    #[test]
    fn an_unreadable_path_makes_the_view_incomplete_until_it_is_back() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let file = dir.path().join("objects.yaml");
        fs::write(&file, service("a"))?;
        let cluster = ManifestCluster::load(vec![file.clone()], LoadOptions::default())?;
        fs::remove_file(&file)?;
        // The previous objects are still what the view holds, but the view says it is incomplete.
        assert_eq!(names(&cluster.store()), ["a"]);
        assert!(!cluster.synced());
        fs::write(&file, service("b"))?;
        assert_eq!(names(&cluster.store()), ["b"]);
        assert!(cluster.synced());
        Ok(())
    }

    #[test]
    fn a_path_missing_at_startup_is_an_error() {
        let missing = PathBuf::from("/nonexistent/extdns/objects.yaml");
        assert!(ManifestCluster::load(vec![missing], LoadOptions::default()).is_err());
    }
}
