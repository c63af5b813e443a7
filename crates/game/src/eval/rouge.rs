//! ROUGE-L (Lin 2004, "ROUGE: A Package for Automatic Evaluation of Summaries"): the longest common
//! subsequence (LCS) of a reference and a candidate, as precision, recall and F.
//!
//! MIRAGE's Script Compliance Index averages a judge's role-play score with ROUGE-L between a
//! character's script and one the judge reconstructs from the character's behaviour (MIRAGE §2.4); the
//! SCI formula itself is with the other per-game formulas, the reconstruction part by part in
//! `mirage.rs`. [`rouge_l`] computes ROUGE-L as MIRAGE's reference code does, so that SCI compares with
//! the published tables: it passes both texts through `jieba.cut`, joins the words with spaces and scores
//! them with the `rouge_chinese` package's `rouge-l` F. That package, despite the name of its function
//! (`rouge_l_summary_level`), takes the LCS of the two *whole* word sequences — it says it replaced the
//! union LCS of the package it was forked from — and its F is the balanced 2PR / (P + R). So, with m
//! reference words, n candidate words and L = |LCS|: R = L / m, P = L / n, F = 2PR / (P + R).
//!
//! [`rouge_l_summary`] is Lin's summary-level ROUGE-L (§3.2: the union LCS of each reference sentence
//! with every candidate sentence) with F weighted by β = P / R, as the package `rouge_chinese` was forked
//! from computes F. MIRAGE's numbers were not computed with it; it is here for comparison with readings
//! of MIRAGE that assume it (`docs/metrics.md`).
//!
//! Words are those of [`words`]: jieba's segmentation (Chinese by words, not by characters), with
//! punctuation marks as words of their own and letters' case kept, as the reference compares them.

use std::collections::{BTreeSet, HashMap};
use std::sync::LazyLock;

use jieba_rs::Jieba;
use serde::{Deserialize, Serialize};

/// jieba with its default dictionary (embedded in the crate): loaded once, on first use.
static JIEBA: LazyLock<Jieba> = LazyLock::new(Jieba::new);

/// ROUGE-L precision, recall and F, each in [0, 1].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RougeL {
    /// LCS / candidate words.
    pub precision: f64,
    /// LCS / reference words.
    pub recall: f64,
    /// The F measure: balanced for [`rouge_l`], weighted by β = P / R for [`rouge_l_summary`]; 0 when
    /// the LCS is empty.
    pub f: f64,
}

impl RougeL {
    const ZERO: RougeL = RougeL {
        precision: 0.0,
        recall: 0.0,
        f: 0.0,
    };
}

/// The words ROUGE-L compares, as MIRAGE's reference makes them: `jieba.cut` in its default (accurate)
/// mode with the HMM for unknown words, white space dropped. A Chinese text is cut into words
/// (`凶手是管家` → 凶手, 是, 管家), an English one into its words; each punctuation mark is a word of its
/// own; case is kept.
pub fn words(text: &str) -> Vec<String> {
    JIEBA
        .cut(text, true)
        .into_iter()
        .map(|t| t.word.trim())
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// ROUGE-L of `candidate` against `reference` as MIRAGE's reference computes it (see the module docs):
/// the LCS of the two texts' [`words`], R = L / m, P = L / n, F = 2PR / (P + R).
///
/// An empty text (or one with no word) scores all zeros, as the reference's `cal_rouge_l` returns 0 for
/// an empty text; nothing in common scores zeros too, never NaN. Time O(m·n), memory O(min(m, n)): a
/// MIRAGE script part runs to thousands of words, where a full m×n table would be wasteful.
pub fn rouge_l(reference: &str, candidate: &str) -> RougeL {
    let (reference, candidate) = interned(&[words(reference)], &[words(candidate)]);
    let (reference, candidate) = (&reference[0], &candidate[0]);
    if reference.is_empty() || candidate.is_empty() {
        return RougeL::ZERO;
    }
    let lcs = lcs_len(reference, candidate);
    if lcs == 0 {
        return RougeL::ZERO;
    }
    let precision = lcs as f64 / candidate.len() as f64;
    let recall = lcs as f64 / reference.len() as f64;
    RougeL {
        precision,
        recall,
        f: 2.0 * precision * recall / (precision + recall),
    }
}

/// Summary-level ROUGE-L (Lin 2004 §3.2) with β = P / R.
///
/// Both texts are split into sentences ([`sleuth_base::text::sentences`]) and each sentence into [`words`].
/// For each reference sentence rᵢ, LCS∪(rᵢ, C) is the number of rᵢ's words that lie on the LCS of rᵢ
/// with some candidate sentence (the union over candidate sentences of the matched positions). With m
/// and n the words of the whole reference and candidate, L = Σᵢ LCS∪(rᵢ, C), R = L / m, P = L / n and
/// F = (1 + β²)·R·P / (R + β²·P) with β = P / R (Lin leaves β free; this is the choice of the Python
/// `rouge` package's `_f_p_r_lcs`). Where an LCS is not unique, the one taken is found by walking back
/// from the end of both sentences, preferring to skip a candidate word on a tie.
///
/// Empty texts or nothing in common score all zeros.
pub fn rouge_l_summary(reference: &str, candidate: &str) -> RougeL {
    let split = |t: &str| -> Vec<Vec<String>> {
        sleuth_base::text::sentences(t)
            .iter()
            .map(|s| words(s))
            .filter(|w| !w.is_empty())
            .collect()
    };
    let (reference, candidate) = interned(&split(reference), &split(candidate));
    let m: usize = reference.iter().map(Vec::len).sum();
    let n: usize = candidate.iter().map(Vec::len).sum();
    if m == 0 || n == 0 {
        return RougeL::ZERO;
    }
    let union: usize = reference
        .iter()
        .map(|r| {
            candidate
                .iter()
                .flat_map(|c| lcs_positions(r, c))
                .collect::<BTreeSet<usize>>()
                .len()
        })
        .sum();
    if union == 0 {
        return RougeL::ZERO;
    }
    let recall = union as f64 / m as f64;
    let precision = union as f64 / n as f64;
    let beta2 = (precision / recall).powi(2);
    RougeL {
        precision,
        recall,
        f: (1.0 + beta2) * recall * precision / (recall + beta2 * precision),
    }
}

/// Maps words to small integers so the O(m·n) inner loops compare integers, not strings; `a` and `b`
/// are lists of sentences.
fn interned(a: &[Vec<String>], b: &[Vec<String>]) -> (Vec<Vec<u32>>, Vec<Vec<u32>>) {
    let mut ids: HashMap<&str, u32> = HashMap::new();
    let a = intern_all(&mut ids, a);
    let b = intern_all(&mut ids, b);
    (a, b)
}

fn intern_all<'a>(ids: &mut HashMap<&'a str, u32>, sentences: &'a [Vec<String>]) -> Vec<Vec<u32>> {
    sentences
        .iter()
        .map(|s| {
            s.iter()
                .map(|w| {
                    let next = ids.len() as u32;
                    *ids.entry(w.as_str()).or_insert(next)
                })
                .collect()
        })
        .collect()
}

/// Length of the longest common subsequence of `a` and `b`.
///
/// The classic dynamic programme, `L[i][j] = L[i−1][j−1] + 1` when aᵢ = bⱼ, else
/// `max(L[i−1][j], L[i][j−1])`, keeping a single row over the shorter sequence: O(|a|·|b|) time,
/// O(min(|a|, |b|)) memory.
pub fn lcs_len<T: PartialEq>(a: &[T], b: &[T]) -> usize {
    let (long, short) = if a.len() >= b.len() { (a, b) } else { (b, a) };
    // row[j] = LCS of the long prefix processed so far and short[..j].
    let mut row = vec![0usize; short.len() + 1];
    for x in long {
        // L[i−1][j−1], carried along the row as it is overwritten.
        let mut diag = 0;
        for (j, y) in short.iter().enumerate() {
            let up = row[j + 1];
            row[j + 1] = if x == y { diag + 1 } else { up.max(row[j]) };
            diag = up;
        }
    }
    row[short.len()]
}

/// The positions in `r` of one longest common subsequence of `r` and `c`. The full table is kept to walk
/// back through it: sentences are short, unlike the whole texts [`lcs_len`] is for.
fn lcs_positions<T: PartialEq>(r: &[T], c: &[T]) -> Vec<usize> {
    let w = c.len() + 1;
    let mut t = vec![0usize; (r.len() + 1) * w];
    for i in 1..=r.len() {
        for j in 1..=c.len() {
            t[i * w + j] = if r[i - 1] == c[j - 1] {
                t[(i - 1) * w + j - 1] + 1
            } else {
                t[(i - 1) * w + j].max(t[i * w + j - 1])
            };
        }
    }
    let (mut i, mut j) = (r.len(), c.len());
    let mut out = Vec::new();
    while i > 0 && j > 0 {
        if r[i - 1] == c[j - 1] {
            out.push(i - 1);
            i -= 1;
            j -= 1;
        } else if t[(i - 1) * w + j] > t[i * w + j - 1] {
            i -= 1;
        } else {
            j -= 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn english_hand_case() {
        // reference 6 words, candidate 5, LCS "the cat on the mat" = 5:
        // P = 5/5 = 1, R = 5/6, F = 2·1·(5/6) / (1 + 5/6) = (10/6) / (11/6) = 10/11.
        let r = rouge_l("the cat sat on the mat", "the cat on the mat");
        assert!(close(r.precision, 1.0));
        assert!(close(r.recall, 5.0 / 6.0));
        assert!(close(r.f, 10.0 / 11.0));
    }

    #[test]
    fn swapping_reference_and_candidate_swaps_precision_and_recall() {
        let a = rouge_l("the cat sat on the mat", "the cat on the mat");
        let b = rouge_l("the cat on the mat", "the cat sat on the mat");
        assert!(close(a.precision, b.recall) && close(a.recall, b.precision) && close(a.f, b.f));
    }

    #[test]
    fn punctuation_is_a_word_and_case_counts_as_the_reference_does() {
        assert_eq!(words("The cat, sat."), ["The", "cat", ",", "sat", "."]);
        // [The cat , sat .] vs [the CAT sat]: only "sat" is common. P = 1/3, R = 1/5,
        // F = 2·(1/15) / (8/15) = 1/4.
        let r = rouge_l("The cat, sat.", "the CAT sat");
        assert!(close(r.precision, 1.0 / 3.0) && close(r.recall, 0.2) && close(r.f, 0.25));
    }

    #[test]
    fn chinese_is_compared_word_by_word() {
        // jieba cuts 凶手是管家 into 凶手 / 是 / 管家, not five characters.
        assert_eq!(words("凶手是管家"), ["凶手", "是", "管家"]);
        // [凶手 是 管家] vs [管家 是 凶手]: any one word is a longest common subsequence, LCS = 1,
        // P = R = F = 1/3. (By characters the LCS would be 2 of 5, F = 0.4.)
        let r = rouge_l("凶手是管家", "管家是凶手");
        assert!(close(r.precision, 1.0 / 3.0) && close(r.recall, 1.0 / 3.0));
        assert!(close(r.f, 1.0 / 3.0));
        // 管家 and 管理 share a character but no word.
        assert_eq!(rouge_l("管家", "管理").f, 0.0);
    }

    #[test]
    fn mixed_text_words() {
        assert_eq!(
            words("Ada 在书房 at 9pm!"),
            ["Ada", "在", "书房", "at", "9pm", "!"]
        );
    }

    #[test]
    fn empty_inputs_score_zero() {
        let zero = RougeL::ZERO;
        assert_eq!(rouge_l("", ""), zero);
        assert_eq!(rouge_l("", "the cat"), zero);
        assert_eq!(rouge_l("the cat", ""), zero);
        assert_eq!(rouge_l("  ", "\n"), zero);
        // Nothing in common is zero as well, not NaN.
        assert_eq!(rouge_l("the cat", "a dog"), zero);
        assert_eq!(rouge_l_summary("", "the cat"), zero);
        assert_eq!(rouge_l_summary("the cat", "a dog"), zero);
    }

    #[test]
    fn summary_level_with_beta_p_over_r_on_two_sentences() {
        // Reference r1 = "police found the body" (4 words), r2 = "the butler lied" (3): m = 7.
        // Candidate c1 = "police found a knife" (4), c2 = "the butler found the body" (5): n = 9.
        // r1: LCS with c1 = "police found" (r1 positions 0, 1); with c2 = "found the body" (1, 2, 3);
        //     union {0, 1, 2, 3} → 4.
        // r2: nothing with c1; "the butler" with c2 (0, 1) → 2.
        // L = 6, R = 6/7, P = 6/9 = 2/3, β = P/R = 7/9, β² = 49/81.
        // F = (1 + β²)·R·P / (R + β²·P) = (130/81 · 4/7) / (6/7 + 98/243) = (520/567) / (2144/1701)
        //   = 1560/2144 = 195/268 ≈ 0.7276.
        let reference = "police found the body\nthe butler lied";
        let candidate = "police found a knife\nthe butler found the body";
        let r = rouge_l_summary(reference, candidate);
        assert!(close(r.recall, 6.0 / 7.0), "{r:?}");
        assert!(close(r.precision, 2.0 / 3.0), "{r:?}");
        assert!(close(r.f, 195.0 / 268.0), "{r:?}");
        // Read as one sequence each (what MIRAGE's reference scores), the LCS is 4 words
        // ("police found the body"): R = 4/7, P = 4/9, F = 2·(16/63) / (64/63) = 1/2.
        let whole = rouge_l(reference, candidate);
        assert!(close(whole.f, 0.5), "{whole:?}");
    }

    #[test]
    fn summary_level_union_follows_lin() {
        // Lin's §3.2 example: r = w1 w2 w3 w4 w5, c1 = w1 w2 w6 w7 w8, c2 = w1 w3 w8 w9 w5; the union
        // LCS is w1 w2 w3 w5 = 4. Here m = 5, n = 10: R = 4/5, P = 2/5, β = 1/2,
        // F = (5/4 · 8/25) / (4/5 + 1/10) = (2/5) / (9/10) = 4/9.
        let r = rouge_l_summary("w1 w2 w3 w4 w5", "w1 w2 w6 w7 w8\nw1 w3 w8 w9 w5");
        assert!(
            close(r.recall, 4.0 / 5.0) && close(r.precision, 2.0 / 5.0),
            "{r:?}"
        );
        assert!(close(r.f, 4.0 / 9.0), "{r:?}");
    }

    #[test]
    fn lcs_textbook_case() {
        // CLRS §15.4: LCS("ABCBDAB", "BDCABA") = 4 (e.g. "BCBA"), in either argument order.
        let a: Vec<char> = "ABCBDAB".chars().collect();
        let b: Vec<char> = "BDCABA".chars().collect();
        assert_eq!(lcs_len(&a, &b), 4);
        assert_eq!(lcs_len(&b, &a), 4);
        assert_eq!(lcs_len::<char>(&[], &b), 0);
        assert_eq!(lcs_positions(&a, &b).len(), 4);
    }
}
