//! The largest sizes a scenario may ask for, so that no file can make `derive` allocate without
//! bound (rule `sizes`).

/// Ranks, and the data-parallel size.
pub const MAX_RANKS: usize = 1 << 16;
/// Microbatches per step.
pub const MAX_MICROBATCHES: usize = 1 << 20;
/// Layers after `count` expansion.
pub const MAX_LAYERS: usize = 1 << 20;
/// (region, rank, microbatch) slots of the order graph.
pub const MAX_SLOTS: usize = 1 << 26;
