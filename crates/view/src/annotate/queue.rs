//! An annotator's queue: `GET /annotate?token=…` starts a session and sends the browser on without
//! the token; `GET /annotate[?n=K]` shows the K-th item of the annotator's own order (by default the
//! first one not yet answered, or the end of the queue); `POST /annotate/answer` checks an answer as
//! the report reads it (`sleuth_report::humans::check_answer`, the rule of `sleuth annotate answer`)
//! and stores it at once.

use std::collections::BTreeSet;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode, Uri};
use axum::response::{Html, IntoResponse, Response};
use axum::Json;
use minijinja::context;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{session, shown, with_store};
use crate::pages::{param, query};
use crate::state::{AppState, PageError};
use sleuth_report::humans::{check_answer, HumansError};
use sleuth_store::annotations::{annotator_order, Annotations, AnswerRow, ItemRow};

/// Whose session a request carries.
struct Annotator {
    campaign: String,
    name: String,
    secret: String,
}

/// The session of the request's cookie, if it is one the store knows.
async fn who(st: &AppState, headers: &HeaderMap) -> Result<Option<Annotator>, PageError> {
    let Some(secret) = session::secret(headers).map(str::to_string) else {
        return Ok(None);
    };
    let lookup = secret.clone();
    let found = with_store(st, move |a| a.session(&lookup).map_err(PageError::store)).await?;
    Ok(found.flatten().map(|(campaign, name)| Annotator {
        campaign,
        name,
        secret,
    }))
}

/// `GET /annotate`: a link's token starts a session; a session sees its queue.
pub async fn page(State(st): State<AppState>, headers: HeaderMap, uri: Uri) -> Response {
    match show(&st, &headers, &uri).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    }
}

async fn show(st: &AppState, headers: &HeaderMap, uri: &Uri) -> Result<Response, PageError> {
    let q = query(uri);
    if let Some(token) = param(&q, "token") {
        return start(st, token.to_string()).await;
    }
    let Some(me) = who(st, headers).await? else {
        return refused(
            st,
            "This page needs your annotator's link: open the link you were given once more.",
        );
    };
    let pos = match param(&q, "n") {
        None => None,
        Some(v) => Some(v.parse::<usize>().map_err(|_| {
            PageError::BadRequest("`n` must be a whole number (1 is your first item)".into())
        })?),
    };
    let (campaign, name) = (me.campaign.clone(), me.name.clone());
    let queue = with_store(st, move |a| load(a, &campaign, &name, pos))
        .await?
        .ok_or_else(|| PageError::NotFound("this run has no campaigns".into()))?;
    let html = render(st, &me, queue)?;
    Ok(([(header::CACHE_CONTROL, "no-store")], Html(html)).into_response())
}

/// Turns a link's token into a session: a new secret whose hash the store keeps, a cookie that
/// holds it, and a redirect to the queue without the token.
async fn start(st: &AppState, token: String) -> Result<Response, PageError> {
    let secret = session::new_secret();
    let kept = secret.clone();
    let started = with_store(st, move |a| {
        let Some((campaign, name)) = a.annotator_for_token(&token).map_err(PageError::store)?
        else {
            return Ok(false);
        };
        a.start_session(&campaign, &name, &kept)
            .map_err(PageError::store)?;
        Ok(true)
    })
    .await?
    .unwrap_or(false);
    if !started {
        return refused(
            st,
            "This link is not an annotator's link of this run. Ask the researcher who sent it for yours.",
        );
    }
    let cookie = session::set_cookie(&secret, st.token.is_secure());
    Ok((
        StatusCode::SEE_OTHER,
        [
            (header::LOCATION, "/annotate".to_string()),
            (header::SET_COOKIE, cookie),
            (header::CACHE_CONTROL, "no-store".to_string()),
        ],
    )
        .into_response())
}

/// A 401 page that says what to do, and names nothing of the run.
fn refused(st: &AppState, message: &str) -> Result<Response, PageError> {
    let html = st.render("annotate_refused.html", context! { message })?;
    Ok((StatusCode::UNAUTHORIZED, Html(html)).into_response())
}

/// Where an annotator stands in a campaign, and the item at their position.
struct Queue {
    kind: String,
    total: usize,
    done: usize,
    /// 1-based; `None` when every item is answered and no position was asked for.
    pos: Option<usize>,
    item: Option<ItemRow>,
    answer: Option<AnswerRow>,
}

fn load(
    a: &Annotations,
    campaign: &str,
    name: &str,
    pos: Option<usize>,
) -> Result<Queue, PageError> {
    let c = a
        .campaign(campaign)
        .map_err(PageError::store)?
        .ok_or_else(|| PageError::NotFound("your campaign is no longer in this run".into()))?;
    let seed = c.settings.get("seed").and_then(Value::as_u64).unwrap_or(0);
    let order = annotator_order(seed, name, c.items);
    let answered: BTreeSet<u32> = a
        .answered(campaign, name)
        .map_err(PageError::store)?
        .into_iter()
        .collect();
    let done = order.iter().filter(|i| answered.contains(i)).count();
    let pos = match pos {
        Some(p) if (1..=order.len()).contains(&p) => Some(p),
        Some(p) => {
            let n = order.len();
            return Err(PageError::NotFound(format!(
                "your queue has no item {p} (it has {n})"
            )));
        }
        None => order
            .iter()
            .position(|i| !answered.contains(i))
            .map(|i| i + 1),
    };
    let (mut item, mut answer) = (None, None);
    if let Some(p) = pos {
        let id = order[p - 1];
        item = a.item(campaign, id).map_err(PageError::store)?;
        answer = a.answer(campaign, id, name).map_err(PageError::store)?;
    }
    Ok(Queue {
        kind: c.kind,
        total: order.len(),
        done,
        pos,
        item,
        answer,
    })
}

/// The queue's page: the item at the position, or the end of the queue.
fn render(st: &AppState, me: &Annotator, q: Queue) -> Result<String, PageError> {
    let (Some(pos), Some(item)) = (q.pos, q.item) else {
        let positions: Vec<usize> = (1..=q.total).collect();
        let prev = (q.total > 0).then(|| format!("/annotate?n={}", q.total));
        return st.render(
            "annotate_done.html",
            context! { annotator => me.name, total => q.total, done => q.done, prev, positions },
        );
    };
    let stored = q.answer.as_ref().map(|r| &r.answer);
    let responses = (q.kind == "responses").then(|| shown::responses(&item.shown, stored));
    let rankings = (q.kind == "rankings").then(|| shown::rankings(&item.shown, stored));
    let questions = (q.kind == "questions").then(|| shown::questions(&item.shown, stored));
    let next = if pos < q.total {
        format!("/annotate?n={}", pos + 1)
    } else {
        "/annotate".to_string()
    };
    st.render(
        "annotate.html",
        context! {
            kind => q.kind, annotator => me.name, total => q.total, done => q.done, pos,
            item => item.item, next, prev => (pos > 1).then(|| format!("/annotate?n={}", pos - 1)),
            proof => session::proof(&me.secret),
            saved_at => q.answer.as_ref().map(|r| r.answered_at.clone()),
            responses, rankings, questions,
        },
    )
}

/// What a page posts.
#[derive(Deserialize)]
struct Posted {
    item: u32,
    answer: Value,
}

/// `POST /annotate/answer`: JSON `{"item": N, "answer": {…}}` from the queue's page. Answers JSON:
/// `{"saved": true, "done": n, "total": N}`, or `{"error": "…"}` with the reason an annotator can
/// act on.
pub async fn answer(State(st): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    match keep(&st, &headers, &body).await {
        Ok(v) => Json(v).into_response(),
        Err((status, error)) => (status, Json(json!({ "error": error }))).into_response(),
    }
}

type Refusal = (StatusCode, String);

fn internal(e: PageError) -> Refusal {
    let status = match e {
        PageError::NotFound(_) => StatusCode::NOT_FOUND,
        PageError::BadRequest(_) => StatusCode::BAD_REQUEST,
        PageError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
    };
    (status, e.to_string())
}

async fn keep(st: &AppState, headers: &HeaderMap, body: &[u8]) -> Result<Value, Refusal> {
    session::same_origin(headers).map_err(|e| (StatusCode::FORBIDDEN, e.to_string()))?;
    let me = who(st, headers).await.map_err(internal)?.ok_or((
        StatusCode::UNAUTHORIZED,
        "no annotator's session: open your link once more".to_string(),
    ))?;
    if !session::proof_ok(headers, &me.secret) {
        return Err((
            StatusCode::FORBIDDEN,
            "the request does not carry this page's proof: reload the page".into(),
        ));
    }
    let posted: Posted = serde_json::from_slice(body).map_err(|e| {
        let problem = format!("the answer is not {{\"item\": N, \"answer\": {{…}}}}: {e}");
        (StatusCode::BAD_REQUEST, problem)
    })?;
    let (campaign, name) = (me.campaign, me.name);
    with_store(st, move |a| Ok(store_answer(a, &campaign, &name, posted)))
        .await
        .map_err(internal)?
        .unwrap_or_else(|| Err((StatusCode::NOT_FOUND, "this run has no campaigns".into())))
}

/// Checks and records one answer; the refusal says what to change, in the page's words (the
/// position on the page, not the item's number in the campaign).
fn store_answer(a: &Annotations, campaign: &str, name: &str, p: Posted) -> Result<Value, Refusal> {
    let store = |e| internal(PageError::store(e));
    let c = a.campaign(campaign).map_err(store)?.ok_or((
        StatusCode::NOT_FOUND,
        "your campaign is no longer in this run".to_string(),
    ))?;
    let item = a.item(campaign, p.item).map_err(store)?.ok_or((
        StatusCode::NOT_FOUND,
        format!("the campaign has no item {}", p.item),
    ))?;
    if let Err(e) = check_answer(&c.kind, p.item, name, &item.hidden, &p.answer) {
        let message = match e {
            HumansError::Answer { field, problem, .. } => format!("{field} {problem}"),
            other => other.to_string(),
        };
        return Err((StatusCode::UNPROCESSABLE_ENTITY, message));
    }
    a.record(campaign, p.item, name, &p.answer).map_err(store)?;
    let done = a.answered(campaign, name).map_err(store)?.len();
    Ok(json!({"saved": true, "done": done, "total": c.items}))
}
