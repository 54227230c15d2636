//! Building a [`RawTrace`] from parsed events: interning names, numbering processes and threads,
//! pairing `B`/`E`, keeping flow points, and turning unusable events into counted warnings.

use super::event_json::{Args, AtomRef, Fields, TimeAtom};
use super::json_stream::Limits;
use super::raw::{
    DistributedInfo, FlowPoint, MemorySample, Process, RawTrace, Span, SpanKind, Thread, TrackKey,
    Warnings,
};
use rustc_hash::FxHashMap;

/// A pid, tid or flow id as a map key without allocating: a number or an interned string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Key {
    Num(i64),
    Str(u32),
}

/// The bytes of text a span is taken to need at the least, to size the span list by
/// ([`Builder::presize`]): about half the densest trace measured (240–640 bytes a span, its
/// share of the file's other events included, over the fixtures and public traces).
const BYTES_PER_SPAN: u64 = 128;

/// The same for a flow point (540–620 bytes a flow point measured).
const BYTES_PER_FLOW: u64 = 256;

/// How many recently interned strings [`Interner`] finds without hashing them.
const RECENT: usize = 256;

/// Every distinct string once, looked up by its bytes (so a repeated name is neither copied
/// nor checked for UTF-8 again).
struct Interner {
    ids: FxHashMap<Box<[u8]>, u32>,
    strings: Vec<Box<str>>,
    /// Of each string, whether it is its bytes unchanged (valid UTF-8).
    as_read: Vec<bool>,
    /// Recently interned ids, each in the slot of a cheap hash of its bytes ([`recent_slot`];
    /// `u32::MAX`: none): a trace repeats a few names and categories event after event, and
    /// comparing the bytes with the string in the slot costs a fraction of hashing them all.
    recent: [u32; RECENT],
}

impl Default for Interner {
    fn default() -> Self {
        Interner {
            ids: FxHashMap::default(),
            strings: Vec::new(),
            as_read: Vec::new(),
            recent: [u32::MAX; RECENT],
        }
    }
}

/// The slot of `s` among [`Interner::recent`]: its length, first, middle and last bytes mixed.
fn recent_slot(s: &[u8]) -> usize {
    let byte = |i: usize| s.get(i).map_or(0, |&b| usize::from(b));
    let n = s.len();
    (n ^ (byte(0) << 1) ^ (byte(n / 2) << 3) ^ (byte(n.wrapping_sub(1)) << 5)) % RECENT
}

/// Whether `a` and `b` hold the same bytes: those of a name or category (up to 16 bytes) compared
/// a word or two at a time in place, longer ones by slice equality (a call to `memcmp`, which
/// took as long as hashing a short name).
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    let word = |s: &[u8], at: usize| {
        s.get(at..at + 8)
            .and_then(|w| <[u8; 8]>::try_from(w).ok())
            .map(u64::from_le_bytes)
    };
    let half = |s: &[u8], at: usize| {
        s.get(at..at + 4)
            .and_then(|w| <[u8; 4]>::try_from(w).ok())
            .map(u32::from_le_bytes)
    };
    match n {
        0 => true,
        // Every byte of one to three: the first, the middle and the last.
        1..=3 => a.first() == b.first() && a.get(n / 2) == b.get(n / 2) && a.last() == b.last(),
        // Two words that overlap, covering every byte.
        4..=7 => half(a, 0) == half(b, 0) && half(a, n - 4) == half(b, n - 4),
        8..=16 => word(a, 0) == word(b, 0) && word(a, n - 8) == word(b, n - 8),
        _ => a == b,
    }
}

impl Interner {
    fn intern(&mut self, s: &[u8]) -> u32 {
        let slot = recent_slot(s);
        // A string read as its bytes, and equal to them: the same string (one changed in the
        // reading, invalid UTF-8, is found by its bytes).
        if let Some(&id) = self.recent.get(slot)
            && self.as_read.get(id as usize) == Some(&true)
            && self
                .strings
                .get(id as usize)
                .is_some_and(|t| same_bytes(t.as_bytes(), s))
        {
            return id;
        }
        let id = match self.ids.get(s) {
            Some(&id) => id,
            None => {
                let id = self.strings.len() as u32;
                let text = String::from_utf8_lossy(s);
                self.as_read
                    .push(matches!(text, std::borrow::Cow::Borrowed(_)));
                self.strings.push(text.into());
                self.ids.insert(s.into(), id);
                id
            }
        };
        if let Some(r) = self.recent.get_mut(slot) {
            *r = id;
        }
        id
    }

    fn get(&self, id: u32) -> &str {
        self.strings.get(id as usize).map_or("", |s| s)
    }
}

/// An open `B` event waiting for its `E`.
struct Open {
    name: u32,
    cat: u32,
    index: u32,
    start_ns: i64,
}

pub(super) struct Builder<'f> {
    file: &'f str,
    strings: Interner,
    processes: Vec<Process>,
    process_ids: FxHashMap<Key, u32>,
    threads: Vec<Thread>,
    thread_ids: FxHashMap<(u32, Key), u32>,
    spans: Vec<Span>,
    kinds: Vec<SpanKind>,
    /// [`Builder::kinds`] by (name, cat).
    kind_ids: FxHashMap<SpanKind, u32>,
    /// By name: the (cat, kind) last looked up with it — a name mostly comes with one category,
    /// so most spans find their kind here without hashing.
    kind_by_name: Vec<(u32, u32)>,
    flows: Vec<FlowPoint>,
    memory: Vec<MemorySample>,
    flow_ids: FxHashMap<(u32, Key), u32>,
    open: FxHashMap<u32, Vec<Open>>,
    /// The `B`s waiting in `open`.
    open_count: usize,
    /// The last `(pid, tid)`s looked up and their threads (replaced in turn, the next at
    /// `next_recent`): consecutive events mostly share one, or alternate between a few (a CPU
    /// thread and its stream).
    recent_threads: [Option<(Key, Key, u32)>; 4],
    next_recent: usize,
    event_count: usize,
    /// The most [`Builder::held`] has been so far (checked after every event).
    peak_held: u64,
    pub(super) distributed: Option<DistributedInfo>,
    pub(super) base_time_ns: i64,
    warnings: Warnings,
}

impl<'f> Builder<'f> {
    pub(super) fn new(file: &'f str) -> Self {
        let mut strings = Interner::default();
        strings.intern(b"");
        Builder {
            file,
            strings,
            processes: Vec::new(),
            process_ids: FxHashMap::default(),
            threads: Vec::new(),
            thread_ids: FxHashMap::default(),
            spans: Vec::new(),
            kinds: Vec::new(),
            kind_ids: FxHashMap::default(),
            kind_by_name: Vec::new(),
            flows: Vec::new(),
            memory: Vec::new(),
            flow_ids: FxHashMap::default(),
            open: FxHashMap::default(),
            open_count: 0,
            recent_threads: [None; 4],
            next_recent: 0,
            event_count: 0,
            peak_held: 0,
            distributed: None,
            base_time_ns: 0,
            warnings: Warnings::default(),
        }
    }

    /// Room for the spans and flow points a text of `bytes` holds at most as densely as real
    /// traces do (no fewer than [`BYTES_PER_SPAN`] and [`BYTES_PER_FLOW`] bytes each), within
    /// the events `limits` leave: lists grown by doubling hold each old copy until it is
    /// freed (a file's spans touched twice, its peak half again), where room asked for once and
    /// never filled costs address space, not resident memory (its pages are never touched; under
    /// a strict commit limit it counts against that, about a third of the file). On a 64-bit
    /// target only: a 32-bit one (the browser's) has no address space to spare. Room that
    /// cannot be had is not asked for (the lists grow as before).
    pub(super) fn presize(&mut self, bytes: u64, limits: Limits) {
        if cfg!(not(target_pointer_width = "64")) {
            return;
        }
        let bytes = bytes.min(limits.file_bytes);
        let room = limits.events.saturating_sub(limits.held);
        let spans = usize::try_from((bytes / BYTES_PER_SPAN).min(room)).unwrap_or(0);
        let flows = usize::try_from((bytes / BYTES_PER_FLOW).min(room)).unwrap_or(0);
        if self.spans.try_reserve_exact(spans).is_ok() {
            let _ = self.flows.try_reserve_exact(flows);
        }
    }

    /// The span kind of (`name`, `cat`), added when new.
    fn kind(&mut self, name: u32, cat: u32) -> u32 {
        if let Some(&(c, k)) = self.kind_by_name.get(name as usize)
            && c == cat
        {
            return k;
        }
        let kind = SpanKind { name, cat };
        let next = self.kinds.len() as u32;
        let k = *self.kind_ids.entry(kind).or_insert_with(|| {
            self.kinds.push(kind);
            next
        });
        // Names are interned before their spans: the list grows with the names, never past them.
        let at = name as usize;
        if at >= self.kind_by_name.len() {
            self.kind_by_name.resize(at + 1, (u32::MAX, 0));
        }
        if let Some(slot) = self.kind_by_name.get_mut(at) {
            *slot = (cat, k);
        }
        k
    }

    fn track_key(&self, key: Key) -> TrackKey {
        match key {
            Key::Num(n) => TrackKey::Num(n),
            Key::Str(s) => TrackKey::Text(self.strings.get(s).to_string()),
        }
    }

    fn process(&mut self, pid: Key) -> u32 {
        if let Some(&p) = self.process_ids.get(&pid) {
            return p;
        }
        let p = self.processes.len() as u32;
        let key = self.track_key(pid);
        self.processes.push(Process {
            key,
            name: None,
            labels: None,
        });
        self.process_ids.insert(pid, p);
        p
    }

    fn thread(&mut self, pid: Key, tid: Key) -> u32 {
        for &(p, t, id) in self.recent_threads.iter().flatten() {
            if (p, t) == (pid, tid) {
                return id;
            }
        }
        let id = self.find_thread(pid, tid);
        let next = self.next_recent % self.recent_threads.len();
        if let Some(slot) = self.recent_threads.get_mut(next) {
            *slot = Some((pid, tid, id));
        }
        self.next_recent = (next + 1) % self.recent_threads.len();
        id
    }

    fn find_thread(&mut self, pid: Key, tid: Key) -> u32 {
        let process = self.process(pid);
        if let Some(&t) = self.thread_ids.get(&(process, tid)) {
            return t;
        }
        let t = self.threads.len() as u32;
        let key = self.track_key(tid);
        self.threads.push(Thread {
            process,
            key,
            name: None,
        });
        self.thread_ids.insert((process, tid), t);
        t
    }

    fn warn(&mut self, kind: &'static str, event: usize, message: impl FnOnce() -> String) {
        self.warnings.add(kind, self.file, Some(event), message);
    }

    /// [`Builder::held`], kept as the peak when it is the most so far.
    pub(super) fn note_held(&mut self) -> u64 {
        let held = self.held();
        self.peak_held = self.peak_held.max(held);
        held
    }

    /// What is held so far, counted as events: spans, flow points, memory samples, open `B`s,
    /// and every distinct name, process and thread (an event with a new name that is then
    /// skipped still leaves its name behind).
    pub(super) fn held(&self) -> u64 {
        (self.spans.len()
            + self.flows.len()
            + self.memory.len()
            + self.open_count
            + self.strings.strings.len()
            + self.processes.len()
            + self.threads.len()) as u64
    }

    /// Takes one parsed event.
    pub(super) fn accept(&mut self, ev: &Fields) {
        let index = self.event_count;
        self.event_count += 1;
        let ph = match ev.ph {
            Some(AtomRef::Str(&[ph])) => Some(ph),
            _ => None,
        };
        let Some(ph) = ph else {
            return self.warn("ph", index, || {
                "no one-letter `ph` (phase); skipped".to_string()
            });
        };
        let (Some(pid), Some(tid)) = (self.key(ev.pid), self.key(ev.tid)) else {
            return self.warn("pid", index, || {
                "`pid` or `tid` is neither a number nor a string; skipped".to_string()
            });
        };
        let name = match ev.name {
            Some(AtomRef::Str(s)) => self.strings.intern(s),
            _ => 0,
        };
        let cat = match ev.cat {
            Some(AtomRef::Str(s)) => self.strings.intern(s),
            _ => 0,
        };
        match ph {
            b'M' => self.metadata(name, pid, tid, ev.args.unwrap_or(&Args::EMPTY)),
            b'X' | b'B' | b'E' | b's' | b't' | b'f' => {
                self.timed(ev, ph, (name, cat), (pid, tid), index);
            }
            b'i' | b'I' if self.strings.get(name) == "[memory]" => {
                self.memory_sample(ev, ph, index)
            }
            b'i' | b'I' | b'C' | b'b' | b'e' | b'n' | b'N' | b'O' | b'D' | b'P' | b'R' | b'c'
            | b'S' | b'T' | b'F' | b'p' | b'v' | b'V' | b'(' | b')' => {}
            other => self.warn("unknown ph", index, || {
                format!("unknown phase `{}`; skipped", char::from(other))
            }),
        }
    }

    /// A metadata event: a process's name or labels, a thread's name.
    fn metadata(&mut self, name: u32, pid: Key, tid: Key, args: &Args) {
        let args_name = args.name.as_deref().map(str::to_string);
        match self.strings.get(name) {
            "process_name" => {
                let p = self.process(pid);
                if let Some(process) = self.processes.get_mut(p as usize) {
                    process.name = args_name;
                }
            }
            "process_labels" => {
                let p = self.process(pid);
                if let Some(process) = self.processes.get_mut(p as usize) {
                    process.labels = args.labels.as_deref().map(str::to_string);
                }
            }
            "thread_name" => {
                let t = self.thread(pid, tid);
                if let Some(thread) = self.threads.get_mut(t as usize) {
                    thread.name = args_name;
                }
            }
            _ => {}
        }
    }

    /// A timed event on a thread: a complete span (`X`), a span's begin or end (`B`, `E`), a
    /// flow point (`s`, `t`, `f`).
    fn timed(
        &mut self,
        ev: &Fields,
        ph: u8,
        (name, cat): (u32, u32),
        (pid, tid): (Key, Key),
        index: usize,
    ) {
        let Some(ts) = self.time(ev.ts, "ts", index, ph) else {
            return;
        };
        let thread = self.thread(pid, tid);
        match ph {
            b'X' => {
                let Some(dur) = self.time(ev.dur, "dur", index, ph) else {
                    return;
                };
                if dur < 0 {
                    return self.warn("negative dur", index, || {
                        "`X` event with a negative `dur`; skipped".to_string()
                    });
                }
                let kind = self.kind(name, cat);
                self.spans.push(Span {
                    kind,
                    thread,
                    start_ns: ts,
                    dur_ns: dur,
                });
            }
            b'B' => {
                self.open_count += 1;
                self.open.entry(thread).or_default().push(Open {
                    name,
                    cat,
                    index: index as u32,
                    start_ns: ts,
                });
            }
            b'E' => match self.open.get_mut(&thread).and_then(Vec::pop).inspect(|_| {
                self.open_count = self.open_count.saturating_sub(1);
            }) {
                Some(open) if ts >= open.start_ns => {
                    // Its kind made with the span: a `B` never closed makes none.
                    let kind = self.kind(open.name, open.cat);
                    self.spans.push(Span {
                        kind,
                        thread,
                        start_ns: open.start_ns,
                        dur_ns: ts.saturating_sub(open.start_ns),
                    });
                }
                Some(open) => self.warn("E before B", index, || {
                    format!(
                        "`E` ends before its `B` (event {}) begins; skipped",
                        open.index
                    )
                }),
                None => self.warn("lone E", index, || {
                    "`E` event without an open `B` on its thread; skipped".to_string()
                }),
            },
            _ => {
                let id = match ev.id.and_then(|id| self.key(Some(id))) {
                    Some(key) => key,
                    None => {
                        return self.warn("flow id", index, || {
                            "flow event without a number or string `id`; skipped".to_string()
                        });
                    }
                };
                let next = self.flow_ids.len() as u32;
                let id = *self.flow_ids.entry((cat, id)).or_insert(next);
                self.flows.push(FlowPoint {
                    id,
                    cat,
                    phase: ph,
                    thread,
                    ts_ns: ts,
                });
            }
        }
    }

    /// A `[memory]` instant: the allocator's total at a time, on a device.
    fn memory_sample(&mut self, ev: &Fields, ph: u8, index: usize) {
        let Some(ts) = self.time(ev.ts, "ts", index, ph) else {
            return;
        };
        let args = ev.args.unwrap_or(&Args::EMPTY);
        match args.total_allocated {
            Some(bytes) => self.memory.push(MemorySample {
                ts_ns: ts,
                bytes,
                device_type: args.device_type.unwrap_or(0),
                device_id: args.device_id.unwrap_or(0),
            }),
            None => self.warn("memory total", index, || {
                "`[memory]` event without a finite number `args.Total Allocated`; skipped"
                    .to_string()
            }),
        }
    }

    fn time(
        &mut self,
        atom: Option<TimeAtom>,
        field: &'static str,
        index: usize,
        ph: u8,
    ) -> Option<i64> {
        let ns = match atom {
            Some(TimeAtom::Ns(ns)) => return Some(ns),
            None => "missing",
            Some(TimeAtom::Bad(what)) => what,
        };
        let kind = if field == "ts" { "bad ts" } else { "bad dur" };
        self.warn(kind, index, || {
            format!(
                "`{}` event: `{field}` is {ns}, expected microseconds (a number or a numeric string); skipped",
                char::from(ph)
            )
        });
        None
    }

    /// A pid, tid or flow id; a missing one is 0.
    fn key(&mut self, atom: Option<AtomRef>) -> Option<Key> {
        match atom {
            None => Some(Key::Num(0)),
            Some(AtomRef::Int(n)) => Some(Key::Num(n)),
            Some(AtomRef::Str(s)) => Some(Key::Str(self.strings.intern(s))),
            Some(AtomRef::Float(x)) if x.fract() == 0.0 && x.abs() < 9.0e18 => {
                Some(Key::Num(x as i64))
            }
            Some(AtomRef::Other) => None,
            Some(AtomRef::Float(_)) => None,
        }
    }

    pub(super) fn finish(mut self) -> RawTrace {
        let mut unclosed: Vec<u32> = self
            .open
            .values()
            .flat_map(|stack| stack.iter().map(|o| o.index))
            .collect();
        unclosed.sort_unstable();
        for index in unclosed {
            self.warn("unclosed B", index as usize, || {
                "`B` event never closed by an `E`; skipped".to_string()
            });
        }
        let base = self.base_time_ns;
        if base != 0 {
            for span in &mut self.spans {
                span.start_ns = span.start_ns.saturating_add(base);
            }
            for sample in &mut self.memory {
                sample.ts_ns = sample.ts_ns.saturating_add(base);
            }
            for flow in &mut self.flows {
                flow.ts_ns = flow.ts_ns.saturating_add(base);
            }
        }
        RawTrace {
            file: self.file.to_string(),
            strings: self.strings.strings,
            processes: self.processes,
            threads: self.threads,
            spans: self.spans,
            kinds: self.kinds,
            flows: self.flows,
            memory: self.memory,
            event_count: self.event_count,
            peak_held_events: self.peak_held,
            distributed: self.distributed,
            base_time_ns: base,
            warnings: self.warnings.into_vec(),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::indexing_slicing)] // tests fail by panicking

    /// Equal exactly where the bytes are: every length to 20 (each of the cases), a difference
    /// at every position, lengths that differ.
    #[test]
    fn bytes_compared_a_word_at_a_time_are_equal_exactly_where_they_are() {
        for n in 0..=20usize {
            let a: Vec<u8> = (0..n).map(|i| b'a' + (i % 26) as u8).collect();
            assert!(super::same_bytes(&a, &a.clone()), "{n}");
            for at in 0..n {
                let mut b = a.clone();
                b[at] ^= 0x20;
                assert!(!super::same_bytes(&a, &b), "{n} at {at}");
            }
            let mut longer = a.clone();
            longer.push(b'z');
            assert!(!super::same_bytes(&a, &longer), "{n}");
            assert!(!super::same_bytes(&longer, &a), "{n}");
        }
    }
}
