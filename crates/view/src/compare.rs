//! Two games side by side (`/compare?a=&b=`): typically the same script and seed in two arms, to see
//! where a framework, a model or a module first made the story go another way.
//!
//! The two transcripts are aligned by stage: within a stage the n-th event of one game faces the n-th
//! of the other, and when one game has more events in a stage the other column is blank there. Events
//! are compared by what they say ([`same`]: stage, kind, speaker, addressee, visibility, text and
//! structured data — never their sequence numbers, times or usage), so two games that told the same
//! story show no difference even if one paid more for it.
//!
//! Like the game page this stays bounded: both transcripts are read page by page from byte offsets
//! ([`timeline::read_page_within`]), each request reads at most [`MAX_READ`] bytes to find the first
//! difference and as much again to show a page, and the search for the first difference gives up after
//! [`FIND_ROWS`] identical rows (the page says so). The next page is a fragment whose cursor is a byte
//! offset in each transcript (`X-Next`), so the server keeps nothing between requests.

use std::path::{Path, PathBuf};

use axum::extract::State;
use axum::http::Uri;
use axum::response::{Html, Response};
use minijinja::context;
use serde::Serialize;

use super::pages::{self, enc, number, param, query, required, GameFiles, Query};
use super::state::{fragment, AppState, PageError};
use super::timeline::{self, EventView, Filter, MAX_SCAN};

/// Events of each transcript read per page.
const PAGE_EVENTS: usize = 100;
/// Rows shown per page.
const PAGE_ROWS: usize = 100;
/// Rows the search for the first difference aligns at most before saying there is none so far.
pub const FIND_ROWS: usize = 2000;
/// Bytes of the two transcripts one walk reads at most (the game page's cap on a filtered read).
pub const MAX_READ: u64 = MAX_SCAN;

/// Whether two events say the same thing: what happened (stage, kind, speaker, addressee, who could
/// see it, text, structured data) and not where or when (sequence number, time) nor what it cost
/// (usage), which differ between two plays of the same story.
pub fn same(a: &EventView, b: &EventView) -> bool {
    a.stage == b.stage
        && a.kind == b.kind
        && a.speaker == b.speaker
        && a.addressee == b.addressee
        && a.only == b.only
        && a.text == b.text
        && a.data == b.data
}

/// One row of the two columns: the indexes of an event of each game at the same place of a stage, or
/// of one game only when the other has no more events in that stage (or no such stage).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pair {
    pub a: Option<usize>,
    pub b: Option<usize>,
    /// Not two events that say the same (a blank side always differs).
    pub differs: bool,
}

/// What [`align`] made of two buffers: its rows and how many events of each buffer they used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Aligned {
    pub rows: Vec<Pair>,
    pub used_a: usize,
    pub used_b: usize,
}

/// Aligns two runs of events by stage, up to `max_rows` rows. `a_more`/`b_more` say whether that
/// transcript goes on past its buffer: alignment stops when such a buffer runs out (the next page
/// decides what faces what), while a transcript that has ended leaves the other alone in its column.
///
/// Events of the same stage face each other in order, except that an event of a kind the other game
/// has no more of in that stage (as far as its buffer shows) stands alone, so that one framework's
/// extra steps do not shift the rest of the stage. When the two are in different stages, the one
/// whose stage the other reaches later goes first, alone (a stage only one game has, such as a second
/// round); when that cannot be told from the buffers, game A's event goes first.
pub fn align(
    a: &[EventView],
    a_more: bool,
    b: &[EventView],
    b_more: bool,
    max_rows: usize,
) -> Aligned {
    let (mut i, mut j) = (0, 0);
    let mut rows = Vec::new();
    while rows.len() < max_rows {
        let (x, y) = (a.get(i), b.get(j));
        if (x.is_none() && a_more) || (y.is_none() && b_more) {
            break;
        }
        let pair = match (x, y) {
            (None, None) => break,
            (Some(_), None) => Pair {
                a: Some(i),
                b: None,
                differs: true,
            },
            (None, Some(_)) => Pair {
                a: None,
                b: Some(j),
                differs: true,
            },
            (Some(x), Some(y)) if x.stage == y.stage => {
                // An event of a kind the other game has no more of in this stage (a module's step
                // only one framework takes) stands alone, so it does not shift the rest of the stage.
                let has = |es: &[EventView], kind: &str| {
                    es.iter()
                        .take_while(|e| e.stage == x.stage)
                        .any(|e| e.kind == kind)
                };
                let (a_alone, b_alone) = if x.kind == y.kind {
                    (false, false)
                } else {
                    (
                        !has(&b[j..], &x.kind) && has(&a[i..], &y.kind),
                        !has(&a[i..], &y.kind) && has(&b[j..], &x.kind),
                    )
                };
                Pair {
                    a: (!b_alone).then_some(i),
                    b: (!a_alone).then_some(j),
                    differs: a_alone || b_alone || !same(x, y),
                }
            }
            (Some(x), Some(y)) => {
                let a_reaches_y = a[i..].iter().any(|e| e.stage == y.stage);
                let b_reaches_x = b[j..].iter().any(|e| e.stage == x.stage);
                if b_reaches_x && !a_reaches_y {
                    Pair {
                        a: None,
                        b: Some(j),
                        differs: true,
                    }
                } else {
                    Pair {
                        a: Some(i),
                        b: None,
                        differs: true,
                    }
                }
            }
        };
        i += usize::from(pair.a.is_some());
        j += usize::from(pair.b.is_some());
        rows.push(pair);
    }
    Aligned {
        rows,
        used_a: i,
        used_b: j,
    }
}

/// A row as the page shows it.
#[derive(Debug, Clone, Serialize)]
struct Row {
    /// Its place in the aligned list, from 1.
    n: u64,
    stage: String,
    a: Option<EventView>,
    b: Option<EventView>,
    differs: bool,
    first: bool,
}

/// Where the two transcripts are read from, and how many rows came before.
#[derive(Debug, Clone, Copy)]
struct Cursor {
    a: u64,
    b: u64,
    n: u64,
}

/// The first row where the two games differ.
#[derive(Debug, Clone, Serialize)]
struct First {
    n: u64,
    stage: String,
    seq_a: Option<u64>,
    seq_b: Option<u64>,
}

/// What one walk along both transcripts found.
struct Walk {
    rows: Vec<Row>,
    /// Where the next walk starts (before the first difference, when the walk stopped at it).
    at: Cursor,
    /// Both transcripts were read to their end (as they are now).
    end: bool,
    first: Option<First>,
}

/// Where a side goes on after using `used` events of `page`, read from `from`.
fn resume(page: &timeline::Page, from: u64, used: usize) -> u64 {
    if used >= page.events.len() {
        page.next.unwrap_or(page.end)
    } else if used == 0 {
        from
    } else {
        page.ends[used - 1]
    }
}

/// Aligns the transcripts from `at` for up to `max_rows` rows, reading at most about [`MAX_READ`]
/// bytes of them; keeps the rows' events when `keep`, and stops before the first differing row when
/// `to_difference`.
fn walk(
    paths: (&Path, &Path),
    mut at: Cursor,
    filter: &Filter,
    max_rows: usize,
    keep: bool,
    to_difference: bool,
) -> std::io::Result<Walk> {
    let mut out = Walk {
        rows: Vec::new(),
        at,
        end: false,
        first: None,
    };
    let mut budget = MAX_READ;
    let mut shown = 0usize;
    while shown < max_rows && budget > 1 && out.first.is_none() {
        let pa = timeline::read_page_within(paths.0, at.a, PAGE_EVENTS, filter, budget / 2)?;
        let pb = timeline::read_page_within(paths.1, at.b, PAGE_EVENTS, filter, budget / 2)?;
        budget = budget.saturating_sub((pa.end - at.a) + (pb.end - at.b));
        let al = align(
            &pa.events,
            pa.next.is_some(),
            &pb.events,
            pb.next.is_some(),
            max_rows - shown,
        );
        let (mut used_a, mut used_b) = (al.used_a, al.used_b);
        for (k, p) in al.rows.iter().enumerate() {
            let x = p.a.and_then(|i| pa.events.get(i));
            let y = p.b.and_then(|j| pb.events.get(j));
            let stage = x.or(y).map(|e| e.stage.clone()).unwrap_or_default();
            if to_difference && p.differs {
                out.first = Some(First {
                    n: at.n + k as u64 + 1,
                    stage,
                    seq_a: x.map(|e| e.seq),
                    seq_b: y.map(|e| e.seq),
                });
                // Go on from before this row: the events of the rows before it.
                used_a = al.rows[..k].iter().filter(|r| r.a.is_some()).count();
                used_b = al.rows[..k].iter().filter(|r| r.b.is_some()).count();
                at.n += k as u64;
                break;
            }
            if keep {
                out.rows.push(Row {
                    n: at.n + k as u64 + 1,
                    stage,
                    a: x.cloned(),
                    b: y.cloned(),
                    differs: p.differs,
                    first: false,
                });
            }
        }
        if out.first.is_none() {
            at.n += al.rows.len() as u64;
            shown += al.rows.len();
        }
        let before = (at.a, at.b);
        at.a = resume(&pa, at.a, used_a);
        at.b = resume(&pb, at.b, used_b);
        out.at = at;
        let ended = |p: &timeline::Page, used: usize| p.next.is_none() && used >= p.events.len();
        if out.first.is_none() && ended(&pa, used_a) && ended(&pb, used_b) {
            out.end = true;
            break;
        }
        if (at.a, at.b) == before && al.rows.is_empty() {
            break;
        }
    }
    Ok(out)
}

async fn walk_async(
    paths: (PathBuf, PathBuf),
    at: Cursor,
    filter: Filter,
    max_rows: usize,
    keep: bool,
    to_difference: bool,
) -> Result<Walk, PageError> {
    tokio::task::spawn_blocking(move || {
        walk(
            (&paths.0, &paths.1),
            at,
            &filter,
            max_rows,
            keep,
            to_difference,
        )
    })
    .await
    .map_err(|e| PageError::Internal(e.to_string()))?
    .map_err(|e| PageError::Internal(format!("reading the transcripts: {e}")))
}

/// An error about the game named by parameter `key`, saying so.
fn named(key: &str, e: PageError) -> PageError {
    match e {
        PageError::BadRequest(m) => PageError::BadRequest(format!("`{key}`: {m}")),
        PageError::NotFound(m) => PageError::NotFound(format!("`{key}`: {m}")),
        e => e,
    }
}

/// The game named by parameter `key`, which must have a transcript.
async fn game(st: &AppState, q: &Query, key: &str) -> Result<(String, GameFiles), PageError> {
    let id = required(q, key)?.to_string();
    let g = pages::game_files(st, &id)
        .await
        .map_err(|e| named(key, e))?;
    if !g.transcript.is_file() {
        return Err(PageError::NotFound(format!(
            "`{key}`: game {id} has no transcript"
        )));
    }
    Ok((id, g))
}

fn filter(q: &Query) -> Filter {
    Filter {
        as_character: param(q, "as").map(str::to_string),
        kinds: None,
    }
}

/// The continuation of a list at `at`; `rows`: how many rows it may still show (the collapsed
/// identical prefix), `None` for no limit.
fn next_url(ids: (&str, &str), f: &Filter, at: Cursor, stage: &str, rows: Option<u64>) -> String {
    let mut url = format!(
        "/compare/events?a={}&b={}&after_a={}&after_b={}&n={}&stage={}",
        enc(ids.0),
        enc(ids.1),
        at.a,
        at.b,
        at.n,
        enc(stage)
    );
    if let Some(r) = rows {
        url.push_str(&format!("&rows={r}"));
    }
    if let Some(a) = &f.as_character {
        url.push_str(&format!("&as={}", enc(a)));
    }
    url
}

/// A game's header as the page shows it.
#[derive(Debug, Serialize)]
struct Header {
    id: String,
    title: String,
    row: Option<super::db::GameInfo>,
    r: Option<serde_json::Value>,
}

fn header(id: &str, g: &GameFiles) -> Header {
    let title = g
        .result
        .as_ref()
        .and_then(|r| r.get("script"))
        .and_then(|s| s.as_str())
        .map(str::to_string)
        .or_else(|| g.row.as_ref().map(|r| r.script.clone()))
        .unwrap_or_else(|| id.to_string());
    Header {
        id: id.to_string(),
        title,
        row: g.row.clone(),
        r: g.result.clone(),
    }
}

/// `GET /compare?a=&b=&as=`.
pub async fn compare(State(st): State<AppState>, uri: Uri) -> Result<Html<String>, PageError> {
    let q = query(&uri);
    let (ida, ga) = game(&st, &q, "a").await?;
    let (idb, gb) = game(&st, &q, "b").await?;
    let f = filter(&q);
    let mut characters = pages::characters(&ga).await?;
    for c in pages::characters(&gb).await? {
        if !characters.contains(&c) {
            characters.push(c);
        }
    }
    let paths = (ga.transcript.clone(), gb.transcript.clone());
    let start = Cursor { a: 0, b: 0, n: 0 };
    let found = walk_async(paths.clone(), start, f.clone(), FIND_ROWS, false, true).await?;
    let identical = found.at.n;
    let same_story = found.end && found.first.is_none();
    let prefix = (identical > 0).then(|| next_url((&ida, &idb), &f, start, "", Some(identical)));
    let (rows, next) = if same_story {
        (Vec::new(), None)
    } else {
        let mut page = walk_async(paths, found.at, f.clone(), PAGE_ROWS, true, false).await?;
        if found.first.is_some() {
            if let Some(r) = page.rows.first_mut() {
                r.first = true;
            }
        }
        let stage = page
            .rows
            .last()
            .map(|r| r.stage.clone())
            .unwrap_or_default();
        let next = (!page.end).then(|| next_url((&ida, &idb), &f, page.at, &stage, None));
        (page.rows, next)
    };
    let html = st.render(
        "compare.html",
        context! {
            a => header(&ida, &ga), b => header(&idb, &gb), characters,
            as_character => f.as_character, first => found.first, identical, same_story,
            find_rows => FIND_ROWS, prefix, rows, next, prev_stage => "", more => false,
        },
    )?;
    Ok(Html(html))
}

/// `GET /compare/events?a=&b=&after_a=&after_b=&n=&stage=&rows=&as=`: the next rows.
pub async fn compare_events(State(st): State<AppState>, uri: Uri) -> Result<Response, PageError> {
    let q = query(&uri);
    let (ida, ga) = game(&st, &q, "a").await?;
    let (idb, gb) = game(&st, &q, "b").await?;
    let f = filter(&q);
    let at = Cursor {
        a: number(&q, "after_a")?,
        b: number(&q, "after_b")?,
        // Row numbers only count rows: a forged huge one must not overflow when rows are added.
        n: number(&q, "n")?.min(u64::MAX / 2),
    };
    let limit = param(&q, "rows").map(|_| number(&q, "rows")).transpose()?;
    let max_rows = limit.map_or(PAGE_ROWS, |l| (l as usize).min(PAGE_ROWS));
    let page = walk_async(
        (ga.transcript, gb.transcript),
        at,
        f.clone(),
        max_rows,
        true,
        false,
    )
    .await?;
    let shown = page.at.n - at.n;
    let left = limit.map(|l| l.saturating_sub(shown));
    let stage = page
        .rows
        .last()
        .map(|r| r.stage.as_str())
        .unwrap_or(param(&q, "stage").unwrap_or(""));
    let next =
        (!page.end && left != Some(0) && (shown > 0 || page.at.a != at.a || page.at.b != at.b))
            .then(|| next_url((&ida, &idb), &f, page.at, stage, left));
    let html = st.render(
        "compare_rows.html",
        context! {
            rows => page.rows, prev_stage => param(&q, "stage").unwrap_or(""),
            more => next.is_some(),
        },
    )?;
    Ok(fragment(html, next))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(seq: u64, stage: &str, text: &str) -> EventView {
        EventView {
            seq,
            ts: format!("2026-01-01T00:00:{seq:02}Z"),
            stage: stage.into(),
            kind: "answer".into(),
            speaker: "Ada".into(),
            addressee: None,
            text: text.into(),
            only: None,
            usage: None,
            data: None,
            correct: None,
            question: None,
            reference: None,
        }
    }

    fn sides(al: &Aligned) -> Vec<(Option<usize>, Option<usize>, bool)> {
        al.rows.iter().map(|p| (p.a, p.b, p.differs)).collect()
    }

    #[test]
    fn same_stages_face_each_other_and_the_longer_stage_leaves_a_blank() {
        let a = vec![
            ev(0, "intro", "hi"),
            ev(1, "round 1", "x"),
            ev(2, "vote", "v"),
        ];
        let b = vec![
            ev(0, "intro", "hi"),
            ev(1, "round 1", "x"),
            ev(2, "round 1", "y"),
            ev(3, "vote", "v"),
        ];
        let al = align(&a, false, &b, false, 100);
        assert_eq!(
            sides(&al),
            [
                (Some(0), Some(0), false),
                (Some(1), Some(1), false),
                (None, Some(2), true),
                (Some(2), Some(3), false),
            ]
        );
        assert_eq!((al.used_a, al.used_b), (3, 4));
    }

    #[test]
    fn events_are_compared_by_what_they_say_not_their_number_time_or_cost() {
        let a = ev(3, "intro", "hi");
        let mut b = ev(7, "intro", "hi");
        b.usage = Some(Default::default());
        assert!(same(&a, &b));
        b.text = "hello".into();
        assert!(!same(&a, &b));
        let mut c = ev(3, "intro", "hi");
        c.only = Some(vec!["Bo".into()]);
        assert!(!same(&a, &c));
    }

    #[test]
    fn a_step_only_one_game_takes_stands_alone_and_shifts_nothing() {
        let mut recall = ev(1, "intro", "I remember");
        recall.kind = "memory_recall".into();
        let a = vec![
            ev(0, "intro", "hi"),
            ev(1, "intro", "bye"),
            ev(2, "vote", "v"),
        ];
        let b = vec![
            ev(0, "intro", "hi"),
            recall,
            ev(2, "intro", "bye"),
            ev(3, "vote", "v"),
        ];
        let al = align(&a, false, &b, false, 100);
        assert_eq!(
            sides(&al),
            [
                (Some(0), Some(0), false),
                (None, Some(1), true),
                (Some(1), Some(2), false),
                (Some(2), Some(3), false),
            ]
        );
    }

    #[test]
    fn a_stage_only_one_game_has_goes_first_alone() {
        let a = vec![
            ev(0, "round 1", "x"),
            ev(1, "round 2", "y"),
            ev(2, "vote", "v"),
        ];
        let b = vec![ev(0, "round 1", "x"), ev(1, "vote", "v")];
        let al = align(&a, false, &b, false, 100);
        assert_eq!(
            sides(&al),
            [
                (Some(0), Some(0), false),
                (Some(1), None, true),
                (Some(2), Some(1), false),
            ]
        );
        // And the other way round.
        let al = align(&b, false, &a, false, 100);
        assert_eq!(
            sides(&al),
            [
                (Some(0), Some(0), false),
                (None, Some(1), true),
                (Some(1), Some(2), false),
            ]
        );
    }

    #[test]
    fn alignment_stops_where_a_buffer_that_goes_on_runs_out() {
        let a = vec![ev(0, "intro", "hi")];
        let b = vec![ev(0, "intro", "hi"), ev(1, "intro", "more")];
        // A goes on past its buffer: what faces B's second event is for the next page to say.
        let al = align(&a, true, &b, false, 100);
        assert_eq!(sides(&al), [(Some(0), Some(0), false)]);
        assert_eq!((al.used_a, al.used_b), (1, 1));
        // A has ended: B's second event stands alone.
        let al = align(&a, false, &b, false, 100);
        assert_eq!(al.rows.len(), 2);
        assert_eq!((al.used_a, al.used_b), (1, 2));
        // And the row limit holds.
        let al = align(&b, false, &b, false, 1);
        assert_eq!((al.rows.len(), al.used_a, al.used_b), (1, 1, 1));
    }

    #[test]
    fn a_walk_finds_the_first_difference_and_resumes_before_it() {
        use std::io::Write;
        let write = |events: &[EventView]| {
            let mut f = tempfile::NamedTempFile::new().expect("temp file");
            for e in events {
                let line = serde_json::json!({
                    "seq": e.seq, "ts": e.ts, "stage": e.stage, "kind": e.kind,
                    "speaker": e.speaker, "text": e.text, "visible_to": "all",
                });
                writeln!(f, "{line}").expect("write");
            }
            f
        };
        let a: Vec<EventView> = (0..250).map(|i| ev(i, "play", &format!("e{i}"))).collect();
        let mut b = a.clone();
        b[180].text = "something else".into();
        let (fa, fb) = (write(&a), write(&b));
        let start = Cursor { a: 0, b: 0, n: 0 };
        let paths = (fa.path(), fb.path());
        let w = walk(paths, start, &Filter::default(), FIND_ROWS, false, true).expect("walk");
        let first = w.first.expect("a difference");
        assert_eq!(
            (first.n, first.seq_a, first.seq_b),
            (181, Some(180), Some(180))
        );
        assert_eq!(w.at.n, 180);
        // Showing from there starts with the differing pair.
        let w = walk(paths, w.at, &Filter::default(), 10, true, false).expect("walk");
        assert_eq!(w.rows[0].a.as_ref().map(|e| e.seq), Some(180));
        assert!(w.rows[0].differs && !w.rows[1].differs);
        // A game against itself: no difference, both read to the end.
        let w = walk(
            (fa.path(), fa.path()),
            start,
            &Filter::default(),
            FIND_ROWS,
            false,
            true,
        )
        .expect("walk");
        assert!(w.first.is_none() && w.end);
        assert_eq!(w.at.n, 250);
    }
}
