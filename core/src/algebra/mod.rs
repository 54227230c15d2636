//! The algebra of the Mpipe paper (§4): the model, its cut into regions, each region's skeleton
//! and layout, slabs and owner maps, the validity rules and their normal form, Lemma 1's gates
//! and the seam collectives, and `derive`, which turns a valid scenario into placement,
//! collectives and order.

pub mod budget;
pub mod collectives;
pub mod derive;
pub mod finite;
pub mod gates;
pub mod model;
pub mod owner;
pub mod placement;
pub mod plan;
pub mod slab;
pub mod validity;
