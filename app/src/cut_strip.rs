//! The cut editor: a strip of the model's layers coloured by region, with a handle at every cut.
//! Drag a handle to move the cut; double-click a layer to cut in front of it; right-click a handle
//! to remove the cut (the two regions merge). The geometry is pure and unit-tested; the edits go
//! through the studio like every other edit.

use egui::{Align2, Color32, FontId, Pos2, Rect, Sense, Stroke, Vec2};
use mpipe::Scenario;

/// Layer cells laid out over `[x0, x0 + width]`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StripGeometry {
    pub x0: f32,
    pub width: f32,
    pub layers: usize,
}

impl StripGeometry {
    fn cell(&self) -> f32 {
        self.width / self.layers.max(1) as f32
    }

    /// X of boundary `b` (the left edge of layer `b`; `b = layers` is the right end).
    pub fn boundary_x(&self, b: usize) -> f32 {
        self.x0 + b as f32 * self.cell()
    }

    /// The layer under `x`, clamped to the model.
    pub fn layer_at(&self, x: f32) -> usize {
        let i = ((x - self.x0) / self.cell()).floor().max(0.0) as usize;
        i.min(self.layers.saturating_sub(1))
    }

    /// The boundary nearest to `x`, clamped to `lo..=hi`.
    pub fn boundary_near(&self, x: f32, lo: usize, hi: usize) -> usize {
        let b = ((x - self.x0) / self.cell()).round().max(0.0) as usize;
        b.clamp(lo, hi.max(lo))
    }

    /// The cut whose handle is within `slop` pixels of `x`, if any.
    pub fn handle_at(&self, cut: &[usize], x: f32, slop: f32) -> Option<usize> {
        cut.iter()
            .enumerate()
            .map(|(i, &b)| (i, (self.boundary_x(b) - x).abs()))
            .filter(|(_, d)| *d <= slop)
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(i, _)| i)
    }
}

/// Moves cut `i` to boundary `to`, keeping the cut strictly increasing inside `(0, layers)`.
pub fn move_cut(s: &mut Scenario, i: usize, to: usize, layers: usize) {
    let lo = if i == 0 {
        1
    } else {
        s.cut.get(i - 1).map_or(1, |&b| b + 1)
    };
    let hi = s
        .cut
        .get(i + 1)
        .map_or(layers.saturating_sub(1), |&b| b.saturating_sub(1));
    if let Some(b) = s.cut.get_mut(i) {
        *b = to.clamp(lo, hi.max(lo));
    }
}

/// Cuts in front of layer `at` (no-op at 0 or on an existing cut); the new region copies the
/// skeleton of the region it was split from.
pub fn add_cut(s: &mut Scenario, at: usize) {
    if at == 0 || s.cut.contains(&at) {
        return;
    }
    let region = s.cut.iter().filter(|&&b| b < at).count();
    let skeleton = s
        .schedule
        .get(region)
        .copied()
        .unwrap_or(mpipe::skeleton::Skeleton::OneFOneB);
    s.cut.insert(region, at);
    s.schedule.insert(region + 1, skeleton);
    if let Some(slabs) = s.slabs.as_mut() {
        slabs.insert(region + 1, None);
        if let Some(split) = slabs.get_mut(region) {
            *split = None;
        }
    }
}

/// Removes cut `i`, merging the regions on both sides into the left one.
pub fn remove_cut(s: &mut Scenario, i: usize) {
    if i >= s.cut.len() {
        return;
    }
    s.cut.remove(i);
    if i + 1 < s.schedule.len() {
        s.schedule.remove(i + 1);
    }
    if let Some(slabs) = s.slabs.as_mut() {
        if i + 1 < slabs.len() {
            slabs.remove(i + 1);
        }
        if let Some(merged) = slabs.get_mut(i) {
            *merged = None;
        }
    }
}

/// Draws the strip and applies the user's gestures to `draft`; returns true when it changed.
pub fn cut_strip(ui: &mut egui::Ui, draft: &mut Scenario) -> bool {
    let names: Vec<String> = draft
        .model
        .layers
        .iter()
        .flat_map(|l| std::iter::repeat_n(l.name.clone(), l.count))
        .collect();
    let layers = names.len();
    let (rect, response) = ui.allocate_exact_size(
        Vec2::new(ui.available_width().max(120.0), 34.0),
        Sense::click_and_drag(),
    );
    response.widget_info(|| egui::WidgetInfo::labeled(egui::Role::Slider, true, "cut strip"));
    let geo = StripGeometry {
        x0: rect.left(),
        width: rect.width(),
        layers,
    };
    let painter = ui.painter_at(rect);
    let region_of = |cut: &[usize], layer: usize| 1 + cut.iter().filter(|&&b| b <= layer).count();
    for layer in 0..layers {
        let cell = Rect::from_min_max(
            Pos2::new(geo.boundary_x(layer), rect.top() + 6.0),
            Pos2::new(geo.boundary_x(layer + 1), rect.bottom() - 6.0),
        );
        painter.rect_filled(
            cell.shrink2(Vec2::new(0.5, 0.0)),
            1.0,
            crate::palette::chip(region_of(&draft.cut, layer), false),
        );
    }
    for (i, &b) in draft.cut.iter().enumerate() {
        let x = geo.boundary_x(b);
        painter.line_segment(
            [Pos2::new(x, rect.top()), Pos2::new(x, rect.bottom())],
            Stroke::new(3.0, Color32::WHITE),
        );
        painter.text(
            Pos2::new(x + 2.0, rect.top()),
            Align2::LEFT_TOP,
            format!("{}", i + 1),
            FontId::proportional(9.0),
            Color32::WHITE,
        );
    }
    let mut changed = false;
    let dragging = response.id.with("dragged cut");
    // A drag starts once the pointer has moved: pick the handle where the button went down.
    if response.drag_started()
        && let Some(p) = ui.input(|i| i.pointer.press_origin())
        && let Some(i) = geo.handle_at(&draft.cut, p.x, 6.0)
    {
        ui.data_mut(|d| d.insert_temp(dragging, i));
    }
    if response.dragged()
        && let Some(i) = ui.data(|d| d.get_temp::<usize>(dragging))
        && let Some(p) = response.interact_pointer_pos()
    {
        let to = geo.boundary_near(p.x, 1, layers.saturating_sub(1));
        let before = draft.cut.clone();
        move_cut(draft, i, to, layers);
        changed |= draft.cut != before;
    }
    if response.drag_stopped() {
        ui.data_mut(|d| d.remove::<usize>(dragging));
    }
    if response.double_clicked()
        && let Some(p) = response.interact_pointer_pos()
    {
        let at = geo.boundary_near(p.x, 0, layers);
        let before = draft.cut.len();
        add_cut(draft, at);
        changed |= draft.cut.len() != before;
    }
    if response.secondary_clicked()
        && let Some(p) = response.interact_pointer_pos()
        && let Some(i) = geo.handle_at(&draft.cut, p.x, 6.0)
    {
        remove_cut(draft, i);
        changed = true;
    }
    let hover = response.hover_pos().map(|p| geo.layer_at(p.x));
    response.on_hover_text(match hover.and_then(|l| names.get(l).map(|n| (l, n))) {
        Some((l, name)) => format!("layer {l} ({name}), region {}\ndrag a handle to move a cut · double-click to cut here · right-click a handle to remove it", region_of(&draft.cut, l)),
        None => "drag a handle to move a cut · double-click to cut · right-click a handle to remove it".to_string(),
    });
    changed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario() -> Scenario {
        Scenario::from_json_str(include_str!("../../samples/vpp3.json"), "vpp3.json").unwrap()
    }

    #[test]
    fn one_layer_per_ten_pixels() {
        let g = StripGeometry {
            x0: 0.0,
            width: 120.0,
            layers: 12,
        };
        assert_eq!(g.boundary_x(4), 40.0);
        assert_eq!(g.layer_at(45.0), 4);
        assert_eq!(g.layer_at(-5.0), 0);
        assert_eq!(g.layer_at(500.0), 11);
        assert_eq!(g.boundary_near(44.0, 1, 11), 4);
        assert_eq!(g.boundary_near(46.0, 1, 11), 5);
        assert_eq!(g.boundary_near(200.0, 1, 11), 11);
        assert_eq!(g.handle_at(&[4, 8], 43.0, 6.0), Some(0));
        assert_eq!(g.handle_at(&[4, 8], 60.0, 6.0), None);
    }

    #[test]
    fn moving_keeps_cuts_increasing_and_inside() {
        let mut s = scenario(); // cut [4, 8] over 12 layers
        move_cut(&mut s, 0, 10, 12);
        assert_eq!(s.cut, [7, 8]);
        move_cut(&mut s, 1, 0, 12);
        assert_eq!(s.cut, [7, 8]);
        move_cut(&mut s, 1, 11, 12);
        assert_eq!(s.cut, [7, 11]);
        move_cut(&mut s, 0, 0, 12);
        assert_eq!(s.cut, [1, 11]);
    }

    #[test]
    fn adding_and_removing_cuts_splits_and_merges_regions() {
        let mut s = scenario();
        add_cut(&mut s, 6);
        assert_eq!(s.cut, [4, 6, 8]);
        assert_eq!(s.schedule.len(), 4);
        add_cut(&mut s, 6);
        add_cut(&mut s, 0);
        assert_eq!(s.cut, [4, 6, 8]);
        remove_cut(&mut s, 0);
        assert_eq!(s.cut, [6, 8]);
        assert_eq!(s.schedule.len(), 3);
    }
}
