//! Predicted against measured: for every rank its predicted lane with the measured lane under it,
//! a thin link from each predicted action to the same action measured, and the measured action
//! coloured by how far its start is from the prediction (green within 2 % of the step, amber
//! within 10 %, red beyond, grey when the prediction has no such action). Shares the time range
//! with the main chart (and its interaction: wheel zooms without scrolling the page, drag pans,
//! double-click resets, never past the step). Hover names the residuals.

use super::{LABEL_W, axis, predicted, rgb};
use crate::geometry::TimeView;
use crate::state::derived::Shown;
use egui::{Align2, Color32, FontId, Pos2, Rect, Sense, Stroke, Vec2};
use mpipe::trace::compare::{MeasuredBlock, ResidualClass};
use mpipe::vocab::units::{secs, signed_ms};

const ROW: f32 = 16.0;
const PAIR_GAP: f32 = 10.0;
const AXIS: f32 = 28.0;

/// The colour of a measured action by how far it starts from its prediction.
pub fn residual_color(class: ResidualClass) -> Color32 {
    match class {
        ResidualClass::Unpredicted => Color32::from_gray(140),
        ResidualClass::Close => Color32::from_rgb(0x4C, 0xAF, 0x50),
        ResidualClass::Off => Color32::from_rgb(0xF0, 0xA0, 0x30),
        ResidualClass::Far => Color32::from_rgb(0xE0, 0x50, 0x50),
    }
}

/// The top of the `row`-th pair of lanes.
fn pair_top(rect: Rect, row: usize) -> f32 {
    rect.top() + row as f32 * (2.0 * ROW + PAIR_GAP)
}

/// The ranks the chart has a pair of lanes for, in order: the plan's and any rank the traces
/// name. A sparse set: a file that says it is rank 4,000,000,000 adds one pair, not billions.
fn chart_ranks(plan_ranks: usize, blocks: &[MeasuredBlock]) -> Vec<usize> {
    let mut ranks: Vec<usize> = (0..plan_ranks)
        .chain(blocks.iter().map(|b| b.rank))
        .collect();
    ranks.sort_unstable();
    ranks.dedup();
    ranks
}

/// Draws the chart; `range` is the shared visible time range (`None`: the whole of `span`).
/// Returns the new range when the user zoomed or panned.
pub fn measured_chart(
    ui: &mut egui::Ui,
    shown: &Shown,
    blocks: &[MeasuredBlock],
    span: f64,
    range: Option<(f64, f64)>,
) -> Option<Option<(f64, f64)>> {
    let ranks = chart_ranks(shown.scene.ranks, blocks);
    let height = pair_top(Rect::ZERO, ranks.len()) + AXIS;
    let width = ui.available_width().max(200.0);
    let (rect, response) =
        ui.allocate_exact_size(Vec2::new(width, height), Sense::click_and_drag());
    response.widget_info(|| {
        egui::WidgetInfo::labeled(egui::Role::Canvas, true, "predicted vs measured")
    });
    let plot_left = rect.left() + LABEL_W;
    let span = span.max(1e-12);
    let (t0, t1) = range.unwrap_or((0.0, span));
    let before = TimeView::new(
        t0,
        t1,
        f64::from(plot_left),
        f64::from(rect.right() - plot_left),
    )
    .clamped(span);
    let view = predicted::interact(
        ui,
        &response,
        before,
        span,
        ui.scope_id().with("measured box"),
    );
    let changed = (view != before || range.is_some() && view.is_whole(span))
        .then_some((!view.is_whole(span)).then_some((view.t0, view.t1)));
    let painter = ui.painter_at(rect);
    let plot = Rect::from_min_max(Pos2::new(plot_left, rect.top()), rect.right_bottom());
    let paint = Paint {
        clipped: painter.with_clip_rect(plot.intersect(painter.clip_rect())),
        painter,
        rect,
        plot_left,
        view,
        ranks: &ranks,
        text: ui.visuals().text_color(),
    };
    paint.lanes(ui.visuals().faint_bg_color);
    paint.predicted(shown);
    let hovered = paint.measured(blocks, span, response.hover_pos());
    paint.axis();
    if let Some(b) = hovered {
        response.on_hover_text_at_pointer(block_text(b));
    }
    changed
}

/// The chart being painted, one layer per method (as the predicted chart's `Paint`).
struct Paint<'a> {
    painter: egui::Painter,
    /// The painter clipped to the plot (right of the rank labels).
    clipped: egui::Painter,
    rect: Rect,
    plot_left: f32,
    view: TimeView,
    /// The ranks with a pair of lanes, in order.
    ranks: &'a [usize],
    text: Color32,
}

impl Paint<'_> {
    fn x(&self, t: f64) -> f32 {
        self.view.x_from_time(t) as f32
    }

    fn visible(&self, a: f64, b: f64) -> bool {
        b >= self.view.t0 && a <= self.view.t1
    }

    /// The top of `rank`'s pair of lanes.
    fn top_of(&self, rank: usize) -> f32 {
        pair_top(self.rect, self.ranks.binary_search(&rank).unwrap_or(0))
    }

    /// A chip from `a` to `b` in the lane starting at `top` (at least a pixel wide).
    fn chip(&self, a: f64, b: f64, top: f32) -> Rect {
        Rect::from_min_max(
            Pos2::new(self.x(a).max(self.plot_left), top + 1.0),
            Pos2::new(
                self.x(b).max(self.x(a) + 1.0).min(self.rect.right()),
                top + ROW - 2.0,
            ),
        )
    }

    /// Each rank's pair of lanes (predicted above measured) with their labels; only the pairs
    /// on screen.
    fn lanes(&self, background: Color32) {
        let clip = self.painter.clip_rect();
        for (row, &rank) in self.ranks.iter().enumerate() {
            let top = pair_top(self.rect, row);
            if top > clip.bottom() || top + 2.0 * ROW < clip.top() {
                continue;
            }
            for (row, label) in [
                (0.0, format!("r{rank} pred")),
                (ROW, format!("r{rank} meas")),
            ] {
                self.painter.text(
                    Pos2::new(self.rect.left() + 4.0, top + row + ROW / 2.0),
                    Align2::LEFT_CENTER,
                    label,
                    FontId::proportional(11.0),
                    self.text,
                );
                self.painter.rect_filled(
                    Rect::from_min_max(
                        Pos2::new(self.plot_left, top + row),
                        Pos2::new(self.rect.right(), top + row + ROW - 1.0),
                    ),
                    0.0,
                    background,
                );
            }
        }
    }

    /// The predicted events, coloured as on the main chart.
    fn predicted(&self, shown: &Shown) {
        let scene = &shown.scene;
        for e in scene
            .events
            .iter()
            .filter(|e| self.visible(e.start_s, e.end_s))
        {
            let top = self.top_of(e.rank.index());
            self.clipped.rect_filled(
                self.chip(e.start_s, e.end_s, top),
                1.0,
                rgb(scene.colour(e.region.index(), e.action.phase)),
            );
        }
    }

    /// The measured blocks, coloured by how far they start from their prediction, each with its
    /// wait and a tick from its predicted start; returns the block under `pointer`.
    fn measured<'b>(
        &self,
        blocks: &'b [MeasuredBlock],
        span: f64,
        pointer: Option<Pos2>,
    ) -> Option<&'b MeasuredBlock> {
        let mut hovered = None;
        for b in blocks.iter().filter(|b| {
            self.visible(
                b.start_s.min(b.predicted.map_or(b.start_s, |p| p.0)),
                b.end_s,
            )
        }) {
            let top = self.top_of(b.rank) + ROW;
            let r = self.chip(b.start_s, b.end_s, top);
            self.clipped
                .rect_filled(r, 1.0, residual_color(b.residual_class(span)));
            // The span's wait (drawn first in it: an action waits for its inputs, then computes).
            let wait_end = (b.end_s - b.compute_s).max(b.start_s);
            if wait_end > b.start_s {
                let w = self.chip(b.start_s, wait_end, top);
                self.clipped
                    .rect_filled(w.intersect(r), 1.0, super::legend::MEASURED_WAIT);
            }
            if let Some((ps, _)) = b.predicted {
                self.clipped.line_segment(
                    [
                        Pos2::new(self.x(ps), top - 1.0),
                        Pos2::new(self.x(b.start_s), top + 1.0),
                    ],
                    Stroke::new(1.0, Color32::from_gray(120)),
                );
            }
            if r.width() > 7.0 * b.action.len() as f32 {
                self.clipped.text(
                    r.center(),
                    Align2::CENTER_CENTER,
                    &b.action,
                    FontId::monospace(10.0),
                    Color32::BLACK,
                );
            }
            if pointer.is_some_and(|p| r.expand(1.0).contains(p)) {
                hovered = Some(b);
            }
        }
        hovered
    }

    fn axis(&self) {
        let axis_y = pair_top(self.rect, self.ranks.len()) + 2.0;
        axis::paint(
            &self.painter,
            &axis::ticks(&self.view),
            axis_y,
            (self.plot_left, self.rect.right()),
            Stroke::new(1.0, self.text),
        );
    }
}

/// A measured block in words: when it ran, when it was predicted, its residuals.
fn block_text(b: &MeasuredBlock) -> String {
    let mut lines = format!(
        "rank {}: {} measured at {} for {}",
        b.rank,
        b.action,
        secs(b.start_s),
        secs(b.end_s - b.start_s)
    );
    match b.predicted {
        Some((ps, pe)) => lines.push_str(&format!(
            "\npredicted at {} for {}\nresidual: start {}, duration {}",
            secs(ps),
            secs(pe - ps),
            signed_ms(b.start_s - ps),
            signed_ms((b.end_s - b.start_s) - (pe - ps))
        )),
        None => lines.push_str("\nnot in the prediction"),
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lanes_go_to_the_ranks_there_are_not_up_to_the_largest_number() {
        let block = |rank| MeasuredBlock {
            rank,
            action: "0F0".into(),
            start_s: 0.0,
            end_s: 1.0,
            compute_s: 1.0,
            predicted: None,
        };
        assert_eq!(
            chart_ranks(2, &[block(1), block(4_000_000_000), block(1)]),
            [0, 1, 4_000_000_000]
        );
    }
}
