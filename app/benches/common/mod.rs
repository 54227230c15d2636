//! What the app's benchmarks draw: a million events on the timeline (`gantt`, `instructions`).

#![allow(clippy::expect_used, dead_code)] // a benchmark scenario that does not derive is a bug in the benchmark; each benchmark uses its part

use mpipe_studio::geometry::Span;
use mpipe_studio::state::derived::Shown;
use mpipe_studio::timeline::{ChartInput, chart_ui};

/// 64 lanes × 16,384 back-to-back events of 1 ms: 1,048,576 events.
pub fn lanes() -> Vec<Vec<Span>> {
    (0..64)
        .map(|lane| {
            (0..16_384)
                .map(|i| Span {
                    start: i as f64 * 1e-3,
                    end: (i + 1) as f64 * 1e-3,
                    region: 1 + (i / 7) % 3,
                    phase: if (i + lane) % 2 == 0 {
                        mpipe::vocab::phase::Phase::Backward
                    } else {
                        mpipe::vocab::phase::Phase::Forward
                    },
                    stage: lane,
                    mb: i % 1024,
                    index: lane * 16_384 + i,
                    pair: None,
                })
                .collect()
        })
        .collect()
}

/// A whole frame of the timeline widget on a simulated schedule of 1,048,576 compute events
/// (interleaved 1F1B, P = 64, M = 2048, v = 4): layout from the per-simulation scene, painting
/// and tessellation, headless (no GPU upload).
pub struct Frame {
    pub shown: Shown,
    ctx: egui::Context,
    expanded: std::collections::BTreeSet<usize>,
}

impl Frame {
    /// The schedule simulated and laid out once, as the app does after every edit.
    pub fn new() -> Self {
        let text = r#"{"format": "mpipe-scenario/1",
        "model": {"layers": [{"name": "a", "count": 64, "fwd_s": 1.0}, {"name": "b", "count": 64, "fwd_s": 1.0},
                             {"name": "c", "count": 64, "fwd_s": 1.0}, {"name": "d", "count": 64, "fwd_s": 1.0}]},
        "cut": [64, 128, 192], "schedule": ["1f1b", "1f1b", "1f1b", "1f1b"], "ranks": 64, "microbatches": 2048}"#;
        let scenario = mpipe::Scenario::from_json_str(text, "bench.json").expect("valid");
        let sim = mpipe::tune::pipeline::simulate_scenario(
            &scenario,
            mpipe::sim::engine::SimOptions::default(),
        )
        .expect("derives");
        let shown = Shown::new(1, "bench", sim);
        let ctx = egui::Context::default();
        mpipe_studio::fonts::install(&ctx);
        // Every lane drawn (a chart of many ranks is drawn with every group expanded: the worst
        // case).
        let expanded = (0..mpipe_studio::geometry::Rows::groups(shown.scene.ranks)).collect();
        Frame {
            shown,
            ctx,
            expanded,
        }
    }

    /// One frame of the chart over `range` (the whole step for `None`): the tessellated
    /// meshes' count.
    pub fn run(&self, range: Option<(f64, f64)>) -> usize {
        let input = egui::RawInput {
            screen_rect: Some(egui::Rect::from_min_size(
                egui::Pos2::ZERO,
                egui::vec2(1400.0, 2400.0),
            )),
            ..Default::default()
        };
        let shown = &self.shown;
        let out = self.ctx.run_ui(input, |ui| {
            chart_ui(
                ui,
                ChartInput {
                    shown,
                    span: shown.sim.makespan_s,
                    range,
                    dimmed: false,
                    cursor: None,
                    selected: None,
                    matches: &[],
                    lane_height: 24.0,
                    id_salt: "bench",
                    cycle: &[],
                    expanded: &self.expanded,
                },
            );
        });
        self.ctx.tessellate(out.shapes, out.pixels_per_point).len()
    }
}
