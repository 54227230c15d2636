//! The cut editor: a strip of the model's layers coloured by region, with a handle at every cut.
//! Drag a handle to move the cut; double-click a layer to cut in front of it; right-click a handle
//! to remove the cut (the two regions merge). The geometry is pure and unit-tested; the edits are
//! `core`'s, as commands (a whole drag is one undo step).

use crate::command::Command;
use crate::timeline::rgb;
use egui::{Align2, Color32, FontId, Pos2, Rect, Sense, Stroke, Vec2};
use mpipe::Scenario;
use mpipe::scenario::edit::{Edit, move_stage_boundary, stage_boundaries};
use mpipe::view::scene::{region_colours, region_roles};

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

/// The region (1-based) layer `layer` falls in.
fn region_of(cut: &[usize], layer: usize) -> usize {
    1 + cut.iter().filter(|&&b| b <= layer).count()
}

/// The name of expanded layer `layer`.
fn layer_name(s: &Scenario, layer: usize) -> Option<&str> {
    let mut at = 0usize;
    s.model.layers.iter().find_map(|l| {
        let end = at.saturating_add(l.count);
        let hit = (at..end).contains(&layer).then_some(l.name.as_str());
        at = end;
        hit
    })
}

/// Every expanded layer's role, bounded by the model size `core` accepts, whatever the file
/// says.
fn layer_roles(s: &Scenario) -> Vec<mpipe::vocab::role::Role> {
    s.model
        .layers
        .iter()
        .flat_map(|l| std::iter::repeat_n(l.role, l.count))
        .take(mpipe::vocab::limits::MAX_LAYERS)
        .collect()
}

/// The colour of every region of `s`, as the timeline paints it.
pub fn colours_of_regions(s: &Scenario) -> Vec<(u8, u8, u8)> {
    region_colours(&region_roles(&layer_roles(s), &s.cut))
}

/// Draws the strip of `s`; returns the edits the user's gestures make.
pub fn cut_strip_ui(ui: &mut egui::Ui, s: &Scenario) -> Vec<Command> {
    let roles = layer_roles(s);
    let colours = region_colours(&region_roles(&roles, &s.cut));
    let layers = roles.len();
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
    paint_regions(
        &painter,
        &geo,
        rect,
        &s.cut,
        &colours,
        ui.visuals().panel_fill,
    );
    let mut out = Vec::new();
    let dragging = response.id.with("dragged cut");
    // A drag starts once the pointer has moved: pick the handle where the button went down.
    if response.drag_started()
        && let Some(p) = ui.input(|i| i.pointer.press_origin())
        && let Some(i) = geo.handle_at(&s.cut, p.x, 6.0)
    {
        ui.data_mut(|d| d.insert_temp(dragging, i));
    }
    if response.dragged()
        && let Some(i) = ui.data(|d| d.get_temp::<usize>(dragging))
        && let Some(p) = response.interact_pointer_pos()
    {
        let to = geo.boundary_near(p.x, 1, layers.saturating_sub(1));
        if s.cut.get(i) != Some(&to) {
            out.push(Command::Edit {
                edit: Edit::MoveCut { index: i, to },
                gesture: Some(response.id),
            });
        }
    }
    if response.drag_stopped() {
        ui.data_mut(|d| d.remove::<usize>(dragging));
    }
    if response.double_clicked()
        && let Some(p) = response.interact_pointer_pos()
    {
        let at = geo.boundary_near(p.x, 0, layers);
        out.push(Command::Edit {
            edit: Edit::AddCut { at },
            gesture: None,
        });
    }
    if response.secondary_clicked()
        && let Some(p) = response.interact_pointer_pos()
        && let Some(i) = geo.handle_at(&s.cut, p.x, 6.0)
    {
        out.push(Command::Edit {
            edit: Edit::RemoveCut { index: i },
            gesture: None,
        });
    }
    let hover = response.hover_pos().map(|p| geo.layer_at(p.x));
    response.on_hover_text(match hover.and_then(|l| layer_name(s, l).map(|n| (l, n))) {
        Some((l, name)) => format!("layer {l} ({name}), region {}\ndrag a handle to move a cut · double-click to cut here · right-click a handle to remove it", region_of(&s.cut, l)),
        None => "drag a handle to move a cut · double-click to cut · right-click a handle to remove it".to_string(),
    });
    out
}

/// The regions of the cut strip in their colours, the layer boundaries where there is room, and
/// a numbered handle at every cut.
fn paint_regions(
    painter: &egui::Painter,
    geo: &StripGeometry,
    rect: Rect,
    cut: &[usize],
    colours: &[(u8, u8, u8)],
    separator: Color32,
) {
    let layers = geo.layers;
    let mut bounds = vec![0];
    bounds.extend(cut.iter().map(|&b| b.min(layers)));
    bounds.push(layers);
    for (j, w) in bounds.windows(2).enumerate() {
        let [a, b] = *w else { continue };
        let band = Rect::from_min_max(
            Pos2::new(geo.boundary_x(a), rect.top() + 6.0),
            Pos2::new(geo.boundary_x(b.max(a)), rect.bottom() - 6.0),
        );
        let colour = colours.get(j).copied().unwrap_or((0x80, 0x80, 0x80));
        painter.rect_filled(band, 1.0, rgb(colour));
    }
    // Layer boundaries, when there is room to see them.
    if geo.width / layers.max(1) as f32 >= 3.0 {
        for layer in 1..layers {
            let x = geo.boundary_x(layer);
            painter.line_segment(
                [
                    Pos2::new(x, rect.top() + 6.0),
                    Pos2::new(x, rect.bottom() - 6.0),
                ],
                Stroke::new(1.0, separator),
            );
        }
    }
    for (i, &b) in cut.iter().enumerate() {
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
}

/// Where a region's stages run: the rank of every stage of the schedule (in stage order, as
/// the derivation on screen placed them) and the index of the region's first stage.
#[derive(Debug, Clone, Copy)]
pub struct StageRanks<'a> {
    pub all: &'a [usize],
    pub first: usize,
}

/// The stage strip of Sharded region `region` (OctoPipe's partitioning and placement by hand):
/// its layers in stage cells (`counts`, in stage order), each labelled with its layer count and
/// rank, with a handle at every stage boundary. Drag a handle to move layers between the two
/// stages (a stage may be left with none); Ctrl-drag a stage onto another to trade their ranks.
pub fn stage_strip_ui(
    ui: &mut egui::Ui,
    region: usize,
    counts: &[usize],
    colour: (u8, u8, u8),
    ranks: Option<StageRanks<'_>>,
) -> Vec<Command> {
    let layers: usize = counts.iter().fold(0, |a, &b| a.saturating_add(b));
    let (rect, response) = ui.allocate_exact_size(
        Vec2::new(ui.available_width().max(120.0), 22.0),
        Sense::click_and_drag(),
    );
    let label = format!("stage strip of region {region}");
    response.widget_info(|| egui::WidgetInfo::labeled(egui::Role::Slider, true, &label));
    let geo = StripGeometry {
        x0: rect.left(),
        width: rect.width(),
        layers,
    };
    let painter = ui.painter_at(rect);
    let bounds = stage_boundaries(counts);
    paint_stages(&painter, &geo, rect, &bounds, colour, ranks);
    let mut out = Vec::new();
    let dragging = response.id.with("dragged stage boundary");
    let moving = response.id.with("moved stage");
    // The stage (in the region's stage order) under `x`.
    let stage_at = |x: f32| {
        let layer = geo.layer_at(x);
        bounds.iter().filter(|&&b| b <= layer).count()
    };
    if response.drag_started()
        && let Some(p) = ui.input(|i| i.pointer.press_origin())
    {
        if ui.input(|i| i.modifiers.command) {
            if ranks.is_some() {
                ui.data_mut(|d| d.insert_temp(moving, stage_at(p.x)));
            }
        } else if let Some(i) = geo.handle_at(&bounds, p.x, 6.0) {
            ui.data_mut(|d| d.insert_temp(dragging, i));
        }
    }
    if response.drag_stopped()
        && let Some(from) = ui.data(|d| d.get_temp::<usize>(moving))
    {
        ui.data_mut(|d| d.remove::<usize>(moving));
        if let (Some(r), Some(p)) = (ranks, response.interact_pointer_pos()) {
            let to = stage_at(p.x);
            if to != from {
                out.push(Command::Edit {
                    edit: Edit::SwapStageRanks {
                        ranks: r.all.to_vec(),
                        a: r.first + from,
                        b: r.first + to,
                    },
                    gesture: None,
                });
            }
        }
    }
    if response.dragged()
        && let Some(i) = ui.data(|d| d.get_temp::<usize>(dragging))
        && let Some(p) = response.interact_pointer_pos()
    {
        // Only a move that changes the stages is an edit (a held drag makes none each frame).
        let to = geo.boundary_near(p.x, 0, layers);
        if move_stage_boundary(counts, i, to) != counts {
            out.push(Command::Edit {
                edit: Edit::StageBoundary {
                    region,
                    boundary: i,
                    to,
                },
                gesture: Some(response.id),
            });
        }
    }
    if response.drag_stopped() {
        ui.data_mut(|d| d.remove::<usize>(dragging));
    }
    response.on_hover_text(format!(
        "region {region}'s stages: layers per stage {counts:?}; drag a boundary to move layers between two stages · Ctrl-drag a stage onto another to trade their ranks"
    ));
    out
}

/// The stage cells of a region's strip (shaded in turn, each labelled with its layer count and,
/// where it fits, its rank) and the boundary handles between them (`bounds`: the interior
/// ones, as layer offsets).
fn paint_stages(
    painter: &egui::Painter,
    geo: &StripGeometry,
    rect: Rect,
    bounds: &[usize],
    colour: (u8, u8, u8),
    ranks: Option<StageRanks<'_>>,
) {
    let mut edges = Vec::with_capacity(bounds.len() + 2);
    edges.push(0);
    edges.extend(bounds.iter().copied());
    edges.push(geo.layers);
    for (k, w) in edges.windows(2).enumerate() {
        let [a, b] = *w else { continue };
        let cell = Rect::from_min_max(
            Pos2::new(geo.boundary_x(a), rect.top() + 3.0),
            Pos2::new(geo.boundary_x(b.max(a)), rect.bottom() - 3.0),
        );
        let (r, g, bl) = colour;
        let shade = if k % 2 == 0 { 1.0 } else { 0.75 };
        let c = Color32::from_rgb(
            (f32::from(r) * shade) as u8,
            (f32::from(g) * shade) as u8,
            (f32::from(bl) * shade) as u8,
        );
        painter.rect_filled(cell, 1.0, c);
        let rank = ranks.and_then(|r| r.all.get(r.first + k)).copied();
        let text = match rank {
            Some(rank) if cell.width() >= 40.0 => format!("{} · r{rank}", b - a),
            _ => format!("{}", b - a),
        };
        if cell.width() >= 14.0 {
            painter.text(
                cell.center(),
                Align2::CENTER_CENTER,
                text,
                FontId::proportional(9.0),
                Color32::BLACK,
            );
        }
    }
    for &b in bounds {
        let x = geo.boundary_x(b);
        painter.line_segment(
            [Pos2::new(x, rect.top()), Pos2::new(x, rect.bottom())],
            Stroke::new(2.0, Color32::WHITE),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(region_of(&[4, 8], 3), 1);
        assert_eq!(region_of(&[4, 8], 4), 2);
    }
}
