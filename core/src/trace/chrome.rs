//! The streaming reader of the Chrome Trace Event Format (torch.profiler/Kineto, Ascend msprof,
//! torch_npu, PiPPy): an object with `traceEvents` or a bare array, plain or gzip.
//!
//! Events are visited one at a time straight off the byte stream (serde visitors, no JSON tree):
//! names are interned, complete events become [`Span`]s, `B`/`E` pairs are matched per thread,
//! metadata names tracks. Broken JSON is an error naming the file, line and column; an event that
//! is well-formed JSON but unusable (no `ts`, a `dur` that is a string of letters, an `E` without
//! its `B`) is skipped with a [`Warning`](super::raw::Warning) naming its index.

use super::raw::{DistributedInfo, FlowPoint, Process, RawTrace, Span, Thread, TrackKey, Warnings};
use super::timestamp;
use flate2::read::MultiGzDecoder;
use rustc_hash::FxHashMap;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::cell::Cell;
use std::fmt;
use std::io::{BufRead, BufReader, Read};

/// What went wrong importing a trace file. Every variant names the file; positions are 1-based
/// and count lines and columns of the (decompressed) JSON text.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TraceError {
    #[error("{file}: cannot read: {message}")]
    Read { file: String, message: String },
    #[error("{file}:{line}:{column}: {message}")]
    Syntax {
        file: String,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{file}: {message}")]
    Format { file: String, message: String },
    #[error("{file}: import cancelled")]
    Cancelled { file: String },
}

/// Bytes between two progress reports.
const PROGRESS_EVERY: u64 = 1 << 20;

/// Reads a trace from `reader` (plain JSON or gzip, told apart by the magic bytes); `file` is the
/// name errors and warnings give. `progress` is called with the number of (compressed) bytes read
/// so far about every MiB; returning `false` cancels the import.
pub fn import(
    reader: impl Read,
    file: &str,
    progress: &mut dyn FnMut(u64) -> bool,
) -> Result<RawTrace, TraceError> {
    let cancelled = Cell::new(false);
    let counting = CountingReader {
        inner: reader,
        read: 0,
        next_report: PROGRESS_EVERY,
        progress,
        cancelled: &cancelled,
    };
    let mut buffered = BufReader::with_capacity(1 << 16, counting);
    let gzip = match buffered.fill_buf() {
        Ok([]) => {
            return Err(TraceError::Format {
                file: file.to_string(),
                message: "the file is empty".to_string(),
            });
        }
        Ok(head) => head.starts_with(&[0x1f, 0x8b]),
        Err(e) => {
            return Err(TraceError::Read {
                file: file.to_string(),
                message: e.to_string(),
            });
        }
    };
    let mut builder = Builder::new(file);
    let result = if gzip {
        let decoded = BufReader::with_capacity(1 << 16, MultiGzDecoder::new(buffered));
        parse(decoded, &mut builder)
    } else {
        parse(buffered, &mut builder)
    };
    if cancelled.get() {
        return Err(TraceError::Cancelled {
            file: file.to_string(),
        });
    }
    match result {
        Ok(true) => Ok(builder.finish()),
        Ok(false) => Err(TraceError::Format {
            file: file.to_string(),
            message: "an object without `traceEvents`: not a Chrome trace".to_string(),
        }),
        Err(e) => Err(syntax_error(file, &e, gzip)),
    }
}

/// Imports a trace held in memory.
pub fn import_bytes(bytes: &[u8], file: &str) -> Result<RawTrace, TraceError> {
    import(bytes, file, &mut |_| true)
}

fn parse(reader: impl Read, builder: &mut Builder) -> Result<bool, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_reader(reader);
    let found = de.deserialize_any(TopVisitor { builder })?;
    de.end()?;
    Ok(found)
}

fn syntax_error(file: &str, e: &serde_json::Error, gzip: bool) -> TraceError {
    let text = e.to_string();
    let message = match text.rfind(" at line ") {
        Some(i) => text.get(..i).unwrap_or(&text).to_string(),
        None => text,
    };
    let message = match e.classify() {
        serde_json::error::Category::Eof => {
            format!("the file ends in the middle of the trace (truncated?): {message}")
        }
        serde_json::error::Category::Io if gzip => format!("broken gzip stream: {message}"),
        serde_json::error::Category::Io => format!("read error: {message}"),
        serde_json::error::Category::Syntax => format!("not valid JSON: {message}"),
        _ => message,
    };
    if e.line() == 0 {
        TraceError::Format {
            file: file.to_string(),
            message,
        }
    } else {
        TraceError::Syntax {
            file: file.to_string(),
            line: e.line(),
            column: e.column().max(1),
            message,
        }
    }
}

struct CountingReader<'a, R> {
    inner: R,
    read: u64,
    next_report: u64,
    progress: &'a mut dyn FnMut(u64) -> bool,
    cancelled: &'a Cell<bool>,
}

impl<R: Read> Read for CountingReader<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        if self.read >= self.next_report {
            self.next_report = self.read + PROGRESS_EVERY;
            if !(self.progress)(self.read) {
                self.cancelled.set(true);
                return Err(std::io::Error::other("cancelled"));
            }
        }
        Ok(n)
    }
}

/// A pid, tid or flow id as a map key without allocating: a number or an interned string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Key {
    Num(i64),
    Str(u32),
}

#[derive(Default)]
struct Interner {
    ids: FxHashMap<Box<str>, u32>,
    strings: Vec<Box<str>>,
}

impl Interner {
    fn intern(&mut self, s: &str) -> u32 {
        if let Some(&id) = self.ids.get(s) {
            return id;
        }
        let id = self.strings.len() as u32;
        self.strings.push(s.into());
        self.ids.insert(s.into(), id);
        id
    }
}

/// An open `B` event waiting for its `E`.
struct Open {
    name: u32,
    cat: u32,
    index: u32,
    start_ns: i64,
}

struct Builder<'f> {
    file: &'f str,
    strings: Interner,
    processes: Vec<Process>,
    process_ids: FxHashMap<Key, u32>,
    threads: Vec<Thread>,
    thread_ids: FxHashMap<(u32, Key), u32>,
    spans: Vec<Span>,
    flows: Vec<FlowPoint>,
    flow_ids: FxHashMap<(u32, Key), u32>,
    open: FxHashMap<u32, Vec<Open>>,
    event_count: usize,
    distributed: Option<DistributedInfo>,
    base_time_ns: i64,
    warnings: Warnings,
}

impl<'f> Builder<'f> {
    fn new(file: &'f str) -> Self {
        let mut strings = Interner::default();
        strings.intern("");
        Builder {
            file,
            strings,
            processes: Vec::new(),
            process_ids: FxHashMap::default(),
            threads: Vec::new(),
            thread_ids: FxHashMap::default(),
            spans: Vec::new(),
            flows: Vec::new(),
            flow_ids: FxHashMap::default(),
            open: FxHashMap::default(),
            event_count: 0,
            distributed: None,
            base_time_ns: 0,
            warnings: Warnings::default(),
        }
    }

    fn track_key(&self, key: Key) -> TrackKey {
        match key {
            Key::Num(n) => TrackKey::Num(n),
            Key::Str(s) => TrackKey::Text(
                self.strings
                    .strings
                    .get(s as usize)
                    .map_or(String::new(), |s| s.to_string()),
            ),
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

    fn accept(&mut self, ev: RawEvent) {
        let index = self.event_count;
        self.event_count += 1;
        let ph = match ev.ph {
            Some(Atom::Str(id)) => self
                .strings
                .strings
                .get(id as usize)
                .and_then(|s| s.bytes().next())
                .filter(|_| {
                    self.strings
                        .strings
                        .get(id as usize)
                        .is_some_and(|s| s.len() == 1)
                }),
            _ => None,
        };
        let Some(ph) = ph else {
            return self.warn("ph", index, || {
                "no one-letter `ph` (phase); skipped".to_string()
            });
        };
        let to_key = |atom: Option<Atom>| match atom {
            None => Some(Key::Num(0)),
            Some(Atom::Int(n)) => Some(Key::Num(n)),
            Some(Atom::Str(s)) => Some(Key::Str(s)),
            Some(Atom::Float(x)) if x.fract() == 0.0 && x.abs() < 9.0e18 => {
                Some(Key::Num(x as i64))
            }
            Some(_) => None,
        };
        let (Some(pid), Some(tid)) = (to_key(ev.pid), to_key(ev.tid)) else {
            return self.warn("pid", index, || {
                "`pid` or `tid` is neither a number nor a string; skipped".to_string()
            });
        };
        let name = match ev.name {
            Some(Atom::Str(s)) => s,
            _ => 0,
        };
        let cat = match ev.cat {
            Some(Atom::Str(s)) => s,
            _ => 0,
        };
        match ph {
            b'M' => {
                let which = self.strings.strings.get(name as usize).map(|s| &**s);
                match which {
                    Some("process_name") => {
                        let p = self.process(pid);
                        if let Some(process) = self.processes.get_mut(p as usize) {
                            process.name = ev.args_name;
                        }
                    }
                    Some("process_labels") => {
                        let p = self.process(pid);
                        if let Some(process) = self.processes.get_mut(p as usize) {
                            process.labels = ev.args_labels;
                        }
                    }
                    Some("thread_name") => {
                        let t = self.thread(pid, tid);
                        if let Some(thread) = self.threads.get_mut(t as usize) {
                            thread.name = ev.args_name;
                        }
                    }
                    _ => {}
                }
            }
            b'X' | b'B' | b'E' | b's' | b't' | b'f' => {
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
                        self.spans.push(Span {
                            name,
                            cat,
                            thread,
                            index: index as u32,
                            start_ns: ts,
                            dur_ns: dur,
                        });
                    }
                    b'B' => self.open.entry(thread).or_default().push(Open {
                        name,
                        cat,
                        index: index as u32,
                        start_ns: ts,
                    }),
                    b'E' => match self.open.get_mut(&thread).and_then(Vec::pop) {
                        Some(open) if ts >= open.start_ns => self.spans.push(Span {
                            name: open.name,
                            cat: open.cat,
                            thread,
                            index: open.index,
                            start_ns: open.start_ns,
                            dur_ns: ts - open.start_ns,
                        }),
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
                        let id = match to_key(ev.id) {
                            Some(key) if ev.id.is_some() => key,
                            _ => {
                                return self.warn("flow id", index, || {
                                    "flow event without a number or string `id`; skipped"
                                        .to_string()
                                });
                            }
                        };
                        let next = self.flow_ids.len() as u32;
                        let id = *self.flow_ids.entry((cat, id)).or_insert(next);
                        self.flows.push(FlowPoint {
                            id,
                            phase: ph,
                            thread,
                            ts_ns: ts,
                        });
                    }
                }
            }
            b'i' | b'I' | b'C' | b'b' | b'e' | b'n' | b'N' | b'O' | b'D' | b'P' | b'R' | b'c'
            | b'S' | b'T' | b'F' | b'p' | b'v' | b'V' | b'(' | b')' => {}
            other => self.warn("unknown ph", index, || {
                format!("unknown phase `{}`; skipped", char::from(other))
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

    fn finish(mut self) -> RawTrace {
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
            flows: self.flows,
            event_count: self.event_count,
            distributed: self.distributed,
            base_time_ns: base,
            warnings: self.warnings.into_vec(),
        }
    }
}

/// A scalar field with strings interned.
#[derive(Debug, Clone, Copy)]
enum Atom {
    Str(u32),
    Int(i64),
    Float(f64),
    Other,
}

/// A time field: nanoseconds, or what it was instead.
#[derive(Debug, Clone, Copy)]
enum TimeAtom {
    Ns(i64),
    Bad(&'static str),
}

#[derive(Default)]
struct RawEvent {
    name: Option<Atom>,
    ph: Option<Atom>,
    cat: Option<Atom>,
    pid: Option<Atom>,
    tid: Option<Atom>,
    id: Option<Atom>,
    ts: Option<TimeAtom>,
    dur: Option<TimeAtom>,
    args_name: Option<String>,
    args_labels: Option<String>,
}

/// Consumes whatever compound value the visitor was handed.
fn skip_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

fn skip_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(())
}

struct AtomSeed<'a>(&'a mut Interner);

impl<'de> DeserializeSeed<'de> for AtomSeed<'_> {
    type Value = Atom;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Atom, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for AtomSeed<'_> {
    type Value = Atom;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string or a number")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Atom, E> {
        Ok(Atom::Str(self.0.intern(v)))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Atom, E> {
        Ok(Atom::Int(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Atom, E> {
        Ok(i64::try_from(v).map_or(Atom::Float(v as f64), Atom::Int))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Atom, E> {
        Ok(Atom::Float(v))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Atom, E> {
        Ok(Atom::Other)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Atom, E> {
        Ok(Atom::Other)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Atom, A::Error> {
        skip_seq(seq).map(|()| Atom::Other)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Atom, A::Error> {
        skip_map(map).map(|()| Atom::Other)
    }
}

struct TimeSeed;

impl<'de> DeserializeSeed<'de> for TimeSeed {
    type Value = TimeAtom;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<TimeAtom, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for TimeSeed {
    type Value = TimeAtom;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("microseconds")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<TimeAtom, E> {
        Ok(timestamp::from_micros_str(v)
            .map_or(TimeAtom::Bad("a string that is not a number"), TimeAtom::Ns))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<TimeAtom, E> {
        Ok(timestamp::from_micros_i64(v).map_or(TimeAtom::Bad("out of range"), TimeAtom::Ns))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<TimeAtom, E> {
        Ok(timestamp::from_micros_u64(v).map_or(TimeAtom::Bad("out of range"), TimeAtom::Ns))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<TimeAtom, E> {
        Ok(timestamp::from_micros_f64(v).map_or(TimeAtom::Bad("out of range"), TimeAtom::Ns))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<TimeAtom, E> {
        Ok(TimeAtom::Bad("a boolean"))
    }
    fn visit_unit<E: de::Error>(self) -> Result<TimeAtom, E> {
        Ok(TimeAtom::Bad("null"))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<TimeAtom, A::Error> {
        skip_seq(seq).map(|()| TimeAtom::Bad("an array"))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<TimeAtom, A::Error> {
        skip_map(map).map(|()| TimeAtom::Bad("an object"))
    }
}

/// A string, or `None` for anything else (consumed).
struct MaybeString;

impl<'de> DeserializeSeed<'de> for MaybeString {
    type Value = Option<String>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<String>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for MaybeString {
    type Value = Option<String>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Some(v.to_string()))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        skip_seq(seq).map(|()| None)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        skip_map(map).map(|()| None)
    }
}

/// `args`: only `name` and `labels` matter (for metadata events).
struct ArgsSeed;

impl<'de> DeserializeSeed<'de> for ArgsSeed {
    type Value = (Option<String>, Option<String>);
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ArgsSeed {
    type Value = (Option<String>, Option<String>);
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an `args` object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let (mut name, mut labels) = (None, None);
        while let Some(key) = map.next_key_seed(KeySeed)? {
            match key {
                FieldKey::Name => name = map.next_value_seed(MaybeString)?,
                FieldKey::Labels => labels = map.next_value_seed(MaybeString)?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok((name, labels))
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok((None, None))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok((None, None))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok((None, None))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok((None, None))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok((None, None))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok((None, None))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        skip_seq(seq).map(|()| (None, None))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FieldKey {
    Name,
    Ph,
    Cat,
    Pid,
    Tid,
    Id,
    Ts,
    Dur,
    Args,
    Labels,
    TraceEvents,
    DistributedInfo,
    BaseTime,
    Rank,
    WorldSize,
    Other,
}

struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = FieldKey;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<FieldKey, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = FieldKey;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a key")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<FieldKey, E> {
        Ok(match v {
            "name" => FieldKey::Name,
            "ph" => FieldKey::Ph,
            "cat" => FieldKey::Cat,
            "pid" => FieldKey::Pid,
            "tid" => FieldKey::Tid,
            "id" => FieldKey::Id,
            "ts" => FieldKey::Ts,
            "dur" => FieldKey::Dur,
            "args" => FieldKey::Args,
            "labels" => FieldKey::Labels,
            "traceEvents" => FieldKey::TraceEvents,
            "distributedInfo" => FieldKey::DistributedInfo,
            "baseTimeNanoseconds" => FieldKey::BaseTime,
            "rank" => FieldKey::Rank,
            "world_size" => FieldKey::WorldSize,
            _ => FieldKey::Other,
        })
    }
}

struct EventSeed<'b, 'f>(&'b mut Builder<'f>);

impl<'de> DeserializeSeed<'de> for EventSeed<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for EventSeed<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a trace event object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let builder = self.0;
        let mut ev = RawEvent::default();
        while let Some(key) = map.next_key_seed(KeySeed)? {
            let strings = &mut builder.strings;
            match key {
                FieldKey::Name => ev.name = Some(map.next_value_seed(AtomSeed(strings))?),
                FieldKey::Ph => ev.ph = Some(map.next_value_seed(AtomSeed(strings))?),
                FieldKey::Cat => ev.cat = Some(map.next_value_seed(AtomSeed(strings))?),
                FieldKey::Pid => ev.pid = Some(map.next_value_seed(AtomSeed(strings))?),
                FieldKey::Tid => ev.tid = Some(map.next_value_seed(AtomSeed(strings))?),
                FieldKey::Id => ev.id = Some(map.next_value_seed(AtomSeed(strings))?),
                FieldKey::Ts => ev.ts = Some(map.next_value_seed(TimeSeed)?),
                FieldKey::Dur => ev.dur = Some(map.next_value_seed(TimeSeed)?),
                FieldKey::Args => (ev.args_name, ev.args_labels) = map.next_value_seed(ArgsSeed)?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        builder.accept(ev);
        Ok(())
    }
}

struct EventsSeed<'b, 'f>(&'b mut Builder<'f>);

impl<'de> DeserializeSeed<'de> for EventsSeed<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for EventsSeed<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of trace events")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(EventSeed(self.0))?.is_some() {}
        Ok(())
    }
}

/// `distributedInfo.rank` / `world_size`: a number, or a string of digits.
struct CountSeed;

impl<'de> DeserializeSeed<'de> for CountSeed {
    type Value = Option<usize>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<usize>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for CountSeed {
    type Value = Option<usize>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a whole number")
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(usize::try_from(v).ok())
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(usize::try_from(v).ok())
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(v.trim().parse().ok())
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        skip_seq(seq).map(|()| None)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        skip_map(map).map(|()| None)
    }
}

struct DistributedSeed;

impl<'de> DeserializeSeed<'de> for DistributedSeed {
    type Value = Option<DistributedInfo>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for DistributedSeed {
    type Value = Option<DistributedInfo>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a `distributedInfo` object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut info = DistributedInfo::default();
        while let Some(key) = map.next_key_seed(KeySeed)? {
            match key {
                FieldKey::Rank => info.rank = map.next_value_seed(CountSeed)?,
                FieldKey::WorldSize => info.world_size = map.next_value_seed(CountSeed)?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Some(info))
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        skip_seq(seq).map(|()| None)
    }
}

/// The top level: an object (with `traceEvents`) or a bare array of events. Returns whether
/// events were found.
struct TopVisitor<'b, 'f> {
    builder: &'b mut Builder<'f>,
}

impl<'de> Visitor<'de> for TopVisitor<'_, '_> {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a Chrome trace: an object with `traceEvents` or an array of events")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<bool, A::Error> {
        EventsSeed(self.builder).visit_seq(seq)?;
        Ok(true)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        let mut found = false;
        while let Some(key) = map.next_key_seed(KeySeed)? {
            match key {
                FieldKey::TraceEvents => {
                    map.next_value_seed(EventsSeed(self.builder))?;
                    found = true;
                }
                FieldKey::DistributedInfo => {
                    self.builder.distributed = map.next_value_seed(DistributedSeed)?;
                }
                FieldKey::BaseTime => {
                    let base = map.next_value_seed(AtomSeed(&mut self.builder.strings))?;
                    self.builder.base_time_ns = match base {
                        Atom::Int(ns) => ns,
                        Atom::Float(ns) if ns.is_finite() && ns.abs() < 9.0e18 => ns as i64,
                        Atom::Str(id) => self
                            .builder
                            .strings
                            .strings
                            .get(id as usize)
                            .and_then(|s| s.trim().parse().ok())
                            .unwrap_or(0),
                        _ => 0,
                    };
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn import_str(text: &str) -> Result<RawTrace, TraceError> {
        import_bytes(text.as_bytes(), "t.json")
    }

    #[test]
    fn reads_an_object_with_trace_events_and_every_timestamp_form() {
        let text = r#"{"schemaVersion":1,"distributedInfo":{"rank":3,"world_size":8},
        "traceEvents":[
          {"ph":"M","name":"process_name","pid":7,"args":{"name":"python3"}},
          {"ph":"M","name":"thread_name","pid":7,"tid":"9","args":{"name":"stream 7 "}},
          {"ph":"X","name":"a","cat":"k","pid":7,"tid":"9","ts":10,"dur":2.5},
          {"ph":"X","name":"b","pid":7,"tid":"9","ts":"11.25","dur":"1"},
          {"ph":"B","name":"c","pid":7,"tid":1,"ts":20.0},
          {"ph":"E","pid":7,"tid":1,"ts":23},
          {"ph":"s","id":1,"cat":"ac2g","pid":7,"tid":1,"ts":20},
          {"ph":"f","id":1,"cat":"ac2g","pid":7,"tid":"9","ts":21,"bp":"e"},
          {"ph":"i","name":"Iteration Start","s":"g","pid":7,"tid":1,"ts":1}
        ]}"#;
        let t = import_str(text).unwrap();
        assert_eq!(t.event_count, 9);
        assert_eq!(
            t.distributed,
            Some(DistributedInfo {
                rank: Some(3),
                world_size: Some(8)
            })
        );
        let spans: Vec<(&str, i64, i64)> = t
            .spans
            .iter()
            .map(|s| (t.name(s), s.start_ns, s.dur_ns))
            .collect();
        assert_eq!(
            spans,
            [
                ("a", 10_000, 2_500),
                ("b", 11_250, 1_000),
                ("c", 20_000, 3_000)
            ]
        );
        assert_eq!(t.cat(&t.spans[0]), "k");
        assert_eq!(
            t.track_label(t.spans[0].thread),
            "pid 7 (python3) / tid \"9\" (stream 7)"
        );
        assert_eq!(t.flows.len(), 2);
        assert_eq!(t.flows[0].id, t.flows[1].id);
        assert!(t.warnings.is_empty(), "{:?}", t.warnings);
    }

    #[test]
    fn base_time_makes_relative_floats_absolute_wherever_it_stands() {
        let text = r#"{"traceEvents":[{"ph":"X","name":"a","pid":0,"tid":0,"ts":1.5,"dur":1}],
                       "baseTimeNanoseconds":1711964646000000000}"#;
        let t = import_str(text).unwrap();
        assert_eq!(t.spans[0].start_ns, 1_711_964_646_000_001_500);
        assert_eq!(t.clock_base(), super::super::raw::ClockBase::Epoch);
    }

    #[test]
    fn unusable_events_are_skipped_with_counted_warnings() {
        let text = r#"[
          {"ph":"X","name":"ok","pid":"0","tid":"0","ts":1,"dur":1},
          {"ph":"X","name":"no ts","pid":0,"tid":0,"dur":1},
          {"ph":"X","name":"bad ts","pid":0,"tid":0,"ts":true,"dur":1},
          {"ph":"X","name":"bad ts 2","pid":0,"tid":0,"ts":"soon","dur":1},
          {"ph":"E","pid":0,"tid":0,"ts":5},
          {"ph":"B","name":"open","pid":0,"tid":0,"ts":5},
          {"ph":"Q","pid":0,"tid":0,"ts":5},
          {"name":"no phase"}
        ]"#;
        let t = import_str(text).unwrap();
        assert_eq!(t.spans.len(), 1);
        let lines: Vec<String> = t.warnings.iter().map(ToString::to_string).collect();
        assert_eq!(
            lines,
            [
                "t.json: event 1: `X` event: `ts` is missing, expected microseconds (a number or a numeric string); skipped (3 events like it)",
                "t.json: event 4: `E` event without an open `B` on its thread; skipped",
                "t.json: event 6: unknown phase `Q`; skipped",
                "t.json: event 7: no one-letter `ph` (phase); skipped",
                "t.json: event 5: `B` event never closed by an `E`; skipped",
            ]
        );
    }

    #[test]
    fn broken_json_names_line_and_column() {
        let err = import_str("[\n{\"ph\":\"X\",\"ts\":1,}\n]").unwrap_err();
        assert_eq!(
            err.to_string(),
            "t.json:2:18: not valid JSON: trailing comma"
        );
        let err = import_str("{\"traceEvents\":[{\"ph\":\"X\"").unwrap_err();
        assert_eq!(
            err.to_string(),
            "t.json:1:25: the file ends in the middle of the trace (truncated?): EOF while parsing an object"
        );
        let err = import_str("[1]").unwrap_err();
        assert_eq!(
            err.to_string(),
            "t.json:1:3: invalid type: integer `1`, expected a trace event object"
        );
        let err = import_str("{\"traceEvents\":{}}").unwrap_err();
        assert_eq!(
            err.to_string(),
            "t.json:1:16: invalid type: map, expected an array of trace events"
        );
        let err = import_str("{\"schemaVersion\":1}").unwrap_err();
        assert_eq!(
            err.to_string(),
            "t.json: an object without `traceEvents`: not a Chrome trace"
        );
        let err = import_str("").unwrap_err();
        assert_eq!(err.to_string(), "t.json: the file is empty");
    }

    #[test]
    fn gzip_is_recognised_and_a_broken_stream_is_an_error() {
        use flate2::{Compression, write::GzEncoder};
        use std::io::Write;
        let mut enc = GzEncoder::new(Vec::new(), Compression::default());
        enc.write_all(br#"[{"ph":"X","name":"z","pid":0,"tid":0,"ts":1,"dur":1}]"#)
            .unwrap();
        let bytes = enc.finish().unwrap();
        let t = import_bytes(&bytes, "t.json.gz").unwrap();
        assert_eq!(t.spans.len(), 1);
        let cut = &bytes[..bytes.len() - 12];
        let err = import_bytes(cut, "t.json.gz").unwrap_err();
        assert!(err.to_string().starts_with("t.json.gz"), "{err}");
    }

    #[test]
    fn progress_is_reported_and_can_cancel() {
        let mut text = String::from("[");
        for i in 0..40_000 {
            text.push_str(&format!(
                r#"{{"ph":"X","name":"n{}","pid":0,"tid":0,"ts":{i},"dur":1}},"#,
                i % 7
            ));
        }
        text.push_str(r#"{"ph":"i","ts":0}]"#);
        let mut seen = Vec::new();
        let t = import(text.as_bytes(), "big.json", &mut |n| {
            seen.push(n);
            true
        })
        .unwrap();
        assert_eq!(t.spans.len(), 40_000);
        assert!(!seen.is_empty() && seen.windows(2).all(|w| w[0] < w[1]));
        let err = import(text.as_bytes(), "big.json", &mut |_| false).unwrap_err();
        assert_eq!(
            err,
            TraceError::Cancelled {
                file: "big.json".to_string()
            }
        );
    }
}
