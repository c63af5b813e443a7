//! The owner's pages of the run's campaigns (behind the token rule, like every page but an
//! annotator's): `/campaigns` lists them, `/campaign?id=` shows who has done what — each
//! annotator's progress and each item's answers. A run directory has one store, so campaigns are
//! addressed by their id in it, as sweeps are (`/sweep?id=`). Creating and exporting stay commands;
//! the pages say which.

use axum::extract::State;
use axum::http::Uri;
use axum::response::Html;
use minijinja::context;
use serde::Serialize;

use super::with_store;
use crate::pages::{query, required};
use crate::state::{AppState, PageError};
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
    let lines = with_store(&st, |a| {
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
    st.render("campaigns.html", context! { campaigns => lines, run })
        .map(Html)
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
