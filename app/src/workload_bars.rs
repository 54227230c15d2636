//! Per-microbatch workload scales of the encoder as bars you can drag up and down.

use egui::{Color32, Pos2, Rect, Sense, Stroke, Vec2};
use mpipe::Scenario;

/// The largest scale the bars show (drag beyond it clamps).
pub const MAX_SCALE: f64 = 4.0;

/// The scale a pointer at `y` sets in a bar area spanning `top..bottom`, rounded to 0.05.
pub fn scale_at(y: f32, top: f32, bottom: f32) -> f64 {
    let frac = ((bottom - y) / (bottom - top).max(1.0)).clamp(0.0, 1.0);
    (f64::from(frac) * MAX_SCALE * 20.0).round() / 20.0
}

/// Draws the bars (when the scenario lists per-microbatch scales) and applies drags; returns true
/// when a scale changed. Offers to start a list when there is none.
pub fn workload_bars(ui: &mut egui::Ui, s: &mut Scenario) -> bool {
    let m = s.microbatches;
    let has_list = s
        .workload
        .as_ref()
        .is_some_and(|w| w.encoder_scale.is_some());
    if !has_list {
        let distribution = s
            .workload
            .as_ref()
            .is_some_and(|w| w.distribution.is_some());
        if !distribution
            && ui
                .button("Vary the encoder's workload per microbatch")
                .clicked()
        {
            let w = s.workload.get_or_insert_with(Default::default);
            w.encoder_scale = Some(vec![1.0; m]);
            return true;
        }
        return false;
    }
    let Some(scales) = s.workload.as_mut().and_then(|w| w.encoder_scale.as_mut()) else {
        return false;
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
    for (i, v) in scales.iter().enumerate() {
        let x0 = rect.left() + i as f32 * w;
        let bar = Rect::from_min_max(
            Pos2::new(x0 + 1.0, y_of(*v)),
            Pos2::new(x0 + w - 1.0, rect.bottom()),
        );
        painter.rect_filled(bar, 1.0, crate::palette::chip(1, false));
    }
    let mut changed = false;
    if (response.dragged() || response.clicked())
        && let Some(p) = response.interact_pointer_pos()
    {
        let i = (((p.x - rect.left()) / w).floor().max(0.0) as usize).min(n - 1);
        let v = scale_at(p.y, rect.top(), rect.bottom());
        if let Some(slot) = scales.get_mut(i)
            && *slot != v
        {
            *slot = v;
            changed = true;
        }
    }
    let hover = response
        .hover_pos()
        .map(|p| (((p.x - rect.left()) / w).floor().max(0.0) as usize).min(n - 1));
    if let Some(i) = hover {
        let v = scales.get(i).copied().unwrap_or(0.0);
        response.on_hover_text(format!("microbatch {i}: scale {v:.2}"));
    }
    changed
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
