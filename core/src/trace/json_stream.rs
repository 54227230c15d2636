//! A JSON byte stream read through one refilled buffer (1 MiB, grown only for a value larger than
//! that) — or, for bytes already in memory, read in place through a window over them that moves
//! on as that buffer would be refilled —, with line and column kept: the trace reader walks the
//! top level itself, parses each event straight from [`JsonStream::rest`], and takes other
//! top-level values whole with [`JsonStream::value`] (a bracket-and-string scanner finds where
//! one ends; serde parses it and reports any error inside it, which [`Position::within`] places
//! in the whole file).

use std::io::Read;

/// 1-based line and column in the whole (decompressed) text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    pub line: usize,
    pub column: usize,
}

impl Position {
    /// Where serde's `(line, column)` inside a value that starts here is in the whole text.
    pub fn within(self, line: usize, column: usize) -> Position {
        if line <= 1 {
            Position {
                line: self.line,
                column: self.column + column.saturating_sub(1),
            }
        } else {
            Position {
                line: self.line + line - 1,
                column,
            }
        }
    }
}

#[derive(Debug)]
pub enum StreamError {
    Io(std::io::Error, Position),
    /// The stream ended inside a value.
    Eof(Position),
    /// One value (an event) needs more than `Limits::value_bytes` of buffer.
    ValueTooLarge(Position, u64),
    /// The (decompressed) stream goes past `Limits::file_bytes`.
    FileTooLarge(Position, u64),
}

/// What one stream may expand to: a gzip bomb, or a name of gigabytes, ends with an error that
/// names the limit instead of running until memory runs out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The largest single value (one event with its arguments): 64 MiB by default.
    pub value_bytes: u64,
    /// The most bytes one file may decompress to: 16 GiB by default.
    pub file_bytes: u64,
    /// The most events (spans, flow points, memory samples) an import holds, over all its
    /// files: [`MAX_EVENTS`] by default.
    pub events: u64,
    /// The events the import's earlier files hold ([`Limits::after`]).
    pub held: u64,
    /// The file's length, when the caller knows it (a plain file's size; 0: not known): its
    /// lists are sized for it at the start rather than grown by copying (a hint, never a limit;
    /// [`Limits::of_length`]).
    pub length: u64,
}

/// The most events an import holds by default: at the ~100 bytes each one costs at its peak
/// (the span, its share of the compute ops, and the vector's growth), about 6.4 GB — within
/// the 8 GiB every input of this version stays under, whatever the file's bytes.
pub const MAX_EVENTS: u64 = 64_000_000;

impl Limits {
    /// The limits for the next file of an import whose earlier files hold `held` events (the
    /// bytes are per file, the events per import).
    pub fn after(self, held: u64) -> Limits {
        Limits { held, ..self }
    }

    /// The limits for a file of `length` bytes (its lists sized for it).
    pub fn of_length(self, length: u64) -> Limits {
        Limits { length, ..self }
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            value_bytes: 64 << 20,
            file_bytes: 16 << 30,
            events: MAX_EVENTS,
            held: 0,
            length: 0,
        }
    }
}

const CHUNK: usize = 1 << 20;

/// Where a stream's bytes come from.
enum Source<'a, R> {
    /// A reader, read into the stream's own buffer.
    Reader { reader: R, buf: Vec<u8> },
    /// Bytes already in memory, read where they are: the window `pos..end` over them is what a
    /// buffer of `window` bytes would hold (grown as it would be, for a value larger than it),
    /// and `progress` hears how far it reaches each time it moves on (about every MiB); its
    /// `false` stops the stream with an error.
    Slice {
        bytes: &'a [u8],
        window: usize,
        progress: &'a mut dyn FnMut(u64) -> bool,
    },
}

impl<R> std::fmt::Debug for Source<'_, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Reader { buf, .. } => write!(f, "Reader({} bytes of buffer)", buf.len()),
            Source::Slice { bytes, window, .. } => {
                write!(f, "Slice({} bytes, window {window})", bytes.len())
            }
        }
    }
}

#[derive(Debug)]
pub struct JsonStream<'a, R> {
    source: Source<'a, R>,
    /// Next unread byte (of the buffer, or of the bytes in memory).
    pos: usize,
    /// End of the valid bytes.
    end: usize,
    eof: bool,
    /// Newlines are counted lazily: `line` is the line of `buf[counted]`, and `line_start` the
    /// absolute offset where that line starts.
    counted: usize,
    line: usize,
    line_start: u64,
    /// Absolute offset of the buffer's first byte (0 for bytes read in place).
    base: u64,
    limits: Limits,
}

impl<'a, R> JsonStream<'a, R> {
    /// A stream at the start of `source`, within `limits`.
    fn starting(source: Source<'a, R>, limits: Limits) -> Self {
        JsonStream {
            limits,
            source,
            pos: 0,
            end: 0,
            eof: false,
            counted: 0,
            line: 1,
            line_start: 0,
            base: 0,
        }
    }
}

impl<'a> JsonStream<'a, std::io::Empty> {
    /// A stream over bytes in memory, read where they are, that stops with an error at `limits`
    /// or when `progress` (told how many bytes the stream has reached, about every MiB) says
    /// `false`: the same values, positions and errors as the bytes read through a reader.
    pub fn over_slice(
        bytes: &'a [u8],
        limits: Limits,
        progress: &'a mut dyn FnMut(u64) -> bool,
    ) -> Self {
        let source = Source::Slice {
            bytes,
            window: CHUNK,
            progress,
        };
        Self::starting(source, limits)
    }
}

impl<R: Read> JsonStream<'_, R> {
    pub fn new(reader: R) -> Self {
        Self::with_limits(reader, Limits::default())
    }

    /// A stream that stops with an error at `limits`.
    pub fn with_limits(reader: R, limits: Limits) -> Self {
        let source = Source::Reader {
            reader,
            buf: vec![0; CHUNK],
        };
        Self::starting(source, limits)
    }

    /// Where the next unread byte is.
    pub fn position(&mut self) -> Position {
        self.count_lines(self.pos);
        let absolute = self.base + self.pos as u64;
        Position {
            line: self.line,
            column: (absolute.saturating_sub(self.line_start) + 1) as usize,
        }
    }

    /// The buffer, or the bytes in memory: what `pos` and `end` index.
    fn bytes(&self) -> &[u8] {
        match &self.source {
            Source::Reader { buf, .. } => buf,
            Source::Slice { bytes, .. } => bytes,
        }
    }

    /// Counts the newlines in `bytes()[counted..upto]`.
    fn count_lines(&mut self, upto: usize) {
        if upto <= self.counted {
            return;
        }
        if let Some(bytes) = self.bytes().get(self.counted..upto)
            && let Some(last) = memchr::memrchr(b'\n', bytes)
        {
            self.line += memchr::memchr_iter(b'\n', bytes).count();
            self.line_start = self.base + (self.counted + last + 1) as u64;
        }
        self.counted = upto;
    }

    /// Reads more bytes, keeping the unread ones (growing the buffer when full); `false` at the
    /// end of the stream.
    pub fn refill(&mut self) -> Result<bool, StreamError> {
        if self.eof {
            return Ok(false);
        }
        if matches!(self.source, Source::Slice { .. }) {
            return self.move_window();
        }
        if self.pos > 0 {
            self.count_lines(self.pos);
            self.counted = 0;
            if let Source::Reader { buf, .. } = &mut self.source {
                buf.copy_within(self.pos..self.end, 0);
            }
            self.base += self.pos as u64;
            self.end -= self.pos;
            self.pos = 0;
        }
        if self.end == self.bytes().len() {
            // One value fills the buffer: grow it, up to the limit for one value.
            self.grown(self.bytes().len())?;
        }
        let left = self.within_file()?;
        loop {
            let Source::Reader { reader, buf } = &mut self.source else {
                return Ok(false);
            };
            let to = self.end.saturating_add(left).min(buf.len());
            let Some(space) = buf.get_mut(self.end..to) else {
                return Ok(false);
            };
            match reader.read(space) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(false);
                }
                Ok(n) => {
                    self.end += n;
                    return Ok(true);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(StreamError::Io(e, self.position())),
            }
        }
    }

    /// [`refill`](Self::refill) for bytes read in place: the window moves on to hold what the
    /// buffer would after a refill, growing as the buffer would; reports how far it reaches.
    fn move_window(&mut self) -> Result<bool, StreamError> {
        let Source::Slice { window, .. } = self.source else {
            return Ok(false);
        };
        if self.end - self.pos >= window {
            self.grown(window)?;
        }
        let left = self.within_file()?;
        let Source::Slice {
            bytes,
            window,
            progress,
        } = &mut self.source
        else {
            return Ok(false);
        };
        let reach = (self.pos + *window)
            .min(bytes.len())
            .min(self.end.saturating_add(left));
        if reach <= self.end {
            self.eof = true;
            return Ok(false);
        }
        self.end = reach;
        if !progress(reach as u64) {
            let error = std::io::Error::other("cancelled");
            return Err(StreamError::Io(error, self.position()));
        }
        Ok(true)
    }

    /// The buffer (or window) of `size` bytes, full with one value, grown for it: doubled, up
    /// to the limit for one value, which is an error once reached.
    fn grown(&mut self, size: usize) -> Result<(), StreamError> {
        if size as u64 >= self.limits.value_bytes {
            return Err(StreamError::ValueTooLarge(
                self.position(),
                self.limits.value_bytes,
            ));
        }
        let grown = (size * 2)
            .min(self.limits.value_bytes.max(1) as usize)
            .max(size + 1);
        match &mut self.source {
            Source::Reader { buf, .. } => buf.resize(grown, 0),
            Source::Slice { window, .. } => *window = grown,
        }
        Ok(())
    }

    /// An error once the stream has gone past the limit for one file; else how many more bytes
    /// it may take in: up to one past the limit, so that it stops at the same byte however it
    /// was read (and the error is at the same place).
    fn within_file(&mut self) -> Result<usize, StreamError> {
        let taken = self.base + self.end as u64;
        if taken > self.limits.file_bytes {
            return Err(StreamError::FileTooLarge(
                self.position(),
                self.limits.file_bytes,
            ));
        }
        let left = (self.limits.file_bytes - taken).saturating_add(1);
        Ok(usize::try_from(left).unwrap_or(usize::MAX))
    }

    /// Consumes `len` bytes of [`rest`](Self::rest).
    pub fn consume(&mut self, len: usize) {
        self.pos = (self.pos + len).min(self.end);
    }

    /// The next byte that is not whitespace, without consuming it; `None` at the end.
    pub fn peek(&mut self) -> Result<Option<u8>, StreamError> {
        loop {
            let skip = self
                .bytes()
                .get(self.pos..self.end)
                .unwrap_or_default()
                .iter()
                .position(|b| !b.is_ascii_whitespace());
            match skip {
                Some(n) => {
                    self.consume(n);
                    return Ok(self.bytes().get(self.pos).copied());
                }
                None => {
                    self.consume(self.end - self.pos);
                    if !self.refill()? {
                        return Ok(None);
                    }
                }
            }
        }
    }

    /// The unread bytes in the buffer.
    pub fn rest(&self) -> &[u8] {
        self.bytes().get(self.pos..self.end).unwrap_or_default()
    }

    /// Whether the reader has no more bytes to give.
    pub fn at_eof(&self) -> bool {
        self.eof
    }

    /// Consumes one (non-newline) byte.
    pub fn bump(&mut self) {
        self.consume(1);
    }

    /// The next whole value (call after [`peek`](Self::peek) saw its first byte): its bytes and
    /// where it starts. The value is consumed.
    pub fn value(&mut self) -> Result<(&[u8], Position), StreamError> {
        let len = loop {
            let rest = self.bytes().get(self.pos..self.end).unwrap_or_default();
            match value_len(rest, self.eof) {
                Some(len) => break len,
                None if self.eof => {
                    let rest = self.end - self.pos;
                    self.consume(rest);
                    return Err(StreamError::Eof(self.position()));
                }
                None => {
                    self.refill()?;
                }
            }
        };
        if len as u64 > self.value_limit() {
            return Err(self.value_too_large());
        }
        let start = self.position();
        let from = self.pos;
        self.consume(len);
        Ok((
            self.bytes().get(from..from + len).unwrap_or_default(),
            start,
        ))
    }

    /// The most bytes one value may take (`Limits::value_bytes`): the buffer only grows past its
    /// first size for a longer one, so a smaller limit is checked on each value read.
    pub fn value_limit(&self) -> u64 {
        self.limits.value_bytes
    }

    /// The error for a value at the stream's position longer than [`Self::value_limit`].
    pub fn value_too_large(&mut self) -> StreamError {
        StreamError::ValueTooLarge(self.position(), self.limits.value_bytes)
    }

    /// The most events the stream's import may hold, and how many its earlier files hold.
    pub fn event_limit(&self) -> (u64, u64) {
        (self.limits.events, self.limits.held)
    }
}

/// The length of the value at the start of `bytes`, or `None` when it does not end inside them.
/// An object's end is found by its braces alone and an array's by its brackets alone (strings
/// skipped); whether the inside is valid JSON is serde's to say. A scalar ends at the first
/// delimiter (or at the end of the stream).
fn value_len(bytes: &[u8], eof: bool) -> Option<usize> {
    let (open, close) = match *bytes.first()? {
        b'{' => (b'{', b'}'),
        b'[' => (b'[', b']'),
        b'"' => return string_end(bytes, 0).map(|end| end + 1),
        _ => {
            // A scalar (a number, true, false, null) is made of these bytes alone; it ends at
            // the first other one — a delimiter, or garbage serde then names at once (a file of
            // NULs must not be read to its end first).
            return match bytes
                .iter()
                .position(|&b| !(b.is_ascii_alphanumeric() || matches!(b, b'.' | b'+' | b'-')))
            {
                Some(n) => Some(n.max(1)),
                None if eof => Some(bytes.len()),
                None => None,
            };
        }
    };
    let mut depth = 0usize;
    let mut i = 0;
    loop {
        let at = i + memchr::memchr3(b'"', open, close, bytes.get(i..)?)?;
        match bytes.get(at) {
            Some(&b'"') => i = string_end(bytes, at)? + 1,
            Some(&b) if b == open => {
                depth += 1;
                i = at + 1;
            }
            _ => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return Some(at + 1);
                }
                i = at + 1;
            }
        }
    }
}

/// Index of the quote that closes the string whose opening quote is at `open`.
fn string_end(bytes: &[u8], open: usize) -> Option<usize> {
    let mut i = open + 1;
    loop {
        let at = i + memchr::memchr2(b'"', b'\\', bytes.get(i..)?)?;
        if bytes.get(at) == Some(&b'"') {
            return Some(at);
        }
        i = at + 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that hands out a few bytes at a time, to cross buffer refills.
    struct Trickle<'a>(&'a [u8]);

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = buf.len().min(self.0.len()).min(3);
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    #[test]
    fn values_come_whole_with_their_positions() {
        let text = b"[ {\"a\": \"}\\\"]\"},\n  [1, [2]] ,\n\"s\\\\\", 12.5e3 , null]";
        let mut s = JsonStream::new(Trickle(text));
        assert_eq!(s.peek().unwrap(), Some(b'['));
        s.bump();
        let mut got = Vec::new();
        loop {
            s.peek().unwrap();
            let (v, at) = s.value().unwrap();
            got.push((String::from_utf8(v.to_vec()).unwrap(), at.line, at.column));
            match s.peek().unwrap() {
                Some(b',') => s.bump(),
                _ => break,
            }
        }
        assert_eq!(
            got,
            [
                ("{\"a\": \"}\\\"]\"}".to_string(), 1, 3),
                ("[1, [2]]".to_string(), 2, 3),
                ("\"s\\\\\"".to_string(), 3, 1),
                ("12.5e3".to_string(), 3, 8),
                ("null".to_string(), 3, 17),
            ]
        );
        assert_eq!(s.peek().unwrap(), Some(b']'));
        s.bump();
        assert_eq!(s.peek().unwrap(), None);
    }

    #[test]
    fn a_value_cut_short_is_an_end_of_stream_error_at_the_end() {
        let mut s = JsonStream::new(Trickle(b"[{\"a\":\n [1,"));
        s.peek().unwrap();
        s.bump();
        s.peek().unwrap();
        match s.value() {
            Err(StreamError::Eof(p)) => assert_eq!(p, Position { line: 2, column: 5 }),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn errors_inside_a_value_are_placed_in_the_whole_text() {
        let start = Position {
            line: 4,
            column: 10,
        };
        assert_eq!(
            start.within(1, 3),
            Position {
                line: 4,
                column: 12
            }
        );
        assert_eq!(start.within(2, 3), Position { line: 5, column: 3 });
    }
}
