//! Per-microbatch workload scales of the encoder as bars you can drag up and down.

use crate::command::Command;
use egui::{Color32, Pos2, Rect, Sense, Stroke, Vec2};
use mpipe::Scenario;
use mpipe::scenario::edit::Edit;

/// The largest scale the bars show (drag beyond it clamps).
pub const MAX_SCALE: f64 = 4.0;

/// The scale a pointer at `y` sets in a bar area spanning `top..bottom`, rounded to 0.05.
pub fn scale_at(y: f32, top: f32, bottom: f32) -> f64 {
    let frac = ((bottom - y) / (bottom - top).max(1.0)).clamp(0.0, 1.0);
    (f64::from(frac) * MAX_SCALE * 20.0).round() / 20.0
}

/// Draws the bars (when the scenario lists per-microbatch scales) and returns the edits of a
/// drag or click (a whole drag is one undo step). Offers to start a list when there is none.
pub fn workload_bars_ui(ui: &mut egui::Ui, s: &Scenario, colour: Color32) -> Vec<Command> {
    let Some(scales) = s.workload.as_ref().and_then(|w| w.encoder_scale.as_ref()) else {
        // A batch of graphs sets every microbatch's factor (GARS, under the chart).
        if let Some(g) = s.workload.as_ref().and_then(|w| w.graphs.as_ref()) {
            let graphs = g
                .atoms
                .as_ref()
                .map_or(g.count.unwrap_or(0), |atoms| atoms.len());
            ui.label(
                egui::RichText::new(format!(
                    "Workload: {graphs} graphs packed by {} (edges ∝ atoms^{}); see Graph packing under the chart",
                    g.packing.name(),
                    g.edge_exponent.unwrap_or(1.5)
                ))
                .small(),
            );
            return Vec::new();
        }
        let distribution = s
            .workload
            .as_ref()
            .is_some_and(|w| w.distribution.is_some());
        if !distribution
            && ui
                .button("Vary the encoder's workload per microbatch")
                .clicked()
        {
            return vec![Command::Edit {
                edit: Edit::VaryWorkload,
                gesture: None,
            }];
        }
        return Vec::new();
    };
    ui.label(egui::RichText::new("Encoder workload per microbatch (drag the bars)").small());
    let (rect, response) = ui.allocate_exact_size(
        Vec2::new(ui.available_width().max(120.0), 60.0),
        Sense::click_and_drag(),
    );
    response.widget_info(|| egui::WidgetInfo::labeled(egui::Role::Slider, true, "workload bars"));
    let painter = ui.painter_at(rect);
    let n = scales.len().max(1);
    let w = rect.width() / n as f32;
    let y_of = |v: f64| rect.bottom() - (v / MAX_SCALE).clamp(0.0, 1.0) as f32 * rect.height();
    painter.line_segment(
        [
            Pos2::new(rect.left(), y_of(1.0)),
            Pos2::new(rect.right(), y_of(1.0)),
        ],
        Stroke::new(1.0, Color32::from_gray(120)),
    );
    // One rectangle per bar, at most one per pixel column.
    for (i, v) in scales
        .iter()
        .enumerate()
        .take(rect.width().max(1.0) as usize)
    {
        let x0 = rect.left() + i as f32 * w;
        let bar = Rect::from_min_max(
            Pos2::new(x0 + 1.0, y_of(*v)),
            Pos2::new(x0 + w - 1.0, rect.bottom()),
        );
        painter.rect_filled(bar, 1.0, colour);
    }
    let mut out = Vec::new();
    let bar_at = |x: f32| (((x - rect.left()) / w).floor().max(0.0) as usize).min(n - 1);
    if (response.dragged() || response.clicked())
        && let Some(p) = response.interact_pointer_pos()
    {
        let mb = bar_at(p.x);
        let scale = scale_at(p.y, rect.top(), rect.bottom());
        if scales.get(mb).is_some_and(|&old| old != scale) {
            out.push(Command::Edit {
                edit: Edit::WorkloadScale { mb, scale },
                gesture: response.dragged().then_some(response.id),
            });
        }
    }
    if let Some((i, v)) = response
        .hover_pos()
        .map(|p| bar_at(p.x))
        .and_then(|i| Some((i, *scales.get(i)?)))
    {
        response.on_hover_text(format!("microbatch {i}: scale {v:.2}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bar_heights_map_to_scales() {
        assert_eq!(scale_at(100.0, 0.0, 100.0), 0.0);
        assert_eq!(scale_at(0.0, 0.0, 100.0), 4.0);
        assert_eq!(scale_at(75.0, 0.0, 100.0), 1.0);
        assert_eq!(scale_at(-50.0, 0.0, 100.0), 4.0);
        assert_eq!(scale_at(74.0, 0.0, 100.0), 1.05);
    }
}
