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

/// A tick label with just the digits the step needs, and more where the tick itself needs them
/// (a tick at 2.5 on a coarse grid of step 2.5 reads `2.5`, not `2`).
pub fn tick_label(t: f64, step: f64) -> String {
    let mut decimals = if step >= 1.0 {
        0
    } else {
        (-step.log10()).ceil().max(0.0) as usize
    };
    let close = step.abs() * 1e-6;
    while decimals < 9 {
        let shown: f64 = format!("{t:.decimals$}").parse().unwrap_or(t);
        if (shown - t).abs() <= close {
            break;
        }
        decimals += 1;
    }
    format!("{t:.decimals$}")
}

/// Renders the simulation's timeline.
pub fn render(name: &str, sim: &Simulation) -> String {
    let scene = Scene::new(sim);
    let makespan_s = if sim.makespan_s > 0.0 {
        sim.makespan_s
    } else {
        1.0
    };
    let mut svg = Svg {
        sim,
        scene: &scene,
        makespan_s,
        out: String::new(),
    };
    svg.header();
    svg.title(name);
    svg.legend();
    svg.lanes();
    svg.events();
    svg.pairs();
    svg.transfers();
    svg.axis();
    svg.out.push_str("</svg>\n");
    svg.out
}

/// The SVG being written, one layer per method (as the app's `Paint` draws the chart).
struct Svg<'a> {
    sim: &'a Simulation,
    scene: &'a Scene,
    /// The time axis's end (the makespan, or 1 s for an empty step).
    makespan_s: f64,
    out: String,
}

impl Svg<'_> {
    const PLOT: f64 = WIDTH - LEFT - RIGHT;

    fn x(&self, t: f64) -> f64 {
        LEFT + t / self.makespan_s * Self::PLOT
    }

    fn lane_y(rank: usize) -> f64 {
        TOP + rank as f64 * (LANE + COMM_LANE + GAP)
    }

    fn header(&mut self) {
        let height = Self::lane_y(self.sim.derivation.plan.ranks) + 60.0;
        // Exposed collectives' hatching, where some stage has them.
        let exposed = if self.scene.events.iter().any(|e| e.exposed_comm_s > 0.0) {
            format!(
                r##"<pattern id="exposed" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="{}"/><line x1="0" y1="0" x2="0" y2="6" stroke="#8a8a94" stroke-width="1.5"/></pattern>"##,
                hex(palette::EXPOSED_COMM)
            )
        } else {
            String::new()
        };
        let s = &mut self.out;
        let _ = writeln!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height:.0}" viewBox="0 0 {WIDTH} {height:.0}" font-family="DejaVu Sans, Arial, sans-serif">"#
        );
        let _ = writeln!(
            s,
            r##"<defs><pattern id="idle" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="#f4f4f4"/><line x1="0" y1="0" x2="0" y2="6" stroke="#c8c8c8" stroke-width="2"/></pattern><pattern id="spill" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(-45)"><line x1="0" y1="0" x2="0" y2="6" stroke="{}" stroke-width="2"/></pattern>{exposed}</defs>"##,
            hex(palette::SPILL)
        );
        let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    }

    /// What the chart shows: the scenario, its schedule and shape, the makespan and bubble.
    fn title(&mut self, name: &str) {
        let plan = &self.sim.derivation.plan;
        let schedule: Vec<_> = plan.schedule();
        let title = format!(
            "{}{} — {}: makespan {}, bubble {:.1} %",
            if name.is_empty() {
                String::new()
            } else {
                format!("{name} · ")
            },
            schedule_to_string(&schedule),
            plan.shape(),
            secs(self.sim.makespan_s),
            100.0 * self.sim.bubble_fraction
        );
        let _ = writeln!(
            self.out,
            r#"<text x="{LEFT}" y="22" font-size="15" font-weight="bold">{}</text>"#,
            escape(&title)
        );
    }

    /// Regions, warmup, spill, idle (and overlapped pairs, where there are some).
    fn legend(&mut self) {
        let s = &mut self.out;
        let mut lx = LEFT;
        for r in &self.scene.regions {
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
        let mut px = lx + 280.0;
        if self.scene.events.iter().any(|e| e.pair.is_some()) {
            let _ = writeln!(
                s,
                r#"<rect x="{px}" y="32" width="24" height="12" fill="none" stroke="{}" stroke-width="1.5"/><text x="{}" y="42" font-size="11">overlapped pair (F;B)</text>"#,
                hex(palette::PAIR),
                px + 30.0
            );
            px += 170.0;
        }
        if self.scene.events.iter().any(|e| e.exposed_comm_s > 0.0) {
            let _ = writeln!(
                s,
                r#"<rect x="{px}" y="32" width="24" height="12" fill="url(#exposed)"/><text x="{}" y="42" font-size="11">collectives inside the stage, exposed</text>"#,
                px + 30.0
            );
            px += 250.0;
        }
        if self.sim.host_wait_s.iter().any(|&w| w > 0.0) {
            let _ = writeln!(
                s,
                r#"<rect x="{px}" y="32" width="24" height="12" fill="{}"/><text x="{}" y="42" font-size="11">waiting for its host to launch the work</text>"#,
                hex(palette::HOST_WAIT),
                px + 30.0
            );
        }
    }

    /// Each rank's lane: its name, idle hatching, warmup window and encoder spill.
    fn lanes(&mut self) {
        for lane in &self.scene.lanes {
            let rank = lane.rank;
            let y = Self::lane_y(rank);
            let plot = Self::PLOT;
            let warmup = lane.warmup.map(|w| (self.x(w.end_s), w.end_s));
            let spill = lane
                .spill
                .map(|sp| (self.x(sp.start_s), self.x(sp.end_s), sp.end_s - sp.start_s));
            let s = &mut self.out;
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
            if let Some((x_end, end_s)) = warmup {
                let _ = writeln!(
                    s,
                    r#"<rect x="{LEFT}" y="{:.1}" width="{:.2}" height="{:.1}" fill="{}" fill-opacity="0.45"><title>warmup window {}</title></rect>"#,
                    y - 2.0,
                    x_end - LEFT,
                    LANE + 4.0,
                    hex(palette::WARMUP),
                    secs(end_s)
                );
            }
            if let Some((x0, x1, spilled_s)) = spill {
                // The spill the metrics compute (`E_r − w_r`) beside the one drawn.
                let analytic = self
                    .sim
                    .ranks
                    .get(rank)
                    .and_then(|m| m.spill_s)
                    .map_or_else(|| "none".to_string(), secs);
                let _ = writeln!(
                    s,
                    r#"<rect x="{x0:.2}" y="{:.1}" width="{:.2}" height="{:.1}" fill="url(#spill)" stroke="{}" stroke-width="1.5"><title>encoder spill {} (analytic {analytic})</title></rect>"#,
                    y - 2.0,
                    x1 - x0,
                    LANE + 4.0,
                    hex(palette::SPILL),
                    secs(spilled_s),
                );
            }
        }
    }

    /// Every compute event, coloured by region and phase, with its label where it fits.
    fn events(&mut self) {
        for e in &self.scene.events {
            let y = Self::lane_y(e.rank.index());
            let (x0, x1) = (self.x(e.start_s), self.x(e.end_s));
            let w = (x1 - x0).max(0.5);
            let fill = hex(self.scene.colour(e.region.index(), e.action.phase));
            // The device's wait for its host's launch at the box's end, its exposed collectives
            // before it.
            let wait = self
                .sim
                .host_wait_s
                .get(e.node as usize)
                .copied()
                .unwrap_or(0.0);
            let wait_from = self.x(e.end_s - wait).clamp(x0, x1);
            let exposed_from = self.x(e.end_s - wait - e.exposed_comm_s).clamp(x0, x1);
            let s = &mut self.out;
            let _ = writeln!(
                s,
                r#"<rect x="{x0:.2}" y="{y:.1}" width="{w:.2}" height="{LANE}" fill="{fill}" stroke="white" stroke-width="0.6"><title>{} rank {} mb {}: {}–{}</title></rect>"#,
                e.action,
                e.rank,
                e.mb(),
                secs(e.start_s),
                secs(e.end_s)
            );
            // The end its stage's exposed collectives take.
            if e.exposed_comm_s > 0.0 {
                let from = exposed_from;
                if wait_from - from >= 0.5 {
                    let _ = writeln!(
                        s,
                        r#"<rect x="{from:.2}" y="{y:.1}" width="{:.2}" height="{LANE}" fill="url(#exposed)"><title>collectives inside the stage, exposed: {}</title></rect>"#,
                        wait_from - from,
                        secs(e.exposed_comm_s)
                    );
                }
            }
            if wait > 0.0 && x1 - wait_from >= 0.5 {
                let _ = writeln!(
                    s,
                    r#"<rect x="{wait_from:.2}" y="{y:.1}" width="{:.2}" height="{LANE}" fill="{}"><title>waiting for its host to launch the work: {}</title></rect>"#,
                    x1 - wait_from,
                    hex(palette::HOST_WAIT),
                    secs(wait)
                );
            }
            if let Some(label) = crate::view::scene::chip_label(e, w) {
                let _ = writeln!(
                    s,
                    r#"<text x="{:.2}" y="{:.1}" font-size="11" fill="white" text-anchor="middle">{label}</text>"#,
                    x0 + w / 2.0,
                    y + LANE * 0.68
                );
            }
        }
    }

    /// An overlapped pair: one frame around its two halves.
    fn pairs(&mut self) {
        for two in self.scene.events.windows(2) {
            if let [f, b] = two
                && f.pair == Some(PairHalf::Forward)
                && b.pair == Some(PairHalf::Backward)
                && f.rank == b.rank
            {
                let (x0, x1) = (self.x(f.start_s), self.x(b.end_s));
                let _ = writeln!(
                    self.out,
                    r#"<rect x="{x0:.2}" y="{:.1}" width="{:.2}" height="{:.1}" fill="none" stroke="{}" stroke-width="1.5"><title>({};{})OVERLAP_F_B</title></rect>"#,
                    Self::lane_y(f.rank.index()) - 1.0,
                    (x1 - x0).max(0.5),
                    LANE + 2.0,
                    hex(palette::PAIR),
                    f.action,
                    b.action
                );
            }
        }
    }

    /// The transfers arriving at each rank, in the thin lane under it.
    fn transfers(&mut self) {
        for c in &self.scene.transfers {
            let y = Self::lane_y(c.to_rank.index()) + LANE + 1.0;
            let (x0, x1) = (self.x(c.start_s), self.x(c.end_s));
            let _ = writeln!(
                self.out,
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
    }

    /// The time axis, about ten ticks in seconds.
    fn axis(&mut self) {
        let axis_y = Self::lane_y(self.sim.derivation.plan.ranks) + 4.0;
        let _ = writeln!(
            self.out,
            r#"<line x1="{LEFT}" y1="{axis_y:.1}" x2="{:.1}" y2="{axis_y:.1}" stroke="black"/>"#,
            LEFT + Self::PLOT
        );
        let step = tick_step(self.makespan_s, 10.0);
        let mut t = 0.0;
        let mut i = 0u32;
        // Bounded whatever the makespan (an infinite one cannot pass validation, and a loop must
        // not rely on that).
        while t <= self.makespan_s * (1.0 + 1e-9) && i <= 64 {
            let tx = self.x(t);
            let _ = writeln!(
                self.out,
                r#"<line x1="{tx:.2}" y1="{axis_y:.1}" x2="{tx:.2}" y2="{:.1}" stroke="black"/><text x="{tx:.2}" y="{:.1}" font-size="11" text-anchor="middle">{}</text>"#,
                axis_y + 5.0,
                axis_y + 18.0,
                tick_label(t, step)
            );
            i += 1;
            t = f64::from(i) * step;
        }
        let _ = writeln!(
            self.out,
            r#"<text x="{:.1}" y="{:.1}" font-size="11" text-anchor="end">time (s)</text>"#,
            LEFT + Self::PLOT,
            axis_y + 34.0
        );
    }
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
        // A coarse grid's tick between whole numbers keeps its digit.
        assert_eq!(tick_label(2.5, 2.5), "2.5");
        assert_eq!(tick_label(2.0, 2.5), "2");
        assert_eq!(escape("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
    }
}
