//! JanusPipe's WaveK sweep: makespan, throughput against `k = P` and peak memory for each unit
//! size `k`, the ones beyond the device's capacity marked, the best one named.

use crate::input::{InputError, SimArgs, read_scenario};
use crate::output::{emit, emit_json};
use mpipe::tune::wave_sweep::{WaveSweep, sweep};
use mpipe::vocab::units::{bytes, secs};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    pub scenario: PathBuf,
    /// The unit sizes to try: `A..B` (both ends included, as `A..=B`) or one `k`.
    #[arg(long, value_name = "A..B", default_value = "2..12")]
    pub wave_k: String,
    /// Print the sweep as one JSON object.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub sim: SimArgs,
}

/// `A..B`, `A..=B` or `A`, both ends included.
fn parse_range(text: &str) -> Result<(usize, usize), InputError> {
    let bad = || {
        InputError(format!(
            "--wave-k: `{text}` is not a range of unit sizes; write A..B (both included) or one k, e.g. 2..12"
        ))
    };
    let number = |s: &str| s.trim().parse::<usize>().map_err(|_| bad());
    let (a, b) = match text.split_once("..") {
        Some((a, b)) => (number(a)?, number(b.strip_prefix('=').unwrap_or(b))?),
        None => {
            let k = number(text)?;
            (k, k)
        }
    };
    if a > b {
        return Err(bad());
    }
    Ok((a, b))
}

fn text(w: &WaveSweep) -> String {
    let mut out = format!(
        "WaveK sweep, M = {} (throughput against k = {}{})\n   k   step time  throughput  peak memory  note\n",
        w.microbatches,
        w.default_k,
        w.capacity_bytes
            .map_or(String::new(), |c| format!("; device capacity {}", bytes(c)))
    );
    for p in &w.points {
        let mut notes = Vec::new();
        if p.trailing > 0 {
            notes.push(format!("k ∤ M: trailing wave of {}", p.trailing));
        }
        match p.fitted.as_ref() {
            Some(f) => notes.push(
                mpipe::tune::fit_memory::capacity_note(true, Some(f), p.makespan_s)
                    .trim()
                    .trim_start_matches('(')
                    .trim_end_matches(')')
                    .to_string(),
            ),
            None if p.over_capacity => notes.push("over capacity (OOM)".to_string()),
            None => {}
        }
        if Some(p.k) == w.best_k {
            notes.push("best".to_string());
        }
        out.push_str(&format!(
            "{:>4}  {:>10}  {:>10}  {:>11}  {}\n",
            p.k,
            secs(p.makespan_s),
            p.throughput_vs_default
                .map_or("–".to_string(), |t| format!("{t:.3}×")),
            bytes(p.peak_memory_bytes),
            notes.join(", ")
        ));
    }
    match w.best_k {
        Some(k) => out.push_str(&format!("best k within capacity: {k}\n")),
        None => out.push_str("no k fits the device's capacity\n"),
    }
    if let Some((k, t)) = w.best_fitted {
        out.push_str(&format!(
            "best k fitted under the capacity by recomputation or offload: {k} ({})\n",
            secs(t)
        ));
    }
    out
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let (first, last) = parse_range(&args.wave_k)?;
    let (s, text_in) = read_scenario(&args.scenario)?;
    let file = args.scenario.display().to_string();
    let result = sweep(&s, first..=last, args.sim.options(), &mut |_| true).map_err(|e| {
        InputError(match e {
            mpipe::tune::wave_sweep::SweepError::Derive(d) => d.locate(&text_in, &file).to_string(),
            other => format!("{file}: {other}"),
        })
    })?;
    let Some(w) = result else {
        return Ok(());
    };
    if args.json {
        emit_json(&w)
    } else {
        emit(&text(&w))
    }
}
