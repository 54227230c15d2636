//! Files: open, save (atomic), save as, export SVG, recent files, and files dropped on the window.
//! Errors name the file; a failed open keeps the scenario on screen.

use crate::studio::Studio;
use crate::traces::TraceSource;
use mpipe::trace::looks_like_trace;

impl Studio {
    /// Opens a scenario file; errors name the file, and the current scenario stays.
    pub fn open_path(&mut self, path: &std::path::Path) {
        let name = path.display().to_string();
        match std::fs::read_to_string(path) {
            Ok(text) => {
                self.open_text(&text, &name);
                if self.source == name {
                    self.path = Some(path.to_path_buf());
                    self.remember(&name);
                    self.inform(format!("opened {name}"));
                }
            }
            Err(e) => self.fail(format!("{name}: cannot read: {e}")),
        }
    }

    /// Saves the scenario to `path` atomically (temporary file, then rename).
    pub fn save_to(&mut self, path: &std::path::Path) {
        let Some(scenario) = &self.scenario else {
            return;
        };
        let name = path.display().to_string();
        match mpipe::io::write_atomic(path, scenario.to_json_string().as_bytes()) {
            Ok(()) => {
                self.path = Some(path.to_path_buf());
                self.source = name.clone();
                self.remember(&name);
                self.inform(format!("saved {name}"));
            }
            Err(e) => self.fail(format!("{name}: cannot save: {e}")),
        }
    }

    /// Writes the timeline on screen as SVG.
    pub fn export_svg(&mut self, path: &std::path::Path) {
        let Some(sim) = self.shown() else { return };
        let name = self.scenario.as_ref().map_or("", |s| s.name.as_str());
        let svg = mpipe::svg::render(name, sim);
        let shown = path.display().to_string();
        match mpipe::io::write_atomic(path, svg.as_bytes()) {
            Ok(()) => self.inform(format!("exported {shown}")),
            Err(e) => self.fail(format!("{shown}: cannot export: {e}")),
        }
    }

    /// Asks the window for a screenshot and writes the charts' part of it to `path` as PNG;
    /// the outcome arrives as a notice a frame or two later.
    pub fn export_png(&mut self, ctx: &egui::Context, path: std::path::PathBuf) {
        let rects = [
            self.gantt.last_rect,
            self.baseline.as_ref().and(self.baseline_gantt.last_rect),
        ];
        let Some(rect) = rects.into_iter().flatten().reduce(|a, b| a.union(b)) else {
            self.fail("nothing to export: no timeline on screen".into());
            return;
        };
        let ppp = ctx.pixels_per_point();
        let (tx, rx) = std::sync::mpsc::channel();
        let repaint = ctx.clone();
        ctx.request_screenshot(move |image| {
            let shown = path.display().to_string();
            let message = match crate::png_export::crop_to_png(&image, rect, ppp)
                .and_then(|png| mpipe::io::write_atomic(&path, &png).map_err(|e| e.to_string()))
            {
                Ok(()) => format!("exported {shown}"),
                Err(e) => format!("{shown}: cannot export: {e}"),
            };
            let _ = tx.send(message);
            repaint.request_repaint();
        });
        self.png_pending = Some(rx);
    }

    pub(crate) fn remember(&mut self, name: &str) {
        self.recent.retain(|r| r != name);
        self.recent.insert(0, name.to_string());
        self.recent.truncate(8);
    }

    pub(crate) fn file_buttons(&mut self, ui: &mut egui::Ui) {
        let filter = |d: rfd::FileDialog| d.add_filter("Mpipe scenario", &["json"]);
        if ui.button("Open…").clicked()
            && let Some(path) = filter(rfd::FileDialog::new()).pick_file()
        {
            self.open_path(&path);
        }
        let save = ui.button("Save").on_hover_text("Ctrl+S").clicked()
            || ui.input_mut(|i| i.consume_key(egui::Modifiers::COMMAND, egui::Key::S));
        if save {
            match self.path.clone() {
                Some(path) => self.save_to(&path),
                None => self.save_as(filter),
            }
        }
        if ui.button("Save as…").clicked() {
            self.save_as(filter);
        }
        if ui.button("Export SVG…").clicked()
            && let Some(path) = rfd::FileDialog::new()
                .add_filter("SVG", &["svg"])
                .set_file_name("timeline.svg")
                .save_file()
        {
            self.export_svg(&path);
        }
        if ui.button("Export PNG…").clicked()
            && let Some(path) = rfd::FileDialog::new()
                .add_filter("PNG", &["png"])
                .set_file_name("timeline.png")
                .save_file()
        {
            self.export_png(ui.ctx(), path);
        }
        let mut chosen = None;
        ui.add_enabled_ui(!self.recent.is_empty(), |ui| {
            egui::ComboBox::from_label("Recent")
                .selected_text("")
                .width(24.0)
                .show_ui(ui, |ui| {
                    for r in &self.recent {
                        if ui.selectable_label(false, r).clicked() {
                            chosen = Some(r.clone());
                        }
                    }
                });
        });
        if let Some(r) = chosen {
            self.open_path(std::path::Path::new(&r));
        }
    }

    fn save_as(&mut self, filter: impl Fn(rfd::FileDialog) -> rfd::FileDialog) {
        let name = self
            .path
            .as_ref()
            .and_then(|p| p.file_name())
            .map_or("scenario.json".into(), |n| n.to_string_lossy().into_owned());
        if let Some(path) = filter(rfd::FileDialog::new())
            .set_file_name(name)
            .save_file()
        {
            self.save_to(&path);
        }
    }

    /// Opens dropped files: profiler traces (gzip, or JSON that is not a scenario) are imported
    /// together on a worker thread; otherwise the first file opens as the scenario.
    pub(crate) fn take_dropped(&mut self, ui: &egui::Ui) {
        let dropped = ui.input(|i| i.raw.dropped_files.clone());
        if dropped.is_empty() {
            return;
        }
        let mut traces = Vec::new();
        let mut scenario = None;
        for file in dropped {
            let name = file.path().display().to_string();
            let bytes = match file.bytes() {
                Ok(bytes) => bytes,
                Err(e) => {
                    self.fail(format!("{name}: cannot read: {e}"));
                    return;
                }
            };
            if looks_like_trace(&bytes) {
                traces.push(TraceSource::Bytes {
                    name,
                    bytes: bytes.into(),
                });
            } else if scenario.is_none() {
                scenario = Some((name, file.path().to_path_buf(), bytes));
            }
        }
        self.open_traces(traces);
        let Some((name, path, bytes)) = scenario else {
            return;
        };
        match String::from_utf8(bytes) {
            Ok(text) => {
                self.open_text(&text, &name);
                if self.source == name {
                    self.path = Some(path);
                    self.remember(&name);
                }
            }
            Err(e) => self.fail(format!("{name}: not UTF-8 text: {e}")),
        }
    }
}
