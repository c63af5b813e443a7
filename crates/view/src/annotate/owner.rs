//! The owner's pages of the run's campaigns (behind the token rule, like every page but an
//! annotator's): `/campaigns` lists them and holds the *New campaign* form, `POST /campaigns/new`
//! makes one, `/campaign?id=` shows who has done what — each annotator's progress and each item's
//! answers. A run directory has one store, so campaigns are addressed by their id in it, as sweeps
//! are (`/sweep?id=`). Exporting stays a command; the pages say which.
//!
//! **Creating from the page.** The form makes the request `sleuth annotate create` makes from its
//! flags ([`form`]) and goes through the same library call (`sleuth_report::campaign::create`), so a
//! campaign made here is drawn, stored and refused exactly as one made from a shell. The post must be
//! same-origin and carry the page's proof (`form.rs` says why); the request is checked before the
//! store is touched, so a refused form creates nothing — not even the store of a run of `sleuth
//! play` games, which an accepted one creates first, as the command does. The answer shows each
//! annotator's link once (`no-store`: the tokens are not kept anywhere but in the store's hashes).

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode, Uri};
use axum::response::{Html, IntoResponse, Response};
use minijinja::context;
use serde::Serialize;

use super::form::{self, Refusal, Request, Values};
use super::{session, with_store};
use crate::pages::{query, required};
use crate::state::{AppState, PageError};
use sleuth_report::campaign::{self, CampaignError, Created};
use sleuth_store::annotations::{Annotations, CampaignRow, Progress};

/// A campaign as the list shows it.
#[derive(Debug, Serialize)]
struct Line {
    id: String,
    kind: String,
    created_at: String,
    items: u32,
    annotators: Vec<String>,
    /// Answers given (an item per annotator), of `items × annotators`.
    answered: u32,
    expected: u32,
    last_answer_at: Option<String>,
}

fn line(c: CampaignRow, progress: &[Progress]) -> Line {
    Line {
        answered: progress.iter().map(|p| p.done).sum(),
        expected: c.items * c.annotators.len() as u32,
        last_answer_at: progress
            .iter()
            .filter_map(|p| p.last_answer_at.clone())
            .max(),
        id: c.id,
        kind: c.kind,
        created_at: c.created_at,
        items: c.items,
        annotators: c.annotators,
    }
}

/// `GET /campaigns`.
pub async fn campaigns(State(st): State<AppState>) -> Result<Html<String>, PageError> {
    list_page(&st, &Values::default(), None, None)
        .await
        .map(Html)
}

/// A campaign just made, as the page shows it once.
#[derive(Debug, Serialize)]
struct Made {
    id: String,
    kind: &'static str,
    items: usize,
    /// Each annotator and their link, relative to this viewer (`sleuth annotate create` prints
    /// tokens, not addresses: the viewer does not know the address its annotators will reach).
    links: Vec<Link>,
    notes: Vec<String>,
}

#[derive(Debug, Serialize)]
struct Link {
    name: String,
    link: String,
}

impl From<Created> for Made {
    fn from(c: Created) -> Made {
        let links = c
            .tokens
            .into_iter()
            .map(|(name, token)| Link {
                name,
                link: format!("/annotate?token={token}"),
            })
            .collect();
        Made {
            id: c.id,
            kind: c.kind.as_str(),
            items: c.items,
            links,
            notes: c.notes,
        }
    }
}

/// The campaigns page: the list, the form (with `values` and the refusal of the last post, if any)
/// and the campaign just made, if any.
async fn list_page(
    st: &AppState,
    values: &Values,
    refused: Option<Refusal>,
    made: Option<Made>,
) -> Result<String, PageError> {
    let lines = with_store(st, |a| {
        let list = a.campaigns().map_err(PageError::store)?;
        list.into_iter()
            .map(|c| {
                let p = a.progress(&c.id).map_err(PageError::store)?;
                Ok(line(c, &p))
            })
            .collect::<Result<Vec<_>, PageError>>()
    })
    .await?
    .unwrap_or_default();
    let run = st.source.root.display().to_string();
    // A cluster's mirror keeps no campaign: its store is a copy.
    let can_create = st.source.remote.is_none();
    st.render(
        "campaigns.html",
        context! { campaigns => lines, run, values, refused, made, can_create,
        proof => form::proof() },
    )
}

/// `POST /campaigns/new`: the *New campaign* form, `application/x-www-form-urlencoded`. Answers
/// the campaigns page with each annotator's link (201), or with the form as sent and the refusal
/// (422; 500 when the store failed); a post from another origin or without the page's proof gets
/// a 403 and creates nothing.
pub async fn new_campaign(State(st): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    if let Err(e) = session::same_origin(&headers) {
        return forbidden(e);
    }
    let posted = form::Posted::parse(&body);
    if !form::proof_ok(posted.proof.as_deref()) {
        return forbidden("the form does not carry this page's proof: reload /campaigns");
    }
    let made = match posted.values.request() {
        Ok(request) => make(&st, request).await,
        Err(e) => Err(e),
    };
    let (status, page) = match made {
        Ok(created) => {
            let page = list_page(&st, &Values::default(), None, Some(created.into())).await;
            (StatusCode::CREATED, page)
        }
        Err(e) => {
            let status = match e {
                CampaignError::Store(_) => {
                    tracing::warn!(error = %e, "viewer: a campaign could not be stored");
                    StatusCode::INTERNAL_SERVER_ERROR
                }
                _ => StatusCode::UNPROCESSABLE_ENTITY,
            };
            let refused = Some(Refusal::from(&e));
            (status, list_page(&st, &posted.values, refused, None).await)
        }
    };
    match page {
        // The page holds the tokens: no cache may keep it.
        Ok(html) => (status, [(header::CACHE_CONTROL, "no-store")], Html(html)).into_response(),
        Err(e) => e.into_response(),
    }
}

fn forbidden(why: &str) -> Response {
    (
        StatusCode::FORBIDDEN,
        format!("{why}; nothing was created\n"),
    )
        .into_response()
}

/// Checks, draws and stores the campaign on a blocking thread (SQLite calls and the games' files
/// block). The request is checked before the store is opened or created.
async fn make(st: &AppState, r: Request) -> Result<Created, CampaignError> {
    let (campaigns, source) = (st.campaigns.clone(), st.source.clone());
    tokio::task::spawn_blocking(move || {
        campaign::check(&r.id, &r.settings, &r.names)?;
        let Some(store) = campaigns.open_or_create(&source)? else {
            return Err(CampaignError::Nothing(
                "a cluster's mirror keeps no campaign: create it with `sleuth annotate create` \
                 in the run directory on the coordinator's machine"
                    .into(),
            ));
        };
        campaign::create(&store, &source.root, &r.id, &r.settings, &r.names)
    })
    .await
    .unwrap_or_else(|e| {
        Err(CampaignError::Nothing(format!(
            "the task that makes the campaign failed: {e}"
        )))
    })
}

/// One item's answers.
#[derive(Debug, Serialize)]
struct ItemLine {
    item: u32,
    /// Who answered it, by name.
    by: Vec<String>,
}

/// One annotator's progress.
#[derive(Debug, Serialize)]
struct Person {
    name: String,
    done: u32,
    total: u32,
    last_answer_at: Option<String>,
}

/// What `/campaign` shows.
#[derive(Debug, Serialize)]
struct Detail {
    campaign: Line,
    settings: String,
    progress: Vec<Person>,
    items: Vec<ItemLine>,
}

fn detail(a: &Annotations, id: &str) -> Result<Option<Detail>, PageError> {
    let Some(c) = a.campaign(id).map_err(PageError::store)? else {
        return Ok(None);
    };
    let progress = a.progress(id).map_err(PageError::store)?;
    let mut items: Vec<ItemLine> = (0..c.items)
        .map(|item| ItemLine {
            item,
            by: Vec::new(),
        })
        .collect();
    for r in a.answers(id).map_err(PageError::store)? {
        if let Some(line) = items.get_mut(r.item as usize) {
            line.by.push(r.annotator);
        }
    }
    let settings = serde_json::to_string_pretty(&c.settings).unwrap_or_default();
    let campaign = line(c, &progress);
    let progress = progress
        .into_iter()
        .map(|p| Person {
            name: p.annotator,
            done: p.done,
            total: p.total,
            last_answer_at: p.last_answer_at,
        })
        .collect();
    Ok(Some(Detail {
        campaign,
        settings,
        progress,
        items,
    }))
}

/// `GET /campaign?id=`.
pub async fn campaign(State(st): State<AppState>, uri: Uri) -> Result<Html<String>, PageError> {
    let id = required(&query(&uri), "id")?.to_string();
    let wanted = id.clone();
    let d = with_store(&st, move |a| detail(a, &wanted))
        .await?
        .flatten()
        .ok_or_else(|| PageError::NotFound(format!("no campaign `{id}` in this run")))?;
    let run = st.source.root.display().to_string();
    st.render(
        "campaign.html",
        context! { c => d.campaign, settings => d.settings, progress => d.progress,
        items => d.items, run },
    )
    .map(Html)
}
