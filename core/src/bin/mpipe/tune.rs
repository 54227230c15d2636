//! OctoPipe's bubble-aware tuner: partitioning, placement and scheduling tuned in turn, every
//! iteration printed, the tuned scenario written.

use crate::input::{InputError, SimArgs, read_scenario, refuse_to_overwrite};
use crate::output::{emit, emit_json};
use mpipe::tune::octopipe::{TuneOptions, Tuned, tune};
use mpipe::vocab::units::{bytes, secs};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    pub scenario: PathBuf,
    /// Iterations at most.
    #[arg(long, default_value_t = TuneOptions::default().budget)]
    pub budget: usize,
    /// Peak memory a rank may reach, bytes (no pipeline above it is taken).
    #[arg(long, value_name = "BYTES")]
    pub memory_cap: Option<f64>,
    /// The scheduling phase tries OctoPipe's own move only (the split-backward sibling), as the
    /// paper's Algorithm 1, not every other schedule of the registry.
    #[arg(long)]
    pub octopipe_only: bool,
    /// Print the search as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Where the tuned scenario goes.
    #[arg(long, value_name = "TUNED.json")]
    pub out: PathBuf,
    #[command(flatten)]
    pub sim: SimArgs,
}

/// The most iterations one search may take.
const MAX_BUDGET: usize = 100_000;

fn text(t: &Tuned) -> String {
    let mut out = String::from("iter  phase         taken  step time   peak memory  change\n");
    for it in &t.iterations {
        out.push_str(&format!(
            "{:>4}  {:<12}  {:<5}  {:>10}  {:>11}  {}\n",
            it.index,
            it.phase.name(),
            if it.taken { "yes" } else { "no" },
            secs(it.makespan_s),
            bytes(it.peak_bytes),
            it.change
        ));
    }
    out.push_str(&format!(
        "start {} (bubble {:.1} %, peak {}) → tuned {} (bubble {:.1} %, peak {}): {:.1} % shorter{}\n",
        secs(t.start_makespan_s),
        100.0 * t.start_bubble_fraction,
        bytes(t.start_peak_bytes),
        secs(t.makespan_s),
        100.0 * t.bubble_fraction,
        bytes(t.peak_bytes),
        100.0 * (1.0 - t.makespan_s / t.start_makespan_s.max(f64::MIN_POSITIVE)),
        if t.stopped { " (stopped)" } else { "" }
    ));
    out
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let Args {
        scenario,
        budget,
        memory_cap,
        octopipe_only,
        json,
        out,
        sim,
    } = args;
    if budget == 0 || budget > MAX_BUDGET {
        return Err(InputError(format!(
            "--budget: {budget} is not between 1 and {MAX_BUDGET}"
        ))
        .into());
    }
    if let Some(cap) = memory_cap
        && !(cap.is_finite() && cap > 0.0)
    {
        return Err(InputError(format!(
            "--memory-cap: {cap} is not a positive number of bytes"
        ))
        .into());
    }
    refuse_to_overwrite(&out, &[scenario.as_path()])?;
    let (s, text_in) = read_scenario(&scenario)?;
    crate::input::memory_for(&s, &text_in, &scenario, mpipe::algebra::budget::Use::Tune)?;
    let file = scenario.display().to_string();
    let options = TuneOptions {
        budget,
        memory_cap,
        sim: sim.options(),
        every_schedule: !octopipe_only,
        ..TuneOptions::default()
    };
    let tuned = tune(&s, options, &mut |_| true)
        .map_err(|e| InputError(e.locate(&text_in, &file).to_string()))?;
    crate::input::write_output(&out, tuned.scenario.to_json_string().as_bytes())?;
    if json {
        emit_json(&tuned)?;
    } else {
        emit(&text(&tuned))?;
    }
    Ok(())
}
