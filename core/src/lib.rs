//! `mpipe`: the Mpipe schedule algebra.
//!
//! `derive(cut, schedule, model) → (placement, collectives, order)` (Mpipe paper §4.1), with the
//! scenario file format it reads, the validity rules and normal form, the order graph, the
//! simulator and the profiler-trace reader. Pure and deterministic: no threads, no clock, no
//! global state; I/O only through `impl Read` and `impl Write`. The one exception is
//! [`files`], the binaries' edge to the file system, compiled only with the `files` feature.
//!
//! Each concept is one folder, and the folders form a stack of floors — a module imports only
//! from floors below its own (`core/tests/architecture.rs` checks every path):
//!
//! 0. [`vocab`]: typed ids, phases and op sets, layouts, roles, comm kinds, the action
//!    notation, the units and their formatters, the limits.
//! 1. [`workload`] (per-microbatch factors, GARS) and [`schedules`] (the trait, the registry,
//!    one file per schedule).
//! 2. [`scenario`]: the document — file format, spec types, hardware and its cost functions,
//!    edits, reading the pipeline CSV.
//! 3. [`algebra`]: the checked meaning — model, placement, gates, collectives, plan, validity.
//! 4. [`graph`]: events and edges, build, composition policies, hand orders, deadlock, logical
//!    time, and `derive`.
//! 5. [`sim`]: cost, engine, metrics, memory, the encoder-free run, (max,+).
//! 6. [`tune`]: the pipeline scenario → derivation → tuned owners → simulation, and the searches.
//! 7. [`trace`] (profiler traces) and [`view`] (what a painter draws: timings, scene,
//!    explanations, search).
//! 8. [`report`]: JSON, text, SVG, table and CSV writers.
//! 9. [`files`] and the CLI: the edges.

#![forbid(unsafe_code)] // the workspace denies it; only the `mpipe` CLI's allocator module may allow it

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
pub mod view;
pub mod vocab;
pub mod workload;

pub use graph::derive::{Derivation, DeriveError, derive};
pub use scenario::{Scenario, ScenarioError};
pub use tune::pipeline::simulate_scenario;
