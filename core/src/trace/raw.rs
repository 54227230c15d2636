//! One imported trace file, kept compact: every name interned once, every complete event
//! (`X`, or a `B`/`E` pair) a 32-byte [`Span`], tracks (processes and threads) numbered in order
//! of first appearance, flow points for arrows, and the warnings the import raised.

use rustc_hash::FxHashMap;
use serde::Serialize;

/// A pid or tid as the file wrote it: a number or a string.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TrackKey {
    Num(i64),
    Text(String),
}

impl std::fmt::Display for TrackKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TrackKey::Num(n) => write!(f, "{n}"),
            TrackKey::Text(s) => write!(f, "\"{s}\""),
        }
    }
}

/// A process of the trace (`pid`).
#[derive(Debug, Clone, PartialEq)]
pub struct Process {
    pub key: TrackKey,
    /// From the `process_name` metadata event.
    pub name: Option<String>,
    /// From the `process_labels` metadata event (`"CPU"`, `"GPU 0"`).
    pub labels: Option<String>,
}

/// A thread (`tid`) of one process: a CPU thread, a GPU stream, an NPU stream.
#[derive(Debug, Clone, PartialEq)]
pub struct Thread {
    pub process: u32,
    pub key: TrackKey,
    /// From the `thread_name` metadata event (`"stream 7 "`, `"thread 12 (python3)"`).
    pub name: Option<String>,
}

/// A complete event: `X`, or a matched `B`/`E` pair. 24 bytes: a run's files hold hundreds of
/// thousands, and their name and category, a pair that repeats as a run's steps repeat, are
/// one index into [`RawTrace::kinds`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Span {
    /// Index into [`RawTrace::kinds`]: the span's name and category.
    pub kind: u32,
    /// Index into [`RawTrace::threads`].
    pub thread: u32,
    pub start_ns: i64,
    pub dur_ns: i64,
}

impl Span {
    pub fn end_ns(&self) -> i64 {
        self.start_ns.saturating_add(self.dur_ns)
    }
}

/// The name and the category of spans: each pair once in a file ([`Span::kind`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SpanKind {
    /// Index into [`RawTrace::strings`].
    pub name: u32,
    /// Index into [`RawTrace::strings`] (the empty string when the event has no `cat`).
    pub cat: u32,
}

/// One end of a flow arrow (`s`, `t` or `f`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowPoint {
    /// The flow's `id` (with its `cat`), interned.
    pub id: u32,
    /// The flow's `cat` (Kineto's `ac2g` links a launch to its kernel, `fwdbwd` a forward op
    /// to its backward), index into [`RawTrace::strings`].
    pub cat: u32,
    pub phase: u8,
    pub thread: u32,
    pub ts_ns: i64,
}

/// A `[memory]` instant (`profile_memory=True`): the allocator's total on one device after an
/// allocation or a free.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MemorySample {
    pub ts_ns: i64,
    /// `Total Allocated`, bytes.
    pub bytes: f64,
    /// `Device Type` (0 the CPU, 1 CUDA, …) and `Device Id`.
    pub device_type: i64,
    pub device_id: i64,
}

/// `distributedInfo`, when the file has it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
pub struct DistributedInfo {
    pub rank: Option<usize>,
    pub world_size: Option<usize>,
}

/// Something the import skipped or guessed, with the first event it concerns and how many more.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Warning {
    pub file: String,
    /// Index of the first event concerned in the file's event list.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event: Option<usize>,
    /// How many events this warning stands for.
    pub count: usize,
    pub message: String,
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: ", self.file)?;
        if let Some(event) = self.event {
            write!(f, "event {event}: ")?;
        }
        write!(f, "{}", self.message)?;
        match (self.count, self.event) {
            (0 | 1, _) => {}
            (n, Some(_)) => write!(f, " ({n} events like it)")?,
            (n, None) => write!(f, " (and {} more file(s) or source(s) like it)", n - 1)?,
        }
        Ok(())
    }
}

/// Collects warnings, one per kind of problem, counting repeats instead of listing them.
#[derive(Debug, Default)]
pub struct Warnings {
    list: Vec<Warning>,
    by_kind: FxHashMap<&'static str, usize>,
}

impl Warnings {
    /// Records a problem of `kind`; only the first of a kind keeps its message and event.
    pub fn add(
        &mut self,
        kind: &'static str,
        file: &str,
        event: Option<usize>,
        message: impl FnOnce() -> String,
    ) {
        match self.by_kind.get(kind).and_then(|&i| self.list.get_mut(i)) {
            Some(w) => w.count += 1,
            None => {
                self.by_kind.insert(kind, self.list.len());
                self.list.push(Warning {
                    file: file.to_string(),
                    event,
                    count: 1,
                    message: message(),
                });
            }
        }
    }

    pub fn into_vec(self) -> Vec<Warning> {
        self.list
    }
}

/// Whether the timestamps count from the Unix epoch (so files of one job can share the clock).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ClockBase {
    /// Nanoseconds since 1970 (integer epoch µs, or relative to `baseTimeNanoseconds`).
    Epoch,
    /// A device- or process-relative clock (Ascend msprof, traces starting at 0).
    Local,
}

/// One imported file.
#[derive(Debug, Clone, Default)]
pub struct RawTrace {
    pub file: String,
    pub strings: Vec<Box<str>>,
    pub processes: Vec<Process>,
    pub threads: Vec<Thread>,
    /// Complete events in the order they close in the file.
    pub spans: Vec<Span>,
    /// The spans' (name, category) pairs, each once, in the order their first span was made.
    /// Not counted by [`RawTrace::held_events`]: each is made with a span (a `B`'s when its `E`
    /// closes it), so they never outnumber the spans.
    pub kinds: Vec<SpanKind>,
    pub flows: Vec<FlowPoint>,
    /// `[memory]` instants in file order.
    pub memory: Vec<MemorySample>,
    /// Entries in `traceEvents` (or the top-level array), of every phase.
    pub event_count: usize,
    /// The most it held while it was read, counted as [`RawTrace::held_events`] counts (with
    /// the `B`s still open then): what an import's event limit was checked against, after every
    /// event.
    pub peak_held_events: u64,
    pub distributed: Option<DistributedInfo>,
    /// `baseTimeNanoseconds`, already added to every timestamp.
    pub base_time_ns: i64,
    pub warnings: Vec<Warning>,
}

impl RawTrace {
    /// What it holds, counted as events (spans, flow points, memory samples, names, processes,
    /// threads): what [`super::Limits::events`] counts.
    pub fn held_events(&self) -> u64 {
        (self.spans.len()
            + self.flows.len()
            + self.memory.len()
            + self.strings.len()
            + self.processes.len()
            + self.threads.len()) as u64
    }

    /// The interned string `id` (empty when out of range).
    pub fn string(&self, id: u32) -> &str {
        self.strings.get(id as usize).map_or("", |s| s)
    }

    /// The name and category of a span (both the empty string's when out of range).
    pub fn kind(&self, span: &Span) -> SpanKind {
        self.kinds
            .get(span.kind as usize)
            .copied()
            .unwrap_or_default()
    }

    /// The name of a span.
    pub fn name(&self, span: &Span) -> &str {
        self.string(self.kind(span).name)
    }

    /// The category of a span.
    pub fn cat(&self, span: &Span) -> &str {
        self.string(self.kind(span).cat)
    }

    pub fn thread(&self, id: u32) -> Option<&Thread> {
        self.threads.get(id as usize)
    }

    pub fn process_of(&self, thread: u32) -> Option<&Process> {
        self.thread(thread)
            .and_then(|t| self.processes.get(t.process as usize))
    }

    /// `"pid 3 (Ascend Hardware) / tid 7 (stream 7)"`, for messages and lane titles.
    pub fn track_label(&self, thread: u32) -> String {
        let Some(t) = self.thread(thread) else {
            return format!("thread #{thread}");
        };
        let named = |key: &TrackKey, name: &Option<String>| match name {
            Some(n) => format!("{key} ({})", n.trim()),
            None => key.to_string(),
        };
        match self.processes.get(t.process as usize) {
            Some(p) => format!(
                "pid {} / tid {}",
                named(&p.key, &p.name),
                named(&t.key, &t.name)
            ),
            None => format!("tid {}", named(&t.key, &t.name)),
        }
    }

    /// Whether the timestamps are epoch nanoseconds: integer epoch µs land after 2001
    /// (10^18 ns), and `baseTimeNanoseconds` makes relative floats absolute.
    pub fn clock_base(&self) -> ClockBase {
        const YEAR_2001_NS: i64 = 1_000_000_000_000_000_000;
        match self.spans.first() {
            Some(s) if s.start_ns >= YEAR_2001_NS => ClockBase::Epoch,
            _ => ClockBase::Local,
        }
    }

    /// Earliest start and latest end over all spans.
    pub fn span_ns(&self) -> Option<(i64, i64)> {
        let start = self.spans.iter().map(|s| s.start_ns).min()?;
        let end = self.spans.iter().map(Span::end_ns).max()?;
        Some((start, end))
    }
}
