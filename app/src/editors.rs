//! The scenario editors: sizes, regions (cut and skeletons), owner map and the model table. Each
//! works on a copy of the scenario and reports whether the user changed it; the studio then
//! records the edit for undo and re-derives. No schedule semantics here.

use egui::Ui;
use mpipe::Scenario;
use mpipe::model::Role;
use mpipe::owner::OwnerSpec;
use mpipe::skeleton::Skeleton;

/// Shows every editor for `s`; returns true when anything changed.
pub fn edit(ui: &mut Ui, s: &mut Scenario) -> bool {
    let mut changed = false;
    egui::Grid::new("sizes").num_columns(2).show(ui, |ui| {
        for (label, value, max) in [
            ("Ranks (P)", &mut s.ranks, 256),
            ("Microbatches (M)", &mut s.microbatches, 4096),
            ("Data parallel", &mut s.data_parallel, 1024),
        ] {
            let name = ui.label(label);
            changed |= ui
                .add(egui::DragValue::new(value).range(1..=max))
                .labelled_by(name.id)
                .changed();
            ui.end_row();
        }
    });
    if changed {
        resize_per_microbatch_lists(s);
    }
    ui.separator();
    changed |= regions(ui, s);
    ui.separator();
    changed |= owner(ui, s);
    changed |= crate::workload_bars::workload_bars(ui, s);
    ui.separator();
    changed |= hardware(ui, s);
    ui.separator();
    changed |= model(ui, s);
    changed
}

fn regions(ui: &mut Ui, s: &mut Scenario) -> bool {
    let mut changed = false;
    ui.label(egui::RichText::new("Regions").strong());
    changed |= crate::cut_strip::cut_strip(ui, s);
    let total: usize = s.model.layers.iter().map(|l| l.count).sum();
    let mut merge: Option<usize> = None;
    let mut swap: Option<usize> = None;
    for j in 0..s.schedule.len() {
        ui.horizontal(|ui| {
            let mut skeleton = s.schedule.get(j).copied().unwrap_or(Skeleton::OneFOneB);
            egui::ComboBox::from_label(format!("region {}", j + 1))
                .selected_text(skeleton.name())
                .show_ui(ui, |ui| {
                    for k in Skeleton::ALL {
                        changed |= ui.selectable_value(&mut skeleton, k, k.name()).changed();
                    }
                });
            if let Some(slot) = s.schedule.get_mut(j) {
                *slot = skeleton;
            }
            if j > 0
                && let Some(boundary) = s.cut.get_mut(j - 1)
            {
                let name = ui.label("starts at layer");
                changed |= ui
                    .add(egui::DragValue::new(boundary).range(0..=total))
                    .labelled_by(name.id)
                    .changed();
                if ui
                    .small_button("⬆")
                    .on_hover_text("swap this skeleton with the region above")
                    .clicked()
                {
                    swap = Some(j);
                }
                if ui
                    .small_button("✕")
                    .on_hover_text("merge into the previous region")
                    .clicked()
                {
                    merge = Some(j);
                }
            }
        });
    }
    if let Some(j) = swap {
        s.schedule.swap(j - 1, j);
        changed = true;
    }
    if let Some(j) = merge {
        crate::cut_strip::remove_cut(s, j - 1);
        changed = true;
    }
    if ui.button("Add region (split the last)").clicked() {
        let start = s.cut.last().copied().unwrap_or(0);
        crate::cut_strip::add_cut(s, start + total.saturating_sub(start) / 2);
        changed = true;
    }
    changed
}

fn owner(ui: &mut Ui, s: &mut Scenario) -> bool {
    let mut changed = false;
    let current = s.owner.name();
    egui::ComboBox::from_label("Owner map")
        .selected_text(current)
        .show_ui(ui, |ui| {
            for spec in [
                OwnerSpec::RoundRobin,
                OwnerSpec::FirstRank,
                OwnerSpec::GreedySlack,
                OwnerSpec::Optimized,
            ] {
                let name = spec.name();
                if ui.selectable_label(current == name, name).clicked() && current != name {
                    s.owner = spec;
                    changed = true;
                }
            }
        });
    changed
}

fn model(ui: &mut Ui, s: &mut Scenario) -> bool {
    let mut changed = false;
    ui.label(egui::RichText::new("Model").strong());
    egui::Grid::new("model")
        .striped(true)
        .num_columns(6)
        .show(ui, |ui| {
            let heads: Vec<egui::Id> = ["layer", "role", "count", "fwd s", "bwd s"]
                .iter()
                .map(|h| ui.label(egui::RichText::new(*h).small()).id)
                .collect();
            let head = |k: usize| heads.get(k).copied().unwrap_or(egui::Id::NULL);
            ui.end_row();
            for (i, layer) in s.model.layers.iter_mut().enumerate() {
                changed |= ui
                    .add(egui::TextEdit::singleline(&mut layer.name).desired_width(70.0))
                    .labelled_by(head(0))
                    .changed();
                egui::ComboBox::from_id_salt(("role", i))
                    .selected_text(layer.role.name())
                    .show_ui(ui, |ui| {
                        for r in Role::ALL {
                            changed |= ui.selectable_value(&mut layer.role, r, r.name()).changed();
                        }
                    })
                    .response
                    .labelled_by(head(1));
                changed |= ui
                    .add(egui::DragValue::new(&mut layer.count).range(1..=4096))
                    .labelled_by(head(2))
                    .changed();
                for (k, value) in [(3, &mut layer.fwd_s), (4, &mut layer.bwd_s)] {
                    match value {
                        Some(v) => {
                            changed |= ui
                                .add(egui::DragValue::new(v).speed(0.01).range(0.0..=1e6))
                                .labelled_by(head(k))
                                .changed();
                        }
                        None => {
                            ui.label("–");
                        }
                    }
                }
                changed |= ui.checkbox(&mut layer.trainable, "trainable").changed();
                ui.end_row();
            }
        });
    changed
}

/// Keeps per-microbatch lists (workload scales, an explicit owner map) as long as `M`: new
/// microbatches get scale 1 and a round-robin owner, removed ones are dropped.
pub fn resize_per_microbatch_lists(s: &mut Scenario) {
    let m = s.microbatches;
    if let Some(scales) = s.workload.as_mut().and_then(|w| w.encoder_scale.as_mut()) {
        scales.resize(m, 1.0);
    }
    if let OwnerSpec::Explicit(list) = &mut s.owner {
        let p = s.ranks.max(1);
        let old = list.len();
        list.truncate(m);
        list.extend((old..m).map(|mb| mb % p));
    }
}

fn hardware(ui: &mut Ui, s: &mut Scenario) -> bool {
    let mut changed = false;
    let current = crate::presets::matching(&s.hardware).unwrap_or("custom");
    egui::ComboBox::from_label("Hardware")
        .selected_text(current)
        .width(220.0)
        .show_ui(ui, |ui| {
            for preset in crate::presets::presets() {
                if ui
                    .selectable_label(current == preset.name, preset.name)
                    .clicked()
                    && current != preset.name
                {
                    s.hardware = preset.hardware;
                    changed = true;
                }
            }
        });
    changed
}
