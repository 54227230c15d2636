//! The scenario editors: sizes, regions (the cut strip, skeletons, per-rank layer counts), the
//! owner map, the encoder's workload, hardware and the model table. Every widget edits a copy of
//! one value and, only when the user changed it, returns the edit of that one field — so a value
//! nobody touched is never rewritten (a loaded `fwd_s` of 1e308 stays 1e308). No schedule
//! semantics here.

use super::{cut_strip, presets, workload_bars};
use crate::command::Command;
use crate::state::Studio;
use crate::timeline::rgb;
use egui::{RichText, Ui};
use mpipe::Scenario;
use mpipe::scenario::edit::{Edit, region_layers};
use mpipe::scenario::layer::LayerSpec;
use mpipe::scenario::owner::OwnerSpec;
use mpipe::schedules::skeleton::Skeleton;
use mpipe::vocab::layout::Layout;
use mpipe::vocab::parameter::Parameter;
use mpipe::vocab::phase::Phase;
use mpipe::vocab::role::Role;
use mpipe::vocab::units::shorten;

/// The edit of a widget's `response`: part of a drag gesture while it is being dragged.
fn edit_of(response: &egui::Response, edit: Edit) -> Command {
    Command::Edit {
        edit,
        gesture: response.dragged().then_some(response.id),
    }
}

/// A `DragValue` over a copy of `value` that shows the value as it is (never clamped for
/// display) and returns the new value only when the user changed it.
fn number_ui<T: egui::emath::Numeric>(
    ui: &mut Ui,
    value: T,
    range: std::ops::RangeInclusive<T>,
    speed: f64,
    label: egui::Id,
) -> (egui::Response, Option<T>) {
    let mut v = value;
    let response = ui
        .add(
            egui::DragValue::new(&mut v)
                .range(range)
                .clamp_existing_to_range(false)
                // Typed digits commit on Enter, not one by one: typing 12 must not pass
                // through M = 1, which would cut the per-microbatch lists to one entry.
                .update_while_editing(false)
                .speed(speed),
        )
        .labelled_by(label);
    let changed = response.changed() && v != value;
    (response, changed.then_some(v))
}

/// Draws every editor for the document; returns the edits.
pub fn editors_ui(ui: &mut Ui, studio: &Studio) -> Vec<Command> {
    let mut out = Vec::new();
    let Some(s) = studio.scenario() else {
        ui.label("No scenario.");
        return out;
    };
    let shown = |text: &str, chars: usize| {
        mpipe::vocab::units::escape_controls(&shorten(text, chars)).into_owned()
    };
    ui.label(RichText::new(shown(&s.name, 200)).strong());
    if !s.description.is_empty() {
        ui.label(RichText::new(shown(&s.description, 2000)).small());
    }
    ui.separator();
    sizes_ui(ui, s, &mut out);
    ui.separator();
    // Where the stages run, from the derivation of this very document state.
    let placement = studio
        .shown()
        .map(|shown| shown.sim.derivation.plan.placement.ranks_of_stages());
    regions_ui(ui, s, placement, &mut out);
    widths_ui(ui, s, &mut out);
    placement_ui(ui, s, &mut out);
    ui.separator();
    owner_ui(ui, s, &mut out);
    let encoder = mpipe::view::palette::region_hue(Role::Encoder, 0);
    out.extend(workload_bars::workload_bars_ui(ui, s, rgb(encoder)));
    ui.separator();
    hardware_ui(ui, s, &mut out);
    ui.separator();
    model_ui(ui, s, &mut out);
    out
}

/// Makes the edit of a size from its new value.
type SizeEdit = fn(usize) -> Edit;

/// Makes the edit of one layer's time (layer, seconds).
type TimeEdit = fn(usize, f64) -> Edit;

fn sizes_ui(ui: &mut Ui, s: &Scenario, out: &mut Vec<Command>) {
    egui::Grid::new("sizes").num_columns(2).show(ui, |ui| {
        let rows: [(&str, usize, usize, SizeEdit); 3] = [
            ("Ranks (P)", s.ranks, 256, Edit::Ranks),
            ("Microbatches (M)", s.microbatches, 4096, Edit::Microbatches),
            ("Data parallel", s.data_parallel, 1024, Edit::DataParallel),
        ];
        for (label, value, max, make) in rows {
            let name = ui.label(label);
            let (response, new) = number_ui(ui, value, 1..=max, 0.1, name.id);
            if let Some(v) = new {
                out.push(edit_of(&response, make(v)));
            }
            ui.end_row();
        }
        // Each parameter a region's schedule reads (its default shown until edited).
        for parameter in Parameter::ALL {
            let Some(default) = s.parameter_default(parameter) else {
                continue;
            };
            let name = ui.label(parameter.label()).on_hover_text(parameter.about());
            // The file's value as it is; unset, the default runs.
            let value = s.run_ctx().given(parameter).unwrap_or(default);
            let most = parameter.most().max(1);
            let (response, new) = number_ui(ui, value, 1..=most, 0.1, name.id);
            if let Some(v) = new {
                out.push(edit_of(&response, Edit::parameter(parameter, Some(v))));
            }
            ui.end_row();
        }
    });
}

/// The skeleton menu's width, and its names' column (the explanation takes the rest).
const SKELETON_MENU_WIDTH: f32 = 520.0;
const SKELETON_NAME_WIDTH: f32 = 84.0;

fn regions_ui(ui: &mut Ui, s: &Scenario, placement: Option<&[usize]>, out: &mut Vec<Command>) {
    ui.label(RichText::new("Regions").strong());
    out.extend(cut_strip::cut_strip_ui(ui, s));
    let total = mpipe::scenario::edit::layer_count(s);
    // The stage strips take their region's colour (computed once a frame, not once a region).
    let colours = cut_strip::colours_of_regions(s);
    for (j, skeleton) in s.schedule.iter().enumerate() {
        let region = j + 1;
        ui.horizontal(|ui| {
            let mut chosen = *skeleton;
            egui::ComboBox::from_label(format!("region {region}"))
                .selected_text(chosen.name())
                // Every skeleton in view, each with its one-line explanation (whole on hover).
                .height(f32::INFINITY)
                .show_ui(ui, |ui| {
                    ui.set_min_width(SKELETON_MENU_WIDTH);
                    for &k in Skeleton::all() {
                        ui.horizontal(|ui| {
                            let name = ui
                                .add_sized(
                                    [SKELETON_NAME_WIDTH, ui.spacing().interact_size.y],
                                    egui::Button::selectable(chosen == k, k.name()),
                                )
                                .on_hover_text(k.schedule().summary());
                            if name.clicked() {
                                chosen = k;
                            }
                            ui.add(
                                egui::Label::new(
                                    RichText::new(k.schedule().summary()).small().weak(),
                                )
                                .truncate(),
                            )
                            .on_hover_text(k.schedule().summary());
                        });
                    }
                });
            if chosen != *skeleton {
                out.push(Command::Edit {
                    edit: Edit::Skeleton {
                        region,
                        skeleton: chosen,
                    },
                    gesture: None,
                });
            }
            if let Some(&boundary) = j.checked_sub(1).and_then(|i| s.cut.get(i)) {
                let name = ui.label("starts at layer");
                let (response, new) = number_ui(ui, boundary, 0..=total, 0.1, name.id);
                if let Some(to) = new {
                    out.push(edit_of(&response, Edit::SetCut { index: j - 1, to }));
                }
                if ui
                    .small_button("⬆")
                    .on_hover_text("swap this skeleton with the region above")
                    .clicked()
                {
                    out.push(Command::Edit {
                        edit: Edit::SwapWithAbove { region },
                        gesture: None,
                    });
                }
                if ui
                    .small_button("✕")
                    .on_hover_text("merge into the previous region")
                    .clicked()
                {
                    out.push(Command::Edit {
                        edit: Edit::RemoveCut { index: j - 1 },
                        gesture: None,
                    });
                }
            }
        });
        if skeleton.layout() == Layout::Sharded {
            slabs_ui(ui, s, region, out);
            // The region's stages as a strip: drag a boundary to move layers between stages.
            let layers = region_layers(s, region).map_or(0, |r| r.len());
            if layers > 0 && s.ranks <= 256 {
                let counts = mpipe::scenario::edit::stage_counts(s, region);
                let colour = colours.get(j).copied().unwrap_or((0x80, 0x80, 0x80));
                ui.horizontal(|ui| {
                    ui.add_space(12.0);
                    let ranks = placement.map(|all| cut_strip::StageRanks {
                        all,
                        first: j * s.ranks,
                    });
                    out.extend(cut_strip::stage_strip_ui(
                        ui, region, &counts, colour, ranks,
                    ));
                });
            }
        }
    }
    if ui.button("Add region (split the last)").clicked() {
        let start = s.cut.last().copied().unwrap_or(0);
        out.push(Command::Edit {
            edit: Edit::AddCut {
                at: start + total.saturating_sub(start) / 2,
            },
            gesture: None,
        });
    }
}

/// Each region's width (the scenario's `width`): its tensor-, expert- and context-parallel
/// degrees, its devices, sequence parallelism, the share of each kind of collective its compute
/// hides, and whether an overlapped pair hides them under the other half. Each edit changes the
/// one field edited.
fn widths_ui(ui: &mut Ui, s: &Scenario, out: &mut Vec<Command>) {
    use mpipe::scenario::width::{MAX_DEGREE, WidthSpec};
    egui::CollapsingHeader::new("Width (devices per stage)")
        .id_salt("widths")
        .show(ui, |ui| {
            egui::Grid::new("widths grid")
                .striped(true)
                .num_columns(10)
                .show(ui, |ui| {
                    let heads: Vec<egui::Id> = [
                        "region", "tp", "ep", "cp", "devices", "sp", "tp hid %", "ep hid %",
                        "cp hid %", "F&B",
                    ]
                    .iter()
                    .map(|h| ui.label(RichText::new(*h).small()).id)
                    .collect();
                    let head = |k: usize| heads.get(k).copied().unwrap_or(egui::Id::NULL);
                    ui.end_row();
                    for region in 1..=s.schedule.len() {
                        let w = s
                            .width
                            .as_ref()
                            .and_then(|ws| ws.get(region - 1))
                            .copied()
                            .unwrap_or_else(WidthSpec::single);
                        ui.label(region.to_string());
                        let mut changed: Option<(egui::Response, WidthSpec)> = None;
                        for (k, degree) in [(1, w.tp), (2, w.ep), (3, w.cp)] {
                            let (response, new) =
                                number_ui(ui, degree, 1..=MAX_DEGREE, 0.05, head(k));
                            if let Some(v) = new {
                                let mut next = w;
                                match k {
                                    1 => next.tp = v,
                                    2 => next.ep = v,
                                    _ => next.cp = v,
                                }
                                changed = Some((response, next));
                            }
                        }
                        let devices = w.devices.unwrap_or(w.group());
                        let (response, new) =
                            number_ui(ui, devices, 1..=MAX_DEGREE, 0.05, head(4));
                        let response = response.on_hover_text(
                            "devices of each of its ranks: tp × cp unless given, or more where a wider region shares the rank (the rest run data-parallel inside the stage)",
                        );
                        if let Some(v) = new {
                            changed = Some((response, WidthSpec { devices: Some(v), ..w }));
                        }
                        let mut sp = w.sp;
                        let response = ui.checkbox(&mut sp, "").labelled_by(head(5));
                        if response.changed() {
                            changed = Some((response, WidthSpec { sp, ..w }));
                        }
                        for (k, share) in [(6, w.tp_overlap), (7, w.ep_overlap), (8, w.cp_overlap)]
                        {
                            let v = share.unwrap_or(0.0);
                            let (response, new) =
                                number_ui(ui, 100.0 * v, 0.0..=100.0, 1.0, head(k));
                            if let Some(percent) = new {
                                let share = (percent > 0.0).then_some(percent / 100.0);
                                let mut next = w;
                                match k {
                                    6 => next.tp_overlap = share,
                                    7 => next.ep_overlap = share,
                                    _ => next.cp_overlap = share,
                                }
                                changed = Some((response, next));
                            }
                        }
                        let mut pair = w.fb_comm_overlap.unwrap_or(true);
                        let response = ui
                            .checkbox(&mut pair, "")
                            .labelled_by(head(9))
                            .on_hover_text(
                                "an overlapped pair hides each half's collectives under the other's compute",
                            );
                        if response.changed() {
                            let fb_comm_overlap = (!pair).then_some(false);
                            changed = Some((response, WidthSpec { fb_comm_overlap, ..w }));
                        }
                        if let Some((response, width)) = changed {
                            out.push(edit_of(&response, Edit::RegionWidth { region, width }));
                        }
                        ui.end_row();
                    }
                });
            let own: Vec<&str> = s
                .model
                .layers
                .iter()
                .filter(|l| l.width.is_some())
                .map(|l| l.name.as_str())
                .collect();
            if !own.is_empty() {
                ui.label(
                    RichText::new(format!(
                        "with their own width (in the file): {}",
                        own.join(", ")
                    ))
                    .small(),
                );
            }
        });
}

/// Per-rank layer counts of Sharded region `region` (the scenario's `slabs[region − 1]`):
/// balanced, or one count per rank (zeros allowed, so a region can have fewer layers than ranks).
fn slabs_ui(ui: &mut Ui, s: &Scenario, region: usize, out: &mut Vec<Command>) {
    let layers = region_layers(s, region).map_or(0, |r| r.len());
    let counts = s
        .slabs
        .as_ref()
        .and_then(|all| all.get(region - 1))
        .and_then(Option::as_ref);
    let field = format!("slabs[{}]", region - 1);
    ui.horizontal_wrapped(|ui| {
        ui.add_space(12.0);
        let label = ui
            .label(RichText::new(format!("layers per rank ({field})")).small())
            .on_hover_text(
                "how many of the region's layers each rank holds: balanced, or one count per rank (zeros allowed)",
            );
        match counts {
            None => {
                ui.label(RichText::new("balanced").small().weak());
                if ui
                    .small_button("set per rank")
                    .on_hover_text("start from the balanced split (ranks beyond the layers get none)")
                    .clicked()
                {
                    out.push(Command::Edit {
                        edit: Edit::Slabs {
                            region,
                            counts: Some(mpipe::scenario::edit::stage_counts(s, region)),
                        },
                        gesture: None,
                    });
                }
            }
            Some(counts) => {
                for (rank, &n) in counts.iter().enumerate().take(256) {
                    let (response, new) = number_ui(ui, n, 0..=layers, 0.05, label.id);
                    let response = response.on_hover_text(format!("rank {rank}"));
                    if let Some(v) = new {
                        let mut next = counts.clone();
                        if let Some(slot) = next.get_mut(rank) {
                            *slot = v;
                        }
                        out.push(edit_of(
                            &response,
                            Edit::Slabs {
                                region,
                                counts: Some(next),
                            },
                        ));
                    }
                }
                let sum: usize = counts.iter().fold(0, |a, &b| a.saturating_add(b));
                let text = format!("Σ {sum} of {layers}");
                if sum == layers && counts.len() == s.ranks {
                    ui.label(RichText::new(text).small());
                } else {
                    ui.colored_label(egui::Color32::from_rgb(0xE0, 0x50, 0x50), RichText::new(text).small());
                }
                if ui.small_button("balanced").clicked() {
                    out.push(Command::Edit {
                        edit: Edit::Slabs {
                            region,
                            counts: None,
                        },
                        gesture: None,
                    });
                }
            }
        }
    });
}

/// Where the Sharded regions' slabs run: the schedule's own placement (no `placement` field),
/// the default one, or the V fold; a placement written by hand (or made by trading ranks in the
/// chart) shows as `explicit`, kept until another is chosen.
fn placement_ui(ui: &mut Ui, s: &Scenario, out: &mut Vec<Command>) {
    use mpipe::scenario::placement::PlacementSpec;
    const OWN: &str = "the schedule's own";
    let current = s.placement.as_ref().map_or(OWN, PlacementSpec::name);
    egui::ComboBox::from_label("Placement")
        .selected_text(current)
        .show_ui(ui, |ui| {
            for (name, spec, meaning) in [
                (OWN, None, "what the schedule's slots assume (a V schedule's V, else slab i on rank i)"),
                (
                    "default",
                    Some(PlacementSpec::Default),
                    "slab i of every region on rank i",
                ),
                (
                    "v_fold",
                    Some(PlacementSpec::VFold),
                    "every second Sharded region reversed: slab i on rank P − 1 − i (a V)",
                ),
            ] {
                let label = ui.selectable_label(current == name, name).on_hover_text(format!(
                    "{meaning}; under a placement its slots do not assume, a schedule's order is list-scheduled over it"
                ));
                if label.clicked() && current != name {
                    out.push(Command::Edit {
                        edit: Edit::Placement(spec),
                        gesture: None,
                    });
                }
            }
        });
}

fn owner_ui(ui: &mut Ui, s: &Scenario, out: &mut Vec<Command>) {
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
                    out.push(Command::Edit {
                        edit: Edit::Owner(spec),
                        gesture: None,
                    });
                }
            }
        });
}

fn hardware_ui(ui: &mut Ui, s: &Scenario, out: &mut Vec<Command>) {
    let current = presets::matching(&s.hardware).unwrap_or("custom");
    egui::ComboBox::from_label("Hardware")
        .selected_text(current)
        .width(220.0)
        .show_ui(ui, |ui| {
            for preset in presets::presets() {
                if ui
                    .selectable_label(current == preset.name, preset.name)
                    .clicked()
                    && current != preset.name
                {
                    out.push(Command::Edit {
                        edit: Edit::Hardware(Box::new(preset.hardware)),
                        gesture: None,
                    });
                }
            }
        });
}

fn model_ui(ui: &mut Ui, s: &Scenario, out: &mut Vec<Command>) {
    ui.label(RichText::new("Model").strong());
    // A second-order schedule reads the four phases' times instead of forward and backward.
    let four_phase = s.schedule.iter().any(|k| k.second_order());
    let time_heads: &[&str] = if four_phase {
        &["FE s", "FF s", "BF s", "BE s"]
    } else {
        &["fwd s", "bwd s"]
    };
    egui::Grid::new("model")
        .striped(true)
        .num_columns(4 + time_heads.len())
        .show(ui, |ui| {
            let heads: Vec<egui::Id> = ["layer", "role", "count"]
                .iter()
                .chain(time_heads)
                .map(|h| ui.label(RichText::new(*h).small()).id)
                .collect();
            let head = |k: usize| heads.get(k).copied().unwrap_or(egui::Id::NULL);
            ui.end_row();
            for (layer, spec) in s.model.layers.iter().enumerate() {
                layer_row_ui(ui, layer, spec, four_phase, &head, out);
                ui.end_row();
            }
        });
    memory_choices_ui(ui, s, out);
}

/// How each layer group turns memory into time: its recomputation (none, full, selective with
/// its shares), placed early (Mario) or in the backward, and the share of its activations
/// offloaded to the host.
fn memory_choices_ui(ui: &mut Ui, s: &Scenario, out: &mut Vec<Command>) {
    egui::CollapsingHeader::new("Recompute and offload")
        .id_salt("memory choices")
        .show(ui, |ui| {
            egui::Grid::new("memory choices grid")
                .striped(true)
                .num_columns(6)
                .show(ui, |ui| {
                    let heads: Vec<egui::Id> = [
                        "layer",
                        "recomputation",
                        "dropped %",
                        "rerun %",
                        "early",
                        "offload %",
                    ]
                    .iter()
                    .map(|h| ui.label(RichText::new(*h).small()).id)
                    .collect();
                    let head = |k: usize| heads.get(k).copied().unwrap_or(egui::Id::NULL);
                    ui.end_row();
                    for (layer, spec) in s.model.layers.iter().enumerate() {
                        memory_choice_row_ui(ui, layer, spec, &head, out);
                        ui.end_row();
                    }
                });
        });
}

/// One layer group's row of [`memory_choices_ui`].
fn memory_choice_row_ui(
    ui: &mut Ui,
    layer: usize,
    spec: &LayerSpec,
    head: &dyn Fn(usize) -> egui::Id,
    out: &mut Vec<Command>,
) {
    use mpipe::scenario::layer::Recompute;
    ui.label(shorten(&spec.name, 14));
    let mode = |r: Option<Recompute>| match r {
        None => "none",
        Some(Recompute::Full) => "full",
        Some(Recompute::Selective) => "selective",
    };
    let mut chosen = spec.recompute;
    egui::ComboBox::from_id_salt(("recompute mode", layer))
        .selected_text(mode(chosen))
        .show_ui(ui, |ui| {
            for r in [None, Some(Recompute::Full), Some(Recompute::Selective)] {
                ui.selectable_value(&mut chosen, r, mode(r));
            }
        })
        .response
        .labelled_by(head(1));
    if chosen != spec.recompute {
        let edit = match chosen {
            Some(Recompute::Selective) => Edit::LayerSelective {
                layer,
                // Megatron's selective recomputation of attention, about.
                activation_share: spec.recompute_activation_share.unwrap_or(0.5),
                cost_share: spec.recompute_cost_share.unwrap_or(0.1),
            },
            other => Edit::LayerRecompute {
                layer,
                recompute: other.is_some(),
            },
        };
        out.push(Command::Edit {
            edit,
            gesture: None,
        });
    }
    // A selective recomputation's two shares, in per cent; each edit keeps the other share.
    let selective = spec.recompute == Some(Recompute::Selective);
    let (dropped, rerun) = (spec.recompute_activation_share, spec.recompute_cost_share);
    for (k, value) in [(2, dropped), (3, rerun)] {
        let Some(v) = value.filter(|_| selective) else {
            ui.label("–");
            continue;
        };
        let (response, new) = number_ui(ui, 100.0 * v, 0.0..=100.0, 1.0, head(k));
        if let Some(percent) = new {
            let (activation_share, cost_share) = match k {
                2 => (percent / 100.0, rerun.unwrap_or(0.0)),
                _ => (dropped.unwrap_or(0.0), percent / 100.0),
            };
            let edit = Edit::LayerSelective {
                layer,
                activation_share,
                cost_share,
            };
            out.push(edit_of(&response, edit));
        }
    }
    let mut early = spec.recompute_early;
    let response = ui
        .add_enabled(
            spec.recompute.is_some(),
            egui::Checkbox::new(&mut early, "R"),
        )
        .labelled_by(head(4))
        .on_hover_text(
            "early (Mario): the recomputation runs as its own action R just before the backward, in the wait for its gradient",
        );
    if response.changed() {
        out.push(Command::Edit {
            edit: Edit::LayerRecomputeEarly { layer, early },
            gesture: None,
        });
    }
    let share = spec.offload_share.unwrap_or(0.0);
    let (response, new) = number_ui(ui, 100.0 * share, 0.0..=100.0, 1.0, head(5));
    if let Some(percent) = new {
        let edit = Edit::LayerOffload {
            layer,
            share: percent / 100.0,
        };
        out.push(edit_of(&response, edit));
    }
}

/// The width of a layer's name field: the name's, plus the field's margins, between 70 and 130
/// points.
fn name_width(ui: &Ui, name: &str) -> f32 {
    let font = egui::TextStyle::Body.resolve(ui.style());
    let text = ui.fonts_mut(|f| f.layout_no_wrap(name.to_string(), font, egui::Color32::WHITE));
    (text.size().x + 2.0 * ui.spacing().button_padding.x + 4.0).clamp(70.0, 130.0)
}

/// One layer's row of the model table: name, role, count, its times, trainable.
fn layer_row_ui(
    ui: &mut Ui,
    layer: usize,
    spec: &LayerSpec,
    four_phase: bool,
    head: &dyn Fn(usize) -> egui::Id,
    out: &mut Vec<Command>,
) {
    let mut name = spec.name.clone();
    if name.len() > 1000 {
        // Too long to edit in a field (and to lay out every frame): shown cut.
        ui.label(shorten(&name, 20)).labelled_by(head(0));
    } else if let field = ui
        // As wide as the name, within bounds (a grid cell only grows to its last frame's width,
        // so a field that asked for its width was cut to 3–4 characters); the whole name on
        // hover.
        .add_sized(
            [name_width(ui, &name), ui.spacing().interact_size.y],
            egui::TextEdit::singleline(&mut name),
        )
        .labelled_by(head(0))
        .on_hover_text(&spec.name)
        && field.changed()
    {
        // Typing a name is one undo step, however many letters.
        out.push(Command::Edit {
            edit: Edit::LayerName { layer, name },
            gesture: Some(field.id),
        });
    }
    let mut role = spec.role;
    egui::ComboBox::from_id_salt(("role", layer))
        .selected_text(role.name())
        .show_ui(ui, |ui| {
            for r in Role::ALL {
                ui.selectable_value(&mut role, r, r.name());
            }
        })
        .response
        .labelled_by(head(1));
    if role != spec.role {
        out.push(Command::Edit {
            edit: Edit::LayerRole { layer, role },
            gesture: None,
        });
    }
    let (response, new) = number_ui(ui, spec.count, 1..=4096, 0.1, head(2));
    if let Some(count) = new {
        out.push(edit_of(&response, Edit::LayerCount { layer, count }));
    }
    let times = time_fields(spec, four_phase);
    for (k, (value, make, unset)) in times.into_iter().enumerate() {
        match value {
            Some(v) => {
                let (response, new) = number_ui(ui, v, 0.0..=f64::MAX, 0.01, head(3 + k));
                if let Some(seconds) = new {
                    out.push(edit_of(&response, make(layer, seconds)));
                }
            }
            None => {
                ui.label("–").on_hover_text(unset);
            }
        }
    }
    let mut trainable = spec.trainable;
    if ui.checkbox(&mut trainable, "trainable").changed() {
        out.push(Command::Edit {
            edit: Edit::LayerTrainable { layer, trainable },
            gesture: None,
        });
    }
    // A narrow box (the table fits 1280 px): `↻`, named "recompute" for screen readers.
    let mut recompute = spec.recompute.is_some();
    let response = ui.checkbox(&mut recompute, "↻");
    let on = recompute;
    response.widget_info(|| {
        egui::WidgetInfo::selected(egui::accesskit::Role::CheckBox, true, on, "recompute")
    });
    if response
        .on_hover_text(
            "recompute: keep only the input of each run of recomputed layers for the backward, \
             and run their forward again before it (less memory, more time)",
        )
        .changed()
    {
        out.push(Command::Edit {
            edit: Edit::LayerRecompute { layer, recompute },
            gesture: None,
        });
    }
}

/// The time fields a layer shows: the four phases' for a second-order schedule, else forward
/// and backward; each with its edit and what runs when it is not given.
fn time_fields(spec: &LayerSpec, four_phase: bool) -> Vec<(Option<f64>, TimeEdit, &'static str)> {
    if four_phase {
        vec![
            (
                spec.fe_s,
                |layer, seconds| Edit::LayerPhase {
                    layer,
                    phase: Phase::EnergyForward,
                    seconds,
                },
                "the forward when not given",
            ),
            (
                spec.ff_s,
                |layer, seconds| Edit::LayerPhase {
                    layer,
                    phase: Phase::ForceForward,
                    seconds,
                },
                "the mean of forward and backward when not given",
            ),
            (
                spec.bf_s,
                |layer, seconds| Edit::LayerPhase {
                    layer,
                    phase: Phase::ForceBackward,
                    seconds,
                },
                "1.25 × the backward when not given",
            ),
            (
                spec.be_s,
                |layer, seconds| Edit::LayerPhase {
                    layer,
                    phase: Phase::EnergyBackward,
                    seconds,
                },
                "the backward when not given",
            ),
        ]
    } else {
        vec![
            (
                spec.fwd_s,
                |layer, seconds| Edit::LayerFwd { layer, seconds },
                "roofline costs (FLOPs and bytes) in the file",
            ),
            (
                spec.bwd_s,
                |layer, seconds| Edit::LayerBwd { layer, seconds },
                "2 × fwd when not given",
            ),
        ]
    }
}
