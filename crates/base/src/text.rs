//! Language-aware text primitives shared by the simulated model, the hashing embedder and the lexical judge.
//!
//! English is cut into lower-cased words; Chinese (and other CJK) text has no spaces, so it is cut into
//! single characters and character bigrams. One tokenizer for everything keeps scoring consistent: a
//! sentence the simulated model finds relevant is also one the memory index ranks high and the judge
//! counts as overlapping.

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};

mod bm25;
pub use bm25::{Bm25, Postings};

/// Words too common to say anything about relevance. Kept short on purpose: over-eager stop lists
/// throw away words like "who" and "when" that questions depend on for the judge. A `match` rather
/// than a list: this runs for every word the simulated model reads.
pub fn is_stopword(w: &str) -> bool {
    matches!(
        w,
        "a" | "an"
            | "the"
            | "and"
            | "or"
            | "of"
            | "to"
            | "in"
            | "on"
            | "at"
            | "for"
            | "is"
            | "are"
            | "was"
            | "were"
            | "be"
            | "been"
            | "it"
            | "its"
            | "this"
            | "that"
            | "these"
            | "those"
            | "with"
            | "as"
            | "by"
            | "from"
            | "do"
            | "does"
            | "did"
            | "has"
            | "have"
            | "had"
            | "i"
            | "you"
            | "he"
            | "she"
            | "we"
            | "they"
            | "me"
            | "him"
            | "her"
            | "us"
            | "them"
            | "my"
            | "your"
            | "his"
            | "our"
            | "their"
            | "what"
            | "which"
            | "please"
            | "would"
            | "could"
            | "should"
            | "will"
            | "can"
            | "about"
            | "into"
            | "than"
            | "then"
            | "so"
            | "if"
            | "but"
            | "not"
            | "no"
            | "yes"
            | "any"
            | "all"
            | "there"
            | "here"
            | "s"
            | "t"
    )
}

/// True for characters written without spaces between words (CJK ideographs, kana, hangul).
pub fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0xAC00..=0xD7AF | 0x20000..=0x2FFFF)
}

/// Splits text into scoring terms: lower-cased alphanumeric words (stop words removed) and, for CJK runs,
/// every character plus every adjacent character pair.
pub fn terms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut cjk_prev: Option<char> = None;
    for c in text.chars() {
        if is_cjk(c) {
            flush_word(&mut word, &mut out);
            out.push(c.to_string());
            if let Some(p) = cjk_prev {
                out.push(format!("{p}{c}"));
            }
            cjk_prev = Some(c);
        } else if c.is_ascii_alphanumeric() {
            cjk_prev = None;
            word.push(c.to_ascii_lowercase());
        } else if c.is_alphanumeric() {
            cjk_prev = None;
            word.extend(c.to_lowercase());
        } else {
            cjk_prev = None;
            flush_word(&mut word, &mut out);
        }
    }
    flush_word(&mut word, &mut out);
    out
}

fn flush_word(word: &mut String, out: &mut Vec<String>) {
    if !word.is_empty() {
        if !is_stopword(word) {
            out.push(std::mem::take(word));
        } else {
            word.clear();
        }
    }
}

/// Splits text into sentences on `.!?` followed by space or end, on `。！？；`, and on line breaks.
/// Abbreviations may split a sentence in two; for extraction that only costs a little context.
pub fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' || c == '\r' {
            push_sentence(&mut cur, &mut out);
            i += 1;
            continue;
        }
        cur.push(c);
        let ends = match c {
            '。' | '！' | '？' | '；' => true,
            '.' | '!' | '?' => {
                // A sentence ends at terminal punctuation followed by whitespace/end, after closing quotes.
                let mut j = i + 1;
                while j < chars.len() && matches!(chars[j], '"' | '\'' | '”' | '’' | ')') {
                    cur.push(chars[j]);
                    j += 1;
                }
                i = j - 1;
                j >= chars.len() || chars[j].is_whitespace()
            }
            _ => false,
        };
        if ends {
            // Keep closing quotes of Chinese sentences with the sentence.
            while i + 1 < chars.len() && matches!(chars[i + 1], '」' | '』' | '”') {
                i += 1;
                cur.push(chars[i]);
            }
            push_sentence(&mut cur, &mut out);
        }
        i += 1;
    }
    push_sentence(&mut cur, &mut out);
    out
}

fn push_sentence(cur: &mut String, out: &mut Vec<String>) {
    let s = cur.trim();
    if s.chars().any(|c| c.is_alphanumeric()) {
        out.push(s.to_string());
    }
    cur.clear();
}

/// Term frequencies of a piece of text, in term order ([`term_counts`]).
pub type TermCounts = BTreeMap<String, u32>;

/// Term frequencies of a piece of text, in term order. Ordered on purpose: scores are float sums over
/// these terms, and a hash map's per-process iteration order would make them differ in the last bit
/// between runs, flipping ties and breaking replay.
pub fn term_counts(text: &str) -> TermCounts {
    let mut m = BTreeMap::new();
    for t in terms(text) {
        *m.entry(t).or_insert(0) += 1;
    }
    m
}

/// Token-level F1 between a candidate and a reference (SQuAD style, on [`terms`]).
/// Used by the lexical judge: 1.0 for the same content words, 0.0 for none in common.
pub fn token_f1(candidate: &str, reference: &str) -> f64 {
    let c = term_counts(candidate);
    let r = term_counts(reference);
    let nc: u32 = c.values().sum();
    let nr: u32 = r.values().sum();
    if nc == 0 || nr == 0 {
        return 0.0;
    }
    let common: u32 = r
        .iter()
        .map(|(t, n)| (*n).min(*c.get(t).unwrap_or(&0)))
        .sum();
    if common == 0 {
        return 0.0;
    }
    let p = common as f64 / nc as f64;
    let rc = common as f64 / nr as f64;
    2.0 * p * rc / (p + rc)
}

/// The best token F1 between the reference and any window of the candidate as long as the reference.
///
/// Agents answer in sentences while references are short phrases ("a lantern"); plain F1 punishes a
/// correct sentence for its length. Scoring the best reference-sized window asks instead "does the
/// answer state the reference fact, compactly, somewhere", which is what a human grader checks.
pub fn window_f1(candidate: &str, reference: &str) -> f64 {
    let c = terms(candidate);
    let r = terms(reference);
    if c.len() <= r.len() || r.is_empty() {
        return token_f1(candidate, reference);
    }
    let mut best = token_f1(candidate, reference);
    for w in c.windows(r.len()) {
        best = best.max(token_f1(&w.join(" "), &r.join(" ")));
    }
    best
}

/// Fraction of the reference's terms that the candidate contains (recall on [`terms`]).
pub fn token_recall(candidate: &str, reference: &str) -> f64 {
    let c = term_counts(candidate);
    let r = term_counts(reference);
    let nr: u32 = r.values().sum();
    if nr == 0 {
        return 0.0;
    }
    let common: u32 = r
        .iter()
        .map(|(t, n)| (*n).min(*c.get(t).unwrap_or(&0)))
        .sum();
    common as f64 / nr as f64
}

/// Dimensions of [`hashed_vector`]s unless a caller asks for others. 256 keeps a 4-player game's memory
/// small while leaving few collisions among the few thousand distinct terms a script uses.
pub const HASHED_DIMS: usize = 256;

/// Deterministic feature hashing of a text's [`terms`] and term pairs into `dims` dimensions,
/// L2-normalised. Similar texts share terms, so cosine similarity approximates lexical overlap — a fair
/// stand-in for a neural embedder when the job is to find what was said about a name, place or time.
/// The memory's local embedder and the simulated model's embeddings are both this vector, so an
/// embedding served over HTTP equals the one computed in process.
pub fn hashed_vector(input: &str, dims: usize) -> Vec<f32> {
    let mut v = vec![0.0f32; dims.max(1)];
    let terms = terms(input);
    // A feature is hashed from its parts: a bigram's digest is that of "first second" without the
    // string being built (one allocation per bigram of every chunk and query, issue 32).
    let mut add = |parts: &[&str], weight: f32| {
        let mut hasher = Sha256::new();
        for p in parts {
            hasher.update(p.as_bytes());
        }
        let h = hasher.finalize();
        let idx =
            u64::from_le_bytes([h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7]]) as usize % v.len();
        let sign = if h[8] & 1 == 0 { 1.0 } else { -1.0 };
        v[idx] += sign * weight;
    };
    for t in &terms {
        add(&[t], 1.0);
    }
    for w in terms.windows(2) {
        add(&[&w[0], " ", &w[1]], 0.5);
    }
    normalize_l2(&mut v);
    v
}

/// Scales a vector to unit length (leaves the zero vector alone).
pub fn normalize_l2(v: &mut [f32]) {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if n > 0.0 {
        v.iter_mut().for_each(|x| *x /= n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn english_terms_drop_stopwords_and_case() {
        assert_eq!(
            terms("The Butler saw a LANTERN at 9:40."),
            vec!["butler", "saw", "lantern", "9", "40"]
        );
    }

    #[test]
    fn chinese_terms_are_characters_and_bigrams() {
        assert_eq!(terms("毒药"), vec!["毒", "药", "毒药"]);
    }

    #[test]
    fn sentences_split_on_both_scripts() {
        let s = sentences("He left at 9 p.m. She stayed. 他走了。她留下！\nNew line");
        assert_eq!(
            s,
            vec![
                "He left at 9 p.m.",
                "She stayed.",
                "他走了。",
                "她留下！",
                "New line"
            ]
        );
    }

    #[test]
    fn f1_rewards_overlap() {
        assert!((token_f1("a lantern", "the lantern") - 1.0).abs() < 1e-9);
        assert_eq!(token_f1("orchid house", "lantern"), 0.0);
        let f = token_f1("At 9:40 I saw a lantern in the orchid house", "a lantern");
        assert!(f > 0.2 && f < 0.5, "{f}");
    }

    #[test]
    fn window_f1_finds_the_reference_inside_a_sentence() {
        assert!(
            (window_f1("At 9:40 I saw a lantern in the orchid house", "a lantern") - 1.0).abs()
                < 1e-9
        );
        assert!((window_f1("I saw Ada near the decanter", "Ada and Ben") - 0.5).abs() < 1e-9);
        assert_eq!(window_f1("I was asleep", "a lantern"), 0.0);
    }
}
