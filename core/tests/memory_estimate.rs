//! The memory estimate `validity` checks before anything is allocated, against the peak heap
//! measured around derive + simulate on a few sizes.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // tests fail by panicking

use peak_alloc::PeakAlloc;

#[global_allocator]
static PEAK: PeakAlloc = PeakAlloc;

fn scenario(text: &str) -> mpipe::Scenario {
    mpipe::Scenario::from_json_str(text, "t.json").unwrap()
}

#[test]
fn the_estimate_bounds_the_measured_peak() {
    let cases = [
        r#"{"format": "mpipe-scenario/1", "model": {"layers": [{"name": "l", "count": 64, "fwd_s": 1}]}, "schedule": ["1f1b"], "ranks": 16, "microbatches": 512}"#,
        r#"{"format": "mpipe-scenario/1", "model": {"layers": [{"name": "a", "count": 32, "fwd_s": 1}, {"name": "b", "count": 32, "fwd_s": 1}]}, "cut": [32], "schedule": ["1f1b", "1f1b"], "ranks": 32, "microbatches": 1024}"#,
        r#"{"format": "mpipe-scenario/1", "model": {"layers": [{"name": "vit", "role": "encoder", "count": 4, "fwd_s": 0.5}, {"name": "l", "count": 64, "fwd_s": 1}]}, "cut": [4], "schedule": ["transpose", "1f1b"], "ranks": 64, "microbatches": 2048}"#,
        r#"{"format": "mpipe-scenario/1", "model": {"layers": [{"name": "vit", "role": "encoder", "count": 4, "fwd_s": 0.5}, {"name": "l", "count": 64, "fwd_s": 1}]}, "cut": [4], "schedule": ["transpose", "1f1b"], "ranks": 64, "microbatches": 2048, "owner": "optimized", "owner_budget": 4}"#,
        r#"{"format": "mpipe-scenario/1", "model": {"layers": [{"name": "a", "count": 64, "fwd_s": 1}, {"name": "b", "count": 64, "fwd_s": 1}, {"name": "c", "count": 64, "fwd_s": 1}, {"name": "d", "count": 64, "fwd_s": 1}]}, "cut": [64, 128, 192], "schedule": ["1f1b", "1f1b", "1f1b", "1f1b"], "ranks": 64, "microbatches": 1024}"#,
    ];
    for text in cases {
        let s = scenario(text);
        let estimate = mpipe::algebra::budget::estimate(&s);
        PEAK.reset_peak_usage();
        let before = PEAK.current_usage();
        let sim = mpipe::tune::pipeline::simulate_scenario(&s, Default::default()).unwrap();
        let peak = PEAK.peak_usage().saturating_sub(before) as f64;
        let nodes = sim.derivation.order.graph.node_count();
        eprintln!(
            "nodes {nodes} (estimated {}), peak {:.1} MB ({:.0} B/node), estimate {:.1} MB",
            estimate.events,
            peak / 1e6,
            peak / nodes as f64,
            estimate.bytes / 1e6
        );
        assert!(
            estimate.events >= nodes as u64,
            "{} < {nodes}",
            estimate.events
        );
        assert!(estimate.bytes >= peak, "{} < {peak}", estimate.bytes);
        assert!(
            estimate.bytes <= 3.0 * peak,
            "{} > 3 × {peak}",
            estimate.bytes
        );
    }
}
