//! The streaming reader of the Chrome Trace Event Format (torch.profiler/Kineto, Ascend msprof,
//! torch_npu, PiPPy): an object with `traceEvents` or a bare array, plain or gzip.
//!
//! The top level is walked here over a refilled buffer ([`JsonStream`]); each event is parsed
//! straight from the buffer (the plain-shape scanner in `fast_event`, else serde) and handed to the
//! builder, which interns names, makes complete events into spans, matches `B`/`E` pairs per thread
//! and names tracks from metadata. No JSON tree is built. Broken JSON is an error naming the file,
//! line and column; an event that is well-formed JSON but unusable (no `ts`, a `dur` that is a
//! string of letters, an `E` without its `B`) is skipped with a [`Warning`](super::raw::Warning)
//! naming its index.

use super::builder::Builder;
use super::event_json::{
    BaseTimeSeed, DistributedSeed, EventRef, EventsShape, FieldKey, Fields, KeySeed, TopShape,
};
use super::fast_event;
use super::json_stream::{JsonStream, Limits, Position, StreamError};
use super::raw::RawTrace;
use crate::scenario::locate::strip_position;
use crate::vocab::units::binary_size;
use flate2::read::MultiGzDecoder;
use serde::de::{DeserializeSeed, IgnoredAny};
use std::cell::Cell;
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

/// The JSON text of `reader`, past a UTF-8 byte-order mark (which is accepted); a UTF-16 file
/// (its byte-order mark, or a NUL as its second byte) is an error at 1:1 that says so.
fn text_start<R: std::io::BufRead>(mut reader: R, file: &str, gzip: bool) -> Result<R, TraceError> {
    // Read errors here are those the stream would report at its start.
    let head = reader.fill_buf().map_err(|e| TraceError::Syntax {
        file: file.to_string(),
        line: 1,
        column: 1,
        message: if gzip {
            format!("broken gzip stream: {e}")
        } else {
            format!("read error: {e}")
        },
    })?;
    if head.starts_with(&[0xEF, 0xBB, 0xBF]) {
        reader.consume(3);
    } else if crate::scenario::looks_like_utf16(head) {
        return Err(TraceError::Syntax {
            file: file.to_string(),
            line: 1,
            column: 1,
            message: "the file is UTF-16; traces are read as UTF-8 (save it as UTF-8)".into(),
        });
    }
    Ok(reader)
}

/// Reads a trace from `reader` (plain JSON or gzip, told apart by the magic bytes); `file` is the
/// name errors and warnings give. `progress` is called with the number of (compressed) bytes read
/// so far about every MiB; returning `false` cancels the import. The default [`Limits`] bound
/// what the file may expand to.
pub fn import(
    reader: impl Read,
    file: &str,
    progress: &mut dyn FnMut(u64) -> bool,
) -> Result<RawTrace, TraceError> {
    import_with(reader, file, Limits::default(), progress)
}

/// [`import`] within `limits`: one value (an event) of more than `limits.value_bytes`, or a file
/// that decompresses to more than `limits.file_bytes`, is an error that names the limit.
pub fn import_with(
    reader: impl Read,
    file: &str,
    limits: Limits,
    progress: &mut dyn FnMut(u64) -> bool,
) -> Result<RawTrace, TraceError> {
    let cancelled = Cell::new(false);
    let counting = CountingReader {
        inner: reader,
        read: 0,
        reports: Reports::new(progress, &cancelled),
    };
    let mut buffered = BufReader::with_capacity(1 << 16, counting);
    let gzip = match buffered.fill_buf() {
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
        // A gzip file's length says little of its text's.
        let text = text_start(BufReader::new(MultiGzDecoder::new(buffered)), file, true)?;
        walk(&mut JsonStream::with_limits(text, limits), &mut builder)
    } else {
        builder.presize(limits.length, limits);
        walk(
            &mut JsonStream::with_limits(text_start(buffered, file, false)?, limits),
            &mut builder,
        )
    };
    finished(result, builder, cancelled.get(), file, gzip)
}

/// [`import_with`] of bytes already in memory: plain JSON is read where it is, not copied into
/// a buffer first (gzip goes through its decoder). The same trace, errors and progress reports
/// as the bytes read through a reader.
pub fn import_slice_with(
    bytes: &[u8],
    file: &str,
    limits: Limits,
    progress: &mut dyn FnMut(u64) -> bool,
) -> Result<RawTrace, TraceError> {
    if bytes.starts_with(&[0x1f, 0x8b]) {
        return import_with(bytes, file, limits, progress);
    }
    let text = text_start(bytes, file, false)?;
    // Progress counts the file's bytes, the byte-order mark among them, as a reader's does.
    let mark = bytes.len() - text.len();
    let cancelled = Cell::new(false);
    let mut reports = Reports::new(progress, &cancelled);
    let mut report = |reach: u64| reports.reached(reach + mark as u64);
    let mut builder = Builder::new(file);
    builder.presize(text.len() as u64, limits);
    let result = walk(
        &mut JsonStream::over_slice(text, limits, &mut report),
        &mut builder,
    );
    finished(result, builder, cancelled.get(), file, false)
}

/// The trace the walk gave `builder`, or the error it stopped at, as the import reports it
/// (`cancelled`: progress said stop; `gzip`: whether the text came from a gzip stream).
fn finished(
    result: Result<bool, Problem>,
    builder: Builder,
    cancelled: bool,
    file: &str,
    gzip: bool,
) -> Result<RawTrace, TraceError> {
    if cancelled {
        return Err(TraceError::Cancelled {
            file: file.to_string(),
        });
    }
    let at = |pos: Position, message: String| TraceError::Syntax {
        file: file.to_string(),
        line: pos.line,
        column: pos.column,
        message,
    };
    match result {
        Ok(true) => Ok(builder.finish()),
        Ok(false) => Err(TraceError::Format {
            file: file.to_string(),
            message: "an object without `traceEvents`: not a Chrome trace".to_string(),
        }),
        Err(Problem::Empty) => Err(TraceError::Format {
            file: file.to_string(),
            message: "the file is empty".to_string(),
        }),
        Err(Problem::At(pos, message)) => Err(at(pos, message)),
        Err(Problem::Stream(StreamError::Eof(pos))) => Err(at(
            pos,
            "the file ends in the middle of the trace (truncated?)".to_string(),
        )),
        Err(Problem::Stream(StreamError::ValueTooLarge(pos, limit))) => Err(at(
            pos,
            format!(
                "one value here is larger than {} (the limit for one event; `--max-event-bytes` raises it)",
                binary_size(limit)
            ),
        )),
        Err(Problem::Stream(StreamError::FileTooLarge(pos, limit))) => Err(at(
            pos,
            format!(
                "the file decompresses to more than {} (the limit for one trace file; `--max-trace-bytes` raises it)",
                binary_size(limit)
            ),
        )),
        Err(Problem::Stream(StreamError::Io(e, pos))) => Err(at(
            pos,
            if gzip {
                format!("broken gzip stream: {e}")
            } else {
                format!("read error: {e}")
            },
        )),
    }
}

/// Imports a trace held in memory ([`import_slice_with`] within the default limits).
pub fn import_bytes(bytes: &[u8], file: &str) -> Result<RawTrace, TraceError> {
    import_slice_with(bytes, file, Limits::default(), &mut |_| true)
}

/// Whether dropped or chosen bytes are a trace rather than a scenario: gzip, a bare array, or an
/// object whose first 4 KiB name a Chrome-trace key. Anything else is opened as a scenario (whose
/// loader then says what is wrong with it).
pub fn looks_like_trace(head: &[u8]) -> bool {
    if head.starts_with(&[0x1f, 0x8b]) {
        return true;
    }
    let head = head.get(..head.len().min(4096)).unwrap_or_default();
    if head.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[') {
        return true;
    }
    const TRACE_KEYS: [&str; 5] = [
        "\"traceEvents\"",
        "\"schemaVersion\"",
        "\"deviceProperties\"",
        "\"distributedInfo\"",
        "\"displayTimeUnit\"",
    ];
    TRACE_KEYS
        .iter()
        .any(|key| head.windows(key.len()).any(|w| w == key.as_bytes()))
}

/// What stopped the walk.
enum Problem {
    Empty,
    At(Position, String),
    Stream(StreamError),
}

impl From<StreamError> for Problem {
    fn from(e: StreamError) -> Self {
        Problem::Stream(e)
    }
}

/// Places a serde error found in a value that starts at `start`.
fn serde_problem(start: Position, e: &serde_json::Error) -> Problem {
    let message = strip_position(&e.to_string());
    let message = match e.classify() {
        serde_json::error::Category::Data => message,
        _ => format!("not valid JSON: {message}"),
    };
    Problem::At(start.within(e.line(), e.column()), message)
}

/// Runs `seed` over one value's bytes, requiring nothing after it.
fn parse_value<'de, T: DeserializeSeed<'de>>(
    bytes: &'de [u8],
    start: Position,
    seed: T,
) -> Result<T::Value, Problem> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    seed.deserialize(&mut de)
        .and_then(|v| de.end().map(|()| v))
        .map_err(|e| serde_problem(start, &e))
}

/// An error at the stream's position once the import holds more events than its limit.
fn held_within<R: Read>(
    stream: &mut JsonStream<'_, R>,
    builder: &mut Builder,
) -> Result<(), Problem> {
    let (limit, before) = stream.event_limit();
    if builder.note_held().saturating_add(before) <= limit {
        return Ok(());
    }
    Err(Problem::At(
        stream.position(),
        format!(
            "the traces hold more than {limit} events here (the limit of one import: about {} at the ~100 bytes each costs; `--max-trace-events` raises it)",
            crate::vocab::units::bytes(limit as f64 * 100.0)
        ),
    ))
}

/// Parses the event at the stream's position straight from its buffer (serde finds where it
/// ends); an event cut by the buffer's end is parsed again after a refill.
fn next_event<R: Read>(
    stream: &mut JsonStream<'_, R>,
    builder: &mut Builder,
) -> Result<(), Problem> {
    loop {
        let mut event = Fields::default();
        if let Some(used) = fast_event::parse_into(stream.rest(), &mut event) {
            if used as u64 > stream.value_limit() {
                return Err(stream.value_too_large().into());
            }
            builder.accept(&event);
            stream.consume(used);
            return held_within(stream, builder);
        }
        let mut events =
            serde_json::Deserializer::from_slice(stream.rest()).into_iter::<EventRef>();
        let error = match events.next() {
            Some(Ok(event)) => {
                let used = events.byte_offset();
                if used as u64 > stream.value_limit() {
                    return Err(stream.value_too_large().into());
                }
                builder.accept(&event.fields());
                stream.consume(used);
                return held_within(stream, builder);
            }
            // An event cut by the buffer's end fails as EOF, or as a number or literal cut
            // short: read on and parse it again.
            Some(Err(e)) if !stream.at_eof() && near_end(stream.rest(), &e) => None,
            Some(Err(e)) => Some(e),
            None => return Err(truncated(stream)),
        };
        match error {
            None => {
                stream.refill()?;
            }
            Some(e) => {
                let start = stream.position();
                if e.is_eof() {
                    let at = start.within(e.line(), e.column());
                    return Err(StreamError::Eof(at).into());
                }
                return Err(serde_problem(start, &e));
            }
        }
    }
}

/// Whether serde stopped within the last few bytes of `bytes` (where a value may be cut short).
fn near_end(bytes: &[u8], e: &serde_json::Error) -> bool {
    if e.is_eof() {
        return true;
    }
    let line_start = match e.line() {
        0 | 1 => 0,
        line => memchr::memchr_iter(b'\n', bytes)
            .nth(line - 2)
            .map_or(bytes.len(), |i| i + 1),
    };
    line_start + e.column() + 64 >= bytes.len()
}

/// The stream ended where more was needed.
fn truncated<R: Read>(stream: &mut JsonStream<'_, R>) -> Problem {
    StreamError::Eof(stream.position()).into()
}

fn expected<R: Read>(stream: &mut JsonStream<'_, R>, what: &str) -> Problem {
    Problem::At(
        stream.position(),
        format!("not valid JSON: expected {what}"),
    )
}

/// The top level: an object (with `traceEvents`) or a bare array of events. Returns whether
/// events were found.
fn walk<R: Read>(stream: &mut JsonStream<'_, R>, builder: &mut Builder) -> Result<bool, Problem> {
    let found = match stream.peek()? {
        None => return Err(Problem::Empty),
        Some(b'[') => {
            stream.bump();
            events(stream, builder)?;
            true
        }
        Some(b'{') => {
            stream.bump();
            object(stream, builder)?
        }
        Some(_) => {
            let (bytes, start) = stream.value()?;
            parse_value(bytes, start, TopShape)?;
            false
        }
    };
    if stream.peek()?.is_some() {
        return Err(Problem::At(
            stream.position(),
            "not valid JSON: trailing characters".to_string(),
        ));
    }
    Ok(found)
}

fn object<R: Read>(stream: &mut JsonStream<'_, R>, builder: &mut Builder) -> Result<bool, Problem> {
    let mut found = false;
    if stream.peek()? == Some(b'}') {
        stream.bump();
        return Ok(false);
    }
    loop {
        match stream.peek()? {
            Some(b'"') => {}
            Some(_) => return Err(expected(stream, "a key in double quotes")),
            None => return Err(truncated(stream)),
        }
        let (bytes, start) = stream.value()?;
        let key = parse_value(bytes, start, KeySeed)?;
        match stream.peek()? {
            Some(b':') => stream.bump(),
            Some(_) => return Err(expected(stream, "`:`")),
            None => return Err(truncated(stream)),
        }
        match (key, stream.peek()?) {
            (_, None) => return Err(truncated(stream)),
            (FieldKey::TraceEvents, Some(b'[')) => {
                stream.bump();
                events(stream, builder)?;
                found = true;
            }
            (key, Some(_)) => {
                let (bytes, start) = stream.value()?;
                match key {
                    FieldKey::TraceEvents => parse_value(bytes, start, EventsShape)?,
                    FieldKey::DistributedInfo => {
                        builder.distributed = parse_value(bytes, start, DistributedSeed)?;
                    }
                    FieldKey::BaseTime => {
                        builder.base_time_ns = parse_value(bytes, start, BaseTimeSeed)?;
                    }
                    _ => parse_value(bytes, start, std::marker::PhantomData::<IgnoredAny>)
                        .map(|_| ())?,
                }
            }
        }
        match stream.peek()? {
            Some(b',') => stream.bump(),
            Some(b'}') => {
                stream.bump();
                return Ok(found);
            }
            Some(_) => return Err(expected(stream, "`,` or `}`")),
            None => return Err(truncated(stream)),
        }
    }
}

/// The elements of the `traceEvents` array (its `[` already consumed).
fn events<R: Read>(stream: &mut JsonStream<'_, R>, builder: &mut Builder) -> Result<(), Problem> {
    if stream.peek()? == Some(b']') {
        stream.bump();
        return Ok(());
    }
    loop {
        match stream.peek()? {
            Some(b']') => {
                return Err(Problem::At(
                    stream.position(),
                    "not valid JSON: trailing comma".to_string(),
                ));
            }
            Some(_) => {}
            None => return Err(truncated(stream)),
        }
        next_event(stream, builder)?;
        match stream.peek()? {
            Some(b',') => stream.bump(),
            Some(b']') => {
                stream.bump();
                return Ok(());
            }
            Some(_) => return Err(expected(stream, "`,` or `]` after a trace event")),
            None => return Err(truncated(stream)),
        }
    }
}

/// A file's progress, reported about every MiB of its bytes ([`PROGRESS_EVERY`]), and whether
/// it said stop (`cancelled`, which the import reads when the walk ends).
struct Reports<'a> {
    next: u64,
    progress: &'a mut dyn FnMut(u64) -> bool,
    cancelled: &'a Cell<bool>,
}

impl<'a> Reports<'a> {
    fn new(progress: &'a mut dyn FnMut(u64) -> bool, cancelled: &'a Cell<bool>) -> Self {
        Reports {
            next: PROGRESS_EVERY,
            progress,
            cancelled,
        }
    }

    /// `read` bytes are in: reported once past the next MiB; `false` once progress says stop.
    fn reached(&mut self, read: u64) -> bool {
        if read < self.next {
            return true;
        }
        self.next = read + PROGRESS_EVERY;
        let go = (self.progress)(read);
        if !go {
            self.cancelled.set(true);
        }
        go
    }
}

struct CountingReader<'a, R> {
    inner: R,
    read: u64,
    reports: Reports<'a>,
}

impl<R: Read> Read for CountingReader<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        if !self.reports.reached(self.read) {
            return Err(std::io::Error::other("cancelled"));
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::raw::DistributedInfo;

    fn import_str(text: &str) -> Result<RawTrace, TraceError> {
        import_bytes(text.as_bytes(), "t.json")
    }

    #[test]
    fn spans_share_their_name_and_category_as_one_kind() {
        // A name under two categories is two kinds; a `B`/`E` pair's kind is its `B`'s; the
        // order the kinds are first met is their order.
        let text = r#"{"traceEvents":[
          {"ph":"X","name":"mm","cat":"cpu_op","pid":1,"tid":1,"ts":0,"dur":1},
          {"ph":"X","name":"mm","cat":"kernel","pid":1,"tid":2,"ts":1,"dur":1},
          {"ph":"X","name":"mm","cat":"cpu_op","pid":1,"tid":1,"ts":2,"dur":1},
          {"ph":"B","name":"PP:0F0","cat":"user_annotation","pid":1,"tid":1,"ts":3},
          {"ph":"E","pid":1,"tid":1,"ts":9},
          {"ph":"X","name":"mm","cat":"kernel","pid":1,"tid":2,"ts":4,"dur":1},
          {"ph":"X","name":"relu","pid":1,"tid":1,"ts":5,"dur":1}
        ]}"#;
        let t = import_str(text).unwrap();
        let kinds: Vec<u32> = t.spans.iter().map(|s| s.kind).collect();
        assert_eq!(kinds, [0, 1, 0, 2, 1, 3]);
        let named: Vec<(&str, &str)> = t
            .kinds
            .iter()
            .map(|k| (t.string(k.name), t.string(k.cat)))
            .collect();
        assert_eq!(
            named,
            [
                ("mm", "cpu_op"),
                ("mm", "kernel"),
                ("PP:0F0", "user_annotation"),
                ("relu", "")
            ]
        );
        assert_eq!(
            (t.name(&t.spans[3]), t.cat(&t.spans[3])),
            ("PP:0F0", "user_annotation")
        );
        // What a run's files hold most of: 24 bytes a span.
        assert_eq!(std::mem::size_of::<crate::trace::Span>(), 24);
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
    fn memory_instants_are_read_with_their_device() {
        // As Kineto writes them (`profile_memory=True`); another instant and a `[memory]` event
        // without a usable total are not samples (the latter is warned about).
        let text = r#"{"baseTimeNanoseconds":1000,"traceEvents":[
          {"ph":"i","cat":"cpu_instant_event","s":"t","name":"[memory]","pid":1,"tid":1,"ts":2.5,
           "args":{"Total Reserved":0,"Total Allocated":16384,"Bytes":16384,"Device Id":-1,"Device Type":0}},
          {"ph":"i","name":"[memory]","pid":1,"tid":1,"ts":3,
           "args":{"Device Type":1,"Device Id":2,"Total Allocated":1.5e9}},
          {"ph":"i","name":"[memory]","pid":1,"tid":1,"ts":4,"args":{"Total Allocated":"much"}},
          {"ph":"i","name":"Iteration Start","pid":1,"tid":1,"ts":5,"args":{"Total Allocated":7}}
        ]}"#;
        let t = import_str(text).unwrap();
        assert_eq!(
            t.memory,
            [
                crate::trace::raw::MemorySample {
                    ts_ns: 3_500,
                    bytes: 16384.0,
                    device_type: 0,
                    device_id: -1
                },
                crate::trace::raw::MemorySample {
                    ts_ns: 4_000,
                    bytes: 1.5e9,
                    device_type: 1,
                    device_id: 2
                }
            ]
        );
        // The unreadable total is said, with its event, not dropped silently.
        let warnings: Vec<String> = t.warnings.iter().map(ToString::to_string).collect();
        assert_eq!(
            warnings,
            [
                "t.json: event 2: `[memory]` event without a finite number `args.Total Allocated`; skipped"
            ]
        );
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
            "t.json:1:25: the file ends in the middle of the trace (truncated?)"
        );
        let err = import_str("[1]").unwrap_err();
        assert_eq!(
            err.to_string(),
            "t.json:1:2: invalid type: integer `1`, expected a trace event object"
        );
        let err = import_str("{\"traceEvents\":{}}").unwrap_err();
        assert_eq!(
            err.to_string(),
            "t.json:1:17: invalid type: map, expected an array of trace events"
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
    fn events_across_buffer_refills_keep_every_digit() {
        // About 3 MB: events (and their float timestamps) straddle the 1 MiB buffer's ends.
        let mut text = String::from("{\"traceEvents\":[");
        for i in 0..30_000u64 {
            if i > 0 {
                text.push_str(",\n");
            }
            text.push_str(&format!(
                r#"{{"ph":"X","name":"op \"{}\"","pid":1,"tid":2,"ts":{}.{:03},"dur":0.5,"args":{{"k":[1,2,{{"x":"y"}}]}}}}"#,
                i % 5,
                1_000_000 + i * 7,
                i % 1000
            ));
        }
        text.push_str("]}");
        let t = import_str(&text).unwrap();
        assert_eq!(t.spans.len(), 30_000);
        for (i, s) in t.spans.iter().enumerate() {
            let i = i as i64;
            assert_eq!(
                s.start_ns,
                (1_000_000 + i * 7) * 1000 + i % 1000,
                "event {i}"
            );
            assert_eq!(s.dur_ns, 500);
        }
        assert_eq!(t.name(&t.spans[3]), "op \"3\"");
        assert!(t.warnings.is_empty());
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
        type Import = fn(&[u8], &str, &mut dyn FnMut(u64) -> bool) -> Result<RawTrace, TraceError>;
        let through_a_reader: Import = |bytes, file, progress| import(bytes, file, progress);
        let in_place: Import =
            |bytes, file, progress| import_slice_with(bytes, file, Limits::default(), progress);
        for read in [through_a_reader, in_place] {
            let mut seen = Vec::new();
            let t = read(text.as_bytes(), "big.json", &mut |n| {
                seen.push(n);
                true
            })
            .unwrap();
            assert_eq!(t.spans.len(), 40_000);
            assert!(seen.len() > 1 && seen.windows(2).all(|w| w[0] < w[1]));
            assert!(seen.iter().all(|&n| n <= text.len() as u64), "{seen:?}");
            let err = read(text.as_bytes(), "big.json", &mut |_| false).unwrap_err();
            assert_eq!(
                err,
                TraceError::Cancelled {
                    file: "big.json".to_string()
                }
            );
            // Under a MiB nothing is reported, so nothing can cancel it.
            let small = &text.as_bytes()[..100_000];
            let mut calls = 0;
            let err = read(small, "small.json", &mut |_| {
                calls += 1;
                false
            });
            assert_eq!(calls, 0, "{err:?}");
        }
    }

    /// Every way the two readings could part: each fixture, the text cut short at many places,
    /// broken, past each limit, behind a byte-order mark, and one value larger than the first
    /// window (which grows for it, as the buffer does).
    #[test]
    fn bytes_read_in_place_read_as_through_a_reader() {
        let mut cases: Vec<(String, Vec<u8>, Limits)> = Vec::new();
        for path in crate::trace::fixture_folders().into_iter().flatten() {
            // Its text (a broken gzip stream as it is: both readings decompress it).
            let bytes = std::fs::read(&path).unwrap();
            let mut text = Vec::new();
            let gzip = path.display().to_string().ends_with(".gz");
            let read = gzip
                && MultiGzDecoder::new(&bytes[..])
                    .read_to_end(&mut text)
                    .is_ok();
            let name = path.display().to_string();
            cases.push((name, if read { text } else { bytes }, Limits::default()));
        }
        assert!(cases.len() > 50, "{} fixtures", cases.len());
        let mut big = String::from("{\"traceEvents\": [\n");
        for i in 0..30_000 {
            big.push_str(&format!(
                "{{\"ph\":\"X\",\"name\":\"op{}\",\"pid\":0,\"tid\":{},\"ts\":{i}.5,\"dur\":2}},\n",
                i % 11,
                i % 3
            ));
        }
        let long = format!(
            "{{\"ph\":\"X\",\"name\":\"{}\",\"pid\":0,\"tid\":0,\"ts\":1,\"dur\":1}}",
            "x".repeat(3 << 20)
        );
        let whole = format!("{big}{long}]}}");
        let limited = |value_bytes: u64, file_bytes: u64| Limits {
            value_bytes,
            file_bytes,
            ..Limits::default()
        };
        let events_limit = Limits {
            events: 1000,
            ..Limits::default()
        };
        for (name, limits) in [
            ("whole", Limits::default()),
            ("long value, limit below it", limited(2 << 20, 16 << 30)),
            ("small values limit", limited(40, 16 << 30)),
            ("file limit", limited(64 << 20, 1 << 20)),
            ("events limit", events_limit),
        ] {
            cases.push((name.into(), whole.clone().into_bytes(), limits));
        }
        let mut marked = vec![0xEF, 0xBB, 0xBF];
        marked.extend_from_slice(whole.as_bytes());
        cases.push(("byte-order mark".into(), marked, Limits::default()));
        cases.push((
            "utf-16".into(),
            vec![0xFF, 0xFE, b'[', 0, b']', 0],
            Limits::default(),
        ));
        cases.push(("empty".into(), Vec::new(), Limits::default()));
        cases.push((
            "broken".into(),
            whole
                .replace("\"ts\":20000.5", "\"ts\":20000.5.")
                .into_bytes(),
            Limits::default(),
        ));
        for cut in [
            1,
            17,
            1000,
            (1 << 20) - 3,
            (1 << 20) + 5,
            1_500_000,
            whole.len() - 40,
        ] {
            let text = whole.get(..cut).unwrap().as_bytes().to_vec();
            cases.push((format!("cut at {cut}"), text, Limits::default()));
        }
        for (name, bytes, limits) in &cases {
            let through = import_with(&bytes[..], name, *limits, &mut |_| true);
            let in_place = import_slice_with(bytes, name, *limits, &mut |_| true);
            assert_eq!(format!("{in_place:?}"), format!("{through:?}"), "{name}");
            // A length given (the right one, none, one far too small or too large) sizes the
            // lists and changes nothing read.
            let length = bytes.len() as u64;
            for hint in [length, 1, length * 1000, u64::MAX] {
                let sized = import_with(&bytes[..], name, limits.of_length(hint), &mut |_| true);
                assert_eq!(
                    format!("{sized:?}"),
                    format!("{through:?}"),
                    "{name}, {hint}"
                );
            }
        }
    }

    /// A file read with its length has its span list made once, at the size its bytes could
    /// hold, within the events the import has room for; a gzip file's length says nothing of
    /// its text, and sizes nothing. (A 32-bit target sizes nothing.)
    #[cfg(target_pointer_width = "64")]
    #[test]
    fn a_file_read_with_its_length_sizes_its_lists_once() {
        // Spans of 200-odd bytes (as profilers write them, arguments and all), a flow point
        // for every fourth.
        let mut text = String::from("{\"traceEvents\": [\n");
        for i in 0..20_000 {
            text.push_str(&format!(
                "{{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mm\",\"pid\":0,\"tid\":0,\"ts\":{i},\"dur\":1,\"args\":{{\"External id\":{i},\"Input Dims\":[[64,64],[64,64]],\"Input type\":[\"float\",\"float\"]}}}},\n",
            ));
            if i % 4 == 0 {
                text.push_str(&format!(
                    "{{\"ph\":\"s\",\"id\":{i},\"cat\":\"ac2g\",\"name\":\"l\",\"pid\":0,\"tid\":0,\"ts\":{i}}},\n",
                ));
            }
        }
        text.push_str("{\"ph\":\"i\",\"name\":\"end\",\"pid\":0,\"tid\":0,\"ts\":0}]}");
        let length = text.len() as u64;
        let (spans, flows) = (length / 128, length / 256);
        assert!(spans > 20_000 && flows > 5_000, "{length} bytes");
        let read = |limits: Limits| import_with(text.as_bytes(), "t.json", limits, &mut |_| true);
        let t = read(Limits::default().of_length(length)).unwrap();
        assert_eq!((t.spans.len(), t.flows.len()), (20_000, 5_000));
        assert_eq!(
            (t.spans.capacity() as u64, t.flows.capacity() as u64),
            (spans, flows)
        );
        let in_place = import_bytes(text.as_bytes(), "t.json").unwrap();
        assert_eq!(in_place.spans.capacity() as u64, spans);
        // Room for fewer events than the bytes could hold: sized for the room.
        let room = Limits {
            events: 100_000,
            ..Limits::default()
        };
        let t = read(room.after(74_000).of_length(length)).unwrap();
        assert!(spans > 26_000);
        assert_eq!(
            (t.spans.capacity(), t.flows.capacity() as u64),
            (26_000, flows)
        );
        // A length shorter than the text: the lists grow past it as they would.
        let t = read(Limits::default().of_length(1000)).unwrap();
        assert_eq!(t.spans.len(), 20_000);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, text.as_bytes()).unwrap();
        let gz = gz.finish().unwrap();
        let t = import_with(
            &gz[..],
            "t.json.gz",
            Limits::default().of_length(length),
            &mut |_| true,
        )
        .unwrap();
        assert_ne!(t.spans.capacity() as u64, spans);
    }

    #[test]
    fn traces_and_scenarios_are_told_apart() {
        assert!(looks_like_trace(&[0x1f, 0x8b, 8, 0]));
        assert!(looks_like_trace(b"  [{\"ph\":\"X\"}]"));
        assert!(looks_like_trace(
            b"{\"schemaVersion\":1,\"traceEvents\":[]}"
        ));
        assert!(!looks_like_trace(b"{\"format\": \"mpipe-scenario/1\"}"));
        assert!(!looks_like_trace(b"{\"format\": 3}"));
        assert!(!looks_like_trace(b""));
    }
}
