//! The files side of the studio: the `Io` sub-state (Recent, the file dialog, a PNG export under
//! way, files given on the command line being read) and the studio's operations on files — open
//! a sample, text or path, save atomically, export SVG and PNG, open dropped or given files,
//! import traces.

use super::Studio;
use super::dialog::{FileDialog, FilePurpose};
use super::document::Identity;
use super::files;
use super::jobs::{Job, Poll};
use super::png_export;
use super::traces::TraceSource;
use crate::samples::Sample;
use mpipe::Scenario;
use std::path::{Path, PathBuf};

/// A PNG export under way.
#[derive(Debug)]
pub enum PngExport {
    /// Waiting for the window's screenshot, to crop to `rect` (points) and write to `path`.
    Screenshot {
        image: std::sync::mpsc::Receiver<std::sync::Arc<egui::ColorImage>>,
        path: PathBuf,
        rect: egui::Rect,
        pixels_per_point: f32,
    },
    /// Cropping, encoding and writing on a worker.
    Writing(Job<Result<String, String>>),
}

/// Files the studio holds: what was opened or saved recently, the dialog while it is open, a PNG
/// export under way, and the files given on the command line while they are read.
#[derive(Debug, Default)]
pub struct Io {
    /// Recently opened or saved files (absolute paths), newest first.
    pub recent: Vec<String>,
    /// The folder the file dialogs last confirmed in: every dialog (open, save, export, traces)
    /// starts there, so that Export SVG opens where Export PNG just went.
    pub folder: Option<PathBuf>,
    /// The in-app file dialog, while it is open.
    pub dialog: Option<FileDialog>,
    /// A PNG export under way.
    pub png: Option<PngExport>,
    /// Files given on the command line, being read on a worker.
    pub opening: Option<Job<Vec<files::Given>>>,
    /// The page's fragment last followed (the web build).
    pub address: String,
}

impl Io {
    /// Puts `name` first in Recent.
    pub fn remember(&mut self, name: &str) {
        files::remember(&mut self.recent, name);
    }

    /// Stops the reading of files under way, if any (its result is never applied); whether
    /// there was one.
    fn stop_opening(&mut self) -> bool {
        let job = self.opening.take();
        if let Some(job) = &job {
            job.cancel();
        }
        job.is_some()
    }
}

#[cfg(not(target_arch = "wasm32"))]
/// The name Save as offers: the document's file name; exports its stem with their extension.
fn suggested_name(path: &Path, purpose: FilePurpose) -> Option<String> {
    let stem = |ext: &str| {
        path.file_stem()
            .map(|n| format!("{}.{ext}", n.to_string_lossy()))
    };
    match purpose {
        FilePurpose::SaveScenario => path.file_name().map(|n| n.to_string_lossy().into_owned()),
        FilePurpose::ExportSvg => stem("svg"),
        FilePurpose::ExportPng => stem("png"),
        FilePurpose::OpenScenario | FilePurpose::OpenTraces => None,
    }
}

impl Studio {
    /// Loads an embedded sample.
    pub fn open_sample(&mut self, sample: &Sample) {
        self.open_text(sample.json, sample.file, None);
    }

    /// Opens scenario JSON text as the document; on a parse error the message names the file
    /// and position and the current document stays. Returns whether it opened.
    /// Without a `path` no pipeline CSV is read (a sample, a restored session, a file given as
    /// bytes): a scenario naming one says so when it derives.
    pub fn open_text(&mut self, text: &str, source: &str, path: Option<PathBuf>) -> bool {
        // What the user opens now wins over a file still being read.
        self.io.stop_opening();
        let parsed = Scenario::from_json_str(text, source)
            .map_err(|e| e.to_string())
            .and_then(|s| files::with_orders_csv(s, path.as_deref(), &mut |_| true));
        match parsed {
            Ok(scenario) => {
                self.open_scenario(scenario, text, source, path);
                true
            }
            Err(err) => {
                self.fail(err);
                false
            }
        }
    }

    /// Makes `scenario` (read from `text`) the document.
    fn open_scenario(
        &mut self,
        scenario: Scenario,
        text: &str,
        source: &str,
        path: Option<PathBuf>,
    ) {
        self.doc.open(
            scenario,
            Identity {
                source: source.to_string(),
                path,
            },
        );
        // Another document: the last valid state of the previous one is not its own.
        self.derived.forget_last_good();
        self.view.range = None;
        self.view.selected = None;
        self.notice = None;
        self.rederive(Some(text));
    }

    /// Opens a scenario file (or imports a trace) on a worker: the file and the pipeline CSV it
    /// names are read there, with a progress bar and Cancel; errors name the file, and the
    /// current scenario stays.
    pub fn open_path(&mut self, path: &Path) {
        self.open_given(vec![path.to_path_buf()]);
    }

    /// Opens what a link's fragment names: `sample=FILE` an embedded sample, `scenario=…` the
    /// scenario it carries (`mpipe::scenario::share`). A bad link says why and the document
    /// stays. Returns whether the fragment named anything.
    pub fn open_link(&mut self, fragment: &str) -> bool {
        if let Some(file) = mpipe::scenario::share::part(fragment, "sample") {
            match crate::samples::SAMPLES.iter().find(|s| s.file == file) {
                Some(sample) => {
                    self.open_sample(sample);
                    self.inform(format!("opened the sample {} from the link", sample.file));
                }
                None => self.fail(format!(
                    "{}: no sample `{}` (the samples are the files of the Sample menu, e.g. `{}`)",
                    mpipe::scenario::share::LINK,
                    mpipe::vocab::units::escape_controls(file),
                    crate::samples::SAMPLES.first().map_or("", |s| s.file)
                )),
            }
            return true;
        }
        match mpipe::scenario::share::from_fragment(fragment) {
            None => false,
            Some(Ok(text)) => {
                if self.open_text(&text, mpipe::scenario::share::LINK, None) {
                    self.inform("opened the scenario the link carries".into());
                }
                true
            }
            Some(Err(e)) => {
                self.fail(e.to_string());
                true
            }
        }
    }

    /// The fragment of a link that carries the scenario on screen (`scenario=…`).
    pub fn share_fragment(&self) -> Option<String> {
        self.scenario()
            .map(|s| mpipe::scenario::share::to_fragment(&s.to_json_string()))
    }

    /// The web build: opens what a new fragment in the page's address names (at start, or when
    /// a link is pasted into the open page), then takes it off the address, so that reloading
    /// the page restores the session (with its edits) rather than the link again.
    #[cfg(target_arch = "wasm32")]
    pub fn follow_address(&mut self) {
        let fragment = super::browser::fragment();
        if fragment.is_empty() || fragment == self.io.address {
            return;
        }
        self.io.address = fragment.clone();
        if self.open_link(&fragment) {
            self.doc.clear_history();
            let _ = super::browser::set_fragment("");
            self.io.address.clear();
        }
    }

    /// Copies a link that carries the scenario on screen: in the web build the page's address
    /// with it; on the desktop the fragment, to put after the web build's address (as
    /// `mpipe share --base` does).
    pub fn share_link(&mut self, ctx: &egui::Context) {
        let Some(fragment) = self.share_fragment() else {
            self.fail("nothing to share: no scenario open".into());
            return;
        };
        #[cfg(not(target_arch = "wasm32"))]
        {
            let size = fragment.len() + 1;
            ctx.copy_text(format!("#{fragment}"));
            self.inform(format!(
                "copied the link's fragment ({size} characters): put it after the web build's address"
            ));
        }
        #[cfg(target_arch = "wasm32")]
        match super::browser::page_address() {
            Ok(base) => {
                let link = format!("{base}#{fragment}");
                let size = link.len();
                ctx.copy_text(link);
                self.inform(format!(
                    "copied a link that opens this scenario ({size} characters; the scenario is in the link, no server keeps it)"
                ));
            }
            Err(e) => self.fail(e),
        }
    }

    /// Stops reading the files being opened; the document stays as it is.
    pub fn cancel_opening(&mut self) {
        if self.io.stop_opening() {
            self.inform("opening cancelled: the document is unchanged".into());
        }
    }

    /// Saves the scenario to `path` atomically (temporary file, then rename).
    pub fn save_to(&mut self, path: &Path) {
        let Some(scenario) = self.scenario() else {
            return;
        };
        let path = files::absolute(path);
        match files::write(&path, scenario.to_json_string().as_bytes(), "save") {
            Ok(()) => {
                self.doc.saved_as(&path);
                let name = path.display().to_string();
                self.io.remember(&name);
                self.inform(format!("saved {name}"));
            }
            Err(e) => self.fail(e),
        }
    }

    /// Writes the timeline on screen as SVG (drawn by `core`, like `mpipe render`).
    pub fn export_svg(&mut self, path: &Path) {
        let Some(shown) = self.shown() else {
            self.fail("nothing to export: no valid schedule".into());
            return;
        };
        // The SVG is built beside what the window holds (the simulation and its timeline):
        // refused when it would not fit (rule `memory` for the export's own peak).
        let events = shown.sim.derivation.order.graph.node_count() as u64;
        if let Err(e) = mpipe::algebra::budget::check_held(
            events,
            mpipe::algebra::budget::Use::Render,
            mpipe::algebra::budget::MEMORY_LIMIT_BYTES,
            super::derived::SCENE_BYTES_PER_EVENT,
        ) {
            self.fail(format!(
                "{}: cannot export: {e} (with the app's timeline)",
                path.display()
            ));
            return;
        }
        let svg = mpipe::report::svg::render(&shown.title, &shown.sim);
        match files::write(path, svg.as_bytes(), "export") {
            Ok(()) => self.inform(format!("exported {}", path.display())),
            Err(e) => self.fail(e),
        }
    }

    /// Asks the window for a screenshot; when it arrives, the charts' part of it is cropped,
    /// encoded and written to `path` as PNG on a worker, and the outcome arrives as a notice.
    pub fn export_png(&mut self, ctx: &egui::Context, path: PathBuf) {
        // The whole figure: title, legend, the timelines and the memory plot (it was the charts
        // alone).
        let Some(rect) = self.view.figure_rect.or_else(|| {
            self.view
                .chart_rects
                .iter()
                .copied()
                .reduce(|a, b| a.union(b))
        }) else {
            self.fail("nothing to export: no timeline on screen".into());
            return;
        };
        let (tx, rx) = std::sync::mpsc::channel();
        let repaint = ctx.clone();
        ctx.request_screenshot(move |image| {
            let _ = tx.send(image);
            repaint.request_repaint();
        });
        self.io.png = Some(PngExport::Screenshot {
            image: rx,
            path,
            rect,
            pixels_per_point: ctx.pixels_per_point(),
        });
    }

    /// Takes the screenshot a PNG export waits for (starting the job that writes it) or the
    /// job's outcome; true while the export is under way.
    pub(crate) fn poll_png(&mut self) -> bool {
        match self.io.png.take() {
            None => false,
            Some(PngExport::Screenshot {
                image,
                path,
                rect,
                pixels_per_point,
            }) => match image.try_recv() {
                Ok(image) => {
                    let job = Job::spawn("mpipe png", move |_| {
                        png_export::crop_to_png(&image, rect, pixels_per_point)
                            .map_err(|e| format!("{}: cannot export: {e}", path.display()))
                            .and_then(|png| files::write(&path, &png, "export"))
                            .map(|()| format!("exported {}", path.display()))
                    });
                    match job {
                        Ok(job) => self.io.png = Some(PngExport::Writing(job)),
                        Err(e) => self.fail(e),
                    }
                    true
                }
                Err(std::sync::mpsc::TryRecvError::Empty) => {
                    self.io.png = Some(PngExport::Screenshot {
                        image,
                        path,
                        rect,
                        pixels_per_point,
                    });
                    true
                }
                Err(std::sync::mpsc::TryRecvError::Disconnected) => {
                    self.fail(format!(
                        "{}: cannot export: the window gave no screenshot",
                        path.display()
                    ));
                    false
                }
            },
            Some(PngExport::Writing(job)) => match job.poll() {
                Poll::Running => {
                    self.io.png = Some(PngExport::Writing(job));
                    true
                }
                Poll::Done(result) => {
                    self.report(result);
                    false
                }
                Poll::Lost => {
                    self.fail("the PNG export stopped unexpectedly".into());
                    false
                }
            },
        }
    }

    /// Opens the in-app file dialog for `purpose`, in the folder the dialogs last confirmed in,
    /// else the document's, else the last file used's.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn show_dialog(&mut self, purpose: FilePurpose) {
        let start = self
            .io
            .folder
            .clone()
            .filter(|f| f.is_dir())
            .or_else(|| self.doc.path().map(Path::to_path_buf))
            .or_else(|| self.io.recent.first().map(PathBuf::from));
        let name = self.doc.path().and_then(|p| suggested_name(p, purpose));
        self.io.dialog = Some(FileDialog::new(purpose, start.as_deref(), name));
    }

    /// In the browser: its own chooser opens files (they arrive later; `None`), and saves and
    /// exports are downloads, named as the document, else as the sample, else "scenario".
    #[cfg(target_arch = "wasm32")]
    pub fn browser_chosen(&mut self, purpose: FilePurpose) -> Option<super::dialog::Chosen> {
        use super::dialog::Chosen;
        let name = self
            .doc
            .path()
            .map(Path::to_path_buf)
            .or_else(|| Some(PathBuf::from(self.source())).filter(|p| p.extension().is_some()))
            .unwrap_or_else(|| PathBuf::from("scenario.json"));
        let named = |ext: &str| name.with_extension(ext);
        match purpose {
            FilePurpose::OpenScenario | FilePurpose::OpenTraces => {
                if let Err(e) = super::browser::pick(purpose == FilePurpose::OpenTraces) {
                    self.fail(e);
                }
                None
            }
            FilePurpose::SaveScenario => Some(Chosen::SaveAs(named("json"))),
            FilePurpose::ExportSvg => Some(Chosen::Svg(named("svg"))),
            FilePurpose::ExportPng => Some(Chosen::Png(named("png"))),
        }
    }

    /// Opens dropped files: profiler traces are imported together on a background job;
    /// otherwise the first file opens as the scenario. In the browser the files are read
    /// asynchronously first, and opened when they arrive.
    pub fn open_dropped(&mut self, dropped: &[egui::DroppedFileHandle]) {
        #[cfg(not(target_arch = "wasm32"))]
        self.open_dropped_bytes(files::read_dropped(dropped));
        #[cfg(target_arch = "wasm32")]
        super::browser::read_dropped(dropped);
    }

    /// Opens files read from a drop (or, in the browser, a pick): as [`Studio::open_dropped`].
    pub fn open_dropped_bytes(&mut self, dropped: Vec<files::DroppedBytes>) {
        let sorted = files::sort_dropped(dropped);
        if let Some(e) = sorted.errors.into_iter().next() {
            self.fail(e);
        }
        self.open_traces(sorted.traces);
        if let Some((name, path, text)) = sorted.scenario {
            // One that names a pipeline CSV is opened from its path as any other file (the CSV
            // read on a worker); the rest from the bytes dropped.
            let names_csv = Scenario::from_json_str(&text, &name)
                .is_ok_and(|s| s.orders_csv.is_some() && s.orders.is_none());
            if names_csv && !path.as_os_str().is_empty() && cfg!(not(target_arch = "wasm32")) {
                self.open_given(vec![path]);
            } else if self.open_text(&text, &name, Some(path)) {
                self.io.remember(&name);
            }
        }
    }

    /// Opens files (given on the command line, chosen, dropped): read and sorted on a worker (the
    /// window stays live, whatever the files are), then the scenario opens and the traces are
    /// imported. A second call replaces a reading still under way.
    pub fn open_given(&mut self, paths: Vec<PathBuf>) {
        if paths.is_empty() {
            return;
        }
        self.io.stop_opening();
        match Job::spawn("mpipe open", move |control| {
            files::sort_given(paths, &mut |f| control.keep_going(f))
        }) {
            Ok(job) => self.io.opening = Some(job),
            Err(e) => self.fail(e),
        }
    }

    /// Takes the files read for [`Studio::open_given`]; true while they are still being read.
    pub(crate) fn poll_given(&mut self) -> bool {
        let Some(job) = &self.io.opening else {
            return false;
        };
        let given = match job.poll() {
            Poll::Running => return true,
            Poll::Done(given) => given,
            Poll::Lost => {
                self.io.opening = None;
                self.fail("reading the files given stopped unexpectedly".into());
                return false;
            }
        };
        self.io.opening = None;
        let mut traces = Vec::new();
        for g in given {
            match g {
                files::Given::Trace(path) => traces.push(TraceSource::Path(path)),
                files::Given::Scenario(path, Ok(read)) => {
                    let (text, scenario) = *read;
                    let name = path.display().to_string();
                    self.open_scenario(scenario, &text, &name, Some(path));
                    self.io.remember(&name);
                    self.inform(format!("opened {name}"));
                }
                files::Given::Scenario(_, Err(e)) => self.fail(e),
            }
        }
        self.open_traces(traces);
        false
    }

    /// Starts importing trace files on a background job.
    pub fn open_traces(&mut self, sources: Vec<TraceSource>) {
        if let Err(e) = self.traces.start_import(sources) {
            self.fail(e);
        }
    }
}
