//! `mpipe`: the Mpipe schedule algebra.
//!
//! `derive(cut, schedule, model) → (placement, collectives, order)` (Mpipe paper §4.1), with the
//! scenario file format it reads, the validity rules and normal form, the order graph, the
//! simulator and the profiler-trace reader. Pure and deterministic: no threads, no clock, no
//! global state; I/O only through `impl Read` and `impl Write`. The one exception is
//! [`files`], the binaries' edge to the file system, compiled only with the `files` feature.
//!
//! Each concept is one folder: [`scenario`] (the file format, positions, edits), [`algebra`]
//! (model, cut, layout, placement, owner maps, gates, collectives, validity, `derive`),
//! [`graph`] (events and the order graph), [`schedules`] (the per-rank orders of each skeleton),
//! [`sim`] (cost, engine, metrics, memory, (max,+), the scene), [`tune`] (searches that call the
//! simulator), [`workload`], [`trace`] and [`report`].

pub mod algebra;
#[cfg(feature = "files")]
pub mod files;
pub mod graph;
pub mod report;
pub mod scenario;
pub mod schedules;
pub mod sim;
pub mod trace;
pub mod tune;
pub mod vocab;
pub mod workload;

pub use algebra::derive::{Derivation, DeriveError, derive};
pub use scenario::{Scenario, ScenarioError};
