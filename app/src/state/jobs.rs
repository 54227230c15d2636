//! One kind of background job for everything long (large simulations, calibrations, trace
//! imports): a named thread that reports its progress and checks a cancel flag, so Cancel really
//! stops the work instead of only dropping its result. In the browser (no threads) the same
//! `Job` runs its work on the page's one thread, in the frame after it starts: the frame that
//! starts it draws its progress bar and Cancel first, and a job cancelled before it runs never
//! runs.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
#[cfg(not(target_arch = "wasm32"))]
use std::sync::mpsc;

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
#[cfg(not(target_arch = "wasm32"))]
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

impl Control {
    fn new() -> Control {
        Control {
            cancel: Arc::new(AtomicBool::new(false)),
            progress: Arc::new(AtomicU32::new(0)),
        }
    }
}

#[cfg(not(target_arch = "wasm32"))]
impl<T: Send + 'static> Job<T> {
    /// Starts `work` on a thread named `name`; errors when no thread can be started.
    pub fn spawn(
        name: &str,
        work: impl FnOnce(&Control) -> T + Send + 'static,
    ) -> Result<Job<T>, String> {
        let control = Control::new();
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

/// The browser's job: on the page's one thread.
#[cfg(target_arch = "wasm32")]
pub type Job<T> = PageJob<T>;

/// A job that runs on the polling thread, at its second poll: the web build's [`Job`] (built
/// everywhere, so that its tests run with the others).
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
pub struct PageJob<T> {
    name: String,
    control: Control,
    /// The work until it has run.
    work: std::cell::RefCell<Option<Work<T>>>,
    /// Its result until polled.
    result: std::cell::RefCell<Option<T>>,
    /// Whether a poll has seen it waiting: it runs at the next.
    due: std::cell::Cell<bool>,
}

type Work<T> = Box<dyn FnOnce(&Control) -> T>;

impl<T> std::fmt::Debug for PageJob<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PageJob").field("name", &self.name).finish()
    }
}

#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
impl<T: 'static> PageJob<T> {
    /// Keeps `work` to run at the second poll: the frame that starts it draws it running first.
    pub fn spawn(
        name: &str,
        work: impl FnOnce(&Control) -> T + 'static,
    ) -> Result<PageJob<T>, String> {
        Ok(PageJob {
            name: name.to_string(),
            control: Control::new(),
            work: std::cell::RefCell::new(Some(Box::new(work))),
            result: std::cell::RefCell::new(None),
            due: std::cell::Cell::new(false),
        })
    }

    /// Whether the work has run, or was cancelled: a cancelled job left unpolled never runs.
    pub fn is_finished(&self) -> bool {
        self.work.borrow().is_none() || self.is_cancelled()
    }

    /// Runs the work when its turn has come and takes the result.
    pub fn poll(&self) -> Poll<T> {
        if !self.due.replace(true) && !self.is_cancelled() {
            return Poll::Running;
        }
        let work = self.work.borrow_mut().take();
        if let Some(work) = work {
            // A job cancelled before its turn runs with the cancel flag set: the work stops at
            // its first check, and says so in its result as on a thread.
            let done = work(&self.control);
            *self.result.borrow_mut() = Some(done);
        }
        match self.result.borrow_mut().take() {
            Some(t) => Poll::Done(t),
            None => Poll::Lost,
        }
    }
}

/// What both kinds of job answer alike.
macro_rules! job_common {
    ($job:ident) => {
        #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
        impl<T> $job<T> {
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
        }
    };
}
#[cfg(not(target_arch = "wasm32"))]
job_common!(Job);
job_common!(PageJob);

#[cfg(not(target_arch = "wasm32"))]
impl<T> Job<T> {
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

    #[test]
    fn a_page_job_draws_one_frame_running_then_runs_and_a_cancelled_one_stops_at_its_first_check() {
        let job = PageJob::spawn("page job", |c: &Control| {
            c.keep_going(0.25);
            7
        })
        .unwrap();
        assert_eq!(job.name(), "page job");
        assert!(!job.is_finished());
        assert_eq!(job.poll(), Poll::Running);
        assert_eq!(job.progress(), 0.0, "nothing ran in the first frame");
        assert_eq!(job.poll(), Poll::Done(7));
        assert!(job.is_finished());
        assert_eq!(job.progress(), 0.25);
        assert_eq!(job.poll(), Poll::Lost, "the result is taken once");

        let job = PageJob::spawn("cancelled", |c: &Control| c.keep_going(0.5).then_some(1));
        let job = job.unwrap();
        job.cancel();
        assert!(job.is_finished(), "a cancelled job is dropped unpolled");
        assert_eq!(
            job.poll(),
            Poll::Done(None),
            "and polled, its work stops at once"
        );
    }
}
