//! `ByLayer` slabs: a Sharded region cut into one contiguous slab per rank.

use std::ops::Range;

/// Balanced per-rank layer counts: every rank gets `⌊n/P⌋`, the first `n mod P` ranks one more.
pub fn balanced_counts(layers: usize, ranks: usize) -> Vec<usize> {
    let ranks = ranks.max(1);
    (0..ranks)
        .map(|r| layers / ranks + usize::from(r < layers % ranks))
        .collect()
}

/// Contiguous slabs starting at layer `start`, one per entry of `counts`.
pub fn slabs_from_counts(start: usize, counts: &[usize]) -> Vec<Range<usize>> {
    let mut at = start;
    counts
        .iter()
        .map(|&n| {
            let slab = at..at + n;
            at += n;
            slab
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn balanced_gives_extra_layers_to_first_ranks() {
        assert_eq!(balanced_counts(8, 4), [2, 2, 2, 2]);
        assert_eq!(balanced_counts(10, 4), [3, 3, 2, 2]);
        assert_eq!(slabs_from_counts(4, &[3, 0, 2]), [4..7, 7..7, 7..9]);
    }
}
