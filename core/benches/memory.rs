//! Peak heap bytes of one derive + simulate per case, and bytes per event (figures recorded in
//! the README), counted by `peak_alloc`'s allocator: `cargo bench -p mpipe --bench memory`.

mod common;

use common::{Fold, fold, run, scenario};
use mpipe::Scenario;
use peak_alloc::PeakAlloc;

#[global_allocator]
static PEAK: PeakAlloc = PeakAlloc;

fn report_memory(label: &str, s: &Scenario) {
    let before = PEAK.current_usage();
    PEAK.reset_peak_usage();
    let events = run(s);
    let peak = PEAK.peak_usage().saturating_sub(before);
    eprintln!(
        "{label}: {events} events, peak heap {:.1} MB, {:.0} bytes/event",
        peak as f64 / 1e6,
        peak as f64 / events as f64
    );
}

fn main() {
    // `cargo bench` passes flags (`--bench`); there is nothing to select.
    report_memory("transpose+1f1b P=8 M=64", &scenario(8, 64, 1, true));
    report_memory("interleaved P=64 M=1024 v=4", &scenario(64, 1024, 4, false));
    for kind in [Fold::Uniform, Fold::Uneven, Fold::SlowLinks] {
        report_memory(
            &format!("1f1b on the V fold, {kind:?}, P=64 M=1024"),
            &fold(64, 1024, mpipe::schedules::ONE_F_ONE_B, kind),
        );
    }
}
