//! Which ratings a tournament's games tie together (the comparison graph's components).

use std::collections::BTreeSet;

use super::Tournament;

/// Which ratings the games tie together. A Bradley–Terry rating means something only against the
/// ratings it is linked to by games, directly or through others: two strengths in parts of the
/// comparison graph that no game joins are placed apart by the prior alone. With two models and no
/// self-play the per-side graph falls in two (A's culprit meets only B's civilians, B's culprit only
/// A's), so "A is the better culprit" would be read off the prior; the tables print only ratings
/// the games connect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Connected {
    /// Every model that met another model is linked to every other such model.
    pub(super) overall: bool,
    /// Every culprit strength and every civilians strength that played is linked to all the others.
    pub(super) sides: bool,
}

impl Connected {
    pub(super) fn of(t: &Tournament) -> Connected {
        let k = t.models.len();
        // Overall: a node per model, an edge per game between two models.
        let mut overall = Components::new(k);
        let mut in_overall = vec![false; k];
        // Per side: node i is model i's culprit strength, k + i its civilians strength.
        let mut sides = Components::new(2 * k);
        let mut in_sides = vec![false; 2 * k];
        for g in &t.games {
            if g.culprit != g.civilians {
                overall.join(g.culprit, g.civilians);
                in_overall[g.culprit] = true;
                in_overall[g.civilians] = true;
            }
            sides.join(g.culprit, k + g.civilians);
            in_sides[g.culprit] = true;
            in_sides[k + g.civilians] = true;
        }
        Connected {
            overall: overall.one(&in_overall),
            sides: sides.one(&in_sides),
        }
    }
}

/// Connected components of a small graph (union–find with path halving).
struct Components {
    parent: Vec<usize>,
}

impl Components {
    fn new(n: usize) -> Components {
        Components {
            parent: (0..n).collect(),
        }
    }

    fn root(&mut self, mut x: usize) -> usize {
        while self.parent[x] != x {
            self.parent[x] = self.parent[self.parent[x]];
            x = self.parent[x];
        }
        x
    }

    fn join(&mut self, a: usize, b: usize) {
        let (ra, rb) = (self.root(a), self.root(b));
        self.parent[ra] = rb;
    }

    /// Whether the nodes `present` marks all lie in one component.
    fn one(&mut self, present: &[bool]) -> bool {
        let nodes: Vec<usize> = (0..present.len()).filter(|&i| present[i]).collect();
        let roots: BTreeSet<usize> = nodes.into_iter().map(|i| self.root(i)).collect();
        roots.len() <= 1
    }
}
