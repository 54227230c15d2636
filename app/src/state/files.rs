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

/// Opens `path` when it is a regular file (a FIFO or a device would block the window).
fn open_regular(path: &Path) -> Result<std::fs::File, String> {
    let name = path.display();
    let meta = std::fs::metadata(path).map_err(|e| format!("{name}: cannot read: {e}"))?;
    if !meta.is_file() {
        return Err(format!(
            "{name}: cannot read: not a regular file (a folder, a FIFO or a device); give a file"
        ));
    }
    std::fs::File::open(path).map_err(|e| format!("{name}: cannot read: {e}"))
}

/// Reads a scenario file's text: a regular file of at most `mpipe::scenario::MAX_FILE_BYTES`,
/// UTF-8 (a byte-order mark accepted); every failure names the file (and the position of a bad
/// byte).
pub fn read_text(path: &Path) -> Result<String, String> {
    let name = path.display().to_string();
    let bytes =
        mpipe::scenario::read_bounded(open_regular(path)?, &name).map_err(|e| e.to_string())?;
    mpipe::scenario::text_from_bytes(bytes, &name).map_err(|e| e.to_string())
}

/// `scenario` with the orders of the pipeline CSV its `orders_csv` names read in (relative to the
/// scenario file at `path`); errors name the CSV and the cell. Without a path (a sample, a
/// restored session) the name cannot be resolved and the derivation says so. `keep_going` gets
/// the fraction of the CSV read; when it says stop, the reading stops (`Err("cancelled")`).
pub fn with_orders_csv(
    mut scenario: mpipe::Scenario,
    path: Option<&Path>,
    keep_going: &mut dyn FnMut(f32) -> bool,
) -> Result<mpipe::Scenario, String> {
    let (Some(name), Some(path), None) = (&scenario.orders_csv, path, &scenario.orders) else {
        return Ok(scenario);
    };
    let csv = orders_csv_path(path, name)
        .map_err(|why| format!("{}: field `orders_csv`: {why}", path.display()))?;
    let text = read_text(&csv)?;
    let limits = mpipe::algebra::budget::csv_limits(&scenario);
    let read = mpipe::scenario::orders_csv::read_cancellable(
        &text,
        &csv.display().to_string(),
        limits,
        keep_going,
    )
    .map_err(|e| e.to_string())?
    .ok_or_else(|| "cancelled".to_string())?;
    scenario.orders_from_csv = Some(read.orders);
    Ok(scenario)
}

/// Reads a scenario file and the pipeline CSV it names: its text and the scenario, or why not
/// (naming the file, and the CSV's cell).
pub fn read_scenario(
    path: &Path,
    keep_going: &mut dyn FnMut(f32) -> bool,
) -> Result<(String, mpipe::Scenario), String> {
    let name = path.display().to_string();
    let text = read_text(path)?;
    let scenario = mpipe::Scenario::from_json_str(&text, &name).map_err(|e| e.to_string())?;
    let scenario = with_orders_csv(scenario, Some(path), keep_going)?;
    Ok((text, scenario))
}

/// Writes `bytes` to `path` atomically (a temporary file, then a rename); `what` names the
/// operation in the error (`save`, `export`).
#[cfg(not(target_arch = "wasm32"))]
pub fn write(path: &Path, bytes: &[u8], what: &str) -> Result<(), String> {
    mpipe::files::write_atomic(path, bytes)
        .map_err(|e| format!("{}: cannot {what}: {e}", path.display()))
}

/// In the browser a file is written as a download named as `path`'s file name (the browser
/// decides where it goes).
#[cfg(target_arch = "wasm32")]
pub fn write(path: &Path, bytes: &[u8], what: &str) -> Result<(), String> {
    let name = path
        .file_name()
        .map_or_else(|| "scenario.json".into(), |n| n.to_string_lossy());
    super::browser::download(&name, bytes)
        .map_err(|e| format!("{}: cannot {what}: {e}", path.display()))
}

/// The pipeline CSV `name` beside or below the scenario at `path`.
#[cfg(not(target_arch = "wasm32"))]
fn orders_csv_path(path: &Path, name: &str) -> Result<PathBuf, String> {
    mpipe::files::orders_csv_path(path, name)
}

/// The browser hands over files, not folders: a pipeline CSV a scenario names cannot be found.
#[cfg(target_arch = "wasm32")]
fn orders_csv_path(_path: &Path, name: &str) -> Result<PathBuf, String> {
    Err(format!(
        "the pipeline CSV `{name}` cannot be read in the browser (it reads the files it is given, not folders); put its orders in the scenario's `orders` field, e.g. with `mpipe share`"
    ))
}

/// Whether the file at `path` looks like a profiler trace (by its first bytes); only a regular
/// file is opened.
pub fn is_trace_file(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 4096];
    let n = open_regular(path)
        .ok()
        .and_then(|mut f| f.read(&mut head).ok())
        .unwrap_or(0);
    looks_like_trace(head.get(..n).unwrap_or_default())
}

/// What a file to open turned out to be.
#[derive(Debug)]
pub enum Given {
    /// A scenario's text and the scenario read from it with its pipeline CSV (or why it cannot
    /// be read), and where it came from.
    Scenario(PathBuf, Result<Box<(String, mpipe::Scenario)>, String>),
    Trace(PathBuf),
}

/// Sorts files to open into scenarios (read, with the pipeline CSV each names) and traces (left
/// to the import, which streams them). Runs on a worker: the window must not wait for a slow
/// disk or a long CSV; `keep_going` gets the fraction done and stops the reading.
pub fn sort_given(paths: Vec<PathBuf>, keep_going: &mut dyn FnMut(f32) -> bool) -> Vec<Given> {
    let count = paths.len().max(1) as f32;
    let mut out = Vec::with_capacity(paths.len());
    for (i, path) in paths.into_iter().enumerate() {
        // Cancel is heard before each file too (the result of a cancelled reading is dropped).
        if !keep_going(i as f32 / count) {
            break;
        }
        let path = absolute(&path);
        if is_trace_file(&path) {
            out.push(Given::Trace(path));
        } else {
            let read = read_scenario(&path, &mut |f| keep_going((i as f32 + f) / count));
            out.push(Given::Scenario(path, read.map(Box::new)));
        }
    }
    out
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

/// A dropped file's contents, read: its path (on the web, its name) and its bytes or why not.
pub type DroppedBytes = (PathBuf, Result<Vec<u8>, String>);

/// Reads dropped files (on the desktop, at once; the browser reads them asynchronously and hands
/// them over in `browser::take_dropped`).
#[cfg(not(target_arch = "wasm32"))]
pub fn read_dropped(files: &[egui::DroppedFileHandle]) -> Vec<DroppedBytes> {
    files
        .iter()
        .map(|f| (f.path().to_path_buf(), f.bytes()))
        .collect()
}

/// Sorts dropped files: traces (gzip, or JSON shaped like a Chrome trace) and a scenario.
pub fn sort_dropped(files: Vec<DroppedBytes>) -> Dropped {
    let mut out = Dropped::default();
    for (path, read) in files {
        let name = path.display().to_string();
        let bytes = match read {
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
            let checked = if bytes.len() as u64 > mpipe::scenario::MAX_FILE_BYTES {
                mpipe::scenario::read_bounded(&bytes[..], &name).map(|_| String::new())
            } else {
                mpipe::scenario::text_from_bytes(bytes, &name)
            };
            match checked {
                Ok(text) => out.scenario = Some((name, path, text)),
                Err(e) => out.errors.push(e.to_string()),
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
