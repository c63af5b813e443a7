//! The pages' templates, compiled into the binary (`include_str!`): the viewer needs no file beside
//! it. minijinja escapes every value in a `.html` template, so a transcript's text (model output) is
//! shown as text, never run as markup.

use minijinja::{Environment, Value};

/// Every template, by name.
const TEMPLATES: &[(&str, &str)] = &[
    ("base.html", include_str!("templates/base.html")),
    ("runs.html", include_str!("templates/runs.html")),
    (
        "folder_rows.html",
        include_str!("templates/folder_rows.html"),
    ),
    ("sweep.html", include_str!("templates/sweep.html")),
    ("game_rows.html", include_str!("templates/game_rows.html")),
    ("game.html", include_str!("templates/game.html")),
    ("events.html", include_str!("templates/events.html")),
    ("event_body.html", include_str!("templates/event_body.html")),
    ("game_facts.html", include_str!("templates/game_facts.html")),
    ("compare.html", include_str!("templates/compare.html")),
    (
        "compare_rows.html",
        include_str!("templates/compare_rows.html"),
    ),
    ("calls.html", include_str!("templates/calls.html")),
    ("call.html", include_str!("templates/call.html")),
    ("report.html", include_str!("templates/report.html")),
    (
        "annotate_base.html",
        include_str!("templates/annotate_base.html"),
    ),
    ("annotate.html", include_str!("templates/annotate.html")),
    (
        "annotate_responses.html",
        include_str!("templates/annotate_responses.html"),
    ),
    (
        "annotate_rankings.html",
        include_str!("templates/annotate_rankings.html"),
    ),
    (
        "annotate_questions.html",
        include_str!("templates/annotate_questions.html"),
    ),
    (
        "annotate_done.html",
        include_str!("templates/annotate_done.html"),
    ),
    (
        "annotate_refused.html",
        include_str!("templates/annotate_refused.html"),
    ),
    ("campaigns.html", include_str!("templates/campaigns.html")),
    ("campaign.html", include_str!("templates/campaign.html")),
];

/// The environment with every template and the viewer's filters.
pub fn environment() -> Result<Environment<'static>, minijinja::Error> {
    let mut env = Environment::new();
    for &(name, text) in TEMPLATES {
        env.add_template(name, text)?;
    }
    env.add_filter("num", num);
    env.add_filter("usd", usd);
    env.add_filter("pct", pct);
    env.add_filter("short", short);
    env.add_filter("urlencode", urlencode);
    Ok(env)
}

/// An integer with thousands separators ("12,556,523"); anything else as it is.
fn num(v: Value) -> String {
    match i64::try_from(v.clone()) {
        Ok(n) => group(n),
        Err(_) => match f64::try_from(v.clone()) {
            Ok(x) if x.fract() == 0.0 && x.abs() < 9e15 => group(x as i64),
            _ => v.to_string(),
        },
    }
}

fn group(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3 + 1);
    if n < 0 {
        out.push('-');
    }
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// US dollars: four decimals below a dollar (simulated and cheap models cost fractions of a cent),
/// two above.
fn usd(v: Value) -> String {
    match f64::try_from(v.clone()) {
        Ok(x) if x.abs() >= 1.0 => format!("${x:.2}"),
        Ok(x) => format!("${x:.4}"),
        Err(_) => "—".into(),
    }
}

/// A fraction as a percentage; "—" when not measured.
fn pct(v: Value) -> String {
    match f64::try_from(v) {
        Ok(x) if x.is_finite() => format!("{:.1} %", 100.0 * x),
        _ => "—".into(),
    }
}

/// The first 12 characters of an id.
fn short(v: String) -> String {
    v.chars().take(12).collect()
}

/// What a query-string component keeps as it is: RFC 3986's unreserved characters.
pub const QUERY: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// A query-string component.
pub fn urlencode(v: String) -> String {
    percent_encoding::utf8_percent_encode(&v, QUERY).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mirage_game_shows_who_accused_whom_beside_the_votes() {
        let env = environment().expect("templates compile");
        let r = serde_json::json!({
            "protocol": "mirage", "framework": "mirage", "provider": "simulated", "model": "sim-1",
            "seed": 1, "winner": "civilians", "murderer_detection_accuracy": 0.67,
            "usage": {"cost_usd": 0.0, "calls": 3, "prompt_tokens": 10, "completion_tokens": 5},
            "events": 12, "duration_seconds": 0.5,
            "votes": {"Ada": "Cole", "Bea": "Cole", "Cole": "Ada"},
            "murderers": ["Cole"],
            "mirage": {"accusations": {"Ada": "Cole", "Cole": "Bea"}},
        });
        let html = env
            .get_template("game.html")
            .expect("game.html")
            .render(minijinja::context! { game_id => "g", r, characters => Vec::<String>::new() })
            .expect("renders");
        assert!(html.contains("Accusations and votes"), "{html}");
        let row = |voter: &str| {
            let at = html
                .find(&format!("<th scope=\"row\">{voter}</th>"))
                .expect("the voter's row");
            html[at..at + html[at..].find("</tr>").expect("row end")].to_string()
        };
        // Ada accused the culprit and voted for him; Bea accused no one; Cole accused Bea.
        assert!(
            row("Ada").contains("<td>Cole <span class=\"badge right\">culprit</span></td><td>Cole")
        );
        assert!(row("Bea").contains("<td>—</td><td>Cole"));
        assert!(row("Cole").contains("<td>Bea</td><td>Ada"));
    }

    #[test]
    fn every_template_parses_and_filters_format() {
        environment().expect("templates compile");
        assert_eq!(group(12_556_523), "12,556,523");
        assert_eq!(group(-1_000), "-1,000");
        assert_eq!(group(999), "999");
        assert_eq!(usd(Value::from(0.00123)), "$0.0012");
        assert_eq!(usd(Value::from(12.5)), "$12.50");
        assert_eq!(pct(Value::from(0.5)), "50.0 %");
        assert_eq!(urlencode("a-b c/ü".into()), "a-b%20c%2F%C3%BC");
    }
}
