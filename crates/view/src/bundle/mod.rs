//! `sleuth view RUN --bundle DIR`: the viewer's pages of a run written as static files that open
//! from `file://` or any static web host, with no server (`docs/viewer.md`, *A static bundle*).
//!
//! The pages are the live ones: the router the server builds is asked for each address in-process
//! ([`inline::fetch`]), starting at `/` and following every link a page has to another bundled
//! page (breadth first, a few at a time), so the bundle holds exactly what its pages link to. What
//! a live page loads after it opens is written into it ([`inline::inline`]); its links are then
//! rewritten to files ([`links`] is the layout, [`rewrite`] the rewriting), and a fragment that
//! continues a list gets a page of its own with a link to the next. Nothing in a bundle asks for
//! anything: the script is there for what it does without a server (nothing, with the hooks taken
//! out), and no page has an address to fetch.

mod inline;
pub mod links;
mod out;
mod rewrite;

use std::collections::{HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use futures::stream::{FuturesUnordered, StreamExt};
use sleuth_base::shutdown::Shutdown;

use self::links::{Kind, Target};
use crate::auth::Token;
use crate::routes::{self, AppState};
use crate::{guard, source, totals, ViewError};

pub use self::out::MARKER;

/// Why a bundle could not be written.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    #[error(
        "{path} is not empty and is not a bundle (it has no {MARKER}): give a new or empty \
         directory, or a bundle written before, which is replaced"
    )]
    NotABundle { path: PathBuf },
    #[error("{path}: not a directory name a bundle can be written to")]
    BadPath { path: PathBuf },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    View(#[from] ViewError),
    #[error("rendering {url}: {message}")]
    Render { url: String, message: String },
    #[error("interrupted: nothing was written to {path}")]
    Interrupted { path: PathBuf },
}

/// What to bundle.
#[derive(Debug, Clone)]
pub struct BundleOptions {
    /// The run directory (a sweep's, or a folder of games).
    pub root: PathBuf,
    /// Where the bundle goes.
    pub out: PathBuf,
    /// Whether each game's model calls (with their messages and replies) are written in.
    pub calls: bool,
}

/// What was written.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    pub files: u64,
    pub bytes: u64,
    /// Game pages written.
    pub games: u64,
    /// Addresses the viewer answered with an error: written as a page that says so.
    pub failed: Vec<String>,
    pub seconds: f64,
}

/// Pages asked for at once.
const PARALLEL: usize = 8;

/// What every page's job shares.
struct Ctx {
    app: axum::Router,
    out: out::Out,
    calls: bool,
    label: String,
}

/// What one page's job found.
struct Done {
    target: Target,
    url: String,
    bytes: u64,
    status: u16,
    links: Vec<(Target, String)>,
}

/// Writes the bundle of `opts.root` to `opts.out` (see the module's notes); when `stop` drains
/// (Ctrl-C), stops and removes what it wrote.
pub async fn write(opts: &BundleOptions, stop: Shutdown) -> Result<Summary, BundleError> {
    let started = Instant::now();
    let out = out::Out::prepare(&opts.out)?;
    let state = match open(&opts.root).await {
        Ok(s) => s,
        Err(e) => {
            out.abandon();
            return Err(e);
        }
    };
    let label = opts
        .root
        .canonicalize()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "run".into());
    let ctx = Arc::new(Ctx {
        app: routes::router(state, guard::Hosts::new(&[])),
        out,
        calls: opts.calls,
        label: label.clone(),
    });
    let crawled = crawl(&ctx, &stop, &opts.out).await;
    let Ok(ctx) = Arc::try_unwrap(ctx) else {
        return Err(BundleError::Render {
            url: "/".into(),
            message: "a page's job outlived the bundle".into(),
        });
    };
    let mut summary = match crawled {
        Ok(s) => s,
        Err(e) => {
            ctx.out.abandon();
            return Err(e);
        }
    };
    let marker = serde_json::json!({
        "bundle_of": label,
        "written_at": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        "model_calls": opts.calls,
        "files": summary.files,
        "games": summary.games,
    });
    ctx.out.finish(&marker)?;
    summary.files += 1;
    summary.seconds = started.elapsed().as_secs_f64();
    Ok(summary)
}

/// The viewer's state over `root`, with the live figures summed once (a bundle is a snapshot).
async fn open(root: &std::path::Path) -> Result<AppState, BundleError> {
    let src = source::Source::open(root)?;
    let state = AppState::new(src, Token::default());
    if let Some(db) = state.source.db.clone() {
        let running = totals::lock_held(&state.source);
        let live = db
            .read(move |c| totals::snapshot(c, &mut totals::Fold::default(), running))
            .await
            .map_err(|e| BundleError::Render {
                url: "/api/runs".into(),
                message: e.to_string(),
            })?;
        if let Ok(mut w) = state.live.write() {
            *w = Arc::new(live);
        }
    }
    Ok(state)
}

/// Every page from `/` on, each written as it is made.
async fn crawl(ctx: &Arc<Ctx>, stop: &Shutdown, dest: &Path) -> Result<Summary, BundleError> {
    let mut summary = Summary::default();
    let first = links::target("/", ctx.calls).ok_or_else(|| BundleError::Render {
        url: "/".into(),
        message: "no file for the runs page".into(),
    })?;
    let mut seen: HashSet<String> = HashSet::from([first.file.clone()]);
    let mut queue: VecDeque<(Target, String)> = VecDeque::from([(first, "/".to_string())]);
    let mut running = FuturesUnordered::new();
    loop {
        while running.len() < PARALLEL {
            let Some((t, url)) = queue.pop_front() else {
                break;
            };
            running.push(tokio::spawn(page(ctx.clone(), t, url)));
        }
        let next = tokio::select! {
            n = running.next() => n,
            _ = stop.draining() => {
                // Every job ended before the caller removes what they wrote.
                running.iter().for_each(|h| h.abort());
                while running.next().await.is_some() {}
                return Err(BundleError::Interrupted { path: dest.to_path_buf() });
            }
        };
        let Some(joined) = next else {
            return Ok(summary);
        };
        let done = joined.map_err(|e| BundleError::Render {
            url: "?".into(),
            message: format!("a page's job failed: {e}"),
        })??;
        summary.files += 1;
        summary.bytes += done.bytes;
        if done.target.file.starts_with("game/") && done.target.kind == Kind::Page {
            summary.games += 1;
        }
        if done.status != 200 {
            summary.failed.push(done.url);
        }
        for (t, url) in done.links {
            if seen.insert(t.file.clone()) {
                queue.push_back((t, url));
            }
        }
    }
}

/// One page: asked for, made static, written.
async fn page(ctx: Arc<Ctx>, target: Target, url: String) -> Result<Done, BundleError> {
    let f = inline::fetch(&ctx.app, &url).await?;
    let done = |bytes, links| Done {
        target: target.clone(),
        url: url.clone(),
        bytes,
        status: f.status,
        links,
    };
    let html = match target.kind {
        Kind::Asset => {
            let bytes = ctx.out.write(&target.file, &f.body)?;
            return Ok(done(bytes, Vec::new()));
        }
        _ if f.status != 200 => format!(
            "<!doctype html>\n<meta charset=\"utf-8\">\n<title>Not in this bundle</title>\n\
             <p>The viewer answered {} for this page: {}</p>\n",
            f.status,
            rewrite::escape(f.text().trim())
        ),
        Kind::Page => f.text(),
        Kind::Fragment(shell) => rewrite::shell(shell, &url, &f.text(), f.next.as_deref()),
    };
    let html = inline::inline(&ctx.app, html, ctx.calls).await?;
    let (html, found) = rewrite::page(&html, &target.file, ctx.calls, &ctx.label);
    let bytes = ctx.out.write(&target.file, html.as_bytes())?;
    Ok(done(bytes, found))
}
