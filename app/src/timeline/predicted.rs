//! The predicted Gantt chart of one simulation: one lane per rank with a thin lane of arriving
//! transfers, events coloured by region (light forward, dark backward) labelled with their action
//! where it fits, idle time hatched with the word *bubble* where there is room, waits for a
//! transfer shaded, warmup windows, encoder spill, the selection with arrows to what it depends
//! on, search matches, a teaching cursor and a time axis. Wheel or pinch zooms at the pointer
//! (the page does not scroll), drag pans, shift-drag zooms to a box, double-click shows the whole
//! step; the view never leaves the step. Hover names an event or a transfer. The chart reports
//! what the user did; the caller turns it into commands.

use super::legend::{CRITICAL, DEADLOCK, MATCH, PAIR, SELECTED, WAIT};
use super::{LABEL_W, axis, rgb, wheel_factor};
use crate::geometry::{
    GROUP, Item, LaneLayout, LaneRow, PairHalf, RowKind, Rows, TimeView, hit_test, mix_of,
    render_items,
};
use crate::state::derived::Shown;
use egui::{Align2, Color32, FontId, Painter, Pos2, Rect, Sense, Stroke, StrokeKind, Vec2};
use mpipe::sim::metrics::GapKind;
use mpipe::view::palette;
use mpipe::vocab::units::secs;

/// Height of the transfer lane under each rank.
const COMM: f32 = 6.0;
/// The size of a lane's "rank N" and of its "stages a, b" under a placement of its own.
const RANK_FONT: f32 = 13.0;
const STAGES_FONT: f32 = 10.0;
/// The size of a chip's two-line label (its phase over its microbatch).
const STACKED_FONT: f32 = 9.0;
/// A merged box's colours beyond those it keeps apart.
const MANY: Color32 = Color32::from_gray(0x90);
/// Space between ranks.
const GAP: f32 = 8.0;
/// Room above the first lane, so rank 0's warmup and spill marks (2 px taller than the lane) show.
const PAD_TOP: f32 = 4.0;
/// Height of the axis under the lanes.
const AXIS: f32 = 28.0;

/// What one chart draws.
#[derive(Debug, Clone, Copy)]
pub struct ChartInput<'a> {
    pub shown: &'a Shown,
    /// The full time range when not zoomed (shared by stacked charts).
    pub span: f64,
    /// The visible range; `None` shows `[0, span]`.
    pub range: Option<(f64, f64)>,
    /// Grey the chart out (the last valid result, shown while the current edit is invalid).
    pub dimmed: bool,
    /// A time cursor (teaching mode).
    pub cursor: Option<f64>,
    /// The selected event (an index into the scene's events of this `shown`).
    pub selected: Option<usize>,
    /// Search matches, sorted indices into the scene's events.
    pub matches: &'a [usize],
    pub lane_height: f32,
    /// Tells stacked charts apart (egui ids).
    pub id_salt: &'a str,
    /// A deadlocking order's wait-for cycle (rank and action, each waiting for the next), drawn
    /// over the events of the same names.
    pub cycle: &'a [(usize, mpipe::vocab::action::Action)],
    /// The lane groups shown expanded (a chart of more than [`crate::geometry::GROUP_FROM`]
    /// ranks collapses the others).
    pub expanded: &'a std::collections::BTreeSet<usize>,
}

/// What the user did to a chart this frame.
#[derive(Debug, Clone, PartialEq)]
pub struct ChartOutput {
    /// The new visible range (`None`: the whole step), when zoom or pan changed it.
    pub range: Option<Option<(f64, f64)>>,
    /// A click: the event under it, or `None` on empty space.
    pub clicked: Option<Option<usize>>,
    /// The event under the pointer.
    pub hovered: Option<usize>,
    /// An Ctrl-drag of an event along its lane ended: the event, and the time it was dropped at
    /// (the caller moves it there in its rank's order).
    pub reorder: Option<(usize, f64)>,
    /// A click on a lane group's label: the group to expand or collapse.
    pub toggled_group: Option<usize>,
    /// Where the chart was drawn.
    pub rect: Rect,
    /// The time axis: where `t = 0` and `t = span` would be drawn unzoomed (for alignment).
    pub plot: Rect,
}

fn layout(top: f32, lane_height: f32) -> LaneLayout {
    LaneLayout {
        top: top + PAD_TOP,
        lane: lane_height,
        comm: COMM,
        gap: GAP,
    }
}

/// The height a chart of `rows` lanes takes.
pub fn height(rows: usize, lane_height: f32) -> f32 {
    layout(0.0, lane_height).lane_top(rows) + AXIS
}

/// Applies this frame's zoom, pan, box zoom and reset to `view`; returns the view to draw.
pub(super) fn interact(
    ui: &mut egui::Ui,
    response: &egui::Response,
    mut view: TimeView,
    span: f64,
    box_id: egui::Id,
) -> TimeView {
    if response.double_clicked() {
        return TimeView::new(0.0, span, view.x0, view.width);
    }
    if let Some(pointer) = response.hover_pos() {
        let (scroll, zoom) = ui.input_mut(|i| {
            let scroll = i.smooth_scroll_delta;
            // The wheel zooms the chart; it must not scroll the page as well.
            i.smooth_scroll_delta = Vec2::ZERO;
            (scroll, i.zoom_delta())
        });
        let factor = f64::from(zoom) * wheel_factor(scroll.y);
        if (factor - 1.0).abs() > 1e-6 {
            view.zoom_at(f64::from(pointer.x), factor);
        }
        if scroll.x != 0.0 {
            view.pan_px(f64::from(scroll.x));
        }
    }
    let shift = ui.input(|i| i.modifiers.shift);
    if response.drag_started() && shift {
        let from = response.interact_pointer_pos().map(|p| p.x);
        ui.data_mut(|d| d.insert_temp(box_id, from));
    }
    let box_from: Option<f32> = ui.data(|d| d.get_temp(box_id)).flatten();
    if response.dragged() && box_from.is_none() {
        view.pan_px(f64::from(response.drag_delta().x));
    }
    if response.drag_stopped() {
        ui.data_mut(|d| d.remove::<Option<f32>>(box_id));
        if let (Some(a), Some(b)) = (box_from, response.interact_pointer_pos()) {
            view.zoom_to_px(f64::from(a), f64::from(b.x));
        }
    }
    view.clamped(span)
}

/// Diagonal hatching over `lane` (idle time), drawn under the events.
fn hatch(painter: &Painter, lane: Rect, colour: Color32) {
    let h = lane.height();
    let mut x = lane.left() - h;
    while x < lane.right() {
        let a = Pos2::new(x.max(lane.left()), lane.bottom() - (x.max(lane.left()) - x));
        let b = Pos2::new(
            (x + h).min(lane.right()),
            lane.top() + ((x + h) - (x + h).min(lane.right())),
        );
        painter.line_segment([a, b], Stroke::new(1.0, colour));
        x += 8.0;
    }
}

/// An arrow from `a` to `b`.
fn arrow(painter: &Painter, a: Pos2, b: Pos2, stroke: Stroke) {
    painter.line_segment([a, b], stroke);
    let dir = (b - a).normalized();
    if dir.is_finite() {
        let side = Vec2::new(-dir.y, dir.x) * 3.5;
        let back = b - dir * 7.0;
        painter.line_segment([b, back + side], stroke);
        painter.line_segment([b, back - side], stroke);
    }
}

/// What painting one frame of a chart needs: where things go and how they look.
struct Paint<'a> {
    /// The whole chart (labels included).
    painter: egui::Painter,
    /// The plot area only: nothing drawn through it reaches the rank labels.
    clipped: egui::Painter,
    view: TimeView,
    lanes: LaneLayout,
    rect: Rect,
    plot: Rect,
    dimmed: bool,
    text: Color32,
    faint: Color32,
    shown: &'a Shown,
    rows: Rows,
}

impl Paint<'_> {
    /// The box of a shift-drag zoom under way.
    fn box_zoom(&self, ui: &egui::Ui, id: egui::Id, response: &egui::Response) {
        let from: Option<f32> = ui.data(|d| d.get_temp(id)).flatten();
        if let Some(from) = from
            && let Some(p) = response.interact_pointer_pos()
        {
            let r = Rect::from_x_y_ranges(from.min(p.x)..=from.max(p.x), self.plot.y_range());
            self.painter
                .rect_filled(r, 0.0, Color32::from_white_alpha(30));
        }
    }

    /// Where a Ctrl-dragged event would go.
    fn drop_marker(&self, reordering: Option<usize>, pointer: Option<Pos2>) {
        if let Some(index) = reordering
            && let (Some(p), Some(e)) = (pointer, self.shown.scene.events.get(index))
        {
            let row = self.row(e.rank.index());
            self.clipped.line_segment(
                [
                    Pos2::new(p.x, row.top() - 2.0),
                    Pos2::new(p.x, row.bottom() + 2.0),
                ],
                Stroke::new(2.0, SELECTED),
            );
        }
    }

    fn fade(&self, c: Color32) -> Color32 {
        if self.dimmed {
            c.gamma_multiply(0.35)
        } else {
            c
        }
    }

    fn x(&self, t: f64) -> f32 {
        self.view.x_from_time(t) as f32
    }

    fn visible(&self, a: f64, b: f64) -> bool {
        b >= self.view.t0 && a <= self.view.t1
    }

    /// Rank `rank`'s compute row (its group's while the group is collapsed).
    fn row(&self, rank: usize) -> Rect {
        self.row_at(self.rows.of_rank(rank))
    }

    /// Row `index` of the chart.
    fn row_at(&self, index: usize) -> Rect {
        let top = self.lanes.lane_top(index);
        Rect::from_min_max(
            Pos2::new(self.plot.left(), top),
            Pos2::new(self.plot.right(), top + self.lanes.lane),
        )
    }

    /// A row's background: faint, hatched (idle wherever no event covers it).
    fn idle_background(&self, row: Rect) {
        self.clipped.rect_filled(row, 0.0, self.fade(self.faint));
        hatch(
            &self.clipped,
            row,
            self.fade(Color32::from_gray(90).gamma_multiply(0.4)),
        );
    }

    /// A collapsed group's row: its label (a click expands it) and hatched background.
    fn group_rows(&self) {
        for (i, kind) in self.rows.rows.iter().enumerate() {
            let RowKind::Group { ranks, .. } = kind else {
                continue;
            };
            let row = self.row_at(i);
            self.painter.text(
                Pos2::new(self.rect.left() + 4.0, row.center().y),
                Align2::LEFT_CENTER,
                format!("▸ {}–{}", ranks.start, ranks.end.saturating_sub(1)),
                FontId::proportional(RANK_FONT),
                self.fade(self.text),
            );
            self.idle_background(row);
        }
    }

    /// Each rank's label, hatched background, warmup window, spill and bubbles (ranks of a
    /// collapsed group: their group's row instead).
    fn lanes(&self) {
        self.group_rows();
        for lane in &self.shown.scene.lanes {
            if !self.rows.own_row(lane.rank) {
                continue;
            }
            let row = self.row(lane.rank);
            // The first rank of an expanded group says so (a click on it collapses the group).
            let name = match self.rows.group_of(lane.rank) {
                Some(_) if lane.rank % GROUP == 0 => format!("▾ rank {}", lane.rank),
                _ => format!("rank {}", lane.rank),
            };
            // Under a placement other than the default, say which stages the rank holds: under
            // the rank's name when the lane has room for both lines, else in the gap below it
            // (the two were drawn over each other on 24 px lanes).
            let stages =
                (!self.shown.scene.default_placement && !lane.stages.is_empty()).then(|| {
                    let stages: Vec<String> = lane.stages.iter().map(ToString::to_string).collect();
                    format!("stages {}", stages.join(", "))
                });
            let two_lines = row.height() >= RANK_FONT + STAGES_FONT + 4.0;
            let (rank_y, rank_align) = match (&stages, two_lines) {
                (Some(_), true) => (row.top() + 1.0, Align2::LEFT_TOP),
                _ => (row.center().y, Align2::LEFT_CENTER),
            };
            self.painter.text(
                Pos2::new(self.rect.left() + 4.0, rank_y),
                rank_align,
                name,
                FontId::proportional(RANK_FONT),
                self.fade(self.text),
            );
            if let Some(stages) = stages {
                let (y, align) = if two_lines {
                    (row.bottom() - 1.0, Align2::LEFT_BOTTOM)
                } else {
                    (row.bottom() + 1.0, Align2::LEFT_TOP)
                };
                self.painter.text(
                    Pos2::new(self.rect.left() + 4.0, y),
                    align,
                    stages,
                    FontId::proportional(STAGES_FONT),
                    self.fade(self.text.gamma_multiply(0.7)),
                );
            }
            self.idle_background(row);
            // Warmup and spill stand 2 px above and below the lane.
            let band = |a: f64, b: f64| {
                Rect::from_min_max(
                    Pos2::new(self.x(a).max(row.left()), row.top() - 2.0),
                    Pos2::new(self.x(b).min(row.right()), row.bottom() + 2.0),
                )
            };
            if let Some(w) = lane.warmup
                && self.visible(w.start_s, w.end_s)
            {
                self.clipped.rect_filled(
                    band(w.start_s, w.end_s),
                    0.0,
                    self.fade(rgb(palette::WARMUP).gamma_multiply(0.35)),
                );
            }
            if let Some(s) = lane.spill
                && self.visible(s.start_s, s.end_s)
            {
                self.painter.rect_stroke(
                    band(s.start_s, s.end_s).intersect(self.plot.expand2(Vec2::new(0.0, 2.0))),
                    0.0,
                    Stroke::new(2.0, self.fade(rgb(palette::SPILL))),
                    StrokeKind::Inside,
                );
            }
            self.bubbles(lane, row);
        }
    }

    /// Waits for a transfer shaded, and the word *bubble* where there is room.
    fn bubbles(&self, lane: &mpipe::view::scene::Lane, row: Rect) {
        let first = lane.bubbles.partition_point(|g| g.end_s < self.view.t0);
        for gap in lane.bubbles.get(first..).unwrap_or_default() {
            if gap.start_s > self.view.t1 {
                break;
            }
            let (a, b) = (
                self.x(gap.start_s).max(row.left()),
                self.x(gap.end_s).min(row.right()),
            );
            if b - a < 2.0 {
                continue;
            }
            let r = Rect::from_x_y_ranges(a..=b, row.y_range());
            if gap.kind == GapKind::Transfer {
                self.clipped
                    .rect_filled(r, 0.0, self.fade(WAIT.gamma_multiply(0.5)));
            }
            let word = match gap.kind {
                GapKind::Warmup => "warmup bubble",
                GapKind::Steady => "bubble",
                GapKind::Cooldown => "cooldown bubble",
                GapKind::Transfer => "wait",
            };
            if f64::from(b - a) >= 6.5 * word.len() as f64 + 8.0 && row.height() >= 14.0 {
                self.clipped.text(
                    r.center(),
                    Align2::CENTER_CENTER,
                    word,
                    FontId::proportional(11.0),
                    self.fade(self.text.gamma_multiply(0.7)),
                );
            }
        }
    }

    /// The events: coloured chips, outlined when selected, depended on, matched by the search
    /// or (with a selection) on the critical path, labelled where they fit.
    fn items(&self, items: &[Item], selected: Option<usize>, related: &[usize], matches: &[usize]) {
        let scene = &self.shown.scene;
        for item in items {
            let r = Rect::from_x_y_ranges(
                item.x0 as f32..=(item.x1 as f32).max(item.x0 as f32 + 1.0),
                self.row(item.lane).y_range(),
            );
            if !self.rows.own_row(item.lane) {
                // A collapsed group's ranks over one another, each faint: the denser, the more
                // of them busy.
                self.mixed(r, &self.drawn_mix(item), 2.0 / GROUP as f32);
                continue;
            }
            if item.count > 1 {
                self.mixed(r, &self.drawn_mix(item), 1.0);
            } else {
                self.clipped.rect_filled(
                    r,
                    1.0,
                    self.fade(rgb(scene.colour(item.region, item.phase))),
                );
            }
            if item.count == 1 {
                self.exposed_comm(r, item.index);
                self.host_wait(r, item.index);
            }
            if item.count == 1
                && let Some(half) = item.pair
            {
                self.pair_frame(r, half);
            }
            let outline = if item.count > 1 {
                None
            } else if selected == Some(item.index) || related.contains(&item.index) {
                Some((2.0, SELECTED))
            } else if matches.binary_search(&item.index).is_ok() {
                Some((2.0, MATCH))
            } else if selected.is_some() && self.shown.on_critical_path(item.index) {
                Some((1.5, CRITICAL))
            } else {
                None
            };
            if let Some((w, c)) = outline {
                self.clipped
                    .rect_stroke(r, 1.0, Stroke::new(w, c), StrokeKind::Inside);
            }
            if let Some(label) = &item.label {
                // A two-line label (the phase over the microbatch) in small text; on a lane too
                // short for two lines, its microbatch alone.
                let (text, size) = match label.split_once('\n') {
                    Some(_) if r.height() >= 2.0 * STACKED_FONT + 2.0 => {
                        (label.as_str(), STACKED_FONT)
                    }
                    Some((_, mb)) => (mb, STACKED_FONT),
                    None => (label.as_str(), 11.0),
                };
                self.clipped.text(
                    r.center(),
                    Align2::CENTER_CENTER,
                    text,
                    FontId::monospace(size),
                    self.fade(Color32::WHITE),
                );
            }
        }
    }

    /// The colours a box is drawn in (of a long merged run, a sample's).
    fn drawn_mix(&self, item: &Item) -> crate::geometry::Mix {
        let lane = self.shown.lane(item.lane);
        mix_of(lane, item, false)
    }

    /// A merged run of events: a band per colour, stacked, each as tall as its share of the
    /// run's busy time (the colours beyond those a box keeps apart in grey), at `opacity`.
    fn mixed(&self, r: Rect, mix: &crate::geometry::Mix, opacity: f32) {
        let scene = &self.shown.scene;
        let mut top = r.top();
        for (colour, share) in mix.shares().into_iter().filter(|s| s.1 > 0.0) {
            let fill = colour.map_or(MANY, |(region, phase)| rgb(scene.colour(region, phase)));
            let bottom = (top + share as f32 * r.height()).min(r.bottom());
            self.clipped.rect_filled(
                Rect::from_x_y_ranges(r.x_range(), top..=bottom),
                0.0,
                self.fade(fill).gamma_multiply(opacity),
            );
            top = bottom;
        }
    }

    /// The end of event `index`'s box its stage's exposed collectives take (tensor-, expert-,
    /// context-parallel communication the compute did not hide), dark and hatched, with an edge
    /// where the compute ends.
    fn exposed_comm(&self, r: Rect, index: usize) {
        let Some(e) = self.shown.scene.events.get(index) else {
            return;
        };
        // Before the host's wait at the box's end, when there is one.
        let end = e.end_s - self.shown.host_wait(index);
        self.end_band(r, (end - e.exposed_comm_s, end), palette::EXPOSED_COMM);
    }

    /// The end of event `index`'s box its device spent waiting for its host to launch the
    /// work (a host-bound runtime: its work done, the rest not yet launched), slate and hatched.
    fn host_wait(&self, r: Rect, index: usize) {
        let Some(e) = self.shown.scene.events.get(index) else {
            return;
        };
        let wait = self.shown.host_wait(index);
        self.end_band(r, (e.end_s - wait, e.end_s), palette::HOST_WAIT);
    }

    /// A dark, hatched band of box `r` over `[from, to]` seconds, with an edge where it starts
    /// (none where it is under a pixel wide).
    fn end_band(&self, r: Rect, (from, to): (f64, f64), colour: palette::Rgb) {
        if to <= from {
            return;
        }
        let (from, to) = (
            self.x(from).clamp(r.left(), r.right()),
            self.x(to).clamp(r.left(), r.right()),
        );
        if to - from < 1.0 {
            return;
        }
        let band = Rect::from_x_y_ranges(from..=to, r.y_range());
        self.clipped.rect_filled(band, 0.0, self.fade(rgb(colour)));
        hatch(
            &self
                .clipped
                .with_clip_rect(band.intersect(self.clipped.clip_rect())),
            band,
            self.fade(Color32::from_white_alpha(60)),
        );
        self.clipped.line_segment(
            [band.left_top(), band.left_bottom()],
            Stroke::new(1.0, self.fade(Color32::from_black_alpha(140))),
        );
    }

    /// One half of an overlapped pair's frame: the two halves, side by side, read as one box
    /// split where the forward ends.
    fn pair_frame(&self, r: Rect, half: PairHalf) {
        let stroke = Stroke::new(1.5, self.fade(PAIR));
        let (top, bottom) = (r.top() + 0.75, r.bottom() - 0.75);
        let (outer, inner) = match half {
            PairHalf::Forward => (r.left() + 0.75, r.right()),
            PairHalf::Backward => (r.right() - 0.75, r.left()),
        };
        self.clipped
            .line_segment([Pos2::new(outer, top), Pos2::new(outer, bottom)], stroke);
        for y in [top, bottom] {
            self.clipped
                .line_segment([Pos2::new(outer, y), Pos2::new(inner, y)], stroke);
        }
    }

    /// The transfers arriving on each rank, culled to the view, sub-pixel runs merged.
    fn transfers(&self) {
        let scene = &self.shown.scene;
        let fill = self.fade(rgb(palette::COMM));
        for lane in scene.lanes.iter().filter(|l| self.rows.own_row(l.rank)) {
            let top = self.row(lane.rank).bottom() + 1.0;
            let bar = |(a, b): (f32, f32)| {
                Rect::from_min_max(Pos2::new(a, top), Pos2::new(b, top + COMM - 1.0))
            };
            let mut run: Option<(f32, f32)> = None;
            for c in lane
                .transfers
                .iter()
                .filter_map(|&i| scene.transfers.get(i as usize))
            {
                if !self.visible(c.start_s, c.end_s) {
                    continue;
                }
                let (a, b) = (
                    self.x(c.start_s),
                    self.x(c.end_s).max(self.x(c.start_s) + 1.0),
                );
                match run.as_mut() {
                    Some(r) if a <= r.1 + 1.0 => r.1 = r.1.max(b),
                    _ => {
                        if let Some(done) = run.replace((a, b)) {
                            self.clipped.rect_filled(bar(done), 0.0, fill);
                        }
                    }
                }
            }
            if let Some(done) = run {
                self.clipped.rect_filled(bar(done), 0.0, fill);
            }
        }
    }

    /// Arrows from what the selection waits for, and to what waits for it.
    fn dependencies(&self, dependencies: &[mpipe::view::scene::Dependency]) {
        let scene = &self.shown.scene;
        for d in dependencies {
            let (Some(from), Some(to)) = (scene.events.get(d.from), scene.events.get(d.to)) else {
                continue;
            };
            arrow(
                &self.clipped,
                Pos2::new(self.x(from.end_s), self.row(from.rank.index()).center().y),
                Pos2::new(self.x(to.start_s), self.row(to.rank.index()).center().y),
                Stroke::new(1.5, self.fade(SELECTED)),
            );
        }
    }

    /// A deadlock's wait-for cycle: each of its events outlined, and an arrow from each to the
    /// one it waits for (closing back to the first), in the error colour and never faded.
    fn cycle(&self, ui: &egui::Ui, cycle: &[(usize, mpipe::vocab::action::Action)]) {
        if cycle.is_empty() {
            return;
        }
        let scene = &self.shown.scene;
        // Found once per chart and cycle (a scan of every event), not every frame.
        let key = ui
            .scope_id()
            .with(("deadlock cycle", self.shown.generation, cycle));
        let found: Option<std::sync::Arc<Vec<Option<usize>>>> = ui.data(|d| d.get_temp(key));
        let found = found.unwrap_or_else(|| {
            let wanted: std::collections::HashMap<(usize, mpipe::vocab::action::Action), usize> =
                cycle.iter().enumerate().map(|(i, &k)| (k, i)).collect();
            let mut at: Vec<Option<usize>> = vec![None; cycle.len()];
            for (index, e) in scene.events.iter().enumerate() {
                if let Some(slot) = wanted
                    .get(&(e.rank.index(), e.action))
                    .and_then(|&i| at.get_mut(i))
                {
                    *slot = Some(index);
                }
            }
            let found = std::sync::Arc::new(at);
            ui.data_mut(|d| d.insert_temp(key, found.clone()));
            found
        });
        let events: Vec<&mpipe::view::timings::EventTiming> = found
            .iter()
            .flatten()
            .filter_map(|&i| scene.events.get(i))
            .collect();
        let stroke = Stroke::new(2.5, DEADLOCK);
        for e in &events {
            let row = self.row(e.rank.index());
            let r = Rect::from_x_y_ranges(self.x(e.start_s)..=self.x(e.end_s), row.y_range());
            self.clipped
                .rect_stroke(r, 0.0, stroke, StrokeKind::Outside);
        }
        for (i, from) in events.iter().enumerate() {
            let Some(to) = events.get(i + 1).or(events.first()) else {
                continue;
            };
            // `from` waits for `to`: the arrow runs from what is waited for to the waiter.
            arrow(
                &self.clipped,
                Pos2::new(self.x(to.end_s), self.row(to.rank.index()).center().y),
                Pos2::new(self.x(from.start_s), self.row(from.rank.index()).center().y),
                stroke,
            );
        }
    }

    /// The time axis and the teaching cursor.
    fn axis(&self, cursor: Option<f64>) {
        let axis_y = self.plot.bottom();
        axis::paint(
            &self.painter,
            &axis::ticks(&self.view),
            axis_y,
            (self.plot.left(), self.plot.right()),
            Stroke::new(1.0, self.text),
        );
        if let Some(t) = cursor
            && self.visible(t, t)
        {
            self.clipped.line_segment(
                [
                    Pos2::new(self.x(t), self.rect.top()),
                    Pos2::new(self.x(t), axis_y),
                ],
                Stroke::new(2.0, CRITICAL),
            );
        }
    }

    /// What the pointer is over: an event (or a merged run of them), or a transfer.
    fn tooltip(
        &self,
        item: Option<&Item>,
        pointer: Pos2,
        row: LaneRow,
        lane: usize,
    ) -> Option<String> {
        let scene = &self.shown.scene;
        match (item, row) {
            (Some(item), _) if item.count > 1 => {
                let (t0, t1) = (
                    self.view.time_from_x(item.x0),
                    self.view.time_from_x(item.x1),
                );
                let lane = self.shown.lane(item.lane);
                Some(merged_text(
                    scene,
                    item,
                    &mix_of(lane, item, true),
                    (t0, t1),
                ))
            }
            (Some(item), _) => self
                .shown
                .describe(item.index)
                .map(|lines| lines.join("\n")),
            (None, LaneRow::Transfers) => transfer_at(
                self.shown,
                lane,
                self.view.time_from_x(f64::from(pointer.x)),
                self.view.seconds_per_px() * 2.0,
            ),
            (None, LaneRow::Compute) => None,
        }
    }
}

/// A merged box's tooltip: how many events, when, and each colour's share of the busy time —
/// `212 events, 2.0 s–9.1 s (zoom in to see each)`, then `67 % backward · region 1 · backbone ·
/// 1f1b` per line.
fn merged_text(
    scene: &mpipe::view::scene::Scene,
    item: &Item,
    mix: &crate::geometry::Mix,
    (t0, t1): (f64, f64),
) -> String {
    let mut lines = vec![format!(
        "{} events, {}–{} (zoom in to see each)",
        item.count,
        secs(t0),
        secs(t1)
    )];
    for (colour, share) in mix.shares().into_iter().filter(|s| s.1 > 0.0) {
        let what = colour.map_or("other work".to_string(), |(region, phase)| {
            let place = scene
                .region(region)
                .map_or(format!("region {region}"), |r| r.label());
            format!("{} · {place}", phase.describe())
        });
        lines.push(format!("{:.0} % {what}", 100.0 * share));
    }
    lines.join("\n")
}

/// Draws the chart filling the available width.
pub fn chart_ui(ui: &mut egui::Ui, input: ChartInput<'_>) -> ChartOutput {
    let ChartInput {
        shown,
        span,
        range,
        dimmed,
        cursor,
        selected,
        matches,
        lane_height,
        id_salt,
        cycle,
        expanded,
    } = input;
    let rows = Rows::new(shown.scene.ranks, expanded);
    let row_count = rows.rows.len();
    let width = ui.available_width().max(200.0);
    let (rect, response) = ui.allocate_exact_size(
        Vec2::new(width, height(row_count, lane_height)),
        Sense::click_and_drag(),
    );
    response.widget_info(|| egui::WidgetInfo::labeled(egui::Role::Canvas, true, "timeline"));
    let lanes = layout(rect.top(), lane_height);
    let plot = Rect::from_min_max(
        Pos2::new(rect.left() + LABEL_W, rect.top()),
        Pos2::new(rect.right(), lanes.lane_top(row_count)),
    );
    let span = span.max(1e-12);
    let (t0, t1) = range.unwrap_or((0.0, span));
    let before =
        TimeView::new(t0, t1, f64::from(plot.left()), f64::from(plot.width())).clamped(span);
    let box_id = ui.scope_id().with((id_salt, "box zoom"));
    let reorder_id = ui.scope_id().with((id_salt, "reorder"));
    let reordering = reorder_gesture(ui, &response, shown, &rows, &lanes, &before, reorder_id);
    let view = match reordering {
        Some(_) => before,
        None => interact(ui, &response, before, span, box_id),
    };
    let mut out = ChartOutput {
        range: None,
        clicked: None,
        hovered: None,
        reorder: None,
        toggled_group: None,
        rect,
        plot,
    };
    if let Some(index) = reordering
        && (response.drag_stopped() || !response.dragged())
    {
        ui.data_mut(|d| d.remove::<Option<usize>>(reorder_id));
        if let Some(p) = response.interact_pointer_pos().or(response.hover_pos()) {
            out.reorder = Some((index, view.time_from_x(f64::from(p.x))));
        }
    }
    if view != before || range.is_some() && view.is_whole(span) {
        out.range = Some((!view.is_whole(span)).then_some((view.t0, view.t1)));
    }
    if !ui.is_rect_visible(rect) {
        return out;
    }

    let painter = ui.painter_at(rect);
    let paint = Paint {
        clipped: painter.with_clip_rect(plot.intersect(painter.clip_rect())),
        painter,
        view,
        lanes,
        rect,
        plot,
        dimmed,
        text: ui.visuals().text_color(),
        faint: ui.visuals().faint_bg_color,
        shown,
        rows,
    };
    paint.lanes();
    let items = render_items(&shown.lanes(), &view);
    let dependencies = selected
        .map(|i| shown.scene.dependencies(&shown.sim, i))
        .unwrap_or_default();
    let related: Vec<usize> = dependencies.iter().flat_map(|d| [d.from, d.to]).collect();
    paint.items(&items, selected, &related, matches);
    paint.transfers();
    paint.dependencies(&dependencies);
    paint.cycle(ui, cycle);
    paint.axis(cursor);
    paint.box_zoom(ui, box_id, &response);
    if out.reorder.is_none() {
        paint.drop_marker(reordering, response.interact_pointer_pos());
    }
    out.hovered = hover_ui(&paint, &response, &items);
    if response.clicked() {
        match response
            .interact_pointer_pos()
            .and_then(|p| group_label_at(&paint, p))
        {
            Some(group) => out.toggled_group = Some(group),
            None => out.clicked = Some(out.hovered),
        }
    }
    out
}

/// A Ctrl-drag on an event moves it along its lane (in its rank's order) instead of panning: the
/// event being moved, from the drag's start until it ends.
fn reorder_gesture(
    ui: &egui::Ui,
    response: &egui::Response,
    shown: &Shown,
    rows: &Rows,
    lanes: &LaneLayout,
    view: &TimeView,
    id: egui::Id,
) -> Option<usize> {
    if response.drag_started()
        && ui.input(|i| i.modifiers.command)
        && let Some(p) = ui.input(|i| i.pointer.press_origin())
        && let Some((row, LaneRow::Compute)) = lanes.hit(p.y, rows.rows.len())
        && let Some(RowKind::Rank(lane)) = rows.rows.get(row).cloned()
    {
        let items = render_items(&shown.lanes(), view);
        if let Some(item) = hit_test(&items, lane, f64::from(p.x)).filter(|i| i.count == 1) {
            let index = item.index;
            ui.data_mut(|d| d.insert_temp(id, Some(index)));
        }
    }
    ui.data(|d| d.get_temp(id)).flatten()
}

/// The event under the pointer (its tooltip shown), when it is one event.
fn hover_ui(paint: &Paint<'_>, response: &egui::Response, items: &[Item]) -> Option<usize> {
    let (pointer, index, row) = response.hover_pos().and_then(|p| {
        paint
            .lanes
            .hit(p.y, paint.rows.rows.len())
            .map(|(index, row)| (p, index, row))
    })?;
    let lane = match paint.rows.rows.get(index) {
        Some(RowKind::Rank(r)) => *r,
        Some(RowKind::Group { ranks, .. }) => {
            let text = format!(
                "ranks {}–{}, drawn over one another (the denser, the more of them busy): click the label to expand",
                ranks.start,
                ranks.end.saturating_sub(1)
            );
            response.clone().on_hover_text_at_pointer(text);
            return None;
        }
        None => return None,
    };
    let item = (row == LaneRow::Compute)
        .then(|| hit_test(items, lane, f64::from(pointer.x)))
        .flatten();
    if let Some(text) = paint.tooltip(item, pointer, row, lane) {
        response.clone().on_hover_text_at_pointer(text);
    }
    item.filter(|i| i.count == 1).map(|i| i.index)
}

/// The lane group whose label is at `p` (a collapsed group's, or an expanded group's first
/// rank's), when the chart groups its ranks.
fn group_label_at(paint: &Paint<'_>, p: Pos2) -> Option<usize> {
    if p.x >= paint.plot.left() {
        return None;
    }
    let (index, _) = paint.lanes.hit(p.y, paint.rows.rows.len())?;
    match paint.rows.rows.get(index)? {
        RowKind::Group { group, .. } => Some(*group),
        RowKind::Rank(r) if r % GROUP == 0 => paint.rows.group_of(*r),
        RowKind::Rank(_) => None,
    }
}

/// The tooltip of the transfer arriving on `lane` at time `t` (within `slop` seconds).
fn transfer_at(shown: &Shown, lane: usize, t: f64, slop: f64) -> Option<String> {
    let scene = &shown.scene;
    let list = &scene.lanes.get(lane)?.transfers;
    let start = |i: &u32| {
        scene
            .transfers
            .get(*i as usize)
            .map_or(f64::MAX, |c| c.start_s)
    };
    let upto = list.partition_point(|i| start(i) <= t + slop);
    // Transfers may overlap: look back over the few that started before `t`.
    let c = list
        .get(..upto)?
        .iter()
        .rev()
        .take(256)
        .filter_map(|&i| scene.transfers.get(i as usize))
        .find(|c| c.end_s + slop >= t)?;
    let what = match (c.seam, c.mb) {
        (Some(seam), Some(mb)) => {
            format!("{}({}→{}) of microbatch {mb}", c.comm, seam.from, seam.to)
        }
        _ => c.comm.to_string(),
    };
    Some(format!(
        "{what}\nrank {} → rank {}\n{}–{} ({})",
        c.from_rank,
        c.to_rank,
        secs(c.start_s),
        secs(c.end_s),
        secs(c.end_s - c.start_s)
    ))
}
