//! App state and UI: the scenario being edited (with undo/redo), its simulation (from `core`),
//! the last valid simulation kept on screen (dimmed) while an edit is invalid, and the views.
//! The app computes no schedule semantics; everything shown comes from `mpipe`.

use crate::gantt::{GanttOptions, GanttState, gantt};
use crate::history::History;
use crate::samples::{SAMPLES, Sample};
use crate::traces::Traces;
use crate::{editors, stats};
use egui::{Color32, RichText};
use mpipe::Scenario;
use mpipe::simulate::SimOptions;
use mpipe::simulation::{Simulation, simulate_scenario};
use mpipe::trace::calibrate::Calibration;

/// Everything the window shows.
#[derive(Debug)]
pub struct Studio {
    /// Where the scenario came from (sample file name or path).
    pub source: String,
    /// The scenario as edited (possibly invalid).
    pub scenario: Option<Scenario>,
    /// The simulation of `scenario`, or the error that names why there is none.
    pub result: Result<Simulation, String>,
    /// The last valid simulation, shown dimmed while `result` is an error.
    pub last_good: Option<Simulation>,
    pub history: History,
    pub gantt: GanttState,
    /// A pinned simulation to compare against (name, simulation), and its chart's state.
    pub baseline: Option<(String, Simulation)>,
    pub baseline_gantt: GanttState,
    /// Teaching mode: the time cursor, and whether it plays.
    pub cursor: Option<f64>,
    pub playing: bool,
    pub show_help: bool,
    /// An edit made by a drag that is still going on (later frames of it extend that edit).
    gesture_open: bool,
    /// The file the scenario was opened from or last saved to.
    pub path: Option<std::path::PathBuf>,
    /// Recently opened or saved files, newest first.
    pub recent: Vec<String>,
    /// A one-line message about the last file operation.
    pub notice: Option<String>,
    /// Whether `notice` reports a failure (a file that cannot be read, parsed or written).
    pub notice_is_error: bool,
    /// The outcome of a PNG export waiting for its screenshot.
    pub png_pending: Option<std::sync::mpsc::Receiver<String>>,
    /// A simulation running on a worker thread (large scenarios), with its result to come.
    pub pending: Option<std::sync::mpsc::Receiver<Result<Simulation, String>>>,
    /// Imported profiler traces, their rules, alignment and comparison step.
    pub traces: Traces,
    /// A calibration running on a worker thread.
    pub calibrating: Option<std::sync::mpsc::Receiver<Result<Calibration, String>>>,
}

/// Scenarios with more than this many rank × microbatch pairs simulate on a worker thread, so
/// the window never waits on them (P ≤ 16, M ≤ 128 stay within a frame).
pub const FOREGROUND_LIMIT: usize = 16 * 128;

/// Derives and simulates. Errors name the field and rule; with the file's `text` (a scenario
/// just opened) also the line and column there. An edited scenario has no file text of its own,
/// so its errors name the field only.
fn simulate(scenario: &Scenario, source: &str, text: Option<&str>) -> Result<Simulation, String> {
    simulate_scenario(scenario, SimOptions::default()).map_err(|e| match text {
        Some(text) => e.locate(text, source).to_string(),
        None => format!("{source}: field `{}`: {e}", e.field()),
    })
}

impl Default for Studio {
    fn default() -> Self {
        let mut studio = Studio {
            source: String::new(),
            scenario: None,
            result: Err("no scenario".into()),
            last_good: None,
            history: History::default(),
            gantt: GanttState::default(),
            baseline: None,
            baseline_gantt: GanttState::default(),
            cursor: None,
            playing: false,
            show_help: false,
            gesture_open: false,
            path: None,
            recent: Vec::new(),
            notice: None,
            notice_is_error: false,
            png_pending: None,
            pending: None,
            traces: Traces::default(),
            calibrating: None,
        };
        if let Some(sample) = SAMPLES.first() {
            studio.open_sample(sample);
        }
        studio
    }
}

impl Studio {
    /// Loads an embedded sample.
    pub fn open_sample(&mut self, sample: &Sample) {
        self.open_text(sample.json, sample.file);
    }

    /// Loads scenario JSON text; on error the message names the file and position, and the
    /// current scenario stays.
    pub fn open_text(&mut self, text: &str, source: &str) {
        match Scenario::from_json_str(text, source) {
            Ok(scenario) => {
                if let Some(old) = self.scenario.take() {
                    self.history.record(old);
                }
                self.source = source.to_string();
                self.notice = None;
                self.set_from(scenario, Some(text));
                self.gantt = GanttState::default();
            }
            Err(err) => self.fail(err.to_string()),
        }
    }

    /// Reports a file operation that worked.
    pub(crate) fn inform(&mut self, message: String) {
        self.notice = Some(message);
        self.notice_is_error = false;
    }

    /// Reports a file that could not be read, parsed or written; the scenario on screen stays.
    pub(crate) fn fail(&mut self, message: String) {
        self.notice = Some(message);
        self.notice_is_error = true;
    }

    /// Replaces the scenario (no history) and re-simulates.
    fn set(&mut self, scenario: Scenario) {
        self.set_from(scenario, None);
    }

    /// [`Studio::set`], with the file text the scenario was read from, if any.
    fn set_from(&mut self, scenario: Scenario, text: Option<&str>) {
        self.pending = None; // a newer edit supersedes a run still in flight
        if scenario.ranks.saturating_mul(scenario.microbatches) > FOREGROUND_LIMIT {
            let (tx, rx) = std::sync::mpsc::channel();
            let (job, source, text) = (
                scenario.clone(),
                self.source.clone(),
                text.map(str::to_string),
            );
            std::thread::spawn(move || {
                // The receiver may be gone (cancelled or superseded): nothing to do then.
                let _ = tx.send(simulate(&job, &source, text.as_deref()));
            });
            self.pending = Some(rx);
        } else {
            self.accept(simulate(&scenario, &self.source, text));
        }
        self.scenario = Some(scenario);
    }

    fn accept(&mut self, result: Result<Simulation, String>) {
        self.result = result;
        if let Ok(sim) = &self.result {
            self.last_good = Some(sim.clone());
        }
    }

    /// Takes a finished background run, if any; true while one is still running.
    pub fn poll(&mut self) -> bool {
        let Some(rx) = &self.pending else {
            return false;
        };
        match rx.try_recv() {
            Ok(result) => {
                self.pending = None;
                self.accept(result);
                false
            }
            Err(std::sync::mpsc::TryRecvError::Empty) => true,
            Err(std::sync::mpsc::TryRecvError::Disconnected) => {
                self.pending = None;
                self.result = Err("the simulation stopped unexpectedly".into());
                false
            }
        }
    }

    /// Drops the run in flight and steps back to the scenario on screen (redo brings the
    /// cancelled edit back).
    pub fn cancel(&mut self) {
        if self.pending.take().is_some()
            && let Some(current) = self.scenario.clone()
            && let Some(previous) = self.history.undo(current)
        {
            self.scenario = Some(previous);
        }
    }

    /// Applies an edit to the scenario, recording the previous state for undo.
    pub fn edit(&mut self, f: impl FnOnce(&mut Scenario)) {
        self.edit_in_gesture(false, f);
    }

    /// Like [`Studio::edit`]; with `continuing`, the edit extends the previous one (a drag in
    /// progress) and one undo takes back the whole gesture.
    pub fn edit_in_gesture(&mut self, continuing: bool, f: impl FnOnce(&mut Scenario)) {
        let Some(mut next) = self.scenario.clone() else {
            return;
        };
        f(&mut next);
        if Some(&next) == self.scenario.as_ref() {
            return;
        }
        if let Some(old) = self.scenario.take()
            && !continuing
        {
            self.history.record(old);
        }
        self.set(next);
    }

    pub fn undo(&mut self) {
        if let Some(current) = self.scenario.clone()
            && let Some(previous) = self.history.undo(current)
        {
            self.set(previous);
        }
    }

    pub fn redo(&mut self) {
        if let Some(current) = self.scenario.clone()
            && let Some(next) = self.history.redo(current)
        {
            self.set(next);
        }
    }

    /// The simulation on screen: the current one, or the last valid one while the edit is invalid.
    pub fn shown(&self) -> Option<&Simulation> {
        self.result.as_ref().ok().or(self.last_good.as_ref())
    }

    /// Rank `r`'s compute actions as strings, from the simulation on screen.
    pub fn rank_actions(&self, rank: usize) -> Vec<String> {
        self.shown()
            .map(|s| {
                s.derivation
                    .order
                    .actions(rank, s.derivation.plan.ranks)
                    .iter()
                    .map(|a| a.to_string())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Pins the simulation on screen as the baseline to compare edits against.
    pub fn pin_baseline(&mut self) {
        let name = self
            .scenario
            .as_ref()
            .map_or(String::new(), |s| s.name.clone());
        self.baseline = self.shown().cloned().map(|sim| (name, sim));
    }

    /// `baseline makespan / current makespan`, when both exist.
    pub fn speedup(&self) -> Option<f64> {
        let (_, base) = self.baseline.as_ref()?;
        let current = self.result.as_ref().ok()?;
        (current.makespan_s > 0.0).then(|| base.makespan_s / current.makespan_s)
    }

    /// Advances the teaching cursor while playing (one second of the step per second of wall time).
    fn advance(&mut self, ui: &egui::Ui) {
        if !self.playing {
            return;
        }
        let Some(span) = self.shown().map(|s| s.makespan_s) else {
            return;
        };
        let dt = f64::from(ui.input(|i| i.stable_dt)).min(0.1);
        let next = self.cursor.unwrap_or(0.0) + dt * (span / 10.0).max(1e-9);
        if next >= span {
            self.cursor = Some(span);
            self.playing = false;
        } else {
            self.cursor = Some(next);
            ui.ctx().request_repaint();
        }
    }

    /// Draws the whole window into `ui`.
    pub fn show(&mut self, ui: &mut egui::Ui) {
        if let Some(message) = self.png_pending.as_ref().and_then(|rx| rx.try_recv().ok()) {
            if message.contains(": cannot export") {
                self.fail(message);
            } else {
                self.inform(message);
            }
            self.png_pending = None;
        }
        if self.poll() | self.poll_traces() {
            ui.ctx()
                .request_repaint_after(std::time::Duration::from_millis(30));
        }
        self.take_dropped(ui);
        self.advance(ui);
        self.shortcuts(ui);
        egui::Panel::top("top").show(ui, |ui| self.top_bar(ui));
        egui::Panel::left("editors")
            .default_size(360.0)
            .show(ui, |ui| {
                egui::ScrollArea::vertical().show(ui, |ui| self.editors(ui));
            });
        egui::CentralPanel::default().show(ui, |ui| {
            egui::ScrollArea::vertical().show(ui, |ui| self.views(ui));
        });
    }

    fn shortcuts(&mut self, ui: &mut egui::Ui) {
        if ui.input_mut(|i| i.consume_key(egui::Modifiers::NONE, egui::Key::F1)) {
            self.show_help = !self.show_help;
        }
        let (undo, redo) = ui.input_mut(|i| {
            let redo = i.consume_key(
                egui::Modifiers::COMMAND | egui::Modifiers::SHIFT,
                egui::Key::Z,
            ) || i.consume_key(egui::Modifiers::COMMAND, egui::Key::Y);
            let undo = i.consume_key(egui::Modifiers::COMMAND, egui::Key::Z);
            (undo, redo)
        });
        if redo {
            self.redo();
        } else if undo {
            self.undo();
        }
    }

    fn top_bar(&mut self, ui: &mut egui::Ui) {
        ui.horizontal(|ui| {
            ui.heading("Mpipe Studio");
            ui.separator();
            let current = SAMPLES
                .iter()
                .find(|s| s.file == self.source)
                .map_or(self.source.as_str(), |s| s.title);
            let mut chosen = None;
            egui::ComboBox::from_label("Sample")
                .selected_text(current.to_string())
                .width(300.0)
                .show_ui(ui, |ui| {
                    for sample in SAMPLES {
                        if ui
                            .selectable_label(sample.file == self.source, sample.title)
                            .clicked()
                        {
                            chosen = Some(*sample);
                        }
                    }
                });
            if let Some(sample) = chosen {
                self.open_sample(&sample);
                self.path = None;
            }
            ui.separator();
            self.file_buttons(ui);
            ui.separator();
            if ui
                .add_enabled(self.history.can_undo(), egui::Button::new("Undo"))
                .on_hover_text("Ctrl+Z")
                .clicked()
            {
                self.undo();
            }
            if ui
                .add_enabled(self.history.can_redo(), egui::Button::new("Redo"))
                .on_hover_text("Ctrl+Shift+Z or Ctrl+Y")
                .clicked()
            {
                self.redo();
            }
            ui.separator();
            if self.baseline.is_some() {
                if ui.button("Unpin baseline").clicked() {
                    self.baseline = None;
                }
            } else if ui
                .add_enabled(self.shown().is_some(), egui::Button::new("Pin as baseline"))
                .clicked()
            {
                self.pin_baseline();
            }
            let mut teach = self.cursor.is_some();
            if ui.checkbox(&mut teach, "Teach").changed() {
                self.cursor = teach.then_some(0.0);
                self.playing = false;
            }
            if ui.button("Help (F1)").clicked() {
                self.show_help = !self.show_help;
            }
        });
        if self.show_help {
            egui::Window::new("Keyboard and mouse")
                .open(&mut self.show_help)
                .collapsible(false)
                .show(ui.ctx(), |ui| {
                    egui::Grid::new("help").show(ui, |ui| {
                        for (keys, what) in [
                            ("Ctrl+Z", "undo the last edit"),
                            ("Ctrl+Shift+Z, Ctrl+Y", "redo"),
                            ("F1", "this help"),
                            ("wheel, pinch", "zoom the timeline at the pointer"),
                            ("drag", "pan the timeline"),
                            ("shift + drag", "zoom to the dragged box"),
                            ("double-click", "show the whole step"),
                            (
                                "click an event",
                                "select it: its dependencies and the critical path light up",
                            ),
                            ("drop a .json file", "open it as the scenario"),
                        ] {
                            ui.label(RichText::new(keys).monospace());
                            ui.label(what);
                            ui.end_row();
                        }
                    });
                });
        }
    }

    fn editors(&mut self, ui: &mut egui::Ui) {
        let Some(scenario) = &self.scenario else {
            ui.label("No scenario.");
            return;
        };
        ui.label(RichText::new(&scenario.name).strong());
        if !scenario.description.is_empty() {
            ui.label(RichText::new(&scenario.description).small());
        }
        ui.separator();
        let mut draft = scenario.clone();
        let changed = editors::edit(ui, &mut draft);
        // Every frame of a drag (a cut handle, a number) edits; one undo takes the drag back.
        let dragging = ui.ctx().dragged_id().is_some();
        if changed {
            self.edit_in_gesture(self.gesture_open && dragging, |s| *s = draft);
            self.gesture_open = dragging;
        } else if !dragging {
            self.gesture_open = false;
        }
    }

    fn views(&mut self, ui: &mut egui::Ui) {
        if let Some(notice) = &self.notice {
            if self.notice_is_error {
                ui.colored_label(
                    Color32::from_rgb(0xE0, 0x50, 0x50),
                    RichText::new(notice).strong(),
                );
            } else {
                ui.label(RichText::new(notice).small());
            }
        }
        if self.pending.is_some() {
            let mut cancel = false;
            ui.horizontal(|ui| {
                ui.spinner();
                ui.label("Simulating the edited scenario in the background…");
                cancel = ui.button("Cancel").clicked();
            });
            if cancel {
                self.cancel();
            }
        }
        // The normal form, offered as a one-click fix (adjacent transposes merged).
        let fix = self
            .result
            .as_ref()
            .err()
            .and(self.scenario.as_ref())
            .and_then(|s| {
                let layers = s.model.layers.iter().map(|l| l.count).sum();
                mpipe::validity::check_schedule(&s.cut, &s.schedule, layers)
                    .err()
                    .and_then(|e| e.normal_form())
            });
        if let Some((cut, schedule)) = fix {
            let label = format!(
                "Apply the normal form: cut {cut:?}, schedule {}",
                mpipe::skeleton::schedule_to_string(&schedule)
            );
            if ui.button(label).clicked() {
                self.edit(|s| {
                    s.cut = cut;
                    s.schedule = schedule;
                    s.slabs = None;
                });
            }
        }
        if let Err(message) = &self.result {
            ui.colored_label(
                Color32::from_rgb(0xE0, 0x50, 0x50),
                RichText::new(message).strong(),
            );
            if self.last_good.is_some() {
                ui.label(RichText::new("Showing the last valid schedule, dimmed.").small());
            }
        }
        let dimmed = self.result.is_err();
        let speedup = self.speedup();
        let Studio {
            result,
            last_good,
            gantt: gantt_state,
            baseline_gantt,
            baseline,
            cursor,
            playing,
            traces,
            calibrating,
            ..
        } = self;
        let Some(sim) = result.as_ref().ok().or(last_good.as_ref()) else {
            ui.label("No valid schedule to show.");
            return;
        };
        ui.label(RichText::new(stats::summary(sim)).strong());
        ui.label(
            RichText::new("Wheel: zoom · drag: pan · shift-drag: zoom to box · double-click: reset · click: select")
                .small(),
        );
        let span = baseline
            .as_ref()
            .map_or(sim.makespan_s, |(_, b)| b.makespan_s.max(sim.makespan_s));
        if let Some((name, base)) = baseline.as_ref() {
            ui.label(
                RichText::new(format!(
                    "Baseline: {name} — makespan {}{}",
                    mpipe::sim_report::secs(base.makespan_s),
                    speedup.map_or(String::new(), |x| format!(
                        " · speedup of the current schedule: {x:.3}×"
                    ))
                ))
                .strong(),
            );
            baseline_gantt.range = gantt_state.range;
            gantt(
                ui,
                base,
                baseline_gantt,
                GanttOptions {
                    dimmed: true,
                    span: Some(span),
                    cursor: *cursor,
                },
            );
            gantt_state.range = baseline_gantt.range;
            ui.label(RichText::new("Current").strong());
        }
        if let Some(t) = cursor.as_mut() {
            let events = &gantt_state.data(sim).events;
            ui.horizontal(|ui| {
                if ui.button(if *playing { "Pause" } else { "Play" }).clicked() {
                    *playing = !*playing;
                }
                if ui.button("Step").clicked()
                    && let Some(next) = mpipe::sim_report::next_boundary(events, *t)
                {
                    *t = next;
                }
                let name = ui.label("time");
                ui.add(egui::Slider::new(t, 0.0..=sim.makespan_s).suffix(" s"))
                    .labelled_by(name.id);
            });
            for state in mpipe::sim_report::at_time(sim, events, *t) {
                ui.label(format!(
                    "rank {}: {} · holds {}",
                    state.rank,
                    state
                        .running
                        .as_ref()
                        .map_or("idle".to_string(), |e| format!(
                            "{} ({} of microbatch {})",
                            e.action,
                            if e.backward { "backward" } else { "forward" },
                            e.mb
                        )),
                    mpipe::sim_report::bytes(state.memory_bytes)
                ));
            }
        }
        gantt(
            ui,
            sim,
            gantt_state,
            GanttOptions {
                dimmed,
                span: Some(span),
                cursor: *cursor,
            },
        );
        ui.add_space(6.0);
        let calibrate = crate::trace_view::trace_panel(
            ui,
            sim,
            traces,
            gantt_state,
            calibrating.is_some(),
            !dimmed,
        );
        ui.add_space(6.0);
        ui.label(RichText::new("Memory per rank").strong());
        if let Some(range) = stats::memory_plot(ui, sim, gantt_state.range) {
            gantt_state.range = Some(range);
        }
        ui.add_space(6.0);
        ui.label(RichText::new("Per rank").strong());
        stats::rank_table(ui, sim);
        ui.add_space(6.0);
        ui.label(RichText::new("Collectives").strong());
        for line in mpipe::report::collectives_in_words(&sim.derivation.collectives) {
            ui.label(line);
        }
        if calibrate {
            self.start_calibration();
        }
    }
}
