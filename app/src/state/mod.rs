//! App state: the document (scenario, undo history, where it lives), what is derived from it
//! (keyed by the document's generation), the view, pinned baselines, imported traces, background
//! jobs and the notice line. Commands (`crate::command`) change it; panels (`crate::panels`)
//! draw it. The app computes no schedule semantics; everything shown comes from `mpipe`.

pub mod analysis;
pub mod derived;
pub mod designs;
pub mod dialog;
pub mod document;
pub mod files;
pub mod history;
pub mod jobs;
pub mod png_export;
pub mod traces;
pub mod tuner;
pub mod view;

use crate::samples::{SAMPLES, Sample};
use derived::{Derived, Shown};
use dialog::{FileDialog, FilePurpose};
use document::{Document, Identity};
use mpipe::Scenario;
use mpipe::scenario::edit::{Edit, Remedy};
use mpipe::vocab::action::{Action, Step};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use traces::{Calibrating, TraceSource, Traces};
use view::{Selection, View};

/// The largest unit size the app's WaveK sweep tries (`mpipe sweep` takes any range).
pub const WAVE_SWEEP_MAX_K: usize = 16;

/// A simulation pinned to compare the current one against.
#[derive(Debug, Clone)]
pub struct Baseline {
    /// `A: 8-layer LLM, 1F1B`.
    pub name: String,
    pub shown: Arc<Shown>,
}

/// A one-line message about the last file operation or job.
#[derive(Debug, Clone, PartialEq)]
pub struct Notice {
    pub text: String,
    /// A file that cannot be read, parsed or written; a job that failed.
    pub is_error: bool,
}

/// Everything the window shows.
#[derive(Debug)]
pub struct Studio {
    pub doc: Document,
    pub derived: Derived,
    pub view: View,
    pub baselines: Vec<Baseline>,
    pub traces: Traces,
    /// BigMac's three designs of the scenario, when asked for.
    pub designs: designs::Designs,
    /// OctoPipe's tuner on the scenario, when asked for.
    pub tuner: tuner::Tuner,
    /// JanusPipe's WaveK sweep of the scenario, when asked for.
    pub wave_sweep: analysis::Analysis<mpipe::tune::wave_sweep::WaveSweep>,
    /// The scenario's graphs packed sequentially and by GARS, both simulated, when asked for.
    pub packing: analysis::Analysis<mpipe::tune::packing::PackingComparison>,
    pub notice: Option<Notice>,
    /// Recently opened or saved files (absolute paths), newest first.
    pub recent: Vec<String>,
    /// The in-app file dialog, while it is open.
    pub dialog: Option<FileDialog>,
    /// The outcome of a PNG export waiting for its screenshot.
    pub png_pending: Option<std::sync::mpsc::Receiver<Result<String, String>>>,
    /// Files given on the command line, being read on a worker.
    pub opening: Option<jobs::Job<Vec<files::Given>>>,
}

impl Default for Studio {
    fn default() -> Self {
        let mut studio = Studio::empty();
        if let Some(sample) = SAMPLES.first() {
            studio.open_sample(sample);
        }
        studio
    }
}

impl Studio {
    /// A window with no scenario open.
    pub fn empty() -> Self {
        Studio {
            doc: Document::default(),
            derived: Derived::default(),
            view: View::default(),
            baselines: Vec::new(),
            traces: Traces::default(),
            designs: designs::Designs::default(),
            tuner: tuner::Tuner::default(),
            wave_sweep: Default::default(),
            packing: Default::default(),
            notice: None,
            recent: Vec::new(),
            dialog: None,
            png_pending: None,
            opening: None,
        }
    }

    /// The scenario being edited, once one is open.
    pub fn scenario(&self) -> Option<&Scenario> {
        self.doc.scenario()
    }

    /// The sample file name or path the document came from.
    pub fn source(&self) -> &str {
        self.doc.source()
    }

    /// The simulation on screen: the current one, or the last valid one while the edit is invalid.
    pub fn shown(&self) -> Option<&Arc<Shown>> {
        self.derived.shown()
    }

    /// The simulation of the current document state, when it is valid and computed.
    pub fn current(&self) -> Option<&Arc<Shown>> {
        self.derived
            .result()
            .ok()
            .filter(|s| s.generation == self.doc.generation())
    }

    /// Why the current document state has no simulation, when it is invalid.
    fn invalid(&self) -> Option<&derived::Invalid> {
        self.derived
            .result()
            .err()
            .filter(|e| e.generation == self.doc.generation())
    }

    /// The message of [`Studio::invalid`].
    pub fn error(&self) -> Option<&str> {
        self.invalid().map(|e| e.message.as_str())
    }

    /// The change that makes the current document state valid, when one is known.
    pub fn remedy(&self) -> Option<&Remedy> {
        self.invalid().and_then(|e| e.remedy.as_ref())
    }

    /// The current document state's deadlock (its cycle and proposed fix), when that is why it
    /// has no simulation.
    pub fn deadlock(&self) -> Option<&derived::Deadlock> {
        self.invalid().and_then(|e| e.deadlock.as_deref())
    }

    /// Rank `r`'s compute actions as strings, from the simulation on screen.
    pub fn rank_actions(&self, rank: usize) -> Vec<String> {
        self.shown()
            .map(|s| s.rank_actions(rank))
            .unwrap_or_default()
    }

    /// The makespan of the simulation on screen.
    pub fn current_makespan(&self) -> f64 {
        self.shown().map_or(0.0, |s| s.sim.makespan_s)
    }

    /// The time range every chart spans: the longest of the simulation on screen, the
    /// baselines and the measured step, so they all share one time axis.
    pub fn span(&self) -> f64 {
        let measured = self
            .shown()
            .and_then(|s| self.traces.cached_view(s))
            .map_or(0.0, |c| c.makespan_measured_s);
        self.baselines
            .iter()
            .map(|b| b.shown.sim.makespan_s)
            .fold(self.current_makespan().max(measured), f64::max)
    }

    /// `baseline makespan / current makespan` for the first baseline, when both exist.
    pub fn speedup(&self) -> Option<f64> {
        self.speedup_over(0)
    }

    /// `baseline i's makespan / current makespan`, when both exist.
    pub fn speedup_over(&self, i: usize) -> Option<f64> {
        let base = self.baselines.get(i)?;
        let current = self.current()?;
        (current.sim.makespan_s > 0.0).then(|| base.shown.sim.makespan_s / current.sim.makespan_s)
    }

    /// The selected event's index in the simulation on screen.
    pub fn selected(&self) -> Option<usize> {
        let shown = self.shown()?;
        self.view.selected.as_ref()?.resolve(shown)
    }

    /// Reports a file operation that worked.
    pub fn inform(&mut self, text: String) {
        self.notice = Some(Notice {
            text: mpipe::vocab::units::escape_controls(&text).into_owned(),
            is_error: false,
        });
    }

    /// Reports a file that could not be read, parsed or written; the scenario on screen stays.
    /// Control characters from the file are written out, never drawn.
    pub fn fail(&mut self, text: String) {
        self.notice = Some(Notice {
            text: mpipe::vocab::units::escape_controls(&text).into_owned(),
            is_error: true,
        });
    }

    /// Derives the document's current state (`text`: the file it was just read from).
    fn rederive(&mut self, text: Option<&str>) {
        let Some(scenario) = self.doc.scenario() else {
            return;
        };
        let committed = !self.doc.in_gesture();
        self.derived.request(
            scenario,
            self.doc.generation(),
            self.doc.source(),
            text,
            committed,
        );
    }

    /// After an edit, undo or redo: a notice about an earlier save no longer describes the
    /// document, so it goes (errors stay until something else is reported).
    fn changed(&mut self) {
        if self.notice.as_ref().is_some_and(|n| !n.is_error) {
            self.notice = None;
        }
        self.rederive(None);
    }

    /// Applies an edit to the scenario (one undo step, or part of the drag `gesture`).
    pub fn edit(&mut self, edit: &Edit, gesture: Option<egui::Id>) {
        if self.doc.edit(edit, gesture) {
            self.changed();
        }
    }

    /// The drag that was editing has ended: its result becomes the last good state if valid.
    pub fn end_gesture(&mut self) {
        if self.doc.end_gesture()
            && self
                .derived
                .result()
                .is_ok_and(|s| s.generation == self.doc.generation())
        {
            self.derived.commit();
        }
    }

    pub fn undo(&mut self) {
        if self.doc.undo() {
            self.changed();
        }
    }

    pub fn redo(&mut self) {
        if self.doc.redo() {
            self.changed();
        }
    }

    /// Loads an embedded sample.
    pub fn open_sample(&mut self, sample: &Sample) {
        self.open_text(sample.json, sample.file, None);
    }

    /// Opens scenario JSON text as the document; on a parse error the message names the file
    /// and position and the current document stays. Returns whether it opened.
    pub fn open_text(&mut self, text: &str, source: &str, path: Option<PathBuf>) -> bool {
        let parsed = Scenario::from_json_str(text, source)
            .map_err(|e| e.to_string())
            .and_then(|s| files::with_orders_csv(s, path.as_deref()));
        match parsed {
            Ok(scenario) => {
                self.doc.open(
                    scenario,
                    Identity {
                        source: source.to_string(),
                        path,
                    },
                );
                // Another document: the last valid state of the previous one is not its own.
                self.derived.forget_last_good();
                self.view.range = None;
                self.view.selected = None;
                self.notice = None;
                self.rederive(Some(text));
                true
            }
            Err(err) => {
                self.fail(err);
                false
            }
        }
    }

    /// Opens a scenario file; errors name the file, and the current scenario stays.
    pub fn open_path(&mut self, path: &Path) {
        let path = files::absolute(path);
        let name = path.display().to_string();
        match files::read_text(&path) {
            Ok(text) => {
                if self.open_text(&text, &name, Some(path.clone())) {
                    files::remember(&mut self.recent, &name);
                    self.inform(format!("opened {name}"));
                }
            }
            Err(e) => self.fail(e),
        }
    }

    /// Saves the scenario to `path` atomically (temporary file, then rename).
    pub fn save_to(&mut self, path: &Path) {
        let Some(scenario) = self.scenario() else {
            return;
        };
        let path = files::absolute(path);
        match files::write(&path, scenario.to_json_string().as_bytes(), "save") {
            Ok(()) => {
                self.doc.saved_as(&path);
                let name = path.display().to_string();
                files::remember(&mut self.recent, &name);
                self.inform(format!("saved {name}"));
            }
            Err(e) => self.fail(e),
        }
    }

    /// Writes the timeline on screen as SVG (drawn by `core`, like `mpipe render`).
    pub fn export_svg(&mut self, path: &Path) {
        let Some(shown) = self.shown() else {
            self.fail("nothing to export: no valid schedule".into());
            return;
        };
        let svg = mpipe::report::svg::render(&shown.name, &shown.sim);
        match files::write(path, svg.as_bytes(), "export") {
            Ok(()) => self.inform(format!("exported {}", path.display())),
            Err(e) => self.fail(e),
        }
    }

    /// Asks the window for a screenshot and writes the charts' part of it to `path` as PNG;
    /// the outcome arrives as a notice a frame or two later.
    pub fn export_png(&mut self, ctx: &egui::Context, path: PathBuf) {
        let Some(rect) = self
            .view
            .chart_rects
            .iter()
            .copied()
            .reduce(|a, b| a.union(b))
        else {
            self.fail("nothing to export: no timeline on screen".into());
            return;
        };
        let ppp = ctx.pixels_per_point();
        let (tx, rx) = std::sync::mpsc::channel();
        let repaint = ctx.clone();
        ctx.request_screenshot(move |image| {
            let result = png_export::crop_to_png(&image, rect, ppp)
                .map_err(|e| format!("{}: cannot export: {e}", path.display()))
                .and_then(|png| files::write(&path, &png, "export"))
                .map(|()| format!("exported {}", path.display()));
            let _ = tx.send(result);
            repaint.request_repaint();
        });
        self.png_pending = Some(rx);
    }

    /// Opens the in-app file dialog for `purpose`, in the folder of the document or of the
    /// last file used.
    pub fn show_dialog(&mut self, purpose: FilePurpose) {
        let start = self
            .doc
            .path()
            .map(Path::to_path_buf)
            .or_else(|| self.recent.first().map(PathBuf::from));
        // Save as offers the document's file name; exports its stem with their extension.
        let name = self.doc.path().and_then(|p| match purpose {
            FilePurpose::SaveScenario => p.file_name().map(|n| n.to_string_lossy().into_owned()),
            FilePurpose::ExportSvg => p
                .file_stem()
                .map(|n| format!("{}.svg", n.to_string_lossy())),
            FilePurpose::ExportPng => p
                .file_stem()
                .map(|n| format!("{}.png", n.to_string_lossy())),
            FilePurpose::OpenScenario | FilePurpose::OpenTraces => None,
        });
        self.dialog = Some(FileDialog::new(purpose, start.as_deref(), name));
    }

    /// Opens dropped files: profiler traces are imported together on a background job;
    /// otherwise the first file opens as the scenario.
    pub fn open_dropped(&mut self, dropped: &[egui::DroppedFileHandle]) {
        let sorted = files::sort_dropped(dropped);
        if let Some(e) = sorted.errors.into_iter().next() {
            self.fail(e);
        }
        self.open_traces(sorted.traces);
        if let Some((name, path, text)) = sorted.scenario
            && self.open_text(&text, &name, Some(path))
        {
            files::remember(&mut self.recent, &name);
        }
    }

    /// Opens the files given on the command line: read and sorted on a worker (the window appears
    /// at once, whatever the files are), then the scenario opens and the traces are imported.
    pub fn open_given(&mut self, paths: Vec<PathBuf>) {
        if paths.is_empty() {
            return;
        }
        match jobs::Job::spawn("mpipe open", move |_| files::sort_given(paths)) {
            Ok(job) => self.opening = Some(job),
            Err(e) => self.fail(e),
        }
    }

    /// Takes the files read for [`Studio::open_given`]; true while they are still being read.
    fn poll_given(&mut self) -> bool {
        let Some(job) = &self.opening else {
            return false;
        };
        let given = match job.poll() {
            jobs::Poll::Running => return true,
            jobs::Poll::Done(given) => given,
            jobs::Poll::Lost => {
                self.opening = None;
                self.fail("reading the files given stopped unexpectedly".into());
                return false;
            }
        };
        self.opening = None;
        let mut traces = Vec::new();
        for g in given {
            match g {
                files::Given::Trace(path) => traces.push(TraceSource::Path(path)),
                files::Given::Scenario(path, Ok(text)) => {
                    let name = path.display().to_string();
                    if self.open_text(&text, &name, Some(path)) {
                        files::remember(&mut self.recent, &name);
                    }
                }
                files::Given::Scenario(_, Err(e)) => self.fail(e),
            }
        }
        self.open_traces(traces);
        false
    }

    /// Starts importing trace files on a background job.
    pub fn open_traces(&mut self, sources: Vec<TraceSource>) {
        if let Err(e) = self.traces.start_import(sources) {
            self.fail(e);
        }
    }

    /// Stops the background simulation and steps back to the scenario on screen (redo brings
    /// the cancelled edit back).
    pub fn cancel_simulation(&mut self) {
        if self.derived.cancel() && self.doc.undo() {
            self.rederive(None);
        }
    }

    /// Pins the simulation on screen as a baseline.
    pub fn pin_baseline(&mut self) {
        let Some(shown) = self.shown().cloned() else {
            return;
        };
        let letter = char::from(b'A' + (self.baselines.len() % 26) as u8);
        let name = mpipe::vocab::units::shorten(&shown.name, 120);
        self.baselines.push(Baseline {
            name: format!("{letter}: {}", mpipe::vocab::units::escape_controls(&name)),
            shown,
        });
    }

    /// Selects event `event` of the simulation on screen (`None` clears).
    pub fn select(&mut self, event: Option<usize>) {
        self.view.selected = event
            .zip(self.shown())
            .and_then(|(e, shown)| Selection::of(shown, e));
    }

    /// Zooms to the selected event (the whole step without one).
    pub fn fit_selection(&mut self) {
        let span = self.span();
        let event = self
            .selected()
            .zip(self.shown())
            .and_then(|(i, s)| s.scene.events.get(i).cloned());
        match event {
            Some(e) => {
                let fit =
                    crate::geometry::TimeView::new(0.0, span, 0.0, 1.0).fit(e.start_s, e.end_s);
                self.view.set_range(fit.t0, fit.t1, span);
            }
            None => self.view.range = None,
        }
    }

    /// Selects the next search match and brings it into view.
    pub fn next_match(&mut self) {
        let Some(shown) = self.shown().cloned() else {
            return;
        };
        let matches = self.view.search.matches(&shown).to_vec();
        if matches.is_empty() {
            return;
        }
        let at = self.view.search.current % matches.len();
        self.view.search.current = at + 1;
        if let Some(&event) = matches.get(at) {
            self.select(Some(event));
            self.fit_selection();
        }
    }

    /// Moves the teaching cursor to the next (or previous) instant an event starts or ends.
    pub fn step_cursor(&mut self, forward: bool) {
        let Some(shown) = self.derived.shown() else {
            return;
        };
        let Some(teach) = self.view.teach.as_mut() else {
            return;
        };
        teach.playing = false;
        let next = if forward {
            shown.scene.next_boundary(teach.t)
        } else {
            shown.scene.previous_boundary(teach.t)
        };
        if let Some(t) = next {
            teach.t = t;
        }
    }

    /// Fits the scenario to the measured step on a background job; the result arrives as an
    /// edit (one undo takes it back).
    pub fn start_calibration(&mut self) {
        let (Some(scenario), Some(shown)) = (self.scenario().cloned(), self.current().cloned())
        else {
            return;
        };
        let (Some(m), Some(a)) = (
            self.traces.measurement.clone(),
            self.traces.alignment.clone(),
        ) else {
            return;
        };
        if m.refusal().is_some() {
            return;
        }
        let step = self.traces.step;
        // Checked on another step than the fit step; with one step only, the report says it is
        // not checked.
        let check = mpipe::trace::calibrate::check_step(step, self.traces.steps()).unwrap_or(step);
        let generation = self.doc.generation();
        let job = jobs::Job::spawn("mpipe calibration", move |control| {
            match mpipe::trace::calibrate::calibrate_cancellable(
                &scenario,
                &shown.sim,
                &m,
                &a,
                step,
                check,
                Default::default(),
                &mut |f| control.keep_going(f),
            ) {
                Ok(c) => Some(Ok(c)),
                Err(mpipe::tune::pipeline::SimulationError::Cancelled) => None,
                Err(mpipe::tune::pipeline::SimulationError::Derive(e)) => Some(Err(format!(
                    "the calibrated scenario: field `{}`: {e}",
                    e.field()
                ))),
            }
        });
        match job {
            Ok(job) => self.traces.calibrating = Some(Calibrating { job, generation }),
            Err(e) => self.fail(e),
        }
    }

    /// Takes finished background work; true while some is still running.
    pub fn poll(&mut self) -> bool {
        if let Some(result) = self.png_pending.as_ref().and_then(|rx| rx.try_recv().ok()) {
            self.png_pending = None;
            match result {
                Ok(message) => self.inform(message),
                Err(message) => self.fail(message),
            }
        }
        let simulating = self.derived.poll(!self.doc.in_gesture());
        match self.traces.poll_import() {
            Some(Ok(message)) => self.inform(message),
            Some(Err(message)) => self.fail(message),
            None => {}
        }
        let calibrating = self.poll_calibration();
        let comparing = self.poll_analyses();
        let tuning = self.poll_tuner();
        let opening = self.poll_given();
        simulating
            || calibrating
            || comparing
            || tuning
            || opening
            || self.traces.import.is_some()
            || self.derived.stopping() > 0
            || self.png_pending.is_some()
    }

    /// Starts `work` on the scenario on screen as the analysis `pick` selects (on a worker, with
    /// progress and Cancel), unless that analysis runs already.
    fn start_analysis<T: Send + 'static>(
        &mut self,
        pick: fn(&mut Studio) -> &mut analysis::Analysis<T>,
        name: &str,
        work: impl FnOnce(Scenario, &jobs::Control) -> Option<Result<T, String>> + Send + 'static,
    ) {
        let Some(scenario) = self.scenario().cloned() else {
            return;
        };
        let generation = self.doc.generation();
        if let Err(e) = pick(self).start(name, generation, move |control| work(scenario, control)) {
            self.fail(e);
        }
    }

    /// Starts comparing BigMac's three designs of the scenario.
    pub fn start_designs(&mut self) {
        self.start_analysis(
            |s| &mut s.designs,
            "mpipe designs",
            |scenario, control| {
                mpipe::tune::designs::compare_designs_cancellable(
                    &scenario,
                    &designs::MICROBATCHES,
                    Default::default(),
                    &mut |f| control.keep_going(f),
                )
                .transpose()
            },
        );
    }

    /// Starts JanusPipe's WaveK sweep of the scenario over `k` = 1..=min(M, 16).
    pub fn start_wave_sweep(&mut self) {
        self.start_analysis(
            |s| &mut s.wave_sweep,
            "mpipe sweep",
            |scenario, control| {
                let last = scenario.microbatches.min(WAVE_SWEEP_MAX_K);
                mpipe::tune::wave_sweep::sweep(&scenario, 1..=last, Default::default(), &mut |f| {
                    control.keep_going(f)
                })
                .map_err(|e| e.to_string())
                .transpose()
            },
        );
    }

    /// Starts simulating the scenario's graphs packed sequentially and by GARS.
    pub fn start_packing(&mut self) {
        self.start_analysis(
            |s| &mut s.packing,
            "mpipe packing",
            |scenario, control| {
                if !control.keep_going(0.0) {
                    return None;
                }
                mpipe::tune::packing::compare_packings(&scenario, Default::default())
                    .map_err(|e| e.to_string())
                    .transpose()
            },
        );
    }

    /// Starts OctoPipe's tuner on the scenario (on a worker; its iterations shown as they end;
    /// Stop keeps the best so far). The device's capacity, when the hardware gives one, caps
    /// every rank's peak memory.
    pub fn start_tuner(&mut self) {
        if self.tuner.running.is_some() {
            return;
        }
        let Some(scenario) = self.scenario().cloned() else {
            return;
        };
        let generation = self.doc.generation();
        let options = mpipe::tune::octopipe::TuneOptions {
            memory_cap: scenario.hardware.as_ref().and_then(|h| h.memory_bytes),
            ..Default::default()
        };
        let budget = options.budget.max(1);
        let live = Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = live.clone();
        let job = jobs::Job::spawn("mpipe tune", move |control| {
            mpipe::tune::octopipe::tune(&scenario, options, &mut |it| {
                if let Ok(mut l) = sink.lock() {
                    l.push(it.clone());
                }
                control.keep_going((it.index + 1) as f32 / budget as f32)
            })
            .map_err(|e| e.to_string())
        });
        match job {
            Ok(job) => {
                self.tuner.running = Some(tuner::Running {
                    job,
                    generation,
                    live,
                    budget,
                })
            }
            Err(e) => self.fail(e),
        }
    }

    /// Moves the shown event `event` in its rank's order to just before the first of its rank's
    /// other steps that starts after `to_s` (OctoPipe's hand-edited orders): the per-rank orders
    /// become hand-written, one undoable edit ([`Edit::MoveStep`]), checked for deadlock as every
    /// derivation is.
    pub fn reorder(&mut self, event: usize, to_s: f64) {
        let Some(shown) = self.shown() else {
            return;
        };
        let Some(moved) = shown.scene.events.get(event).cloned() else {
            return;
        };
        let d = &shown.sim.derivation;
        let steps = d.order.steps(moved.rank);
        let Some(from) = steps
            .iter()
            .position(|s| s.actions().any(|a| a == moved.action))
        else {
            return;
        };
        // When each of the rank's actions starts; the step lands before the first of the
        // others that starts after `to_s`.
        let start: std::collections::HashMap<Action, f64> = shown
            .scene
            .events
            .iter()
            .filter(|e| e.rank == moved.rank)
            .map(|e| (e.action, e.start_s))
            .collect();
        let starts_after = |s: &Step| {
            s.actions()
                .next()
                .and_then(|a| start.get(&a))
                .is_none_or(|&t| t > to_s)
        };
        let to = steps
            .iter()
            .enumerate()
            .filter(|&(i, _)| i != from)
            .map(|(_, s)| s)
            .position(starts_after)
            .unwrap_or(steps.len().saturating_sub(1));
        let edit = Edit::MoveStep {
            orders: (0..d.plan.ranks)
                .map(|r| d.order.steps(r).iter().map(Step::to_string).collect())
                .collect(),
            rank: moved.rank,
            from,
            to,
            owner: d.plan.owner.clone(),
        };
        let name = moved.action.to_string();
        if self.doc.edit(&edit, None) {
            self.changed();
            self.inform(format!("moved {name} on rank {}", moved.rank));
        }
    }

    /// Makes the scenario on screen the tuned one (one undoable edit).
    pub fn use_tuned(&mut self) {
        let Some(t) = self.tuner.current(self.doc.generation()) else {
            return;
        };
        let s = t.scenario.clone();
        let message = format!(
            "the scenario is now the tuned pipeline ({} → {})",
            mpipe::vocab::units::secs(t.start_makespan_s),
            mpipe::vocab::units::secs(t.makespan_s)
        );
        self.edit(&Edit::Replace(Box::new(s)), None);
        self.inform(message);
    }

    /// Takes a finished search; true while one runs.
    fn poll_tuner(&mut self) -> bool {
        let Some(running) = &self.tuner.running else {
            return false;
        };
        let result = match running.job.poll() {
            jobs::Poll::Running => return true,
            jobs::Poll::Done(result) => result,
            jobs::Poll::Lost => Err("the tuner stopped unexpectedly".into()),
        };
        let generation = running.generation;
        self.tuner.running = None;
        match result {
            Ok(t) => {
                self.inform(format!(
                    "tuned{}: {} → {} in {} iterations",
                    if t.stopped { " (stopped)" } else { "" },
                    mpipe::vocab::units::secs(t.start_makespan_s),
                    mpipe::vocab::units::secs(t.makespan_s),
                    t.iterations.len()
                ));
                self.tuner.result = Some((generation, t));
            }
            Err(e) => self.fail(format!("tune: {e}")),
        }
        false
    }

    /// Makes the scenario on screen the given design of itself (one undoable edit).
    pub fn use_design(&mut self, design: mpipe::tune::designs::Design) {
        let Some(scenario) = self.scenario() else {
            return;
        };
        match mpipe::tune::designs::scenario_for(scenario, design) {
            Ok(s) => {
                self.edit(&Edit::Replace(Box::new(s)), None);
                self.inform(format!("the scenario is now its {} design", design.name()));
            }
            Err(e) => self.fail(e),
        }
    }

    /// Takes finished analyses (designs, WaveK sweep, packing); true while one runs.
    fn poll_analyses(&mut self) -> bool {
        use analysis::Finished;
        let finished = [
            ("design comparison", self.designs.poll()),
            ("WaveK sweep", self.wave_sweep.poll()),
            ("packing comparison", self.packing.poll()),
        ];
        for (what, f) in finished {
            match f {
                Some(Finished::Cancelled) => self.inform(format!("{what} cancelled")),
                Some(Finished::Failed(e)) => self.fail(format!("{what}: {e}")),
                Some(Finished::Done) | None => {}
            }
        }
        self.designs.running.is_some()
            || self.wave_sweep.running.is_some()
            || self.packing.running.is_some()
    }

    /// Takes a finished calibration; true while one runs.
    fn poll_calibration(&mut self) -> bool {
        let Some(c) = &self.traces.calibrating else {
            return false;
        };
        let result = match c.job.poll() {
            jobs::Poll::Running => return true,
            jobs::Poll::Done(Some(result)) => result,
            jobs::Poll::Done(None) => {
                self.traces.calibrating = None;
                self.inform("calibration cancelled".into());
                return false;
            }
            jobs::Poll::Lost => Err("the calibration stopped unexpectedly".into()),
        };
        let fitted_generation = c.generation;
        self.traces.calibrating = None;
        match result {
            Ok(c) if fitted_generation == self.doc.generation() => {
                let message = match c.validation() {
                    Some(v) => format!(
                        "calibrated on step {}: {:+.1}% on it, {:+.1}% against the median of the other steps (their spread ±{:.1}%)",
                        c.fit_step,
                        c.fit_residual() * 100.0,
                        v.error * 100.0,
                        v.spread * 100.0
                    ),
                    None => format!(
                        "calibrated on step {}: {:+.1}% on it (no other step to validate on)",
                        c.fit_step,
                        c.fit_residual() * 100.0
                    ),
                };
                if let (Some(m), Some(a)) = (&self.traces.measurement, &self.traces.alignment) {
                    let name = self.scenario().map_or(String::new(), |s| s.name.clone());
                    self.traces.calibration = Some(mpipe::trace::report::CompareTraceReport::new(
                        &name, &c, a, m,
                    ));
                }
                self.edit(&Edit::Replace(Box::new(c.scenario)), None);
                self.inform(message);
            }
            Ok(_) => {
                self.fail("calibration: the scenario changed while it ran; calibrate again".into())
            }
            Err(e) => self.fail(format!("calibration: {e}")),
        }
        false
    }
}
