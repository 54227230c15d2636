//! The importer's fast event scanner and serde agree on every event the fast path takes.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = mpipe::trace::fast_path_agrees_with_serde(data) {
        panic!("{e}");
    }
});
