//! Undo and redo over whole scenario snapshots: every edit pushes the state it replaced.

use mpipe::Scenario;

/// The undo and redo stacks.
#[derive(Debug, Default, Clone)]
pub struct History {
    undo: Vec<Scenario>,
    redo: Vec<Scenario>,
}

/// How many edits are kept.
pub const DEPTH: usize = 200;

impl History {
    /// Records `before` as the state an edit replaced; a new edit clears the redo stack.
    pub fn record(&mut self, before: Scenario) {
        self.undo.push(before);
        if self.undo.len() > DEPTH {
            self.undo.remove(0);
        }
        self.redo.clear();
    }

    /// Steps back from `current`, returning the state to show.
    pub fn undo(&mut self, current: Scenario) -> Option<Scenario> {
        let previous = self.undo.pop()?;
        self.redo.push(current);
        Some(previous)
    }

    /// Steps forward from `current`.
    pub fn redo(&mut self, current: Scenario) -> Option<Scenario> {
        let next = self.redo.pop()?;
        self.undo.push(current);
        Some(next)
    }

    pub fn can_undo(&self) -> bool {
        !self.undo.is_empty()
    }

    pub fn can_redo(&self) -> bool {
        !self.redo.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(ranks: usize) -> Scenario {
        let text = format!(
            r#"{{"format": "mpipe-scenario/1", "model": {{"layers": [{{"name": "l", "count": 8, "fwd_s": 1}}]}}, "schedule": ["1f1b"], "ranks": {ranks}, "microbatches": 4}}"#
        );
        Scenario::from_json_str(&text, "t.json").unwrap()
    }

    #[test]
    fn undo_then_redo_walks_back_and_forth() {
        let mut h = History::default();
        h.record(scenario(1));
        h.record(scenario(2));
        let current = scenario(3);
        let back = h.undo(current).unwrap();
        assert_eq!(back.ranks, 2);
        let back = h.undo(back).unwrap();
        assert_eq!(back.ranks, 1);
        assert!(h.undo(back.clone()).is_none());
        let fwd = h.redo(back).unwrap();
        assert_eq!(fwd.ranks, 2);
        // A new edit drops the redo branch.
        h.record(fwd);
        assert!(!h.can_redo());
        assert!(h.can_undo());
    }
}
