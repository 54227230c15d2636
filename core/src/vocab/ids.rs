//! Typed ids of the algebra's vocabulary: a region, a rank, a microbatch, a pipeline stage, a
//! chunk (a rank's `c`-th Sharded region). Each is a 32-bit index — a rank a 16-bit one, as
//! validity allows at most `MAX_RANKS` = 2^16 of them (rule `sizes`) — so an order graph's events
//! stay small (a million-event graph is memory-bound: an event is 20 bytes), and one kind of
//! index cannot be passed where another is meant. Validity bounds every other count far below
//! `u32::MAX` (rule `memory`); an index that does not fit saturates instead of wrapping.

use serde::Serialize;
use std::fmt;

macro_rules! id {
    ($(#[$doc:meta])* $name:ident) => {
        id!($(#[$doc])* $name: u32);
    };
    ($(#[$doc:meta])* $name:ident: $repr:ty) => {
        $(#[$doc])*
        #[derive(Serialize, Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
        #[serde(transparent)]
        pub struct $name($repr);

        impl $name {
            /// The id of index `i` (saturating at the largest the id holds).
            pub const fn new(i: usize) -> Self {
                if i > <$repr>::MAX as usize {
                    $name(<$repr>::MAX)
                } else {
                    $name(i as $repr)
                }
            }

            /// The index, for slices and arithmetic.
            pub const fn index(self) -> usize {
                self.0 as usize
            }
        }

        impl From<usize> for $name {
            fn from(i: usize) -> Self {
                $name::new(i)
            }
        }

        impl From<$name> for usize {
            fn from(id: $name) -> usize {
                id.index()
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }
    };
}

id!(
    /// A region of the cut, 1-based in model order (0: none).
    RegionId
);
id!(
    /// A rank (a device of the pipeline), 0-based: at most `MAX_RANKS` = 2^16 of them, so 16 bits.
    Rank: u16
);

// Raising the limit past what a rank id holds fails to build, rather than merging ranks into
// the last one.
const _: () = assert!(crate::vocab::limits::MAX_RANKS <= u16::MAX as usize + 1);
id!(
    /// A microbatch, 0-based.
    Mb
);
id!(
    /// A pipeline stage (PyTorch's stage index): where placement puts a region's slab.
    Stage
);
id!(
    /// A chunk: the `c`-th Sharded region of a rank's wavefront (a virtual stage), 0-based.
    Chunk
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_print_and_saturate() {
        assert_eq!(Stage::new(7).index(), 7);
        assert_eq!(Mb::from(3usize), Mb::new(3));
        assert_eq!(usize::from(Rank::new(2)), 2);
        assert_eq!(Chunk::new(1).to_string(), "1");
        assert_eq!(serde_json::to_string(&RegionId::new(4)).unwrap(), "4");
        assert_eq!(Mb::new(usize::MAX).index(), u32::MAX as usize);
        // Every rank validity allows has its own id.
        let last = crate::vocab::limits::MAX_RANKS - 1;
        assert_eq!(Rank::new(last).index(), last);
        assert_eq!(Rank::new(usize::MAX).index(), u16::MAX as usize);
    }
}
