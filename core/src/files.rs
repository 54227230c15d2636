//! The one path-based edge both binaries share: writing a file atomically (a temporary file beside
//! the target, then a rename), so a crash or a full disk never leaves a half-written scenario.

use std::io::Write;
use std::path::Path;

/// The temporary file a write of `name` uses, for process `pid`.
fn temporary(dir: &Path, name: &str, pid: u32) -> std::path::PathBuf {
    dir.join(format!(".{name}.tmp-{pid}"))
}

/// Removes temporaries of `name` left by writes that were killed midway: ours are named
/// `.NAME.tmp-PID`, and one whose process is gone (on Linux: no `/proc/PID`) or that is more
/// than an hour old is stale.
fn clean_stale(dir: &Path, name: &str) {
    let prefix = format!(".{name}.tmp-");
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some(pid) = file_name
            .to_str()
            .and_then(|n| n.strip_prefix(&prefix))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == std::process::id() {
            continue;
        }
        let gone = Path::new("/proc").is_dir() && !Path::new(&format!("/proc/{pid}")).exists();
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age.as_secs() > 3600);
        if gone || old {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Writes `bytes` to `path` atomically: a temporary file beside it, then a rename. A file that
/// is replaced keeps its permissions; temporaries left by killed writes are cleaned first.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map_or("out".into(), |n| n.to_string_lossy().into_owned());
    clean_stale(dir, &name);
    let tmp = temporary(dir, &name, std::process::id());
    let result = (|| {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        if let Ok(old) = std::fs::metadata(path) {
            std::fs::set_permissions(&tmp, old.permissions())?;
        }
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_file_and_leaves_no_temporary() {
        let dir = std::env::temp_dir().join(format!("mpipe-io-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s.json");
        std::fs::write(&path, "old").unwrap();
        write_atomic(&path, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        let names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["s.json"]);
        assert!(write_atomic(&dir.join("missing/x.json"), b"x").is_err());
    }

    #[cfg(unix)]
    #[test]
    fn a_replaced_file_keeps_its_mode_and_stale_temporaries_go() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("mpipe-io-mode-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s.json");
        std::fs::write(&path, "old").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        // A write killed midway left its temporary behind (a pid that cannot be running).
        let stale = temporary(&dir, "s.json", u32::MAX - 1);
        std::fs::write(&stale, "half").unwrap();
        let other = dir.join(".other.json.tmp-12");
        std::fs::write(&other, "not ours to clean").unwrap();
        write_atomic(&path, b"new").unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert!(!stale.exists());
        assert!(other.exists());
        std::fs::remove_dir_all(&dir).ok();
    }
}
