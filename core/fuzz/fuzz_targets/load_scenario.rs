//! Any bytes given to the scenario loader give a scenario or an error, never a panic; a scenario
//! that loads goes through validation and derivation, and a small one through the simulation,
//! the timeline scene, teaching explanations and the SVG, without panicking either.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = mpipe::scenario::text_from_bytes(data.to_vec(), "fuzz.json") else {
        return;
    };
    let Ok(scenario) = mpipe::Scenario::from_json_str(&text, "fuzz.json") else {
        return;
    };
    // A valid scenario at the memory rule's edge (tens of millions of events, gigabytes) is
    // derived in seconds by design, not by the thousand a second: keep each input fast.
    if mpipe::algebra::budget::estimate(&scenario).events > 2_000_000 {
        return;
    }
    // Errors must place themselves in the text.
    let derived = mpipe::derive(&scenario);
    if let Err(e) = &derived {
        let _ = e.locate(&text, "fuzz.json").to_string();
        return;
    }
    // Keep each input fast: simulate only what is small.
    if mpipe::algebra::budget::estimate(&scenario).events > 100_000 {
        return;
    }
    let Ok(sim) = mpipe::tune::pipeline::simulate_scenario(&scenario, Default::default()) else {
        return;
    };
    assert!(sim.makespan_s.is_finite(), "a valid scenario gave a makespan of {}", sim.makespan_s);
    let scene = mpipe::view::scene::Scene::new(&sim);
    for t in [0.0, sim.makespan_s / 2.0, sim.makespan_s] {
        for r in mpipe::view::explain::at_time(&sim, &scene, t) {
            let _ = r.sentence();
        }
    }
    let _ = mpipe::report::svg::render(&scenario.name, &sim);
    let _ = mpipe::report::simulate::text(&scenario.name, &sim);
});
