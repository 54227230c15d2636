//! The in-app file dialog's state, for Open…, Save as…, Export SVG…/PNG… and Open traces…: the
//! folder (typed or walked), its listing read once per visit, the files chosen, the file name for
//! saving, and what confirming would do. The panel draws it ([`crate::panels::file_dialog`]) and
//! returns what the user did as a [`DialogAction`]; [`FileDialog::act`] carries it out.

use crate::state::traces::TraceSource;
use std::path::{Path, PathBuf};

/// What a file dialog is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilePurpose {
    OpenScenario,
    SaveScenario,
    ExportSvg,
    ExportPng,
    OpenTraces,
}

/// What the user chose in a file dialog.
#[derive(Debug, Clone, PartialEq)]
pub enum Chosen {
    Scenario(PathBuf),
    SaveAs(PathBuf),
    Svg(PathBuf),
    Png(PathBuf),
    Traces(Vec<TraceSource>),
}

/// A folder lists at most this many entries (the rest are counted).
const MOST: usize = 5000;

/// One entry of a folder.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub name: String,
    pub path: PathBuf,
    pub is_dir: bool,
}

/// A folder's entries: folders first, then files of the wanted types, each by name; hidden
/// entries left out. The second value counts entries not listed.
pub fn list(dir: &Path, extensions: &[&str]) -> Result<(Vec<Entry>, usize), String> {
    let read =
        std::fs::read_dir(dir).map_err(|e| format!("{}: cannot read: {e}", dir.display()))?;
    let mut entries = Vec::new();
    let mut more = 0usize;
    for item in read.flatten() {
        let name = item.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        let path = item.path();
        let is_dir = path.is_dir();
        let wanted = is_dir
            || extensions.is_empty()
            || extensions
                .iter()
                .any(|ext| name.to_ascii_lowercase().ends_with(&format!(".{ext}")));
        if !wanted {
            continue;
        }
        if entries.len() >= MOST {
            more += 1;
            continue;
        }
        entries.push(Entry { name, path, is_dir });
    }
    entries.sort_by(|a, b| b.is_dir.cmp(&a.is_dir).then_with(|| a.name.cmp(&b.name)));
    Ok((entries, more))
}

/// `name` with `.ext` appended when it has no such ending.
pub fn with_extension(name: &str, ext: &str) -> String {
    if name.to_ascii_lowercase().ends_with(&format!(".{ext}")) {
        name.to_string()
    } else {
        format!("{name}.{ext}")
    }
}

/// What the user did in the open dialog (the panel returns it inside a command; the studio
/// carries it out with [`FileDialog::act`]).
#[derive(Debug, Clone, PartialEq)]
pub enum DialogAction {
    /// The folder field, as typed so far.
    FolderText(String),
    /// The file name field, as typed so far.
    NameText(String),
    /// Show this folder (Go, Up, Home, a folder clicked).
    Navigate(PathBuf),
    Click(Entry),
    DoubleClick(Entry),
    /// The confirm button (Open, Save, Export, Import), or a double click.
    Confirm,
    Cancel,
}

/// What an action leaves of the dialog.
#[derive(Debug, Clone, PartialEq)]
pub enum DialogResult {
    /// Still open.
    Open,
    /// Closed without a choice.
    Cancelled,
    /// Closed with this choice.
    Chosen(Chosen),
}

/// The dialog's state while it is open.
#[derive(Debug, Clone)]
pub struct FileDialog {
    pub purpose: FilePurpose,
    pub dir: PathBuf,
    /// The folder field as typed.
    pub dir_text: String,
    /// The file name (saving) or the chosen file (opening).
    pub name: String,
    /// Files chosen (traces: several).
    pub chosen: Vec<PathBuf>,
    /// The folder's entries and how many more it holds (or why it cannot be read).
    pub listing: Result<(Vec<Entry>, usize), String>,
    pub error: Option<String>,
}

impl FileDialog {
    /// A dialog for `purpose` in the folder of `start` (a file or a folder), else the working
    /// directory; `name` fills the file name field.
    pub fn new(purpose: FilePurpose, start: Option<&Path>, name: Option<String>) -> FileDialog {
        let dir = start
            .map(|p| {
                if p.is_dir() {
                    p.to_path_buf()
                } else {
                    p.parent().map(Path::to_path_buf).unwrap_or_default()
                }
            })
            .filter(|d| d.is_dir())
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_else(|| PathBuf::from("/"));
        let name = name.unwrap_or_else(|| {
            match purpose {
                FilePurpose::SaveScenario => "scenario.json",
                FilePurpose::ExportSvg => "timeline.svg",
                FilePurpose::ExportPng => "timeline.png",
                FilePurpose::OpenScenario | FilePurpose::OpenTraces => "",
            }
            .to_string()
        });
        let mut dialog = FileDialog {
            purpose,
            dir: dir.clone(),
            dir_text: String::new(),
            name,
            chosen: Vec::new(),
            listing: Ok((Vec::new(), 0)),
            error: None,
        };
        dialog.navigate(&dir);
        dialog
    }

    /// The extensions shown, and the one a saved file gets.
    pub fn extensions(&self) -> &'static [&'static str] {
        match self.purpose {
            FilePurpose::OpenScenario | FilePurpose::SaveScenario => &["json"],
            FilePurpose::ExportSvg => &["svg"],
            FilePurpose::ExportPng => &["png"],
            FilePurpose::OpenTraces => &["json", "gz"],
        }
    }

    pub fn title(&self) -> &'static str {
        match self.purpose {
            FilePurpose::OpenScenario => "Open a scenario",
            FilePurpose::SaveScenario => "Save the scenario as",
            FilePurpose::ExportSvg => "Export the timeline as SVG",
            FilePurpose::ExportPng => "Export the charts as PNG",
            FilePurpose::OpenTraces => "Open profiler traces",
        }
    }

    pub fn confirm_label(&self) -> &'static str {
        match self.purpose {
            FilePurpose::OpenScenario => "Open",
            FilePurpose::SaveScenario => "Save",
            FilePurpose::ExportSvg | FilePurpose::ExportPng => "Export",
            FilePurpose::OpenTraces => "Import",
        }
    }

    pub fn saving(&self) -> bool {
        matches!(
            self.purpose,
            FilePurpose::SaveScenario | FilePurpose::ExportSvg | FilePurpose::ExportPng
        )
    }

    /// Shows folder `dir` (the listing is read once, here).
    pub fn navigate(&mut self, dir: &Path) {
        match list(dir, self.extensions()) {
            Ok(listing) => {
                self.dir = dir.to_path_buf();
                self.dir_text = dir.display().to_string();
                self.listing = Ok(listing);
                self.chosen.clear();
                self.error = None;
            }
            Err(e) => {
                self.dir_text = dir.display().to_string();
                self.error = Some(e);
            }
        }
    }

    /// What confirming does now, or why it cannot.
    pub fn outcome(&self) -> Result<Chosen, String> {
        match self.purpose {
            FilePurpose::OpenTraces => {
                if self.chosen.is_empty() {
                    return Err("choose one or more trace files".into());
                }
                Ok(Chosen::Traces(
                    self.chosen.iter().cloned().map(TraceSource::Path).collect(),
                ))
            }
            FilePurpose::OpenScenario => {
                let path = self.chosen.first().ok_or("choose a scenario file")?;
                Ok(Chosen::Scenario(path.clone()))
            }
            _ => {
                let name = self.name.trim();
                if name.is_empty() || name.contains('/') {
                    return Err("give a file name (without a folder)".into());
                }
                let ext = self.extensions().first().copied().unwrap_or("json");
                let path = self.dir.join(with_extension(name, ext));
                Ok(match self.purpose {
                    FilePurpose::ExportSvg => Chosen::Svg(path),
                    FilePurpose::ExportPng => Chosen::Png(path),
                    _ => Chosen::SaveAs(path),
                })
            }
        }
    }

    /// A click on the file `entry`: traces are chosen several (a click toggles one), anything
    /// else one at a time (its name fills the name field).
    pub fn click(&mut self, entry: &Entry) {
        if self.purpose == FilePurpose::OpenTraces {
            if self.chosen.contains(&entry.path) {
                self.chosen.retain(|p| p != &entry.path);
            } else {
                self.chosen.push(entry.path.clone());
            }
        } else {
            self.chosen = vec![entry.path.clone()];
            self.name = entry.name.clone();
        }
    }

    /// A double click on the file `entry`: it is chosen (traces: with the others chosen), to
    /// confirm at once.
    pub fn double_click(&mut self, entry: &Entry) {
        if self.purpose != FilePurpose::OpenTraces {
            self.chosen.clear();
        }
        if !self.chosen.contains(&entry.path) {
            self.chosen.push(entry.path.clone());
        }
        self.name = entry.name.clone();
    }

    /// Carries out what the user did; a confirm that cannot be carried out says why in the
    /// dialog and leaves it open.
    pub fn act(&mut self, action: DialogAction) -> DialogResult {
        match action {
            DialogAction::FolderText(text) => self.dir_text = text,
            DialogAction::NameText(text) => self.name = text,
            DialogAction::Navigate(dir) => self.navigate(&dir),
            DialogAction::Click(entry) => self.click(&entry),
            DialogAction::DoubleClick(entry) => self.double_click(&entry),
            DialogAction::Confirm => match self.outcome() {
                Ok(chosen) => return DialogResult::Chosen(chosen),
                Err(e) => self.error = Some(e),
            },
            DialogAction::Cancel => return DialogResult::Cancelled,
        }
        DialogResult::Open
    }

    /// The file a confirmed save or export writes, when it exists already (it is replaced).
    pub fn replaces(&self) -> Option<PathBuf> {
        match self.outcome() {
            Ok(Chosen::SaveAs(p) | Chosen::Svg(p) | Chosen::Png(p)) if p.exists() => Some(p),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folders_list_first_and_only_wanted_files_show() {
        let dir = std::env::temp_dir().join(format!("mpipe-dialog-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        for f in ["b.json", "a.json", "c.txt", ".hidden.json", "t.json.gz"] {
            std::fs::write(dir.join(f), "{}").unwrap();
        }
        let (entries, more) = list(&dir, &["json"]).unwrap();
        let names: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["sub", "a.json", "b.json"]);
        assert_eq!(more, 0);
        let (entries, _) = list(&dir, &["json", "gz"]).unwrap();
        assert_eq!(entries.len(), 4);
        let missing = dir.join("nope");
        assert_eq!(
            list(&missing, &[]).unwrap_err(),
            format!(
                "{}: cannot read: No such file or directory (os error 2)",
                missing.display()
            )
        );
        assert_eq!(with_extension("x", "json"), "x.json");
        assert_eq!(with_extension("x.JSON", "json"), "x.JSON");
        let mut d = FileDialog::new(FilePurpose::SaveScenario, Some(&dir.join("a.json")), None);
        assert_eq!(d.dir, dir);
        d.name = "mine".into();
        assert_eq!(d.outcome(), Ok(Chosen::SaveAs(dir.join("mine.json"))));
        d.name = " ".into();
        assert_eq!(
            d.outcome().err().as_deref(),
            Some("give a file name (without a folder)")
        );
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn actions_type_walk_choose_and_confirm() {
        let dir = std::env::temp_dir().join(format!("mpipe-dialog-act-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        let mut d = FileDialog::new(FilePurpose::SaveScenario, Some(&dir), None);
        // Typing changes the field only; Go shows the folder.
        assert_eq!(
            d.act(DialogAction::FolderText("/nowhere".into())),
            DialogResult::Open
        );
        assert_eq!(
            (d.dir.as_path(), d.dir_text.as_str()),
            (dir.as_path(), "/nowhere")
        );
        d.act(DialogAction::Navigate(PathBuf::from("/nowhere")));
        assert_eq!(
            d.error.as_deref(),
            Some("/nowhere: cannot read: No such file or directory (os error 2)")
        );
        assert_eq!(
            d.dir, dir,
            "a folder that cannot be read leaves the one shown"
        );
        d.act(DialogAction::Navigate(dir.join("sub")));
        assert_eq!((d.dir.clone(), d.error.clone()), (dir.join("sub"), None));
        // A confirm without a name says why and stays open; with one it chooses.
        d.act(DialogAction::NameText(" ".into()));
        assert_eq!(d.act(DialogAction::Confirm), DialogResult::Open);
        assert_eq!(
            d.error.as_deref(),
            Some("give a file name (without a folder)")
        );
        d.act(DialogAction::NameText("mine".into()));
        assert_eq!(
            d.act(DialogAction::Confirm),
            DialogResult::Chosen(Chosen::SaveAs(dir.join("sub").join("mine.json")))
        );
        assert_eq!(d.act(DialogAction::Cancel), DialogResult::Cancelled);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn traces_are_chosen_several_and_anything_else_one() {
        let entry = |name: &str| Entry {
            name: name.into(),
            path: PathBuf::from(format!("/t/{name}")),
            is_dir: false,
        };
        let dir = std::env::temp_dir();
        let mut traces = FileDialog::new(FilePurpose::OpenTraces, Some(&dir), None);
        traces.click(&entry("a.json"));
        traces.click(&entry("b.json"));
        traces.click(&entry("a.json"));
        assert_eq!(traces.chosen, [PathBuf::from("/t/b.json")]);
        traces.double_click(&entry("c.json"));
        assert_eq!(
            traces
                .outcome()
                .map(|c| matches!(c, Chosen::Traces(t) if t.len() == 2)),
            Ok(true)
        );
        let mut open = FileDialog::new(FilePurpose::OpenScenario, Some(&dir), None);
        open.click(&entry("a.json"));
        open.click(&entry("b.json"));
        assert_eq!(open.chosen, [PathBuf::from("/t/b.json")]);
        assert_eq!(open.name, "b.json");
        assert_eq!(
            open.outcome(),
            Ok(Chosen::Scenario(PathBuf::from("/t/b.json")))
        );
        // A double click chooses its file alone, even without the click before it.
        open.double_click(&entry("c.json"));
        assert_eq!(
            open.outcome(),
            Ok(Chosen::Scenario(PathBuf::from("/t/c.json")))
        );
    }
}
