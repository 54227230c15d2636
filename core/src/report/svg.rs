//! The Gantt chart as SVG, for a slide or a paper: one lane per rank (with a thin lane of the
//! transfers arriving there), events coloured by region (light forward, dark backward) with their
//! microbatch where it fits, idle time hatched, warmup windows shaded, encoder spill marked, and a
//! time axis in seconds.

use crate::schedules::skeleton::schedule_to_string;
use crate::sim::run::Simulation;
use crate::view::palette::{self, hex};
use crate::view::scene::Scene;
use crate::view::timings::PairHalf;
use crate::vocab::units::secs;
use std::fmt::Write as _;

const WIDTH: f64 = 1200.0;
const LEFT: f64 = 72.0;
const RIGHT: f64 = 24.0;
const TOP: f64 = 56.0;
const LANE: f64 = 26.0;
const COMM_LANE: f64 = 7.0;
const GAP: f64 = 10.0;

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A "nice" tick step (1, 2 or 5 × 10^k) giving about `target` ticks over `span`.
pub fn tick_step(span: f64, target: f64) -> f64 {
    if span.is_nan() || span <= 0.0 {
        return 1.0;
    }
    let raw = span / target.max(1.0);
    let magnitude = 10f64.powf(raw.log10().floor());
    let residual = raw / magnitude;
    let nice = if residual < 1.5 {
        1.0
    } else if residual < 3.5 {
        2.0
    } else if residual < 7.5 {
        5.0
    } else {
        10.0
    };
    nice * magnitude
}

/// A tick label with just the digits the step needs.
pub fn tick_label(t: f64, step: f64) -> String {
    let decimals = if step >= 1.0 {
        0
    } else {
        (-step.log10()).ceil().max(0.0) as usize
    };
    format!("{t:.decimals$}")
}

/// Renders the simulation's timeline.
pub fn render(name: &str, sim: &Simulation) -> String {
    let scene = Scene::new(sim);
    let plan = &sim.derivation.plan;
    let p = plan.ranks;
    let makespan = if sim.makespan_s > 0.0 {
        sim.makespan_s
    } else {
        1.0
    };
    let plot = WIDTH - LEFT - RIGHT;
    let x = |t: f64| LEFT + t / makespan * plot;
    let lane_y = |r: usize| TOP + r as f64 * (LANE + COMM_LANE + GAP);
    let height = lane_y(p) + 60.0;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height:.0}" viewBox="0 0 {WIDTH} {height:.0}" font-family="DejaVu Sans, Arial, sans-serif">"#
    );
    let _ = writeln!(
        s,
        r##"<defs><pattern id="idle" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="#f4f4f4"/><line x1="0" y1="0" x2="0" y2="6" stroke="#c8c8c8" stroke-width="2"/></pattern><pattern id="spill" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(-45)"><line x1="0" y1="0" x2="0" y2="6" stroke="{}" stroke-width="2"/></pattern></defs>"##,
        hex(palette::SPILL)
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let schedule: Vec<_> = plan.regions.iter().map(|r| r.skeleton).collect();
    let title = format!(
        "{}{} — {}: makespan {}, bubble {:.1} %",
        if name.is_empty() {
            String::new()
        } else {
            format!("{name} · ")
        },
        schedule_to_string(&schedule),
        plan.shape(),
        secs(sim.makespan_s),
        100.0 * sim.bubble_fraction
    );
    let _ = writeln!(
        s,
        r#"<text x="{LEFT}" y="22" font-size="15" font-weight="bold">{}</text>"#,
        escape(&title)
    );
    // Legend: regions, warmup, spill, idle.
    let mut lx = LEFT;
    for r in &scene.regions {
        // A split backward shows its weight half's shade as a third chip.
        let weight_chip = if r.split() {
            format!(
                r#"<rect x="{}" y="32" width="12" height="12" fill="{}"/>"#,
                lx + 24.0,
                hex(r.weight)
            )
        } else {
            String::new()
        };
        let text_x = lx + if r.split() { 40.0 } else { 28.0 };
        let _ = writeln!(
            s,
            r#"<rect x="{lx}" y="32" width="12" height="12" fill="{}"/><rect x="{}" y="32" width="12" height="12" fill="{}"/>{weight_chip}<text x="{text_x}" y="42" font-size="11">region {} {} {}</text>"#,
            hex(r.forward),
            lx + 12.0,
            hex(r.backward),
            r.region,
            r.role.name(),
            r.skeleton
        );
        lx += if r.split() { 202.0 } else { 190.0 };
    }
    let _ = writeln!(
        s,
        r##"<rect x="{lx}" y="32" width="24" height="12" fill="{}" fill-opacity="0.45"/><text x="{}" y="42" font-size="11">warmup window</text><rect x="{}" y="32" width="24" height="12" fill="url(#spill)" stroke="{}"/><text x="{}" y="42" font-size="11">spill</text><rect x="{}" y="32" width="24" height="12" fill="url(#idle)"/><text x="{}" y="42" font-size="11">idle</text>"##,
        hex(palette::WARMUP),
        lx + 30.0,
        lx + 130.0,
        hex(palette::SPILL),
        lx + 160.0,
        lx + 210.0,
        lx + 240.0
    );
    if scene.events.iter().any(|e| e.pair.is_some()) {
        let px = lx + 280.0;
        let _ = writeln!(
            s,
            r#"<rect x="{px}" y="32" width="24" height="12" fill="none" stroke="{}" stroke-width="1.5"/><text x="{}" y="42" font-size="11">overlapped pair (F;B)</text>"#,
            hex(palette::PAIR),
            px + 30.0
        );
    }

    for lane in &scene.lanes {
        let rank = lane.rank;
        let y = lane_y(rank);
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{:.1}" font-size="12" text-anchor="end">rank {rank}</text>"#,
            LEFT - 8.0,
            y + LANE * 0.65
        );
        let _ = writeln!(
            s,
            r#"<rect x="{LEFT}" y="{y:.1}" width="{plot:.1}" height="{LANE}" fill="url(#idle)"/>"#
        );
        if let Some(w) = lane.warmup {
            let _ = writeln!(
                s,
                r#"<rect x="{LEFT}" y="{:.1}" width="{:.2}" height="{:.1}" fill="{}" fill-opacity="0.45"><title>warmup window {}</title></rect>"#,
                y - 2.0,
                x(w.end_s) - LEFT,
                LANE + 4.0,
                hex(palette::WARMUP),
                secs(w.end_s)
            );
        }
        if let Some(spill) = lane.spill {
            let analytic = sim.ranks.get(rank).and_then(|m| m.spill_s).unwrap_or(0.0);
            let _ = writeln!(
                s,
                r#"<rect x="{:.2}" y="{:.1}" width="{:.2}" height="{:.1}" fill="url(#spill)" stroke="{}" stroke-width="1.5"><title>encoder spill {} (analytic {})</title></rect>"#,
                x(spill.start_s),
                y - 2.0,
                x(spill.end_s) - x(spill.start_s),
                LANE + 4.0,
                hex(palette::SPILL),
                secs(spill.end_s - spill.start_s),
                secs(analytic)
            );
        }
    }
    for e in &scene.events {
        let y = lane_y(e.rank);
        let (x0, x1) = (x(e.start_s), x(e.end_s));
        let w = (x1 - x0).max(0.5);
        let fill = hex(scene.colour(e.region, e.action.phase));
        let _ = writeln!(
            s,
            r#"<rect x="{x0:.2}" y="{y:.1}" width="{w:.2}" height="{LANE}" fill="{fill}" stroke="white" stroke-width="0.6"><title>{} rank {} mb {}: {}–{}</title></rect>"#,
            e.action,
            e.rank,
            e.mb,
            secs(e.start_s),
            secs(e.end_s)
        );
        if let Some(label) = crate::view::scene::chip_label(e, w) {
            let _ = writeln!(
                s,
                r#"<text x="{:.2}" y="{:.1}" font-size="11" fill="white" text-anchor="middle">{label}</text>"#,
                x0 + w / 2.0,
                y + LANE * 0.68
            );
        }
    }
    // An overlapped pair: one frame around its two halves.
    for two in scene.events.windows(2) {
        if let [f, b] = two
            && f.pair == Some(PairHalf::Forward)
            && b.pair == Some(PairHalf::Backward)
            && f.rank == b.rank
        {
            let (x0, x1) = (x(f.start_s), x(b.end_s));
            let _ = writeln!(
                s,
                r#"<rect x="{x0:.2}" y="{:.1}" width="{:.2}" height="{:.1}" fill="none" stroke="{}" stroke-width="1.5"><title>({};{})OVERLAP_F_B</title></rect>"#,
                lane_y(f.rank) - 1.0,
                (x1 - x0).max(0.5),
                LANE + 2.0,
                hex(palette::PAIR),
                f.action,
                b.action
            );
        }
    }
    for c in &scene.transfers {
        let y = lane_y(c.to_rank) + LANE + 1.0;
        let (x0, x1) = (x(c.start_s), x(c.end_s));
        let _ = writeln!(
            s,
            r#"<rect x="{x0:.2}" y="{y:.1}" width="{:.2}" height="{COMM_LANE}" fill="{}"><title>{} r{}→r{}: {}–{}</title></rect>"#,
            (x1 - x0).max(0.5),
            hex(palette::COMM),
            c.comm,
            c.from_rank,
            c.to_rank,
            secs(c.start_s),
            secs(c.end_s)
        );
    }
    // Time axis.
    let axis_y = lane_y(p) + 4.0;
    let _ = writeln!(
        s,
        r#"<line x1="{LEFT}" y1="{axis_y:.1}" x2="{:.1}" y2="{axis_y:.1}" stroke="black"/>"#,
        LEFT + plot
    );
    let step = tick_step(makespan, 10.0);
    let mut t = 0.0;
    let mut i = 0u32;
    // About ten ticks; bounded whatever the makespan (an infinite one cannot pass validation,
    // and a loop must not rely on that).
    while t <= makespan * (1.0 + 1e-9) && i <= 64 {
        let tx = x(t);
        let _ = writeln!(
            s,
            r#"<line x1="{tx:.2}" y1="{axis_y:.1}" x2="{tx:.2}" y2="{:.1}" stroke="black"/><text x="{tx:.2}" y="{:.1}" font-size="11" text-anchor="middle">{}</text>"#,
            axis_y + 5.0,
            axis_y + 18.0,
            tick_label(t, step)
        );
        i += 1;
        t = f64::from(i) * step;
    }
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" font-size="11" text-anchor="end">time (s)</text>"#,
        LEFT + plot,
        axis_y + 34.0
    );
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_nice() {
        assert_eq!(tick_step(33.0, 10.0), 2.0);
        assert_eq!(tick_step(60.0, 10.0), 5.0);
        assert_eq!(tick_step(1.0, 10.0), 0.1);
        assert_eq!(tick_step(0.0, 10.0), 1.0);
        assert_eq!(tick_label(0.30000000000000004, 0.1), "0.3");
        assert_eq!(tick_label(15.0, 5.0), "15");
        assert_eq!(escape("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
    }
}
