//! Teaching mode: a time cursor that steps back and forward between the instants events start or
//! end, or plays at a chosen speed, with one sentence per rank saying what it runs at that
//! instant — or why it is idle ("waiting for 2F3 from rank 1", "warmup: nothing to do until the
//! first microbatch arrives") — and how much memory it holds. The sentences are `core`'s.

use crate::command::Command;
use crate::state::derived::Shown;
use crate::state::view::{SPEEDS, Teach};
use egui::Ui;

/// Draws the controls and the sentences; returns what the user asked for.
pub fn teach_ui(ui: &mut Ui, shown: &Shown, teach: &Teach) -> Vec<Command> {
    let mut out = Vec::new();
    ui.horizontal_wrapped(|ui| {
        if ui.button("◀ Step back").on_hover_text(",").clicked() {
            out.push(Command::StepBack);
        }
        if ui
            .button(if teach.playing { "Pause" } else { "Play" })
            .on_hover_text("Space")
            .clicked()
        {
            out.push(Command::TogglePlay);
        }
        if ui.button("Step ▶").on_hover_text(".").clicked() {
            out.push(Command::StepForward);
        }
        let mut t = teach.t;
        let name = ui.label("time");
        if ui
            .add(egui::Slider::new(&mut t, 0.0..=shown.sim.makespan_s.max(1e-12)).suffix(" s"))
            .labelled_by(name.id)
            .changed()
        {
            out.push(Command::Cursor(t));
        }
        let speed = ui.label("speed");
        egui::ComboBox::from_id_salt("teach speed")
            .selected_text(format!("{}×", teach.speed))
            .show_ui(ui, |ui| {
                for s in SPEEDS {
                    if ui
                        .selectable_label(teach.speed == s, format!("{s}×"))
                        .clicked()
                    {
                        out.push(Command::Speed(s));
                    }
                }
            })
            .response
            .labelled_by(speed.id)
            .on_hover_text("1× plays the whole step in ten seconds");
    });
    for state in mpipe::view::explain::at_time(&shown.sim, &shown.scene, teach.t) {
        ui.label(state.sentence());
    }
    out
}
