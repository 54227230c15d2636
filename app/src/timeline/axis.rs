//! The time axis under a chart: nice ticks for the visible range (pure, unit-tested) and their
//! painting. A label near either end of the plot is aligned to stay inside it, so the last one
//! is never cut.

use crate::geometry::TimeView;
use egui::{Align2, FontId, Painter, Pos2, Stroke};

/// How wide a tick label is: 6.5 px per character of 11 px text.
pub fn label_px(label: &str) -> f64 {
    6.5 * label.chars().count() as f64
}

/// How a label sits against its tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anchor {
    Left,
    Centre,
    Right,
}

/// One tick of the axis.
#[derive(Debug, Clone, PartialEq)]
pub struct Tick {
    pub t: f64,
    pub x: f64,
    pub label: String,
    pub anchor: Anchor,
}

/// The ticks of `view`, about one per 90 px, labelled in seconds.
pub fn ticks(view: &TimeView) -> Vec<Tick> {
    let step = mpipe::report::svg::tick_step(view.span(), view.width / 90.0);
    let (left, right) = (view.x0, view.x0 + view.width);
    let first = (view.t0 / step).ceil();
    // Bounded by the width: one tick per 45 px at most.
    let most = (view.width / 45.0).ceil() as usize + 2;
    (0..most)
        .map(|i| (first + i as f64) * step)
        .take_while(|&t| t <= view.t1 + step * 1e-9)
        .map(|t| {
            let x = view.x_from_time(t);
            let label = format!("{} s", mpipe::report::svg::tick_label(t, step));
            let half = label_px(&label) / 2.0;
            let anchor = if x - half < left {
                Anchor::Left
            } else if x + half > right {
                Anchor::Right
            } else {
                Anchor::Centre
            };
            Tick {
                t,
                x,
                label,
                anchor,
            }
        })
        .collect()
}

/// Paints the axis line at `y` from `x0` to `x1` and the ticks under it.
pub fn paint(painter: &Painter, ticks: &[Tick], y: f32, (x0, x1): (f32, f32), stroke: Stroke) {
    painter.line_segment([Pos2::new(x0, y), Pos2::new(x1, y)], stroke);
    for tick in ticks {
        let x = tick.x as f32;
        painter.line_segment([Pos2::new(x, y), Pos2::new(x, y + 4.0)], stroke);
        let align = match tick.anchor {
            Anchor::Left => Align2::LEFT_TOP,
            Anchor::Centre => Align2::CENTER_TOP,
            Anchor::Right => Align2::RIGHT_TOP,
        };
        painter.text(
            Pos2::new(x, y + 6.0),
            align,
            &tick.label,
            FontId::proportional(11.0),
            stroke.color,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_at_the_ends_stay_inside_the_plot() {
        // 0..70 s over 700 px: a tick every 10 s, the last one on the right edge.
        let view = TimeView::new(0.0, 70.0, 64.0, 700.0);
        let ticks = ticks(&view);
        let labels: Vec<&str> = ticks.iter().map(|t| t.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "0 s", "10 s", "20 s", "30 s", "40 s", "50 s", "60 s", "70 s"
            ]
        );
        assert_eq!(ticks[0].anchor, Anchor::Left);
        assert_eq!(ticks[3].anchor, Anchor::Centre);
        assert_eq!(ticks[7].anchor, Anchor::Right);
        assert_eq!(ticks[7].x, 764.0);
        for t in &ticks {
            let (a, b) = match t.anchor {
                Anchor::Left => (t.x, t.x + label_px(&t.label)),
                Anchor::Centre => (
                    t.x - label_px(&t.label) / 2.0,
                    t.x + label_px(&t.label) / 2.0,
                ),
                Anchor::Right => (t.x - label_px(&t.label), t.x),
            };
            assert!(a >= 64.0 && b <= 764.0, "{t:?}");
        }
    }

    #[test]
    fn zoomed_ticks_start_inside_the_view() {
        let view = TimeView::new(12.34, 12.84, 0.0, 500.0);
        let ticks = ticks(&view);
        assert!(ticks.iter().all(|t| t.t >= 12.34 && t.t <= 12.84));
        assert_eq!(ticks.first().map(|t| t.label.as_str()), Some("12.4 s"));
    }
}
