//! The run's campaign tables as the viewer's state holds them: a file of its own, apart from the pages
//! (`annotate/mod.rs`), so that the state (`state.rs`) can hold them without the pages' module and the
//! state naming each other.

use std::sync::{Arc, Mutex};

use crate::source::Source;
use sleuth_store::annotations::Annotations;
use sleuth_store::StoreError;

/// The run's campaign tables, opened when first needed. Cheap to clone.
#[derive(Clone, Default)]
pub struct Campaigns {
    store: Arc<Mutex<Option<Arc<Annotations>>>>,
}

impl Campaigns {
    /// The open tables, or `None` when the run has no store (or is a cluster's mirror, whose store
    /// is a copy: answers kept there would be lost with it).
    pub(super) fn open(&self, source: &Source) -> Result<Option<Arc<Annotations>>, StoreError> {
        if source.remote.is_some() {
            return Ok(None);
        }
        let mut slot = self.store.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(open) = slot.as_ref() {
            return Ok(Some(open.clone()));
        }
        let path = sleuth_store::RunDir::new(&source.root).store();
        if !path.is_file() {
            return Ok(None);
        }
        let open = Arc::new(Annotations::open(&path)?);
        *slot = Some(open.clone());
        Ok(Some(open))
    }

    /// The open tables, creating the run's store first when the run has none (a directory of
    /// `sleuth play` games), as `sleuth annotate create` does: the store is made with the sweep's
    /// schema, so a later sweep or command reads it as its own. `None` for a cluster's mirror. The
    /// tables are then held like any others, so every page sees the new campaign at once.
    pub(super) fn open_or_create(
        &self,
        source: &Source,
    ) -> Result<Option<Arc<Annotations>>, StoreError> {
        if source.remote.is_some() {
            return Ok(None);
        }
        {
            // Under the lock, so that two forms posted at once do not both create the file.
            let slot = self.store.lock().unwrap_or_else(|p| p.into_inner());
            let path = sleuth_store::RunDir::new(&source.root).store();
            if slot.is_none() && !path.is_file() {
                sleuth_store::SqliteStore::open(&path)?;
            }
        }
        self.open(source)
    }
}
