//! Pure geometry of the Gantt chart: the time ↔ pixel mapping (in `f64`, converted to screen
//! `f32` only by the painter), zoom and pan kept inside the step, culling and merging events into
//! drawable items clipped to the plot, lane placement, and hit testing. No egui here, so all of
//! it is unit-tested with one time unit = one pixel.

pub use mpipe::view::timings::PairHalf;
use mpipe::vocab::phase::Phase;

/// A visible time range `[t0, t1]` mapped onto `[x0, x0 + width]` pixels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimeView {
    pub t0: f64,
    pub t1: f64,
    pub x0: f64,
    pub width: f64,
}

/// The smallest visible span, so zooming in stops before the mapping degenerates.
pub const MIN_SPAN: f64 = 1e-9;

impl TimeView {
    pub fn new(t0: f64, t1: f64, x0: f64, width: f64) -> Self {
        let t1 = if t1 - t0 > MIN_SPAN { t1 } else { t0 + 1.0 };
        TimeView {
            t0,
            t1,
            x0,
            width: width.max(1.0),
        }
    }

    pub fn span(&self) -> f64 {
        self.t1 - self.t0
    }

    pub fn x_from_time(&self, t: f64) -> f64 {
        self.x0 + (t - self.t0) / self.span() * self.width
    }

    pub fn time_from_x(&self, x: f64) -> f64 {
        self.t0 + (x - self.x0) / self.width * self.span()
    }

    /// Seconds per pixel.
    pub fn seconds_per_px(&self) -> f64 {
        self.span() / self.width
    }

    /// Zooms by `factor` (> 1 zooms in) keeping the time under pixel `x` fixed.
    pub fn zoom_at(&mut self, x: f64, factor: f64) {
        if !(factor.is_finite() && factor > 0.0) {
            return;
        }
        let anchor = self.time_from_x(x);
        let span = (self.span() / factor).max(MIN_SPAN);
        let left = (x - self.x0) / self.width;
        self.t0 = anchor - left * span;
        self.t1 = self.t0 + span;
    }

    /// Moves the content by `dx` pixels (dragging right shows earlier times).
    pub fn pan_px(&mut self, dx: f64) {
        let dt = dx * self.seconds_per_px();
        self.t0 -= dt;
        self.t1 -= dt;
    }

    /// The view kept inside `[0, span]`: never wider than the step, never past either end.
    pub fn clamped(mut self, span: f64) -> TimeView {
        let span = span.max(MIN_SPAN);
        if self.span() >= span {
            self.t0 = 0.0;
            self.t1 = span;
        } else if self.t0 < 0.0 {
            self.t1 -= self.t0;
            self.t0 = 0.0;
        } else if self.t1 > span {
            self.t0 -= self.t1 - span;
            self.t1 = span;
        }
        self
    }

    /// Whether the view shows the whole of `[0, span]`.
    pub fn is_whole(&self, span: f64) -> bool {
        self.t0 <= 0.0 && self.t1 >= span
    }

    /// The view centred on `[a, b]` with a margin of a tenth on each side (fit to a selection).
    pub fn fit(&self, a: f64, b: f64) -> TimeView {
        let width = (b - a).max(MIN_SPAN);
        TimeView::new(a - 0.1 * width, b + 0.1 * width, self.x0, self.width)
    }

    /// Shows exactly the time under pixels `xa..xb` (box zoom); ignores boxes under 2 px.
    pub fn zoom_to_px(&mut self, xa: f64, xb: f64) {
        let (a, b) = (xa.min(xb), xa.max(xb));
        if b - a < 2.0 {
            return;
        }
        let (t0, t1) = (self.time_from_x(a), self.time_from_x(b));
        self.t0 = t0;
        self.t1 = t1.max(t0 + MIN_SPAN);
    }
}

/// One event on a lane, as the chart sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    pub start: f64,
    pub end: f64,
    pub region: usize,
    /// Forward, backward, or a half of a split backward (its colour and its label's letter).
    pub phase: Phase,
    /// The stage index, for the `4F0` label.
    pub stage: usize,
    pub mb: usize,
    /// Index into the caller's event list.
    pub index: usize,
    /// Which half of an overlapped pair it is, if it is one.
    pub pair: Option<PairHalf>,
}

/// What the chart's geometry reads of an event on a lane: when it runs, its colour (region and
/// phase), its label's stage and microbatch, and which half of an overlapped pair it is. The
/// scene's own events ([`mpipe::view::timings::EventTiming`]) are read as they are, so the chart
/// keeps no copy of them; [`Span`] is the plain form (tests, benchmarks).
pub trait Chip {
    fn start(&self) -> f64;
    fn end(&self) -> f64;
    fn region(&self) -> usize;
    fn phase(&self) -> Phase;
    fn stage(&self) -> usize;
    fn mb(&self) -> usize;
    fn pair(&self) -> Option<PairHalf>;
    /// Its index in the caller's event list, when it is the `position`-th of a lane whose
    /// first event is the list's `first`-th.
    fn index(&self, first: usize, position: usize) -> usize;
}

impl Chip for Span {
    fn start(&self) -> f64 {
        self.start
    }
    fn end(&self) -> f64 {
        self.end
    }
    fn region(&self) -> usize {
        self.region
    }
    fn phase(&self) -> Phase {
        self.phase
    }
    fn stage(&self) -> usize {
        self.stage
    }
    fn mb(&self) -> usize {
        self.mb
    }
    fn pair(&self) -> Option<PairHalf> {
        self.pair
    }
    /// Its own.
    fn index(&self, _: usize, _: usize) -> usize {
        self.index
    }
}

impl Chip for mpipe::view::timings::EventTiming {
    fn start(&self) -> f64 {
        self.start_s
    }
    fn end(&self) -> f64 {
        self.end_s
    }
    fn region(&self) -> usize {
        self.region.index()
    }
    fn phase(&self) -> Phase {
        self.action.phase
    }
    fn stage(&self) -> usize {
        self.action.stage.index()
    }
    fn mb(&self) -> usize {
        self.action.mb.index()
    }
    fn pair(&self) -> Option<PairHalf> {
        self.pair
    }
    /// Where it sits in the scene: the lane's first event and its place after it.
    fn index(&self, first: usize, position: usize) -> usize {
        first + position
    }
}

/// One lane's events for the chart: `spans` sorted by start, the first of them the caller's
/// `first`-th event.
#[derive(Debug, Clone, Copy)]
pub struct Lane<'a, T> {
    pub first: usize,
    pub spans: &'a [T],
}

impl<'a, T> Lane<'a, T> {
    /// The lanes of `lists` (each a lane's spans, their indices their own).
    pub fn of(lists: &'a [Vec<T>]) -> Vec<Lane<'a, T>> {
        lists.iter().map(|spans| Lane { first: 0, spans }).collect()
    }
}

/// A drawable box: one event, or a run of sub-pixel events merged into one.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    pub lane: usize,
    pub x0: f64,
    pub x1: f64,
    pub region: usize,
    pub phase: Phase,
    /// The event (first of the run when merged).
    pub index: usize,
    /// How many events the item stands for.
    pub count: usize,
    /// The action (`4F0`) or, with less room, the microbatch, when it fits inside the box.
    pub label: Option<String>,
    /// Which half of an overlapped pair the (single) event is: the pair is drawn as one box.
    pub pair: Option<PairHalf>,
    /// The position of its (first) event in its lane's spans: a merged run is spans
    /// `first..first + count` ([`mix_of`] gives its colours).
    pub first: usize,
}

/// How long a merged run spends in each colour (region and phase): the first [`MIX_PARTS`]
/// colours met, the rest together, so that a zoomed-out box shows its mix rather than its first
/// event's colour (a 1F1B steady state at P = 64 used to look all-backward).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Mix {
    /// `(region, phase, seconds)` of the colours met, in the order met.
    pub parts: [Option<(usize, Phase, f64)>; MIX_PARTS],
    /// Seconds in the colours beyond those.
    pub other_s: f64,
}

/// The colours a merged box keeps apart.
pub const MIX_PARTS: usize = 4;

/// Events of a merged run read for its drawn colours: a run of up to `17 ·` this many is read
/// whole; a longer one through a sample of about this many, evenly strided (the stride a prime
/// of at least 17, so that no schedule's short period — F and B alternating, a chunk rotation —
/// aliases with it). Drawing then costs the same at any zoom (the run's mix summed span by span
/// cost a 1M-event frame 4 ms); the tooltip reads every event.
pub const MIX_SAMPLE: usize = 48;

/// The colours of `item`'s events among `lane`'s spans: every event when `exact` or when the run
/// is no longer than `17 · MIX_SAMPLE`, else a strided sample of about [`MIX_SAMPLE`] of them.
pub fn mix_of<T: Chip>(lane: &[T], item: &Item, exact: bool) -> Mix {
    let run = lane
        .get(item.first..item.first.saturating_add(item.count))
        .unwrap_or_default();
    let stride = if exact || run.len() <= 17 * MIX_SAMPLE {
        1
    } else {
        prime_at_least(run.len() / MIX_SAMPLE)
    };
    let mut mix = Mix::default();
    for s in run.iter().step_by(stride) {
        mix.add(s);
    }
    mix
}

/// The smallest prime `≥ n`.
fn prime_at_least(n: usize) -> usize {
    let prime = |k: usize| {
        k >= 2
            && (2..)
                .take_while(|d| d * d <= k)
                .all(|d| !k.is_multiple_of(d))
    };
    (n..).find(|&k| prime(k)).unwrap_or(n)
}

impl Mix {
    /// Adds `s`'s busy time to its colour.
    pub fn add(&mut self, s: &impl Chip) {
        let d = (s.end() - s.start()).max(0.0);
        let (r, p) = (s.region(), s.phase());
        for part in &mut self.parts {
            match part {
                Some((region, phase, secs)) if *region == r && *phase == p => {
                    *secs += d;
                    return;
                }
                None => {
                    *part = Some((r, p, d));
                    return;
                }
                Some(_) => {}
            }
        }
        self.other_s += d;
    }

    /// All the busy time.
    pub fn total_s(&self) -> f64 {
        self.parts.iter().flatten().map(|p| p.2).sum::<f64>() + self.other_s
    }

    /// Each colour's share of the busy time, the largest first (`None`: the colours beyond
    /// [`MIX_PARTS`]), shares summing to 1; the entries after the colours met have share 0. A
    /// fixed array: the chart asks this of every merged box every frame.
    pub fn shares(&self) -> [(Option<(usize, Phase)>, f64); MIX_PARTS + 1] {
        let mut out = [(None, 0.0); MIX_PARTS + 1];
        let total = self.total_s();
        if total <= 0.0 {
            // Events of no duration: the first colour stands for the run.
            if let (Some(slot), Some(Some(p))) = (out.first_mut(), self.parts.first()) {
                *slot = (Some((p.0, p.1)), 1.0);
            }
            return out;
        }
        for (slot, p) in out.iter_mut().zip(self.parts.iter().flatten()) {
            *slot = (Some((p.0, p.1)), p.2 / total);
        }
        if let Some(last) = out.last_mut() {
            *last = (None, self.other_s / total);
        }
        out.sort_by(|a, b| b.1.total_cmp(&a.1));
        out
    }
}

pub use mpipe::view::scene::label_width;

/// The label of a span `width` pixels wide ([`mpipe::view::scene::chip_text`]: `4F0`, else
/// `F0`, else `F` over `0`, else `0`, else none; the chart draws the two-line one small, and
/// only its microbatch on lanes too short for two lines).
fn label(s: &impl Chip, width: f64) -> Option<String> {
    mpipe::view::scene::chip_text(s.stage(), s.phase(), s.mb(), width, true)
}

/// Culls each lane to the view, merges runs of events narrower than a pixel (and touching within
/// a pixel) into one item, clips boxes to the view (a span that starts left of it starts at its
/// left edge, never over the rank labels), and labels boxes wide enough. Each lane's spans must
/// be sorted by start; the cost is O(log n + visible) per lane.
pub fn render_items<T: Chip>(lanes: &[Lane<'_, T>], view: &TimeView) -> Vec<Item> {
    let mut items = Vec::new();
    for (lane, &Lane { first: at, spans }) in lanes.iter().enumerate() {
        // First span that ends at or after the view's start.
        let first = spans.partition_point(|s| s.end() < view.t0);
        let mut open: Option<Item> = None;
        for (offset, s) in spans.get(first..).unwrap_or_default().iter().enumerate() {
            if s.start() > view.t1 {
                break;
            }
            let (left, right) = (view.x0, view.x0 + view.width);
            let x0 = view.x_from_time(s.start()).max(left);
            let x1 = view.x_from_time(s.end()).min(right);
            let tiny = x1 - x0 < 1.0;
            if let Some(item) = open.as_mut()
                && tiny
                && (item.count > 1 || item.x1 - item.x0 < 1.0)
                && x0 - item.x1 < 1.0
            {
                item.x1 = item.x1.max(x1);
                item.count += 1;
                continue;
            }
            if let Some(done) = open.take() {
                items.push(done);
            }
            open = Some(Item {
                lane,
                x0,
                x1,
                region: s.region(),
                phase: s.phase(),
                index: s.index(at, first + offset),
                count: 1,
                label: label(s, x1 - x0),
                pair: s.pair(),
                first: first + offset,
            });
        }
        if let Some(done) = open.take() {
            items.push(done);
        }
    }
    items
}

/// Where the lanes sit vertically: rank `r`'s compute lane, then the thin lane of transfers
/// arriving there, then a gap.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LaneLayout {
    /// The y of the first lane's top.
    pub top: f32,
    /// Height of a compute lane (the user can change it).
    pub lane: f32,
    /// Height of the transfer lane under it.
    pub comm: f32,
    pub gap: f32,
}

/// What part of a lane a point is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LaneRow {
    Compute,
    Transfers,
}

impl LaneLayout {
    /// From one lane's top to the next one's.
    pub fn pitch(&self) -> f32 {
        self.lane + self.comm + self.gap
    }

    /// The top of lane `i` (of lane `lanes`: the bottom of the last one's gap).
    pub fn lane_top(&self, i: usize) -> f32 {
        self.top + i as f32 * self.pitch()
    }

    /// The lane and row under `y`, if any (`None` in the gaps).
    pub fn hit(&self, y: f32, lanes: usize) -> Option<(usize, LaneRow)> {
        let offset = y - self.top;
        if offset < 0.0 {
            return None;
        }
        let lane = (offset / self.pitch()).floor() as usize;
        let within = offset - lane as f32 * self.pitch();
        if lane >= lanes {
            None
        } else if within <= self.lane {
            Some((lane, LaneRow::Compute))
        } else if within <= self.lane + self.comm {
            Some((lane, LaneRow::Transfers))
        } else {
            None
        }
    }
}

/// Ranks a lane group holds.
pub const GROUP: usize = 8;
/// Charts of more ranks than this group their lanes (a P = 64 chart was 1,700 px tall).
pub const GROUP_FROM: usize = 16;

/// What one row of a chart shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RowKind {
    /// One rank's lane.
    Rank(usize),
    /// A collapsed group's summary lane: ranks `ranks` drawn over one another.
    Group {
        group: usize,
        ranks: std::ops::Range<usize>,
    },
}

/// The rows of a chart of `ranks` ranks: one per rank, except that a chart of more than
/// [`GROUP_FROM`] ranks groups them by [`GROUP`] (as Perfetto's track groups do) and draws each
/// group not in `expanded` as one summary row.
#[derive(Debug, Clone, PartialEq)]
pub struct Rows {
    pub rows: Vec<RowKind>,
    /// The row each rank is drawn in (its group's while collapsed).
    of_rank: Vec<usize>,
}

impl Rows {
    pub fn new(ranks: usize, expanded: &std::collections::BTreeSet<usize>) -> Rows {
        let mut rows = Vec::new();
        let mut of_rank = Vec::with_capacity(ranks);
        let grouped = ranks > GROUP_FROM;
        let mut first = 0;
        while first < ranks {
            let last = if grouped {
                (first + GROUP).min(ranks)
            } else {
                ranks
            };
            let group = first / GROUP;
            if grouped && !expanded.contains(&group) {
                of_rank.extend(std::iter::repeat_n(rows.len(), last - first));
                rows.push(RowKind::Group {
                    group,
                    ranks: first..last,
                });
            } else {
                for r in first..last {
                    of_rank.push(rows.len());
                    rows.push(RowKind::Rank(r));
                }
            }
            first = last;
        }
        Rows { rows, of_rank }
    }

    /// Whether the chart groups its ranks.
    pub fn grouped(&self) -> bool {
        self.of_rank.len() > GROUP_FROM
    }

    /// The row rank `rank` is drawn in.
    pub fn of_rank(&self, rank: usize) -> usize {
        self.of_rank.get(rank).copied().unwrap_or(0)
    }

    /// Whether rank `rank` has a row of its own (its group is expanded, or there are no groups).
    pub fn own_row(&self, rank: usize) -> bool {
        matches!(self.rows.get(self.of_rank(rank)), Some(RowKind::Rank(_)))
    }

    /// The group of rank `rank`, when the chart groups its ranks.
    pub fn group_of(&self, rank: usize) -> Option<usize> {
        self.grouped().then_some(rank / GROUP)
    }

    /// The groups of a chart of `ranks` ranks (none when it does not group them).
    pub fn groups(ranks: usize) -> usize {
        if ranks > GROUP_FROM {
            ranks.div_ceil(GROUP)
        } else {
            0
        }
    }
}

/// The item under pixel `x` on `lane` (merged items are hit as a whole).
pub fn hit_test(items: &[Item], lane: usize, x: f64) -> Option<&Item> {
    items
        .iter()
        .filter(|i| i.lane == lane)
        .find(|i| x >= i.x0 && x <= i.x1.max(i.x0 + 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit_view(t0: f64, width: f64) -> TimeView {
        TimeView::new(t0, t0 + width, 0.0, width)
    }

    fn span(start: f64, end: f64, index: usize) -> Span {
        Span {
            start,
            end,
            region: 1,
            phase: Phase::Forward,
            stage: 4,
            mb: index,
            index,
            pair: None,
        }
    }

    #[test]
    fn one_second_is_one_pixel() {
        let v = unit_view(0.0, 100.0);
        assert_eq!(v.x_from_time(42.0), 42.0);
        assert_eq!(v.time_from_x(42.0), 42.0);
        let shifted = TimeView::new(10.0, 110.0, 50.0, 100.0);
        assert_eq!(shifted.x_from_time(10.0), 50.0);
        assert_eq!(shifted.time_from_x(150.0), 110.0);
    }

    #[test]
    fn zoom_keeps_the_anchor_and_pan_moves_by_pixels() {
        let mut v = unit_view(0.0, 100.0);
        v.zoom_at(25.0, 2.0);
        assert_eq!((v.t0, v.t1), (12.5, 62.5));
        assert_eq!(v.time_from_x(25.0), 25.0);
        v.pan_px(10.0);
        // Half a second per pixel now: dragging 10 px right shows 5 s earlier.
        assert_eq!((v.t0, v.t1), (7.5, 57.5));
        v.zoom_to_px(20.0, 40.0);
        assert_eq!((v.t0, v.t1), (17.5, 27.5));
        v.zoom_to_px(5.0, 6.0); // too small: ignored
        assert_eq!((v.t0, v.t1), (17.5, 27.5));
        v.zoom_at(0.0, f64::NAN);
        assert_eq!((v.t0, v.t1), (17.5, 27.5));
    }

    #[test]
    fn items_are_culled_to_the_view() {
        let lanes = vec![vec![
            span(0.0, 10.0, 0),
            span(20.0, 32.0, 1),
            span(200.0, 210.0, 2),
        ]];
        let items = render_items(&Lane::of(&lanes), &unit_view(15.0, 100.0));
        let indices: Vec<usize> = items.iter().map(|i| i.index).collect();
        assert_eq!(indices, [1]);
        assert_eq!((items[0].x0, items[0].x1), (5.0, 17.0));
        assert_eq!(items[0].label.as_deref(), Some("F\n1"));
    }

    #[test]
    fn a_span_that_starts_left_of_the_view_is_clipped_to_its_left_edge() {
        // Zoomed in to [15, 115] drawn at x = 64..164: the span 10..40 starts 5 s off screen.
        let lanes = vec![vec![span(10.0, 40.0, 0), span(100.0, 200.0, 1)]];
        let view = TimeView::new(15.0, 115.0, 64.0, 100.0);
        let items = render_items(&Lane::of(&lanes), &view);
        assert_eq!((items[0].x0, items[0].x1), (64.0, 89.0));
        // … and one that ends right of it stops at its right edge.
        assert_eq!((items[1].x0, items[1].x1), (149.0, 164.0));
        assert_eq!(items[0].label.as_deref(), Some("4F0"));
    }

    #[test]
    fn views_stay_inside_the_step() {
        let step = 74.0;
        let v = TimeView::new(-10.0, 20.0, 0.0, 100.0).clamped(step);
        assert_eq!((v.t0, v.t1), (0.0, 30.0));
        let v = TimeView::new(60.0, 90.0, 0.0, 100.0).clamped(step);
        assert_eq!((v.t0, v.t1), (44.0, 74.0));
        // Zooming out past the step shows the whole step, no more.
        let mut v = TimeView::new(0.0, step, 0.0, 100.0);
        v.zoom_at(30.0, 0.5);
        assert_eq!(v.clamped(step), TimeView::new(0.0, step, 0.0, 100.0));
        assert!(v.clamped(step).is_whole(step));
        let fit = TimeView::new(0.0, step, 0.0, 100.0).fit(10.0, 20.0);
        assert_eq!((fit.t0, fit.t1), (9.0, 21.0));
    }

    #[test]
    fn sub_pixel_runs_merge_and_labels_need_room() {
        // A thousand 0.01 s events in a row draw as a couple of items, not a thousand.
        let lane: Vec<Span> = (0..1000)
            .map(|i| span(i as f64 * 0.01, (i + 1) as f64 * 0.01, i))
            .collect();
        let items = render_items(&Lane::of(&[lane]), &unit_view(0.0, 100.0));
        assert!(items.len() <= 10, "{}", items.len());
        assert_eq!(items.iter().map(|i| i.count).sum::<usize>(), 1000);
        assert!(items.iter().all(|i| i.label.is_none()));
        // One digit needs 7 + 4 = 11 px; the phase over it, in smaller text, 5.5 + 2 = 7.5 px;
        // the action `4F9` needs 25 px.
        let items = render_items(
            &Lane::of(&[vec![
                span(0.0, 10.0, 7),
                span(20.0, 31.0, 8),
                span(40.0, 65.0, 9),
                span(70.0, 88.0, 6),
                span(90.0, 97.0, 5),
            ]]),
            &unit_view(0.0, 100.0),
        );
        assert_eq!(items[0].label.as_deref(), Some("F\n7"));
        assert_eq!(items[1].label.as_deref(), Some("F\n8"));
        assert_eq!(items[2].label.as_deref(), Some("4F9"));
        // Between the two, the phase and the microbatch: `F6` needs 2 · 7 + 4 = 18 px.
        assert_eq!(items[3].label.as_deref(), Some("F6"));
        assert_eq!(items[4].label, None);
    }

    #[test]
    fn lanes_are_placed_one_pitch_apart_and_hit_by_row() {
        let layout = LaneLayout {
            top: 10.0,
            lane: 24.0,
            comm: 6.0,
            gap: 8.0,
        };
        assert_eq!(layout.lane_top(2), 10.0 + 2.0 * 38.0);
        assert_eq!(layout.hit(12.0, 4), Some((0, LaneRow::Compute)));
        assert_eq!(layout.hit(10.0 + 26.0, 4), Some((0, LaneRow::Transfers)));
        assert_eq!(layout.hit(10.0 + 33.0, 4), None);
        assert_eq!(
            layout.hit(10.0 + 38.0 + 1.0, 4),
            Some((1, LaneRow::Compute))
        );
        assert_eq!(layout.hit(5.0, 4), None);
        assert_eq!(layout.hit(10.0 + 4.0 * 38.0 + 1.0, 4), None);
    }

    /// Zoomed out, a merged box took its first event's colour (issue 25, item 2): a 1F1B steady
    /// state of one forward (1 s) and one backward (2 s) after another read all-forward.
    #[test]
    fn merged_boxes_keep_their_mix() {
        let lane: Vec<Span> = (0..600)
            .map(|i| {
                let t = (i / 2) as f64 * 3.0 + if i % 2 == 0 { 0.0 } else { 1.0 };
                let mut s = span(t, t + if i % 2 == 0 { 1.0 } else { 2.0 }, i);
                if i % 2 == 1 {
                    s.phase = Phase::Backward;
                }
                s
            })
            .collect();
        // 900 s on 100 px: every box merges many events.
        let items = render_items(
            &Lane::of(std::slice::from_ref(&lane)),
            &TimeView::new(0.0, 900.0, 0.0, 100.0),
        );
        assert!(!items.is_empty());
        assert!(items.iter().all(|i| i.count > 1));
        for item in &items {
            let shares: Vec<_> = mix_of(&lane, item, true)
                .shares()
                .into_iter()
                .filter(|s| s.1 > 0.0)
                .collect();
            assert_eq!(shares.len(), 2, "{shares:?}");
            assert_eq!(shares[0].0, Some((1, Phase::Backward)));
            assert!((shares[0].1 - 2.0 / 3.0).abs() < 0.02, "{shares:?}");
            assert_eq!(shares[1].0, Some((1, Phase::Forward)));
        }
        // A long run is drawn from a strided sample: on 100,000 events of F and B in turn (period
        // 2) and of four colours in turn (period 4) it reads the shares within a point.
        for period in [2usize, 4] {
            let lane: Vec<Span> = (0..100_000)
                .map(|i| {
                    let mut s = span(i as f64, i as f64 + 1.0 + (i % period) as f64, i);
                    s.region = i % period;
                    s
                })
                .collect();
            let item = Item {
                lane: 0,
                x0: 0.0,
                x1: 1.0,
                region: 0,
                phase: Phase::Forward,
                index: 0,
                count: lane.len(),
                label: None,
                pair: None,
                first: 0,
            };
            let (exact, sampled) = (mix_of(&lane, &item, true), mix_of(&lane, &item, false));
            for (e, s) in exact.shares().iter().zip(sampled.shares()) {
                assert_eq!(e.0, s.0);
                assert!(
                    (e.1 - s.1).abs() < 0.01,
                    "{:?} {:?}",
                    exact.shares(),
                    sampled.shares()
                );
            }
        }
        assert_eq!(prime_at_least(17), 17);
        assert_eq!(prime_at_least(18), 19);
        assert_eq!(prime_at_least(2080), 2081);
        // More colours than a box keeps apart: the rest are counted together.
        let mut mix = Mix::default();
        for region in 0..6 {
            let mut s = span(0.0, 1.0, region);
            s.region = region;
            mix.add(&s);
        }
        assert_eq!(mix.other_s, 2.0);
        assert_eq!(mix.total_s(), 6.0);
        assert!(
            mix.shares().contains(&(None, 1.0 / 3.0)),
            "{:?}",
            mix.shares()
        );
    }

    /// A P = 64 chart was 1,700 px tall with no grouping (issue 25, item 9): beyond sixteen
    /// ranks, groups of eight, each collapsed to one row unless expanded.
    #[test]
    fn many_ranks_group_into_collapsible_rows() {
        let none = std::collections::BTreeSet::new();
        let small = Rows::new(16, &none);
        assert_eq!(small.rows.len(), 16);
        assert!(!small.grouped());
        assert_eq!(Rows::groups(16), 0);
        let big = Rows::new(64, &none);
        assert_eq!(big.rows.len(), 8);
        assert_eq!(Rows::groups(64), 8);
        assert_eq!(
            big.rows[1],
            RowKind::Group {
                group: 1,
                ranks: 8..16
            }
        );
        assert_eq!(big.of_rank(13), 1);
        assert!(!big.own_row(13));
        // Group 1 expanded: its eight ranks get rows of their own between groups 0 and 2.
        let open = Rows::new(64, &[1].into_iter().collect());
        assert_eq!(open.rows.len(), 7 + 8);
        assert_eq!(open.rows[1], RowKind::Rank(8));
        assert_eq!(open.of_rank(13), 6);
        assert!(open.own_row(13));
        assert_eq!(open.of_rank(16), 9);
        assert_eq!(open.group_of(16), Some(2));
        // A last group of fewer ranks.
        let odd = Rows::new(20, &none);
        assert_eq!(
            odd.rows[2],
            RowKind::Group {
                group: 2,
                ranks: 16..20
            }
        );
    }

    #[test]
    fn hit_testing_finds_the_box_under_the_pointer() {
        let lanes = vec![vec![span(0.0, 10.0, 0)], vec![span(5.0, 8.0, 1)]];
        let items = render_items(&Lane::of(&lanes), &unit_view(0.0, 100.0));
        assert_eq!(hit_test(&items, 0, 4.0).map(|i| i.index), Some(0));
        assert_eq!(hit_test(&items, 1, 4.0).map(|i| i.index), None);
        assert_eq!(hit_test(&items, 1, 6.0).map(|i| i.index), Some(1));
        assert_eq!(hit_test(&items, 0, 11.5), None);
    }
}
