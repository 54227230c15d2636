//! The document: the scenario being edited, where it came from, and its undo history. Every
//! state of the scenario has its own generation number, which everything derived from it is
//! keyed by; undo and redo bring a state back with its number, so what was derived from it
//! (a simulation still held) is valid again without recomputing.

use super::history::{History, Weigh};
use mpipe::Scenario;
use mpipe::scenario::edit::Edit;
use std::path::{Path, PathBuf};

/// Where a document came from: a sample's file name or a path, and the file it is saved to.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Identity {
    /// The sample file name or the path as shown (`mpipe-vit-llm.json`, `/data/mine.json`).
    pub source: String,
    /// The file Save writes to, once there is one.
    pub path: Option<PathBuf>,
}

/// One state of the document, as undo restores it.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    pub scenario: Scenario,
    pub identity: Identity,
    /// This state's generation.
    pub generation: u64,
}

impl Weigh for Snapshot {
    /// The scenario's heap bytes, about: its text fields, layers, lists and hand orders.
    fn weight(&self) -> usize {
        let s = &self.scenario;
        let layers: usize = s.model.layers.iter().map(|l| 200 + l.name.len()).sum();
        let orders: usize = s
            .orders
            .iter()
            .chain(s.orders_from_csv.iter())
            .flatten()
            .flatten()
            .map(|a| 24 + a.len())
            .sum();
        let lists = s
            .workload
            .as_ref()
            .and_then(|w| w.encoder_scale.as_ref())
            .map_or(0, |l| 8 * l.len())
            + s.slabs
                .iter()
                .flatten()
                .flatten()
                .map(|c| 8 * c.len())
                .sum::<usize>()
            + match &s.owner {
                mpipe::scenario::owner::OwnerSpec::Explicit(list) => 8 * list.len(),
                _ => 0,
            };
        256 + s.name.len()
            + s.description.len()
            + self.identity.source.len()
            + layers
            + orders
            + lists
    }
}

/// The scenario being edited, with undo/redo and drag gestures merged into one step each.
#[derive(Debug, Default)]
pub struct Document {
    current: Option<Snapshot>,
    history: History<Snapshot>,
    /// The widget whose drag is extending the last edit, if a drag is going on.
    gesture: Option<egui::Id>,
    /// The last generation handed out.
    last: u64,
}

impl Document {
    /// The scenario, once one is open.
    pub fn scenario(&self) -> Option<&Scenario> {
        self.current.as_ref().map(|s| &s.scenario)
    }

    pub fn source(&self) -> &str {
        self.current
            .as_ref()
            .map_or("", |s| s.identity.source.as_str())
    }

    pub fn path(&self) -> Option<&Path> {
        self.current
            .as_ref()
            .and_then(|s| s.identity.path.as_deref())
    }

    /// The current state's generation (new for every edit and every opened file; 0 before
    /// anything is open).
    pub fn generation(&self) -> u64 {
        self.current.as_ref().map_or(0, |s| s.generation)
    }

    fn next_generation(&mut self) -> u64 {
        self.last += 1;
        self.last
    }

    /// Whether a gesture (a drag, typing in a field) is extending the last edit.
    pub fn in_gesture(&self) -> bool {
        self.gesture.is_some()
    }

    /// The widget whose gesture is extending the last edit.
    pub fn gesture(&self) -> Option<egui::Id> {
        self.gesture
    }

    pub fn can_undo(&self) -> bool {
        self.history.can_undo()
    }

    pub fn can_redo(&self) -> bool {
        self.history.can_redo()
    }

    /// Opens a scenario as the document (undo goes back to the one before).
    pub fn open(&mut self, scenario: Scenario, identity: Identity) {
        self.gesture = None;
        if let Some(old) = self.current.take() {
            self.history.record(old);
        }
        let generation = self.next_generation();
        self.current = Some(Snapshot {
            scenario,
            identity,
            generation,
        });
    }

    /// Forgets the undo history (a restored session starts without one).
    pub fn clear_history(&mut self) {
        self.history = History::default();
    }

    /// Applies `edit`; with `gesture`, a drag of that widget, consecutive edits of one drag are
    /// one undo step. Returns whether the scenario changed.
    pub fn edit(&mut self, edit: &Edit, gesture: Option<egui::Id>) -> bool {
        let Some(current) = &self.current else {
            return false;
        };
        let mut next = current.clone();
        edit.apply(&mut next.scenario);
        if next.scenario == current.scenario {
            return false;
        }
        next.generation = self.next_generation();
        let continuing = gesture.is_some() && gesture == self.gesture;
        if let Some(old) = self.current.replace(next)
            && !continuing
        {
            self.history.record(old);
        }
        self.gesture = gesture;
        true
    }

    /// Ends the drag in progress; true when one was.
    pub fn end_gesture(&mut self) -> bool {
        self.gesture.take().is_some()
    }

    /// Steps back one edit; true when there was one.
    pub fn undo(&mut self) -> bool {
        self.step(History::undo)
    }

    /// Steps forward one edit; true when there was one.
    pub fn redo(&mut self) -> bool {
        self.step(History::redo)
    }

    fn step(
        &mut self,
        walk: fn(&mut History<Snapshot>, Snapshot) -> Result<Snapshot, Snapshot>,
    ) -> bool {
        self.gesture = None;
        let Some(current) = self.current.take() else {
            return false;
        };
        match walk(&mut self.history, current) {
            Ok(other) => {
                self.current = Some(other);
                true
            }
            Err(current) => {
                self.current = Some(current);
                false
            }
        }
    }

    /// The document now lives at `path` (Save as): the states of this document in the history
    /// take the new identity too, so undoing an edit does not forget where it is saved.
    pub fn saved_as(&mut self, path: &Path) {
        let identity = Identity {
            source: path.display().to_string(),
            path: Some(path.to_path_buf()),
        };
        let Some(current) = self.current.as_mut() else {
            return;
        };
        let old = std::mem::replace(&mut current.identity, identity.clone());
        for snapshot in self.history.iter_mut() {
            if snapshot.identity == old {
                snapshot.identity = identity.clone();
            }
        }
    }
}
