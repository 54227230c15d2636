//! The path-based edges both binaries share: writing a file atomically (a temporary file beside
//! the target, then a rename), so a crash or a full disk never leaves a half-written scenario; and
//! resolving the pipeline CSV a scenario names, which must stay beside or below the scenario.

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

/// The pipeline CSV a scenario file at `scenario_path` names in `orders_csv`: `name` taken from
/// the scenario's folder, refused (with why) when it is absolute, climbs out with `..`, or —
/// once both exist — resolves through a link to a file outside that folder. A scenario shared
/// with someone must not make their copy read, or reveal a line of, a file elsewhere on their
/// machine; a CSV from anywhere is given explicitly (the CLI's `--orders-csv`).
pub fn orders_csv_path(scenario_path: &Path, name: &str) -> Result<std::path::PathBuf, String> {
    use std::path::Component;
    let folder = scenario_path.parent().unwrap_or(Path::new("."));
    let outside = || {
        format!(
            "`{}` is outside the scenario's folder: a scenario names a pipeline CSV beside it or below it (give any other explicitly, with --orders-csv)",
            crate::vocab::units::escape_controls(name)
        )
    };
    let relative = Path::new(name);
    if relative
        .components()
        .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(outside());
    }
    let path = folder.join(relative);
    // Through links: where it really is must be inside where the folder really is.
    if let (Ok(real), Ok(base)) = (
        std::fs::canonicalize(&path),
        std::fs::canonicalize(if folder.as_os_str().is_empty() {
            Path::new(".")
        } else {
            folder
        }),
    ) && !real.starts_with(&base)
    {
        return Err(outside());
    }
    Ok(path)
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

    #[test]
    fn a_scenarios_csv_stays_beside_or_below_it() {
        let dir = std::env::temp_dir().join(format!("mpipe-csv-path-{}", std::process::id()));
        let inner = dir.join("runs");
        std::fs::create_dir_all(&inner).unwrap();
        let scenario = dir.join("s.json");
        assert_eq!(orders_csv_path(&scenario, "a.csv"), Ok(dir.join("a.csv")));
        assert_eq!(
            orders_csv_path(&scenario, "./runs/b.csv"),
            Ok(dir.join("./runs/b.csv"))
        );
        for name in ["/etc/passwd", "../x.csv", "runs/../../x.csv"] {
            assert!(orders_csv_path(&scenario, name).is_err(), "{name}");
        }
        // A link beside the scenario that leads out of its folder is refused too.
        #[cfg(unix)]
        {
            let outside =
                std::env::temp_dir().join(format!("mpipe-csv-out-{}.csv", std::process::id()));
            std::fs::write(&outside, "0F0\n").unwrap();
            std::os::unix::fs::symlink(&outside, dir.join("link.csv")).unwrap();
            assert_eq!(
                orders_csv_path(&scenario, "link.csv"),
                Err("`link.csv` is outside the scenario's folder: a scenario names a pipeline CSV beside it or below it (give any other explicitly, with --orders-csv)".to_string())
            );
            std::fs::remove_file(&outside).unwrap();
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
