//! Reading a run's files on several cores, with exactly the result of reading them one after
//! the other: each file is read by one thread at a time, and a file's events are counted
//! against the import's limit as the reading in order counts them (its peak over what the
//! files before it hold). The caller opens the files (the file system is the binaries' edge)
//! and reads them in order where this gives `None`, for that reading's first error.

use crate::trace::json_stream::Limits;
use crate::trace::raw::RawTrace;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// What the finished files hold, what the files in flight were promised, and how many are in
/// flight: the share of the event limit the next file starts with.
struct Account {
    limit: u64,
    threads: usize,
    /// (events held by the finished files, events promised to the files in flight, files in
    /// flight).
    books: Mutex<(u64, u64, usize)>,
}

impl Account {
    /// A share of what the finished files and the files in flight leave of the limit: an equal
    /// part for each thread not reading (`None`: the books cannot be read).
    fn share(&self) -> Option<u64> {
        let mut a = self.books.lock().ok()?;
        let free = self.limit.saturating_sub(a.0.saturating_add(a.1));
        let share = free / self.threads.saturating_sub(a.2).max(1) as u64;
        a.1 = a.1.saturating_add(share);
        a.2 += 1;
        Some(share)
    }

    /// A file given `share` finished holding `held` events.
    fn finished(&self, share: u64, held: u64) {
        if let Ok(mut a) = self.books.lock() {
            a.0 = a.0.saturating_add(held);
            a.1 = a.1.saturating_sub(share);
            a.2 = a.2.saturating_sub(1);
        }
    }
}

/// Reads `files` files on `threads` threads, file `i` by `read(i, its limits, others_ok)`
/// (`others_ok()` turns false once another file failed: the read should stop then). The same
/// traces as the files read in order within `limits` (`limits.held`: what earlier files of the
/// import hold) when every file reads and, in order, they
/// stay within the event limit; `None` otherwise — a file that did not read, a limit the order
/// would have met, a file beyond its share, or fewer than two threads to read on. The limit
/// bounds memory here too: a file starts with a share of what the finished files and the files
/// in flight leave of it, so the traces held and being read never hold more than the limit
/// together.
pub fn import_in_parallel(
    files: usize,
    limits: Limits,
    threads: usize,
    read: impl Fn(usize, Limits, &dyn Fn() -> bool) -> Option<RawTrace> + Sync,
) -> Option<Vec<RawTrace>> {
    let threads = threads.min(files);
    if threads < 2 {
        return None;
    }
    let (next, failed) = (AtomicUsize::new(0), AtomicBool::new(false));
    let account = Account {
        limit: limits.events,
        threads,
        // What the caller's earlier files hold counts as held from the start.
        books: Mutex::new((limits.held, 0, 0)),
    };
    let others_ok = || !failed.load(Ordering::Relaxed);
    let slots: Vec<Mutex<Option<RawTrace>>> = (0..files).map(|_| Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                while others_ok() {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(slot) = slots.get(i) else {
                        break;
                    };
                    let Some(share) = account.share() else {
                        failed.store(true, Ordering::Relaxed);
                        break;
                    };
                    // Within its share: what it may hold is the limit less everything else.
                    let trace = read(
                        i,
                        limits.after(limits.events.saturating_sub(share)),
                        &others_ok,
                    );
                    account.finished(share, trace.as_ref().map_or(0, RawTrace::held_events));
                    match (trace, slot.lock()) {
                        (Some(t), Ok(mut slot)) => *slot = Some(t),
                        _ => failed.store(true, Ordering::Relaxed),
                    }
                }
            });
        }
    });
    if failed.load(Ordering::Relaxed) {
        return None;
    }
    let traces: Vec<RawTrace> = slots
        .into_iter()
        .map(|slot| slot.into_inner().ok().flatten())
        .collect::<Option<_>>()?;
    // The limit as the reading in order checks it: each file's peak over the files before it.
    let mut before = limits.held;
    for t in &traces {
        if t.peak_held_events.saturating_add(before) > limits.events {
            return None;
        }
        before = before.saturating_add(t.held_events());
    }
    Some(traces)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(rank: usize) -> Vec<u8> {
        let path = format!(
            "{}/../tests/fixtures/traces/pp-interleaved/rank{rank}.json.gz",
            env!("CARGO_MANIFEST_DIR")
        );
        std::fs::read(path).unwrap()
    }

    fn in_order(files: &[Vec<u8>], limits: Limits) -> Result<Vec<RawTrace>, String> {
        let mut out: Vec<RawTrace> = Vec::new();
        for (i, bytes) in files.iter().enumerate() {
            let held = limits.held + out.iter().map(RawTrace::held_events).sum::<u64>();
            let name = format!("rank{i}.json.gz");
            out.push(
                crate::trace::import_with(&bytes[..], &name, limits.after(held), &mut |_| true)
                    .map_err(|e| e.to_string())?,
            );
        }
        Ok(out)
    }

    #[test]
    fn files_read_in_parallel_are_the_files_read_in_order() {
        let files = vec![fixture(0), fixture(1), fixture(0), fixture(1)];
        let limits = Limits::default();
        let read = |i: usize, limits: Limits, others_ok: &dyn Fn() -> bool| {
            let bytes = files.get(i)?;
            let name = format!("rank{i}.json.gz");
            crate::trace::import_with(&bytes[..], &name, limits, &mut |_| others_ok()).ok()
        };
        let ordered = in_order(&files, limits).unwrap();
        for threads in [2, 3, 8] {
            let parallel = import_in_parallel(files.len(), limits, threads, read).unwrap();
            assert_eq!(
                format!("{parallel:?}"),
                format!("{ordered:?}"),
                "{threads} threads"
            );
        }
        // One thread, or one file: read in order by the caller.
        assert!(import_in_parallel(files.len(), limits, 1, read).is_none());
        assert!(import_in_parallel(1, limits, 4, read).is_none());
        // A limit the reading in order meets: None, and the order gives the error.
        let total: u64 = ordered.iter().map(RawTrace::held_events).sum();
        let tight = Limits {
            events: total - 1,
            ..limits
        };
        assert!(in_order(&files, tight).is_err());
        assert!(import_in_parallel(files.len(), tight, 2, read).is_none());
        // What the import's earlier files hold counts against the limit as it does in order:
        // where the reading in order fails the reading at once gives up, and what it gives is
        // the reading in order's (it may also give up where a file outgrows its share).
        for held in [0, 1, 1000, total / 2, total] {
            let after = Limits {
                events: total + 1000,
                ..limits
            }
            .after(held);
            match (
                import_in_parallel(files.len(), after, 2, read),
                in_order(&files, after),
            ) {
                (Some(at_once), Ok(ordered)) => {
                    assert_eq!(
                        format!("{at_once:?}"),
                        format!("{ordered:?}"),
                        "{held} held"
                    )
                }
                (Some(_), Err(e)) => panic!("{held} held: read at once past {e}"),
                (None, _) => {}
            }
        }
        // Room for all: read at once, with what was held before counted.
        let room = limits.after(1000);
        let at_once = import_in_parallel(files.len(), room, 2, read).unwrap();
        assert_eq!(
            format!("{at_once:?}"),
            format!("{:?}", in_order(&files, room).unwrap())
        );
        // No room left after what was held: the reading in order fails, and so this one.
        let full = Limits {
            events: total + 1000,
            ..limits
        }
        .after(total);
        assert!(in_order(&files, full).is_err());
        assert!(import_in_parallel(files.len(), full, 2, read).is_none());
        // A file that does not read: None.
        let broken = |i: usize, limits: Limits, others_ok: &dyn Fn() -> bool| match i {
            2 => None,
            _ => read(i, limits, others_ok),
        };
        assert!(import_in_parallel(files.len(), limits, 2, broken).is_none());
    }
}
