//! The timeline's legend: what each colour and mark means. Regions are listed with their role and
//! skeleton (their colour follows the role, so the encoder is amber and the backbone blue in
//! every scenario), then idle time, warmup windows, spill, transfers and waits, and the marks of
//! the selection.

use super::rgb;
use egui::{Color32, Rect, Sense, Stroke, StrokeKind, Ui, Vec2};
use mpipe::view::palette;
use mpipe::view::scene::Scene;
use mpipe::vocab::phase::Phase;

/// What a swatch shows.
#[derive(Debug, Clone)]
enum Swatch {
    /// One chip per phase, side by side (forward and backward; forward, input and weight
    /// halves; the four phases of a second-order schedule).
    Chips(Vec<Color32>),
    Fill(Color32),
    /// Diagonal hatching (idle time).
    Hatch,
    Outline(Color32),
    /// A thin bar at the bottom (a transfer).
    Thin(Color32),
}

/// Paints `swatch` into `rect`.
fn paint_swatch(ui: &Ui, rect: Rect, swatch: Swatch) {
    let painter = ui.painter_at(rect);
    match swatch {
        Swatch::Chips(colours) => {
            let width = rect.width() / colours.len().max(1) as f32;
            for (i, c) in colours.into_iter().enumerate() {
                let left = rect.left() + i as f32 * width;
                let chip = Rect::from_x_y_ranges(left..=left + width, rect.y_range());
                painter.rect_filled(chip, 1.0, c);
            }
        }
        Swatch::Fill(c) => {
            painter.rect_filled(rect, 1.0, c);
        }
        Swatch::Hatch => {
            painter.rect_filled(rect, 0.0, ui.visuals().faint_bg_color);
            let mut x = rect.left() - rect.height();
            while x < rect.right() {
                painter.line_segment(
                    [
                        egui::pos2(x, rect.bottom()),
                        egui::pos2(x + rect.height(), rect.top()),
                    ],
                    Stroke::new(1.0, Color32::from_gray(110)),
                );
                x += 5.0;
            }
        }
        Swatch::Outline(c) => {
            painter.rect_stroke(
                rect.shrink(1.0),
                1.0,
                Stroke::new(2.0, c),
                StrokeKind::Inside,
            );
        }
        Swatch::Thin(c) => {
            let bar = Rect::from_min_max(egui::pos2(rect.left(), rect.bottom() - 5.0), rect.max);
            painter.rect_filled(bar, 0.0, c);
        }
    }
}

/// One legend entry, a swatch and its words, allocated as one widget so the row wraps between
/// entries, never inside one.
fn entry_ui(ui: &mut Ui, swatch: Swatch, text: &str) {
    let galley = ui.painter().layout_no_wrap(
        text.to_string(),
        egui::TextStyle::Small.resolve(ui.style()),
        ui.visuals().text_color(),
    );
    // The gap to the next entry is part of the entry: a wrapping row checks the room for an item
    // without the spacing before it, so a gap in `item_spacing` pushed the last entry of a row
    // past the panel's edge (cut at 1280×720).
    let size = Vec2::new(
        26.0 + 4.0 + galley.size().x + ENTRY_GAP,
        galley.size().y.max(14.0),
    );
    let (rect, response) = ui.allocate_exact_size(size, Sense::hover());
    response.widget_info(|| egui::WidgetInfo::labeled(egui::Role::Label, true, text));
    let swatch_rect = Rect::from_min_size(
        egui::pos2(rect.left(), rect.center().y - 7.0),
        Vec2::new(26.0, 14.0),
    );
    paint_swatch(ui, swatch_rect, swatch);
    ui.painter().galley(
        egui::pos2(rect.left() + 30.0, rect.center().y - galley.size().y / 2.0),
        galley,
        ui.visuals().text_color(),
    );
}

/// Room after each legend entry.
const ENTRY_GAP: f32 = 14.0;

/// The colour of the outline of the selected event and of what it depends on.
pub const SELECTED: Color32 = Color32::WHITE;
/// The colour of the outline of critical-path events once something is selected.
pub const CRITICAL: Color32 = Color32::from_rgb(0xFF, 0xD0, 0x40);
/// The colour of a deadlock's wait-for cycle.
pub const DEADLOCK: Color32 = Color32::from_rgb(0xFF, 0x40, 0x40);
/// The colour of search matches.
pub const MATCH: Color32 = Color32::from_rgb(0x40, 0xE0, 0xFF);
/// The fill of waits for a transfer.
pub const WAIT: Color32 = Color32::from_rgb(0x90, 0x90, 0x90);
/// The head of a measured block: its wait for inputs inside the span.
pub const MEASURED_WAIT: Color32 = Color32::from_rgb(0x4A, 0x4A, 0x58);
/// The frame around an overlapped pair's two halves (lighter than the SVG's, on a dark chart).
pub const PAIR: Color32 = Color32::from_rgb(0xE0, 0x70, 0xFF);

/// Draws the legend for `scene` in a wrapped row; `host_wait` (by node index, the simulation's
/// [`mpipe::sim::run::Simulation::host_wait_s`]) says whether a device waited for its host.
pub fn legend_ui(ui: &mut Ui, scene: &Scene, host_wait: &[f64]) {
    ui.horizontal_wrapped(|ui| {
        ui.spacing_mut().item_spacing.x = 0.0;
        for r in &scene.regions {
            let (phases, words): (&[Phase], &str) =
                if r.skeleton.second_order() {
                    (
                        &Phase::FOUR,
                        "energy forward FE, force forward FF light, force backward BF mid, energy backward BE dark",
                    )
                } else if r.split() {
                    (
                        &[Phase::Forward, Phase::Input, Phase::Weight],
                        "forward light, input half I dark, weight half W mid",
                    )
                } else {
                    (
                        &[Phase::Forward, Phase::Backward],
                        "forward light, backward dark",
                    )
                };
            entry_ui(
                ui,
                Swatch::Chips(phases.iter().map(|&p| rgb(r.colour(p))).collect()),
                &format!("{} ({words})", r.label()),
            );
        }
        // Early recomputations, in their region's lighter forward colour.
        if let Some(e) = scene
            .events
            .iter()
            .find(|e| e.action.phase == Phase::Recompute)
        {
            entry_ui(
                ui,
                Swatch::Chips(vec![rgb(scene.colour(e.region.index(), Phase::Recompute))]),
                "R: recomputation placed early (the forward run again before its backward)",
            );
        }
        entry_ui(ui, Swatch::Hatch, "idle: a bubble");
        entry_ui(
            ui,
            Swatch::Fill(rgb(palette::WARMUP).gamma_multiply(0.5)),
            "warmup window",
        );
        if scene.events.iter().any(|e| e.pair.is_some()) {
            entry_ui(
                ui,
                Swatch::Outline(PAIR),
                "overlapped pair (F;B): one compute slot, the forward first",
            );
        }
        if scene.lanes.iter().any(|l| l.spill.is_some()) {
            entry_ui(ui, Swatch::Outline(rgb(palette::SPILL)), "encoder spill");
        }
        if scene.events.iter().any(|e| e.exposed_comm_s > 0.0) {
            entry_ui(
                ui,
                Swatch::Fill(rgb(palette::EXPOSED_COMM)),
                "collectives inside the stage, exposed (TP / EP / CP)",
            );
        }
        if host_wait.iter().any(|&w| w > 0.0) {
            entry_ui(
                ui,
                Swatch::Fill(rgb(palette::HOST_WAIT)),
                "waiting for its host to launch the work (host-bound)",
            );
        }
        entry_ui(ui, Swatch::Thin(rgb(palette::COMM)), "transfer arriving");
        entry_ui(
            ui,
            Swatch::Fill(WAIT.gamma_multiply(0.5)),
            "waiting for a transfer",
        );
        entry_ui(
            ui,
            Swatch::Outline(SELECTED),
            "selected and its dependencies",
        );
        entry_ui(ui, Swatch::Outline(CRITICAL), "critical path");
        entry_ui(ui, Swatch::Outline(MATCH), "search match");
    });
}
