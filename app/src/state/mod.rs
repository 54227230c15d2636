//! App state: the document (scenario, undo history, where it lives), what is derived from it
//! (keyed by the document's generation), the view, pinned baselines, imported traces, background
//! jobs and the notice line. Panels (`crate::panels`) draw it and return commands
//! (`crate::command`); `crate::apply` carries them out, the one place a user's action changes it
//! (the frame loop, `crate::frame`, also takes in finished background work and where the charts
//! were drawn). The app computes no schedule semantics; everything shown comes from `mpipe`.

pub mod analysis;
#[cfg(target_arch = "wasm32")]
pub mod browser;
pub mod derived;
pub mod dialog;
pub mod document;
pub mod files;
pub mod history;
pub mod io;
pub mod jobs;
pub mod png_export;
pub mod traces;
pub mod tuner;
pub mod view;

use crate::samples::SAMPLES;
use analysis::Analyses;
use derived::{Derived, Shown};
use document::Document;
use io::Io;
use mpipe::Scenario;
use mpipe::scenario::edit::{Edit, Remedy};
use mpipe::vocab::action::{Action, Step};
use mpipe::vocab::units::{escape_controls, secs};
use std::sync::Arc;
use traces::Traces;
use view::View;

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

impl Notice {
    /// Something that worked. Control characters from a file are written out, never drawn.
    pub fn info(text: String) -> Notice {
        Notice {
            text: escape_controls(&text).into_owned(),
            is_error: false,
        }
    }

    /// Something that failed (a file that cannot be read, parsed or written; a job).
    pub fn error(text: String) -> Notice {
        Notice {
            is_error: true,
            ..Notice::info(text)
        }
    }
}

/// Everything the window shows, in sub-states that each own their part and its methods: the
/// document, what is derived from it, the view, the pinned baselines, the traces, the analyses
/// and the files (Recent, the dialog, exports, files given on the command line).
#[derive(Debug)]
pub struct Studio {
    pub doc: Document,
    pub derived: Derived,
    pub view: View,
    pub baselines: Vec<Baseline>,
    pub traces: Traces,
    pub analyses: Analyses,
    pub io: Io,
    pub notice: Option<Notice>,
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
            analyses: Analyses::default(),
            io: Io::default(),
            notice: None,
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
        self.view.selected_in(self.shown()?)
    }

    /// Reports a file operation or job that worked.
    pub fn inform(&mut self, text: String) {
        self.notice = Some(Notice::info(text));
    }

    /// Reports a file that could not be read, parsed or written, or a job that failed; the
    /// scenario on screen stays.
    pub fn fail(&mut self, text: String) {
        self.notice = Some(Notice::error(text));
    }

    /// Reports `result`: what worked, or what failed.
    pub fn report(&mut self, result: Result<String, String>) {
        match result {
            Ok(text) => self.inform(text),
            Err(text) => self.fail(text),
        }
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
        self.baselines.push(Baseline {
            name: format!("{letter}: {}", shown.title),
            shown,
        });
    }

    /// What the window shows, in one line of JSON: the document's source, the chart's title, its
    /// step time and event count, the invalid state's message, the notice, and the progress of
    /// a simulation running as a job (`null` when none runs). The web build
    /// publishes it on the page (`data-state` of the canvas) for scripts that drive the page.
    pub fn state_line(&self) -> String {
        let shown = self.shown();
        let invalid = self.derived.result().err().map(|i| i.message.as_str());
        serde_json::json!({
            "source": self.source(),
            "title": shown.map(|s| s.title.as_str()),
            "makespan_s": shown.map(|s| s.sim.makespan_s),
            "events": shown.map(|s| s.sim.derivation.order.graph.node_count()),
            "invalid": invalid,
            "notice": self.notice.as_ref().map(|n| n.text.as_str()),
            "notice_is_error": self.notice.as_ref().is_some_and(|n| n.is_error),
            "simulating": self.derived.running().map(|job| job.progress()),
        })
        .to_string()
    }

    /// Takes finished background work; true while some is still running.
    pub fn poll(&mut self) -> bool {
        #[cfg(target_arch = "wasm32")]
        {
            for batch in browser::take_arrived() {
                self.open_dropped_bytes(batch);
            }
            self.follow_address();
        }
        let exporting = self.poll_png();
        let simulating = self.derived.poll(!self.doc.in_gesture());
        if let Some(result) = self.traces.poll_import() {
            self.report(result);
        }
        let calibrating = self.poll_calibration();
        let ranking = self.poll_ranking();
        let (analysing, said) = self.analyses.poll();
        if let Some(last) = said.into_iter().last() {
            self.notice = Some(last);
        }
        let opening = self.poll_given();
        simulating
            || calibrating
            || ranking
            || analysing
            || opening
            || exporting
            || self.traces.import.is_some()
            || self.derived.stopping() > 0
    }

    /// Starts `start` on the scenario on screen (an analysis on a worker), saying why it could
    /// not start.
    pub fn start_analysis(
        &mut self,
        start: fn(&mut Analyses, &Scenario, u64) -> Result<(), String>,
    ) {
        let Some(scenario) = self.doc.scenario() else {
            return;
        };
        if let Err(e) = start(&mut self.analyses, scenario, self.doc.generation()) {
            self.fail(e);
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
        let steps = d.order.steps(moved.rank.index());
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
            orders: d.order.written(d.plan.ranks),
            rank: moved.rank.index(),
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
        let Some(t) = self.analyses.tuner.current(self.doc.generation()) else {
            return;
        };
        let s = t.scenario.clone();
        let message = format!(
            "the scenario is now the tuned pipeline ({} → {})",
            secs(t.start_makespan_s),
            secs(t.makespan_s)
        );
        self.edit(&Edit::Replace(Box::new(s)), None);
        self.inform(message);
    }

    /// Makes the scenario the one fitted under the device's capacity, when the fit on screen is
    /// the current document's and something fits (one undoable edit).
    pub fn use_fit(&mut self) {
        let Some(fit) = self.analyses.fit.current(self.doc.generation()) else {
            return;
        };
        let (Some(s), Some(after)) = (fit.scenario.clone(), fit.after.as_ref()) else {
            return;
        };
        let said = format!(
            "the scenario is now fitted under {} (step {})",
            mpipe::vocab::units::bytes(fit.cap_bytes),
            mpipe::vocab::units::secs(after.makespan_s)
        );
        self.edit(&Edit::Replace(Box::new(s)), None);
        self.inform(said);
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
}
