//! Why a campaign's stored items or answers could not be read: one error for the drawing's kinds
//! (`questions.rs` checks its answers itself) and the report's readers (`humans.rs`), in a file of its
//! own so that neither has to name the other.

/// Why stored items or answers could not be read. Each names the item, and for an answer the
/// annotator and the field (a path into the answer, e.g. `ratings.A.naturalness`, or the metric).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum HumansError {
    /// An item's `hidden` record lacks what its kind needs.
    #[error("item {item}: hidden record unreadable: {problem}")]
    Hidden { item: u32, problem: String },
    /// An answer to an item the campaign does not have.
    #[error("item {item}, annotator {annotator}: the campaign has no such item")]
    UnknownItem { item: u32, annotator: String },
    /// An answer that does not fit its item: its shape, an unknown label, a score missing or not 1
    /// to 5, an order (field `ici` or `sci`) not a permutation of the characters the judge scored.
    #[error("item {item}, annotator {annotator}: {field} {problem}")]
    Answer {
        item: u32,
        annotator: String,
        field: String,
        problem: String,
    },
    /// A campaign of a kind this sleuth cannot check answers for.
    #[error("campaign kind '{kind}' is not known to this sleuth")]
    UnknownKind { kind: String },
}
