//! What the subcommands read: scenario and trace files (regular files only, bounded), derived
//! and simulated, and the arguments they share; every failure the user caused is an
//! [`InputError`] (exit status 2) naming the file.

use mpipe::sim::engine::SimOptions;
use mpipe::sim::run::Simulation;
use mpipe::{Scenario, derive};
use std::path::{Path, PathBuf};

#[derive(clap::Args, Debug, Clone)]
pub struct TraceArgs {
    /// The rank of one file, when neither the file nor its name says: `--rank worker.json=3`.
    #[arg(long = "rank", value_name = "FILE=N")]
    pub ranks: Vec<String>,
    /// Schedule rules (JSON, as `mpipe trace --print-rules` writes them) instead of the built-in
    /// set.
    #[arg(long, value_name = "RULES.json")]
    pub rules: Option<PathBuf>,
    /// The largest single event read, in bytes (a larger one is an error).
    #[arg(long, value_name = "BYTES", default_value_t = mpipe::trace::Limits::default().value_bytes)]
    pub max_event_bytes: u64,
    /// The most bytes one trace file may decompress to (more is an error).
    #[arg(long, value_name = "BYTES", default_value_t = mpipe::trace::Limits::default().file_bytes)]
    pub max_trace_bytes: u64,
    /// The most events (spans, flow points, memory samples) the traces of one run may hold, all
    /// files together (more is an error).
    #[arg(long, value_name = "N", default_value_t = mpipe::trace::Limits::default().events)]
    pub max_trace_events: u64,
}

#[derive(clap::Args, Debug, Clone, Copy)]
pub struct SimArgs {
    /// Transfers on one directed rank pair run one at a time.
    #[arg(long)]
    pub serialize_links: bool,
}

impl SimArgs {
    pub fn options(self) -> SimOptions {
        SimOptions {
            serialize_links: self.serialize_links,
        }
    }
}

/// Whether a file is a scenario rather than a trace (judged by its first 4 KiB).
pub fn is_scenario(path: &Path) -> bool {
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
/// The schedule rules: `--rules`'s file, checked, or the built-in set.
pub fn load_rules(args: &TraceArgs) -> Result<mpipe::trace::RuleSet, InputError> {
    Ok(match &args.rules {
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
    })
}

/// The trace files `given` names: a file as it is, a folder as the profiler lays a run out —
/// every `.json` or `.json.gz` file in it (not below it), by name — so `mpipe trace ./log`
/// reads a run's folder. A folder without one is an error that says so.
pub fn trace_files(given: &[PathBuf]) -> Result<Vec<PathBuf>, InputError> {
    let mut out = Vec::new();
    for path in given {
        if !path.is_dir() {
            out.push(path.clone());
            continue;
        }
        let entries = std::fs::read_dir(path)
            .map_err(|e| InputError(format!("{}: cannot read: {e}", path.display())))?;
        let mut found: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_file())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.ends_with(".json") || n.ends_with(".json.gz"))
            })
            .collect();
        if found.is_empty() {
            return Err(InputError(format!(
                "{}: a folder with no trace file in it (`.json` or `.json.gz`, as the profiler writes them)",
                path.display()
            )));
        }
        found.sort();
        out.extend(found);
    }
    Ok(out)
}

/// Reads and recovers a run's traces (`given`: files and the profiler's folders), the allocator
/// tuned for reading ([`crate::allocator::reading_a_run`]).
pub fn load_traces(
    given: &[PathBuf],
    args: &TraceArgs,
) -> Result<(mpipe::trace::Measurement, mpipe::trace::Alignment), InputError> {
    crate::allocator::reading_a_run(|| read_traces(given, args))
}

fn read_traces(
    given: &[PathBuf],
    args: &TraceArgs,
) -> Result<(mpipe::trace::Measurement, mpipe::trace::Alignment), InputError> {
    let files = &trace_files(given)?[..];
    let rules = load_rules(args)?;
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
    let limits = mpipe::trace::Limits {
        value_bytes: args.max_event_bytes,
        file_bytes: args.max_trace_bytes,
        events: args.max_trace_events,
        ..mpipe::trace::Limits::default()
    };
    let traces = match import_in_parallel(files, limits) {
        Some(traces) => traces,
        None => import_in_order(files, limits)?,
    };
    let measurement = mpipe::trace::recover_owned(traces, &compiled, &user_ranks);
    let alignment = mpipe::trace::align(&measurement);
    Ok((measurement, alignment))
}

/// Imports `files` one after the other, each within what the ones before it left of `limits`:
/// the reading whose errors the CLI gives (the first file's in the given order).
fn import_in_order(
    files: &[PathBuf],
    limits: mpipe::trace::Limits,
) -> Result<Vec<mpipe::trace::RawTrace>, InputError> {
    let mut traces: Vec<mpipe::trace::RawTrace> = Vec::with_capacity(files.len());
    for path in files {
        let name = path.display().to_string();
        let file = open_regular(path)?;
        let held = traces.iter().map(|t| t.held_events()).sum();
        let limits = mpipe::files::trace_limits(&file, limits.after(held));
        let trace = mpipe::trace::import_with(file, &name, limits, &mut |_| true)
            .map_err(|e| InputError(e.to_string()))?;
        traces.push(trace);
    }
    Ok(traces)
}

/// Imports `files` on the available cores ([`mpipe::trace::parallel`]): the same traces as
/// [`import_in_order`], or `None` where the caller reads them in order for its error.
fn import_in_parallel(
    files: &[PathBuf],
    limits: mpipe::trace::Limits,
) -> Option<Vec<mpipe::trace::RawTrace>> {
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    mpipe::trace::parallel::import_in_parallel(
        files.len(),
        limits,
        threads,
        |i, limits, others_ok| {
            let path = files.get(i)?;
            let file = open_regular(path).ok()?;
            let name = path.display().to_string();
            let limits = mpipe::files::trace_limits(&file, limits);
            mpipe::trace::import_with(file, &name, limits, &mut |_| others_ok()).ok()
        },
    )
}

/// Refuses an output that is one of the inputs (`mpipe render x.json --svg x.json` would replace
/// the scenario with a picture of it).
pub fn refuse_to_overwrite(out: &Path, inputs: &[&Path]) -> Result<(), InputError> {
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

/// Refuses `scenario` (read from `text` at `path`) when what `how` does with it would need more
/// memory than this version allows (rule `memory` for the command's own peak), at its field.
pub fn memory_for(
    scenario: &Scenario,
    text: &str,
    path: &Path,
    how: mpipe::algebra::budget::Use,
) -> Result<(), InputError> {
    use mpipe::algebra::budget::{MEMORY_LIMIT_BYTES, check_use};
    check_use(scenario, how, MEMORY_LIMIT_BYTES, 0.0).map_err(|e| {
        let segs = mpipe::scenario::locate::parse_path(e.field());
        let (line, column) = mpipe::scenario::locate::locate(text, &segs).unwrap_or((1, 1));
        InputError(format!(
            "{}:{line}:{column}: field `{}`: {e}",
            path.display(),
            e.field()
        ))
    })
}

/// [`simulate_file`] for a command that does `how` with the simulation: refused first when
/// that would need more memory than this version allows.
pub fn simulate_file_for(
    path: &Path,
    sim: SimArgs,
    how: mpipe::algebra::budget::Use,
) -> Result<(Scenario, Simulation), InputError> {
    // The file is read once: checked for the command's peak, then derived as it was read.
    let loaded = load_scenario(path, None)?;
    memory_for(&loaded.scenario, &loaded.text, path, how)?;
    let (scenario, d) = derive_loaded(path, loaded, Some(sim.options()))?;
    Ok((scenario, mpipe::sim::run::run(d, sim.options())))
}

pub fn simulate_file(path: &Path, sim: SimArgs) -> Result<(Scenario, Simulation), InputError> {
    let (scenario, d) = derive_file(path, Some(sim.options()))?;
    let simulation = mpipe::sim::run::run(d, sim.options());
    Ok((scenario, simulation))
}

/// A failure the user caused (bad file, invalid schedule): exit status 2, anything else 1.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct InputError(pub String);

/// Writes an output file the user named ([`mpipe::files::write_atomic`]: atomic, a link followed,
/// a device or FIFO written through); a failure names the file and is the user's to fix (exit 2).
pub fn write_output(path: &Path, bytes: &[u8]) -> Result<(), InputError> {
    mpipe::files::write_atomic(path, bytes)
        .map_err(|e| InputError(format!("{}: cannot write: {e}", path.display())))
}

/// Opens `path` for reading when it is a regular file: a FIFO, a device or a folder would block or
/// never end, so it is refused at once.
pub fn open_regular(path: &Path) -> Result<std::fs::File, InputError> {
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

pub fn read_scenario(path: &Path) -> Result<(Scenario, String), InputError> {
    let loaded = load_scenario(path, None)?;
    Ok((loaded.scenario, loaded.text))
}

/// A scenario file read, with the pipeline CSV its orders came from (its name and cells).
struct Loaded {
    scenario: Scenario,
    text: String,
    csv: Option<(String, mpipe::scenario::orders_csv::CsvOrders)>,
}

fn read_text(path: &Path) -> Result<String, InputError> {
    let file = path.display().to_string();
    let bytes = mpipe::scenario::read_bounded(open_regular(path)?, &file)
        .map_err(|e| InputError(e.to_string()))?;
    mpipe::scenario::text_from_bytes(bytes, &file).map_err(|e| InputError(e.to_string()))
}

/// Reads a scenario file and the pipeline CSV of its orders: `orders_csv` (relative to the
/// scenario's folder), or `csv_override` in place of any orders the file gives.
fn load_scenario(path: &Path, csv_override: Option<&Path>) -> Result<Loaded, InputError> {
    let file = path.display().to_string();
    let text = read_text(path)?;
    let mut scenario =
        Scenario::from_json_str(&text, &file).map_err(|e| InputError(e.to_string()))?;
    let csv_path = match (csv_override, &scenario.orders_csv) {
        (Some(p), _) => {
            scenario.orders = None;
            scenario.orders_csv = None;
            Some(p.to_path_buf())
        }
        // Both given: the derivation refuses it by rule, at the field.
        (None, Some(_)) if scenario.orders.is_some() => None,
        (None, Some(name)) => Some(mpipe::files::orders_csv_path(path, name).map_err(|why| {
            let segs = mpipe::scenario::locate::parse_path("orders_csv");
            let (line, column) = mpipe::scenario::locate::locate(&text, &segs).unwrap_or((1, 1));
            InputError(format!("{file}:{line}:{column}: field `orders_csv`: {why}"))
        })?),
        (None, None) => None,
    };
    let csv = match csv_path {
        Some(p) => {
            let name = p.display().to_string();
            let limits = mpipe::algebra::budget::csv_limits(&scenario);
            let read = mpipe::scenario::orders_csv::read(&read_text(&p)?, &name, limits)
                .map_err(|e| InputError(e.to_string()))?;
            scenario.orders_from_csv = Some(read.orders.clone());
            Some((name, read))
        }
        None => None,
    };
    Ok(Loaded {
        scenario,
        text,
        csv,
    })
}

/// The proposed reordering of a deadlocking order, as lines to append to its error (`lead`:
/// `fix:`, or how it stands beside another fix): what moves, then the orders ready to paste.
fn deadlock_fix(fix: &mpipe::graph::order::Fix, lead: &str) -> String {
    let orders = serde_json::to_string(&fix.orders).unwrap_or_default();
    format!(
        "\n{lead} run {} (each as soon as its inputs are in):\n\"orders\": {orders}",
        fix.summary()
    )
}

/// The `fix:` line of an error's remedy, in the file's own terms: a new cut and schedule, new
/// per-rank layer counts (`"slabs"` as the remedy leaves them); any other edit as the app's
/// button says it.
fn remedy_fix(remedy: &mpipe::scenario::edit::Remedy, scenario: &Scenario) -> String {
    use mpipe::scenario::edit::Edit;
    match &remedy.edit {
        Edit::CutAndSchedule { cut, schedule } => {
            let names: Vec<String> = schedule.iter().map(|s| format!("\"{s}\"")).collect();
            // A width list follows the new regions (each layer keeps its width).
            let widths = scenario.width.as_ref().map_or(String::new(), |_| {
                let mut fixed = scenario.clone();
                remedy.edit.apply(&mut fixed);
                let width = serde_json::to_string(&fixed.width).unwrap_or_default();
                let own: Vec<String> = fixed
                    .model
                    .layers
                    .iter()
                    .zip(&scenario.model.layers)
                    .enumerate()
                    .filter(|(_, (after, before))| after.width != before.width)
                    .map(|(i, (after, _))| {
                        format!(
                            ", \"model.layers[{i}].width\": {}",
                            serde_json::to_string(&after.width).unwrap_or_default()
                        )
                    })
                    .collect();
                format!(", \"width\": {width}{}", own.concat())
            });
            format!(
                "\nfix: replace them with \"cut\": {cut:?}, \"schedule\": [{}]{widths}",
                names.join(", ")
            )
        }
        Edit::Slabs { .. } => {
            let mut fixed = scenario.clone();
            remedy.edit.apply(&mut fixed);
            let slabs = serde_json::to_string(&fixed.slabs).unwrap_or_default();
            format!("\nfix: {}:\n\"slabs\": {slabs}", remedy.label)
        }
        _ => format!("\nfix: {}", remedy.label),
    }
}

/// Reads and derives a scenario file; with `tuning`, a cost-based owner map is chosen too,
/// simulating with those options. Errors name the file, line and column.
pub fn derive_file(
    path: &Path,
    tuning: Option<SimOptions>,
) -> Result<(Scenario, mpipe::Derivation), InputError> {
    derive_file_with(path, tuning, None)
}

/// [`derive_file`], the orders read from the pipeline CSV `orders_csv` when one is given. An
/// error about the orders names the CSV's line and column.
pub fn derive_file_with(
    path: &Path,
    tuning: Option<SimOptions>,
    orders_csv: Option<&Path>,
) -> Result<(Scenario, mpipe::Derivation), InputError> {
    derive_loaded(path, load_scenario(path, orders_csv)?, tuning)
}

/// [`derive_file_with`] of a file already read.
fn derive_loaded(
    path: &Path,
    loaded: Loaded,
    tuning: Option<SimOptions>,
) -> Result<(Scenario, mpipe::Derivation), InputError> {
    let Loaded {
        scenario,
        text,
        csv,
    } = loaded;
    let file = path.display().to_string();
    let derived = derive(&scenario).and_then(|d| match tuning {
        Some(options) => mpipe::tune::owners::tune(&scenario, d, options, &mut |_| true),
        None => Ok(d),
    });
    if let (Err(mpipe::DeriveError::Order(e)), Some((name, cells))) = (&derived, &csv) {
        let mut message = match e {
            mpipe::graph::order::OrderError::Explicit { message, .. } => {
                format!("rule `orders`: {message}")
            }
            other => other.to_string(),
        };
        if let mpipe::graph::order::OrderError::Deadlock { fix, .. } = e {
            message.push_str(&deadlock_fix(fix, "fix:"));
        }
        return Err(InputError(cells.locate(name, &e.field(), &message)));
    }
    match derived {
        Ok(d) => Ok((scenario, d)),
        Err(err) => {
            let mut message = err.locate(&text, &file).to_string();
            if let mpipe::DeriveError::Order(mpipe::graph::order::OrderError::Deadlock {
                fix,
                derived,
                ..
            }) = &err
            {
                // A placement the schedule does not assume: its own placement first, then the
                // reordering that keeps the placement (a longer step).
                let placed = matches!(derived, Some(mpipe::graph::order::Derived::Placement(_)));
                match err.remedy() {
                    Some(remedy) if placed => {
                        message.push_str(&remedy_fix(&remedy, &scenario));
                        message.push_str(&deadlock_fix(fix, "or, keeping the placement,"));
                    }
                    _ => message.push_str(&deadlock_fix(fix, "fix:")),
                }
            }
            if let mpipe::DeriveError::Invalid(_) = &err
                && let Some(remedy) = err.remedy()
            {
                message.push_str(&remedy_fix(&remedy, &scenario));
            }
            Err(InputError(message))
        }
    }
}
