//! View state: what part of the step is visible, the selection, the search, the teaching cursor
//! and which panels are open. Nothing here is part of the document or of undo. Everything that
//! points into a simulation (a selected event, search matches) is resolved against the
//! simulation on screen, so it can never point into a previous one.

use super::derived::Shown;
use crate::geometry::TimeView;
use mpipe::view::search::Query;
use mpipe::vocab::action::Action;

/// The selected event: where it was selected, and what it is, so that it is found again in the
/// next simulation of an edited scenario (by rank and action) or dropped when it is gone.
#[derive(Debug, Clone, PartialEq)]
pub struct Selection {
    pub generation: u64,
    pub event: usize,
    pub rank: usize,
    pub action: Action,
}

impl Selection {
    /// Selects event `event` of `shown`.
    pub fn of(shown: &Shown, event: usize) -> Option<Selection> {
        let e = shown.scene.events.get(event)?;
        Some(Selection {
            generation: shown.generation,
            event,
            rank: e.rank.index(),
            action: e.action,
        })
    }

    /// The selected event's index in `shown`, if it has it.
    pub fn resolve(&self, shown: &Shown) -> Option<usize> {
        if shown.generation == self.generation {
            return Some(self.event);
        }
        let lane = shown.scene.lanes.get(self.rank)?;
        let events = shown.scene.events.get(lane.events.clone())?;
        events
            .iter()
            .position(|e| e.action == self.action)
            .map(|i| lane.events.start + i)
    }
}

/// The search box and its matches in the simulation on screen.
#[derive(Debug, Clone, Default)]
pub struct Search {
    pub open: bool,
    /// The field takes the keyboard on the next frame (set when the search opens, so Ctrl+F
    /// then typing searches).
    pub focus: bool,
    pub text: String,
    /// Why the text is not a search, when it is not.
    pub error: Option<String>,
    /// Matches for (generation, text).
    matches: Option<(u64, String, Vec<usize>)>,
    /// Which match Enter went to last.
    pub current: usize,
}

impl Search {
    /// The matches of the search text in `shown` (computed once per simulation and text).
    pub fn matches(&mut self, shown: &Shown) -> &[usize] {
        let fresh =
            matches!(&self.matches, Some((g, t, _)) if *g == shown.generation && *t == self.text);
        if !fresh {
            let found = match Query::parse(&self.text) {
                Ok(q) => {
                    self.error = None;
                    q.find(&shown.scene)
                }
                Err(e) => {
                    self.error = Some(e);
                    Vec::new()
                }
            };
            self.matches = Some((shown.generation, self.text.clone(), found));
        }
        self.matches
            .as_ref()
            .map_or(&[][..], |(_, _, m)| m.as_slice())
    }

    /// The matches computed for `shown`, without computing (for drawing).
    pub fn cached(&self, shown: &Shown) -> &[usize] {
        match &self.matches {
            Some((g, t, m)) if *g == shown.generation && *t == self.text && self.open => m,
            _ => &[],
        }
    }
}

/// Teaching mode: a time cursor that steps or plays through the step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Teach {
    pub t: f64,
    pub playing: bool,
    /// 1 plays the whole step in ten seconds.
    pub speed: f64,
}

impl Default for Teach {
    fn default() -> Self {
        Teach {
            t: 0.0,
            playing: false,
            speed: 1.0,
        }
    }
}

/// Play speeds offered.
pub const SPEEDS: [f64; 5] = [0.25, 0.5, 1.0, 2.0, 4.0];

/// Lane heights the user can choose between (points).
pub const LANE_HEIGHTS: std::ops::RangeInclusive<f32> = 12.0..=48.0;

/// Where the memory plot drew its axes last frame (tests check it lines up with the timeline).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlotFrame {
    /// Screen x of `t = t0` and `t = t1` of the visible range.
    pub x_of_t0: f32,
    pub x_of_t1: f32,
    /// The plot's y range, in bytes.
    pub y_bytes: (f64, f64),
    /// Screen x of the teaching cursor, when the plot drew one.
    pub cursor_x: Option<f32>,
}

/// Everything about how the document is viewed.
#[derive(Debug, Clone)]
pub struct View {
    /// The visible time range shared by every chart; `None` shows the whole step.
    pub range: Option<(f64, f64)>,
    pub selected: Option<Selection>,
    pub lane_height: f32,
    /// The lane groups shown rank by rank, in charts of more than
    /// [`crate::geometry::GROUP_FROM`] ranks (the others are collapsed to one row each).
    pub expanded_groups: std::collections::BTreeSet<usize>,
    pub search: Search,
    pub teach: Option<Teach>,
    pub show_help: bool,
    pub show_legend: bool,
    /// Where the timelines were drawn last frame (PNG export crops to them).
    pub chart_rects: Vec<egui::Rect>,
    /// Where the figure (title, legend, timelines, memory plot) was drawn last frame.
    pub figure_rect: Option<egui::Rect>,
    /// The current timeline's plot area last frame: x of `t0` and `t1` of the visible range.
    pub timeline_x: Option<(f32, f32)>,
    pub memory_frame: Option<PlotFrame>,
    /// The memory plot's y axis starts at zero (else it fits the curves).
    pub memory_from_zero: bool,
}

impl Default for View {
    fn default() -> Self {
        View {
            range: None,
            selected: None,
            lane_height: 24.0,
            expanded_groups: std::collections::BTreeSet::new(),
            search: Search::default(),
            teach: None,
            show_help: false,
            show_legend: true,
            chart_rects: Vec::new(),
            figure_rect: None,
            timeline_x: None,
            memory_frame: None,
            memory_from_zero: false,
        }
    }
}

impl View {
    /// The visible range within a step of `span` seconds.
    pub fn visible(&self, span: f64) -> (f64, f64) {
        self.range.unwrap_or((0.0, span))
    }

    /// Zooms the visible range by `factor` (> 1 zooms in) about its centre, inside `[0, span]`.
    pub fn zoom(&mut self, factor: f64, span: f64) {
        let (t0, t1) = self.visible(span);
        let centre = 0.5 * (t0 + t1);
        let half = 0.5 * (t1 - t0) / factor;
        self.set_range(centre - half, centre + half, span);
    }

    /// Pans by `fraction` of the visible width (positive: later), inside `[0, span]`.
    pub fn pan(&mut self, fraction: f64, span: f64) {
        let (t0, t1) = self.visible(span);
        let dt = fraction * (t1 - t0);
        self.set_range(t0 + dt, t1 + dt, span);
    }

    /// Shows `[t0, t1]`, kept inside `[0, span]` (the whole step is `None`).
    pub fn set_range(&mut self, t0: f64, t1: f64, span: f64) {
        let v = TimeView::new(t0, t1, 0.0, 1.0).clamped(span);
        self.range = (!v.is_whole(span)).then_some((v.t0, v.t1));
    }

    /// Selects event `event` of `shown` (`None` clears).
    pub fn select(&mut self, shown: Option<&Shown>, event: Option<usize>) {
        self.selected = event
            .zip(shown)
            .and_then(|(e, shown)| Selection::of(shown, e));
    }

    /// The selected event's index in `shown`.
    pub fn selected_in(&self, shown: &Shown) -> Option<usize> {
        self.selected.as_ref()?.resolve(shown)
    }

    /// Zooms to the selected event of `shown` (the whole step of `span` seconds without one).
    pub fn fit_selection(&mut self, shown: Option<&Shown>, span: f64) {
        let event = shown.and_then(|s| s.scene.events.get(self.selected_in(s)?));
        match event {
            Some(e) => {
                let fit = TimeView::new(0.0, span, 0.0, 1.0).fit(e.start_s, e.end_s);
                self.set_range(fit.t0, fit.t1, span);
            }
            None => self.range = None,
        }
    }

    /// Selects the next search match in `shown` and brings it into view.
    pub fn next_match(&mut self, shown: &Shown, span: f64) {
        let matches = self.search.matches(shown).to_vec();
        if matches.is_empty() {
            return;
        }
        let at = self.search.current % matches.len();
        self.search.current = at + 1;
        if let Some(&event) = matches.get(at) {
            self.select(Some(shown), Some(event));
            self.fit_selection(Some(shown), span);
        }
    }

    /// Moves the teaching cursor to the next (or previous) instant an event of `shown` starts or
    /// ends.
    pub fn step_cursor(&mut self, shown: &Shown, forward: bool) {
        let Some(teach) = self.teach.as_mut() else {
            return;
        };
        teach.playing = false;
        let next = if forward {
            shown.scene.next_boundary(teach.t)
        } else {
            shown.scene.previous_boundary(teach.t)
        };
        if let Some(t) = next {
            teach.t = t;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyboard_zoom_and_pan_stay_inside_the_step() {
        let mut v = View::default();
        v.zoom(2.0, 100.0);
        assert_eq!(v.range, Some((25.0, 75.0)));
        v.pan(0.5, 100.0);
        assert_eq!(v.range, Some((50.0, 100.0)));
        v.pan(0.5, 100.0);
        assert_eq!(v.range, Some((50.0, 100.0)));
        v.zoom(0.25, 100.0);
        assert_eq!(v.range, None);
    }
}
