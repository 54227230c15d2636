//! The fast path for one trace event: a small validating scanner for the plain shape nearly
//! every event has (keys and names without escapes, integer or string ids, numeric or string
//! times, `args` skipped). It reads into [`Fields`] exactly what [`EventRef`]'s serde path gives
//! the builder and accepts only JSON that serde accepts; anything else — a metadata event, an
//! escape in a name, a float pid, a wrong type, broken JSON — returns `None`, and serde parses
//! the event (and words the error).
//! A fuzz target checks the two paths agree on every input the fast one takes.

use super::event_json::{Args, AtomRef, EventRef, FieldKey, Fields, TimeAtom, time_from_raw};
use super::timestamp;

/// The bytes that end a run of a string's plain bytes: a quote, a backslash, a control byte
/// (a table: one load a byte, where three compares cost half the import's string scanning).
#[allow(clippy::indexing_slicing)] // a constant: an index out of bounds fails the build
const STRING_STOPS: [bool; 256] = {
    let mut stops = [false; 256];
    let mut b = 0;
    while b < 0x20 {
        stops[b] = true;
        b += 1;
    }
    stops[b'"' as usize] = true;
    stops[b'\\' as usize] = true;
    stops
};

/// serde_json's recursion limit is 128; deeper values go to serde, which reports it.
const MAX_DEPTH: u32 = 100;
// `skip_plain_value` keeps its open containers as bits of a `u128`.
const _: () = assert!(MAX_DEPTH < 128);

/// What the builder reads of the event at the start of `bytes` and the number of bytes it
/// takes, when it has the plain shape.
pub fn parse(bytes: &[u8]) -> Option<(Fields<'_>, usize)> {
    let mut ev = Fields::default();
    parse_into(bytes, &mut ev).map(|used| (ev, used))
}

/// [`parse`] into `ev` (a fresh [`Fields::default`]), returning the bytes the event takes: the
/// caller's event is filled where it stands rather than moved out (read a million times). On
/// `None`, `ev` holds what was read before the event left the plain shape.
pub fn parse_into<'a>(bytes: &'a [u8], ev: &mut Fields<'a>) -> Option<usize> {
    let mut c = Cursor { b: bytes, i: 0 };
    c.eat(b'{')?;
    c.ws();
    if c.peek()? == b'}' {
        c.i += 1;
    } else {
        loop {
            let key = c.key()?;
            c.ws();
            c.eat(b':')?;
            c.ws();
            match key {
                FieldKey::Name => ev.name = Some(AtomRef::Str(c.plain_string()?)),
                FieldKey::Ph => ev.ph = Some(AtomRef::Str(c.plain_string()?)),
                FieldKey::Cat => ev.cat = Some(AtomRef::Str(c.plain_string()?)),
                FieldKey::Pid => ev.pid = Some(c.id()?),
                FieldKey::Tid => ev.tid = Some(c.id()?),
                FieldKey::Id => ev.id = Some(c.id()?),
                FieldKey::Ts => ev.ts = Some(c.time()?),
                FieldKey::Dur => ev.dur = Some(c.time()?),
                _ => c.skip_any_value()?,
            }
            c.ws();
            match c.peek()? {
                b',' => {
                    c.i += 1;
                    c.ws();
                }
                b'}' => {
                    c.i += 1;
                    break;
                }
                _ => return None,
            }
        }
    }
    // Metadata events and instants (`[memory]`) need `args`; serde reads those.
    if matches!(ev.ph, Some(AtomRef::Str(b"M" | b"i" | b"I"))) || ev.ph.is_none() {
        return None;
    }
    // As serde's stream reader: the value must be followed by a delimiter or the end.
    match c.peek() {
        None
        | Some(b' ' | b'\n' | b'\t' | b'\r' | b'"' | b'[' | b']' | b'{' | b'}' | b',' | b':') => {}
        Some(_) => return None,
    }
    Some(c.i)
}

/// The key the bytes at a key's opening quote hold, quotes included, when it is one of the
/// builder's or `args` (the key every profiler's event has; `Other`: skipped), and how many
/// bytes it takes: read from one word, by its first letter and one masked compare.
fn key_at_once(word: u64) -> Option<(FieldKey, usize)> {
    // The first `n` bytes of the word, and `text` quoted as such a word.
    let first = |n: usize| word & (u64::MAX >> (64 - 8 * n));
    let quoted = |text: &[u8]| {
        text.iter()
            .rev()
            .fold(u64::from(b'"'), |w, &b| w << 8 | u64::from(b))
            << 8
            | u64::from(b'"')
    };
    let is = |text: &[u8], key: FieldKey| {
        (first(text.len() + 2) == quoted(text)).then_some((key, text.len() + 2))
    };
    match (word >> 8) as u8 {
        b'n' => is(b"name", FieldKey::Name),
        b'p' => is(b"ph", FieldKey::Ph).or_else(|| is(b"pid", FieldKey::Pid)),
        b'c' => is(b"cat", FieldKey::Cat),
        b't' => is(b"ts", FieldKey::Ts).or_else(|| is(b"tid", FieldKey::Tid)),
        b'i' => is(b"id", FieldKey::Id),
        b'd' => is(b"dur", FieldKey::Dur),
        b'a' => is(b"args", FieldKey::Other),
        _ => None,
    }
}

struct Cursor<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Cursor<'a> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.i += 1)
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.peek() {
            self.i += 1;
        }
    }

    /// An event's key (a plain string): the builder's and `args` read from one word where the
    /// input holds eight bytes from the key's quote on, any other as a string.
    fn key(&mut self) -> Option<FieldKey> {
        if let Some(word) = self
            .b
            .get(self.i..self.i + 8)
            .and_then(|w| <[u8; 8]>::try_from(w).ok())
            && let Some((key, len)) = key_at_once(u64::from_le_bytes(word))
        {
            self.i += len;
            return Some(key);
        }
        self.plain_string().map(FieldKey::of_event)
    }

    /// A string with no escape: its bytes (serde's byte strings are not checked for UTF-8 either).
    fn plain_string(&mut self) -> Option<&'a [u8]> {
        self.eat(b'"')?;
        let start = self.i;
        self.plain_run();
        match self.peek()? {
            b'"' => {
                let s = self.b.get(start..self.i)?;
                self.i += 1;
                Some(s)
            }
            _ => None,
        }
    }

    /// Past the bytes a string holds as they are (up to a quote, a backslash, a control byte
    /// or the end).
    fn plain_run(&mut self) {
        let rest = self.b.get(self.i..).unwrap_or_default();
        self.i += rest
            .iter()
            .position(|&b| STRING_STOPS.get(usize::from(b)).copied().unwrap_or(true))
            .unwrap_or(rest.len());
    }

    /// A pid, tid or flow id: an integer that fits `i64`, or a plain UTF-8 string.
    fn id(&mut self) -> Option<AtomRef<'a>> {
        match self.peek()? {
            b'"' => {
                let s = self.plain_string()?;
                std::str::from_utf8(s).ok()?;
                Some(AtomRef::Str(s))
            }
            _ => {
                // Most ids are short positive integers: up to seven digits read at once.
                if let Some(b'1'..=b'9') = self.peek()
                    && let Some((n, value)) = self.b.get(self.i..).and_then(eight_digits)
                    && n < 8
                {
                    self.i += n;
                    if let Some(b'.' | b'e' | b'E') = self.peek() {
                        return None;
                    }
                    return i64::try_from(value).ok().map(AtomRef::Int);
                }
                // An integer that fits i64 (a fraction, an exponent or overflow goes to serde),
                // read as it is checked against the grammar.
                let negative = self.eat(b'-').is_some();
                let mut n: i64 = 0;
                self.integer(|d| {
                    n = n.checked_mul(10)?.checked_add(i64::from(d - b'0'))?;
                    Some(())
                })?;
                if let Some(b'.' | b'e' | b'E') = self.peek() {
                    return None;
                }
                // serde reads `-0` as the float -0.0.
                if negative && n == 0 {
                    return None;
                }
                Some(AtomRef::Int(if negative { -n } else { n }))
            }
        }
    }

    /// A time: a number, or a plain string of a number.
    fn time(&mut self) -> Option<TimeAtom> {
        match self.peek()? {
            b'"' => {
                let start = self.i;
                self.plain_string()?;
                Some(time_from_raw(
                    std::str::from_utf8(self.b.get(start..self.i)?).ok()?,
                ))
            }
            _ => self.time_number(),
        }
    }

    /// A number read as a time: what [`timestamp::from_micros_bytes`] makes of the number
    /// [`Cursor::number`] reads, in one pass (microseconds' digits and three of the fraction's
    /// accumulated as nanoseconds, the fourth rounding, the rest checked); `None` where it is
    /// no JSON number. One with an exponent, or with more than 18 digits accumulated (which
    /// could overflow), is read by those two.
    fn time_number(&mut self) -> Option<TimeAtom> {
        let start = self.i;
        let negative = self.eat(b'-').is_some();
        // At most 18 digits: below 10^18, no overflow.
        let (mut ns, mut digits) = (0u64, 0u32);
        // A long integer part (a profiler's absolute microseconds: 13 digits) eight digits at a
        // time; what is left, and one that starts with `0`, a digit at a time.
        if matches!(self.peek(), Some(b'1'..=b'9')) {
            while let Some((n, value)) = self.b.get(self.i..).and_then(eight_digits) {
                ns = ns
                    .wrapping_mul(POWERS_OF_TEN.get(n).copied().unwrap_or(0))
                    .wrapping_add(value);
                digits = digits.saturating_add(n as u32);
                self.i += n;
                if n < 8 {
                    break;
                }
            }
        }
        let read_at_once = digits > 0;
        let mut push = |d: u8| {
            ns = ns.wrapping_mul(10).wrapping_add(u64::from(d - b'0'));
            digits = digits.saturating_add(1);
            Some(())
        };
        if !read_at_once {
            self.integer(&mut push)?;
        } else {
            while let Some(d @ b'0'..=b'9') = self.peek() {
                push(d);
                self.i += 1;
            }
        }
        let (mut places, mut round_up) = (0u32, false);
        if self.eat(b'.').is_some() {
            if !self.peek()?.is_ascii_digit() {
                return None;
            }
            while let Some(d @ b'0'..=b'9') = self.peek() {
                match places {
                    0..=2 => {
                        push(d);
                        places += 1;
                    }
                    3 => {
                        round_up = d >= b'5';
                        places = 4;
                    }
                    _ => {}
                }
                self.i += 1;
            }
        }
        let ns = if digits > 18 || matches!(self.peek(), Some(b'e' | b'E')) {
            self.i = start;
            timestamp::from_micros_bytes(self.number()?)
        } else {
            i64::try_from(ns)
                .ok()
                .and_then(|ns| ns.checked_mul(10i64.pow(3 - places.min(3))))
                .and_then(|ns| ns.checked_add(i64::from(round_up)))
                .map(|ns| if negative { -ns } else { ns })
        };
        Some(ns.map_or(TimeAtom::Bad("out of range"), TimeAtom::Ns))
    }

    /// A JSON number's integer part (`0`, or a digit 1–9 and any digits), each digit given to
    /// `digit` as it is passed (`None` from it stops the reading); `None` where there is none.
    fn integer(&mut self, mut digit: impl FnMut(u8) -> Option<()>) -> Option<()> {
        match self.peek()? {
            b'0' => {
                digit(b'0')?;
                self.i += 1;
            }
            b'1'..=b'9' => {
                while let Some(d @ b'0'..=b'9') = self.peek() {
                    digit(d)?;
                    self.i += 1;
                }
            }
            _ => return None,
        }
        Some(())
    }

    /// A JSON number, checked against the grammar.
    fn number(&mut self) -> Option<&'a [u8]> {
        let start = self.i;
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        self.integer(|_| Some(()))?;
        if self.peek() == Some(b'.') {
            self.i += 1;
            if !self.peek()?.is_ascii_digit() {
                return None;
            }
            self.digits();
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.i += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.i += 1;
            }
            if !self.peek()?.is_ascii_digit() {
                return None;
            }
            self.digits();
        }
        self.b.get(start..self.i)
    }

    fn digits(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.i += 1;
        }
    }

    /// Skips any JSON value as serde's `IgnoredAny` does: [`Cursor::skip_plain_value`] where
    /// it can, else [`Cursor::skip_value`] from the value's start.
    fn skip_any_value(&mut self) -> Option<()> {
        let start = self.i;
        if self.skip_plain_value().is_some() {
            return Some(());
        }
        self.i = start;
        self.skip_value(0)
    }

    /// Skips a value of objects, arrays, strings without escapes and numbers — what a
    /// profiler's `args` hold — in one loop, without a call per item; `None` where it meets
    /// anything else (an escape, a literal, a value past [`MAX_DEPTH`] containers, a mistake),
    /// which [`Cursor::skip_value`] then reads from the start (and judges).
    fn skip_plain_value(&mut self) -> Option<()> {
        // Bit `d` of `objects`: whether the container at depth `d + 1` is an object.
        let (mut objects, mut depth) = (0u128, 0u32);
        'value: loop {
            // A value.
            match self.peek()? {
                open @ (b'{' | b'[') => {
                    self.i += 1;
                    depth += 1;
                    if depth > MAX_DEPTH {
                        return None;
                    }
                    let object = open == b'{';
                    objects = objects << 1 | u128::from(object);
                    self.ws();
                    let close = if object { b'}' } else { b']' };
                    if self.eat(close).is_some() {
                        depth -= 1;
                        objects >>= 1;
                    } else {
                        if object {
                            self.member_key()?;
                        }
                        continue 'value;
                    }
                }
                b'"' => {
                    self.plain_string()?;
                }
                _ => self.skip_number()?,
            }
            // After a value: the next item, or the containers it closes.
            loop {
                if depth == 0 {
                    return Some(());
                }
                self.ws();
                let object = objects & 1 == 1;
                match (self.peek()?, object) {
                    (b',', _) => {
                        self.i += 1;
                        self.ws();
                        if object {
                            self.member_key()?;
                        }
                        continue 'value;
                    }
                    (b'}', true) | (b']', false) => {
                        self.i += 1;
                        depth -= 1;
                        objects >>= 1;
                    }
                    _ => return None,
                }
            }
        }
    }

    /// Skips a JSON number: a plain integer (no sign, no leading zero) eight digits at a time,
    /// anything else by [`Cursor::number`], which checks the grammar.
    fn skip_number(&mut self) -> Option<()> {
        let start = self.i;
        if let Some(b'1'..=b'9') = self.peek() {
            while let Some(n) = self.b.get(self.i..).and_then(digit_run) {
                self.i += n;
                if n < 8 {
                    break;
                }
            }
            // Fewer than eight bytes left: the rest a byte at a time.
            self.digits();
            if !matches!(self.peek(), Some(b'.' | b'e' | b'E')) {
                return Some(());
            }
            self.i = start;
        }
        self.number().map(|_| ())
    }

    /// An object member's key and its colon, up to its value (a plain key only).
    fn member_key(&mut self) -> Option<()> {
        self.plain_string()?;
        self.ws();
        self.eat(b':')?;
        self.ws();
        Some(())
    }

    /// Skips any JSON value as serde's `IgnoredAny` does (escapes checked, UTF-8 not).
    fn skip_value(&mut self, depth: u32) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        match self.peek()? {
            b'"' => self.skip_string(),
            b'{' => self.list(b'}', |c| {
                c.skip_string()?;
                c.ws();
                c.eat(b':')?;
                c.ws();
                c.skip_value(depth + 1)
            }),
            b'[' => self.list(b']', |c| c.skip_value(depth + 1)),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            _ => self.number().map(|_| ()),
        }
    }

    /// The items of an object or array after its opening byte, each read by `item`, separated
    /// by commas, up to `close`.
    fn list(&mut self, close: u8, mut item: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        self.i += 1;
        self.ws();
        if self.eat(close).is_some() {
            return Some(());
        }
        loop {
            item(self)?;
            self.ws();
            match self.peek()? {
                b',' => {
                    self.i += 1;
                    self.ws();
                }
                b if b == close => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        let end = self.i + word.len();
        (self.b.get(self.i..end)? == word).then(|| self.i = end)
    }

    /// Skips a string, checking its escapes (`\u` needs four hex digits) and control characters.
    fn skip_string(&mut self) -> Option<()> {
        self.eat(b'"')?;
        loop {
            self.plain_run();
            match self.peek()? {
                b'"' => {
                    self.i += 1;
                    return Some(());
                }
                b'\\' => {
                    self.i += 1;
                    match self.peek()? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => self.i += 1,
                        b'u' => {
                            let hex = self.b.get(self.i + 1..self.i + 5)?;
                            if !hex.iter().all(u8::is_ascii_hexdigit) {
                                return None;
                            }
                            self.i += 5;
                        }
                        _ => return None,
                    }
                }
                0..=0x1F => return None,
                _ => self.i += 1,
            }
        }
    }
}

/// 10 to the power of 0 to 8.
const POWERS_OF_TEN: [u64; 9] = [
    1,
    10,
    100,
    1_000,
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
];

/// The first eight bytes of `bytes` as a word with each digit's byte made 0–9, and how many
/// ASCII digits lead it (up to eight); `None` where `bytes` holds fewer than eight bytes.
fn leading_digits(bytes: &[u8]) -> Option<(u64, usize)> {
    let chunk: [u8; 8] = bytes.get(..8)?.try_into().ok()?;
    // Little-endian: the first byte is the lowest. A digit's byte becomes 0–9; a byte is no
    // digit where it has its high bit or gains it from adding 0x76 (0x76 + 10 = 0x80). A carry
    // out of a byte reaches only the bytes after it, past the first that is no digit.
    let v = u64::from_le_bytes(chunk) ^ 0x3030_3030_3030_3030;
    let not_digit = (v | v.wrapping_add(0x7676_7676_7676_7676)) & 0x8080_8080_8080_8080;
    Some((v, (not_digit.trailing_zeros() / 8) as usize))
}

/// How many ASCII digits `bytes` starts with, up to eight, counted at once from its first
/// eight bytes ([`eight_digits`] without their value); `None` where it holds fewer than eight.
fn digit_run(bytes: &[u8]) -> Option<usize> {
    leading_digits(bytes).map(|(_, n)| n)
}

/// The ASCII digits `bytes` starts with, up to eight, read at once from its first eight bytes:
/// how many, and their value; `None` where `bytes` holds fewer than eight bytes.
fn eight_digits(bytes: &[u8]) -> Option<(usize, u64)> {
    let (v, n) = leading_digits(bytes)?;
    if n == 0 {
        return Some((0, 0));
    }
    // The n digits at the top, zeros (leading zeros of the number) below them.
    let v = (v << (8 * (8 - n))) & 0x0F0F_0F0F_0F0F_0F0F;
    // Pairs, then fours, then all eight: each step one multiply.
    let v = (v.wrapping_mul(10 << 8 | 1)) >> 8 & 0x00FF_00FF_00FF_00FF;
    let v = (v.wrapping_mul(100 << 16 | 1)) >> 16 & 0x0000_FFFF_0000_FFFF;
    let v = (v.wrapping_mul(10_000 << 32 | 1)) >> 32;
    Some((n, v))
}

/// What serde's path makes of the event at the start of `bytes`.
fn parse_with_serde(bytes: &[u8]) -> Option<(EventRef<'_>, usize)> {
    let mut events = serde_json::Deserializer::from_slice(bytes).into_iter::<EventRef>();
    let event = events.next()?.ok()?;
    Some((event, events.byte_offset()))
}

/// Checks that whenever the fast path takes the event at the start of `bytes`, serde reads the
/// same event and the same length (for tests and the fuzz target): every field the builder
/// reads, and `args` empty (the fast path takes no event whose `args` the builder reads).
/// Returns whether the fast path took it.
pub fn check_agreement(bytes: &[u8]) -> Result<bool, String> {
    let Some((fast, used)) = parse(bytes) else {
        return Ok(false);
    };
    match parse_with_serde(bytes) {
        Some((slow, slow_used))
            if slow.args == Args::default()
                && Fields {
                    args: None,
                    ..slow.fields()
                } == fast
                && slow_used == used =>
        {
            Ok(true)
        }
        slow => Err(format!("fast path {:?}, serde {slow:?}", (fast, used))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agree(text: &str) -> bool {
        check_agreement(text.as_bytes()).unwrap()
    }

    /// What the two-pass reading made of the number at the start of `text`: the grammar's
    /// number, then its digits as a time or an id, and where it stopped.
    fn two_pass(text: &[u8]) -> (Option<TimeAtom>, Option<i64>, usize) {
        let mut c = Cursor { b: text, i: 0 };
        let Some(number) = c.number() else {
            return (None, None, 0);
        };
        let time = timestamp::from_micros_bytes(number)
            .map_or(TimeAtom::Bad("out of range"), TimeAtom::Ns);
        let id = match number.split_first() {
            Some((b'-', rest)) => rest
                .iter()
                .try_fold(0i64, |n, &d| {
                    d.is_ascii_digit()
                        .then(|| n.checked_mul(10)?.checked_add(i64::from(d - b'0')))?
                })
                .filter(|&n| n != 0)
                .map(|n| -n),
            _ => number.iter().try_fold(0i64, |n, &d| {
                d.is_ascii_digit()
                    .then(|| n.checked_mul(10)?.checked_add(i64::from(d - b'0')))?
            }),
        };
        (Some(time), id, c.i)
    }

    #[test]
    fn numbers_read_in_one_pass_as_the_grammar_then_the_digits_read_them() {
        let mut texts: Vec<String> = [
            "0",
            "-0",
            "7",
            "-7",
            "01",
            "0.5",
            "-0.0",
            "1.",
            "1.e3",
            ".5",
            "-",
            "",
            "x",
            "1e3",
            "1.5e3",
            "-2.5E-1",
            "1e",
            "1e+",
            "12.3456",
            "12.3455",
            "12.34549",
            "0.0004",
            "0.0005",
            "5114768343893.906",
            "1704161511420306.491",
            "9223372036854775",
            "9223372036854775.807",
            "9223372036854775.808",
            "9223372036854775807",
            "9223372036854775808",
            "-9223372036854775808",
            "99999999999999999999",
            "99999999999999999999.5x",
            "1.2.3",
            "1_000",
            "3,",
            "4}",
            "1.25 ",
            // Out of range on the one-pass path (at most 18 digits, overflowing once scaled),
            // at its edge, and past it (the two-pass path); exponents as serde writes them.
            "9999999999999999",
            "-9999999999999999",
            "99999999999999999.9",
            "999999999999999999",
            "9999999999999999999",
            "9223372036854775.81",
            "1E5",
            "1e+5",
            "-1E-5",
        ]
        .map(String::from)
        .to_vec();
        // Every short string over the bytes a number is made of.
        let alphabet = ["0", "1", "5", "9", "-", ".", "e"];
        let mut layer = vec![String::new()];
        for _ in 0..5 {
            layer = layer
                .iter()
                .flat_map(|t| alphabet.iter().map(move |a| format!("{t}{a}")))
                .collect();
            texts.extend(layer.iter().cloned());
        }
        // Integer parts of every length up to 21 digits (read eight digits at a time where
        // eight bytes follow), with what may come after them, and the short strings above
        // with more bytes after them.
        let long = "987654321098765432109";
        for k in 1..=long.len() {
            for after in [
                "",
                ".5",
                ".123456",
                "e3",
                ",\"dur\":1}",
                "}",
                "x1234567",
                " 12345678",
                ":1234567",
                "/1234567",
                "é1234567",
            ] {
                texts.push(format!("{}{after}", &long[..k]));
                texts.push(format!("1{}{after}", "0".repeat(k - 1)));
            }
        }
        let short: Vec<String> = texts
            .iter()
            .map(|t| format!("{t},\"ts\":123456789}}"))
            .collect();
        texts.extend(short);
        // Sixteen digits overflow once scaled to nanoseconds, read in one pass.
        let mut c = Cursor {
            b: b"9999999999999999",
            i: 0,
        };
        assert_eq!(c.time_number(), Some(TimeAtom::Bad("out of range")));
        for text in &texts {
            let (time, id, end) = two_pass(text.as_bytes());
            let mut c = Cursor {
                b: text.as_bytes(),
                i: 0,
            };
            let fused = c.time_number();
            assert_eq!(fused, time, "time of {text:?}");
            if fused.is_some() {
                assert_eq!(c.i, end, "end of the time {text:?}");
            }
            let mut c = Cursor {
                b: text.as_bytes(),
                i: 0,
            };
            // An id is a number here (a string goes to `plain_string`).
            if text.starts_with('"') {
                continue;
            }
            let fused = c.id().and_then(|a| match a {
                AtomRef::Int(n) => Some(n),
                _ => None,
            });
            assert_eq!(fused, id, "id of {text:?}");
            if fused.is_some() {
                assert_eq!(c.i, end, "end of the id {text:?}");
            }
        }
    }

    /// Eight bytes read at once give the digits they start with, whatever byte ends them (one
    /// a digit less or more than `0`–`9`, one with its high bit) and whatever follows it.
    #[test]
    fn eight_digits_read_at_once_are_the_digits_read_one_by_one() {
        let naive = |bytes: &[u8]| {
            let n = bytes
                .iter()
                .take(8)
                .take_while(|b| b.is_ascii_digit())
                .count();
            let value = bytes[..n]
                .iter()
                .fold(0u64, |v, &d| v * 10 + u64::from(d - b'0'));
            (n, value)
        };
        assert_eq!(eight_digits(b"1234567"), None);
        assert_eq!(digit_run(b"1234567"), None);
        for n in 0..=8 {
            for end in 0..=255u8 {
                for tail in [b'0', b'9', b':', b'/', 0x80, 0xFF] {
                    let mut bytes: Vec<u8> = b"98765432".iter().take(n).copied().collect();
                    bytes.push(end);
                    bytes.resize(9, tail);
                    assert_eq!(
                        digit_run(&bytes),
                        Some(naive(&bytes).0),
                        "{n} digits, then {end:#x}, then {tail:#x}"
                    );
                    assert_eq!(
                        eight_digits(&bytes),
                        Some(naive(&bytes)),
                        "{n} digits, then {end:#x}, then {tail:#x}"
                    );
                }
            }
        }
    }

    #[test]
    fn plain_values_are_skipped_in_one_loop_to_where_the_item_reading_ends() {
        for text in [
            r#"{"External id":123,"Sequence number":45,"Fwd thread id":0,"Ev Idx":67}"#,
            r#"{"stream":7,"grid":[64,1,1],"block":[128,1,1],"s":"x y"}"#,
            "[]",
            "{}",
            r#"[{"a":[{}]}, -1.5e3, 0, 12345678901, 99999999]"#,
            r#"{ "a" : [ 1 , 2 ] , "b" : { } }"#,
        ] {
            let bytes = format!("{text},").into_bytes();
            let mut plain = Cursor { b: &bytes, i: 0 };
            let mut items = Cursor { b: &bytes, i: 0 };
            assert!(plain.skip_plain_value().is_some(), "{text}");
            assert!(items.skip_value(0).is_some(), "{text}");
            assert_eq!((plain.i, items.i), (text.len(), text.len()), "{text}");
        }
        // An escape or a literal is the item reading's; a mistake is refused by both.
        for text in [
            r#"{"a":"
"}"#,
            "[true]",
            r#"{"a":1,}"#,
            "[1}",
            r#"{"a" 1}"#,
            "[01]",
        ] {
            let mut plain = Cursor {
                b: text.as_bytes(),
                i: 0,
            };
            assert!(plain.skip_plain_value().is_none(), "{text}");
        }
    }

    #[test]
    fn skipped_values_agree_with_serde_at_every_length_and_depth() {
        // Strings and digit runs across the eight-byte steps, escapes at each offset.
        let control = '\u{1}';
        for len in 0..20 {
            let run = "x".repeat(len);
            let digits = "7".repeat(len + 1);
            for text in [
                format!(r#"{{"ph":"X","args":{{"s":"{run}","n":{digits}}}}}"#),
                format!(
                    r#"{{"ph":"X","args":{{"s":"{run}\n{run}","n":-{digits}.{digits}e+{digits}}}}}"#
                ),
                format!(
                    r#"{{"ph":"X","args":["{run}\u00e9",{digits},[{{}}],{{"{run}":[]}},true,false,null]}}"#
                ),
            ] {
                assert!(agree(&text), "{text}");
            }
            for text in [
                format!(r#"{{"ph":"X","args":{{"s":"{run}\x"}}}}"#),
                format!(r#"{{"ph":"X","args":{{"s":"{run}{control}"}}}}"#),
                format!(r#"{{"ph":"X","args":{{"n":0{digits}}}}}"#),
                format!(r#"{{"ph":"X","args":{{"n":{digits}.}}}}"#),
                format!(r#"{{"ph":"X","args":{{"s":"{run}""#),
                format!(r#"{{"ph":"X","args":{{"a":[1,"{run}"}}}}"#),
                format!(r#"{{"ph":"X","args":{{"a{run}":1,}}}}"#),
                format!(r#"{{"ph":"X","args":{{"a{run}" 1}}}}"#),
                format!(r#"{{"ph":"X","args":{{{digits}:1}}}}"#),
            ] {
                assert!(!agree(&text), "{text}");
            }
        }
        // A value inside MAX_DEPTH containers is read here; one deeper goes to serde.
        let nested = |depth: usize, open: &str, close: &str| {
            format!(
                r#"{{"ph":"X","args":{}1{}}}"#,
                open.repeat(depth),
                close.repeat(depth)
            )
        };
        let depth = MAX_DEPTH as usize;
        assert!(agree(&nested(depth, "[", "]")));
        assert!(!agree(&nested(depth + 1, "[", "]")));
        assert!(agree(&nested(depth, r#"{"k": "#, "}")));
        assert!(!agree(&nested(depth + 1, r#"{"k": "#, "}")));
        assert!(agree(&nested(depth / 3, r#"[{"k":[0, "#, "]}]")));
        assert!(!agree(&nested(depth / 3 + 1, r#"[{"k":[0, "#, "]}]")));
    }

    /// A key read from one word is the key read as a string, and takes as many bytes: each of
    /// the builder's keys and `args`, others, near misses (a prefix, a longer key, one letter
    /// off, no closing quote), at the input's end (fewer than eight bytes: read as a string).
    #[test]
    fn keys_read_at_once_are_the_keys_read_as_strings() {
        let keys = [
            "name",
            "ph",
            "cat",
            "pid",
            "tid",
            "id",
            "ts",
            "dur",
            "args",
            "bp",
            "p",
            "pi",
            "phx",
            "pidd",
            "names",
            "nam",
            "tss",
            "ti",
            "i",
            "d",
            "du",
            "durr",
            "arg",
            "argss",
            "cats",
            "External id",
            "",
            "Ph",
            "tid\\",
            "ts\"",
            "ñame",
        ];
        for key in keys {
            for tail in ["", ":", ": 1", ":1,\"ph\":\"X\"}"] {
                let text = format!("\"{key}\"{tail}");
                let mut fast = Cursor {
                    b: text.as_bytes(),
                    i: 0,
                };
                let mut slow = Cursor {
                    b: text.as_bytes(),
                    i: 0,
                };
                let read = fast.key();
                let expected = slow.plain_string().map(FieldKey::of_event);
                assert_eq!(read, expected, "{text}");
                if read.is_some() {
                    assert_eq!(fast.i, slow.i, "{text}");
                }
            }
        }
        // Each of the builder's keys is read at once where eight bytes follow its quote.
        for (key, expected) in [
            ("name", FieldKey::Name),
            ("ph", FieldKey::Ph),
            ("cat", FieldKey::Cat),
            ("pid", FieldKey::Pid),
            ("tid", FieldKey::Tid),
            ("id", FieldKey::Id),
            ("ts", FieldKey::Ts),
            ("dur", FieldKey::Dur),
            ("args", FieldKey::Other),
        ] {
            let text = format!("\"{key}\":12345678");
            let word = u64::from_le_bytes(text.as_bytes()[..8].try_into().unwrap());
            assert_eq!(key_at_once(word), Some((expected, key.len() + 2)), "{key}");
        }
    }

    /// Every event one byte away from a profiler's (a byte dropped, or replaced by one that
    /// matters to the grammar or to a key read at once) reads the same by both paths, or the
    /// fast path leaves it to serde: `check_agreement` never finds them apart.
    #[test]
    fn events_one_byte_off_read_the_same_by_both_paths() {
        let events = [
            r#"{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":4242,"tid":4242,"ts":5114768343893.906,"dur":3.125,"args":{"External id":17,"Ev Idx":3}}"#,
            r#"{"ph":"s","id":17,"pid":4242,"tid":4242,"ts":1.5,"cat":"ac2g","name":"ac2g"}"#,
            r#"{"ph":"f","id":"a","pid":0,"tid":7,"ts":"2","cat":"ac2g","name":"ac2g","bp":"e"}"#,
            r#"{"name":"PP:0F0","ph":"X","pid":"a","tid":0,"ts":1,"dur":1}"#,
        ];
        let replacements = b"\"\\:,{}[] 0-.ensptdiacxX\x01\xff";
        let mut taken = 0;
        for event in events {
            let bytes = event.as_bytes();
            assert!(check_agreement(bytes).unwrap(), "{event}");
            for at in 0..bytes.len() {
                let mut dropped = bytes.to_vec();
                dropped.remove(at);
                let mut variants = vec![dropped];
                for &r in replacements {
                    let mut changed = bytes.to_vec();
                    changed[at] = r;
                    variants.push(changed);
                }
                for v in variants {
                    match check_agreement(&v) {
                        Ok(fast) => taken += usize::from(fast),
                        Err(e) => panic!("{}: {e}", String::from_utf8_lossy(&v)),
                    }
                }
            }
        }
        // Many of them still take the fast path (a changed value, a key the builder skips).
        assert!(taken > 500, "{taken}");
    }

    #[test]
    fn plain_events_take_the_fast_path_and_agree_with_serde() {
        assert!(agree(
            r#"{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":42,"tid":-7,"ts":5114768343893.906,"dur":3.125,"args":{"a":[1,2.5e3,{"b":null}],"c":"\u00e9\n"}}"#
        ));
        assert!(agree(
            r#"{ "name" : "PP:0F0" , "ph" : "X" , "pid" : "a" , "tid" : 0 , "ts" : "1704161511420306.491" , "dur" : 1 } ,"#
        ));
        assert!(agree(
            r#"{"ph":"s","id":17,"cat":"ac2g","pid":0,"tid":7,"ts":1}"#
        ));
        assert!(agree(r#"{"ph":"X","ts":1,"ts":2}"#));
    }

    #[test]
    fn anything_unusual_goes_to_serde() {
        for text in [
            r#"{"ph":"M","name":"process_name","pid":1,"args":{"name":"x"}}"#,
            r#"{"name":"a\"b","ph":"X"}"#,
            r#"{"ph":"X","pid":1.0}"#,
            r#"{"ph":"X","pid":-0}"#,
            r#"{"ph":"X","pid":99999999999999999999}"#,
            r#"{"ph":"X","ts":true}"#,
            r#"{"ph":"X","name":5}"#,
            r#"{"ph":"X","args":{"a":01}}"#,
            r#"{"ph":"X","args":{"a":"\x"}}"#,
            r#"{"ph":"X",}"#,
            r#"{"ph":"X"}x"#,
            r#"{"name":"a"}"#,
            r#"{"ph":"X","args":[1,]}"#,
            r#"{"ph":"X","dur":-}"#,
        ] {
            assert!(!agree(text), "{text}");
        }
    }
}
