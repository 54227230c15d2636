//! Any bytes given to the trace importer give a trace or an error, never a panic; a trace that
//! imports goes through schedule recovery, clock alignment and export without panicking either.

#![no_main]

use libfuzzer_sys::fuzz_target;
use mpipe::trace::{RuleSet, align, export, import_bytes, recover};

fuzz_target!(|data: &[u8]| {
    let Ok(trace) = import_bytes(data, "fuzz.json") else {
        return;
    };
    let Ok(rules) = RuleSet::default().compile() else {
        return;
    };
    let measurement = recover(std::slice::from_ref(&trace), &rules, &[]);
    let alignment = align(&measurement);
    let mut out = Vec::new();
    let _ = export::write_measurement(&measurement, &alignment, &mut out);
});
