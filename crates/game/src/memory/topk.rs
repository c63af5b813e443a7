//! The `k` best of a stream of scored records, in one pass.

use std::cmp::Ordering;

/// A score that can be ranked: a total order, so NaN and ±0 have fixed places and a ranking never
/// depends on the order candidates arrive in.
pub trait Score: Copy {
    fn rank(&self, other: &Self) -> Ordering;
}

impl Score for f32 {
    fn rank(&self, other: &Self) -> Ordering {
        self.total_cmp(other)
    }
}

impl Score for f64 {
    fn rank(&self, other: &Self) -> Ordering {
        self.total_cmp(other)
    }
}

/// The `k` best `(record, score)` pairs seen so far, best first: higher score first, and on equal scores
/// the lower record id — the order exact search has always used, so ties fall the same way.
///
/// Why not score everything and select: with `k` = 8 of thousands, almost every candidate loses to the
/// current k-th at one comparison, so keeping a sorted list of `k` costs nothing measurable and needs no
/// buffer of all scores.
pub struct Best<S> {
    k: usize,
    items: Vec<(u32, S)>,
}

/// True when `a` ranks strictly before `b`.
fn before<S: Score>(a: &(u32, S), b: &(u32, S)) -> bool {
    match a.1.rank(&b.1) {
        Ordering::Greater => true,
        Ordering::Less => false,
        Ordering::Equal => a.0 < b.0,
    }
}

impl<S: Score> Best<S> {
    pub fn new(k: usize) -> Self {
        Best {
            k,
            items: Vec::with_capacity(k.min(1_024) + 1),
        }
    }

    /// Considers one record.
    #[inline(always)]
    pub fn offer(&mut self, id: u32, score: S) {
        let new = (id, score);
        if self.items.len() == self.k {
            match self.items.last() {
                Some(worst) if before(&new, worst) => {
                    self.items.pop();
                }
                _ => return,
            }
        }
        let at = self.items.partition_point(|e| !before(&new, e));
        self.items.insert(at, new);
    }

    /// The winners, best first.
    pub fn into_sorted(self) -> Vec<(u32, S)> {
        self.items
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_best_with_ties_to_the_lower_id() {
        let mut b = Best::new(3);
        for (id, s) in [
            (4, 0.5f32),
            (1, 0.9),
            (2, 0.5),
            (3, 0.1),
            (0, 0.5),
            (5, 0.9),
        ] {
            b.offer(id, s);
        }
        assert_eq!(b.into_sorted(), vec![(1, 0.9), (5, 0.9), (0, 0.5)]);
        let mut none = Best::new(0);
        none.offer(1, 1.0f64);
        assert!(none.into_sorted().is_empty());
    }

    #[test]
    fn matches_a_full_sort_in_any_arrival_order() {
        // Few distinct scores, so many ties; arrival orders from a fixed permutation walk.
        let scored: Vec<(u32, f32)> = (0..200u32)
            .map(|i| (i, ((i * 37) % 11) as f32 / 10.0))
            .collect();
        let mut want = scored.clone();
        want.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        for step in [1usize, 7, 13, 199] {
            let mut b = Best::new(8);
            for j in 0..scored.len() {
                let (id, s) = scored[(j * step) % scored.len()];
                b.offer(id, s);
            }
            assert_eq!(b.into_sorted(), want[..8].to_vec(), "step {step}");
        }
    }
}
