//! Units and their one formatter each, used by the CLI, the SVG writer and the app alike: seconds,
//! bytes, and text read from a file made safe to print.

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

/// Bytes in GB/MB/kB.
pub fn bytes(b: f64) -> String {
    match b {
        b if b >= 1e9 => format!("{:.2} GB", b / 1e9),
        b if b >= 1e6 => format!("{:.1} MB", b / 1e6),
        b if b >= 1e3 => format!("{:.1} kB", b / 1e3),
        b => format!("{b:.0} B"),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_written_out() {
        assert_eq!(escape_controls("1f1b"), "1f1b");
        assert_eq!(
            escape_controls("\u{1b}[31mred\u{1b}[0m\tok\n\u{7}"),
            "\\u{1b}[31mred\\u{1b}[0m\tok\n\\u{7}"
        );
    }
}
