//! `mpipe`: the headless command line of Mpipe Studio.

mod allocator;
mod compare;
mod compare_designs;
mod compare_trace;
mod derive;
mod export;
mod fit_memory;
mod input;
mod output;
mod render;
mod schedules;
mod share;
mod simulate;
mod sweep;
mod trace;
mod tune;
mod validate;

/// mimalloc keeps freed memory for reuse, so large schedules are not paid for in page faults
/// again on every allocation, and (its v2 line, the workspace's choice) gives what stays free
/// back to the kernel after 10 ms, so a run's files, dropped as they are read, leave no resident
/// garbage under what follows; the library itself does not choose an allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use crate::input::InputError;
use crate::output::say;
use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(
    name = "mpipe",
    version,
    about = "Derive, check and print pipeline-parallel schedules (Mpipe's schedule algebra)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Check a scenario file: exit 0 when valid, 2 with the broken rule (and the normal form) when
    /// not.
    Validate(validate::Args),
    /// Derive placement, collectives and per-rank order of a scenario.
    Derive(derive::Args),
    /// Simulate a scenario: makespan, bubbles, warmup windows, encoder spill, memory, critical
    /// path.
    Simulate(simulate::Args),
    /// Simulate two scenarios and print the speedup of B over A and the per-rank differences.
    Compare(compare::Args),
    /// BigMac's three multimodal designs of one model: step time and peak memory as M grows.
    CompareDesigns(compare_designs::Args),
    /// Draw the simulated Gantt chart as SVG.
    Render(render::Args),
    /// Compare a scenario's prediction with measured traces, calibrate it, and report the errors.
    CompareTrace(compare_trace::Args),
    /// Export a scenario's prediction, or imported traces, as a Chrome trace (Perfetto opens it).
    Export(export::Args),
    /// Import profiler traces (Chrome trace JSON, .json.gz): every rank's recovered schedule
    /// actions.
    Trace(trace::Args),
    /// OctoPipe's bubble-aware tuner: partitioning, placement and scheduling, every iteration
    /// printed.
    Tune(tune::Args),
    /// JanusPipe's WaveK sweep: step time and peak memory for each unit size k, beyond-capacity k
    /// marked.
    Sweep(sweep::Args),
    /// Fit a scenario under the device's capacity: offload or recompute per stage, at the least
    /// step time; or name the smallest peak reachable when nothing fits.
    FitMemory(fit_memory::Args),
    /// Every schedule the studio knows: what it is, its reference, its textbook formulas.
    Schedules(schedules::Args),
    /// Print a link that opens a scenario in the web build (the scenario in the URL's fragment).
    Share(share::Args),
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Validate(args) => validate::run(args),
        Command::Derive(args) => derive::run(args),
        Command::Simulate(args) => simulate::run(args),
        Command::Compare(args) => compare::run(args),
        Command::CompareDesigns(args) => compare_designs::run(args),
        Command::Render(args) => render::run(args),
        Command::CompareTrace(args) => compare_trace::run(args),
        Command::Export(args) => export::run(args),
        Command::Trace(args) => trace::run(args),
        Command::Tune(args) => tune::run(args),
        Command::Schedules(args) => schedules::run(args),
        Command::Sweep(args) => sweep::run(args),
        Command::FitMemory(args) => fit_memory::run(args),
        Command::Share(args) => share::run(args),
    }
}

fn main() -> ExitCode {
    let cli = match allocator::parsing(Cli::try_parse) {
        Ok(cli) => cli,
        Err(e) => {
            // Usage errors and --help; printing them must not panic either.
            let _ = e.print();
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        }
    };
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) if err.downcast_ref::<InputError>().is_some() => {
            say(format_args!("error: {err}"));
            ExitCode::from(2)
        }
        Err(err) => {
            say(format_args!("error: {err:#}"));
            ExitCode::FAILURE
        }
    }
}
