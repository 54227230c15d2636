//! The statistics panel: step figures, the per-rank table (warmup window, encoder work, analytic
//! vs simulated spill, peak memory), and the memory curves. All numbers come from `core`.

use egui::{RichText, Ui};
use mpipe::sim_report::secs;
use mpipe::simulation::Simulation;

/// The one-line summary above the timeline.
pub fn summary(sim: &Simulation) -> String {
    format!(
        "makespan {} · bubble {:.1} % · utilisation {:.1} %{}",
        secs(sim.makespan_s),
        100.0 * sim.bubble_fraction,
        100.0 * sim.utilisation,
        sim.encoder_free_makespan_s
            .map_or(String::new(), |f| format!(
                " · without the encoder {}",
                secs(f)
            ))
    )
}

/// The per-rank table (the same cells as `mpipe simulate`); an over-capacity peak is red.
pub fn rank_table(ui: &mut Ui, sim: &Simulation) {
    egui::Grid::new("ranks").striped(true).show(ui, |ui| {
        for head in mpipe::sim_report::RANK_COLUMNS {
            ui.label(RichText::new(head).small().strong());
        }
        ui.end_row();
        for r in &sim.ranks {
            let cells = mpipe::sim_report::rank_cells(r);
            let last = cells.len().saturating_sub(1);
            for (i, cell) in cells.into_iter().enumerate() {
                let text = RichText::new(cell);
                ui.label(if i == last && r.over_capacity {
                    text.color(egui::Color32::from_rgb(0xE0, 0x50, 0x50))
                } else {
                    text
                });
            }
            ui.end_row();
        }
    });
}

/// The memory step curve in GB as plot points, limited to about `buckets` buckets over the
/// visible range: a curve with more changes than that keeps, per bucket, its first, lowest,
/// highest and last value, so peaks survive and a million-event step still draws in a frame.
pub fn step_points(
    points: &[[f64; 2]],
    end: f64,
    (t0, t1): (f64, f64),
    buckets: usize,
) -> Vec<[f64; 2]> {
    let mut steps: Vec<[f64; 2]> = Vec::with_capacity(points.len() * 2 + 1);
    let mut last: Option<f64> = None;
    for p in points {
        if let Some(y) = last {
            steps.push([p[0], y]);
        }
        steps.push([p[0], p[1] / 1e9]);
        last = Some(p[1] / 1e9);
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

/// Memory per rank over time, with the capacity line when the hardware gives one. The x axis
/// follows the timeline: `range` is the timeline's visible range (the whole step when `None`);
/// dragging or zooming the plot along x returns the range to give the timeline.
pub fn memory_plot(ui: &mut Ui, sim: &Simulation, range: Option<(f64, f64)>) -> Option<(f64, f64)> {
    use egui_plot::{HLine, Line, Plot, PlotPoints, Points};
    let capacity = sim.derivation.plan.hardware.memory_bytes;
    let (t0, t1) = range.unwrap_or((0.0, sim.makespan_s));
    let response = Plot::new("memory")
        .height(160.0)
        .allow_scroll(false)
        .allow_zoom([true, false])
        .allow_drag([true, false])
        .allow_double_click_reset(false)
        .include_y(0.0)
        .x_axis_label("time (s)")
        .y_axis_label("GB")
        .legend(egui_plot::Legend::default())
        .show(ui, |plot| {
            plot.set_plot_bounds_x(t0..=t1);
            for curve in &sim.memory {
                let pts = step_points(&curve.points, sim.makespan_s, (t0, t1), 600);
                // One colour per rank for its line and its peak marker.
                let (r, g, b) = mpipe::palette::hue(curve.rank);
                let colour = egui::Color32::from_rgb(r, g, b);
                plot.line(
                    Line::new(format!("rank {}", curve.rank), PlotPoints::from(pts)).color(colour),
                );
                plot.points(
                    Points::new(
                        format!("rank {}", curve.rank),
                        vec![[curve.peak_at_s, curve.peak_bytes / 1e9]],
                    )
                    .radius(3.0)
                    .color(colour),
                );
            }
            if let Some(c) = capacity {
                plot.hline(HLine::new("capacity", c / 1e9));
            }
        });
    let interacted = response.response.dragged()
        || (response.response.hovered() && ui.input(|i| i.zoom_delta() != 1.0));
    let bounds = response.transform.bounds();
    let (a, b) = (bounds.min()[0], bounds.max()[0]);
    (interacted && (a, b) != (t0, t1) && b > a).then_some((a, b))
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
        let thin = step_points(&points, 10_000.0, (0.0, 10_000.0), 100);
        assert!(thin.len() <= 4 * 100 + 8, "{}", thin.len());
        let peak = thin.iter().map(|p| p[1]).fold(0.0, f64::max);
        assert_eq!(peak, 9.0);
        // Few points: drawn as exact steps.
        let exact = step_points(&[[0.0, 1e9], [2.0, 3e9]], 5.0, (0.0, 5.0), 100);
        assert_eq!(exact, vec![[0.0, 1.0], [2.0, 1.0], [2.0, 3.0], [5.0, 3.0]]);
    }
}
