//! Real profiler traces (DESIGN §5): import Chrome Trace Event Format files, recover the schedule
//! events, align the ranks' clocks, compare with the prediction, calibrate, and export.

pub mod align;
mod builder;
pub mod calibrate;
pub mod chrome;
pub mod compare;
pub mod compute;
mod event_json;
pub mod export;
mod fast_event;
pub mod infer;
pub mod json_stream;
pub mod parallel;
pub mod rank;
pub mod raw;
pub mod recover;
pub mod report;
pub mod rules;
pub mod step;
pub mod timestamp;
pub mod whatif;

pub use align::{Alignment, align};
pub use chrome::{
    TraceError, import, import_bytes, import_slice_with, import_with, looks_like_trace,
};
pub use fast_event::check_agreement as fast_path_agrees_with_serde;
pub use json_stream::Limits;
pub use raw::{RawTrace, Span, Warning};
pub use recover::{Measurement, recover, recover_owned};
pub use rules::RuleSet;
