//! `mpipe fit-memory`: a scenario over the device's capacity fitted under it by activation
//! offload and full recomputation per stage, with the time it costs — or, when nothing fits, the
//! smallest peak reachable named.

use crate::input::{InputError, SimArgs, read_scenario, refuse_to_overwrite};
use crate::output::{emit, emit_json};
use mpipe::tune::fit_memory::{FitError, FitPoint, Means, MemoryFit, fit_memory_with};
use mpipe::vocab::units::{bytes, secs};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    pub scenario: PathBuf,
    /// The capacity to fit under, in bytes (default: the scenario's `hardware.memory_bytes`).
    #[arg(long, value_name = "BYTES")]
    pub cap: Option<f64>,
    /// Print the fit as one JSON object (the fitted scenario included).
    #[arg(long)]
    pub json: bool,
    /// Which choices the fit may make: `both` (the cheaper per stage), `offload` or `recompute`.
    #[arg(long, value_name = "MEANS", default_value = "both", value_parser = ["both", "offload", "recompute"])]
    pub with: String,
    /// Write the fitted scenario to this file (nothing is written when nothing fits).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub sim: SimArgs,
}

fn point_line(what: &str, p: &FitPoint, cap: f64) -> String {
    let peaks: Vec<String> = p
        .peaks_bytes
        .iter()
        .map(|&b| format!("{}{}", bytes(b), if b > cap { "!" } else { "" }))
        .collect();
    format!(
        "{what:<8} {:>11}   {}\n",
        secs(p.makespan_s),
        peaks.join("  ")
    )
}

fn text(fit: &MemoryFit, source: &str) -> String {
    let cap = fit.cap_bytes;
    let mut out = format!(
        "fit under {} ({source}); {} simulated\n{:<8} {:>11}   peak per rank (! over the cap)\n",
        bytes(cap),
        fit.simulations,
        "",
        "step"
    );
    out.push_str(&point_line("given", &fit.before, cap));
    if let Some(after) = &fit.after {
        out.push_str(&point_line("fitted", after, cap));
    }
    out.push_str("\nstage layers  region  ranks        choice\n");
    for (i, s) in fit.stages.iter().enumerate() {
        let ranks: Vec<String> = s.ranks.iter().map(usize::to_string).collect();
        out.push_str(&format!(
            "{i:>5} {:>6}  {:>6}  {:<11}  {}\n",
            format!("{}..{}", s.layers.start, s.layers.end),
            s.region,
            ranks.join(","),
            s.choice.label()
        ));
    }
    match (&fit.after, fit.smallest_peak) {
        (Some(after), _) if after == &fit.before => {
            out.push_str("\nit fits as given: every rank's peak is within the cap\n")
        }
        (Some(after), _) => {
            let added = after.makespan_s - fit.before.makespan_s;
            let share = if fit.before.makespan_s > 0.0 {
                100.0 * added / fit.before.makespan_s
            } else {
                0.0
            };
            out.push_str(&format!(
                "\nfits; the step takes {}{} ({share:+.1} %)\n",
                if added >= 0.0 { "+" } else { "" },
                secs(added)
            ));
        }
        (None, Some((rank, peak))) => out.push_str(&format!(
            "\nnothing {}fits: rank {rank} goes no lower than {} ({} over the cap)\n",
            if fit.budget_reached {
                "the search reached within its budget "
            } else {
                ""
            },
            bytes(peak),
            bytes(peak - cap)
        )),
        (None, None) => {}
    }
    out
}

pub fn run(args: Args) -> anyhow::Result<()> {
    if let Some(out) = &args.out {
        refuse_to_overwrite(out, &[args.scenario.as_path()])?;
    }
    let (s, text_in) = read_scenario(&args.scenario)?;
    let file = args.scenario.display().to_string();
    let means = match args.with.as_str() {
        "offload" => Means::Offload,
        "recompute" => Means::Recompute,
        _ => Means::Both,
    };
    let fit =
        fit_memory_with(&s, args.cap, means, args.sim.options(), &mut |_| true).map_err(|e| {
            InputError(match e {
                FitError::Derive(d) => d.locate(&text_in, &file).to_string(),
                other => format!("{file}: {other}"),
            })
        })?;
    if let (Some(out), Some(fitted)) = (&args.out, &fit.scenario) {
        crate::input::write_output(out, fitted.to_json_string().as_bytes())?;
    }
    if args.json {
        emit_json(&fit)
    } else {
        let source = if args.cap.is_some() {
            "--cap"
        } else {
            "hardware.memory_bytes"
        };
        let mut t = text(&fit, source);
        match (&args.out, &fit.scenario) {
            (Some(out), Some(_)) => {
                t.push_str(&format!("fitted scenario written to {}\n", out.display()))
            }
            (Some(_), None) => t.push_str("nothing written: nothing fits\n"),
            _ => {}
        }
        emit(&t)
    }
}
