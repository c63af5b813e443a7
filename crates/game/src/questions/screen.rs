//! Screening a proposal: it must quote a sentence of the character's script (the exact sentence is
//! stored), have a question, an answer and a source, and not repeat a question already known.

use sleuth_base::text;
use sleuth_script::{Character, FactualQuestion};

/// Two questions whose token F1 reaches this are the same question in other words.
const NEAR_DUPLICATE_F1: f64 = 0.8;
/// A source quoting part of a sentence must be at least this wide (see [`width`]) or cover half the
/// sentence: "the ledger" is a phrase, not a source.
const MIN_FRAGMENT_WIDTH: usize = 24;

/// One question the model proposed, as it wrote it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Proposal {
    pub question: String,
    pub answer: String,
    pub source: String,
}

/// What became of a proposal.
#[derive(Debug, Clone)]
pub enum Verdict {
    /// Kept, with `source` replaced by the exact script sentence.
    Keep(FactualQuestion),
    Empty,
    Unsourced,
    Duplicate,
}

/// A question already asked about the character, in the forms the duplicate test compares.
#[derive(Debug, Clone)]
struct Known {
    question: String,
    question_key: String,
    answer_key: String,
    source_key: String,
}

impl Known {
    fn of(q: &FactualQuestion) -> Known {
        Known {
            question: q.question.trim().to_string(),
            question_key: key(&q.question),
            answer_key: key(&q.answer),
            source_key: normalise(&q.source),
        }
    }
}

/// Screens one character's proposals: grounded in the script, non-empty, new.
#[derive(Debug, Clone)]
pub struct Screen {
    character: String,
    script_text: String,
    /// The script's sentences: (exact text, normalised text).
    sentences: Vec<(String, String)>,
    /// Existing questions and those kept so far.
    known: Vec<Known>,
    kept: Vec<FactualQuestion>,
}

impl Screen {
    /// A screen for `character`, with the questions the script already has about it.
    pub fn new(character: &Character, existing: &[FactualQuestion]) -> Screen {
        let script_text = character.script_text();
        let sentences = text::sentences(&script_text)
            .into_iter()
            // `sentences` cuts contiguous trimmed pieces, so this always holds; checked because the
            // validator requires it of every stored source.
            .filter(|s| script_text.contains(s.as_str()))
            .map(|s| {
                let n = normalise(&s);
                (s, n)
            })
            .collect();
        Screen {
            character: character.name.clone(),
            script_text,
            sentences,
            known: existing.iter().map(Known::of).collect(),
            kept: Vec::new(),
        }
    }

    /// Judges a proposal against the script and everything known so far, and keeps it if it passes.
    pub fn offer(&mut self, p: &Proposal) -> Verdict {
        let v = self.judge(p);
        if let Verdict::Keep(q) = &v {
            self.known.push(Known::of(q));
            self.kept.push(q.clone());
        }
        v
    }

    /// Judges a proposal without keeping it.
    pub fn judge(&self, p: &Proposal) -> Verdict {
        let (question, answer) = (p.question.trim(), p.answer.trim());
        if !missing_fields(question, answer, &p.source).is_empty() {
            return Verdict::Empty;
        }
        let Some(source) = self.find_source(&p.source) else {
            return Verdict::Unsourced;
        };
        let (qk, ak, sk) = (key(question), key(answer), normalise(source));
        let duplicate = self.known.iter().any(|k| {
            (!qk.is_empty() && k.question_key == qk)
                || text::token_f1(question, &k.question) >= NEAR_DUPLICATE_F1
                || (k.source_key == sk && k.answer_key == ak)
        });
        if duplicate {
            return Verdict::Duplicate;
        }
        Verdict::Keep(FactualQuestion {
            character: self.character.clone(),
            question: question.to_string(),
            answer: answer.to_string(),
            source: source.to_string(),
            review: None,
        })
    }

    /// Questions kept so far.
    pub fn kept(&self) -> &[FactualQuestion] {
        &self.kept
    }

    /// The questions kept, in the order they were offered.
    pub(super) fn into_kept(self) -> Vec<FactualQuestion> {
        self.kept
    }

    /// The text of the character's script the sources must quote.
    pub(super) fn script_text(&self) -> &str {
        &self.script_text
    }

    /// Every question known so far (the script's and those kept), for the prompt to ask for others.
    pub(super) fn known_questions(&self) -> Vec<&str> {
        self.known.iter().map(|k| k.question.as_str()).collect()
    }

    /// The script sentence a model's source quotes: the sentence itself (whitespace, typographic quotes,
    /// surrounding quote marks and a missing or different final punctuation tolerated), or a large
    /// enough part of one sentence.
    fn find_source(&self, source: &str) -> Option<&str> {
        let n = normalise(source);
        let mut forms = vec![n.clone()];
        let unquoted = unquote(&n);
        forms.push(unquoted.to_string());
        for f in [n.as_str(), unquoted] {
            forms.push(trim_final_punctuation(f).to_string());
        }
        forms.retain(|f| !f.is_empty());
        forms.dedup();
        // A whole sentence first: a short sentence may also occur inside a longer one.
        for f in &forms {
            if let Some((s, _)) = self
                .sentences
                .iter()
                .find(|(_, ns)| ns == f || trim_final_punctuation(ns) == f)
            {
                return Some(s);
            }
        }
        for f in &forms {
            if let Some((s, _)) = self.sentences.iter().find(|(_, ns)| {
                ns.contains(f.as_str())
                    && (width(f) >= MIN_FRAGMENT_WIDTH || 2 * width(f) >= width(ns))
            }) {
                return Some(s);
            }
        }
        None
    }
}

/// The fields of a factual question that are empty once trimmed, named as in a script file. Every
/// question is held to this, whoever wrote it: the model's proposals here, a reviewer's edit in a
/// *questions* campaign (`sleuth_report::campaign::questions`), and the script validator's rule.
pub fn missing_fields(question: &str, answer: &str, source: &str) -> Vec<&'static str> {
    [
        ("question", question),
        ("answer", answer),
        ("source", source),
    ]
    .into_iter()
    .filter(|(_, text)| text.trim().is_empty())
    .map(|(name, _)| name)
    .collect()
}

/// Whitespace collapsed to single spaces, typographic quotes and apostrophes made plain, trimmed.
fn normalise(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for w in s.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.extend(w.chars().map(|c| match c {
            '\u{2018}' | '\u{2019}' | '\u{2032}' => '\'',
            '\u{201C}' | '\u{201D}' | '\u{2033}' => '"',
            c => c,
        }));
    }
    out
}

/// The comparison key of a question or answer: lower-cased letters and digits, one space between words.
fn key(s: &str) -> String {
    let lowered: String = s
        .chars()
        .flat_map(char::to_lowercase)
        .map(|c| if c.is_alphanumeric() { c } else { ' ' })
        .collect();
    lowered.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Drops quote marks wrapped around the whole text.
fn unquote(s: &str) -> &str {
    for (open, close) in [('"', '"'), ('\'', '\''), ('「', '」'), ('『', '』')] {
        if let Some(inner) = s.strip_prefix(open).and_then(|r| r.strip_suffix(close)) {
            return inner.trim();
        }
    }
    s
}

fn trim_final_punctuation(s: &str) -> &str {
    s.trim_end_matches(|c: char| ".,;:!?。，；：！？、…".contains(c))
        .trim_end()
}

/// A rough size in Latin letters: a CJK character carries about as much as three.
fn width(s: &str) -> usize {
    s.chars().map(|c| if text::is_cjk(c) { 3 } else { 1 }).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ada() -> Character {
        toml::from_str(
            r#"
name = "Ada Finch"
role = "civilian"
story = """
Ada Finch has kept the lighthouse on Gull Rock for twelve years.
She met Ben Hollis in 1950 at the harbour fair in Kesterby, and they were engaged the following spring.
"""
timeline = "At 9:40 pm Ada saw a lantern moving in the orchid house.\nAt 10 pm she locked the door."
"#,
        )
        .expect("character parses")
    }

    fn kind(v: Verdict) -> &'static str {
        match v {
            Verdict::Keep(_) => "keep",
            Verdict::Empty => "empty",
            Verdict::Unsourced => "unsourced",
            Verdict::Duplicate => "duplicate",
        }
    }

    fn p(q: &str, a: &str, s: &str) -> Proposal {
        Proposal {
            question: q.into(),
            answer: a.into(),
            source: s.into(),
        }
    }

    fn existing() -> Vec<FactualQuestion> {
        vec![FactualQuestion {
            character: "Ada Finch".into(),
            question: "How long has Ada Finch kept the lighthouse on Gull Rock?".into(),
            answer: "twelve years".into(),
            source: "Ada Finch has kept the lighthouse on Gull Rock for twelve years.".into(),
            review: None,
        }]
    }

    #[test]
    fn keeps_grounded_new_questions_with_the_exact_sentence() {
        let mut s = Screen::new(&ada(), &existing());
        let v = s.offer(&p(
            "What did Ada see in the orchid house at 9:40 pm?",
            "a lantern",
            "  At 9:40 pm Ada saw a   lantern moving in the orchid house  ",
        ));
        let Verdict::Keep(q) = v else {
            panic!("kept: {v:?}")
        };
        assert_eq!(
            q.source,
            "At 9:40 pm Ada saw a lantern moving in the orchid house."
        );
        assert!(ada().script_text().contains(&q.source));
        // Typographic quotes and a different final punctuation are tolerated.
        let v = s.offer(&p(
            "When did Ada lock the door?",
            "10 pm",
            "“At 10 pm she locked the door!”",
        ));
        assert!(
            matches!(&v, Verdict::Keep(q) if q.source == "At 10 pm she locked the door."),
            "{v:?}"
        );
        assert_eq!(s.kept().len(), 2);
    }

    #[test]
    fn a_quoted_part_of_a_sentence_stores_the_whole_sentence() {
        let mut s = Screen::new(&ada(), &[]);
        let v = s.offer(&p(
            "Where did Ada Finch meet Ben Hollis?",
            "at the harbour fair in Kesterby",
            "She met Ben Hollis in 1950 at the harbour fair in Kesterby",
        ));
        let Verdict::Keep(q) = v else {
            panic!("kept: {v:?}")
        };
        assert_eq!(q.source, "She met Ben Hollis in 1950 at the harbour fair in Kesterby, and they were engaged the following spring.");
        // A scrap of a sentence is not a source.
        assert_eq!(
            kind(s.offer(&p("Who did Ada meet?", "Ben Hollis", "Ben Hollis"))),
            "unsourced"
        );
    }

    #[test]
    fn drops_unsourced_empty_and_duplicate_proposals() {
        let mut s = Screen::new(&ada(), &existing());
        assert_eq!(
            kind(s.offer(&p(
                "What colour is Ada's boat?",
                "blue",
                "Ada's boat is painted blue."
            ))),
            "unsourced"
        );
        assert_eq!(
            kind(s.offer(&p("", "a lantern", "At 10 pm she locked the door."))),
            "empty"
        );
        assert_eq!(
            kind(s.offer(&p(
                "When did Ada lock the door?",
                "  ",
                "At 10 pm she locked the door."
            ))),
            "empty"
        );
        assert_eq!(
            kind(s.offer(&p("When did Ada lock the door?", "10 pm", ""))),
            "empty"
        );
        // Same as the script's existing question, in other case and punctuation.
        assert_eq!(
            kind(s.offer(&p(
                "how long has Ada Finch kept the lighthouse on Gull Rock",
                "12 years",
                "Ada Finch has kept the lighthouse on Gull Rock for twelve years."
            ))),
            "duplicate"
        );
        // Near-duplicate wording (token F1 ≥ 0.8).
        assert_eq!(
            kind(s.offer(&p(
                "For how long has Ada Finch kept the lighthouse on Gull Rock?",
                "twelve years",
                "Ada Finch has kept the lighthouse on Gull Rock for twelve years."
            ))),
            "duplicate"
        );
        // A different question with the same source and answer.
        assert_eq!(
            kind(s.offer(&p(
                "What is the length of Ada's service at the light?",
                "Twelve years.",
                "Ada Finch has kept the lighthouse on Gull Rock for twelve years."
            ))),
            "duplicate"
        );
        // Duplicates of questions kept in this run count too.
        assert!(matches!(
            s.offer(&p(
                "When did Ada lock the door?",
                "10 pm",
                "At 10 pm she locked the door."
            )),
            Verdict::Keep(_)
        ));
        assert_eq!(
            kind(s.offer(&p(
                "When did Ada lock the door",
                "at 10 pm",
                "At 10 pm she locked the door."
            ))),
            "duplicate"
        );
        assert_eq!(s.kept().len(), 1);
    }

    #[test]
    fn chinese_sources_are_found_by_sentence() {
        let c: Character = toml::from_str(
            "name = \"林医生\"\nrole = \"civilian\"\ntimeline = \"18:20，你去见杨老板，快到的时候遇见了张大副。之后你回到了船舱\"\n",
        )
        .expect("parses");
        let mut s = Screen::new(&c, &[]);
        let v = s.offer(&p(
            "林医生几点遇见张大副？",
            "18:20",
            "18:20，你去见杨老板，快到的时候遇见了张大副",
        ));
        assert!(
            matches!(&v, Verdict::Keep(q) if q.source == "18:20，你去见杨老板，快到的时候遇见了张大副。"),
            "{v:?}"
        );
        let v = s.offer(&p("林医生之后去了哪里？", "船舱", "之后你回到了船舱。"));
        assert!(
            matches!(&v, Verdict::Keep(q) if q.source == "之后你回到了船舱"),
            "{v:?}"
        );
    }
}
