//! Files at the app's edge: reading a scenario, writing atomically, telling dropped traces from
//! dropped scenarios, and the absolute paths the Recent list keeps. Every error names the file.

use super::traces::TraceSource;
use mpipe::trace::looks_like_trace;
use std::path::{Path, PathBuf};

/// How many files the Recent list keeps.
pub const RECENT: usize = 8;

/// `path` made absolute (against the working directory), so Recent opens the same file from
/// anywhere; the path as given when that fails.
pub fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Puts `name` first in `recent`, once, keeping at most [`RECENT`].
pub fn remember(recent: &mut Vec<String>, name: &str) {
    recent.retain(|r| r != name);
    recent.insert(0, name.to_string());
    recent.truncate(RECENT);
}

/// Reads a scenario file's text.
pub fn read_text(path: &Path) -> Result<String, String> {
    let name = path.display();
    std::fs::read_to_string(path).map_err(|e| format!("{name}: cannot read: {e}"))
}

/// Writes `bytes` to `path` atomically (a temporary file, then a rename); `what` names the
/// operation in the error (`save`, `export`).
pub fn write(path: &Path, bytes: &[u8], what: &str) -> Result<(), String> {
    mpipe::io::write_atomic(path, bytes)
        .map_err(|e| format!("{}: cannot {what}: {e}", path.display()))
}

/// Whether the file at `path` looks like a profiler trace (by its first bytes).
pub fn is_trace_file(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 4096];
    let n = std::fs::File::open(path)
        .and_then(|mut f| f.read(&mut head))
        .unwrap_or(0);
    looks_like_trace(head.get(..n).unwrap_or_default())
}

/// Dropped files sorted out: traces to import together, and the first other file as a scenario.
#[derive(Debug, Default)]
pub struct Dropped {
    pub traces: Vec<TraceSource>,
    /// (name, path, text) of the scenario.
    pub scenario: Option<(String, PathBuf, String)>,
    /// Files that could not be read.
    pub errors: Vec<String>,
}

/// Sorts dropped files: traces (gzip, or JSON shaped like a Chrome trace) and a scenario.
pub fn sort_dropped(files: &[egui::DroppedFileHandle]) -> Dropped {
    let mut out = Dropped::default();
    for file in files {
        let name = file.path().display().to_string();
        let bytes = match file.bytes() {
            Ok(bytes) => bytes,
            Err(e) => {
                out.errors.push(format!("{name}: cannot read: {e}"));
                continue;
            }
        };
        if looks_like_trace(&bytes) {
            out.traces.push(TraceSource::Bytes {
                name,
                bytes: bytes.into(),
            });
        } else if out.scenario.is_none() {
            match String::from_utf8(bytes) {
                Ok(text) => out.scenario = Some((name, file.path().to_path_buf(), text)),
                Err(e) => out.errors.push(format!("{name}: not UTF-8 text: {e}")),
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recent_keeps_each_file_once_newest_first() {
        let mut recent = vec!["a".to_string(), "b".to_string()];
        remember(&mut recent, "b");
        assert_eq!(recent, ["b", "a"]);
        for i in 0..20 {
            remember(&mut recent, &i.to_string());
        }
        assert_eq!(recent.len(), RECENT);
        assert_eq!(recent[0], "19");
        assert!(absolute(Path::new("x.json")).is_absolute());
    }
}
