//! One kind of background job for everything long (large simulations, calibrations, trace
//! imports): a named thread that reports its progress and checks a cancel flag, so Cancel really
//! stops the work instead of only dropping its result. In the browser (no threads) the same
//! `Job` runs on the page's one thread in slices between frames ([`PageJob`]): a job given as
//! steps ([`Job::spawn_steps`]) takes as many as fit in [`SLICE`] at each frame, so the page
//! draws its progress and hears Cancel between them; a job given as one piece is one step.

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

/// What a step of a stepped job ([`Job::spawn_steps`]) gives: another step to take, or the
/// result.
#[derive(Debug, PartialEq)]
pub enum Step<T> {
    Again,
    Done(T),
}

/// `work` as the one step of a stepped job.
fn once<T>(work: impl FnOnce(&Control) -> T) -> impl FnMut(&Control) -> Step<T> {
    let mut work = Some(work);
    move |control| match work.take() {
        Some(work) => Step::Done(work(control)),
        // Never asked: a job stops at its first `Done`.
        None => Step::Again,
    }
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

    /// Starts the steps `step` takes until it says [`Step::Done`], on a thread (in the browser,
    /// in slices between frames).
    pub fn spawn_steps(
        name: &str,
        mut step: impl FnMut(&Control) -> Step<T> + Send + 'static,
    ) -> Result<Job<T>, String> {
        Job::spawn(name, move |control| {
            loop {
                if let Step::Done(t) = step(control) {
                    break t;
                }
            }
        })
    }
}

/// The browser's job: on the page's one thread.
#[cfg(target_arch = "wasm32")]
pub type Job<T> = PageJob<T>;

/// How long a page job works in one frame before the page draws again (a frame at 60 Hz is
/// 16.7 ms; the rest is the page's own drawing).
pub const SLICE: std::time::Duration = std::time::Duration::from_millis(10);

/// A job that runs on the polling thread in slices: nothing at its first poll (the frame that
/// starts it draws it running), then at each poll its steps until [`SLICE`] is spent, so the
/// page draws its progress and hears Cancel between steps. The web build's [`Job`] (built
/// everywhere, so that its tests run with the others).
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
pub struct PageJob<T> {
    name: String,
    control: Control,
    /// The steps until the last has run.
    steps: std::cell::RefCell<Option<Steps<T>>>,
    /// How long one poll works.
    slice: std::time::Duration,
    /// Whether a poll has seen it waiting: it works from the next.
    due: std::cell::Cell<bool>,
}

type Steps<T> = Box<dyn FnMut(&Control) -> Step<T>>;

impl<T> std::fmt::Debug for PageJob<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PageJob").field("name", &self.name).finish()
    }
}

#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
impl<T: 'static> PageJob<T> {
    /// A job of one step: `work`.
    pub fn spawn(
        name: &str,
        work: impl FnOnce(&Control) -> T + 'static,
    ) -> Result<PageJob<T>, String> {
        PageJob::spawn_steps(name, once(work))
    }

    /// A job of the steps `step` takes until it says [`Step::Done`].
    pub fn spawn_steps(
        name: &str,
        step: impl FnMut(&Control) -> Step<T> + 'static,
    ) -> Result<PageJob<T>, String> {
        Ok(PageJob {
            name: name.to_string(),
            control: Control::new(),
            steps: std::cell::RefCell::new(Some(Box::new(step))),
            slice: SLICE,
            due: std::cell::Cell::new(false),
        })
    }

    /// The same job working `slice` per poll.
    pub fn with_slice(mut self, slice: std::time::Duration) -> Self {
        self.slice = slice;
        self
    }

    /// Whether the last step has run, or the job was cancelled: a cancelled job left unpolled
    /// never runs again.
    pub fn is_finished(&self) -> bool {
        self.steps.borrow().is_none() || self.is_cancelled()
    }

    /// Works one slice when its turn has come: the result when the last step has run.
    pub fn poll(&self) -> Poll<T> {
        if !self.due.replace(true) && !self.is_cancelled() {
            return Poll::Running;
        }
        let Some(mut steps) = self.steps.borrow_mut().take() else {
            return Poll::Lost;
        };
        let start = web_time::Instant::now();
        loop {
            // A job cancelled between steps takes one more, with the cancel flag set: the work
            // stops at its first check and says so in its result, as on a thread.
            if let Step::Done(t) = steps(&self.control) {
                return Poll::Done(t);
            }
            if start.elapsed() >= self.slice {
                *self.steps.borrow_mut() = Some(steps);
                return Poll::Running;
            }
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
    fn a_page_job_draws_one_frame_running_then_works_in_slices_and_hears_cancel_between_steps() {
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

        // Four steps, one per poll (a slice of nothing): progress shows between them.
        let mut left = 4;
        let counting = move |c: &Control| {
            left -= 1;
            if !c.keep_going(1.0 - left as f32 / 4.0) {
                return Step::Done(None);
            }
            if left == 0 {
                Step::Done(Some("done"))
            } else {
                Step::Again
            }
        };
        let job = PageJob::spawn_steps("steps", counting)
            .unwrap()
            .with_slice(std::time::Duration::ZERO);
        assert_eq!(job.poll(), Poll::Running);
        assert_eq!(job.poll(), Poll::Running);
        assert_eq!(job.progress(), 0.25);
        assert_eq!(job.poll(), Poll::Running);
        assert_eq!(job.progress(), 0.5);
        job.cancel();
        assert!(job.is_finished(), "a cancelled job is dropped unpolled");
        assert_eq!(
            job.poll(),
            Poll::Done(None),
            "and polled, its next step stops"
        );

        // A long slice takes every step in one poll.
        let mut left = 3;
        let job = PageJob::spawn_steps("one slice", move |_: &Control| {
            left -= 1;
            if left == 0 {
                Step::Done(())
            } else {
                Step::Again
            }
        })
        .unwrap()
        .with_slice(std::time::Duration::from_secs(60));
        assert_eq!(job.poll(), Poll::Running);
        assert_eq!(job.poll(), Poll::Done(()));
    }

    #[test]
    fn a_stepped_job_on_a_thread_takes_every_step() {
        let mut n = 0;
        let job = Job::spawn_steps("thread steps", move |_: &Control| {
            n += 1;
            if n == 5 { Step::Done(n) } else { Step::Again }
        })
        .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            match job.poll() {
                Poll::Running => {
                    assert!(std::time::Instant::now() < deadline, "the work went on");
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                done => {
                    assert_eq!(done, Poll::Done(5));
                    break;
                }
            }
        }
    }
}
