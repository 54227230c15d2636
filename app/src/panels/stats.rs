//! The statistics: the step's summary line, the per-rank table (the same cells as `mpipe
//! simulate`, each column in one unit, each head explained on hover), and the collectives in
//! words. All numbers come from `core`.

use egui::{RichText, Ui};
use mpipe::report::simulate::rank_table;
use mpipe::sim::jitter::Expected;
use mpipe::sim::run::Simulation;
use mpipe::vocab::units::secs;

/// The one-line summary above the timeline; with the expected step under the scenario's jitter
/// (a calibrated scenario carries its run's), that too.
pub fn summary(sim: &Simulation, expected: Option<&Expected>) -> String {
    format!(
        "makespan {} · bubble {:.1} % · utilisation {:.1} %{}{}",
        secs(sim.makespan_s),
        100.0 * sim.bubble_fraction,
        100.0 * sim.utilisation,
        sim.encoder_free_makespan_s
            .map_or(String::new(), |f| format!(
                " · without the encoder {}",
                secs(f)
            )),
        expected.map_or(String::new(), |e| format!(
            " · expected {} under the traced run's jitter (10–90 %: {} to {})",
            secs(e.median_s),
            secs(e.low_s),
            secs(e.high_s)
        ))
    )
}

/// A table of monospace text cells in a horizontal scroll area, so that on a narrow window
/// columns scroll instead of overlapping. `red(row, column)` marks a cell.
pub fn table_ui(
    ui: &mut Ui,
    id: &str,
    heads: &[(&str, &str)],
    rows: &[Vec<String>],
    red: impl Fn(usize, usize) -> bool,
) {
    // A table wider than the panel shows a real scroll bar (egui's floating one is a hairline
    // until hovered: nothing said the last column was cut).
    ui.scope(|ui| {
        ui.spacing_mut().scroll = egui::style::ScrollStyle::solid();
        egui::ScrollArea::horizontal()
            .id_salt(id)
            .auto_shrink([false, true])
            .show(ui, |ui| {
                egui::Grid::new(id)
                    .striped(true)
                    .min_col_width(48.0)
                    .spacing([14.0, 4.0])
                    .show(ui, |ui| {
                        for (head, help) in heads {
                            let label = egui::Label::new(RichText::new(*head).small().strong())
                                .wrap_mode(egui::TextWrapMode::Extend);
                            let response = ui.add(label);
                            if !help.is_empty() {
                                response.on_hover_text(*help);
                            }
                        }
                        ui.end_row();
                        for (r, row) in rows.iter().enumerate() {
                            for (c, cell) in row.iter().enumerate() {
                                let mut text = RichText::new(cell).monospace();
                                if red(r, c) {
                                    text = text.color(egui::Color32::from_rgb(0xE0, 0x50, 0x50));
                                }
                                ui.add(
                                    egui::Label::new(text).wrap_mode(egui::TextWrapMode::Extend),
                                );
                            }
                            ui.end_row();
                        }
                    });
            });
    });
}

/// The per-rank table; an over-capacity peak is red.
pub fn rank_table_ui(ui: &mut Ui, sim: &Simulation) {
    // Units in the heads, bare figures in the cells: the table fits a 1280-pixel window (its
    // last column was cut there).
    let (heads, rows) = rank_table(&sim.ranks);
    let heads: Vec<(&str, &str)> = heads.iter().map(|(h, help)| (h.as_str(), *help)).collect();
    let peak = heads.iter().position(|(h, _)| h.starts_with("peak mem"));
    table_ui(ui, "ranks", &heads, &rows, |r, c| {
        Some(c) == peak && sim.ranks.get(r).is_some_and(|m| m.over_capacity)
    });
}

/// The collectives, one line each.
pub fn collectives_ui(ui: &mut Ui, sim: &Simulation) {
    for line in mpipe::report::derive::collectives_in_words(&sim.derivation.collectives)
        .into_iter()
        .chain(mpipe::report::derive::stage_collectives_in_words(
            &sim.derivation.plan,
        ))
    {
        ui.label(line);
    }
}
