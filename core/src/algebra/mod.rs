//! The algebra of the Mpipe paper (§4), checked: the model expanded from the scenario's layers,
//! its cut into regions with each region's skeleton, layout, slabs and owners, the placement,
//! the validity rules and their normal form (wrapping each schedule's own rules), Lemma 1's gates,
//! the seam collectives, the memory budget and the finiteness of every figure — everything
//! `derive` ([`crate::graph::derive`]) needs to build the order.

pub mod budget;
pub mod collectives;
pub mod finite;
pub mod gates;
pub mod model;
pub mod placement;
pub mod plan;
pub mod validity;
pub mod width;
