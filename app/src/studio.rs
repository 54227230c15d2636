//! App state and UI: the current scenario, its derivation (from `core`), and the views of it.
//! The app computes no schedule semantics; everything shown comes from `mpipe::derive`.

use crate::palette;
use crate::samples::{SAMPLES, Sample};
use egui::{Color32, RichText};
use mpipe::event::{Event, Phase};
use mpipe::{Derivation, Scenario, derive};

/// Everything the window shows.
#[derive(Debug)]
pub struct Studio {
    /// Where the scenario came from (sample file name or path).
    pub source: String,
    pub scenario: Option<Scenario>,
    /// The derivation of `scenario`, or the error that names why there is none.
    pub derived: Result<Derivation, String>,
}

impl Default for Studio {
    fn default() -> Self {
        let mut studio = Studio {
            source: String::new(),
            scenario: None,
            derived: Err("no scenario".into()),
        };
        if let Some(sample) = SAMPLES.first() {
            studio.open_sample(sample);
        }
        studio
    }
}

impl Studio {
    /// Loads an embedded sample and derives it.
    pub fn open_sample(&mut self, sample: &Sample) {
        self.open_text(sample.json, sample.file);
    }

    /// Loads scenario JSON text; on error the message names the file and position.
    pub fn open_text(&mut self, text: &str, source: &str) {
        self.source = source.to_string();
        match Scenario::from_json_str(text, source) {
            Ok(scenario) => {
                self.derived = derive(&scenario).map_err(|e| e.locate(text, source).to_string());
                self.scenario = Some(scenario);
            }
            Err(err) => {
                self.scenario = None;
                self.derived = Err(err.to_string());
            }
        }
    }

    /// Rank `r`'s compute actions as strings (what the order view draws).
    pub fn rank_actions(&self, rank: usize) -> Vec<String> {
        match &self.derived {
            Ok(d) => d
                .order
                .actions(rank, d.plan.ranks)
                .iter()
                .map(|a| a.to_string())
                .collect(),
            Err(_) => Vec::new(),
        }
    }

    /// Draws the whole window into `ui`.
    pub fn show(&mut self, ui: &mut egui::Ui) {
        egui::Panel::top("top").show(ui, |ui| self.top_bar(ui));
        egui::Panel::left("details")
            .default_size(380.0)
            .show(ui, |ui| {
                egui::ScrollArea::vertical().show(ui, |ui| self.details(ui));
            });
        egui::CentralPanel::default().show(ui, |ui| self.order_view(ui));
    }

    fn top_bar(&mut self, ui: &mut egui::Ui) {
        ui.horizontal(|ui| {
            ui.heading("Mpipe Studio");
            ui.separator();
            let current = SAMPLES
                .iter()
                .find(|s| s.file == self.source)
                .map_or(self.source.as_str(), |s| s.title);
            let mut chosen = None;
            egui::ComboBox::from_label("Sample")
                .selected_text(current.to_string())
                .width(300.0)
                .show_ui(ui, |ui| {
                    for sample in SAMPLES {
                        if ui
                            .selectable_label(sample.file == self.source, sample.title)
                            .clicked()
                        {
                            chosen = Some(*sample);
                        }
                    }
                });
            if let Some(sample) = chosen {
                self.open_sample(&sample);
            }
        });
    }

    fn details(&self, ui: &mut egui::Ui) {
        if let Some(s) = &self.scenario {
            ui.label(RichText::new(&s.name).strong());
            if !s.description.is_empty() {
                ui.label(&s.description);
            }
        }
        ui.separator();
        let d = match &self.derived {
            Ok(d) => d,
            Err(message) => {
                ui.colored_label(Color32::from_rgb(0xE0, 0x50, 0x50), message);
                return;
            }
        };
        let plan = &d.plan;
        let schedule: Vec<_> = plan.regions.iter().map(|r| r.skeleton).collect();
        ui.label(format!(
            "{}   P = {}, M = {}, {} layers",
            mpipe::skeleton::schedule_to_string(&schedule),
            plan.ranks,
            plan.microbatches,
            plan.layers.len()
        ));
        ui.add_space(6.0);
        ui.label(RichText::new("Placement").strong());
        egui::Grid::new("placement").striped(true).show(ui, |ui| {
            for head in ["", "region", "skeleton", "layout", "layers", ""] {
                ui.label(RichText::new(head).small());
            }
            ui.end_row();
            for r in &plan.regions {
                let (fill, _) = (palette::chip(r.index, false), ());
                ui.label(RichText::new("■").color(fill));
                ui.label(r.index.to_string());
                ui.label(r.skeleton.name());
                ui.label(r.layout().to_string());
                let name = |i: usize| plan.layers.get(i).map_or("?", |l| l.name.as_str());
                ui.label(format!(
                    "{}..{} ({}–{})",
                    r.layers.start,
                    r.layers.end,
                    name(r.layers.start),
                    name(r.layers.end.saturating_sub(1))
                ));
                ui.label(if r.trainable { "trainable" } else { "frozen" });
                ui.end_row();
            }
        });
        for r in &plan.regions {
            let owner = match &r.owner {
                mpipe::plan::RegionOwner::ByLayer { slabs } => {
                    let parts: Vec<String> = slabs
                        .iter()
                        .enumerate()
                        .map(|(rank, s)| format!("r{rank}: {}..{}", s.start, s.end))
                        .collect();
                    format!("ByLayer  {}", parts.join(", "))
                }
                mpipe::plan::RegionOwner::ByMicrobatch => format!("ByMicrobatch  {:?}", plan.owner),
            };
            ui.label(RichText::new(format!("region {}: {owner}", r.index)).small());
        }
        ui.add_space(6.0);
        ui.label(RichText::new("Collectives").strong());
        for line in mpipe::report::collectives_in_words(&d.collectives) {
            ui.label(line);
        }
        ui.add_space(6.0);
        ui.label(
            RichText::new("Chips: region colour; light = forward, dark = backward. Stage index = rank + (region − 1)·P.")
                .small(),
        );
    }

    fn order_view(&self, ui: &mut egui::Ui) {
        let Ok(d) = &self.derived else {
            ui.label("No valid schedule to show.");
            return;
        };
        ui.label(
            RichText::new("Per-rank order (PyTorch action notation <stage><F|B><microbatch>)")
                .strong(),
        );
        ui.add_space(4.0);
        let g = &d.order.graph;
        egui::ScrollArea::both().show(ui, |ui| {
            for (rank, nodes) in d.order.nodes.iter().enumerate() {
                ui.horizontal(|ui| {
                    ui.add_sized(
                        [64.0, 22.0],
                        egui::Label::new(RichText::new(format!("rank {rank}")).strong()),
                    );
                    for &n in nodes {
                        let Some(event) = g.node_weight(n) else {
                            continue;
                        };
                        let (region, phase) = match *event {
                            Event::Fwd { region, .. } => (region, Phase::Forward),
                            Event::Bwd { region, .. } => (region, Phase::Backward),
                            _ => continue,
                        };
                        let Some(action) = event.action(d.plan.ranks) else {
                            continue;
                        };
                        let fill = palette::chip(region, phase == Phase::Backward);
                        let chip = egui::Button::new(
                            RichText::new(action.to_string())
                                .color(Color32::WHITE)
                                .monospace(),
                        )
                        .fill(fill)
                        .min_size(egui::vec2(38.0, 22.0));
                        ui.add(chip).on_hover_text(format!(
                            "{} — region {region}, rank {rank}, microbatch {}",
                            match phase {
                                Phase::Forward => "forward",
                                Phase::Backward => "backward",
                            },
                            event.mb().unwrap_or(0)
                        ));
                    }
                });
            }
        });
    }
}
