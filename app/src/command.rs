//! Every user action as a [`Command`]: panels and shortcuts produce commands, and one
//! `Command::apply` ([`crate::apply`]) carries them out on the [`crate::state::Studio`]. Scenario
//! edits go through the document (and so through undo); view commands never touch the
//! document. The keyboard shortcuts live in one table, [`SHORTCUTS`], that a test checks for
//! clashes.

use crate::samples::Sample;
use crate::state::dialog::{Chosen, DialogAction, FilePurpose};
use crate::state::traces::TraceSource;
use egui::{Key, KeyboardShortcut, Modifiers};
use mpipe::scenario::edit::Edit;
use std::path::PathBuf;

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
    /// Something done in the open file dialog (typing, walking, choosing, confirming).
    Dialog(DialogAction),
    /// Files dropped on the window (traces and a scenario).
    Dropped(Vec<egui::DroppedFileHandle>),
    /// Stops the background simulation and steps back to the scenario on screen.
    CancelSimulation,
    /// Stop reading the files being opened.
    CancelOpening,
    OpenTraces(Vec<TraceSource>),
    CancelImport,
    ClearTraces,
    TraceStep(usize),
    /// Fit the next calibration on every step of the run (`--fit-step all`), or on the step shown.
    TraceFitEveryStep(bool),
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
    /// After a calibration: predict every registered schedule with the fitted costs, ranked.
    RankSchedules,
    CancelRanking,
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
    /// Fits the scenario under the device's capacity by offload and recomputation per stage.
    FitMemory,
    CancelFit,
    /// Makes the scenario the fitted one (one undoable edit).
    UseFit,
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
    /// Whether the tuner's scheduling phase makes OctoPipe's own move only (the paper's
    /// Algorithm 1), not every other schedule of the registry too.
    TunerOwnMovesOnly(bool),
    /// Stops the tuner, keeping the best pipeline it found so far.
    StopTuner,
    /// Makes the scenario the tuned pipeline.
    UseTuned,
    /// Pins the simulation on screen as a baseline to compare against.
    PinBaseline,
    /// Copies a link that carries the scenario (in the web build, the page's whole address).
    ShareLink,
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
    /// Expands a collapsed lane group, or collapses an expanded one.
    ToggleLaneGroup(usize),
    /// Every lane group expanded (`true`) or collapsed.
    AllLaneGroups(bool),
    ToggleSearch,
    /// The search field has taken the keyboard.
    SearchFocused,
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

/// A confirmed file dialog: open, save or export what it names.
impl From<Chosen> for Command {
    fn from(chosen: Chosen) -> Self {
        match chosen {
            Chosen::Scenario(path) => Command::OpenPath(path),
            Chosen::SaveAs(path) => Command::SaveTo(path),
            Chosen::Svg(path) => Command::ExportSvg(path),
            Chosen::Png(path) => Command::ExportPng(path),
            Chosen::Traces(sources) => Command::OpenTraces(sources),
        }
    }
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
