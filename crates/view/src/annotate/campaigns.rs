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
}
