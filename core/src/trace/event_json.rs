//! One trace event as serde sees it: a borrowed view of the fields the importer uses (`name`,
//! `ph`, `cat`, `pid`, `tid`, `id`, `ts`, `dur`, and `args.name`/`args.labels` for metadata),
//! everything else skipped unread. Strings are taken as raw bytes (no UTF-8 check; the interner
//! checks each distinct name once) and times as their raw JSON text, parsed digit by digit.
//! Wrong-typed times and ids are kept as "bad" values so one odd event becomes a warning, not an
//! error.

use super::raw::DistributedInfo;
use super::timestamp;
use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::fmt;

/// A scalar field: a string (raw bytes), a number, or something else.
#[derive(Debug, Clone, PartialEq)]
pub enum Atom<'a> {
    Str(Cow<'a, [u8]>),
    Int(i64),
    Float(f64),
    Other,
}

/// A scalar field as the builder reads it: [`Atom`] borrowed, copied freely (nothing to drop).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum AtomRef<'a> {
    Str(&'a [u8]),
    Int(i64),
    Float(f64),
    Other,
}

impl Atom<'_> {
    /// This value, borrowed.
    pub fn view(&self) -> AtomRef<'_> {
        match self {
            Atom::Str(s) => AtomRef::Str(s),
            Atom::Int(n) => AtomRef::Int(*n),
            Atom::Float(x) => AtomRef::Float(*x),
            Atom::Other => AtomRef::Other,
        }
    }
}

/// What the importer's builder reads of one event: every field borrowed and copied, so the fast
/// path fills one without anything to drop (an [`EventRef`]'s strings may be owned, and
/// dropping its fields once an event took 74 instructions of a million events' reading).
/// `args` is `None` where the event's were not read (the fast path reads no event that needs
/// them).
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Fields<'a> {
    pub name: Option<AtomRef<'a>>,
    pub ph: Option<AtomRef<'a>>,
    pub cat: Option<AtomRef<'a>>,
    pub pid: Option<AtomRef<'a>>,
    pub tid: Option<AtomRef<'a>>,
    pub id: Option<AtomRef<'a>>,
    pub ts: Option<TimeAtom>,
    pub dur: Option<TimeAtom>,
    pub args: Option<&'a Args<'a>>,
}

/// A time field: nanoseconds, or what it was instead.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TimeAtom {
    Ns(i64),
    Bad(&'static str),
}

/// `args.name` and `args.labels`.
#[derive(Debug, Default, PartialEq)]
pub struct Args<'a> {
    pub name: Option<Cow<'a, str>>,
    pub labels: Option<Cow<'a, str>>,
    /// A `[memory]` instant's allocator total (bytes) and device (`Device Type` 0 is the CPU).
    pub total_allocated: Option<f64>,
    pub device_type: Option<i64>,
    pub device_id: Option<i64>,
}

impl Args<'_> {
    /// No `args` read.
    pub const EMPTY: Args<'static> = Args {
        name: None,
        labels: None,
        total_allocated: None,
        device_type: None,
        device_id: None,
    };
}

/// One event of `traceEvents`.
#[derive(Debug, Default, PartialEq)]
pub struct EventRef<'a> {
    pub name: Option<Atom<'a>>,
    pub ph: Option<Atom<'a>>,
    pub cat: Option<Atom<'a>>,
    pub pid: Option<Atom<'a>>,
    pub tid: Option<Atom<'a>>,
    pub id: Option<Atom<'a>>,
    pub ts: Option<TimeAtom>,
    pub dur: Option<TimeAtom>,
    /// Read only when the event may be a metadata event (its `ph` is `M` or comes later).
    pub args: Args<'a>,
}

impl EventRef<'_> {
    /// What the builder reads of this event.
    pub fn fields(&self) -> Fields<'_> {
        Fields {
            name: self.name.as_ref().map(Atom::view),
            ph: self.ph.as_ref().map(Atom::view),
            cat: self.cat.as_ref().map(Atom::view),
            pid: self.pid.as_ref().map(Atom::view),
            tid: self.tid.as_ref().map(Atom::view),
            id: self.id.as_ref().map(Atom::view),
            ts: self.ts,
            dur: self.dur,
            args: Some(&self.args),
        }
    }
}

fn skip_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

fn skip_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(())
}

/// Visitor methods that take any number, boolean, null or array as `$value` (arrays consumed).
macro_rules! other_values_are {
    ($value:expr) => {
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
            skip_seq(seq).map(|()| $value)
        }
    };
}

/// Any scalar (`pid`, `tid`, `id`, `baseTimeNanoseconds`).
struct AnyAtom;

impl<'de> DeserializeSeed<'de> for AnyAtom {
    type Value = Atom<'de>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Atom<'de>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for AnyAtom {
    type Value = Atom<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string or a number")
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Atom<'de>, E> {
        Ok(Atom::Str(Cow::Borrowed(v.as_bytes())))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Atom<'de>, E> {
        Ok(Atom::Str(Cow::Owned(v.as_bytes().to_vec())))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Atom<'de>, E> {
        Ok(Atom::Int(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Atom<'de>, E> {
        Ok(i64::try_from(v).map_or(Atom::Float(v as f64), Atom::Int))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Atom<'de>, E> {
        Ok(Atom::Float(v))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Atom<'de>, E> {
        Ok(Atom::Other)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Atom<'de>, E> {
        Ok(Atom::Other)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Atom<'de>, A::Error> {
        skip_seq(seq).map(|()| Atom::Other)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Atom<'de>, A::Error> {
        skip_map(map).map(|()| Atom::Other)
    }
}

/// A string field (`name`, `ph`, `cat`) as raw bytes; a number there is a type error.
struct TextAtom;

impl<'de> DeserializeSeed<'de> for TextAtom {
    type Value = Atom<'de>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Atom<'de>, D::Error> {
        d.deserialize_bytes(self)
    }
}

impl<'de> Visitor<'de> for TextAtom {
    type Value = Atom<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_borrowed_bytes<E: de::Error>(self, v: &'de [u8]) -> Result<Atom<'de>, E> {
        Ok(Atom::Str(Cow::Borrowed(v)))
    }
    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Atom<'de>, E> {
        Ok(Atom::Str(Cow::Owned(v.to_vec())))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Atom<'de>, A::Error> {
        skip_seq(seq).map(|()| Atom::Other)
    }
}

/// A time field from its raw JSON text: numbers and numeric strings are parsed digit by digit.
pub fn time_from_raw(text: &str) -> TimeAtom {
    let bad = TimeAtom::Bad;
    match text.as_bytes().first() {
        Some(b'"') => match text.get(1..text.len().saturating_sub(1)) {
            Some(inner) if !inner.contains('\\') => timestamp::from_micros_str(inner)
                .map_or(bad("a string that is not a number"), TimeAtom::Ns),
            _ => bad("a string that is not a number"),
        },
        Some(b't' | b'f') => bad("a boolean"),
        Some(b'n') => bad("null"),
        Some(b'[') => bad("an array"),
        Some(b'{') => bad("an object"),
        _ => timestamp::from_micros_str(text).map_or(bad("out of range"), TimeAtom::Ns),
    }
}

/// A string, or `None` for anything else (consumed).
struct MaybeString;

impl<'de> DeserializeSeed<'de> for MaybeString {
    type Value = Option<Cow<'de, str>>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for MaybeString {
    type Value = Option<Cow<'de, str>>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Some(Cow::Borrowed(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Some(Cow::Owned(v.to_string())))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        skip_map(map).map(|()| None)
    }
    other_values_are!(None);
}

/// The keys the importer reads, at the top level, in events and in `args`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldKey {
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
    TotalAllocated,
    DeviceType,
    DeviceId,
    Other,
}

impl FieldKey {
    /// The key `bytes` name, as an event's fields the builder reads: one of its eight, or
    /// `Other` (what the fast path skips; a match on eight keys, not on every key).
    #[inline]
    pub fn of_event(bytes: &[u8]) -> FieldKey {
        match bytes {
            b"name" => FieldKey::Name,
            b"ph" => FieldKey::Ph,
            b"cat" => FieldKey::Cat,
            b"pid" => FieldKey::Pid,
            b"tid" => FieldKey::Tid,
            b"id" => FieldKey::Id,
            b"ts" => FieldKey::Ts,
            b"dur" => FieldKey::Dur,
            _ => FieldKey::Other,
        }
    }

    /// The key `bytes` name.
    pub fn of(bytes: &[u8]) -> FieldKey {
        let key = FieldKey::of_event(bytes);
        if key != FieldKey::Other {
            return key;
        }
        match bytes {
            b"args" => FieldKey::Args,
            b"labels" => FieldKey::Labels,
            b"traceEvents" => FieldKey::TraceEvents,
            b"distributedInfo" => FieldKey::DistributedInfo,
            b"baseTimeNanoseconds" => FieldKey::BaseTime,
            b"rank" => FieldKey::Rank,
            b"world_size" => FieldKey::WorldSize,
            b"Total Allocated" => FieldKey::TotalAllocated,
            b"Device Type" => FieldKey::DeviceType,
            b"Device Id" => FieldKey::DeviceId,
            _ => FieldKey::Other,
        }
    }
}

/// Reads a key as raw bytes.
pub struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = FieldKey;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<FieldKey, D::Error> {
        d.deserialize_bytes(self)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = FieldKey;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a key")
    }
    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<FieldKey, E> {
        Ok(FieldKey::of(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<FieldKey, E> {
        self.visit_bytes(v.as_bytes())
    }
}

struct ArgsSeed;

impl<'de> DeserializeSeed<'de> for ArgsSeed {
    type Value = Args<'de>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Args<'de>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ArgsSeed {
    type Value = Args<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an `args` object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Args<'de>, A::Error> {
        let mut args = Args::default();
        while let Some(key) = map.next_key_seed(KeySeed)? {
            match key {
                FieldKey::Name => args.name = map.next_value_seed(MaybeString)?,
                FieldKey::Labels => args.labels = map.next_value_seed(MaybeString)?,
                FieldKey::TotalAllocated => {
                    args.total_allocated = match map.next_value_seed(AnyAtom)? {
                        Atom::Int(n) => Some(n as f64),
                        Atom::Float(x) if x.is_finite() => Some(x),
                        _ => None,
                    }
                }
                FieldKey::DeviceType | FieldKey::DeviceId => {
                    let n = match map.next_value_seed(AnyAtom)? {
                        Atom::Int(n) => Some(n),
                        _ => None,
                    };
                    if key == FieldKey::DeviceType {
                        args.device_type = n;
                    } else {
                        args.device_id = n;
                    }
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(args)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Args<'de>, E> {
        Ok(Args::default())
    }
    other_values_are!(Args::default());
}

impl<'de> Deserialize<'de> for EventRef<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(EventVisitor)
    }
}

struct EventVisitor;

impl<'de> Visitor<'de> for EventVisitor {
    type Value = EventRef<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a trace event object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<EventRef<'de>, A::Error> {
        let mut ev = EventRef::default();
        while let Some(key) = map.next_key_seed(KeySeed)? {
            match key {
                FieldKey::Name => ev.name = Some(map.next_value_seed(TextAtom)?),
                FieldKey::Ph => ev.ph = Some(map.next_value_seed(TextAtom)?),
                FieldKey::Cat => ev.cat = Some(map.next_value_seed(TextAtom)?),
                FieldKey::Pid => ev.pid = Some(map.next_value_seed(AnyAtom)?),
                FieldKey::Tid => ev.tid = Some(map.next_value_seed(AnyAtom)?),
                FieldKey::Id => ev.id = Some(map.next_value_seed(AnyAtom)?),
                FieldKey::Ts => ev.ts = Some(time_from_raw(map.next_value::<&RawValue>()?.get())),
                FieldKey::Dur => ev.dur = Some(time_from_raw(map.next_value::<&RawValue>()?.get())),
                // Metadata and instants (`[memory]`) carry what the importer reads in `args`.
                FieldKey::Args => match &ev.ph {
                    Some(Atom::Str(ph)) if !matches!(ph.as_ref(), b"M" | b"i" | b"I") => {
                        map.next_value::<IgnoredAny>()?;
                    }
                    _ => ev.args = map.next_value_seed(ArgsSeed)?,
                },
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(ev)
    }
}

/// `distributedInfo.rank` / `world_size`: a number (a whole one written as a float, `1e12`,
/// too), or a string of digits.
struct CountSeed;

impl<'de> DeserializeSeed<'de> for CountSeed {
    type Value = Option<usize>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<usize>, D::Error> {
        Ok(match AnyAtom.deserialize(d)? {
            Atom::Int(n) => usize::try_from(n).ok(),
            // Whole, finite and within range only: `2^64` and `1.5` are no rank.
            Atom::Float(x) if x.fract() == 0.0 && (0.0..9.0e15).contains(&x) => Some(x as usize),
            Atom::Str(s) => std::str::from_utf8(&s)
                .ok()
                .and_then(|s| s.trim().parse().ok()),
            _ => None,
        })
    }
}

/// `distributedInfo`; anything but an object is ignored.
pub struct DistributedSeed;

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
    other_values_are!(None);
}

/// `baseTimeNanoseconds`: nanoseconds as a number or a string (0 when unreadable).
pub struct BaseTimeSeed;

impl<'de> DeserializeSeed<'de> for BaseTimeSeed {
    type Value = i64;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<i64, D::Error> {
        Ok(match AnyAtom.deserialize(d)? {
            Atom::Int(ns) => ns,
            Atom::Float(ns) if ns.is_finite() && ns.abs() < 9.0e18 => ns as i64,
            Atom::Str(s) => std::str::from_utf8(&s)
                .ok()
                .and_then(|s| s.trim().parse().ok())
                .unwrap_or(0),
            _ => 0,
        })
    }
}

/// A top-level value that is neither object nor array: only here to say what was expected.
pub struct TopShape;

impl<'de> DeserializeSeed<'de> for TopShape {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for TopShape {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a Chrome trace: an object with `traceEvents` or an array of events")
    }
}

/// The `traceEvents` value when it is not an array: only here to say what was expected.
pub struct EventsShape;

impl<'de> DeserializeSeed<'de> for EventsShape {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for EventsShape {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of trace events")
    }
}
