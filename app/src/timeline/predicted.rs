//! The predicted Gantt chart of one simulation: one lane per rank with a thin lane of arriving
//! transfers, events coloured by region (light forward, dark backward) labelled with their action
//! where it fits, idle time hatched with the word *bubble* where there is room, waits for a
//! transfer shaded, warmup windows, encoder spill, the selection with arrows to what it depends
//! on, search matches, a teaching cursor and a time axis. Wheel or pinch zooms at the pointer
//! (the page does not scroll), drag pans, shift-drag zooms to a box, double-click shows the whole
//! step; the view never leaves the step. Hover names an event or a transfer. The chart reports
//! what the user did; the caller turns it into commands.

use super::geometry::{Item, LaneLayout, LaneRow, TimeView, hit_test, render_items};
use super::legend::{CRITICAL, MATCH, SELECTED, WAIT};
use super::{LABEL_W, axis, rgb, wheel_factor};
use crate::state::derived::Shown;
use egui::{Align2, Color32, FontId, Painter, Pos2, Rect, Sense, Stroke, StrokeKind, Vec2};
use mpipe::metrics::GapKind;
use mpipe::palette;
use mpipe::sim_report::secs;

/// Height of the transfer lane under each rank.
const COMM: f32 = 6.0;
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

/// The height a chart of `ranks` lanes takes.
pub fn height(ranks: usize, lane_height: f32) -> f32 {
    layout(0.0, lane_height).lane_top(ranks) + AXIS
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
    } = input;
    let scene = &shown.scene;
    let sim = &shown.sim;
    let ranks = scene.ranks;
    let width = ui.available_width().max(200.0);
    let (rect, response) = ui.allocate_exact_size(
        Vec2::new(width, height(ranks, lane_height)),
        Sense::click_and_drag(),
    );
    response.widget_info(|| egui::WidgetInfo::labeled(egui::Role::Canvas, true, "timeline"));
    let lanes = layout(rect.top(), lane_height);
    let axis_y = lanes.lane_top(ranks);
    let plot = Rect::from_min_max(
        Pos2::new(rect.left() + LABEL_W, rect.top()),
        Pos2::new(rect.right(), axis_y),
    );
    let span = span.max(1e-12);
    let (t0, t1) = range.unwrap_or((0.0, span));
    let before =
        TimeView::new(t0, t1, f64::from(plot.left()), f64::from(plot.width())).clamped(span);
    let box_id = ui.scope_id().with((id_salt, "box zoom"));
    let view = interact(ui, &response, before, span, box_id);
    let mut out = ChartOutput {
        range: None,
        clicked: None,
        hovered: None,
        rect,
        plot,
    };
    if view != before || range.is_some() && view.is_whole(span) {
        out.range = Some((!view.is_whole(span)).then_some((view.t0, view.t1)));
    }
    if !ui.is_rect_visible(rect) {
        return out;
    }

    let painter = ui.painter_at(rect);
    let clipped = painter.with_clip_rect(plot.intersect(painter.clip_rect()));
    let fade = |c: Color32| if dimmed { c.gamma_multiply(0.35) } else { c };
    let x = |t: f64| view.x_from_time(t) as f32;
    let visible = |a: f64, b: f64| b >= view.t0 && a <= view.t1;
    let text = ui.visuals().text_color();

    for lane in &scene.lanes {
        let top = lanes.lane_top(lane.rank);
        let row = Rect::from_min_max(
            Pos2::new(plot.left(), top),
            Pos2::new(plot.right(), top + lane_height),
        );
        painter.text(
            Pos2::new(rect.left() + 4.0, top + lane_height / 2.0),
            Align2::LEFT_CENTER,
            format!("rank {}", lane.rank),
            FontId::proportional(13.0),
            fade(text),
        );
        clipped.rect_filled(row, 0.0, fade(ui.visuals().faint_bg_color));
        hatch(
            &clipped,
            row,
            fade(Color32::from_gray(90).gamma_multiply(0.4)),
        );
        let band = |a: f64, b: f64| {
            Rect::from_min_max(
                Pos2::new(x(a).max(row.left()), top - 2.0),
                Pos2::new(x(b).min(row.right()), top + lane_height + 2.0),
            )
        };
        if let Some(w) = lane.warmup
            && visible(w.start_s, w.end_s)
        {
            clipped.rect_filled(
                band(w.start_s, w.end_s),
                0.0,
                fade(rgb(palette::WARMUP).gamma_multiply(0.35)),
            );
        }
        if let Some(s) = lane.spill
            && visible(s.start_s, s.end_s)
        {
            painter.rect_stroke(
                band(s.start_s, s.end_s).intersect(plot.expand2(Vec2::new(0.0, 2.0))),
                0.0,
                Stroke::new(2.0, fade(rgb(palette::SPILL))),
                StrokeKind::Inside,
            );
        }
        // Bubbles: waits for a transfer shaded; the word where there is room.
        let first = lane.bubbles.partition_point(|g| g.end_s < view.t0);
        for gap in lane.bubbles.get(first..).unwrap_or_default() {
            if gap.start_s > view.t1 {
                break;
            }
            let (a, b) = (
                x(gap.start_s).max(row.left()),
                x(gap.end_s).min(row.right()),
            );
            if b - a < 2.0 {
                continue;
            }
            let r = Rect::from_min_max(Pos2::new(a, top), Pos2::new(b, top + lane_height));
            if gap.kind == GapKind::Transfer {
                clipped.rect_filled(r, 0.0, fade(WAIT.gamma_multiply(0.5)));
            }
            let word = match gap.kind {
                GapKind::Warmup => "warmup bubble",
                GapKind::Steady => "bubble",
                GapKind::Cooldown => "cooldown bubble",
                GapKind::Transfer => "wait",
            };
            if f64::from(b - a) >= 6.5 * word.len() as f64 + 8.0 && lane_height >= 14.0 {
                clipped.text(
                    r.center(),
                    Align2::CENTER_CENTER,
                    word,
                    FontId::proportional(11.0),
                    fade(text.gamma_multiply(0.7)),
                );
            }
        }
    }

    let items = render_items(&shown.lanes, &view);
    let dependencies = selected
        .map(|i| scene.dependencies(sim, i))
        .unwrap_or_default();
    let related = |i: usize| dependencies.iter().any(|d| d.from == i || d.to == i);
    let chip = |item: &Item| {
        let top = lanes.lane_top(item.lane);
        Rect::from_min_max(
            Pos2::new(item.x0 as f32, top),
            Pos2::new(
                (item.x1 as f32).max(item.x0 as f32 + 1.0),
                top + lane_height,
            ),
        )
    };
    for item in &items {
        let r = chip(item);
        clipped.rect_filled(r, 1.0, fade(rgb(scene.colour(item.region, item.backward))));
        let outline = if item.count > 1 {
            None
        } else if selected == Some(item.index) || related(item.index) {
            Some((2.0, SELECTED))
        } else if matches.binary_search(&item.index).is_ok() {
            Some((2.0, MATCH))
        } else if selected.is_some() && shown.on_critical_path(item.index) {
            Some((1.5, CRITICAL))
        } else {
            None
        };
        if let Some((w, c)) = outline {
            clipped.rect_stroke(r, 1.0, Stroke::new(w, c), StrokeKind::Inside);
        }
        if let Some(label) = &item.label {
            clipped.text(
                r.center(),
                Align2::CENTER_CENTER,
                label,
                FontId::monospace(11.0),
                fade(Color32::WHITE),
            );
        }
    }
    // Transfers arriving on each rank, culled to the view, sub-pixel runs merged.
    for lane in &scene.lanes {
        let top = lanes.lane_top(lane.rank) + lane_height + 1.0;
        let mut run: Option<(f32, f32)> = None;
        for &i in &lane.transfers {
            let Some(c) = scene.transfers.get(i) else {
                continue;
            };
            if !visible(c.start_s, c.end_s) {
                continue;
            }
            let (a, b) = (x(c.start_s), x(c.end_s).max(x(c.start_s) + 1.0));
            match run.as_mut() {
                Some(r) if a <= r.1 + 1.0 => r.1 = r.1.max(b),
                _ => {
                    if let Some((ra, rb)) = run.replace((a, b)) {
                        let r =
                            Rect::from_min_max(Pos2::new(ra, top), Pos2::new(rb, top + COMM - 1.0));
                        clipped.rect_filled(r, 0.0, fade(rgb(palette::COMM)));
                    }
                }
            }
        }
        if let Some((ra, rb)) = run {
            let r = Rect::from_min_max(Pos2::new(ra, top), Pos2::new(rb, top + COMM - 1.0));
            clipped.rect_filled(r, 0.0, fade(rgb(palette::COMM)));
        }
    }
    // Arrows from what the selection waits for, and to what waits for it.
    for d in &dependencies {
        let (Some(from), Some(to)) = (scene.events.get(d.from), scene.events.get(d.to)) else {
            continue;
        };
        let y = |rank: usize| lanes.lane_top(rank) + lane_height / 2.0;
        arrow(
            &clipped,
            Pos2::new(x(from.end_s), y(from.rank)),
            Pos2::new(x(to.start_s), y(to.rank)),
            Stroke::new(1.5, fade(SELECTED)),
        );
    }

    axis::paint(
        &painter,
        &axis::ticks(&view),
        axis_y,
        (plot.left(), plot.right()),
        Stroke::new(1.0, text),
    );
    if let Some(t) = cursor
        && visible(t, t)
    {
        clipped.line_segment(
            [Pos2::new(x(t), rect.top()), Pos2::new(x(t), axis_y)],
            Stroke::new(2.0, CRITICAL),
        );
    }
    let box_from: Option<f32> = ui.data(|d| d.get_temp(box_id)).flatten();
    if let Some(from) = box_from
        && let Some(p) = response.interact_pointer_pos()
    {
        let r = Rect::from_x_y_ranges(from.min(p.x)..=from.max(p.x), plot.top()..=axis_y);
        painter.rect_filled(r, 0.0, Color32::from_white_alpha(30));
    }

    // Hover and click.
    let under = response
        .hover_pos()
        .and_then(|p| lanes.hit(p.y, ranks).map(|(lane, row)| (p, lane, row)));
    let hovered_item = under.and_then(|(p, lane, row)| {
        (row == LaneRow::Compute)
            .then(|| hit_test(&items, lane, f64::from(p.x)))
            .flatten()
    });
    out.hovered = hovered_item.filter(|i| i.count == 1).map(|i| i.index);
    let tooltip = match (hovered_item, under) {
        (Some(item), _) => scene.events.get(item.index).map(|e| {
            if item.count > 1 {
                format!(
                    "{} events around {}–{} (zoom in to see each)",
                    item.count,
                    secs(e.start_s),
                    secs(e.end_s)
                )
            } else {
                let region = scene.region(e.region).map_or(String::new(), |r| r.label());
                format!(
                    "{} {}\nrank {}, {region}, microbatch {}\nstart {}, end {}, duration {}\nslack {}",
                    e.action,
                    if e.backward { "backward" } else { "forward" },
                    e.rank,
                    e.mb,
                    secs(e.start_s),
                    secs(e.end_s),
                    secs(e.end_s - e.start_s),
                    secs(sim.slack.get(e.node).copied().unwrap_or(0.0))
                )
            }
        }),
        (None, Some((p, lane, LaneRow::Transfers))) => {
            transfer_at(shown, lane, view.time_from_x(f64::from(p.x)), view.seconds_per_px() * 2.0)
        }
        _ => None,
    };
    if let Some(text) = tooltip {
        response.clone().on_hover_text_at_pointer(text);
    }
    if response.clicked() {
        out.clicked = Some(out.hovered);
    }
    out
}

/// The tooltip of the transfer arriving on `lane` at time `t` (within `slop` seconds).
fn transfer_at(shown: &Shown, lane: usize, t: f64, slop: f64) -> Option<String> {
    let scene = &shown.scene;
    let list = &scene.lanes.get(lane)?.transfers;
    let start = |i: &usize| scene.transfers.get(*i).map_or(f64::MAX, |c| c.start_s);
    let upto = list.partition_point(|i| start(i) <= t + slop);
    // Transfers may overlap: look back over the few that started before `t`.
    let c = list
        .get(..upto)?
        .iter()
        .rev()
        .take(256)
        .filter_map(|&i| scene.transfers.get(i))
        .find(|c| c.end_s + slop >= t)?;
    let what = match (c.seam, c.mb) {
        (Some(seam), Some(mb)) => {
            format!("{}({}→{}) of microbatch {mb}", c.comm, seam.from, seam.to)
        }
        _ => c.comm.clone(),
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
