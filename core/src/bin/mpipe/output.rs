//! What the subcommands write: stdout that may be closed or full (exit status 1, never a panic)
//! and stderr that may not be writable at all.

use anyhow::Context;

/// Writes to stdout. A stdout that cannot take it (a closed pipe: `mpipe derive … | head -c 10`;
/// a full disk) is not bad input but an internal failure: exit status 1, never a panic.
pub fn emit(text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .context("writing to stdout")
}

/// Writes `value` to stdout as one line of JSON, straight into the stream (a large simulation's
/// JSON is never held in memory as text); a stdout that cannot take it is exit status 1.
pub fn emit_json(value: &impl serde::Serialize) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    serde_json::to_writer(&mut out, value).context("writing to stdout")?;
    out.write_all(b"\n")
        .and_then(|()| out.flush())
        .context("writing to stdout")
}

/// Says `message` on stderr, its control characters written out (a skeleton name with terminal
/// escapes must not drive the terminal); a stderr that cannot be written (`2>/dev/full`, a closed
/// pipe) is ignored — there is nowhere left to say anything, and the exit status still tells.
pub fn say(message: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let text = message.to_string();
    let _ = writeln!(
        std::io::stderr().lock(),
        "{}",
        mpipe::vocab::units::escape_controls(&text)
    );
}
