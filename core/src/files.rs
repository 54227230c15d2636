//! The path-based edges both binaries share: writing a file atomically (a temporary file beside
//! the target, then a rename), so a crash or a full disk never leaves a half-written scenario;
//! resolving the pipeline CSV a scenario names, which must stay beside or below the scenario; and
//! an opened trace's length, which its import sizes its lists by.

use std::io::Write;
use std::path::Path;

/// The limits to import the opened `file` within: `limits`, with its length (0 where it cannot
/// be read) for the import to size its lists by ([`crate::trace::Limits::of_length`]).
pub fn trace_limits(file: &std::fs::File, limits: crate::trace::Limits) -> crate::trace::Limits {
    limits.of_length(file.metadata().map_or(0, |m| m.len()))
}

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
/// is replaced keeps its permissions and its owner (or the write is refused); temporaries left by
/// killed writes are cleaned first. What is not a regular file is never replaced: a link is
/// followed (the file it names is written, the link stays), and a device or a FIFO is written
/// through (`--svg /dev/stdout`; a FIFO with no reader is an error, not a wait).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    // `/dev/stdout`, `/dev/fd/N`, `/proc/self/fd/N`: an open descriptor of this process,
    // whatever it leads to (a file `>` or `>>` redirects to, a pipe, a socket) — written
    // through, appended, never replaced.
    if is_descriptor(path) {
        return write_through(path, bytes);
    }
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        let kind = meta.file_type();
        if kind.is_symlink() {
            return match std::fs::metadata(path) {
                Ok(target) if target.is_file() => {
                    write_atomic(&std::fs::canonicalize(path)?, bytes)
                }
                Ok(target) if !target.is_dir() => write_through(path, bytes),
                Ok(_) => Err(std::io::Error::other("a link to a folder; give a file")),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(std::io::Error::new(
                    e.kind(),
                    format!("a link to a file that does not exist ({e}); give the file itself"),
                )),
                Err(e) => Err(std::io::Error::new(
                    e.kind(),
                    format!("a link that cannot be followed ({e}); give the file itself"),
                )),
            };
        }
        if !kind.is_file() && !kind.is_dir() {
            return write_through(path, bytes);
        }
    }
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
            // The owner first: a change of owner clears the set-user and set-group bits.
            keep_owner(&tmp, &old)?;
            std::fs::set_permissions(&tmp, old.permissions())?;
        }
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Whether `path` names one of this process's open descriptors (`/dev/stdout`, `/dev/stderr`,
/// `/dev/stdin`, `/dev/fd/N`, `/proc/self/fd/N`, `/proc/PID/fd/N`).
fn is_descriptor(path: &Path) -> bool {
    let text = path.to_string_lossy();
    ["/dev/stdout", "/dev/stderr", "/dev/stdin"].contains(&text.as_ref())
        || text.starts_with("/dev/fd/")
        || (text.starts_with("/proc/") && text.contains("/fd/"))
}

/// Gives the temporary `tmp` the owner of the file `old` it replaces; when that cannot be done
/// (another user's file, and no right to give files away) the write is refused rather than
/// changing whose the file is.
#[cfg(unix)]
fn keep_owner(tmp: &Path, old: &std::fs::Metadata) -> std::io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let new = std::fs::metadata(tmp)?;
    if (new.uid(), new.gid()) == (old.uid(), old.gid()) {
        return Ok(());
    }
    if new.uid() == old.uid() {
        // Our own file in a group we may not give files to: the group is kept where it can be,
        // and the file stays ours either way.
        let _ = std::os::unix::fs::chown(tmp, None, Some(old.gid()));
        return Ok(());
    }
    std::os::unix::fs::chown(tmp, Some(old.uid()), Some(old.gid())).map_err(|e| {
        std::io::Error::new(
            e.kind(),
            format!(
                "it belongs to user {} (group {}) and replacing it would make it ours ({e}); write it as its owner, or give another file",
                old.uid(),
                old.gid()
            ),
        )
    })
}

#[cfg(not(unix))]
fn keep_owner(_tmp: &Path, _old: &std::fs::Metadata) -> std::io::Result<()> {
    Ok(())
}

/// Writes `bytes` into the device or FIFO at `path` as it is (nothing is replaced). A FIFO is
/// opened without waiting: with no reader the write fails at once and says so.
#[cfg(unix)]
fn write_through(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use rustix::fs::OFlags;
    use std::os::unix::fs::FileTypeExt;
    use std::os::unix::fs::OpenOptionsExt;
    let fifo = std::fs::metadata(path).is_ok_and(|m| m.file_type().is_fifo());
    // Appended: a descriptor redirected with `>>` keeps what it holds (with `>` it is empty).
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .custom_flags(OFlags::NONBLOCK.bits() as i32)
        .open(path)
        .map_err(|e| {
            if fifo && e.raw_os_error() == Some(rustix::io::Errno::NXIO.raw_os_error()) {
                std::io::Error::new(e.kind(), "a FIFO with no reader; start its reader first")
            } else {
                e
            }
        })?;
    let flags = rustix::fs::fcntl_getfl(&file)?;
    rustix::fs::fcntl_setfl(&file, flags.difference(OFlags::NONBLOCK))?;
    file.write_all(bytes)?;
    file.flush()
}

#[cfg(not(unix))]
fn write_through(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::OpenOptions::new()
        .append(true)
        .open(path)?
        .write_all(bytes)
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

    /// Outputs that are not regular files were replaced by one (`--svg /dev/null` as root would
    /// have replaced the system's): a link is followed and stays a link, a device is written
    /// through, a FIFO is written to its reader or refused at once without one.
    #[cfg(unix)]
    #[test]
    fn links_devices_and_fifos_are_written_through_never_replaced() {
        use std::os::unix::fs::FileTypeExt;
        let dir = std::env::temp_dir().join(format!("mpipe-io-special-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // A link: the file it names gets the bytes; the link stays.
        let target = dir.join("real.svg");
        std::fs::write(&target, "old").unwrap();
        let link = dir.join("link.svg");
        std::os::unix::fs::symlink("real.svg", &link).unwrap();
        write_atomic(&link, b"new").unwrap();
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "new");
        // A link to nothing is refused, and nothing is created.
        let dangling = dir.join("dangling.svg");
        std::os::unix::fs::symlink("nowhere.svg", &dangling).unwrap();
        let e = write_atomic(&dangling, b"x").unwrap_err().to_string();
        assert!(e.starts_with("a link to a file that does not exist"), "{e}");
        assert!(!dir.join("nowhere.svg").exists());
        // A device: written through, still a device.
        write_atomic(Path::new("/dev/null"), b"x").unwrap();
        assert!(
            std::fs::metadata("/dev/null")
                .unwrap()
                .file_type()
                .is_char_device()
        );
        // A FIFO: with no reader, refused at once; with one, it reads the bytes.
        let fifo = dir.join("fifo.svg");
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        assert_eq!(
            write_atomic(&fifo, b"x").unwrap_err().to_string(),
            "a FIFO with no reader; start its reader first"
        );
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read(fifo).unwrap())
        };
        // The reader opens the FIFO in its own time: retry until it is there.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while let Err(e) = write_atomic(&fifo, b"through") {
            assert!(std::time::Instant::now() < deadline, "{e}");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(reader.join().unwrap(), b"through");
        assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
        std::fs::remove_dir_all(&dir).ok();
    }

    /// A replaced file keeps its owner: as root the temporary is given to the file's owner (as
    /// another user, a file of someone else cannot be set up, nor replaced: the write says so).
    #[cfg(unix)]
    #[test]
    fn a_replaced_file_keeps_its_owner() {
        use std::os::unix::fs::MetadataExt;
        let dir = std::env::temp_dir().join(format!("mpipe-io-owner-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s.json");
        std::fs::write(&path, "old").unwrap();
        let nobody = 65534;
        if std::os::unix::fs::chown(&path, Some(nobody), Some(nobody)).is_ok() {
            write_atomic(&path, b"new").unwrap();
            let meta = std::fs::metadata(&path).unwrap();
            assert_eq!((meta.uid(), meta.gid()), (nobody, nobody));
            assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        } else {
            // Not root: our own file stays ours.
            let uid = std::fs::metadata(&path).unwrap().uid();
            write_atomic(&path, b"new").unwrap();
            assert_eq!(std::fs::metadata(&path).unwrap().uid(), uid);
        }
        std::fs::remove_dir_all(&dir).ok();
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
