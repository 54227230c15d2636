//! An analysis of the document on screen, computed on a worker on request (BigMac's designs,
//! JanusPipe's WaveK sweep, GARS before and after): progress and Cancel while it runs, and its
//! result shown only while the document is the one it was computed from.

use super::jobs::{Control, Job, Poll};

/// What a finished analysis says.
#[derive(Debug, PartialEq)]
pub enum Finished {
    Done,
    Cancelled,
    Failed(String),
}

/// A computation running, and the document generation it started from.
#[derive(Debug)]
pub struct Running<T> {
    pub job: Job<Option<Result<T, String>>>,
    pub generation: u64,
}

/// One analysis's state: what runs, and the last result with the generation it belongs to.
#[derive(Debug)]
pub struct Analysis<T> {
    pub running: Option<Running<T>>,
    pub result: Option<(u64, T)>,
}

impl<T> Default for Analysis<T> {
    fn default() -> Self {
        Analysis {
            running: None,
            result: None,
        }
    }
}

impl<T: Send + 'static> Analysis<T> {
    /// The result for the document at `generation`, if that is the one computed.
    pub fn current(&self, generation: u64) -> Option<&T> {
        self.result
            .as_ref()
            .filter(|(g, _)| *g == generation)
            .map(|(_, r)| r)
    }

    /// Starts `work` (`None` from it: cancelled) for the document at `generation`, unless one
    /// runs already.
    pub fn start(
        &mut self,
        name: &str,
        generation: u64,
        work: impl FnOnce(&Control) -> Option<Result<T, String>> + Send + 'static,
    ) -> Result<(), String> {
        if self.running.is_none() {
            let job = Job::spawn(name, work)?;
            self.running = Some(Running { job, generation });
        }
        Ok(())
    }

    /// Asks the running computation to stop.
    pub fn cancel(&self) {
        if let Some(r) = &self.running {
            r.job.cancel();
        }
    }

    /// The fraction done of what runs.
    pub fn progress(&self) -> Option<f32> {
        self.running.as_ref().map(|r| r.job.progress())
    }

    /// Takes a finished computation: `None` while it runs or when nothing does.
    pub fn poll(&mut self) -> Option<Finished> {
        let running = self.running.as_ref()?;
        let result = match running.job.poll() {
            Poll::Running => return None,
            Poll::Done(result) => result,
            Poll::Lost => Some(Err("the worker stopped unexpectedly".into())),
        };
        let generation = running.generation;
        self.running = None;
        Some(match result {
            None => Finished::Cancelled,
            Some(Ok(r)) => {
                self.result = Some((generation, r));
                Finished::Done
            }
            Some(Err(e)) => Finished::Failed(e),
        })
    }
}
