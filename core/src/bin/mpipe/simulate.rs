//! Simulate a scenario: makespan, bubbles, warmup windows, encoder spill, memory, critical path.

use crate::input::{InputError, SimArgs, simulate_file};
use crate::output::{emit, emit_json};
use mpipe::report::simulate::{self as sim_report, SimulateReport};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    pub file: PathBuf,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Leave the per-event timeline out of the JSON.
    #[arg(long)]
    pub no_events: bool,
    /// Also say what every rank does at this instant (seconds) and, when idle, why.
    #[arg(long, value_name = "SECONDS")]
    pub at: Option<f64>,
    #[command(flatten)]
    pub sim: SimArgs,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let Args {
        file,
        json,
        no_events,
        at,
        sim,
    } = args;
    if let Some(t) = at.filter(|t| !t.is_finite()) {
        return Err(InputError(format!("--at {t}: give a finite time in seconds")).into());
    }
    let options = sim.options();
    let (scenario, simulation) = simulate_file(&file, sim)?;
    // With a batch of graphs: both packings, before (sequential) and after (GARS).
    let packing = mpipe::tune::packing::compare_packings(&scenario, options)
        .map_err(|e| InputError(format!("{}: {e}", file.display())))?;
    // A calibrated scenario carries how its run varied: the expected step under it.
    let expected = scenario
        .jitter
        .as_ref()
        .and_then(|j| mpipe::sim::jitter::expected(&simulation, j, options, &mut |_| true));
    let scene = at.map(|_| mpipe::view::scene::Scene::new(&simulation));
    let states = at
        .zip(scene.as_ref())
        .map(|(t, scene)| (t, mpipe::view::explain::at_time(&simulation, scene, t)));
    if json {
        let mut report = SimulateReport::new(&scenario.name, &simulation, !no_events);
        report.at = states.map(|(t_s, ranks)| sim_report::AtReport { t_s, ranks });
        report.packing = packing;
        report.expected = expected;
        emit_json(&report)?;
    } else {
        let mut text = sim_report::text(&scenario.name, &simulation, expected.as_ref());
        if let Some(p) = &packing {
            text.push_str(&p.text());
        }
        if let Some((t, ranks)) = states {
            text.push_str(&format!("\nat {}:\n", mpipe::vocab::units::secs(t)));
            for r in ranks {
                text.push_str(&format!("  {}\n", r.sentence()));
            }
        }
        emit(&text)?;
    }
    Ok(())
}
