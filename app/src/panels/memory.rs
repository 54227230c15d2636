//! Memory per rank over time: the current schedule's curves solid, each pinned baseline's dashed,
//! the device capacity as a line, peaks marked, and the teaching cursor; with a trace loaded,
//! each rank's measured memory of the step on screen beside its predicted curve (dotted; a CPU
//! allocator's totals count from the profiler's start, so they are drawn over the predicted
//! static bytes). The y axis fits the
//! curves (or starts at zero) with room above the peaks; the time axis is the timeline's — the
//! same left margin and the same visible range, so a time sits at the same x in both, and
//! dragging or zooming the plot along x moves the timeline too.

use super::plots::{CAPACITY, Entry};
use crate::state::Baseline;
use crate::state::derived::Shown;
use crate::state::view::PlotFrame;
use crate::timeline::{LABEL_W, rgb};
use egui::Ui;
use egui_plot::{HLine, Line, LineStyle, Plot, PlotPoints, PlotUi, Points, VLine};
use mpipe::sim::memory::MemoryCurve;
use mpipe::vocab::units::bytes_unit;

/// The most buckets a curve is thinned to ([`step_points`]): a pixel or two apiece across the plot.
const MAX_BUCKETS: usize = 600;

/// The buckets the curves on one plot share, when more than 16 of them are drawn.
const ALL_BUCKETS: usize = 16 * MAX_BUCKETS;

/// The fewest buckets a curve is thinned to.
const MIN_BUCKETS: usize = 100;

/// The buckets each curve is thinned to when `lines` curves share the plot: [`MAX_BUCKETS`] each
/// for up to 16, then an equal share of [`ALL_BUCKETS`] (no fewer than [`MIN_BUCKETS`]). What is
/// drawn — and what the renderer holds for it: a software renderer (Mesa's, on a machine without a
/// GPU) keeps a few hundred bytes a triangle, and 64 ranks' curves at 600 buckets each held
/// 173 MB — stays the same for up to 96 curves and grows by a sixth of that per 16 more; every
/// bucket keeps its lowest and highest point, so every peak is still drawn, and zooming in brings
/// the steps back.
pub fn buckets_per_line(lines: usize) -> usize {
    (ALL_BUCKETS / lines.max(1)).clamp(MIN_BUCKETS, MAX_BUCKETS)
}

/// The memory step curve in `unit`s (bytes per unit) as plot points, limited to about `buckets`
/// buckets over the visible range: a curve with more changes than that keeps, per bucket, its
/// first, lowest, highest and last value, so peaks survive and a million-event step still draws in
/// a frame.
pub fn step_points(
    points: &[[f64; 2]],
    end: f64,
    (t0, t1): (f64, f64),
    buckets: usize,
    unit: f64,
) -> Vec<[f64; 2]> {
    let mut steps: Vec<[f64; 2]> = Vec::with_capacity(points.len() * 2 + 1);
    let mut last: Option<f64> = None;
    for p in points {
        if let Some(y) = last {
            steps.push([p[0], y]);
        }
        steps.push([p[0], p[1] / unit]);
        last = Some(p[1] / unit);
    }
    if let Some(y) = last {
        steps.push([end, y]);
    }
    if steps.len() <= 4 * buckets.max(1) || t1 <= t0 {
        return steps;
    }
    let width = (t1 - t0) / buckets as f64;
    let mut out: Vec<[f64; 2]> = Vec::with_capacity(4 * buckets + 2);
    let mut i = 0;
    while i < steps.len() {
        let Some(&first) = steps.get(i) else { break };
        let bucket = ((first[0] - t0) / width).floor();
        let mut j = i;
        let (mut lo, mut hi) = (first, first);
        while let Some(&p) = steps.get(j) {
            if ((p[0] - t0) / width).floor() != bucket {
                break;
            }
            if p[1] < lo[1] {
                lo = p;
            }
            if p[1] > hi[1] {
                hi = p;
            }
            j += 1;
        }
        let last = steps.get(j - 1).copied().unwrap_or(first);
        let mut group = vec![first, lo, hi, last];
        group.sort_by(|a, b| a[0].total_cmp(&b[0]));
        group.dedup();
        out.extend(group);
        i = j;
    }
    out
}

/// The unit the plot counts bytes in, by the highest peak: GB, MB, kB or B.
pub fn unit_of<'a>(curves: impl Iterator<Item = &'a MemoryCurve>) -> (f64, &'static str) {
    bytes_unit(curves.map(|c| c.peak_bytes))
}

/// The y range (in `unit`s) that shows every curve (and where offload is used, the line without
/// it) with room above the peaks (and below the lowest point, unless the axis starts at zero).
pub fn y_range<'a>(
    curves: impl Iterator<Item = &'a MemoryCurve>,
    from_zero: bool,
    unit: f64,
) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for c in curves {
        for p in &c.points {
            lo = lo.min(p[1] / unit);
            hi = hi.max(p[1] / unit);
        }
        lo = lo.min(c.static_bytes / unit);
        hi = hi.max(c.peak_bytes / unit);
        // The line without offload (what the rank would hold) is drawn above the curve.
        if !c.offloaded_points.is_empty() {
            for p in c.with_part(&c.offloaded_points, 1.0) {
                hi = hi.max(p[1] / unit);
            }
        }
    }
    // No curve, or every curve at zero (a scenario that gives no bytes): a unit's span, not a
    // nanobyte's, whose ticks would read 0.0000000008.
    if !(lo.is_finite() && hi.is_finite()) || (lo == 0.0 && hi == 0.0) {
        return (0.0, 1.0);
    }
    if from_zero {
        lo = 0.0;
    }
    let pad = ((hi - lo) * 0.08).max(hi.abs() * 0.01).max(1e-9);
    ((lo - pad).max(0.0).min(lo), hi + pad)
}

/// What the memory plot shows.
#[derive(Debug, Clone, Copy)]
pub struct MemoryInput<'a> {
    pub current: &'a Shown,
    pub baselines: &'a [Baseline],
    /// The timeline's visible range.
    pub range: (f64, f64),
    pub cursor: Option<f64>,
    pub from_zero: bool,
    /// The measured memory of the trace step on screen.
    pub measured: &'a [mpipe::trace::compare::MeasuredMemoryCurve],
}

/// Draws the plot. Returns the range to give the timeline when the user dragged or zoomed the
/// plot along x, and where the plot put its axes.
pub fn memory_ui(ui: &mut Ui, input: MemoryInput<'_>) -> (Option<(f64, f64)>, PlotFrame) {
    let MemoryInput {
        current,
        baselines,
        range: (t0, t1),
        cursor,
        from_zero,
        measured,
    } = input;
    let measured_curves: Vec<MemoryCurve> = measured
        .iter()
        .map(|m| m.on_scale_of(current.sim.memory.get(m.rank)))
        .collect();
    let capacity = current.sim.derivation.plan.hardware.memory_bytes;
    let curves = || {
        current
            .sim
            .memory
            .iter()
            .chain(baselines.iter().flat_map(|b| b.shown.sim.memory.iter()))
            .chain(measured_curves.iter())
    };
    let (unit, unit_name) = unit_of(curves());
    let (lo, hi) = y_range(curves(), from_zero, unit);
    // The capacity line joins the plot when it is near the curves; far above, it is named.
    let capacity_in_units = capacity.map(|c| c / unit);
    let hi = match capacity_in_units {
        Some(c) if c > hi && c <= hi * 1.5 => c * 1.04,
        _ => hi,
    };
    let capacity_drawn = capacity_in_units.is_some_and(|c| c <= hi);
    // Every line the plot draws: each curve, and the current schedule's offload and
    // recomputation parts beside its own.
    let parts: usize = current
        .sim
        .memory
        .iter()
        .map(|c| {
            usize::from(!c.offloaded_points.is_empty())
                + usize::from(!c.recomputed_points.is_empty())
        })
        .sum();
    let buckets = buckets_per_line(curves().count() + parts);
    legend_ui(
        ui,
        current,
        baselines,
        !measured_curves.is_empty(),
        capacity_drawn,
    );
    let memory_axis = format!("memory ({unit_name})");
    // The time axis ticks as the timeline's do (one per 90 px); about four on the memory axis.
    let time_ticks = f64::from((ui.available_width() - LABEL_W).max(90.0)) / 90.0;
    let plot = Plot::new("memory")
        .height(170.0)
        .allow_scroll(false)
        .allow_zoom([true, false])
        .allow_drag([true, false])
        .allow_double_click_reset(false)
        .allow_boxed_zoom(false)
        .y_axis_min_width(LABEL_W);
    let response = super::plots::readable(plot, "time (s)", &memory_axis)
        .x_grid_spacer(super::plots::spacer(time_ticks))
        .show(ui, |plot| {
            plot.set_plot_bounds_x(t0..=t1);
            plot.set_plot_bounds_y(lo..=hi);
            let curves = Curves {
                range: (t0, t1),
                unit,
                buckets,
            };
            curves.predicted(plot, &current.sim.memory, "", current.sim.makespan_s, false);
            for b in baselines {
                let letter = super::compare::baseline_letter(&b.name);
                curves.predicted(
                    plot,
                    &b.shown.sim.memory,
                    &format!("{letter} "),
                    b.shown.sim.makespan_s,
                    true,
                );
            }
            curves.measured(plot, &measured_curves);
            if let Some(c) = capacity_in_units
                && c <= hi
            {
                plot.hline(HLine::new("device capacity", c).color(CAPACITY));
            }
            if let Some(t) = cursor {
                plot.vline(VLine::new("", t).color(crate::timeline::legend::CRITICAL));
            }
        });
    if let Some(c) = capacity_in_units
        && c > hi
    {
        ui.label(
            egui::RichText::new(format!(
                "device capacity {} is above the plot",
                mpipe::vocab::units::bytes(c * unit)
            ))
            .small(),
        );
    }
    super::plots::remember(ui, "memory", response.transform);
    let frame = PlotFrame {
        x_of_t0: response.transform.position_from_point_x(t0),
        x_of_t1: response.transform.position_from_point_x(t1),
        y_bytes: (
            response.transform.bounds().min()[1] * unit,
            response.transform.bounds().max()[1] * unit,
        ),
        cursor_x: cursor.map(|t| response.transform.position_from_point_x(t)),
    };
    (moved_range(ui, &response, (t0, t1)), frame)
}

/// The legend above the plot: each rank's colour, and how baselines and measured curves are drawn.
fn legend_ui(ui: &mut Ui, current: &Shown, baselines: &[Baseline], measured: bool, capacity: bool) {
    let curves = &current.sim.memory;
    let mut entries: Vec<Entry> = if curves.len() > crate::geometry::GROUP_FROM {
        // Many ranks: one entry says it, rather than rows of them (hover a curve for its rank).
        let last = curves.len() - 1;
        vec![
            Entry::line("rank 0", rgb(mpipe::view::palette::hue(0))),
            Entry::line(
                format!("… rank {last}: a colour each (hover a curve)"),
                rgb(mpipe::view::palette::hue(last)),
            ),
        ]
    } else {
        curves
            .iter()
            .map(|c| {
                Entry::line(
                    format!("rank {}", c.rank),
                    rgb(mpipe::view::palette::hue(c.rank)),
                )
            })
            .collect()
    };
    let grey = egui::Color32::GRAY;
    if !baselines.is_empty() {
        let letters: Vec<&str> = baselines
            .iter()
            .map(|b| super::compare::baseline_letter(&b.name))
            .collect();
        entries.push(Entry::line(
            format!("dashed: baseline {}", letters.join(", ")),
            grey,
        ));
    }
    if measured {
        entries.push(Entry::line("dotted: measured", grey));
    }
    if curves.iter().any(|c| !c.offloaded_points.is_empty()) {
        entries.push(Entry::line(
            "thin dashed: without offload (+ on the host)",
            grey,
        ));
    }
    if curves.iter().any(|c| !c.recomputed_points.is_empty()) {
        entries.push(Entry::line("thin dotted: less the recomputed bytes", grey));
    }
    entries.push(Entry::dot("peak", grey));
    if capacity {
        entries.push(Entry::line("device capacity", CAPACITY));
    }
    super::plots::legend_ui(ui, &entries);
}

/// The time range the user dragged or zoomed the plot to, when it moved from `range`.
fn moved_range<R>(
    ui: &Ui,
    response: &egui_plot::PlotResponse<R>,
    range: (f64, f64),
) -> Option<(f64, f64)> {
    let interacted = response.response.dragged()
        || (response.response.hovered() && ui.input(|i| i.zoom_delta() != 1.0));
    let bounds = response.transform.bounds();
    let (a, b) = (bounds.min()[0], bounds.max()[0]);
    (interacted && (a, b) != range && b > a).then_some((a, b))
}

/// How curves are drawn on the plot: the visible range, the unit of bytes, the buckets each
/// curve is thinned to ([`buckets_per_line`]).
struct Curves {
    range: (f64, f64),
    unit: f64,
    buckets: usize,
}

impl Curves {
    /// Predicted curves (`prefix`: a baseline's letter; dashed for baselines), each with its
    /// peak marked.
    fn predicted(
        &self,
        plot: &mut PlotUi<'_>,
        curves: &[MemoryCurve],
        prefix: &str,
        end: f64,
        dashed: bool,
    ) {
        for curve in curves {
            let colour = rgb(mpipe::view::palette::hue(curve.rank));
            let name = format!("{prefix}rank {}", curve.rank);
            let pts = step_points(&curve.points, end, self.range, self.buckets, self.unit);
            let mut line = Line::new(name.clone(), PlotPoints::from(pts))
                .color(colour)
                .allow_band(false);
            if dashed {
                line = line.style(LineStyle::dashed_loose()).width(1.0);
            }
            plot.line(line);
            plot.points(
                Points::new(name, vec![[curve.peak_at_s, curve.peak_bytes / self.unit]])
                    .radius(3.0)
                    .color(colour),
            );
            if dashed {
                continue;
            }
            // The current schedule's parts: what offload took off the device (drawn above the
            // curve, where the rank would be without it), and what recomputation made again
            // (below it, what the rank holds besides).
            for (part, sign, what) in [
                (&curve.offloaded_points, 1.0, "without offload"),
                (&curve.recomputed_points, -1.0, "less recomputed"),
            ] {
                if part.is_empty() {
                    continue;
                }
                let pts = step_points(
                    &curve.with_part(part, sign),
                    end,
                    self.range,
                    self.buckets,
                    self.unit,
                );
                let style = if sign > 0.0 {
                    LineStyle::dashed_dense()
                } else {
                    LineStyle::dotted_loose()
                };
                plot.line(
                    Line::new(format!("rank {} {what}", curve.rank), PlotPoints::from(pts))
                        .color(colour.gamma_multiply(0.6))
                        .style(style)
                        .width(1.0)
                        .allow_band(false),
                );
            }
        }
    }

    /// Measured curves, dotted in their rank's colour.
    fn measured(&self, plot: &mut PlotUi<'_>, curves: &[MemoryCurve]) {
        for curve in curves {
            let colour = rgb(mpipe::view::palette::hue(curve.rank));
            let end = curve.points.last().map_or(0.0, |p| p[0]);
            let pts = step_points(&curve.points, end, self.range, self.buckets, self.unit);
            plot.line(
                Line::new(
                    format!("measured rank {}", curve.rank),
                    PlotPoints::from(pts),
                )
                .color(colour.gamma_multiply(0.8))
                .style(LineStyle::dotted_dense())
                .width(1.5)
                .allow_band(false),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_curves_keep_peaks_when_thinned() {
        // A saw-tooth of 10,000 changes between 1 and 2 GB, one peak of 9 GB in the middle.
        let mut points: Vec<[f64; 2]> = (0..10_000)
            .map(|i| [i as f64, if i % 2 == 0 { 1e9 } else { 2e9 }])
            .collect();
        points[5_001][1] = 9e9;
        let thin = step_points(&points, 10_000.0, (0.0, 10_000.0), 100, 1e9);
        assert!(thin.len() <= 4 * 100 + 8, "{}", thin.len());
        let peak = thin.iter().map(|p| p[1]).fold(0.0, f64::max);
        assert_eq!(peak, 9.0);
        // Few points: drawn as exact steps.
        let exact = step_points(&[[0.0, 1e9], [2.0, 3e9]], 5.0, (0.0, 5.0), 100, 1e9);
        assert_eq!(exact, vec![[0.0, 1.0], [2.0, 1.0], [2.0, 3.0], [5.0, 3.0]]);
    }

    #[test]
    fn many_curves_share_the_points_a_plot_draws() {
        assert_eq!(buckets_per_line(0), 600);
        assert_eq!(buckets_per_line(1), 600);
        assert_eq!(buckets_per_line(16), 600);
        assert_eq!(buckets_per_line(17), 564);
        assert_eq!(buckets_per_line(64), 150);
        assert_eq!(buckets_per_line(128), 100);
        assert_eq!(buckets_per_line(10_000), 100);
        // 64 saw-teeth of 10,000 changes, one peak each: a quarter of the points of 600 buckets
        // a curve, every peak drawn.
        let drawn: Vec<Vec<[f64; 2]>> = (0..64)
            .map(|rank| {
                let mut points: Vec<[f64; 2]> = (0..10_000)
                    .map(|i| [i as f64, if i % 2 == 0 { 1e9 } else { 2e9 }])
                    .collect();
                points[100 * rank + 7][1] = 3e9 + rank as f64 * 1e6;
                step_points(
                    &points,
                    10_000.0,
                    (0.0, 10_000.0),
                    buckets_per_line(64),
                    1e9,
                )
            })
            .collect();
        let total: usize = drawn.iter().map(Vec::len).sum();
        assert!(total <= 64 * (4 * 150 + 8), "{total}");
        for (rank, pts) in drawn.iter().enumerate() {
            let peak = pts.iter().map(|p| p[1]).fold(0.0, f64::max);
            assert_eq!(peak, 3.0 + rank as f64 * 1e-3, "rank {rank}");
        }
    }

    #[test]
    fn the_y_range_fits_the_curves_with_room_above_the_peak() {
        let curve = |lo: f64, hi: f64| MemoryCurve {
            rank: 0,
            static_bytes: lo,
            points: vec![[0.0, lo], [1.0, hi]],
            peak_bytes: hi,
            peak_at_s: 1.0,
            over_capacity: false,
            recomputed_points: Vec::new(),
            offloaded_points: Vec::new(),
        };
        let curves = [curve(2.8e9, 12.8e9), curve(4.0e9, 12.2e9)];
        assert_eq!(unit_of(curves.iter()), (1e9, "GB"));
        let (lo, hi) = y_range(curves.iter(), false, 1e9);
        assert!((lo - 2.0).abs() < 1e-9, "{lo}");
        assert!((hi - 13.6).abs() < 1e-9, "{hi}");
        assert_eq!(y_range(curves.iter(), true, 1e9).0, 0.0);
        assert_eq!(y_range([].iter(), false, 1e9), (0.0, 1.0));
        // Nothing held anywhere: the axis spans one unit.
        assert_eq!(y_range([curve(0.0, 0.0)].iter(), false, 1.0), (0.0, 1.0));
        // Megabytes of memory read in MB, not as 0.004 GB.
        let small = [curve(2.5e6, 4.3e6)];
        assert_eq!(unit_of(small.iter()), (1e6, "MB"));
        let (lo, hi) = y_range(small.iter(), false, 1e6);
        assert!(lo > 2.0 && lo < 2.5 && hi > 4.3 && hi < 4.5, "{lo} {hi}");
    }
}
