//! `mpipe`: the headless command line of Mpipe Studio.

use anyhow::Context;
use clap::{Parser, Subcommand};
use mpipe::report::derive::DeriveReport;
use mpipe::report::simulate::{self as sim_report, CompareReport, SimulateReport};
use mpipe::sim::engine::SimOptions;
use mpipe::sim::run::Simulation;
use mpipe::{Scenario, derive};
use std::path::{Path, PathBuf};
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
    /// Check a scenario file: exit 0 when valid, 2 with the broken rule (and the normal form) when not.
    Validate { file: PathBuf },
    /// Derive placement, collectives and per-rank order of a scenario.
    Derive {
        file: PathBuf,
        /// Print the derivation as one JSON object instead of a table.
        #[arg(long)]
        json: bool,
        /// How a cost-based owner map (`greedy_slack`, `optimized`) simulates while it is chosen.
        #[command(flatten)]
        sim: SimArgs,
    },
    /// Simulate a scenario: makespan, bubbles, warmup windows, encoder spill, memory, critical path.
    Simulate {
        file: PathBuf,
        /// Print one JSON object instead of a table.
        #[arg(long)]
        json: bool,
        /// Leave the per-event timeline out of the JSON.
        #[arg(long)]
        no_events: bool,
        /// Also say what every rank does at this instant (seconds) and, when idle, why.
        #[arg(long, value_name = "SECONDS")]
        at: Option<f64>,
        #[command(flatten)]
        sim: SimArgs,
    },
    /// Simulate two scenarios and print the speedup of B over A and the per-rank differences.
    Compare {
        a: PathBuf,
        b: PathBuf,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        sim: SimArgs,
    },
    /// Draw the simulated Gantt chart as SVG.
    Render {
        file: PathBuf,
        /// Where to write the SVG.
        #[arg(long, value_name = "OUT.svg")]
        svg: PathBuf,
        #[command(flatten)]
        sim: SimArgs,
    },
    /// Import profiler traces (Chrome trace JSON, .json.gz): every rank's recovered schedule actions.
    Trace {
        /// One file per rank, or one merged file.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        trace: TraceArgs,
    },
    /// Export a scenario's prediction, or imported traces, as a Chrome trace (Perfetto opens it).
    Export {
        /// A scenario, or one or more trace files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        #[arg(long, value_name = "OUT.json")]
        chrome_trace: PathBuf,
        #[command(flatten)]
        trace: TraceArgs,
        #[command(flatten)]
        sim: SimArgs,
    },
    /// Compare a scenario's prediction with measured traces, calibrate it, and report the errors.
    CompareTrace {
        scenario: PathBuf,
        #[arg(required = true)]
        files: Vec<PathBuf>,
        #[arg(long)]
        json: bool,
        /// The step to fit on (default 0); the next step, when there is one, checks the fit.
        #[arg(long, default_value_t = 0)]
        fit_step: usize,
        /// Write the calibrated scenario here.
        #[arg(long, value_name = "OUT.json")]
        calibrated: Option<PathBuf>,
        #[command(flatten)]
        trace: TraceArgs,
        #[command(flatten)]
        sim: SimArgs,
    },
}

#[derive(clap::Args, Debug, Clone)]
struct TraceArgs {
    /// The rank of one file, when neither the file nor its name says: `--rank worker.json=3`.
    #[arg(long = "rank", value_name = "FILE=N")]
    ranks: Vec<String>,
    /// Schedule rules (JSON, as `mpipe trace --print-rules` writes them) instead of the built-in set.
    #[arg(long, value_name = "RULES.json")]
    rules: Option<PathBuf>,
    /// The largest single event read, in bytes (a larger one is an error).
    #[arg(long, value_name = "BYTES", default_value_t = mpipe::trace::Limits::default().value_bytes)]
    max_event_bytes: u64,
    /// The most bytes one trace file may decompress to (more is an error).
    #[arg(long, value_name = "BYTES", default_value_t = mpipe::trace::Limits::default().file_bytes)]
    max_trace_bytes: u64,
}

#[derive(clap::Args, Debug, Clone, Copy)]
struct SimArgs {
    /// Transfers on one directed rank pair run one at a time.
    #[arg(long)]
    serialize_links: bool,
}

impl SimArgs {
    fn options(self) -> SimOptions {
        SimOptions {
            serialize_links: self.serialize_links,
        }
    }
}

/// Whether a file is a scenario rather than a trace (judged by its first 4 KiB).
fn is_scenario(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 4096];
    // Only a regular file is opened (a FIFO would block); anything else is left to the scenario
    // reader, which says what it is.
    let n = open_regular(path)
        .ok()
        .and_then(|mut f| f.read(&mut head).ok())
        .unwrap_or(0);
    !mpipe::trace::looks_like_trace(head.get(..n).unwrap_or_default())
}

/// Imports trace files and recovers, ranks and aligns their schedule events.
fn load_traces(
    files: &[PathBuf],
    args: &TraceArgs,
) -> Result<(mpipe::trace::Measurement, mpipe::trace::Alignment), InputError> {
    let rules = match &args.rules {
        Some(path) => {
            let name = path.display().to_string();
            let bytes = mpipe::scenario::read_bounded(open_regular(path)?, &name)
                .map_err(|e| InputError(e.to_string()))?;
            let text = mpipe::scenario::text_from_bytes(bytes, &name)
                .map_err(|e| InputError(e.to_string()))?;
            mpipe::trace::RuleSet::from_json_str(&text, &name)
                .map_err(|e| InputError(e.to_string()))?
        }
        None => mpipe::trace::RuleSet::default(),
    };
    let compiled = rules.compile().map_err(|e| InputError(e.to_string()))?;
    let mut user_ranks = vec![None; files.len()];
    for given in &args.ranks {
        let (file, rank) = given
            .rsplit_once('=')
            .and_then(|(f, r)| Some((f, r.trim().parse::<usize>().ok()?)))
            .ok_or_else(|| InputError(format!("--rank {given}: expected FILE=N")))?;
        let at = files
            .iter()
            .position(|p| p.as_os_str() == file || p.file_name().is_some_and(|n| n == file))
            .ok_or_else(|| {
                InputError(format!(
                    "--rank {given}: `{file}` is not one of the trace files"
                ))
            })?;
        if let Some(slot) = user_ranks.get_mut(at) {
            *slot = Some(rank);
        }
    }
    let mut traces = Vec::with_capacity(files.len());
    for path in files {
        let name = path.display().to_string();
        let file = open_regular(path)?;
        let limits = mpipe::trace::Limits {
            value_bytes: args.max_event_bytes,
            file_bytes: args.max_trace_bytes,
        };
        let trace = mpipe::trace::import_with(file, &name, limits, &mut |_| true)
            .map_err(|e| InputError(e.to_string()))?;
        traces.push(trace);
    }
    let measurement = mpipe::trace::recover(&traces, &compiled, &user_ranks);
    let alignment = mpipe::trace::align(&measurement);
    Ok((measurement, alignment))
}

/// Refuses an output that is one of the inputs (`mpipe render x.json --svg x.json` would replace
/// the scenario with a picture of it).
fn refuse_to_overwrite(out: &Path, inputs: &[&Path]) -> Result<(), InputError> {
    let Ok(target) = std::fs::canonicalize(out) else {
        return Ok(()); // a new file overwrites nothing
    };
    match inputs
        .iter()
        .find(|input| std::fs::canonicalize(input).is_ok_and(|i| i == target))
    {
        Some(input) => Err(InputError(format!(
            "{}: refusing to write the output over the input {}; give another output file",
            out.display(),
            input.display()
        ))),
        None => Ok(()),
    }
}

fn simulate_file(path: &Path, sim: SimArgs) -> Result<(Scenario, Simulation), InputError> {
    let (scenario, d) = derive_file(path, Some(sim.options()))?;
    let simulation = mpipe::sim::run::run(d, sim.options());
    Ok((scenario, simulation))
}

/// A failure the user caused (bad file, invalid schedule): exit status 2, anything else 1.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct InputError(String);

/// Opens `path` for reading when it is a regular file: a FIFO, a device or a folder would block or
/// never end, so it is refused at once.
fn open_regular(path: &Path) -> Result<std::fs::File, InputError> {
    let file = path.display();
    let meta =
        std::fs::metadata(path).map_err(|e| InputError(format!("{file}: cannot read: {e}")))?;
    if !meta.is_file() {
        return Err(InputError(format!(
            "{file}: cannot read: not a regular file (a folder, a FIFO or a device); give a file"
        )));
    }
    std::fs::File::open(path).map_err(|e| InputError(format!("{file}: cannot read: {e}")))
}

fn read_scenario(path: &Path) -> Result<(Scenario, String), InputError> {
    let file = path.display().to_string();
    let bytes = mpipe::scenario::read_bounded(open_regular(path)?, &file)
        .map_err(|e| InputError(e.to_string()))?;
    let text =
        mpipe::scenario::text_from_bytes(bytes, &file).map_err(|e| InputError(e.to_string()))?;
    let scenario = Scenario::from_json_str(&text, &file).map_err(|e| InputError(e.to_string()))?;
    Ok((scenario, text))
}

/// Reads and derives a scenario file; with `tuning`, a cost-based owner map is chosen too,
/// simulating with those options. Errors name the file, line and column.
fn derive_file(
    path: &Path,
    tuning: Option<SimOptions>,
) -> Result<(Scenario, mpipe::Derivation), InputError> {
    let (scenario, text) = read_scenario(path)?;
    let file = path.display().to_string();
    let derived = derive(&scenario).and_then(|d| match tuning {
        Some(options) => mpipe::tune::owners::tune(&scenario, d, options, &mut |_| true),
        None => Ok(d),
    });
    match derived {
        Ok(d) => Ok((scenario, d)),
        Err(err) => {
            let mut message = err.locate(&text, &file).to_string();
            if let mpipe::DeriveError::Invalid(v) = &err
                && let Some((cut, schedule)) = v.normal_form()
            {
                let names: Vec<String> = schedule.iter().map(|s| format!("\"{s}\"")).collect();
                message.push_str(&format!(
                    "\nfix: replace them with \"cut\": {cut:?}, \"schedule\": [{}]",
                    names.join(", ")
                ));
            }
            Err(InputError(message))
        }
    }
}

/// Writes to stdout. A stdout that cannot take it (a closed pipe: `mpipe derive … | head -c 10`;
/// a full disk) is not bad input but an internal failure: exit status 1, never a panic.
fn emit(text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .context("writing to stdout")
}

/// Writes `value` to stdout as one line of JSON, straight into the stream (a large simulation's
/// JSON is never held in memory as text); a stdout that cannot take it is exit status 1.
fn emit_json(value: &impl serde::Serialize) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    serde_json::to_writer(&mut out, value).context("writing to stdout")?;
    out.write_all(b"\n")
        .and_then(|()| out.flush())
        .context("writing to stdout")
}

/// Says `message` on stderr, its control characters written out (a skeleton name with terminal
/// escapes must not drive the terminal); a stderr that cannot be written (`2>/dev/full`, a closed
/// pipe) is ignored — there is nowhere left to say anything, and the exit status still tells.
fn say(message: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let text = message.to_string();
    let _ = writeln!(
        std::io::stderr().lock(),
        "{}",
        mpipe::report::derive::escape_controls(&text)
    );
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Validate { file } => {
            let (scenario, d) = derive_file(&file, None)?;
            let schedule: Vec<_> = d.plan.regions.iter().map(|r| r.skeleton).collect();
            emit(&format!(
                "{}: valid: {} over {} layers, P = {}, M = {}{}\n",
                file.display(),
                mpipe::algebra::skeleton::schedule_to_string(&schedule),
                d.plan.layers.len(),
                d.plan.ranks,
                d.plan.microbatches,
                if scenario.name.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", scenario.name)
                }
            ))?;
            Ok(())
        }
        Command::Derive { file, json, sim } => {
            let (scenario, d) = derive_file(&file, Some(sim.options()))?;
            if json {
                emit_json(&DeriveReport::new(&scenario.name, &d))?;
            } else {
                emit(&mpipe::report::derive::text(&scenario.name, &d))?;
            }
            Ok(())
        }
        Command::Simulate {
            file,
            json,
            no_events,
            at,
            sim,
        } => {
            if let Some(t) = at.filter(|t| !t.is_finite()) {
                return Err(InputError(format!("--at {t}: give a finite time in seconds")).into());
            }
            let (scenario, simulation) = simulate_file(&file, sim)?;
            let scene = at.map(|_| mpipe::sim::scene::Scene::new(&simulation));
            let states = at
                .zip(scene.as_ref())
                .map(|(t, scene)| (t, mpipe::sim::explain::at_time(&simulation, scene, t)));
            if json {
                let mut report = SimulateReport::new(&scenario.name, &simulation, !no_events);
                report.at = states.map(|(t_s, ranks)| sim_report::AtReport { t_s, ranks });
                emit_json(&report)?;
            } else {
                let mut text = sim_report::text(&scenario.name, &simulation);
                if let Some((t, ranks)) = states {
                    text.push_str(&format!("\nat {}:\n", sim_report::secs(t)));
                    for r in ranks {
                        text.push_str(&format!("  {}\n", r.sentence()));
                    }
                }
                emit(&text)?;
            }
            Ok(())
        }
        Command::Compare { a, b, json, sim } => {
            let (sa, a_sim) = simulate_file(&a, sim)?;
            let (sb, b_sim) = simulate_file(&b, sim)?;
            let name = |s: &Scenario, p: &Path| {
                if s.name.is_empty() {
                    p.display().to_string()
                } else {
                    s.name.clone()
                }
            };
            let (an, bn) = (name(&sa, &a), name(&sb, &b));
            if json {
                let report = CompareReport::new(&an, &a_sim, &bn, &b_sim);
                emit_json(&report)?;
            } else {
                emit(&sim_report::compare_text(&an, &a_sim, &bn, &b_sim))?;
            }
            Ok(())
        }
        Command::Render { file, svg, sim } => {
            refuse_to_overwrite(&svg, &[&file])?;
            let (scenario, simulation) = simulate_file(&file, sim)?;
            mpipe::files::write_atomic(
                &svg,
                mpipe::report::svg::render(&scenario.name, &simulation).as_bytes(),
            )
            .with_context(|| format!("writing {}", svg.display()))?;
            emit(&format!("wrote {}\n", svg.display()))?;
            Ok(())
        }
        Command::CompareTrace {
            scenario,
            files,
            json,
            fit_step,
            calibrated,
            trace,
            sim,
        } => {
            if let Some(out) = &calibrated {
                let inputs: Vec<&Path> = std::iter::once(scenario.as_path())
                    .chain(files.iter().map(PathBuf::as_path))
                    .collect();
                refuse_to_overwrite(out, &inputs)?;
            }
            let (model, simulation) = simulate_file(&scenario, sim)?;
            let (measurement, alignment) = load_traces(&files, &trace)?;
            let steps = measurement
                .ranks
                .iter()
                .map(|r| r.steps.len())
                .min()
                .unwrap_or(0);
            if fit_step >= steps.max(1) {
                return Err(InputError(format!(
                    "--fit-step {fit_step}: the traces have {steps} step(s) on every rank"
                ))
                .into());
            }
            let check_step = if fit_step + 1 < steps {
                fit_step + 1
            } else {
                fit_step
            };
            let calibration = mpipe::trace::calibrate::calibrate(
                &model,
                &simulation,
                &measurement,
                &alignment,
                fit_step,
                check_step,
                sim.options(),
            )
            .map_err(|e| {
                // The calibrated scenario is derived from the file: its errors name the file
                // and the field (it has no text of its own to give a line and column).
                InputError(format!(
                    "{}: the calibrated scenario: field `{}`: {e}",
                    scenario.display(),
                    e.field()
                ))
            })?;
            let name = if model.name.is_empty() {
                scenario.display().to_string()
            } else {
                model.name.clone()
            };
            let report = mpipe::trace::report::CompareTraceReport::new(
                &name,
                &calibration,
                &alignment,
                &measurement,
            );
            if let Some(out) = calibrated {
                mpipe::files::write_atomic(&out, calibration.scenario.to_json_string().as_bytes())
                    .with_context(|| format!("writing {}", out.display()))?;
            }
            if json {
                emit_json(&report)?;
            } else {
                emit(&report.text())?;
            }
            Ok(())
        }
        Command::Export {
            files,
            chrome_trace,
            trace,
            sim,
        } => {
            let inputs: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
            refuse_to_overwrite(&chrome_trace, &inputs)?;
            let mut bytes = Vec::new();
            let what = match files.as_slice() {
                [one] if is_scenario(one) => {
                    let (scenario, simulation) = simulate_file(one, sim)?;
                    mpipe::trace::export::write_prediction(&simulation, &scenario.name, &mut bytes)
                        .context("writing the trace")?;
                    "prediction"
                }
                _ => {
                    let (measurement, alignment) = load_traces(&files, &trace)?;
                    mpipe::trace::export::write_measurement(&measurement, &alignment, &mut bytes)
                        .context("writing the trace")?;
                    "measurement"
                }
            };
            mpipe::files::write_atomic(&chrome_trace, &bytes)
                .with_context(|| format!("writing {}", chrome_trace.display()))?;
            emit(&format!("wrote the {what} to {}\n", chrome_trace.display()))?;
            Ok(())
        }
        Command::Trace { files, json, trace } => {
            let (measurement, alignment) = load_traces(&files, &trace)?;
            let report = mpipe::trace::report::TraceReport::new(&measurement, &alignment);
            if json {
                emit_json(&report)?;
            } else {
                emit(&report.text())?;
            }
            Ok(())
        }
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
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
