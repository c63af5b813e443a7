//! A live page made static: its "load more" buttons become links to the next page's file, its forms
//! (which ask the server) are taken out, its live-figure hooks dropped, and every link to the viewer
//! rewritten to the file that holds it (`links.rs`). A fragment the live pages load into a list gets
//! a page of its own around it ([`shell`]).
//!
//! The pages are the viewer's own templates, where every value is escaped: a `"` or `<` in a
//! transcript's text reads `&quot;`, `&lt;`, so the markup searched for here (`<button`, ` href="`)
//! can only be the templates' own.

use super::links::{self, Shell, Target};

/// An attribute's value as written in a template, with HTML's escapes undone.
pub fn unescape(s: &str) -> String {
    s.replace("&#x2f;", "/")
        .replace("&quot;", "\"")
        .replace("&#x27;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// What a link to a list's next page reads.
const NEXT: &str = "Next page →";

/// A link to the page after this one, as the live viewer's address (rewritten with the others).
pub fn next_link(next: &str, in_list: bool) -> String {
    let a = format!("<a class=\"more\" href=\"{}\">{NEXT}</a>", escape(next));
    if in_list {
        format!("<li class=\"more-link\">{a}</li>")
    } else {
        format!("<p class=\"more-link\">{a}</p>")
    }
}

/// A fragment at `url` on a page of its own, with the live viewer's addresses (rewritten later):
/// the breadcrumbs back to its game or sweep, its rows in the list they belong to, and the link to
/// the next page.
pub fn shell(kind: Shell, url: &str, fragment: &str, next: Option<&str>) -> String {
    let q: std::collections::HashMap<String, String> =
        url::form_urlencoded::parse(url.split_once('?').map(|(_, q)| q).unwrap_or("").as_bytes())
            .into_owned()
            .collect();
    let get = |k: &str| q.get(k).map(String::as_str).unwrap_or("");
    let id = get("id");
    let short: String = id.chars().take(12).collect();
    let enc = |s: &str| crate::templates::urlencode(s.to_string());
    let game = format!(
        "<a href=\"/game?id={}\">game {}</a>",
        enc(id),
        escape(&short)
    );
    let from = |k: &str| get(k).parse::<u64>().unwrap_or(0) + 1;
    let (title, crumb, open, close) = match kind {
        Shell::Report => (
            "The report".to_string(),
            String::new(),
            "<div class=\"report\">".to_string(),
            "</div>",
        ),
        Shell::SweepGames => (
            format!("Games ({}), from the {}th", get("state"), from("offset")),
            format!(
                "<a href=\"/sweep?id={}\">sweep {}</a> › ",
                enc(id),
                escape(id)
            ),
            games_table(GAME_COLUMNS),
            "</tbody></table></div>",
        ),
        Shell::FolderGames => (
            format!("Games, from the {}th", from("offset")),
            String::new(),
            games_table(FOLDER_COLUMNS),
            "</tbody></table></div>",
        ),
        Shell::Events => (
            format!("Transcript of game {short}, from byte {}", get("after")),
            format!("{game} › "),
            "<ol class=\"timeline\" id=\"timeline\">".to_string(),
            "</ol>",
        ),
        Shell::Answers => (
            format!(
                "Evaluation answers of game {short}, from byte {}",
                get("after")
            ),
            format!("{game} › "),
            "<ol class=\"timeline\" id=\"answers\">".to_string(),
            "</ol>",
        ),
        Shell::Calls => (
            format!("Model calls of game {short}, from the {}th", from("offset")),
            format!("{game} › "),
            "<ol class=\"calls\" id=\"calls\">".to_string(),
            "</ol>",
        ),
    };
    let title = escape(&title);
    let more = next.map(|n| next_link(n, false)).unwrap_or_default();
    format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{title} · sleuth view</title>\n<link rel=\"stylesheet\" href=\"/assets/app.css\">\n\
         </head>\n<body>\n<header class=\"top\">\n  <a class=\"brand\" href=\"/\">sleuth view</a>\n  \
         <nav aria-label=\"breadcrumbs\"><a href=\"/\">Runs</a> › {crumb}{title}</nav>\n</header>\n\
         <main>\n<h1>{title}</h1>\n{open}{fragment}{close}\n{more}\n</main>\n</body>\n</html>\n"
    )
}

const GAME_COLUMNS: &[&str] = &[
    "Game", "Arm", "Script", "Seed", "State", "Stage", "Reason", "Attempts",
];
const FOLDER_COLUMNS: &[&str] = &[
    "Game",
    "Script",
    "Protocol",
    "Framework",
    "Seed",
    "Winner",
    "USD",
];

fn games_table(columns: &[&str]) -> String {
    let heads: String = columns
        .iter()
        .map(|c| format!("<th scope=\"col\">{c}</th>"))
        .collect();
    format!(
        "<div class=\"scroll\"><table class=\"grid\" id=\"games\"><thead><tr>{heads}</tr></thead><tbody>"
    )
}

/// The element at `start` (`<tag …`): the end of its opening tag and of its closing tag (the first
/// `</tag>` after: the templates' elements rewritten here hold no element of their own kind).
pub fn element(html: &str, start: usize) -> Option<(usize, usize)> {
    let tag: String = html[start + 1..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric())
        .collect();
    let open_end = start + html[start..].find('>')? + 1;
    let close = format!("</{tag}>");
    let end = open_end + html[open_end..].find(&close)? + close.len();
    Some((open_end, end))
}

/// The value of `name="…"` in an opening tag, escaped as written.
pub fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let pat = format!(" {name}=\"");
    let at = tag.find(&pat)? + pat.len();
    let len = tag[at..].find('"')?;
    Some(&tag[at..at + len])
}

/// `html` without any ` name="…"` attribute.
pub fn strip_attr(html: &str, name: &str) -> String {
    let pat = format!(" {name}=\"");
    let mut out = String::with_capacity(html.len());
    let mut rest = html;
    while let Some(at) = rest.find(&pat) {
        out.push_str(&rest[..at]);
        let after = &rest[at + pat.len()..];
        match after.find('"') {
            Some(end) => rest = &after[end + 1..],
            None => {
                rest = after;
                break;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Each "load more" button as a link to the next page; a running game's "waiting for new events"
/// button taken out (a bundle does not follow a game).
fn buttons(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut rest = html;
    while let Some(at) = rest.find("<button") {
        out.push_str(&rest[..at]);
        let Some((open_end, end)) = element(rest, at) else {
            rest = &rest[at..];
            break;
        };
        let open = &rest[at..open_end];
        if open.contains(" data-follow") {
        } else if let Some(more) = attr(open, "data-more") {
            out.push_str(&format!(
                "<p class=\"more-link\"><a class=\"more\" href=\"{more}\">{NEXT}</a></p>"
            ));
        } else {
            out.push_str(&rest[at..end]);
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// What stands where the "as seen by" form was.
const NO_FILTER: &str = "<p class=\"muted\">The whole transcript. The live viewer (<code>sleuth \
                         view</code>) also shows it as each character saw it.</p>";

/// The forms taken out (they ask the server): the "as seen by" one says what it was; the section
/// comparing two games goes with its form.
fn forms(html: &str) -> String {
    let mut html = html.to_string();
    if let Some(h) = html.find("<h2>Compare</h2>") {
        let start = html[..h].rfind("<section");
        let end = html[h..]
            .find("</section>")
            .map(|e| h + e + "</section>".len());
        if let (Some(s), Some(e)) = (start, end) {
            html.replace_range(s..e, "");
        }
    }
    let mut out = String::with_capacity(html.len());
    let mut rest = html.as_str();
    while let Some(at) = rest.find("<form") {
        out.push_str(&rest[..at]);
        let Some((open_end, end)) = element(rest, at) else {
            rest = &rest[at..];
            break;
        };
        if attr(&rest[at..open_end], "action").map(unescape).as_deref() == Some("/game") {
            out.push_str(NO_FILTER);
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// Every `href`/`src` to the viewer rewritten to its file relative to `from`, or dropped when it
/// has none; returns the page and the addresses it links to.
fn links(html: &str, from: &str, calls: bool) -> (String, Vec<(Target, String)>) {
    let mut found = Vec::new();
    let mut out = String::with_capacity(html.len());
    let mut rest = html;
    loop {
        let next = [" href=\"", " src=\""]
            .iter()
            .filter_map(|p| rest.find(p).map(|i| (i, p.len())))
            .min();
        let Some((at, len)) = next else { break };
        let start = at + len;
        let Some(end) = rest[start..].find('"').map(|e| start + e) else {
            break;
        };
        let url = unescape(&rest[start..end]);
        out.push_str(&rest[..at]);
        if url.starts_with('/') && !url.starts_with("//") {
            if let Some(t) = links::target(&url, calls) {
                let to = links::relative(from, &t.file);
                out.push_str(&rest[at..start]);
                out.push_str(&escape(&format!("{to}{}", links::anchor(&url))));
                out.push('"');
                let bare = url.split('#').next().unwrap_or("").to_string();
                found.push((t, bare));
            }
        } else {
            out.push_str(&rest[at..=end]);
        }
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    (out, found)
}

const REPORT_LINK: &str = "<p><a href=\"/report\">The report</a>: every table of <code>sleuth \
                           report</code> over this run.</p>\n</main>";

/// A page (already inlined: `inline.rs`) made static, to be written at `file`: see the module's
/// notes. `label` stands for the run directory's path, which the live pages show in their header
/// (a bundle is for publishing: it names the run, not where it lay on this machine).
pub fn page(html: &str, file: &str, calls: bool, label: &str) -> (String, Vec<(Target, String)>) {
    let mut html = forms(&buttons(html));
    if file == "index.html" {
        // The runs page of a sweep leads to the report through its sweeps' pages; the bundle's
        // front page leads there too.
        html = html.replacen("</main>", REPORT_LINK, 1);
    }
    let mut html = strip_attr(&html, "data-live");
    let root = "<span class=\"root\" title=\"run directory\">";
    if let Some(at) = html.find(root) {
        if let Some(end) = html[at..].find("</span>") {
            html.replace_range(at + root.len()..at + end, &escape(label));
        }
    }
    links(&html, file, calls)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_live_page_becomes_a_static_one() {
        let html = "<a href=\"/\">Runs</a><a href=\"/compare?a=1&amp;b=2\">x</a>\
            <script src=\"/assets/app.js\"></script><div data-live=\"/api/runs\">n</div>\
            <form method=\"get\" action=\"/game\" class=\"filter\"><select></select></form>\
            <button type=\"button\" class=\"more\" data-more=\"&#x2f;game&#x2f;events?id=g&amp;after=9\" \
            data-target=\"#timeline\" data-auto>Load more events</button>\
            <button type=\"button\" data-more=\"/x\" data-follow>waiting</button>";
        let (out, found) = page(html, "game/g.html", false, "run");
        assert!(out.contains("<a href=\"../index.html\">Runs</a>"), "{out}");
        assert!(out.contains("<a>x</a>"), "{out}");
        assert!(out.contains("src=\"../assets/app.js\""), "{out}");
        assert!(out.contains("<div>n</div>"), "{out}");
        assert!(out.contains(NO_FILTER), "{out}");
        assert!(out.contains("href=\"../game/g/events-9.html\""), "{out}");
        assert!(!out.contains("waiting"), "{out}");
        let files: Vec<&str> = found.iter().map(|(t, _)| t.file.as_str()).collect();
        assert_eq!(
            files,
            ["index.html", "assets/app.js", "game/g/events-9.html"]
        );
    }
}
