//! The annotation pages (`docs/humans.md`, *In the viewer*): an annotator's queue of a campaign's
//! items, answered from the keyboard and stored at once in the run's store; and the owner's pages
//! that list the run's campaigns and who has done what, and make new ones ([`form`]).
//!
//! **Two kinds of visitor.** The owner (who holds `SLEUTH_TOKEN`, or is on loopback) sees every page
//! under the token rule of `auth.rs`, these owner pages included. An annotator holds only their own
//! link (`/annotate?token=…`, from `sleuth annotate create` or the owner's form), which [`queue`]
//! turns into a session of that campaign and annotator ([`session`]); that session opens the
//! `/annotate` routes and nothing else, and its pages show an item's `shown` only — never the
//! conditions, the run directory or a file.
//!
//! The campaigns live in the run's store ([`sleuth_store::annotations`]); [`Campaigns`] opens it
//! once, when first asked, and only if the run has a store: a folder of games without one has no
//! campaign, and opening would create the file — only making a campaign creates it.

pub mod campaigns;
pub(crate) mod form;
mod owner;
mod queue;
pub mod session;
mod shown;

use axum::extract::Path as UrlPath;
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;

use super::state::{AppState, PageError};
use sleuth_store::annotations::Annotations;

pub use campaigns::Campaigns;

pub use owner::{campaign, campaigns, new_campaign};

/// Runs `f` on the campaign tables on a blocking thread (SQLite calls block); `None` when the run
/// has no campaign tables.
async fn with_store<T: Send + 'static>(
    st: &AppState,
    f: impl FnOnce(&Annotations) -> Result<T, PageError> + Send + 'static,
) -> Result<Option<T>, PageError> {
    let (campaigns, source) = (st.campaigns.clone(), st.source.clone());
    tokio::task::spawn_blocking(move || {
        match campaigns.open(&source).map_err(PageError::store)? {
            Some(store) => f(&store).map(Some),
            None => Ok(None),
        }
    })
    .await
    .map_err(|e| PageError::Internal(format!("a campaign task failed: {e}")))?
}

/// The annotators' routes: outside the owner's token rule, each handler checks the annotator's
/// session itself.
pub fn annotator_routes() -> Router<AppState> {
    Router::new()
        .route("/annotate", get(queue::page))
        .route("/annotate/answer", post(queue::answer))
        .route("/annotate/assets/{file}", get(asset))
}

/// What an annotator's pages load: the viewer's stylesheet, and the annotation pages' own style and
/// script. Served under `/annotate` because an annotator's session opens nothing else.
const ASSETS: [(&str, &str, &str); 3] = [
    (
        "app.css",
        "text/css; charset=utf-8",
        include_str!("../assets/app.css"),
    ),
    (
        "annotate.css",
        "text/css; charset=utf-8",
        include_str!("../assets/annotate.css"),
    ),
    (
        "annotate.js",
        "text/javascript; charset=utf-8",
        include_str!("../assets/annotate.js"),
    ),
];

/// An asset of the annotation pages: the owner's pages load `annotate.css` from here too (it holds
/// nothing secret; the stylesheet of a page behind the token is no more private than the page).
async fn asset(UrlPath(file): UrlPath<String>) -> Response {
    super::state::asset(&ASSETS, &file, "public, max-age=3600")
}
