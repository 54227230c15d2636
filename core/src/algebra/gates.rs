//! Lemma 1's trainability gates, from the trainable bits alone (Corollary 1: never from the
//! skeletons): computed once per plan, read by the collectives and the order graph.

use serde::Serialize;

/// Lemma 1's three trainability gates for one region.
#[derive(Serialize, Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gates {
    /// (ii) the region receives a gradient, i.e. runs any backward: some `Π_i`, `i ≤ j`, is
    /// trainable.
    pub runs_backward: bool,
    /// (i) the region sends its input gradient upstream: some `Π_i`, `i < j`, is trainable.
    pub sends_upstream: bool,
    /// (iii) the region reduces weight gradients: it is trainable itself.
    pub reduces: bool,
}

/// The gates of every region, from the trainable bits alone (Corollary 1: never from the
/// skeletons).
pub fn gates(trainable: &[bool]) -> Vec<Gates> {
    let mut any_before = false;
    trainable
        .iter()
        .map(|&t| {
            let g = Gates {
                runs_backward: any_before || t,
                sends_upstream: any_before,
                reduces: t,
            };
            any_before |= t;
            g
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lemma_one_gates() {
        let g = gates(&[false, true, false]);
        assert_eq!(
            g,
            [
                Gates {
                    runs_backward: false,
                    sends_upstream: false,
                    reduces: false
                },
                Gates {
                    runs_backward: true,
                    sends_upstream: false,
                    reduces: true
                },
                Gates {
                    runs_backward: true,
                    sends_upstream: true,
                    reduces: false
                },
            ]
        );
    }
}
