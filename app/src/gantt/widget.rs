//! The Gantt widget: one lane per rank with a thin lane of arriving transfers, events coloured by
//! region (light forward, dark backward), microbatch numbers where they fit, idle time hatched,
//! warmup windows shaded, encoder spill marked, a time axis in seconds; wheel/pinch zoom, drag
//! pan, shift-drag box zoom, double-click reset; hover tooltip; click selects an event and
//! highlights its dependencies and the critical path. Everything drawn comes from the simulation.

use super::geometry::{Item, Span, TimeView, hit_test, render_items};
use crate::palette;
use egui::{Align2, Color32, FontId, Pos2, Rect, Sense, Stroke, StrokeKind, Vec2};
use mpipe::sim_report::{CommTiming, EventTiming, comm_timings, event_timings, secs};
use mpipe::simulation::Simulation;
use petgraph::Direction;
use petgraph::graph::NodeIndex;
use std::collections::HashSet;

const LABEL_W: f32 = 64.0;
const LANE: f32 = 24.0;
const COMM: f32 = 6.0;
const GAP: f32 = 8.0;
const AXIS: f32 = 28.0;

/// What the chart remembers between frames.
#[derive(Debug, Clone, Default)]
pub struct GanttState {
    /// Visible time range; `None` shows the whole step.
    pub range: Option<(f64, f64)>,
    /// The selected event's node.
    pub selected: Option<usize>,
    /// Where a shift-drag box zoom started (pixels).
    box_from: Option<f32>,
    /// Events and lanes of the simulation last drawn, rebuilt only when it changes.
    cache: Option<std::sync::Arc<GanttData>>,
    /// Where the chart was drawn last frame (for PNG export).
    pub last_rect: Option<Rect>,
}

/// The simulation's events laid out per lane, computed once per simulation.
#[derive(Debug)]
pub struct GanttData {
    key: (usize, u64, usize),
    pub events: Vec<EventTiming>,
    pub lanes: Vec<Vec<Span>>,
    pub comms: Vec<CommTiming>,
    /// When each rank's first backbone (wavefront) forward starts.
    pub first_backbone: Vec<Option<f64>>,
}

impl GanttData {
    fn key(sim: &Simulation) -> (usize, u64, usize) {
        (
            sim.derivation.order.graph.node_count(),
            sim.makespan_s.to_bits(),
            sim.derivation.plan.ranks,
        )
    }

    pub fn new(sim: &Simulation) -> Self {
        let events = event_timings(sim);
        let mut lanes: Vec<Vec<Span>> = vec![Vec::new(); sim.derivation.plan.ranks];
        for (i, e) in events.iter().enumerate() {
            if let Some(lane) = lanes.get_mut(e.rank) {
                lane.push(Span {
                    start: e.start_s,
                    end: e.end_s,
                    region: e.region,
                    backward: e.backward,
                    mb: e.mb,
                    index: i,
                });
            }
        }
        GanttData {
            key: Self::key(sim),
            events,
            lanes,
            comms: comm_timings(sim),
            first_backbone: (0..sim.derivation.plan.ranks)
                .map(|r| {
                    mpipe::metrics::wavefront_span(
                        &sim.derivation.plan,
                        &sim.derivation.order,
                        &sim.timeline,
                        r,
                    )
                    .map(|s| s.0)
                })
                .collect(),
        }
    }
}

impl GanttState {
    /// The laid-out events of `sim`, from the cache when it is the same simulation.
    pub fn data(&mut self, sim: &Simulation) -> std::sync::Arc<GanttData> {
        match &self.cache {
            Some(d) if d.key == GanttData::key(sim) => d.clone(),
            _ => {
                let d = std::sync::Arc::new(GanttData::new(sim));
                self.cache = Some(d.clone());
                d
            }
        }
    }
}

impl GanttState {
    /// Shows the whole step again.
    pub fn reset(&mut self) {
        self.range = None;
    }
}

fn lane_top(rect: Rect, lane: usize) -> f32 {
    rect.top() + lane as f32 * (LANE + COMM + GAP)
}

fn color((r, g, b): (u8, u8, u8)) -> Color32 {
    Color32::from_rgb(r, g, b)
}

/// Nodes one data hop up- and downstream of `node`, looking through collectives.
fn neighbours(sim: &Simulation, node: usize) -> HashSet<usize> {
    let g = &sim.derivation.order.graph;
    let mut out = HashSet::new();
    for dir in [Direction::Incoming, Direction::Outgoing] {
        let mut frontier = vec![NodeIndex::new(node)];
        for _ in 0..2 {
            let mut next = Vec::new();
            for n in frontier {
                for m in g.neighbors_directed(n, dir) {
                    if matches!(g.node_weight(m), Some(mpipe::event::Event::Coll { .. })) {
                        next.push(m);
                    } else {
                        out.insert(m.index());
                    }
                }
            }
            frontier = next;
        }
    }
    out
}

/// How to draw one chart.
#[derive(Debug, Clone, Copy, Default)]
pub struct GanttOptions {
    /// Grey the chart out (a stale result shown while the current edit is invalid).
    pub dimmed: bool,
    /// The full time range to show when not zoomed (shared by stacked charts); the step's
    /// makespan when `None`.
    pub span: Option<f64>,
    /// A time cursor (teaching mode).
    pub cursor: Option<f64>,
}

/// Draws the chart of `sim` filling the available width. Returns the node under the pointer.
pub fn gantt(
    ui: &mut egui::Ui,
    sim: &Simulation,
    state: &mut GanttState,
    options: GanttOptions,
) -> Option<usize> {
    let dimmed = options.dimmed;
    let ranks = sim.derivation.plan.ranks;
    let height = lane_top(Rect::ZERO, ranks) + AXIS;
    let width = ui.available_width().max(200.0);
    let (rect, response) =
        ui.allocate_exact_size(Vec2::new(width, height), Sense::click_and_drag());
    state.last_rect = Some(rect);
    let plot = Rect::from_min_max(
        Pos2::new(rect.left() + LABEL_W, rect.top()),
        rect.right_bottom(),
    );
    let makespan = options.span.unwrap_or(sim.makespan_s).max(1e-12);
    let (t0, t1) = state.range.unwrap_or((0.0, makespan));
    let mut view = TimeView::new(t0, t1, f64::from(plot.left()), f64::from(plot.width()));

    // Interaction: zoom, pan, box zoom, reset.
    if response.double_clicked() {
        state.reset();
        view = TimeView::new(0.0, makespan, view.x0, view.width);
    } else if let Some(pointer) = response.hover_pos() {
        let (scroll, zoom) = ui.input(|i| (i.smooth_scroll_delta, i.zoom_delta()));
        let factor = f64::from(zoom) * (f64::from(scroll.y) * 0.003).exp();
        if (factor - 1.0).abs() > 1e-6 {
            view.zoom_at(f64::from(pointer.x), factor);
        }
    }
    let shift = ui.input(|i| i.modifiers.shift);
    if response.drag_started() && shift {
        state.box_from = response.interact_pointer_pos().map(|p| p.x);
    }
    if response.dragged() && state.box_from.is_none() {
        view.pan_px(f64::from(response.drag_delta().x));
    }
    if response.drag_stopped()
        && let (Some(a), Some(b)) = (state.box_from.take(), response.interact_pointer_pos())
    {
        view.zoom_to_px(f64::from(a), f64::from(b.x));
    }
    if (view.t0, view.t1) != (0.0, makespan) {
        state.range = Some((view.t0, view.t1));
    }

    let painter = ui.painter_at(rect);
    let fade = |c: Color32| if dimmed { c.gamma_multiply(0.35) } else { c };
    let x = |t: f64| view.x_from_time(t) as f32;
    let data = state.data(sim);
    let events = &data.events;
    let items = render_items(&data.lanes, &view);
    let visible = |a: f64, b: f64| b >= view.t0 && a <= view.t1;

    for (rank, metrics) in sim.ranks.iter().enumerate() {
        let top = lane_top(rect, rank);
        let lane = Rect::from_min_max(
            Pos2::new(plot.left(), top),
            Pos2::new(plot.right(), top + LANE),
        );
        painter.text(
            Pos2::new(rect.left() + 4.0, top + LANE / 2.0),
            Align2::LEFT_CENTER,
            format!("rank {rank}"),
            FontId::proportional(13.0),
            fade(ui.visuals().text_color()),
        );
        // Idle: a hatched background under the events.
        painter.rect_filled(lane, 0.0, fade(ui.visuals().faint_bg_color));
        let step = 8.0;
        let mut hx = lane.left() - LANE;
        while hx < lane.right() {
            let a = Pos2::new(
                hx.max(lane.left()),
                lane.bottom() - (hx.max(lane.left()) - hx),
            );
            let b = Pos2::new(
                (hx + LANE).min(lane.right()),
                lane.top() + ((hx + LANE) - (hx + LANE).min(lane.right())),
            );
            painter.line_segment(
                [a, b],
                Stroke::new(1.0, fade(Color32::from_gray(90).gamma_multiply(0.4))),
            );
            hx += step;
        }
        let first = data.first_backbone.get(rank).copied().flatten();
        let window = metrics.warmup_window_s.or(first).unwrap_or(0.0);
        if window > 0.0 && visible(0.0, window) {
            let r = Rect::from_min_max(
                Pos2::new(x(0.0).max(lane.left()), top - 2.0),
                Pos2::new(x(window).min(lane.right()), top + LANE + 2.0),
            );
            painter.rect_filled(
                r,
                0.0,
                fade(color(mpipe::palette::WARMUP).gamma_multiply(0.35)),
            );
        }
        if let (Some(w), Some(s)) = (metrics.warmup_window_s, first)
            && s > w
            && visible(w, s)
        {
            let r = Rect::from_min_max(
                Pos2::new(x(w).max(lane.left()), top - 2.0),
                Pos2::new(x(s).min(lane.right()), top + LANE + 2.0),
            );
            painter.rect_stroke(
                r,
                0.0,
                Stroke::new(2.0, fade(color(mpipe::palette::SPILL))),
                StrokeKind::Inside,
            );
        }
    }
    let critical: HashSet<usize> = sim.critical_path.iter().map(|n| n.index()).collect();
    let related = state
        .selected
        .map(|n| neighbours(sim, n))
        .unwrap_or_default();
    for item in &items {
        let Some(e) = events.get(item.index) else {
            continue;
        };
        let top = lane_top(rect, item.lane);
        let r = Rect::from_min_max(
            Pos2::new(item.x0 as f32, top),
            Pos2::new((item.x1 as f32).max(item.x0 as f32 + 1.0), top + LANE),
        );
        painter.rect_filled(r, 1.0, fade(palette::chip(item.region, item.backward)));
        let selected = state.selected == Some(e.node);
        if selected || related.contains(&e.node) {
            painter.rect_stroke(r, 1.0, Stroke::new(2.0, Color32::WHITE), StrokeKind::Inside);
        } else if state.selected.is_some() && critical.contains(&e.node) {
            painter.rect_stroke(
                r,
                1.0,
                Stroke::new(1.5, Color32::from_rgb(0xFF, 0xD0, 0x40)),
                StrokeKind::Inside,
            );
        }
        if let Some(label) = &item.label {
            painter.text(
                r.center(),
                Align2::CENTER_CENTER,
                label,
                FontId::monospace(11.0),
                fade(Color32::WHITE),
            );
        }
    }
    for c in &data.comms {
        if !visible(c.start_s, c.end_s) || c.to_rank >= ranks {
            continue;
        }
        let top = lane_top(rect, c.to_rank) + LANE + 1.0;
        let r = Rect::from_min_max(
            Pos2::new(x(c.start_s).max(plot.left()), top),
            Pos2::new(
                x(c.end_s).max(x(c.start_s) + 1.0).min(plot.right()),
                top + COMM - 1.0,
            ),
        );
        painter.rect_filled(r, 0.0, fade(color(mpipe::palette::COMM)));
    }
    // Time axis.
    let axis_y = lane_top(rect, ranks);
    painter.line_segment(
        [
            Pos2::new(plot.left(), axis_y),
            Pos2::new(plot.right(), axis_y),
        ],
        Stroke::new(1.0, ui.visuals().text_color()),
    );
    let step = mpipe::svg::tick_step(view.span(), f64::from(plot.width() / 90.0));
    let mut t = (view.t0 / step).ceil() * step;
    while t <= view.t1 {
        let tx = x(t);
        painter.line_segment(
            [Pos2::new(tx, axis_y), Pos2::new(tx, axis_y + 4.0)],
            Stroke::new(1.0, ui.visuals().text_color()),
        );
        painter.text(
            Pos2::new(tx, axis_y + 6.0),
            Align2::CENTER_TOP,
            format!("{} s", mpipe::svg::tick_label(t, step)),
            FontId::proportional(11.0),
            ui.visuals().text_color(),
        );
        t += step;
    }
    if let Some(t) = options.cursor
        && visible(t, t)
    {
        painter.line_segment(
            [Pos2::new(x(t), rect.top()), Pos2::new(x(t), axis_y)],
            Stroke::new(2.0, Color32::from_rgb(0xFF, 0xD0, 0x40)),
        );
    }
    if let Some(from) = state.box_from
        && let Some(p) = response.interact_pointer_pos()
    {
        let r = Rect::from_x_y_ranges(from.min(p.x)..=from.max(p.x), plot.top()..=axis_y);
        painter.rect_filled(r, 0.0, Color32::from_white_alpha(30));
    }

    // Hover and selection.
    let hovered = response.hover_pos().and_then(|p| {
        let lane = ((p.y - rect.top()) / (LANE + COMM + GAP)).floor();
        if lane < 0.0 || (p.y - rect.top()) - lane * (LANE + COMM + GAP) > LANE {
            return None;
        }
        hit_test(&items, lane as usize, f64::from(p.x)).cloned()
    });
    let hovered_event = hovered
        .as_ref()
        .and_then(|i: &Item| events.get(i.index).map(|e| (i.count, e.clone())));
    if let Some((count, e)) = &hovered_event {
        let text = if *count > 1 {
            format!(
                "{count} events around {}–{} (zoom in to see each)",
                secs(e.start_s),
                secs(e.end_s)
            )
        } else {
            format!(
                "{} {}\nrank {}, region {}, microbatch {}\nstart {}, end {}, duration {}\nslack {}",
                e.action,
                if e.backward { "backward" } else { "forward" },
                e.rank,
                e.region,
                e.mb,
                secs(e.start_s),
                secs(e.end_s),
                secs(e.end_s - e.start_s),
                secs(sim.slack.get(e.node).copied().unwrap_or(0.0))
            )
        };
        response.clone().on_hover_text_at_pointer(text);
    }
    if response.clicked() {
        state.selected = hovered_event.as_ref().map(|(_, e)| e.node);
    }
    hovered_event.map(|(_, e)| e.node)
}
