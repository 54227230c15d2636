//! The statistics panel: step figures, the per-rank table (warmup window, encoder work, analytic
//! vs simulated spill, peak memory), and the memory curves. All numbers come from `core`.

use egui::{RichText, Ui};
use mpipe::sim_report::secs;
use mpipe::simulation::Simulation;

/// The one-line summary above the timeline.
pub fn summary(sim: &Simulation) -> String {
    format!(
        "makespan {} s · bubble {:.1} % · utilisation {:.1} %{}",
        secs(sim.makespan_s),
        100.0 * sim.bubble_fraction,
        100.0 * sim.utilisation,
        sim.encoder_free_makespan_s
            .map_or(String::new(), |f| format!(
                " · without the encoder {} s",
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
                let mut pts: Vec<[f64; 2]> = Vec::with_capacity(curve.points.len() * 2 + 1);
                let mut last = None;
                for p in &curve.points {
                    if let Some(y) = last {
                        pts.push([p[0], y]);
                    }
                    pts.push([p[0], p[1] / 1e9]);
                    last = Some(p[1] / 1e9);
                }
                if let Some(y) = last {
                    pts.push([sim.makespan_s, y]);
                }
                plot.line(Line::new(
                    format!("rank {}", curve.rank),
                    PlotPoints::from(pts),
                ));
                plot.points(
                    Points::new(
                        format!("rank {}", curve.rank),
                        vec![[curve.peak_at_s, curve.peak_bytes / 1e9]],
                    )
                    .radius(3.0),
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
