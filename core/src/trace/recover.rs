//! From imported files to the schedule each rank ran: rules classify event names (each distinct
//! name once), GPU-side annotation copies replace CPU ones when present, sources get their
//! ranks, and every action gets a step (from `ProfilerStep#N`, else from the schedule repeating)
//! and a microbatch.

use super::compute::{ComputeOps, OpPhase};
use super::infer::{InferredAction, infer};
use super::rank::{RankSource, rank_in_name, rank_in_path};
use super::raw::{ClockBase, RawTrace, Warning, Warnings};
use super::rules::{ActionKind, Classified, Compiled, Direction};
use super::step::{StepSource, StepWindow};
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::BTreeMap;
use std::rc::Rc;

/// The category Kineto gives device-side copies of `record_function` ranges.
pub const GPU_ANNOTATION: &str = "gpu_user_annotation";

/// Where a recovered event sits in the imported files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpanRef {
    /// Index into the list of files given to [`recover`].
    pub file: usize,
    /// Index into that file's [`RawTrace::spans`].
    pub span: usize,
}

/// A schedule event recovered from a trace, on its rank's own clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MeasuredEvent {
    pub stage: usize,
    pub kind: ActionKind,
    pub direction: Option<Direction>,
    pub mb: usize,
    pub start_ns: i64,
    pub end_ns: i64,
    /// Index into the rank's [`MeasuredRank::steps`].
    pub step: usize,
    pub source: SpanRef,
    /// Of the span, its compute: from the first compute op inside it to the last one's end, and
    /// any glue outside those ([`crate::trace::compute`]); an overlapped pair's half, or an
    /// action timed by its kernels, the union of its own ops or kernels. The rest is waiting. A
    /// transfer's is its whole span.
    pub compute_ns: i64,
    /// When the first compute op inside the span starts (the span's start for a transfer or
    /// a span with no op inside): a step begins at its first compute, not at a wait.
    pub compute_start_ns: i64,
    /// When the last compute op inside the span ends (the span's end without one): what an
    /// action hands on is ready then, whatever the span still holds (posting its sends).
    pub compute_end_ns: i64,
    /// When its compute ran on the host's clock, the one the allocator's `[memory]` samples are
    /// on: its compute's start and end, or for an action timed by its kernels, the CPU span that
    /// launched them (the CPU allocates as it launches, ahead of the device).
    pub host_start_ns: i64,
    pub host_end_ns: i64,
}

impl MeasuredEvent {
    /// PyTorch's notation: `0F3`, `2B0`, `1SEND_F2`, `0RECV0`.
    pub fn label(&self) -> String {
        match (self.kind.code(), self.kind, self.direction) {
            (Some(code), _, _) => format!("{}{code}{}", self.stage, self.mb),
            (None, kind, direction) => {
                let verb = if kind == ActionKind::Send {
                    "SEND"
                } else {
                    "RECV"
                };
                let suffix = match direction {
                    Some(Direction::Activation) => "_F",
                    Some(Direction::Gradient) => "_B",
                    None => "",
                };
                format!("{}{verb}{suffix}{}", self.stage, self.mb)
            }
        }
    }

    pub fn dur_ns(&self) -> i64 {
        self.end_ns.saturating_sub(self.start_ns)
    }

    /// The span's time not covered by compute: waiting for inputs (or for a transfer).
    pub fn wait_ns(&self) -> i64 {
        self.dur_ns().saturating_sub(self.compute_ns).max(0)
    }
}

/// A rank's measured memory: the allocator's total on one device over time (`[memory]`
/// instants of a `profile_memory=True` trace).
#[derive(Debug, Clone, PartialEq)]
pub struct MeasuredMemory {
    /// `Device Type` (0 the CPU) and `Device Id` of the samples kept: the accelerator when the
    /// trace has one, else the CPU.
    pub device_type: i64,
    pub device_id: i64,
    /// `(time, bytes)` in time order, on the rank's own clock.
    pub samples: Vec<(i64, f64)>,
}

impl MeasuredMemory {
    /// The CPU allocator's totals count from the profiler's start (what was allocated before,
    /// the parameters among it, is not in them); an accelerator's are the device's own.
    pub fn relative(&self) -> bool {
        self.device_type == 0
    }

    /// `cpu`, `cuda:0`, `device 7:1`.
    pub fn device(&self) -> String {
        match self.device_type {
            0 => "cpu".to_string(),
            1 => format!("cuda:{}", self.device_id),
            t => format!("device {t}:{}", self.device_id),
        }
    }

    /// The total at `t` (the last sample at or before it; 0 before the first).
    pub fn at(&self, t: i64) -> f64 {
        let i = self.samples.partition_point(|&(ts, _)| ts <= t);
        i.checked_sub(1)
            .and_then(|i| self.samples.get(i))
            .map_or(0.0, |s| s.1)
    }

    /// The lowest total in `[start, end]` (the level at `start` included).
    pub fn low(&self, start: i64, end: i64) -> f64 {
        self.levels(start, end).fold(self.at(start), f64::min)
    }

    /// The totals sampled in `[start, end]`.
    fn levels(&self, start: i64, end: i64) -> impl Iterator<Item = f64> + '_ {
        let from = self.samples.partition_point(|&(ts, _)| ts < start);
        self.samples
            .get(from..)
            .unwrap_or_default()
            .iter()
            .take_while(move |&&(ts, _)| ts <= end)
            .map(|s| s.1)
    }

    /// The highest total in `[start, end]` (the level at `start` included).
    pub fn peak(&self, start: i64, end: i64) -> f64 {
        self.levels(start, end).fold(self.at(start), f64::max)
    }
}

/// What one rank ran.
#[derive(Debug, Clone, PartialEq)]
pub struct MeasuredRank {
    pub rank: usize,
    /// The files (indices into the list given to [`recover`]) that hold this rank.
    pub files: Vec<usize>,
    /// Where the rank came from: the first of `sources`.
    pub rank_source: RankSource,
    /// Each of its files and where that file's rank came from (they can differ: a file the
    /// user set to rank 1 merges with the file whose `distributedInfo` says rank 1).
    pub sources: Vec<(usize, RankSource)>,
    pub clock: ClockBase,
    pub steps: Vec<StepWindow>,
    /// How the steps were told apart.
    pub step_source: StepSource,
    /// Compute actions in time order.
    pub actions: Vec<MeasuredEvent>,
    /// Transfers in time order.
    pub transfers: Vec<MeasuredEvent>,
    /// Whether the events are device-side (`gpu_user_annotation`) copies.
    pub device_side: bool,
    /// Whether compute actions are timed by the GPU kernels their launches ran (a CPU span
    /// linked to its kernels by flows, [`ComputeOps::device_compute`]).
    pub timed_by_kernels: bool,
    /// Whether the compute actions were inferred from the trace's structure (no per-action
    /// annotations: [`crate::trace::infer`]).
    pub inferred: bool,
    /// The measured memory, when the trace has `[memory]` events.
    pub memory: Option<MeasuredMemory>,
    /// Trace events in this rank's files.
    pub event_count: usize,
}

/// Every rank of a run, in rank order, and what the recovery could not do.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Measurement {
    pub files: Vec<String>,
    pub ranks: Vec<MeasuredRank>,
    pub warnings: Vec<Warning>,
}

impl Measurement {
    /// The steps every rank has (0 without ranks): a step is compared or fitted only where all
    /// ranks ran it.
    pub fn common_steps(&self) -> usize {
        self.ranks.iter().map(|r| r.steps.len()).min().unwrap_or(0)
    }

    /// Rank `rank`'s measurement (the ranks are in rank order: found in `log R`).
    pub fn rank(&self, rank: usize) -> Option<&MeasuredRank> {
        let i = self.ranks.binary_search_by_key(&rank, |r| r.rank).ok()?;
        self.ranks.get(i)
    }

    /// The first rank from which no compute action was recovered (an unannotated run): such a
    /// rank would read as an empty, perfect match, so nothing may be compared or fitted.
    pub fn rank_without_actions(&self) -> Option<&MeasuredRank> {
        self.ranks.iter().find(|r| r.actions.is_empty())
    }

    /// Why nothing may be compared or fitted, if that is so.
    pub fn refusal(&self) -> Option<String> {
        let rank = self.rank_without_actions()?;
        let files: Vec<&str> = rank
            .files
            .iter()
            .filter_map(|&f| self.files.get(f))
            .map(String::as_str)
            .collect();
        Some(format!(
            "rank {} ({}): no compute action was recovered from the trace, so there is nothing to compare or fit (see `mpipe trace` for why and how to annotate the run)",
            rank.rank,
            files.join(", ")
        ))
    }
}

/// Events of one source (a file, or a process or thread of a merged file) before ranks are known.
struct Source {
    file: usize,
    rank: Option<(usize, RankSource)>,
    events: Vec<Matched>,
    /// Compute actions inferred from the structure, when the file annotates none.
    inferred: Vec<InferredAction>,
    steps: Vec<StepWindow>,
    /// When the ops that close a step (the optimizer's) end, in time order.
    step_ends: Vec<i64>,
    device_side: bool,
    event_count: usize,
    clock: ClockBase,
    label: String,
}

/// Recovers the schedule from `traces` (one or several files of one run). `user_ranks[i]`, when
/// given, is the rank of file `i`.
pub fn recover(traces: &[RawTrace], rules: &Compiled, user_ranks: &[Option<usize>]) -> Measurement {
    recover_from(Held::Borrowed(traces), rules, user_ranks)
}

/// [`recover`] of traces the caller no longer needs: each file's events (spans, flows, memory
/// samples) are dropped as soon as the last rank that reads them is built, so the measurement
/// grows as the traces shrink (a run's files are held whole only at the start).
pub fn recover_owned(
    traces: Vec<RawTrace>,
    rules: &Compiled,
    user_ranks: &[Option<usize>],
) -> Measurement {
    recover_from(Held::Owned(traces), rules, user_ranks)
}

/// The traces [`recover`] reads: borrowed, or its own to drop a file's events once read.
enum Held<'a> {
    Borrowed(&'a [RawTrace]),
    Owned(Vec<RawTrace>),
}

impl Held<'_> {
    fn all(&self) -> &[RawTrace] {
        match self {
            Held::Borrowed(traces) => traces,
            Held::Owned(traces) => traces,
        }
    }

    /// File `file`'s events dropped, where the traces are recover's own (its name and
    /// warnings stay: the measurement reports them).
    fn release(&mut self, file: usize) {
        if let Held::Owned(traces) = self
            && let Some(t) = traces.get_mut(file)
        {
            t.spans = Vec::new();
            t.kinds = Vec::new();
            t.flows = Vec::new();
            t.memory = Vec::new();
        }
    }
}

fn recover_from(mut held: Held, rules: &Compiled, user_ranks: &[Option<usize>]) -> Measurement {
    let mut warnings = Warnings::default();
    let mut ops = FileOps::new(held.all().len(), rules);
    let mut sources: Vec<Source> = Vec::new();
    let traces = held.all();
    for (file, trace) in traces.iter().enumerate() {
        sources.extend(file_sources(
            file,
            trace,
            rules,
            &mut || ops.launches_kernels(traces, file),
            user_ranks.get(file).copied().flatten(),
            &mut warnings,
        ));
    }

    // Sources without a rank take the lowest ranks nobody claimed.
    let taken: FxHashSet<usize> = sources.iter().filter_map(|s| s.rank.map(|r| r.0)).collect();
    let mut free = (0..).filter(|r| !taken.contains(r));
    for source in sources.iter_mut().filter(|s| s.rank.is_none()) {
        let rank = free.next().unwrap_or(0);
        let label = &source.label;
        warnings.add("rank guessed", label, None, || {
            format!("no rank in the file, its name or its process names: taken as rank {rank} (set it with --rank FILE=N)")
        });
        source.rank = Some((rank, RankSource::Order));
    }

    let mut by_rank: BTreeMap<usize, Vec<Source>> = BTreeMap::new();
    for source in sources {
        let rank = source.rank.map_or(0, |r| r.0);
        by_rank.entry(rank).or_default().push(source);
    }
    // Each rank's files, once: every rank's are counted as readers before any rank is built.
    let by_rank: Vec<(usize, Vec<Source>, FxHashSet<usize>)> = by_rank
        .into_iter()
        .map(|(rank, sources)| {
            let files = sources.iter().map(|s| s.file).collect();
            (rank, sources, files)
        })
        .collect();
    for (_, _, files) in &by_rank {
        ops.read_by(files);
    }
    let mut ranks: Vec<MeasuredRank> = Vec::with_capacity(by_rank.len());
    for (rank, sources, files) in by_rank {
        for &file in &files {
            ops.made(held.all(), file);
        }
        ranks.push(build_rank(rank, sources, held.all(), &ops, &mut warnings));
        for file in files {
            if ops.done_with(file) {
                held.release(file);
            }
        }
    }
    let traces = held.all();
    common_structure_steps(&mut ranks, &mut warnings);
    warn_repeated_actions(&ranks, traces, &mut warnings);
    Measurement {
        files: traces.iter().map(|t| t.file.clone()).collect(),
        ranks,
        warnings: traces
            .iter()
            .flat_map(|t| t.warnings.iter().cloned())
            .chain(warnings.into_vec())
            .collect(),
    }
}

/// Each file's compute ops ([`ComputeOps`]), made when a rank reading them is built and
/// dropped once the last one is: a run's files held them all at once (24 bytes an op, a file
/// of a million ops 25 MB), now one file's at a time where each rank reads its own file.
struct FileOps<'a> {
    rules: &'a Compiled,
    ops: Vec<Option<ComputeOps>>,
    /// Of each file, whether its launches are linked to kernels, once asked.
    launches: Vec<Option<bool>>,
    /// Of each file, how many ranks still to be built read its ops.
    readers: Vec<usize>,
}

impl<'a> FileOps<'a> {
    fn new(files: usize, rules: &'a Compiled) -> Self {
        FileOps {
            rules,
            ops: (0..files).map(|_| None).collect(),
            launches: vec![None; files],
            readers: vec![0; files],
        }
    }

    /// File `file`'s ops (of `traces`), made if they are not held.
    fn made(&mut self, traces: &[RawTrace], file: usize) -> Option<&ComputeOps> {
        let (trace, rules) = (traces.get(file)?, self.rules);
        let slot = self.ops.get_mut(file)?;
        Some(slot.get_or_insert_with(|| ComputeOps::new(trace, rules)))
    }

    /// Whether file `file` links its launches to their kernels: read off its ops, which are
    /// made for it and not kept (the ranks' building makes them again, one file at a time,
    /// rather than every file's being held from the first pass on).
    fn launches_kernels(&mut self, traces: &[RawTrace], file: usize) -> bool {
        if let Some(&Some(known)) = self.launches.get(file) {
            return known;
        }
        let known = match self.get(file) {
            Some(ops) => ops.launches_kernels(),
            None => traces
                .get(file)
                .is_some_and(|t| ComputeOps::new(t, self.rules).launches_kernels()),
        };
        if let Some(slot) = self.launches.get_mut(file) {
            *slot = Some(known);
        }
        known
    }

    /// File `file`'s ops, when held (a rank's building makes every file it reads first).
    fn get(&self, file: usize) -> Option<&ComputeOps> {
        self.ops.get(file)?.as_ref()
    }

    /// One more rank to be built reads `files`.
    fn read_by(&mut self, files: &FxHashSet<usize>) {
        for &file in files {
            if let Some(n) = self.readers.get_mut(file) {
                *n += 1;
            }
        }
    }

    /// A rank that read file `file`'s ops is built: they are dropped after the last one
    /// (`true` then: nothing more reads the file).
    fn done_with(&mut self, file: usize) -> bool {
        let Some(n) = self.readers.get_mut(file) else {
            return false;
        };
        *n = n.saturating_sub(1);
        if *n > 0 {
            return false;
        }
        if let Some(slot) = self.ops.get_mut(file) {
            *slot = None;
        }
        true
    }
}

/// A step that runs an action twice (`PP:0F0` and an overlapped pair naming `0F0` again, or a
/// step marker missing) is warned about, naming the action: the comparison reads the first.
fn warn_repeated_actions(ranks: &[MeasuredRank], traces: &[RawTrace], warnings: &mut Warnings) {
    for r in ranks {
        let mut seen: FxHashSet<(usize, ActionKind, usize, usize)> = FxHashSet::default();
        for e in &r.actions {
            if seen.insert((e.step, e.kind, e.stage, e.mb)) {
                continue;
            }
            let file = traces.get(e.source.file).map_or("", |t| t.file.as_str());
            warnings.add("repeated action", file, Some(e.source.span), || {
                format!(
                    "rank {}, step {}: `{}` runs again in the same step; a step runs each action once, so the trace's annotations overlap (an overlapped pair naming an action also annotated alone) or a step marker is missing; the first is compared",
                    r.rank,
                    e.step,
                    e.label()
                )
            });
        }
    }
}

/// A group of matched events, its label for messages, and its rank when known.
type SourceEvents = (String, Option<(usize, RankSource)>, Vec<Matched>);

fn file_sources(
    file: usize,
    trace: &RawTrace,
    rules: &Compiled,
    launches_kernels: &mut dyn FnMut() -> bool,
    user_rank: Option<usize>,
    warnings: &mut Warnings,
) -> Vec<Source> {
    let (mut matched, mut step_spans, step_ends) = classify_spans(trace, rules, warnings);
    drop_nested(trace, &mut matched);
    let gpu_cat = trace
        .strings
        .iter()
        .position(|s| &**s == GPU_ANNOTATION)
        .map(|i| i as u32);
    let is_gpu = |i: usize| {
        trace
            .spans
            .get(i)
            .is_some_and(|s| Some(trace.kind(s).cat) == gpu_cat)
    };
    // Device-side copies replace the CPU annotations only when they are complete (Kineto copies
    // some ranges to the GPU and not others), and only when the file does not link its launches
    // to their kernels: a copy holds the kernels launched from the annotation's own thread, not
    // a CUDA backward's (the autograd engine launches those from its device thread), while a CPU
    // span timed by the kernels its launches ran ([`ComputeOps::device_compute`]) holds both.
    let on_gpu = matched.iter().filter(|&&(i, _)| is_gpu(i)).count();
    // Whether the file links launches to kernels is asked last (it reads the file's ops).
    let device_side = rules.prefer_gpu_annotations
        && on_gpu > 0
        && on_gpu * 2 >= matched.len()
        && !launches_kernels();
    matched.retain(|&(i, _)| is_gpu(i) == device_side);
    let gpu_steps = step_spans.iter().any(|&(i, _)| is_gpu(i));
    step_spans.retain(|&(i, _)| is_gpu(i) == (device_side && gpu_steps));

    let file_rank = user_rank
        .map(|r| (r, RankSource::User))
        .or_else(|| {
            trace
                .distributed
                .and_then(|d| d.rank)
                .map(|r| (r, RankSource::DistributedInfo))
        })
        .or_else(|| rank_in_path(&trace.file).map(|r| (r, RankSource::FileName)));
    let steps = step_windows(trace, &step_spans);
    let inferred = inferred_actions(trace, rules, &matched, &steps, warnings);
    let split: Vec<SourceEvents> = match file_rank {
        Some(rank) => vec![(trace.file.clone(), Some(rank), matched)],
        None => split_by_track(trace, matched),
    };
    // Inferred actions have no process or thread to split by: they go with a file that is one source.
    let mut inferred = (split.len() == 1).then_some(inferred);
    split
        .into_iter()
        .map(|(label, rank, events)| Source {
            file,
            rank,
            events,
            inferred: inferred.take().unwrap_or_default(),
            steps: steps.clone(),
            step_ends: step_ends.clone(),
            device_side,
            event_count: trace.event_count,
            clock: trace.clock_base(),
            label,
        })
        .collect()
}

/// A span a rule matched, and its class: shared by every span of its kind (name and category; a class is a
/// hundred bytes; a run's files match a few hundred thousand spans, held until ranks are known).
type Matched = (usize, Rc<Classified>);

/// A step marker: its span, and the step number it carries.
type StepSpan = (usize, Option<i64>);

/// The spans that match a schedule rule (a span whose number does not fit is warned about and
/// skipped), the step markers with their numbers, and when the ops that close a step end (in
/// time order); every kind (name and category) classified once.
fn classify_spans(
    trace: &RawTrace,
    rules: &Compiled,
    warnings: &mut Warnings,
) -> (Vec<Matched>, Vec<StepSpan>, Vec<i64>) {
    let mut classes: FxHashMap<u32, Option<Rc<Classified>>> = FxHashMap::default();
    let mut step_names: FxHashMap<u32, Option<Option<i64>>> = FxHashMap::default();
    let mut end_names: FxHashMap<u32, bool> = FxHashMap::default();
    let mut matched: Vec<Matched> = Vec::new();
    let mut step_spans: Vec<StepSpan> = Vec::new();
    let mut step_ends: Vec<i64> = Vec::new();
    for (i, span) in trace.spans.iter().enumerate() {
        let class = classes
            .entry(span.kind)
            .or_insert_with(|| rules.classify(trace.name(span)).map(Rc::new));
        if let Some(c) = class {
            if let Some(group) = c.unreadable {
                let name = trace.name(span);
                warnings.add("unreadable number", &trace.file, Some(i), || {
                    format!(
                        "`{}`: its {group} does not fit a number this version reads (at most {}); the event is skipped",
                        crate::vocab::units::escape_controls(name),
                        usize::MAX
                    )
                });
            } else {
                matched.push((i, Rc::clone(c)));
            }
            continue;
        }
        let step = *step_names
            .entry(span.kind)
            .or_insert_with(|| rules.step(trace.name(span)));
        if let Some(number) = step {
            step_spans.push((i, number));
        } else if *end_names
            .entry(span.kind)
            .or_insert_with(|| rules.ends_step(trace.name(span)))
        {
            step_ends.push(span.end_ns());
        }
    }
    step_ends.sort_unstable();
    (matched, step_spans, step_ends)
}

/// The actions of a file that annotates its transfers and no action, read from its structure
/// (only a pipeline stage's trace, one that sends and receives, is a schedule to infer); what
/// was and was not found is said in the warnings.
fn inferred_actions(
    trace: &RawTrace,
    rules: &Compiled,
    matched: &[Matched],
    steps: &[StepWindow],
    warnings: &mut Warnings,
) -> Vec<InferredAction> {
    let transfers = matched.iter().filter(|(_, c)| !c.kind.is_compute()).count();
    let only_transfers = transfers > 0 && transfers == matched.len();
    let inferred = if only_transfers {
        infer(trace, rules, steps)
    } else {
        Vec::new()
    };
    if !inferred.is_empty() {
        let forwards = inferred
            .iter()
            .filter(|a| a.kind == ActionKind::Forward)
            .count();
        let backwards = inferred.len() - forwards;
        warnings.add("inferred", &trace.file, None, || {
            format!(
                "no per-action annotations: {forwards} forward(s) and {backwards} backward(s) were inferred from the trace's structure (runs of model ops and of autograd ops between its sends and receives), taken as one stage per rank with microbatches in order within each step; a split backward reads as two backwards. Annotate the run (`torch.profiler.record_function(\"PP:<stage>F<mb>\")`) for the exact schedule"
            )
        });
    } else if only_transfers {
        warnings.add("no actions", &trace.file, None, || {
            format!(
                "no per-action annotations: {transfers} transfer(s) but no forward or backward matches a rule, and no model or autograd ops to infer them from, so this rank's schedule cannot be read, and nothing can be compared or fitted (PyTorch's multi-stage schedules record `PP:<stage><F|B|I|W><mb>`, ScheduleGPipe `Forward <mb>`/`Backward <mb>`; a trace with its ops, as `torch.profiler` records them, is read from its structure); wrap each action in `torch.profiler.record_function(\"PP:<stage>F<mb>\")` (or `B`, `I`, `W`), or add a rule for the names this trace has"
            )
        });
    }
    if matched.is_empty() && inferred.is_empty() {
        warnings.add("no schedule", &trace.file, None, || {
            "no schedule annotations (no event name matches a rule): the rank has no actions; \
             add a rule for this trace's names, or annotate the run (torch.distributed.pipelining does)"
                .to_string()
        });
    }
    inferred
}

/// A file without a rank of its own: each process with schedule events is a source (its rank
/// from its name, when it gives one), else each thread (its rank from its name or number, else
/// its position), else the file is one source.
fn split_by_track(trace: &RawTrace, matched: Vec<Matched>) -> Vec<SourceEvents> {
    let process_of = |i: usize| {
        trace
            .spans
            .get(i)
            .and_then(|s| trace.thread(s.thread))
            .map_or(0, |t| t.process)
    };
    let processes: FxHashSet<u32> = matched.iter().map(|&(i, _)| process_of(i)).collect();
    if processes.len() > 1 {
        return group_by(matched, process_of)
            .into_iter()
            .map(|(p, events)| {
                let process = trace.processes.get(p as usize);
                let named = process
                    .and_then(|p| p.name.as_deref())
                    .and_then(rank_in_name);
                let label = format!(
                    "{} (pid {})",
                    trace.file,
                    process.map_or(String::new(), |p| p.key.to_string())
                );
                (label, named.map(|r| (r, RankSource::ProcessName)), events)
            })
            .collect();
    }
    let thread_of = |i: usize| trace.spans.get(i).map_or(0, |s| s.thread);
    let threads: FxHashSet<u32> = matched.iter().map(|&(i, _)| thread_of(i)).collect();
    if threads.len() <= 1 {
        return vec![(trace.file.clone(), None, matched)];
    }
    let mut position = 0;
    group_by(matched, thread_of)
        .into_iter()
        .map(|(t, events)| {
            let thread = trace.thread(t);
            let named = thread
                .and_then(|t| t.name.as_deref())
                .and_then(rank_in_name);
            let number = match thread.map(|t| &t.key) {
                Some(super::raw::TrackKey::Num(n)) => usize::try_from(*n).ok(),
                Some(super::raw::TrackKey::Text(s)) => s.trim().parse().ok(),
                None => None,
            };
            let rank = named.or(number).unwrap_or(position);
            position += 1;
            (
                trace.track_label(t),
                Some((rank, RankSource::Thread)),
                events,
            )
        })
        .collect()
}

/// A match inside another match of the same class on one thread (gloo's `c10d::send` inside
/// `PP:0SEND_F0`, a `Forward 0` inside `PP:0F0`) is the same event seen twice: keep the outer one.
fn drop_nested(trace: &RawTrace, matched: &mut Vec<Matched>) {
    let span = |i: usize| trace.spans.get(i).copied().unwrap_or_default();
    let mut order: Vec<usize> = (0..matched.len()).collect();
    order.sort_by_key(|&k| {
        let s = matched.get(k).map(|m| span(m.0)).unwrap_or_default();
        (s.thread, s.start_ns, std::cmp::Reverse(s.dur_ns))
    });
    let mut keep = vec![true; matched.len()];
    // Per thread and class: the end of the latest kept span.
    let mut open: FxHashMap<(u32, bool), i64> = FxHashMap::default();
    for k in order {
        let Some(&(i, ref c)) = matched.get(k) else {
            continue;
        };
        let s = span(i);
        let end = open
            .entry((s.thread, c.kind.is_compute()))
            .or_insert(i64::MIN);
        if s.end_ns() <= *end {
            if let Some(slot) = keep.get_mut(k) {
                *slot = false;
            }
        } else {
            *end = s.end_ns();
        }
    }
    let mut flags = keep.into_iter();
    matched.retain(|_| flags.next().unwrap_or(true));
}

fn group_by<K: Ord + Copy>(
    items: Vec<Matched>,
    key: impl Fn(usize) -> K,
) -> BTreeMap<K, Vec<Matched>> {
    let mut groups: BTreeMap<K, Vec<Matched>> = BTreeMap::new();
    for item in items {
        groups.entry(key(item.0)).or_default().push(item);
    }
    groups
}

fn step_windows(trace: &RawTrace, step_spans: &[(usize, Option<i64>)]) -> Vec<StepWindow> {
    let mut windows: Vec<StepWindow> = step_spans
        .iter()
        .filter_map(|&(i, number)| {
            trace.spans.get(i).map(|s| StepWindow {
                number,
                start_ns: s.start_ns,
                end_ns: s.end_ns(),
            })
        })
        .collect();
    windows.sort_by_key(|w| (w.start_ns, w.end_ns));
    windows.dedup_by_key(|w| (w.number, w.start_ns));
    windows
}

/// A recovered event before the microbatches are numbered: its microbatch as the rule gave it
/// (`None`: numbered in order within its step, [`number_microbatches`]).
struct Pending {
    event: MeasuredEvent,
    mb: Option<usize>,
    /// When its span starts on the thread that recorded it (the CPU's, for an event timed by
    /// its kernels on the device): what a step's closing ops, also CPU ops, are compared with.
    anchor_ns: i64,
    /// Where it falls in the rank's order and in the step markers' windows: its start, or for an
    /// event timed by its kernels, when the CPU issued it (its span's start there). The CPU runs
    /// ahead of the device, so an action that launched nothing (its span's time is the CPU's)
    /// would otherwise sort before device work issued earlier, and a step's last kernels, run
    /// after the CPU marked the next step, would fall into it.
    order_ns: i64,
    /// Whether it is timed by the kernels it launched.
    on_device: bool,
}

impl Pending {
    /// The key events are sorted by: [`Pending::order_ns`], then the event's own times.
    fn order(&self) -> (i64, i64, i64) {
        (self.order_ns, self.event.start_ns, self.event.end_ns)
    }
}

fn build_rank(
    rank: usize,
    sources: Vec<Source>,
    traces: &[RawTrace],
    ops: &FileOps,
    warnings: &mut Warnings,
) -> MeasuredRank {
    let files = rank_files(rank, &sources, traces, warnings);
    let rank_source = sources
        .first()
        .and_then(|s| s.rank)
        .map_or(RankSource::Order, |r| r.1);
    let mut file_sources: Vec<(usize, RankSource)> = sources
        .iter()
        .map(|s| (s.file, s.rank.map_or(RankSource::Order, |r| r.1)))
        .collect();
    file_sources.dedup_by_key(|f| f.0);
    let clock = sources.first().map_or(ClockBase::Local, |s| s.clock);
    let device_side = sources.iter().any(|s| s.device_side);
    let event_count = {
        let mut seen = FxHashSet::default();
        sources
            .iter()
            .filter(|s| seen.insert(s.file))
            .map(|s| s.event_count)
            .sum()
    };
    let mut steps: Vec<StepWindow> = sources
        .iter()
        .flat_map(|s| s.steps.iter().copied())
        .collect();
    steps.sort_by_key(|w| (w.start_ns, w.end_ns));
    steps.dedup();

    let mut step_ends: Vec<i64> = sources
        .iter()
        .flat_map(|s| s.step_ends.iter().copied())
        .collect();
    step_ends.sort_unstable();
    step_ends.dedup();

    let mut pending = annotated_events(rank, &sources, traces, ops);
    pending.extend(inferred_events(rank, &sources, ops));
    let inferred = sources.iter().any(|s| !s.inferred.is_empty());
    let timed_by_kernels = pending.iter().any(|p| p.on_device);
    let memory = measured_memory(files.iter().filter_map(|&f| traces.get(f)));
    pending.sort_by_key(Pending::order);

    let step_source;
    if !steps.is_empty() {
        step_source = StepSource::Markers;
        for p in &mut pending {
            p.event.step = steps
                .iter()
                .rposition(|w| w.start_ns <= p.order_ns)
                .unwrap_or(0);
        }
    } else if !step_ends.is_empty() {
        step_source = StepSource::StepEnds;
        steps = steps_from_ends(&mut pending, &step_ends);
    } else if pending
        .iter()
        .any(|p| p.mb.is_some() && p.event.kind.is_compute())
    {
        step_source = StepSource::Repetition;
        steps = steps_from_repetition(&mut pending);
    } else {
        let forwards = structure_period(&pending);
        step_source = StepSource::Structure { forwards };
        steps = steps_of_forwards(&mut pending, forwards);
    }
    let mut events = number_microbatches(pending);
    transfers_join_their_actions(&mut events);
    let (actions, transfers) = events.into_iter().partition(|e| e.kind.is_compute());
    MeasuredRank {
        rank,
        files,
        rank_source,
        sources: file_sources,
        clock,
        steps,
        step_source,
        actions,
        transfers,
        device_side,
        timed_by_kernels,
        inferred,
        memory,
        event_count,
    }
}

/// The files of rank `rank`, in order; several are merged, with a warning that says so.
fn rank_files(
    rank: usize,
    sources: &[Source],
    traces: &[RawTrace],
    warnings: &mut Warnings,
) -> Vec<usize> {
    let mut files: Vec<usize> = sources.iter().map(|s| s.file).collect();
    files.dedup();
    if files.len() > 1 {
        let names: Vec<&str> = files
            .iter()
            .filter_map(|&f| traces.get(f))
            .map(|t| t.file.as_str())
            .collect();
        warnings.add("merged", names.first().copied().unwrap_or(""), None, || {
            format!(
                "several files are rank {rank}; merged: {}",
                names.join(", ")
            )
        });
    }
    files
}

/// The events of the annotated spans of a rank's files, each timed where it ran (on the device
/// when its ops launched kernels), its compute told from its wait; an overlapped pair's span is
/// two events.
fn annotated_events(
    rank: usize,
    sources: &[Source],
    traces: &[RawTrace],
    ops: &FileOps,
) -> Vec<Pending> {
    sources
        .iter()
        .flat_map(|s| {
            s.events.iter().flat_map(move |&(span, ref c)| {
                let Some(sp) = traces.get(s.file).and_then(|t| t.spans.get(span)) else {
                    return Vec::new();
                };
                // A compute action's compute runs from the first op inside its span to the last
                // (an overlapped pair's halves: the union of each one's ops); a transfer is all
                // transfer.
                let compute = |start: i64, end: i64| {
                    if c.kind.is_compute() {
                        span_compute(ops.get(s.file), sp.thread, start, end)
                    } else {
                        (end - start, start, end)
                    }
                };
                // A CPU span whose ops launched kernels ran on the device: it is timed where
                // its kernels ran, from the first one's start to the last one's end.
                let device = (c.kind.is_compute() && c.paired.is_none()).then(|| {
                    ops.get(s.file)
                        .and_then(|o| o.device_compute(sp.thread, sp.start_ns, sp.end_ns()))
                });
                let on_device = matches!(device, Some(Some(_)));
                let (start_ns, end_ns, (compute_ns, compute_start_ns, compute_end_ns)) =
                    match device {
                        Some(Some((total, (first, last)))) => (first, last, (total, first, last)),
                        _ => (sp.start_ns, sp.end_ns(), compute(sp.start_ns, sp.end_ns())),
                    };
                let (host_start_ns, host_end_ns) = if on_device {
                    (sp.start_ns, sp.end_ns())
                } else {
                    (compute_start_ns, compute_end_ns)
                };
                let event = MeasuredEvent {
                    stage: c.stage.unwrap_or(rank),
                    kind: c.kind,
                    direction: c.direction,
                    mb: 0,
                    start_ns,
                    end_ns,
                    step: 0,
                    source: SpanRef { file: s.file, span },
                    compute_ns,
                    compute_start_ns,
                    compute_end_ns,
                    host_start_ns,
                    host_end_ns,
                };
                let Some((kind, stage, mb)) = c.paired else {
                    return vec![Pending {
                        event,
                        mb: c.mb,
                        anchor_ns: sp.start_ns,
                        order_ns: sp.start_ns,
                        on_device,
                    }];
                };
                // An overlapped pair's span (`PP:(…;…)OVERLAP_F_B`) times the pair as one: each
                // compute op in it goes to the forward or the backward by what it is (the
                // autograd engine's work is the backward's), each action's compute is the union
                // of its own ops, and the span is parted where the first of them ends. When both
                // launched kernels, those tell the two apart the same way (the forward's from
                // the span's thread, the backward's from the engine's ops, on its own device
                // thread too), and the pair is timed where they ran. When the span's thread
                // shows only one of the two (no ops at all: annotations only; or the backward's
                // ops on the autograd engine's own thread), they cannot be told apart: the pair
                // is parted at the span's middle, each half all compute.
                let on_kernels = ops.get(s.file).and_then(|o| {
                    let part =
                        |phase| o.device_compute_of(phase, sp.thread, sp.start_ns, sp.end_ns());
                    Some((part(OpPhase::Forward)?, part(OpPhase::Backward)?))
                });
                let halves = || {
                    let mid = sp.start_ns.saturating_add(sp.dur_ns / 2);
                    (
                        (mid - sp.start_ns, (sp.start_ns, mid)),
                        (sp.end_ns() - mid, (mid, sp.end_ns())),
                    )
                };
                let parts = || {
                    ops.get(s.file).filter(|o| !o.is_empty()).and_then(|o| {
                        let part = |phase| o.compute_of(phase, sp.thread, sp.start_ns, sp.end_ns());
                        let ((f, fe), (b, be)) = (part(OpPhase::Forward), part(OpPhase::Backward));
                        Some(((f, fe?), (b, be?)))
                    })
                };
                let on_device = on_kernels.is_some();
                let ((f_ns, (f_first, f_last)), (b_ns, (b_first, b_last))) =
                    on_kernels.or_else(parts).unwrap_or_else(halves);
                // The pair's window: its span, or from its first kernel to its last.
                let (from, to) = if on_device {
                    (f_first.min(b_first), f_last.max(b_last))
                } else {
                    (sp.start_ns, sp.end_ns())
                };
                let parted_at = f_last.min(b_first).clamp(from, to);
                // Kernels of the two may overlap on separate streams: each half computes at
                // most its own part of the window.
                let (f_ns, b_ns) = if on_device {
                    (f_ns.min(parted_at - from), b_ns.min(to - parted_at))
                } else {
                    (f_ns, b_ns)
                };
                let (f_compute, b_compute) = (
                    (f_first.min(parted_at), parted_at),
                    (b_first.max(parted_at), b_last.max(b_first.max(parted_at))),
                );
                // On the host's clock (the memory samples'): each half's compute, or on the
                // device, the CPU span parted where the forward's CPU ops end (its middle when
                // its thread shows none).
                let (f_host, b_host) = if on_device {
                    let forward_ops = ops.get(s.file).and_then(|o| {
                        o.compute_of(OpPhase::Forward, sp.thread, sp.start_ns, sp.end_ns())
                            .1
                    });
                    let parted = forward_ops.map_or(halves().0.1.1, |(_, last)| last);
                    ((sp.start_ns, parted), (parted, sp.end_ns()))
                } else {
                    (f_compute, b_compute)
                };
                let forward = MeasuredEvent {
                    start_ns: from,
                    end_ns: parted_at,
                    compute_ns: f_ns,
                    compute_start_ns: f_compute.0,
                    compute_end_ns: f_compute.1,
                    host_start_ns: f_host.0,
                    host_end_ns: f_host.1,
                    ..event
                };
                let backward = MeasuredEvent {
                    kind,
                    direction: None,
                    stage: stage.unwrap_or(rank),
                    start_ns: parted_at,
                    end_ns: to,
                    compute_ns: b_ns,
                    compute_start_ns: b_compute.0,
                    compute_end_ns: b_compute.1,
                    host_start_ns: b_host.0,
                    host_end_ns: b_host.1,
                    ..event
                };
                vec![
                    Pending {
                        event: forward,
                        mb: c.mb,
                        anchor_ns: sp.start_ns,
                        // Its span's start, wherever it ran: a pair is issued when its span opens.
                        order_ns: sp.start_ns,
                        on_device,
                    },
                    Pending {
                        event: backward,
                        mb,
                        anchor_ns: sp.start_ns,
                        order_ns: if on_device {
                            sp.start_ns
                        } else {
                            backward.start_ns
                        },
                        on_device,
                    },
                ]
            })
        })
        .collect()
}

/// Inferred actions: their runs of ops, on the rank's own stage (one stage per rank), numbered
/// in order.
fn inferred_events<'a>(
    rank: usize,
    sources: &'a [Source],
    ops: &'a FileOps,
) -> impl Iterator<Item = Pending> + 'a {
    sources.iter().flat_map(move |s| {
        s.inferred.iter().map(move |a| {
            let (compute_ns, compute_start_ns, compute_end_ns) =
                span_compute(ops.get(s.file), a.thread, a.start_ns, a.end_ns);
            Pending {
                event: MeasuredEvent {
                    stage: rank,
                    kind: a.kind,
                    direction: None,
                    mb: 0,
                    start_ns: a.start_ns,
                    end_ns: a.end_ns,
                    step: 0,
                    source: SpanRef {
                        file: s.file,
                        span: a.span,
                    },
                    compute_ns,
                    compute_start_ns,
                    compute_end_ns,
                    host_start_ns: compute_start_ns,
                    host_end_ns: compute_end_ns,
                },
                mb: None,
                anchor_ns: a.start_ns,
                order_ns: a.start_ns,
                on_device: false,
            }
        })
    })
}

/// The memory samples of a rank's files on one device: an accelerator's (the one with most
/// samples) when there is one, else the CPU's.
fn measured_memory<'a>(traces: impl Iterator<Item = &'a RawTrace>) -> Option<MeasuredMemory> {
    let mut by_device: BTreeMap<(i64, i64), Vec<(i64, f64)>> = BTreeMap::new();
    for t in traces {
        for m in &t.memory {
            by_device
                .entry((m.device_type, m.device_id))
                .or_default()
                .push((m.ts_ns, m.bytes));
        }
    }
    let ((device_type, device_id), mut samples) = by_device
        .into_iter()
        .max_by_key(|((kind, _), samples)| (*kind != 0, samples.len()))?;
    samples.sort_by_key(|s| s.0);
    Some(MeasuredMemory {
        device_type,
        device_id,
        samples,
    })
}

/// The compute inside `[start, end)` on `thread` and when it starts. A file with no ops at all
/// (annotations only) cannot tell compute from waiting: the whole span is taken as compute.
fn span_compute(ops: Option<&ComputeOps>, thread: u32, start: i64, end: i64) -> (i64, i64, i64) {
    match ops {
        Some(o) if !o.is_empty() => {
            let (total, extent) = o.compute(thread, start, end);
            let (first, last) = extent.unwrap_or((start, end));
            (total, first, last)
        }
        _ => (end.saturating_sub(start), start, end),
    }
}

/// A transfer belongs to the step of the action it serves (the forward or backward of its stage
/// and microbatch nearest in time), not to the step whose marker it happens to follow: PyTorch
/// posts a step's first receives before the profiler marks the step.
fn transfers_join_their_actions(events: &mut [MeasuredEvent]) {
    let mut actions: FxHashMap<(usize, usize, bool), Vec<(i64, usize)>> = FxHashMap::default();
    for e in events.iter().filter(|e| e.kind.is_compute()) {
        let backward = !e.kind.is_forward();
        actions
            .entry((e.stage, e.mb, backward))
            .or_default()
            .push((e.start_ns, e.step));
    }
    for list in actions.values_mut() {
        list.sort_unstable();
    }
    // The action of a sorted list nearest to `t`: one of the two around it.
    let nearest_in = |list: &[(i64, usize)], t: i64| {
        let i = list.partition_point(|&(at, _)| at < t);
        [i.checked_sub(1), Some(i)]
            .into_iter()
            .flatten()
            .filter_map(|i| list.get(i).copied())
            .min_by_key(|(at, _)| at.saturating_sub(t).unsigned_abs())
    };
    for e in events.iter_mut().filter(|e| !e.kind.is_compute()) {
        // Without a direction, a transfer may serve either phase.
        let phases: &[bool] = match e.direction {
            Some(Direction::Activation) => &[false],
            Some(Direction::Gradient) => &[true],
            None => &[false, true],
        };
        let nearest = phases
            .iter()
            .filter_map(|&b| actions.get(&(e.stage, e.mb, b)))
            .filter_map(|list| nearest_in(list, e.start_ns))
            .min_by_key(|(at, _)| at.saturating_sub(e.start_ns).unsigned_abs());
        if let Some((_, step)) = nearest {
            e.step = step;
        }
    }
}

/// The windows of the steps events were given (numbered from 0 with none skipped): each from
/// its first event's start to its last event's end.
fn windows_of(events: &[Pending]) -> Vec<StepWindow> {
    // Steps are counted from the events, so there are at most as many as events.
    let count = events
        .iter()
        .map(|p| p.event.step.saturating_add(1))
        .max()
        .unwrap_or(0)
        .min(events.len());
    let mut windows: Vec<Option<StepWindow>> = vec![None; count];
    for e in events.iter().map(|p| &p.event) {
        if let Some(slot) = windows.get_mut(e.step) {
            let w = slot.get_or_insert(StepWindow {
                number: None,
                start_ns: e.start_ns,
                end_ns: e.end_ns,
            });
            w.start_ns = w.start_ns.min(e.start_ns);
            w.end_ns = w.end_ns.max(e.end_ns);
        }
    }
    // A step no event landed in (not made by the callers) is an empty window where the last ended.
    let mut last_end = 0;
    windows
        .into_iter()
        .map(|w| {
            let w = w.unwrap_or(StepWindow {
                number: None,
                start_ns: last_end,
                end_ns: last_end,
            });
            last_end = w.end_ns;
            w
        })
        .collect()
}

/// Without step markers, each op that closes a step (the optimizer's) ends one: an event belongs
/// to the step of the closing ops after it. Steps with no compute action (the optimizer's step
/// and zeroing of the gradients both close one) are not steps. Returns the steps' windows.
fn steps_from_ends(events: &mut [Pending], ends: &[i64]) -> Vec<StepWindow> {
    // The closing ops are the CPU's: an event is placed by where its span starts there (its
    // anchor), not by when its kernels ran on a device.
    let closed_before = |t: i64| ends.partition_point(|&end| end <= t);
    let mut numbered: Vec<usize> = events
        .iter()
        .filter(|p| p.event.kind.is_compute())
        .map(|p| closed_before(p.anchor_ns))
        .collect();
    numbered.sort_unstable();
    numbered.dedup();
    for p in events.iter_mut() {
        let raw = closed_before(p.anchor_ns);
        // The step of the last compute before it (a transfer between steps joins its action
        // later: [`transfers_join_their_actions`]).
        p.event.step = numbered.partition_point(|&n| n <= raw).saturating_sub(1);
    }
    windows_of(events)
}

/// The shortest period, in forwards, of the run's sequence of compute kinds (`F`, `B`, …): the
/// smallest number of actions `p` dividing their count such that the sequence repeats every `p`
/// actions, with at least one forward per period. The whole run (its forward count) when nothing
/// shorter repeats.
fn structure_period(events: &[Pending]) -> usize {
    let kinds: Vec<ActionKind> = events
        .iter()
        .map(|p| p.event.kind)
        .filter(|k| k.is_compute())
        .collect();
    let n = kinds.len();
    let forwards =
        |slice: &[ActionKind]| slice.iter().filter(|&&k| k == ActionKind::Forward).count();
    (1..=n)
        .filter(|p| n.is_multiple_of(*p))
        .find(|&p| {
            kinds.get(..p).is_some_and(|head| forwards(head) > 0)
                && kinds.iter().zip(kinds.iter().skip(p)).all(|(a, b)| a == b)
        })
        .and_then(|p| kinds.get(..p).map(forwards))
        .unwrap_or(0)
}

/// Steps of `forwards` forwards each: a step begins at every `forwards`-th forward, and every
/// other event goes with the step of the last forward before it (the first step's, before any).
/// Returns the steps' windows.
fn steps_of_forwards(events: &mut [Pending], forwards: usize) -> Vec<StepWindow> {
    let mut seen = 0usize;
    for p in events.iter_mut() {
        if p.event.kind == ActionKind::Forward {
            seen += 1;
        }
        p.event.step = seen.saturating_sub(1).checked_div(forwards).unwrap_or(0);
    }
    windows_of(events)
}

/// Ranks whose steps were told from the run's structure share one step length: the least common
/// multiple of their periods (1F1B's last rank repeats every forward, its first every `M`). When
/// that leaves a single step, the steps could not be told apart, and a warning says so.
fn common_structure_steps(ranks: &mut [MeasuredRank], warnings: &mut Warnings) {
    let periods: Vec<usize> = ranks
        .iter()
        .filter_map(|r| match r.step_source {
            StepSource::Structure { forwards } if forwards > 0 => Some(forwards),
            _ => None,
        })
        .collect();
    // No common length (an overflow): each rank keeps its own.
    let common = periods.iter().try_fold(1usize, |l, &p| lcm(l, p));
    for rank in ranks.iter_mut() {
        let StepSource::Structure { forwards } = rank.step_source else {
            continue;
        };
        let total = rank
            .actions
            .iter()
            .filter(|a| a.kind == ActionKind::Forward)
            .count();
        let label = format!("rank {}", rank.rank);
        match common {
            Some(common) if forwards > 0 && common != forwards => {
                if total % common == 0 {
                    regroup(rank, common);
                } else {
                    warnings.add("steps differ", &label, None, || {
                        format!(
                            "its forwards repeat every {forwards}, the other ranks' every {common}, which does not divide its {total}: its steps are its own, and may not line up with the other ranks'"
                        )
                    });
                }
            }
            _ => {}
        }
        let steps = rank.steps.len();
        rank.step_source = if steps > 1 {
            StepSource::Structure {
                forwards: total.checked_div(steps).unwrap_or(total),
            }
        } else {
            StepSource::Unknown
        };
        // A rank with no forward has its own warning (nothing was recovered from it).
        if steps <= 1 && total > 0 {
            warnings.add("one step", &label, None, || {
                format!(
                    "no step markers, no optimizer ops, and the run's structure does not repeat: its {total} forward(s) are read as ONE step; profile with a profiler schedule (`torch.profiler.schedule(...)`, so each step is marked ProfilerStep#N) or step an optimizer between steps"
                )
            });
        }
    }
}

/// The least common multiple; `None` on overflow or a zero.
fn lcm(a: usize, b: usize) -> Option<usize> {
    if a == 0 || b == 0 {
        return None;
    }
    let (mut x, mut y) = (a, b);
    while y != 0 {
        (x, y) = (y, x % y);
    }
    (a / x).checked_mul(b)
}

/// Gives a rank's actions (inferred, so numbered in order) steps of `forwards` forwards each and
/// numbers their microbatches again within those steps; transfers join their actions.
fn regroup(rank: &mut MeasuredRank, forwards: usize) {
    let mut events: Vec<Pending> = rank
        .actions
        .drain(..)
        .chain(rank.transfers.drain(..))
        .map(|event| Pending {
            event,
            mb: None,
            anchor_ns: event.start_ns,
            order_ns: event.start_ns,
            on_device: false,
        })
        .collect();
    events.sort_by_key(Pending::order);
    rank.steps = steps_of_forwards(&mut events, forwards);
    let mut events = number_microbatches(events);
    transfers_join_their_actions(&mut events);
    let (actions, transfers) = events.into_iter().partition(|e| e.kind.is_compute());
    rank.actions = actions;
    rank.transfers = transfers;
}

/// Without step markers, a new step begins when a compute action with a known microbatch
/// repeats. Returns the steps' windows.
fn steps_from_repetition(events: &mut [Pending]) -> Vec<StepWindow> {
    let mut seen: FxHashSet<(usize, ActionKind, usize)> = FxHashSet::default();
    let mut step = 0;
    for p in events.iter_mut() {
        let e = &mut p.event;
        if let Some(mb) = p.mb
            && e.kind.is_compute()
            && !seen.insert((e.stage, e.kind, mb))
        {
            step += 1;
            seen.clear();
            seen.insert((e.stage, e.kind, mb));
        }
        e.step = step;
    }
    windows_of(events)
}

/// Every event's microbatch: as its rule gave it, else numbered in order within its step (by
/// step, stage, kind and direction).
fn number_microbatches(pending: Vec<Pending>) -> Vec<MeasuredEvent> {
    let mut next: FxHashMap<(usize, usize, ActionKind, Option<Direction>), usize> =
        FxHashMap::default();
    pending
        .into_iter()
        .map(|Pending { mut event, mb, .. }| {
            event.mb = mb.unwrap_or_else(|| {
                let e = &event;
                let n = next
                    .entry((e.step, e.stage, e.kind, e.direction))
                    .or_insert(0);
                *n += 1;
                *n - 1
            });
            event
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::raw::MemorySample;

    /// The measurement of one rank-0 trace given as text, with the built-in rules.
    fn recovered(text: &str) -> Measurement {
        let trace = crate::trace::import_bytes(text.as_bytes(), "rank0.json").unwrap();
        let rules = crate::trace::rules::RuleSet::default().compile().unwrap();
        recover(&[trace], &rules, &[Some(0)])
    }

    /// Recovering traces it owns (dropping each file's events once its last rank is built)
    /// gives the measurement of recovering borrowed ones: every recorded run's folder read as
    /// one run, every file alone, and the same file given twice (two ranks from one file's
    /// name, and a rank read from two files).
    #[test]
    fn owned_traces_recover_as_borrowed_ones() {
        let rules = crate::trace::rules::RuleSet::default().compile().unwrap();
        let mut runs: Vec<Vec<std::path::PathBuf>> = Vec::new();
        for files in crate::trace::fixture_folders() {
            runs.extend(files.iter().map(|f| vec![f.clone()]));
            if let Some(first) = files.first() {
                runs.push(vec![first.clone(), first.clone()]);
            }
            runs.push(files);
        }
        let mut compared = 0;
        for run in runs {
            let traces: Option<Vec<RawTrace>> = run
                .iter()
                .map(|path| {
                    let bytes = std::fs::read(path).unwrap();
                    crate::trace::import_bytes(&bytes, &path.display().to_string()).ok()
                })
                .collect();
            let Some(traces) = traces.filter(|t| !t.is_empty()) else {
                continue;
            };
            for users in [
                vec![None; traces.len()],
                (0..traces.len()).map(|_| Some(0)).collect(),
            ] {
                let borrowed = recover(&traces, &rules, &users);
                let owned = recover_owned(traces.clone(), &rules, &users);
                assert_eq!(format!("{owned:?}"), format!("{borrowed:?}"), "{run:?}");
                compared += 1;
            }
        }
        assert!(compared > 100, "{compared} runs");
    }

    #[test]
    fn a_cpu_span_that_launched_kernels_computes_where_they_ran() {
        // `PP:0F0` on the CPU launches two kernels (Kineto's `ac2g` flows) that run later on a
        // stream, overlapping; `PP:0B0` launches none and computes on the CPU.
        let text = r#"{"traceEvents":[
          {"ph":"X","cat":"user_annotation","name":"PP:0F0","pid":1,"tid":1,"ts":0,"dur":100},
          {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":10,"dur":5},
          {"ph":"s","id":7,"cat":"ac2g","name":"ac2g","pid":1,"tid":1,"ts":10},
          {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":20,"dur":5},
          {"ph":"s","id":8,"cat":"ac2g","name":"ac2g","pid":1,"tid":1,"ts":20},
          {"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"ts":150,"dur":30},
          {"ph":"f","id":7,"cat":"ac2g","name":"ac2g","pid":0,"tid":7,"ts":150,"bp":"e"},
          {"ph":"X","cat":"kernel","name":"relu","pid":0,"tid":7,"ts":170,"dur":30},
          {"ph":"f","id":8,"cat":"ac2g","name":"ac2g","pid":0,"tid":7,"ts":170,"bp":"e"},
          {"ph":"X","cat":"user_annotation","name":"PP:0B0","pid":1,"tid":1,"ts":300,"dur":100},
          {"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":320,"dur":40}
        ]}"#;
        let m = recovered(text);
        let got: Vec<(String, i64, i64, i64)> = m.ranks[0]
            .actions
            .iter()
            .map(|a| (a.label(), a.start_ns, a.end_ns, a.compute_ns))
            .collect();
        assert_eq!(
            got,
            [
                ("0F0".to_string(), 150_000, 200_000, 50_000),
                ("0B0".to_string(), 300_000, 400_000, 40_000)
            ]
        );
    }

    #[test]
    fn a_cuda_backward_is_timed_by_the_kernels_the_autograd_thread_launched_for_it() {
        // As PyTorch runs on a GPU: `PP:0F0` launches a kernel from the main thread (1); the
        // main thread then waits inside `PP:0B0` while the autograd engine's device thread (2)
        // launches the backward's kernel, which runs past the next step marker (100 µs). A
        // `fwdbwd` flow joins the forward's op to its backward op: no launch. The helper
        // thread's copy outside the engine's ops is not the backward's. `PP:0F1` launches
        // nothing: timed by its CPU span (72 µs), it still comes after the backward the CPU
        // issued before it, whose kernel starts later (80 µs), and both stay in step 0.
        let text = r#"{"traceEvents":[
          {"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":0,"dur":100},
          {"ph":"X","cat":"user_annotation","name":"ProfilerStep#2","pid":1,"tid":1,"ts":100,"dur":100},
          {"ph":"X","cat":"user_annotation","name":"PP:0F0","pid":1,"tid":1,"ts":10,"dur":20},
          {"ph":"X","cat":"cpu_op","name":"aten::addmm","pid":1,"tid":1,"ts":14,"dur":8},
          {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":15,"dur":2},
          {"ph":"s","id":1,"cat":"ac2g","name":"ac2g","pid":1,"tid":1,"ts":15},
          {"ph":"s","id":9,"cat":"fwdbwd","name":"fwdbwd","pid":1,"tid":1,"ts":20},
          {"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"ts":50,"dur":30},
          {"ph":"f","id":1,"cat":"ac2g","name":"ac2g","pid":0,"tid":7,"ts":50,"bp":"e"},
          {"ph":"X","cat":"user_annotation","name":"PP:0B0","pid":1,"tid":1,"ts":40,"dur":30},
          {"ph":"X","cat":"cpu_op","name":"autograd::engine::evaluate_function: AddmmBackward0","pid":1,"tid":2,"ts":45,"dur":20},
          {"ph":"f","id":9,"cat":"fwdbwd","name":"fwdbwd","pid":1,"tid":2,"ts":45,"bp":"e"},
          {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":2,"ts":50,"dur":2},
          {"ph":"s","id":2,"cat":"ac2g","name":"ac2g","pid":1,"tid":2,"ts":50},
          {"ph":"X","cat":"kernel","name":"gemm_backward","pid":0,"tid":7,"ts":80,"dur":40},
          {"ph":"f","id":2,"cat":"ac2g","name":"ac2g","pid":0,"tid":7,"ts":80,"bp":"e"},
          {"ph":"X","cat":"cuda_runtime","name":"cudaMemcpyAsync","pid":1,"tid":2,"ts":68,"dur":1},
          {"ph":"s","id":3,"cat":"ac2g","name":"ac2g","pid":1,"tid":2,"ts":68},
          {"ph":"X","cat":"gpu_memcpy","name":"Memcpy HtoD","pid":0,"tid":7,"ts":130,"dur":5},
          {"ph":"f","id":3,"cat":"ac2g","name":"ac2g","pid":0,"tid":7,"ts":130,"bp":"e"},
          {"ph":"X","cat":"user_annotation","name":"PP:0F1","pid":1,"tid":1,"ts":72,"dur":5}
        ]}"#;
        let m = recovered(text);
        let got: Vec<(String, usize, i64, i64, i64)> = m.ranks[0]
            .actions
            .iter()
            .map(|a| (a.label(), a.step, a.start_ns, a.end_ns, a.compute_ns))
            .collect();
        assert_eq!(
            got,
            [
                ("0F0".to_string(), 0, 50_000, 80_000, 30_000),
                ("0B0".to_string(), 0, 80_000, 120_000, 40_000),
                ("0F1".to_string(), 0, 72_000, 77_000, 0)
            ]
        );
        assert!(m.ranks[0].timed_by_kernels && !m.ranks[0].device_side);
    }

    #[test]
    fn an_overlapped_pair_gives_each_op_to_the_action_it_is_part_of() {
        // One pair span: the forward's op (5..30 µs), then the backward's autograd op (40..90)
        // with an op inside it. Cut at the span's middle (50), the autograd op would count in
        // neither half; read by what each op is, the forward computed 25 µs and the backward 50.
        let text = r#"{"traceEvents":[
          {"ph":"X","cat":"user_annotation","name":"PP:(0F1;1B0)OVERLAP_F_B","pid":1,"tid":1,"ts":0,"dur":100},
          {"ph":"X","cat":"cpu_op","name":"aten::addmm","pid":1,"tid":1,"ts":5,"dur":25},
          {"ph":"X","cat":"cpu_op","name":"autograd::engine::evaluate_function: AddmmBackward0","pid":1,"tid":1,"ts":40,"dur":50},
          {"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":45,"dur":30}
        ]}"#;
        let m = recovered(text);
        let got: Vec<(String, i64, i64, i64, i64)> = m.ranks[0]
            .actions
            .iter()
            .map(|a| {
                (
                    a.label(),
                    a.start_ns,
                    a.end_ns,
                    a.compute_ns,
                    a.compute_start_ns,
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("0F1".to_string(), 0, 30_000, 25_000, 5_000),
                ("1B0".to_string(), 30_000, 100_000, 50_000, 40_000)
            ]
        );
    }

    #[test]
    fn a_pair_whose_thread_shows_one_action_is_parted_at_its_middle() {
        // The backward's ops ran on another thread (the autograd engine's): the pair's thread
        // shows the forward's only, so the two cannot be told apart there.
        let text = r#"{"traceEvents":[
          {"ph":"X","cat":"user_annotation","name":"PP:(0F1;1B0)OVERLAP_F_B","pid":1,"tid":1,"ts":0,"dur":100},
          {"ph":"X","cat":"cpu_op","name":"aten::addmm","pid":1,"tid":1,"ts":5,"dur":25},
          {"ph":"X","cat":"cpu_op","name":"autograd::engine::evaluate_function: AddmmBackward0","pid":1,"tid":2,"ts":40,"dur":50}
        ]}"#;
        let m = recovered(text);
        let got: Vec<(String, i64, i64, i64)> = m.ranks[0]
            .actions
            .iter()
            .map(|a| (a.label(), a.start_ns, a.end_ns, a.compute_ns))
            .collect();
        assert_eq!(
            got,
            [
                ("0F1".to_string(), 0, 50_000, 50_000),
                ("1B0".to_string(), 50_000, 100_000, 50_000)
            ]
        );
    }

    #[test]
    fn a_transfer_belongs_to_the_step_of_the_action_it_serves() {
        let event = |kind, direction, mb, start_ns, step| MeasuredEvent {
            stage: 1,
            kind,
            direction,
            mb,
            start_ns,
            end_ns: start_ns + 1,
            step,
            source: SpanRef { file: 0, span: 0 },
            compute_ns: 1,
            compute_start_ns: start_ns,
            compute_end_ns: start_ns + 1,
            host_start_ns: start_ns,
            host_end_ns: start_ns + 1,
        };
        use ActionKind::*;
        let mut events = [
            // Step 0's last backward, then step 1's forward of microbatch 0, whose receive was
            // posted just before step 1's marker (so the marker put it in step 0).
            event(Backward, None, 0, 10, 0),
            event(Recv, Some(Direction::Activation), 0, 95, 0),
            event(Forward, None, 0, 110, 1),
            // A gradient's receive goes with the backward nearest in time.
            event(Recv, Some(Direction::Gradient), 0, 20, 1),
        ];
        transfers_join_their_actions(&mut events);
        let steps: Vec<usize> = events.iter().map(|e| e.step).collect();
        assert_eq!(steps, [0, 1, 1, 0]);
    }

    #[test]
    fn a_ranks_memory_is_its_accelerators_with_levels_and_peaks() {
        let sample = |ts_ns, bytes, device_type| MemorySample {
            ts_ns,
            bytes,
            device_type,
            device_id: 0,
        };
        let trace = RawTrace {
            memory: vec![
                sample(30, 5.0, 0),
                sample(10, 100.0, 1),
                sample(20, 300.0, 1),
                sample(40, 200.0, 1),
                sample(15, 1.0, 0),
                sample(16, 2.0, 0),
            ],
            ..RawTrace::default()
        };
        // The accelerator wins over the CPU, whatever their counts; samples in time order.
        let m = measured_memory(std::iter::once(&trace)).unwrap();
        assert_eq!((m.device(), m.relative()), ("cuda:0".to_string(), false));
        assert_eq!(m.samples, [(10, 100.0), (20, 300.0), (40, 200.0)]);
        assert_eq!((m.at(5), m.at(10), m.at(39)), (0.0, 100.0, 300.0));
        // The level at the window's start counts; a sample after its end does not.
        assert_eq!(
            (m.peak(25, 35), m.peak(0, 15), m.peak(30, 50)),
            (300.0, 100.0, 300.0)
        );
        let cpu = RawTrace {
            memory: vec![sample(1, 7.0, 0)],
            ..RawTrace::default()
        };
        let m = measured_memory(std::iter::once(&cpu)).unwrap();
        assert_eq!((m.device(), m.relative()), ("cpu".to_string(), true));
        assert_eq!(measured_memory(std::iter::once(&RawTrace::default())), None);
    }
}
