//! Okapi BM25 over a fixed set of passages, inverted: a query costs the passages that hold its terms,
//! not every passage of the context.
//!
//! The simulated model builds an index for every request, over contexts that can hold thousands of
//! sentences (a script with a long premise, sent with every call). It keeps each message's
//! [`Postings`] between requests and assembles the request's index from them ([`Bm25::from_parts`]),
//! leaving out sentences a request drops as repeats. Scores are summed per passage in the query's
//! term order, as a passage-by-passage scan would sum them, so they are the same to the last bit.

use std::collections::HashMap;
use std::sync::Arc;

use super::{term_counts, TermCounts};

/// The terms of some passages, inverted: for each term, the passages holding it and how often.
pub struct Postings {
    by_term: HashMap<String, Vec<(u32, u32)>>,
    /// Each passage's number of terms.
    lens: Vec<u32>,
}

impl Postings {
    /// The postings of passages given by their [`term_counts`], numbered in order.
    pub fn new<'a>(docs: impl IntoIterator<Item = &'a TermCounts>) -> Self {
        let mut by_term: HashMap<String, Vec<(u32, u32)>> = HashMap::new();
        let mut lens = Vec::new();
        for (i, d) in docs.into_iter().enumerate() {
            for (t, n) in d {
                by_term.entry(t.clone()).or_default().push((i as u32, *n));
            }
            lens.push(d.values().sum());
        }
        Postings { by_term, lens }
    }

    /// Number of passages.
    pub fn len(&self) -> usize {
        self.lens.len()
    }

    /// True when there are no passages.
    pub fn is_empty(&self) -> bool {
        self.lens.is_empty()
    }

    /// Bytes (roughly) the postings hold: for a memo's weight.
    pub fn weight(&self) -> usize {
        let postings: usize = self.by_term.values().map(Vec::len).sum();
        let terms: usize = self.by_term.keys().map(|t| t.len() + 48).sum();
        8 * postings + terms + 4 * self.lens.len()
    }
}

/// One part of an index: its postings, and where each of its passages lands in the index (`None`:
/// left out).
struct Part {
    postings: Arc<Postings>,
    place: Vec<Option<u32>>,
}

/// Okapi BM25 over a fixed set of passages.
pub struct Bm25 {
    parts: Vec<Part>,
    lens: Vec<f64>,
    avg_len: f64,
}

impl Bm25 {
    const K1: f64 = 1.2;
    const B: f64 = 0.75;

    /// Indexes the passages in order; scores come back in the same order.
    pub fn new<S: AsRef<str>>(passages: &[S]) -> Self {
        let counts: Vec<TermCounts> = passages.iter().map(|p| term_counts(p.as_ref())).collect();
        let postings = Arc::new(Postings::new(&counts));
        let place = (0..postings.len() as u32).map(Some).collect();
        Self::from_parts(vec![(postings, place)])
    }

    /// Indexes the passages of several parts: `place[i]` is where a part's passage `i` lands in the
    /// index, or `None` to leave it out. The places taken must be `0..n`, each once.
    pub fn from_parts(parts: Vec<(Arc<Postings>, Vec<Option<u32>>)>) -> Self {
        let n = parts
            .iter()
            .map(|(_, place)| place.iter().flatten().count())
            .sum();
        let mut lens = vec![0.0; n];
        for (postings, place) in &parts {
            for (i, at) in place.iter().enumerate() {
                if let (Some(at), Some(len)) = (at, postings.lens.get(i)) {
                    if let Some(slot) = lens.get_mut(*at as usize) {
                        *slot = f64::from(*len);
                    }
                }
            }
        }
        let avg_len = if lens.is_empty() {
            1.0
        } else {
            (lens.iter().sum::<f64>() / lens.len() as f64).max(1.0)
        };
        let parts = parts
            .into_iter()
            .map(|(postings, place)| Part { postings, place })
            .collect();
        Bm25 {
            parts,
            lens,
            avg_len,
        }
    }

    /// Number of indexed passages.
    pub fn len(&self) -> usize {
        self.lens.len()
    }

    /// True when nothing was indexed.
    pub fn is_empty(&self) -> bool {
        self.lens.is_empty()
    }

    /// The passages holding `term`, with how often.
    fn hits(&self, term: &str) -> Vec<(usize, f64)> {
        let mut out = Vec::new();
        for part in &self.parts {
            let Some(list) = part.postings.by_term.get(term) else {
                continue;
            };
            for &(i, n) in list {
                if let Some(Some(at)) = part.place.get(i as usize) {
                    out.push((*at as usize, f64::from(n)));
                }
            }
        }
        out
    }

    fn idf(&self, df: usize) -> f64 {
        let n = self.len() as f64;
        let df = df as f64;
        ((n - df + 0.5) / (df + 0.5) + 1.0).ln()
    }

    /// BM25 score of every passage for the query.
    pub fn scores(&self, query: &str) -> Vec<f64> {
        let mut scores = vec![0.0; self.len()];
        for t in term_counts(query).keys() {
            let hits = self.hits(t);
            if hits.is_empty() {
                continue;
            }
            let idf = self.idf(hits.len());
            for (d, f) in hits {
                let norm = Self::K1 * (1.0 - Self::B + Self::B * self.lens[d] / self.avg_len);
                scores[d] += idf * f * (Self::K1 + 1.0) / (f + norm);
            }
        }
        scores
    }

    /// Each passage's share of the query's IDF mass, in [0, 1]: how completely the passage speaks to
    /// the query, independent of passage length. Drives yes/no and numeric answers.
    fn coverages(&self, query: &str) -> Vec<f64> {
        let mut hit = vec![0.0; self.len()];
        let mut total = 0.0;
        for t in term_counts(query).keys() {
            let hits = self.hits(t);
            let idf = self.idf(hits.len());
            total += idf;
            for (d, _) in hits {
                hit[d] += idf;
            }
        }
        if total <= 0.0 {
            return vec![0.0; self.len()];
        }
        hit.into_iter().map(|h| h / total).collect()
    }

    /// How completely one passage covers the query (see [`max_coverage`](Self::max_coverage)).
    pub fn coverage(&self, query: &str, passage: usize) -> f64 {
        self.coverages(query).get(passage).copied().unwrap_or(0.0)
    }

    /// The best share of the query's IDF mass any one passage covers, in [0, 1] (0 with no passages).
    pub fn max_coverage(&self, query: &str) -> f64 {
        self.coverages(query).into_iter().fold(0.0, f64::max)
    }

    /// For every passage, how many of `terms` (counted with repeats) it holds.
    pub fn matches(&self, terms: &[String]) -> Vec<u32> {
        let mut out = vec![0; self.len()];
        for t in terms {
            for (d, _) in self.hits(t) {
                out[d] += 1;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bm25_ranks_the_matching_passage_first() {
        let b = Bm25::new(&[
            "The cook baked bread.",
            "The gardener found the poison bottle.",
            "Rain fell.",
        ]);
        let s = b.scores("Who found the poison?");
        assert!(s[1] > s[0] && s[1] > s[2]);
        assert!(b.coverage("poison bottle", 1) > 0.99);
        assert_eq!(b.coverage("poison bottle", 2), 0.0);
        assert_eq!(b.matches(&["poison".into(), "rain".into()]), vec![0, 1, 1]);
    }

    /// BM25 as a scan of every passage computes it: the inverted index must give the same bits.
    fn scan(passages: &[&str], query: &str) -> (Vec<f64>, Vec<f64>) {
        let docs: Vec<TermCounts> = passages.iter().map(|p| term_counts(p)).collect();
        let n = docs.len() as f64;
        let lens: Vec<f64> = docs
            .iter()
            .map(|d| d.values().sum::<u32>() as f64)
            .collect();
        let avg = (lens.iter().sum::<f64>() / n).max(1.0);
        let idf = |t: &str| {
            let df = docs.iter().filter(|d| d.contains_key(t)).count() as f64;
            ((n - df + 0.5) / (df + 0.5) + 1.0).ln()
        };
        let q = term_counts(query);
        let scores = docs
            .iter()
            .zip(&lens)
            .map(|(d, len)| {
                q.keys()
                    .map(|t| {
                        let f = *d.get(t).unwrap_or(&0) as f64;
                        if f == 0.0 {
                            return 0.0;
                        }
                        let norm = Bm25::K1 * (1.0 - Bm25::B + Bm25::B * len / avg);
                        idf(t) * f * (Bm25::K1 + 1.0) / (f + norm)
                    })
                    .sum()
            })
            .collect();
        let total: f64 = q.keys().map(|t| idf(t)).sum();
        let cover = docs
            .iter()
            .map(|d| {
                let hit: f64 = q
                    .keys()
                    .filter(|t| d.contains_key(*t))
                    .map(|t| idf(t))
                    .sum();
                hit / total
            })
            .collect();
        (scores, cover)
    }

    #[test]
    fn parts_with_passages_left_out_score_as_a_scan_of_the_passages_kept() {
        let a = [
            "Ada saw the lantern at nine near the mill.",
            "The lantern was lit; the lantern was blue.",
            "Ben left the mill at ten.",
        ];
        let b = [
            "Ben left the mill at ten.",
            "Rain fell on the lane.",
            "Nobody saw Ada.",
        ];
        let counts = |xs: &[&str]| xs.iter().map(|x| term_counts(x)).collect::<Vec<_>>();
        let pa = Arc::new(Postings::new(&counts(&a)));
        let pb = Arc::new(Postings::new(&counts(&b)));
        // The second part's first passage repeats the first part's last: left out.
        let index = Bm25::from_parts(vec![
            (pa, vec![Some(0), Some(1), Some(2)]),
            (pb, vec![None, Some(3), Some(4)]),
        ]);
        let kept = [a[0], a[1], a[2], b[1], b[2]];
        for query in [
            "Who saw the lantern at the mill?",
            "rain lane ten",
            "the of",
            "Ada",
        ] {
            let (scores, cover) = scan(&kept, query);
            assert_eq!(index.scores(query), scores, "{query}");
            let from_scan: Vec<f64> = (0..kept.len()).map(|i| index.coverage(query, i)).collect();
            if cover.iter().all(|c| c.is_finite()) {
                assert_eq!(from_scan, cover, "{query}");
            }
        }
    }
}
