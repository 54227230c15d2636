//! Carrying a command out: the one place where what the user asked for changes the
//! [`Studio`] — scenario edits through the document (and so through undo), the rest on the view,
//! the traces, the analyses and the files.

use crate::command::Command;
use crate::state::Studio;
use crate::state::analysis::Analyses;
use crate::state::dialog::{DialogResult, FilePurpose};
use mpipe::scenario::edit::Edit;
use mpipe::schedules::skeleton::schedule_to_string;
use mpipe::vocab::parameter::Parameter;

impl Studio {
    /// Carries out `command` (outside a frame: no window for PNG export).
    pub fn apply(&mut self, command: Command) {
        command.apply(self, None);
    }
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
                None => Command::ShowFileDialog(FilePurpose::SaveScenario).apply(studio, ctx),
            },
            Command::SaveTo(path) => studio.save_to(&path),
            Command::ExportSvg(path) => studio.export_svg(&path),
            Command::ExportPng(path) => match ctx {
                Some(ctx) => studio.export_png(ctx, path),
                None => studio.fail("PNG export needs the window".into()),
            },
            #[cfg(not(target_arch = "wasm32"))]
            Command::ShowFileDialog(purpose) => studio.show_dialog(purpose),
            // The browser's chooser, or a download.
            #[cfg(target_arch = "wasm32")]
            Command::ShowFileDialog(purpose) => {
                if let Some(chosen) = studio.browser_chosen(purpose) {
                    Command::from(chosen).apply(studio, ctx);
                }
            }
            Command::Dialog(action) => {
                let Some(dialog) = studio.io.dialog.as_mut() else {
                    return;
                };
                match dialog.act(action) {
                    DialogResult::Open => {}
                    DialogResult::Cancelled => studio.io.dialog = None,
                    DialogResult::Chosen(chosen) => {
                        studio.io.folder = studio.io.dialog.take().map(|d| d.dir);
                        Command::from(chosen).apply(studio, ctx);
                    }
                }
            }
            Command::Dropped(files) => studio.open_dropped(&files),
            Command::CancelSimulation => studio.cancel_simulation(),
            Command::CancelOpening => studio.cancel_opening(),
            Command::OpenTraces(sources) => studio.open_traces(sources),
            Command::CancelImport => studio.traces.cancel_import(),
            Command::ClearTraces => studio.traces.clear(),
            Command::TraceStep(step) => studio.traces.step = step,
            Command::TraceFitEveryStep(every) => studio.traces.every_step = every,
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
            Command::CompareDesigns => studio.start_analysis(Analyses::start_designs),
            Command::CancelDesigns => studio.analyses.designs.cancel(),
            Command::FitMemory => studio.start_analysis(Analyses::start_fit),
            Command::CancelFit => studio.analyses.fit.cancel(),
            Command::UseFit => studio.use_fit(),
            Command::SweepWaveK => studio.start_analysis(Analyses::start_wave_sweep),
            Command::CancelWaveSweep => studio.analyses.wave_sweep.cancel(),
            Command::UseWaveK(k) => {
                studio.edit(&Edit::parameter(Parameter::WaveK, Some(k)), None);
                let runs = studio
                    .scenario()
                    .map(|s| schedule_to_string(&s.schedule))
                    .unwrap_or_default();
                studio.inform(format!("the scenario now runs {runs} with k = {k}"));
            }
            Command::ComparePacking => studio.start_analysis(Analyses::start_packing),
            Command::CancelPacking => studio.analyses.packing.cancel(),
            Command::UsePacking(packing) => {
                studio.edit(&Edit::Packing(packing), None);
                studio.inform(format!("the graphs are now packed by {}", packing.name()));
            }
            Command::UseDesign(design) => studio.use_design(design),
            Command::StartTuner => studio.start_analysis(Analyses::start_tuner),
            Command::TunerOwnMovesOnly(only) => studio.analyses.tuner.own_moves_only = only,
            Command::Reorder { event, to_s } => studio.reorder(event, to_s),
            Command::StopTuner => {
                if let Some(r) = &studio.analyses.tuner.running {
                    r.job.cancel();
                }
            }
            Command::UseTuned => studio.use_tuned(),
            Command::CancelCalibration => {
                if let Some(c) = &studio.traces.calibrating {
                    c.job.cancel();
                }
            }
            Command::RankSchedules => studio.start_ranking(),
            Command::CancelRanking => {
                if let Some(r) = &studio.traces.ranking {
                    r.job.cancel();
                }
            }
            Command::PinBaseline => studio.pin_baseline(),
            Command::ShareLink => match ctx {
                Some(ctx) => studio.share_link(ctx),
                None => studio.fail("sharing needs the window (its clipboard)".into()),
            },
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
            Command::Select(event) => {
                let shown = studio.shown().cloned();
                studio.view.select(shown.as_deref(), event);
            }
            Command::FitSelection => {
                let shown = studio.shown().cloned();
                studio.view.fit_selection(shown.as_deref(), span);
            }
            Command::FitAll => studio.view.range = None,
            Command::ToggleLaneGroup(group) => {
                if !studio.view.expanded_groups.remove(&group) {
                    studio.view.expanded_groups.insert(group);
                }
            }
            Command::AllLaneGroups(expand) => {
                let groups =
                    crate::geometry::Rows::groups(studio.shown().map_or(0, |s| s.scene.ranks));
                studio.view.expanded_groups = if expand {
                    (0..groups).collect()
                } else {
                    std::collections::BTreeSet::new()
                };
            }
            Command::LaneHeight(h) => {
                studio.view.lane_height = h.clamp(
                    *crate::state::view::LANE_HEIGHTS.start(),
                    *crate::state::view::LANE_HEIGHTS.end(),
                );
            }
            Command::ToggleSearch => {
                let search = &mut studio.view.search;
                search.open = !search.open;
                search.focus = search.open;
            }
            Command::SearchFocused => studio.view.search.focus = false,
            Command::CloseSearch => studio.view.search.open = false,
            Command::SearchText(text) => {
                studio.view.search.text = text;
                studio.view.search.current = 0;
            }
            Command::NextMatch => {
                if let Some(shown) = studio.shown().cloned() {
                    studio.view.next_match(&shown, span);
                }
            }
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
            Command::StepForward | Command::StepBack => {
                if let Some(shown) = studio.shown().cloned() {
                    studio
                        .view
                        .step_cursor(&shown, matches!(self, Command::StepForward));
                }
            }
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
