//! One kind of background job for everything long (large simulations, calibrations, trace
//! imports): a named thread that reports its progress and checks a cancel flag, so Cancel really
//! stops the work instead of only dropping its result.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, mpsc};

/// What a job's work sees: where to report progress, and whether to stop.
#[derive(Debug, Clone)]
pub struct Control {
    cancel: Arc<AtomicBool>,
    /// The fraction done, as `f32` bits.
    progress: Arc<AtomicU32>,
}

impl Control {
    /// Whether Cancel was pressed (without reporting progress).
    pub fn is_cancelled(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
    }

    /// Records the fraction done (0 to 1); false once the job is cancelled.
    pub fn keep_going(&self, fraction: f32) -> bool {
        self.progress
            .store(fraction.clamp(0.0, 1.0).to_bits(), Ordering::Relaxed);
        !self.cancel.load(Ordering::Relaxed)
    }
}

/// A job running on its own thread.
#[derive(Debug)]
pub struct Job<T> {
    name: String,
    control: Control,
    result: mpsc::Receiver<T>,
    thread: std::thread::JoinHandle<()>,
}

/// A poll of a job.
#[derive(Debug, PartialEq)]
pub enum Poll<T> {
    Running,
    Done(T),
    /// The thread ended without a result (it panicked).
    Lost,
}

impl<T: Send + 'static> Job<T> {
    /// Starts `work` on a thread named `name`; errors when no thread can be started.
    pub fn spawn(
        name: &str,
        work: impl FnOnce(&Control) -> T + Send + 'static,
    ) -> Result<Job<T>, String> {
        let control = Control {
            cancel: Arc::new(AtomicBool::new(false)),
            progress: Arc::new(AtomicU32::new(0)),
        };
        let (tx, rx) = mpsc::channel();
        let inner = control.clone();
        let thread = std::thread::Builder::new()
            .name(name.to_string())
            .spawn(move || {
                // The receiver is gone when the job was dropped: nothing to deliver then.
                let _ = tx.send(work(&inner));
            })
            .map_err(|e| format!("cannot start {name}: {e}"))?;
        Ok(Job {
            name: name.to_string(),
            control,
            result: rx,
            thread,
        })
    }
}

impl<T> Job<T> {
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The fraction done, as last reported.
    pub fn progress(&self) -> f32 {
        f32::from_bits(self.control.progress.load(Ordering::Relaxed))
    }

    /// Asks the work to stop at its next check.
    pub fn cancel(&self) {
        self.control.cancel.store(true, Ordering::Relaxed);
    }

    /// Whether Cancel was pressed.
    pub fn is_cancelled(&self) -> bool {
        self.control.cancel.load(Ordering::Relaxed)
    }

    /// Whether the thread has ended (its result may still be waiting to be polled).
    pub fn is_finished(&self) -> bool {
        self.thread.is_finished()
    }

    /// Takes the result if the job is done.
    pub fn poll(&self) -> Poll<T> {
        match self.result.try_recv() {
            Ok(t) => Poll::Done(t),
            Err(mpsc::TryRecvError::Empty) => Poll::Running,
            Err(mpsc::TryRecvError::Disconnected) => Poll::Lost,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cancelled_job_stops_its_work() {
        let job = Job::spawn("test job", |c: &Control| {
            let mut i = 0u64;
            while c.keep_going(0.5) {
                i += 1;
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            i
        })
        .unwrap();
        assert_eq!(job.poll(), Poll::Running);
        assert_eq!(job.name(), "test job");
        job.cancel();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !job.is_finished() {
            assert!(std::time::Instant::now() < deadline, "the work went on");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(matches!(job.poll(), Poll::Done(_)));
        assert_eq!(job.progress(), 0.5);
    }
}
