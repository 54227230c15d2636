//! What every plot of the studio shares, so that each one reads: about four labelled ticks on
//! each axis at 1-2-5 steps with the digits the step needs (egui_plot's default spacer labels
//! only powers of ten when they are far apart: "10" alone on a 3–16 GB axis), both axes named,
//! the hovered point's values in words, and a legend drawn beside the plot, where it covers no
//! curve's end. Each plot remembers where it drew (tests hover its points).

use egui::{Color32, Id, Stroke, Ui};
use egui_plot::{GridInput, GridMark, HoverPosition, Plot, PlotTransform};
use mpipe::report::svg::{tick_label, tick_step};

/// The device capacity's line in every plot that draws one.
pub const CAPACITY: Color32 = Color32::from_rgb(0xC0, 0x30, 0x30);

/// Labelled ticks an axis aims at over its range.
const TICKS: f64 = 4.0;

/// Grid lines every 1-2-5 step giving about `ticks` labelled ones over the visible range, finer
/// unlabelled ones between.
pub fn spacer<'a>(ticks: f64) -> Box<dyn Fn(GridInput) -> Vec<GridMark> + 'a> {
    egui_plot::uniform_grid_spacer(move |input: GridInput| {
        let step = tick_step(input.bounds.1 - input.bounds.0, ticks);
        [step / 5.0, step, step * 5.0]
    })
}

/// `plot` with readable axes named `x` and `y` (`y` with its unit, `step time (s)`), and a
/// hover label naming the nearest point's curve and both values.
pub fn readable<'a>(plot: Plot<'a>, x: &'a str, y: &'a str) -> Plot<'a> {
    plot.x_grid_spacer(spacer(TICKS))
        .y_grid_spacer(spacer(TICKS))
        .x_axis_formatter(|mark, _| tick_label(mark.value, mark.step_size))
        .y_axis_formatter(|mark, _| tick_label(mark.value, mark.step_size))
        .x_axis_label(x)
        .y_axis_label(y)
        .label_formatter(move |at| hover_text(at, x, y))
}

/// What hovering shows: the nearest point's curve and its two values; nothing away from points.
fn hover_text(at: &HoverPosition<'_>, x: &str, y: &str) -> Option<String> {
    match at {
        HoverPosition::NearDataPoint {
            plot_name,
            position,
            ..
        } => Some(format!(
            "{}{x} = {}\n{y} = {}",
            if plot_name.is_empty() {
                String::new()
            } else {
                format!("{plot_name}\n")
            },
            value(position.x),
            value(position.y)
        )),
        HoverPosition::Elsewhere { .. } => None,
    }
}

/// A value with four significant digits, no trailing zeros (`4.901`, `16`, `0.0125`).
pub fn value(v: f64) -> String {
    if !v.is_finite() {
        return format!("{v}");
    }
    if v == 0.0 {
        return "0".to_string();
    }
    let digits = (3 - v.abs().log10().floor() as i32).clamp(0, 12) as usize;
    let text = format!("{v:.digits$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

/// One entry of a legend beside a plot.
#[derive(Debug, Clone)]
pub struct Entry {
    pub name: String,
    pub colour: Color32,
    /// Drawn as a dot (points) rather than a line sample.
    pub dot: bool,
}

impl Entry {
    pub fn line(name: impl Into<String>, colour: Color32) -> Entry {
        Entry {
            name: name.into(),
            colour,
            dot: false,
        }
    }

    pub fn dot(name: impl Into<String>, colour: Color32) -> Entry {
        Entry {
            name: name.into(),
            colour,
            dot: true,
        }
    }
}

/// The legend of a plot, one wrapped row above it: a sample of each entry's colour and its name,
/// each entry one item (with the gap after it), so that a row wraps before an entry rather than
/// cutting it at the panel's edge or parting a sample from its name.
pub fn legend_ui(ui: &mut Ui, entries: &[Entry]) {
    ui.horizontal_wrapped(|ui| {
        ui.spacing_mut().item_spacing.x = 0.0;
        for e in entries {
            let galley = ui.painter().layout_no_wrap(
                e.name.clone(),
                egui::TextStyle::Small.resolve(ui.style()),
                ui.visuals().text_color(),
            );
            let size = egui::vec2(
                16.0 + 4.0 + galley.size().x + 10.0,
                galley.size().y.max(10.0),
            );
            let (rect, response) = ui.allocate_exact_size(size, egui::Sense::hover());
            response.widget_info(|| egui::WidgetInfo::labeled(egui::Role::Label, true, &e.name));
            let sample = egui::Rect::from_min_size(
                egui::pos2(rect.left(), rect.center().y - 5.0),
                egui::vec2(16.0, 10.0),
            );
            if e.dot {
                ui.painter().circle_filled(sample.center(), 3.5, e.colour);
            } else {
                ui.painter().hline(
                    sample.x_range(),
                    sample.center().y,
                    Stroke::new(2.0, e.colour),
                );
            }
            ui.painter().galley(
                egui::pos2(rect.left() + 20.0, rect.center().y - galley.size().y / 2.0),
                galley,
                ui.visuals().text_color(),
            );
        }
    });
}

/// Remembers where plot `id` drew this frame.
pub fn remember(ui: &Ui, id: &str, transform: PlotTransform) {
    ui.ctx()
        .data_mut(|d| d.insert_temp(Id::unique(("plot transform", id)), transform));
}

/// Where plot `id` drew last (its screen rectangle and scale).
pub fn transform_of(ctx: &egui::Context, id: &str) -> Option<PlotTransform> {
    ctx.data(|d| d.get_temp(Id::unique(("plot transform", id))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_keep_four_significant_digits() {
        assert_eq!(value(4.9012), "4.901");
        assert_eq!(value(16.0), "16");
        assert_eq!(value(1234.6), "1235");
        assert_eq!(value(0.0125), "0.0125");
        assert_eq!(value(0.0), "0");
        assert_eq!(value(-2.5), "-2.5");
    }

    #[test]
    fn hovering_a_point_names_its_curve_and_values() {
        let at = HoverPosition::NearDataPoint {
            plot_name: "nested",
            position: egui_plot::PlotPoint::new(8.0, 4.9012),
            index: 2,
        };
        assert_eq!(
            hover_text(&at, "M", "step time (s)").as_deref(),
            Some("nested\nM = 8\nstep time (s) = 4.901")
        );
        let away = HoverPosition::Elsewhere {
            position: egui_plot::PlotPoint::new(8.0, 4.9),
        };
        assert_eq!(hover_text(&away, "M", "s"), None);
    }
}
