//! Any bytes given as a scenario's pipeline CSV (`"orders_csv"`, `--orders-csv`) give orders or an
//! error placed at a line and column, never a panic; orders that read are followed by the
//! derivation (refused by name, or derived), and a derived schedule simulates to a finite
//! makespan. The scenario is fixed (4 ranks, 8 microbatches, ⟨1f1b⟩ and, on the first byte's
//! parity, a split-backward ⟨zb1p⟩), so the CSV is all the fuzzer varies.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (skeleton, csv) = match data.split_first() {
        Some((first, rest)) if first % 2 == 1 => ("zb1p", rest),
        Some((_, rest)) => ("1f1b", rest),
        None => return,
    };
    let text = format!(
        r#"{{"format": "mpipe-scenario/1", "model": {{"layers": [{{"name": "l", "count": 4, "fwd_s": 1}}]}}, "schedule": ["{skeleton}"], "ranks": 4, "microbatches": 8}}"#
    );
    let Ok(mut scenario) = mpipe::Scenario::from_json_str(&text, "fuzz.json") else {
        return;
    };
    let Ok(csv) = std::str::from_utf8(csv) else {
        return;
    };
    let limits = mpipe::algebra::budget::csv_limits(&scenario);
    let read = match mpipe::scenario::orders_csv::read(csv, "fuzz.csv", limits) {
        Ok(read) => read,
        Err(e) => {
            let message = e.to_string();
            assert!(message.starts_with("fuzz.csv:"), "{message}");
            // An echoed cell is cut: no error line is longer than its own position and message.
            assert!(message.len() < 1000, "an error of {} bytes", message.len());
            return;
        }
    };
    scenario.orders_from_csv = Some(read.orders.clone());
    match mpipe::derive(&scenario) {
        Err(e) => {
            // An error about the orders is placed at the CSV's cell or row.
            let _ = read.locate("fuzz.csv", &e.field(), &e.to_string());
        }
        Ok(_) => {
            let sim = mpipe::tune::pipeline::simulate_scenario(&scenario, Default::default());
            if let Ok(sim) = sim {
                assert!(sim.makespan_s.is_finite(), "makespan {}", sim.makespan_s);
            }
        }
    }
});
