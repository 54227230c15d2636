//! Undo and redo over whole snapshots: every edit pushes the state it replaced.

/// The undo and redo stacks.
#[derive(Debug, Clone)]
pub struct History<T> {
    undo: Vec<T>,
    redo: Vec<T>,
}

impl<T> Default for History<T> {
    fn default() -> Self {
        History {
            undo: Vec::new(),
            redo: Vec::new(),
        }
    }
}

/// How many edits are kept.
pub const DEPTH: usize = 200;

impl<T> History<T> {
    /// Records `before` as the state an edit replaced; a new edit clears the redo stack.
    pub fn record(&mut self, before: T) {
        self.undo.push(before);
        if self.undo.len() > DEPTH {
            self.undo.remove(0);
        }
        self.redo.clear();
    }

    /// Steps back from `current`, returning the state to show.
    pub fn undo(&mut self, current: T) -> Result<T, T> {
        match self.undo.pop() {
            Some(previous) => {
                self.redo.push(current);
                Ok(previous)
            }
            None => Err(current),
        }
    }

    /// Steps forward from `current`.
    pub fn redo(&mut self, current: T) -> Result<T, T> {
        match self.redo.pop() {
            Some(next) => {
                self.undo.push(current);
                Ok(next)
            }
            None => Err(current),
        }
    }

    pub fn can_undo(&self) -> bool {
        !self.undo.is_empty()
    }

    pub fn can_redo(&self) -> bool {
        !self.redo.is_empty()
    }

    /// Every state kept, undo stack then redo stack (to rename the document in all of them).
    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut T> {
        self.undo.iter_mut().chain(self.redo.iter_mut())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn undo_then_redo_walks_back_and_forth() {
        let mut h = History::default();
        h.record(1);
        h.record(2);
        let current = 3;
        let back = h.undo(current).unwrap();
        assert_eq!(back, 2);
        let back = h.undo(back).unwrap();
        assert_eq!(back, 1);
        assert_eq!(h.undo(back), Err(1));
        let fwd = h.redo(back).unwrap();
        assert_eq!(fwd, 2);
        // A new edit drops the redo branch.
        h.record(fwd);
        assert!(!h.can_redo());
        assert!(h.can_undo());
    }
}
