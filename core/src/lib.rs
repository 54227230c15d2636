//! `mpipe`: the Mpipe schedule algebra.
//!
//! `derive(cut, schedule, model) → (placement, collectives, order)` (Mpipe paper §4.1), with the
//! scenario file format it reads, the validity rules and normal form, and the order graph.
//! Pure and deterministic: no threads, no clock, no global state; I/O only through `impl Read`
//! and `impl Write` at the edges.

pub mod adjacency;
pub mod budget;
pub mod collectives;
pub mod cost;
pub mod derive;
pub mod edit;
pub mod event;
pub mod explain;
pub mod finite;
pub mod io;
pub mod json_locate;
pub mod maxplus;
pub mod memory;
pub mod metrics;
pub mod model;
pub mod order;
pub mod owner;
pub mod owner_policy;
pub mod palette;
pub mod plan;
pub mod report;
pub mod scenario;
pub mod scene;
pub mod search;
pub mod sim_report;
pub mod simulate;
pub mod simulation;
pub mod skeleton;
pub mod slab;
pub mod svg;
pub mod trace;
pub mod validity;
pub mod wavefront;
pub mod workload;

pub use derive::{Derivation, DeriveError, derive};
pub use scenario::{Scenario, ScenarioError};
