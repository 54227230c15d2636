//! The per-rank orders of the skeletons: what each rank runs, in which order.

pub mod wavefront;
