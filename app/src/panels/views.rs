//! The central panel: the notice line, a background run's progress, what is wrong with an
//! invalid edit (with one-click fixes where `core` knows one), the summary, the legend, search,
//! teaching, the pinned baselines and the current timeline on one time axis, the selection,
//! the comparison tables, measured traces, memory, the per-rank table and the collectives.

use super::{Drawn, compare, memory, selection, stats, teach, traces};
use crate::command::Command;
use crate::state::Studio;
use crate::state::derived::Shown;
use crate::state::view::LANE_HEIGHTS;
use crate::timeline::{ChartInput, chart_ui, legend};
use egui::{Color32, RichText, Ui};

const RED: Color32 = Color32::from_rgb(0xE0, 0x50, 0x50);

/// The notice, a running simulation, and an invalid edit's message and fixes.
fn status_ui(ui: &mut Ui, studio: &Studio, out: &mut Vec<Command>) {
    if let Some(notice) = &studio.notice {
        if notice.is_error {
            ui.colored_label(RED, RichText::new(&notice.text).strong());
        } else {
            ui.label(RichText::new(&notice.text).small());
        }
    }
    if let Some(job) = &studio.io.opening {
        ui.horizontal(|ui| {
            ui.spinner();
            ui.add(egui::ProgressBar::new(job.progress()).desired_width(160.0));
            ui.label("Reading the file(s) to open…");
            if ui.button("Cancel").clicked() {
                out.push(Command::CancelOpening);
            }
        });
    }
    if let Some(job) = studio.derived.running() {
        ui.horizontal(|ui| {
            ui.spinner();
            ui.add(egui::ProgressBar::new(job.progress()).desired_width(160.0));
            ui.label("Simulating the edited scenario in the background…");
            if ui.button("Cancel").clicked() {
                out.push(Command::CancelSimulation);
            }
        });
    } else if studio.derived.stopping() > 0 {
        ui.horizontal(|ui| {
            ui.spinner();
            ui.label(RichText::new("stopping the cancelled simulation…").small());
        });
    }
    let Some(message) = studio.error() else {
        return;
    };
    ui.colored_label(RED, RichText::new(message).strong());
    // A deadlock: its cycle is drawn on the last valid chart; the reordering that removes it is
    // one click away.
    if let Some(deadlock) = studio.deadlock() {
        ui.label(
            RichText::new(format!(
                "The wait-for cycle is outlined on the chart below (the last valid schedule), each arrow from what an event waits for. Proposed: {}.",
                deadlock.fix.summary()
            ))
            .small(),
        );
    }
    // The fix the error carries: the normal form, one rank a layer, the proposed order.
    if let Some(remedy) = studio.remedy()
        && ui.button(&remedy.label).clicked()
    {
        out.push(Command::Edit {
            edit: remedy.edit.clone(),
            gesture: None,
        });
    }
    if studio.derived.last_good().is_some() {
        ui.label(RichText::new("Showing the last valid schedule, dimmed.").small());
    }
}

/// The row above the timeline: the gestures, lane height, legend and search switches.
fn chart_header_ui(ui: &mut Ui, studio: &Studio, out: &mut Vec<Command>) {
    // The hint on its own wrapped line, the controls on a row under it (in one wrapped row the
    // slider after a long hint overran a narrow panel, and every chart under it with it).
    ui.label(
        RichText::new(
            "Wheel, W/S: zoom · drag, A/D: pan · shift-drag: zoom to box · ctrl-drag an event: move it in its rank's order · double-click: whole step · click: select · F: fit · Ctrl+F: search",
        )
        .small(),
    );
    ui.horizontal_wrapped(|ui| {
        let mut h = studio.view.lane_height;
        let name = ui.label(RichText::new("lane height").small());
        if ui
            .add(egui::Slider::new(&mut h, LANE_HEIGHTS).show_value(false))
            .labelled_by(name.id)
            .changed()
        {
            out.push(Command::LaneHeight(h));
        }
        let mut legend = studio.view.show_legend;
        if ui.checkbox(&mut legend, "Legend").changed() {
            out.push(Command::ToggleLegend);
        }
        if ui.button("Search (Ctrl+F)").clicked() {
            out.push(Command::ToggleSearch);
        }
        // Many ranks: their lanes in groups of eight, each collapsible (a click on its label).
        let groups = crate::geometry::Rows::groups(studio.shown().map_or(0, |s| s.scene.ranks));
        if groups > 0 {
            // (groups left expanded from a chart of more ranks do not count)
            let all = studio.view.expanded_groups.range(..groups).count() >= groups;
            if ui
                .button(if all {
                    "Collapse rank groups"
                } else {
                    "Expand all ranks"
                })
                .on_hover_text(
                    "ranks in groups of 8; click a group's label to expand or collapse it",
                )
                .clicked()
            {
                out.push(Command::AllLaneGroups(!all));
            }
        }
    });
}

fn search_ui(ui: &mut Ui, studio: &Studio, matches: usize, out: &mut Vec<Command>) {
    let search = &studio.view.search;
    ui.horizontal(|ui| {
        let name = ui.label("Search");
        let mut text = search.text.clone();
        let response = ui
            .add(
                egui::TextEdit::singleline(&mut text)
                    .hint_text("4F0, mb 7, stage 4, rank 2 B")
                    .desired_width(220.0),
            )
            .labelled_by(name.id);
        if search.focus {
            response.request_focus();
            out.push(Command::SearchFocused);
        }
        if response.changed() {
            out.push(Command::SearchText(text));
        }
        if response.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter)) {
            out.push(Command::NextMatch);
            response.request_focus();
        }
        match &search.error {
            Some(e) => {
                ui.colored_label(RED, RichText::new(e).small());
            }
            None if !search.text.trim().is_empty() => {
                ui.label(RichText::new(format!("{matches} match(es)")).small());
            }
            None => {}
        }
        if ui.button("Next").clicked() {
            out.push(Command::NextMatch);
        }
        if ui.button("Close").clicked() {
            out.push(Command::CloseSearch);
        }
    });
}

/// Draws the central panel; returns what the user asked for and records where charts went.
pub fn views_ui(ui: &mut Ui, studio: &Studio, drawn: &mut Drawn) -> Vec<Command> {
    let mut out = Vec::new();
    status_ui(ui, studio, &mut out);
    let Some(shown) = studio.shown() else {
        ui.label("No valid schedule to show.");
        return out;
    };
    let computing = studio.derived.running().is_some();
    // What the charts show, named by the schedule (the document's name is free text).
    let title = ui.label(RichText::new(&shown.title).strong());
    ui.label(RichText::new(format!(
        "{}{}",
        stats::summary(&shown.sim, shown.expected.as_ref()),
        if computing {
            " (the previous scenario, until the background run ends)"
        } else {
            ""
        }
    )));
    if let Some(note) = &shown.sim.derivation.order_note {
        ui.label(RichText::new(format!("order: {note}")).small());
    }
    // The textbook formula beside the simulated figures, and why they differ.
    for line in &shown.formula {
        ui.label(RichText::new(line).small());
    }
    chart_header_ui(ui, studio, &mut out);
    if studio.view.show_legend {
        legend::legend_ui(ui, &shown.scene, &shown.sim.host_wait_s);
    }
    if studio.view.search.open {
        search_ui(ui, studio, studio.view.search.cached(shown).len(), &mut out);
    }
    if let Some(t) = &studio.view.teach {
        out.extend(teach::teach_ui(ui, shown, t));
    }
    charts_ui(ui, studio, shown, drawn, &mut out);
    // The memory plot right under the timelines it shares its time axis with.
    ui.add_space(6.0);
    // Figures of the last valid schedule, while the document is invalid, are dimmed as its chart
    // is (they used to stay bright beside the dimmed chart).
    let stale = studio.error().is_some();
    ui.scope(|ui| {
        if stale {
            ui.multiply_opacity(STALE_OPACITY);
        }
        memory_section_ui(ui, studio, shown, drawn, &mut out);
    });
    // The figure Export PNG writes: from the title, through the legend and the charts, to the
    // memory plot.
    drawn.figure_rect = Some(egui::Rect::from_x_y_ranges(
        ui.max_rect().x_range(),
        title.rect.top()..=ui.cursor().top(),
    ));
    ui.add_space(6.0);
    operator_table_ui(ui, shown);
    ui.add_space(6.0);
    super::designs::designs_ui(ui, studio, &mut out);
    super::tuner::tuner_ui(ui, studio, &mut out);
    super::second_order::wave_sweep_ui(ui, studio, &mut out);
    super::second_order::packing_ui(ui, studio, &mut out);
    ui.add_space(6.0);
    out.extend(traces::traces_ui(ui, studio, shown));
    ui.add_space(6.0);
    ui.scope(|ui| {
        if stale {
            ui.multiply_opacity(STALE_OPACITY);
        }
        ui.label(RichText::new("Per rank").strong());
        stats::rank_table_ui(ui, &shown.sim);
        ui.add_space(6.0);
        ui.label(RichText::new("Collectives").strong());
        stats::collectives_ui(ui, &shown.sim);
    });
    out
}

/// How much of its opacity a figure of the last valid schedule keeps while the document is
/// invalid.
const STALE_OPACITY: f32 = 0.45;

/// The timelines: each pinned baseline's, then the current one's (with the selection, the
/// search matches, a deadlock's cycle), then the selection's details and the comparison.
fn charts_ui(
    ui: &mut Ui,
    studio: &Studio,
    shown: &Shown,
    drawn: &mut Drawn,
    out: &mut Vec<Command>,
) {
    let span = studio.span();
    let cursor = studio.view.teach.map(|t| t.t);
    let lane_height = studio.view.lane_height;
    let mut chart = |ui: &mut Ui, input: ChartInput<'_>, out: &mut Vec<Command>, current: bool| {
        let o = chart_ui(ui, input);
        drawn.chart_rects.push(o.rect);
        if current {
            drawn.timeline_x = Some((o.plot.left(), o.plot.right()));
            if let Some(clicked) = o.clicked {
                out.push(Command::Select(clicked));
            }
            if let Some((event, to_s)) = o.reorder {
                out.push(Command::Reorder { event, to_s });
            }
        }
        if let Some(range) = o.range {
            out.push(Command::Range(range));
        }
        if let Some(group) = o.toggled_group {
            out.push(Command::ToggleLaneGroup(group));
        }
    };
    for (i, b) in studio.baselines.iter().enumerate() {
        ui.label(RichText::new(format!("Baseline {}", b.name)).strong());
        let salt = format!("baseline {i}");
        chart(
            ui,
            ChartInput {
                shown: &b.shown,
                span,
                range: studio.view.range,
                dimmed: false,
                cursor,
                selected: None,
                matches: &[],
                lane_height,
                id_salt: &salt,
                cycle: &[],
                expanded: &studio.view.expanded_groups,
            },
            out,
            false,
        );
    }
    if !studio.baselines.is_empty() {
        ui.label(RichText::new(format!("Current: {}", shown.title)).strong());
    }
    let selected = studio.selected();
    chart(
        ui,
        ChartInput {
            shown,
            span,
            range: studio.view.range,
            dimmed: studio.error().is_some(),
            cursor,
            selected,
            matches: studio.view.search.cached(shown),
            lane_height,
            id_salt: "current",
            cycle: studio.deadlock().map_or(&[], |d| d.cycle.as_slice()),
            expanded: &studio.view.expanded_groups,
        },
        out,
        true,
    );
    if let Some(i) = selected {
        out.extend(selection::selection_ui(ui, shown, i));
    }
    if !studio.baselines.is_empty() {
        ui.add_space(6.0);
        out.extend(compare::compare_ui(ui, studio));
    }
}

/// The memory plot on the timelines' axis, with the measured memory when traces are open.
fn memory_section_ui(
    ui: &mut Ui,
    studio: &Studio,
    shown: &Shown,
    drawn: &mut Drawn,
    out: &mut Vec<Command>,
) {
    ui.label(RichText::new("Memory per rank").strong());
    if shown.sim.memory.iter().all(|c| c.peak_bytes == 0.0) {
        ui.label(
            RichText::new(
                "nothing held: the model gives no parameter, activation or workspace bytes",
            )
            .small()
            .weak(),
        );
    }
    let mut from_zero = studio.view.memory_from_zero;
    if ui.checkbox(&mut from_zero, "y axis from zero").changed() {
        out.push(Command::MemoryFromZero(from_zero));
    }
    let measured_memory = studio.traces.cached_view(shown);
    let (moved, frame) = memory::memory_ui(
        ui,
        memory::MemoryInput {
            current: shown,
            baselines: &studio.baselines,
            range: studio.view.visible(studio.span()),
            cursor: studio.view.teach.map(|t| t.t),
            from_zero,
            measured: measured_memory
                .as_ref()
                .map_or(&[], |c| c.memory.as_slice()),
        },
    );
    drawn.memory_frame = Some(frame);
    if let Some((t0, t1)) = moved {
        out.push(Command::Range(Some((t0, t1))));
    }
    let over = shown.sim.memory.iter().any(|c| c.over_capacity);
    super::fit::fit_ui(ui, studio, over, out);
}

/// The global operator table (BigMac's view of a schedule): time slot × rank, each cell the
/// operator the rank runs in that slot, collapsed until asked for.
fn operator_table_ui(ui: &mut Ui, shown: &crate::state::derived::Shown) {
    egui::CollapsingHeader::new("Operator table (time slot × rank)")
        .id_salt("operator table")
        .show(ui, |ui| {
            let Some(table) = &shown.table else {
                ui.label(
                    RichText::new(format!(
                        "The schedule has more than {} compute actions, too many to lay out here; `mpipe derive FILE --table` prints its table.",
                        crate::state::derived::TABLE_ACTIONS
                    ))
                    .small(),
                );
                return;
            };
            ui.label(
                RichText::new(
                    "Every compute action takes one slot: the order and what waits for what, not the durations. V: encoder, G: generator; F forward, B backward, I and W its halves; a;b an overlapped pair.",
                )
                .small(),
            );
            egui::ScrollArea::horizontal()
                .id_salt("operator table scroll")
                .show(ui, |ui| {
                    egui::Grid::new("operator table grid")
                        .striped(true)
                        .spacing([6.0, 2.0])
                        .show(ui, |ui| {
                            let slots = table.ranks.iter().map(Vec::len).max().unwrap_or(0);
                            ui.label(RichText::new("slot").small());
                            for slot in 0..slots {
                                ui.label(RichText::new(slot.to_string()).small().weak());
                            }
                            ui.end_row();
                            for (rank, cells) in table.ranks.iter().enumerate() {
                                ui.label(RichText::new(format!("rank {rank}")).small());
                                for cell in cells {
                                    let text = RichText::new(cell).monospace().small();
                                    if cell == mpipe::report::table::IDLE {
                                        ui.label(text.weak());
                                    } else {
                                        ui.label(text);
                                    }
                                }
                                ui.end_row();
                            }
                        });
                });
        });
}
