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

/// Every recorded trace file under `tests/fixtures/traces` (`.json` or `.json.gz`), one sorted
/// list per folder: what the tests that read every fixture walk.
#[cfg(test)]
pub(crate) fn fixture_folders() -> Vec<Vec<std::path::PathBuf>> {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/traces");
    let mut folders = Vec::new();
    let mut dirs = vec![std::path::PathBuf::from(root)];
    while let Some(dir) = dirs.pop() {
        let mut files = Vec::new();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.display().to_string();
            if path.is_dir() {
                dirs.push(path);
            } else if name.ends_with(".json.gz") || name.ends_with(".json") {
                files.push(path);
            }
        }
        files.sort();
        folders.push(files);
    }
    folders
}
pub use chrome::{
    TraceError, import, import_bytes, import_slice_with, import_with, looks_like_trace,
};
pub use fast_event::check_agreement as fast_path_agrees_with_serde;
pub use json_stream::Limits;
pub use raw::{RawTrace, Span, SpanKind, Warning};
pub use recover::{Measurement, recover, recover_owned};
pub use rules::RuleSet;
