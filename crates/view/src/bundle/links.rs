//! Where each of the live viewer's addresses lives in a bundle: the file layout, and the relative
//! link from one file to another.
//!
//! | live address | file |
//! |---|---|
//! | `/` | `index.html` |
//! | `/report[?sweep=]` | `report.html` |
//! | `/assets/F` | `assets/F` |
//! | `/sweep?id=S[&state=all]` | `sweep/S.html` |
//! | `/sweep?id=S&state=X` | `sweep/S-X.html` |
//! | `/sweep/games?id=S&state=X&offset=N` | `sweep/S/X-N.html` |
//! | `/folder/games?offset=N` | `folder/N.html` |
//! | `/game?id=G` | `game/G.html` |
//! | `/game/events?id=G&after=B` | `game/G/events-B.html` (`B`: the page's first byte) |
//! | `/game/events?id=G&after=B&view=answers` | `game/G/answers-B.html` |
//! | `/game/calls?id=G&offset=N` | `game/G/calls-N.html` (with `--bundle-calls` only) |
//!
//! A name (`S`, `G`) keeps its letters, digits, `-` and `_`; every other byte is written `~` and
//! two hex digits, so that a folder game's path (`runs/a b`) is one file name and no two names
//! meet. Anything else (`/compare`, `/campaigns`, a timeline as seen by one character, a running
//! game's follow address) has no file: its link is dropped.

use std::collections::HashMap;

/// What a bundled address is, which says how its file is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A whole page (`/`, a sweep, a game): its links rewritten.
    Page,
    /// A fragment the live pages load into a list: written inside a page of its own.
    Fragment(Shell),
    /// A stylesheet or script, written as it is.
    Asset,
}

/// The list a fragment's rows go in, on its page of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shell {
    Report,
    SweepGames,
    FolderGames,
    Events,
    Answers,
    Calls,
}

/// A bundled address: its file (relative to the bundle's root) and kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub file: String,
    pub kind: Kind,
}

/// A name as one file name (see the module's notes).
pub fn file_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || b == b'-' || b == b'_' {
            out.push(b as char);
        } else {
            out.push_str(&format!("~{b:02x}"));
        }
    }
    out
}

fn split(url: &str) -> (&str, HashMap<String, String>) {
    let url = url.split('#').next().unwrap_or("");
    let (path, query) = url.split_once('?').unwrap_or((url, ""));
    let q = url::form_urlencoded::parse(query.as_bytes())
        .into_owned()
        .filter(|(_, v)| !v.is_empty())
        .collect();
    (path, q)
}

/// Where the live address `url` (a path from `/`, with its query) lives in a bundle; `None` when
/// it has no file there. `calls`: whether model calls are bundled.
pub fn target(url: &str, calls: bool) -> Option<Target> {
    let (path, q) = split(url);
    let get = |k: &str| q.get(k).map(String::as_str);
    let id = || get("id").map(file_name);
    let page = |file: String| {
        Some(Target {
            file,
            kind: Kind::Page,
        })
    };
    let fragment = |file: String, shell| {
        Some(Target {
            file,
            kind: Kind::Fragment(shell),
        })
    };
    let number = |k: &str| get(k).unwrap_or("0").parse::<u64>().ok();
    match path {
        "/" => page("index.html".into()),
        "/report" => fragment("report.html".into(), Shell::Report),
        "/sweep" => match get("state") {
            None | Some("all") => page(format!("sweep/{}.html", id()?)),
            Some(state) => page(format!("sweep/{}-{}.html", id()?, file_name(state))),
        },
        "/sweep/games" => {
            let state = file_name(get("state").unwrap_or("all"));
            let file = format!("sweep/{}/{state}-{}.html", id()?, number("offset")?);
            fragment(file, Shell::SweepGames)
        }
        "/folder/games" => fragment(
            format!("folder/{}.html", number("offset")?),
            Shell::FolderGames,
        ),
        "/game" if get("as").is_none() => page(format!("game/{}.html", id()?)),
        "/game/events" if get("as").is_none() => {
            let after = number("after")?;
            match get("view") {
                Some("answers") => fragment(
                    format!("game/{}/answers-{after}.html", id()?),
                    Shell::Answers,
                ),
                None => fragment(format!("game/{}/events-{after}.html", id()?), Shell::Events),
                Some(_) => None,
            }
        }
        "/game/calls" if calls => fragment(
            format!("game/{}/calls-{}.html", id()?, number("offset")?),
            Shell::Calls,
        ),
        _ => {
            let file = path.strip_prefix("/assets/")?;
            (!file.is_empty() && file.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.')).then(
                || Target {
                    file: format!("assets/{file}"),
                    kind: Kind::Asset,
                },
            )
        }
    }
}

/// The `#…` part of `url`, with its `#`, if any.
pub fn anchor(url: &str) -> &str {
    url.find('#').map(|i| &url[i..]).unwrap_or("")
}

/// The link from the file `from` to the file `to`, both relative to the bundle's root.
pub fn relative(from: &str, to: &str) -> String {
    let depth = from.matches('/').count();
    format!("{}{to}", "../".repeat(depth))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(url: &str) -> Option<String> {
        target(url, false).map(|t| t.file)
    }

    #[test]
    fn every_bundled_address_has_its_file() {
        assert_eq!(file("/").as_deref(), Some("index.html"));
        assert_eq!(file("/report?sweep=t").as_deref(), Some("report.html"));
        assert_eq!(file("/sweep?id=t").as_deref(), Some("sweep/t.html"));
        assert_eq!(
            file("/sweep?id=t&state=done#games").as_deref(),
            Some("sweep/t-done.html")
        );
        assert_eq!(
            file("/sweep/games?id=t&state=failed&offset=50").as_deref(),
            Some("sweep/t/failed-50.html")
        );
        assert_eq!(file("/game?id=ab").as_deref(), Some("game/ab.html"));
        assert_eq!(file("/game?id=ab&as=Ada"), None);
        assert_eq!(
            file("/game/events?id=ab&after=123&stage=x").as_deref(),
            Some("game/ab/events-123.html")
        );
        assert_eq!(
            file("/game/events?id=ab&view=answers").as_deref(),
            Some("game/ab/answers-0.html")
        );
        assert_eq!(file("/game/calls?id=ab&offset=0"), None);
        assert_eq!(
            target("/game/calls?id=ab&offset=50", true)
                .map(|t| t.file)
                .as_deref(),
            Some("game/ab/calls-50.html")
        );
        assert_eq!(file("/assets/app.js").as_deref(), Some("assets/app.js"));
        assert_eq!(file("/assets/../x"), None);
        assert_eq!(file("/compare?a=1&b=2"), None);
        assert_eq!(file("/campaigns"), None);
    }

    #[test]
    fn names_become_one_file_name_each() {
        assert_eq!(file_name("runs/a b"), "runs~2fa~20b");
        assert_eq!(file_name("a~2f"), "a~7e2f");
        assert_eq!(
            relative("game/x/events-1.html", "index.html"),
            "../../index.html"
        );
        assert_eq!(relative("index.html", "sweep/t.html"), "sweep/t.html");
    }
}
