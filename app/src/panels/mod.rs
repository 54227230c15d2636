//! The window's panels. Each draws part of the [`Studio`] it is given read-only and returns the
//! [`Command`]s the user's gestures make; nothing here changes state.

pub mod compare;
pub mod cut_strip;
pub mod designs;
pub mod editors;
pub mod file_dialog;
pub mod fit;
pub mod help;
pub mod memory;
pub mod plots;
pub mod presets;
pub mod second_order;
pub mod selection;
pub mod stats;
pub mod teach;
pub mod top_bar;
pub mod traces;
pub mod tuner;
pub mod views;
pub mod what_if;
pub mod workload_bars;

use crate::command::Command;
use crate::state::Studio;
use crate::state::view::PlotFrame;

/// Where this frame put the charts (PNG export crops to them; tests check they line up).
#[derive(Debug, Clone, Default)]
pub struct Drawn {
    pub chart_rects: Vec<egui::Rect>,
    /// The current timeline's plot: x of the start and the end of the visible range.
    pub timeline_x: Option<(f32, f32)>,
    pub memory_frame: Option<PlotFrame>,
    /// The figure Export PNG writes: title, legend, the timelines and the memory plot.
    pub figure_rect: Option<egui::Rect>,
}

/// Draws the whole window.
pub fn window_ui(ui: &mut egui::Ui, studio: &Studio) -> (Vec<Command>, Drawn) {
    let mut out = Vec::new();
    let mut drawn = Drawn::default();
    egui::Panel::top("top").show(ui, |ui| out.extend(top_bar::top_bar_ui(ui, studio)));
    out.extend(help::help_ui(ui.ctx(), studio.view.show_help));
    egui::Panel::left("editors")
        .default_size(360.0)
        .show(ui, |ui| {
            egui::ScrollArea::vertical().show(ui, |ui| out.extend(editors::editors_ui(ui, studio)));
        });
    egui::CentralPanel::default().show(ui, |ui| {
        egui::ScrollArea::vertical().show(ui, |ui| {
            out.extend(views::views_ui(ui, studio, &mut drawn));
        });
    });
    (out, drawn)
}
