//! Every user action as a [`Command`]: panels and shortcuts produce commands, and one
//! [`Command::apply`] carries them out on the [`Studio`]. Scenario edits go through the
//! document (and so through undo); view commands never touch the document. The keyboard
//! shortcuts live in one table, [`SHORTCUTS`], that a test checks for clashes.

use crate::samples::Sample;
use crate::state::Studio;
use crate::state::traces::TraceSource;
use egui::{Key, KeyboardShortcut, Modifiers};
use mpipe::scenario::edit::Edit;
use std::path::PathBuf;

/// What a file dialog is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilePurpose {
    OpenScenario,
    SaveScenario,
    ExportSvg,
    ExportPng,
    OpenTraces,
}

/// One thing the user asked for.
#[derive(Debug, Clone)]
pub enum Command {
    /// Changes the scenario; `gesture` names the widget being dragged or typed into, so one
    /// drag or one name typed is one undo step.
    Edit {
        edit: Edit,
        gesture: Option<egui::Id>,
    },
    /// The drag that was editing has ended.
    EndGesture,
    Undo,
    Redo,
    OpenSample(&'static Sample),
    OpenPath(PathBuf),
    /// Save to the document's file, or ask where when it has none.
    Save,
    SaveTo(PathBuf),
    ExportSvg(PathBuf),
    ExportPng(PathBuf),
    /// Opens the in-app file dialog.
    ShowFileDialog(FilePurpose),
    /// Files dropped on the window (traces and a scenario).
    Dropped(Vec<egui::DroppedFileHandle>),
    /// Stops the background simulation and steps back to the scenario on screen.
    CancelSimulation,
    OpenTraces(Vec<TraceSource>),
    CancelImport,
    ClearTraces,
    TraceStep(usize),
    /// Sets (`Some`) or clears the rank of a trace file.
    TraceFileRank {
        file: usize,
        rank: Option<usize>,
    },
    RulesText(String),
    ApplyRules,
    BuiltInRules,
    Calibrate,
    CancelCalibration,
    /// Compares BigMac's three designs of the scenario.
    CompareDesigns,
    CancelDesigns,
    /// Makes the scenario the given design of itself.
    UseDesign(mpipe::tune::designs::Design),
    /// Sweeps WaveK's unit size k of the (second-order) scenario.
    SweepWaveK,
    CancelWaveSweep,
    /// Runs the scenario as `wavek` with unit size k (one undoable edit).
    UseWaveK(usize),
    /// Simulates the scenario's graphs packed sequentially and by GARS.
    ComparePacking,
    CancelPacking,
    /// Packs the scenario's graphs this way (one undoable edit).
    UsePacking(mpipe::workload::gars::Packing),
    /// Moves event `event` (an index into the shown scene's events) in its rank's order to the
    /// place its lane has at time `to_s`: the orders become hand-written ones.
    Reorder {
        event: usize,
        to_s: f64,
    },
    /// Runs OctoPipe's tuner on the scenario.
    StartTuner,
    /// Stops the tuner, keeping the best pipeline it found so far.
    StopTuner,
    /// Makes the scenario the tuned pipeline.
    UseTuned,
    /// Pins the simulation on screen as a baseline to compare against.
    PinBaseline,
    Unpin(usize),
    UnpinAll,
    /// The visible time range (`None`: the whole step).
    Range(Option<(f64, f64)>),
    ZoomIn,
    ZoomOut,
    PanLeft,
    PanRight,
    /// Selects an event of the simulation on screen (`None` clears).
    Select(Option<usize>),
    /// Zooms to the selection (or the whole step without one).
    FitSelection,
    FitAll,
    LaneHeight(f32),
    ToggleSearch,
    CloseSearch,
    SearchText(String),
    /// Goes to the next search match.
    NextMatch,
    ToggleTeach,
    Cursor(f64),
    StepForward,
    StepBack,
    TogglePlay,
    Speed(f64),
    ToggleHelp,
    ToggleLegend,
    MemoryFromZero(bool),
}

/// A command a key can give (those without data).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyCommand {
    Undo,
    Redo,
    Save,
    Open,
    Search,
    Help,
    ZoomIn,
    ZoomOut,
    PanLeft,
    PanRight,
    Fit,
    Escape,
    Play,
    StepForward,
    StepBack,
}

impl KeyCommand {
    /// The command the key gives.
    pub fn command(self) -> Command {
        match self {
            KeyCommand::Undo => Command::Undo,
            KeyCommand::Redo => Command::Redo,
            KeyCommand::Save => Command::Save,
            KeyCommand::Open => Command::ShowFileDialog(FilePurpose::OpenScenario),
            KeyCommand::Search => Command::ToggleSearch,
            KeyCommand::Help => Command::ToggleHelp,
            KeyCommand::ZoomIn => Command::ZoomIn,
            KeyCommand::ZoomOut => Command::ZoomOut,
            KeyCommand::PanLeft => Command::PanLeft,
            KeyCommand::PanRight => Command::PanRight,
            KeyCommand::Fit => Command::FitSelection,
            KeyCommand::Escape => Command::Select(None),
            KeyCommand::Play => Command::TogglePlay,
            KeyCommand::StepForward => Command::StepForward,
            KeyCommand::StepBack => Command::StepBack,
        }
    }

    /// Whether the key works while a text field has the keyboard (plain letters must not).
    fn works_while_typing(self) -> bool {
        matches!(
            self,
            KeyCommand::Undo
                | KeyCommand::Redo
                | KeyCommand::Save
                | KeyCommand::Open
                | KeyCommand::Search
                | KeyCommand::Help
        )
    }
}

const fn key(modifiers: Modifiers, key: Key) -> KeyboardShortcut {
    KeyboardShortcut::new(modifiers, key)
}

/// Every keyboard shortcut: the keys, what they do, and the words the help shows. Longer chords
/// come first, so Ctrl+Shift+Z is not read as Ctrl+Z. W/S zoom and A/D pan as in Perfetto.
pub const SHORTCUTS: &[(KeyboardShortcut, KeyCommand, &str)] = &[
    (
        key(Modifiers::COMMAND.plus(Modifiers::SHIFT), Key::Z),
        KeyCommand::Redo,
        "redo",
    ),
    (key(Modifiers::COMMAND, Key::Y), KeyCommand::Redo, "redo"),
    (
        key(Modifiers::COMMAND, Key::Z),
        KeyCommand::Undo,
        "undo the last edit",
    ),
    (
        key(Modifiers::COMMAND, Key::S),
        KeyCommand::Save,
        "save (atomic)",
    ),
    (
        key(Modifiers::COMMAND, Key::O),
        KeyCommand::Open,
        "open a scenario",
    ),
    (
        key(Modifiers::COMMAND, Key::F),
        KeyCommand::Search,
        "search events: 4F0, mb 7, stage 4, rank 2, F, B",
    ),
    (key(Modifiers::NONE, Key::F1), KeyCommand::Help, "this help"),
    (key(Modifiers::NONE, Key::W), KeyCommand::ZoomIn, "zoom in"),
    (
        key(Modifiers::NONE, Key::S),
        KeyCommand::ZoomOut,
        "zoom out",
    ),
    (
        key(Modifiers::NONE, Key::A),
        KeyCommand::PanLeft,
        "pan left",
    ),
    (
        key(Modifiers::NONE, Key::D),
        KeyCommand::PanRight,
        "pan right",
    ),
    (
        key(Modifiers::NONE, Key::ArrowUp),
        KeyCommand::ZoomIn,
        "zoom in",
    ),
    (
        key(Modifiers::NONE, Key::ArrowDown),
        KeyCommand::ZoomOut,
        "zoom out",
    ),
    (
        key(Modifiers::NONE, Key::ArrowLeft),
        KeyCommand::PanLeft,
        "pan left",
    ),
    (
        key(Modifiers::NONE, Key::ArrowRight),
        KeyCommand::PanRight,
        "pan right",
    ),
    (
        key(Modifiers::NONE, Key::F),
        KeyCommand::Fit,
        "fit the selection (the whole step without one)",
    ),
    (
        key(Modifiers::NONE, Key::Escape),
        KeyCommand::Escape,
        "clear the selection",
    ),
    (
        key(Modifiers::NONE, Key::Space),
        KeyCommand::Play,
        "teaching: play or pause",
    ),
    (
        key(Modifiers::NONE, Key::Period),
        KeyCommand::StepForward,
        "teaching: step forward",
    ),
    (
        key(Modifiers::NONE, Key::Comma),
        KeyCommand::StepBack,
        "teaching: step back",
    ),
];

/// The commands the keys pressed this frame give. Plain keys are left to a text field that has
/// the keyboard.
pub fn shortcuts(ctx: &egui::Context) -> Vec<Command> {
    let typing = ctx.text_edit_focused();
    ctx.input_mut(|i| {
        SHORTCUTS
            .iter()
            .filter(|(_, k, _)| !typing || k.works_while_typing())
            .filter(|(shortcut, _, _)| i.consume_shortcut(shortcut))
            .map(|(_, k, _)| k.command())
            .collect()
    })
}

/// How a shortcut reads in the help (`Ctrl+Shift+Z`).
pub fn describe(shortcut: &KeyboardShortcut) -> String {
    let mut parts = Vec::new();
    if shortcut.modifiers.command || shortcut.modifiers.ctrl {
        parts.push("Ctrl".to_string());
    }
    if shortcut.modifiers.shift {
        parts.push("Shift".to_string());
    }
    if shortcut.modifiers.alt {
        parts.push("Alt".to_string());
    }
    parts.push(match shortcut.logical_key {
        Key::Period => ".".to_string(),
        Key::Comma => ",".to_string(),
        Key::ArrowUp => "↑".to_string(),
        Key::ArrowDown => "↓".to_string(),
        Key::ArrowLeft => "←".to_string(),
        Key::ArrowRight => "→".to_string(),
        k => k.name().to_string(),
    });
    parts.join("+")
}

impl Command {
    /// Carries the command out. `ctx` is the window's (PNG export asks it for a screenshot).
    pub fn apply(self, studio: &mut Studio, ctx: Option<&egui::Context>) {
        let span = studio.span();
        match self {
            Command::Edit { edit, gesture } => studio.edit(&edit, gesture),
            Command::EndGesture => studio.end_gesture(),
            Command::Undo => studio.undo(),
            Command::Redo => studio.redo(),
            Command::OpenSample(sample) => studio.open_sample(sample),
            Command::OpenPath(path) => studio.open_path(&path),
            Command::Save => match studio.doc.path().map(std::path::Path::to_path_buf) {
                Some(path) => studio.save_to(&path),
                None => studio.show_dialog(FilePurpose::SaveScenario),
            },
            Command::SaveTo(path) => studio.save_to(&path),
            Command::ExportSvg(path) => studio.export_svg(&path),
            Command::ExportPng(path) => match ctx {
                Some(ctx) => studio.export_png(ctx, path),
                None => studio.fail("PNG export needs the window".into()),
            },
            Command::ShowFileDialog(purpose) => studio.show_dialog(purpose),
            Command::Dropped(files) => studio.open_dropped(&files),
            Command::CancelSimulation => studio.cancel_simulation(),
            Command::OpenTraces(sources) => studio.open_traces(sources),
            Command::CancelImport => studio.traces.cancel_import(),
            Command::ClearTraces => studio.traces.clear(),
            Command::TraceStep(step) => studio.traces.step = step,
            Command::TraceFileRank { file, rank } => studio.traces.set_rank(file, rank),
            Command::RulesText(text) => studio.traces.rules_text = text,
            Command::ApplyRules => studio.traces.apply_rules_text(),
            Command::BuiltInRules => {
                studio.traces.rules_text =
                    serde_json::to_string_pretty(&mpipe::trace::RuleSet::default())
                        .unwrap_or_default();
                studio.traces.apply_rules_text();
            }
            Command::Calibrate => studio.start_calibration(),
            Command::CompareDesigns => studio.start_designs(),
            Command::CancelDesigns => studio.designs.cancel(),
            Command::SweepWaveK => studio.start_wave_sweep(),
            Command::CancelWaveSweep => studio.wave_sweep.cancel(),
            Command::UseWaveK(k) => {
                studio.edit(&Edit::WaveK(Some(k)), None);
                studio.inform(format!("the scenario now runs wavek with k = {k}"));
            }
            Command::ComparePacking => studio.start_packing(),
            Command::CancelPacking => studio.packing.cancel(),
            Command::UsePacking(packing) => {
                studio.edit(&Edit::Packing(packing), None);
                studio.inform(format!("the graphs are now packed by {}", packing.name()));
            }
            Command::UseDesign(design) => studio.use_design(design),
            Command::StartTuner => studio.start_tuner(),
            Command::Reorder { event, to_s } => studio.reorder(event, to_s),
            Command::StopTuner => {
                if let Some(r) = &studio.tuner.running {
                    r.job.cancel();
                }
            }
            Command::UseTuned => studio.use_tuned(),
            Command::CancelCalibration => {
                if let Some(c) = &studio.traces.calibrating {
                    c.job.cancel();
                }
            }
            Command::PinBaseline => studio.pin_baseline(),
            Command::Unpin(i) => {
                if i < studio.baselines.len() {
                    studio.baselines.remove(i);
                }
            }
            Command::UnpinAll => studio.baselines.clear(),
            Command::Range(range) => match range {
                Some((t0, t1)) => studio.view.set_range(t0, t1, span),
                None => studio.view.range = None,
            },
            Command::ZoomIn => studio.view.zoom(1.25, span),
            Command::ZoomOut => studio.view.zoom(0.8, span),
            Command::PanLeft => studio.view.pan(-0.1, span),
            Command::PanRight => studio.view.pan(0.1, span),
            Command::Select(event) => studio.select(event),
            Command::FitSelection => studio.fit_selection(),
            Command::FitAll => studio.view.range = None,
            Command::LaneHeight(h) => {
                studio.view.lane_height = h.clamp(
                    *crate::state::view::LANE_HEIGHTS.start(),
                    *crate::state::view::LANE_HEIGHTS.end(),
                );
            }
            Command::ToggleSearch => studio.view.search.open = !studio.view.search.open,
            Command::CloseSearch => studio.view.search.open = false,
            Command::SearchText(text) => {
                studio.view.search.text = text;
                studio.view.search.current = 0;
            }
            Command::NextMatch => studio.next_match(),
            Command::ToggleTeach => {
                studio.view.teach = match studio.view.teach {
                    Some(_) => None,
                    None => Some(Default::default()),
                };
            }
            Command::Cursor(t) => {
                let end = studio.current_makespan();
                if let Some(teach) = studio.view.teach.as_mut() {
                    teach.t = t.clamp(0.0, end);
                }
            }
            Command::StepForward => studio.step_cursor(true),
            Command::StepBack => studio.step_cursor(false),
            Command::TogglePlay => {
                if let Some(teach) = studio.view.teach.as_mut() {
                    teach.playing = !teach.playing;
                }
            }
            Command::Speed(speed) => {
                if let Some(teach) = studio.view.teach.as_mut() {
                    teach.speed = speed;
                }
            }
            Command::ToggleHelp => studio.view.show_help = !studio.view.show_help,
            Command::ToggleLegend => studio.view.show_legend = !studio.view.show_legend,
            Command::MemoryFromZero(z) => studio.view.memory_from_zero = z,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_two_shortcuts_share_a_key() {
        for (i, (a, _, _)) in SHORTCUTS.iter().enumerate() {
            for (b, _, _) in SHORTCUTS.iter().skip(i + 1) {
                assert!(
                    !(a.logical_key == b.logical_key && a.modifiers == b.modifiers),
                    "{} is bound twice",
                    describe(a)
                );
            }
        }
        assert_eq!(describe(&SHORTCUTS[0].0), "Ctrl+Shift+Z");
    }
}
