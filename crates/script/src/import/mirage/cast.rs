//! The characters as they are gathered across stages, and how a name found in a file (a later stage's
//! fuller name, a culprit, a clue owner, a name in a relationship text) is matched to one of them, by
//! the tiers of the module documentation.

use sleuth_base::text::is_cjk;

/// One character as it is gathered across stages.
#[derive(Debug, Default, Clone)]
pub(super) struct Draft {
    /// The latest name.
    pub(super) name: String,
    /// Every name the character had, first to last.
    pub(super) aliases: Vec<String>,
    pub(super) story: String,
    pub(super) acts: Vec<String>,
    pub(super) relationships: Vec<String>,
    pub(super) performance: Vec<String>,
    pub(super) goals: Vec<String>,
    pub(super) abilities: Vec<String>,
}

/// The characters, in first-seen order.
#[derive(Debug, Default)]
pub(super) struct Cast(pub(super) Vec<Draft>);

/// What a name matched.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Found {
    None,
    One(usize),
    Many(Vec<usize>),
}

impl Cast {
    /// People known only by name (the non-player suspects), so names can be matched against them by the
    /// same tiers.
    pub(super) fn of_names(names: &[String]) -> Cast {
        Cast(
            names
                .iter()
                .map(|n| Draft {
                    name: n.clone(),
                    aliases: vec![n.clone()],
                    ..Draft::default()
                })
                .collect(),
        )
    }

    /// The names, comma-separated, for an error that lists the characters.
    pub(super) fn list(&self) -> String {
        self.0
            .iter()
            .map(|d| d.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The character a name refers to, by the tiers of the module documentation. `reverse` also accepts a
    /// character whose name the query contains (culprit names or later-stage names longer than the
    /// character's).
    pub(super) fn find(&self, query: &str, reverse: bool) -> Found {
        let q = query.trim();
        if q.is_empty() {
            return Found::None;
        }
        let ql = q.to_lowercase();
        let q_bare = lower_bare(q);
        let q_parts = paren_parts(q);
        type Tier<'a> = Box<dyn Fn(&str) -> bool + 'a>;
        let mut tiers: Vec<Tier> = vec![
            Box::new(|n: &str| n == q),
            Box::new(|n: &str| n.to_lowercase() == ql),
            Box::new(|n: &str| {
                let bare = lower_bare(n);
                (!bare.is_empty() && bare == q_bare)
                    || paren_parts(n)
                        .iter()
                        .any(|p| *p == ql || (!q_bare.is_empty() && *p == q_bare))
                    || q_parts.iter().any(|p| *p == n.to_lowercase() || *p == bare)
            }),
            Box::new(|n: &str| starts_bounded(&n.to_lowercase(), &ql)),
            Box::new(|n: &str| contains_bounded(&n.to_lowercase(), &ql)),
        ];
        if reverse {
            tiers.push(Box::new(|n: &str| {
                let nl = n.to_lowercase();
                let bare = lower_bare(n);
                contains_bounded(&ql, &nl)
                    || (bare.chars().count() >= 2 && contains_bounded(&ql, &bare))
            }));
        }
        for tier in &tiers {
            let hits: Vec<usize> = self
                .0
                .iter()
                .enumerate()
                .filter(|(_, d)| d.aliases.iter().any(|n| tier(n)))
                .map(|(i, _)| i)
                .collect();
            match hits.len() {
                0 => continue,
                1 => return Found::One(hits[0]),
                _ => return Found::Many(hits),
            }
        }
        Found::None
    }

    /// Every lower-cased form under which a character may be named in a text: its names, the names
    /// without parenthesised parts, and those parts.
    pub(super) fn name_forms(&self, i: usize) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for n in &self.0[i].aliases {
            let mut forms = vec![n.to_lowercase(), lower_bare(n)];
            forms.extend(paren_parts(n));
            for f in forms {
                if !f.is_empty() && !out.contains(&f) {
                    out.push(f);
                }
            }
        }
        out
    }
}

/// The name without parenthesised parts, lower-cased and trimmed.
fn lower_bare(name: &str) -> String {
    strip_parens(name).trim().to_lowercase()
}

/// Removes `( … )` and `（ … ）` parts.
pub(super) fn strip_parens(name: &str) -> String {
    let mut out = String::new();
    let mut depth = 0usize;
    for c in name.chars() {
        match c {
            '(' | '（' => depth += 1,
            ')' | '）' => depth = depth.saturating_sub(1),
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The lower-cased contents of the name's parentheses.
fn paren_parts(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut depth = 0usize;
    for c in name.chars() {
        match c {
            '(' | '（' => {
                depth += 1;
                cur.clear();
            }
            ')' | '）' if depth > 0 => {
                depth -= 1;
                let t = cur.trim().to_lowercase();
                if !t.is_empty() {
                    out.push(t);
                }
                cur.clear();
            }
            _ if depth > 0 => cur.push(c),
            _ => {}
        }
    }
    out
}

/// Whether `c` continues a word next to `edge` (the needle's character at that side): letters and digits
/// of alphabetic scripts do; CJK text has no word boundaries.
fn joins(c: char, edge: char) -> bool {
    c.is_alphanumeric() && !is_cjk(c) && !is_cjk(edge)
}

/// `needle` occurs in `hay` not inside a longer word (both lower-cased).
pub(super) fn contains_bounded(hay: &str, needle: &str) -> bool {
    let (Some(first), Some(last)) = (needle.chars().next(), needle.chars().next_back()) else {
        return false;
    };
    hay.match_indices(needle).any(|(i, _)| {
        let before = hay[..i].chars().next_back();
        let after = hay[i + needle.len()..].chars().next();
        !before.is_some_and(|c| joins(c, first)) && !after.is_some_and(|c| joins(c, last))
    })
}

/// `hay` starts with `needle`, ending on a word boundary (both lower-cased).
fn starts_bounded(hay: &str, needle: &str) -> bool {
    match needle.chars().next_back() {
        Some(last) if hay.starts_with(needle) => !hay[needle.len()..]
            .chars()
            .next()
            .is_some_and(|c| joins(c, last)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cast(names: &[&str]) -> Cast {
        Cast(
            names
                .iter()
                .map(|n| Draft {
                    name: n.to_string(),
                    aliases: vec![n.to_string()],
                    ..Draft::default()
                })
                .collect(),
        )
    }

    #[test]
    fn culprit_names_match_in_tiers() {
        let c = cast(&[
            "Doctor Fang",
            "Ichiro Kiryu (Nopperabo)",
            "Crew Member Han",
            "Captain Hong",
        ]);
        assert_eq!(c.find("Doctor Fang", true), Found::One(0), "exact");
        assert_eq!(c.find("doctor FANG", true), Found::One(0), "case");
        assert_eq!(
            c.find("Ichiro Kiryu", true),
            Found::One(1),
            "without parentheses"
        );
        assert_eq!(
            c.find("nopperabo", true),
            Found::One(1),
            "the part in parentheses"
        );
        assert_eq!(c.find("Captain", true), Found::One(3), "prefix");
        assert_eq!(c.find("Fang", true), Found::One(0), "containment");
        assert_eq!(c.find("Kiryu", true), Found::One(1), "containment");
        assert_eq!(
            c.find("Doctor Fang Ming", true),
            Found::One(0),
            "culprit longer"
        );
        assert_eq!(c.find("Doctor Fang Ming", false), Found::None);
        assert_eq!(c.find("an", true), Found::None, "not inside a word");
        assert_eq!(c.find("Zed", true), Found::None);
        assert_eq!(c.find("", true), Found::None);
        let twins = cast(&["Li Wei", "Li Na"]);
        assert_eq!(twins.find("Li", true), Found::Many(vec![0, 1]));
        let exact_first = cast(&["Black", "Little Black"]);
        assert_eq!(exact_first.find("Black", true), Found::One(0));
    }
}
