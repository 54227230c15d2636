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
/// The title's first baseline, the distance between its lines, and about how wide a character
/// of its bold 15-pixel text draws.
const TITLE_Y: f64 = 22.0;
const TITLE_LINE: f64 = 18.0;
const TITLE_CHAR_WIDTH: f64 = 9.5;
/// The top of the legend's first row, and each row's height.
const LEGEND_Y: f64 = 32.0;
const LEGEND_ROW: f64 = 18.0;
/// About how wide a character of the legend's 11-pixel text draws (DejaVu Sans, whose
/// characters are wider than most; an estimate, as SVG text is measured only where drawn).
const CHAR_WIDTH: f64 = 6.6;

/// `text` in lines of at most `chars` characters (at least one), broken between words, a word
/// longer than a line broken inside it.
fn wrapped(text: &str, chars: f64) -> Vec<String> {
    let chars = (chars as usize).max(1);
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    let mut len = 0;
    for word in text.split(' ') {
        let mut word: Vec<char> = word.chars().collect();
        loop {
            // A space before the word, where the line has some.
            let gap = usize::from(len > 0);
            if len + gap + word.len() <= chars {
                if gap == 1 {
                    line.push(' ');
                }
                line.extend(&word);
                len += gap + word.len();
                break;
            }
            if len > 0 {
                lines.push(std::mem::take(&mut line));
                len = 0;
                continue;
            }
            // Longer than a line on its own: as much as fits, the rest on the next.
            let rest = word.split_off(chars.min(word.len()));
            lines.push(word.into_iter().collect());
            word = rest;
        }
    }
    if len > 0 || lines.is_empty() {
        lines.push(line);
    }
    lines
}

/// How wide a legend entry is: `least` (the width it has always had, which leaves a gap after
/// its text), or, where its text starting at `text_at` would reach past that, its chips, its
/// text and a gap of 16 px.
fn fitted(least: f64, text_at: f64, text: &str) -> f64 {
    let drawn = text_at + text_width(text);
    if drawn > least { drawn + 16.0 } else { least }
}

/// About how wide `text` draws in the legend.
fn text_width(text: &str) -> f64 {
    (text.chars().count() as f64 * CHAR_WIDTH).ceil()
}

/// One entry of the legend: how wide it is ([`fitted`]), where its text starts, its chips and
/// its text.
#[derive(Debug)]
struct LegendItem {
    width: f64,
    text_at: f64,
    chip: Chip,
    text: String,
}

/// A legend entry's chips: a region's shades, or one 24-pixel swatch (its fill and any further
/// attributes).
#[derive(Debug)]
enum Chip {
    Region {
        forward: palette::Rgb,
        backward: palette::Rgb,
        weight: Option<palette::Rgb>,
    },
    Fill(String, String),
}

/// Each entry with its left edge and row: left to right from the lanes' left edge, on to the
/// next row where the next would run past the chart's right edge (an entry wider than a row
/// alone on its own).
fn legend_layout(items: &[LegendItem]) -> Vec<(&LegendItem, f64, usize)> {
    let (mut x, mut row) = (LEFT, 0);
    items
        .iter()
        .map(|item| {
            if x > LEFT && x + item.width > WIDTH - RIGHT {
                (x, row) = (LEFT, row + 1);
            }
            let placed = (item, x, row);
            x += item.width;
            placed
        })
        .collect()
}

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
        legend_y: LEGEND_Y,
        top: TOP,
        out: String::new(),
    };
    // The legend below the title's last line, the lanes below the legend's last row.
    let title = wrapped(&svg.title_text(name), Svg::PLOT / TITLE_CHAR_WIDTH);
    let below_title = title.len().saturating_sub(1) as f64 * TITLE_LINE;
    let items = svg.legend_items();
    let legend = legend_layout(&items);
    let rows = legend.last().map_or(0, |&(_, _, row)| row);
    svg.legend_y = LEGEND_Y + below_title;
    svg.top = TOP + below_title + rows as f64 * LEGEND_ROW;
    svg.header();
    svg.title(&title);
    svg.legend(&legend);
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
    /// The legend's first row's top (below the title's lines).
    legend_y: f64,
    /// The first lane's top (below the legend's rows).
    top: f64,
    out: String,
}

impl Svg<'_> {
    const PLOT: f64 = WIDTH - LEFT - RIGHT;

    fn x(&self, t: f64) -> f64 {
        LEFT + t / self.makespan_s * Self::PLOT
    }

    fn lane_y(&self, rank: usize) -> f64 {
        self.top + rank as f64 * (LANE + COMM_LANE + GAP)
    }

    fn header(&mut self) {
        let height = self.lane_y(self.sim.derivation.plan.ranks) + 60.0;
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
    fn title_text(&self, name: &str) -> String {
        let plan = &self.sim.derivation.plan;
        let schedule: Vec<_> = plan.schedule();
        format!(
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
        )
    }

    /// The title, in as many lines as the chart's width needs.
    fn title(&mut self, lines: &[String]) {
        for (i, line) in lines.iter().enumerate() {
            let _ = writeln!(
                self.out,
                r#"<text x="{LEFT}" y="{}" font-size="15" font-weight="bold">{}</text>"#,
                TITLE_Y + i as f64 * TITLE_LINE,
                escape(line)
            );
        }
    }

    /// The legend's entries where [`legend_layout`] placed them (laid out once, before the
    /// header, which needs its rows).
    fn legend(&mut self, placed: &[(&LegendItem, f64, usize)]) {
        for &(item, x, row) in placed {
            let y = self.legend_y + row as f64 * LEGEND_ROW;
            let text_y = y + 10.0;
            let text = escape(&item.text);
            let s = &mut self.out;
            let _ = match &item.chip {
                &Chip::Region {
                    forward,
                    backward,
                    weight,
                } => {
                    // A split backward shows its weight half's shade as a third chip.
                    let weight_chip = weight.map_or(String::new(), |w| {
                        format!(
                            r#"<rect x="{}" y="{y}" width="12" height="12" fill="{}"/>"#,
                            x + 24.0,
                            hex(w)
                        )
                    });
                    writeln!(
                        s,
                        r#"<rect x="{x}" y="{y}" width="12" height="12" fill="{}"/><rect x="{}" y="{y}" width="12" height="12" fill="{}"/>{weight_chip}<text x="{}" y="{text_y}" font-size="11">{text}</text>"#,
                        hex(forward),
                        x + 12.0,
                        hex(backward),
                        x + item.text_at,
                    )
                }
                Chip::Fill(fill, extra) => writeln!(
                    s,
                    r#"<rect x="{x}" y="{y}" width="24" height="12" fill="{fill}"{extra}/><text x="{}" y="{text_y}" font-size="11">{text}</text>"#,
                    x + item.text_at,
                ),
            };
        }
    }

    /// The legend's entries, in order, each as wide as it draws: regions, warmup, spill, idle
    /// (and overlapped pairs, exposed collectives and the host's waits, where there are some).
    fn legend_items(&self) -> Vec<LegendItem> {
        let mut items: Vec<LegendItem> = self
            .scene
            .regions
            .iter()
            .map(|r| {
                let text = format!("region {} {} {}", r.region, r.role.name(), r.skeleton);
                let text_at = if r.split() { 40.0 } else { 28.0 };
                LegendItem {
                    width: fitted(if r.split() { 202.0 } else { 190.0 }, text_at, &text),
                    text_at,
                    chip: Chip::Region {
                        forward: r.forward,
                        backward: r.backward,
                        weight: r.split().then_some(r.weight),
                    },
                    text,
                }
            })
            .collect();
        let fill = |least: f64, fill: String, extra: String, text: &str| LegendItem {
            width: fitted(least, 30.0, text),
            text_at: 30.0,
            chip: Chip::Fill(fill, extra),
            text: text.to_string(),
        };
        items.push(fill(
            130.0,
            hex(palette::WARMUP),
            r#" fill-opacity="0.45""#.into(),
            "warmup window",
        ));
        items.push(fill(
            80.0,
            "url(#spill)".into(),
            format!(r#" stroke="{}""#, hex(palette::SPILL)),
            "spill",
        ));
        items.push(fill(70.0, "url(#idle)".into(), String::new(), "idle"));
        if self.scene.events.iter().any(|e| e.pair.is_some()) {
            items.push(fill(
                170.0,
                "none".into(),
                format!(r#" stroke="{}" stroke-width="1.5""#, hex(palette::PAIR)),
                "overlapped pair (F;B)",
            ));
        }
        if self.scene.events.iter().any(|e| e.exposed_comm_s > 0.0) {
            items.push(fill(
                250.0,
                "url(#exposed)".into(),
                String::new(),
                "collectives inside the stage, exposed",
            ));
        }
        if self.sim.host_wait_s.iter().any(|&w| w > 0.0) {
            items.push(fill(
                0.0,
                hex(palette::HOST_WAIT),
                String::new(),
                "waiting for its host to launch the work",
            ));
        }
        items
    }

    /// Each rank's lane: its name, idle hatching, warmup window and encoder spill.
    fn lanes(&mut self) {
        for lane in &self.scene.lanes {
            let rank = lane.rank;
            let y = self.lane_y(rank);
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
            let y = self.lane_y(e.rank.index());
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
                    self.lane_y(f.rank.index()) - 1.0,
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
            let y = self.lane_y(c.to_rank.index()) + LANE + 1.0;
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
        let axis_y = self.lane_y(self.sim.derivation.plan.ranks) + 4.0;
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

    #[test]
    fn titles_wrap_between_words_and_inside_a_word_too_long_for_a_line() {
        assert_eq!(wrapped("a bb ccc", 4.0), ["a bb", "ccc"]);
        assert_eq!(wrapped("a bb ccc", 8.0), ["a bb ccc"]);
        assert_eq!(wrapped("abcdefghij kl", 4.0), ["abcd", "efgh", "ij", "kl"]);
        assert_eq!(wrapped("⟨αβγ⟩ δ", 3.0), ["⟨αβ", "γ⟩", "δ"]);
        assert_eq!(wrapped("", 10.0), [""]);
        // Less than one character a line still gives one a line.
        assert_eq!(wrapped("ab", 0.2), ["a", "b"]);
    }

    /// An entry keeps its width where its text ends inside it, and grows to its text and a gap
    /// where it would not.
    #[test]
    fn legend_entries_are_as_wide_as_their_text_needs() {
        assert_eq!(fitted(130.0, 30.0, "warmup window"), 130.0);
        // 37 characters: 30 + 245 px of text, past 250.
        let exposed = "collectives inside the stage, exposed";
        assert_eq!(fitted(250.0, 30.0, exposed), 30.0 + 245.0 + 16.0);
        assert_eq!(fitted(0.0, 30.0, "idle"), 30.0 + 27.0 + 16.0);
    }

    /// Entries fill a row from the lanes' left edge and go on to the next where the next would
    /// pass the right edge; one wider than a row stays alone on its own.
    #[test]
    fn legend_entries_wrap_at_the_right_edge() {
        let item = |width: f64| LegendItem {
            width,
            text_at: 30.0,
            chip: Chip::Fill(String::new(), String::new()),
            text: String::new(),
        };
        let row = WIDTH - RIGHT - LEFT;
        let items = [
            item(row / 2.0),
            item(row / 2.0),
            item(1.0),
            item(2.0 * row),
            item(1.0),
        ];
        let placed: Vec<(f64, usize)> = legend_layout(&items)
            .into_iter()
            .map(|(_, x, r)| (x, r))
            .collect();
        assert_eq!(
            placed,
            [
                (LEFT, 0),
                (LEFT + row / 2.0, 0),
                (LEFT, 1),
                (LEFT, 2),
                (LEFT, 3)
            ]
        );
    }
}
