//! Units and their one formatter each, used by the CLI, the SVG writer and the app alike: seconds
//! (adaptive, fixed milliseconds, signed), bytes (decimal, binary limits, rates), the unit a
//! column of figures reads best in, and text read from a file made safe to print.

/// Seconds with a sensible number of digits and their unit: `74.039 s`, `27.000 ms`, `0 s`.
pub fn secs(t: f64) -> String {
    if t == 0.0 {
        "0 s".into()
    } else if t.abs() >= 100.0 {
        format!("{t:.1} s")
    } else if t.abs() >= 1.0 {
        format!("{t:.3} s")
    } else {
        format!("{:.3} ms", t * 1e3)
    }
}

/// Whether a figure is exactly zero: what a JSON writer leaves out (serde's
/// `skip_serializing_if`).
pub fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

/// Seconds as milliseconds with three decimals, for figures read side by side: `0.250 ms`.
pub fn ms(t: f64) -> String {
    format!("{:.3} ms", t * 1e3)
}

/// A difference in seconds as signed milliseconds: `+0.250 ms`, `-1.000 ms`.
pub fn signed_ms(t: f64) -> String {
    format!("{:+.3} ms", t * 1e3)
}

/// Bytes in GB/MB/kB.
pub fn bytes(b: f64) -> String {
    match b {
        b if b >= 1e9 => format!("{:.2} GB", b / 1e9),
        b if b >= 1e6 => format!("{:.1} MB", b / 1e6),
        b if b >= 1e3 => format!("{:.1} kB", b / 1e3),
        b => format!("{b:.0} B"),
    }
}

/// Bytes in KiB with one decimal, for figures read side by side.
pub fn kib(b: f64) -> String {
    format!("{:.1} KiB", b / 1024.0)
}

/// A bandwidth in GB/s with three decimals.
pub fn rate(bytes_per_s: f64) -> String {
    format!("{:.3} GB/s", bytes_per_s * 1e-9)
}

/// An amount in gibibytes with one decimal: `2.5 GiB`.
pub fn gib(bytes: f64) -> String {
    format!("{:.1} GiB", bytes / (1u64 << 30) as f64)
}

/// A limit in the binary unit it was set in: `64 MiB`, `16 GiB`, else bytes.
pub fn binary_size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{} GiB", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b => format!("{b} bytes"),
    }
}

/// The unit a column of seconds reads best in, `(seconds per unit, name)`: seconds when its
/// largest figure is at least one, else milliseconds.
pub fn secs_unit(values: impl Iterator<Item = f64>) -> (f64, &'static str) {
    if values.fold(0.0f64, |m, v| m.max(v.abs())) >= 1.0 {
        (1.0, "s")
    } else {
        (1e-3, "ms")
    }
}

/// The unit a column (or an axis) of bytes reads best in, by its largest figure.
pub fn bytes_unit(values: impl Iterator<Item = f64>) -> (f64, &'static str) {
    match values.fold(0.0f64, |m, v| m.max(v.abs())) {
        m if m >= 1e9 => (1e9, "GB"),
        m if m >= 1e6 => (1e6, "MB"),
        m if m >= 1e3 => (1e3, "kB"),
        _ => (1.0, "B"),
    }
}

/// Seconds in a column's unit with three decimals (`105.000 s`, `48.000 s`), so that the column
/// reads alike; `–` for none.
pub fn secs_in(t: Option<f64>, (unit, suffix): (f64, &str)) -> String {
    t.map_or("–".into(), |t| format!("{:.3} {suffix}", t / unit))
}

/// Bytes in a column's unit with two decimals.
pub fn bytes_in(b: f64, (unit, suffix): (f64, &str)) -> String {
    format!("{:.2} {suffix}", b / unit)
}
/// `text` with its control characters (terminal escapes, NUL, DEL, …) written out as `\u{1b}`,
/// so that a name read from a file cannot drive a terminal or garble the app; newlines and tabs
/// stay as they are.
pub fn escape_controls(text: &str) -> std::borrow::Cow<'_, str> {
    let bad = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !text.chars().any(bad) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if bad(c) {
            out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// At most `chars` characters of `text`, with an ellipsis when cut: a file's free text is shown,
/// never laid out whole (a 50 MB description would cost the window gigabytes).
pub fn shorten(text: &str, chars: usize) -> std::borrow::Cow<'_, str> {
    match text.char_indices().nth(chars) {
        Some((at, _)) => format!("{}…", text.get(..at).unwrap_or_default()).into(),
        None => text.into(),
    }
}

/// How many characters of a value read from a file an error message echoes.
pub const ECHOED_CHARS: usize = 60;

/// A value read from a file as an error message echoes it: at most [`ECHOED_CHARS`] characters
/// (a 50 MB cell is not an error line of 50 MB), control characters written out.
pub fn echoed(text: &str) -> String {
    escape_controls(&shorten(text, ECHOED_CHARS)).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_echoed_value_is_cut_and_escaped() {
        assert_eq!(echoed("0F1x"), "0F1x");
        let long = "x".repeat(50_000_000);
        assert_eq!(echoed(&long), format!("{}…", "x".repeat(ECHOED_CHARS)));
        assert_eq!(echoed("a\u{1b}b"), "a\\u{1b}b");
    }

    #[test]
    fn control_characters_are_written_out() {
        assert_eq!(escape_controls("1f1b"), "1f1b");
        assert_eq!(
            escape_controls("\u{1b}[31mred\u{1b}[0m\tok\n\u{7}"),
            "\\u{1b}[31mred\\u{1b}[0m\tok\n\\u{7}"
        );
    }

    #[test]
    fn each_unit_has_its_one_form() {
        assert_eq!(secs(74.0392), "74.039 s");
        assert_eq!(secs(0.027), "27.000 ms");
        assert_eq!(secs(0.0), "0 s");
        assert_eq!(secs(150.04), "150.0 s");
        assert_eq!(ms(0.00025), "0.250 ms");
        assert_eq!(signed_ms(-0.001), "-1.000 ms");
        assert_eq!(signed_ms(0.0005), "+0.500 ms");
        assert_eq!(bytes(12.8e9), "12.80 GB");
        assert_eq!(bytes(512.0), "512 B");
        assert_eq!(rate(2.5e9), "2.500 GB/s");
        assert_eq!(kib(3072.0), "3.0 KiB");
        assert_eq!(binary_size(64 << 20), "64 MiB");
        assert_eq!(binary_size(16 << 30), "16 GiB");
        assert_eq!(gib(2.5 * (1u64 << 30) as f64), "2.5 GiB");
        assert_eq!(binary_size(1000), "1000 bytes");
        let unit = secs_unit([0.2, -0.6].into_iter());
        assert_eq!(unit, (1e-3, "ms"));
        assert_eq!(secs_in(Some(0.25), unit), "250.000 ms");
        assert_eq!(secs_in(None, unit), "–");
        let unit = bytes_unit([0.9e9, 12.8e9].into_iter());
        assert_eq!(bytes_in(0.9e9, unit), "0.90 GB");
        assert_eq!(bytes_unit([10.0].into_iter()), (1.0, "B"));
    }
}
