//! Undo and redo over whole snapshots: every edit pushes the state it replaced. Bounded in
//! count and in bytes, so that a file with a huge description cannot fill memory with copies.

/// Something the history can weigh.
pub trait Weigh {
    /// About how many heap bytes it holds.
    fn weight(&self) -> usize;
}

impl Weigh for u32 {
    fn weight(&self) -> usize {
        4
    }
}

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

/// How many bytes of past states are kept (the oldest go first beyond it).
pub const BYTES: usize = 512 << 20;

impl<T: Weigh> History<T> {
    /// Records `before` as the state an edit replaced; a new edit clears the redo stack. The
    /// oldest states go when more than [`DEPTH`] or [`BYTES`] are held.
    pub fn record(&mut self, before: T) {
        self.undo.push(before);
        self.redo.clear();
        let mut held: usize = self.undo.iter().map(Weigh::weight).sum();
        while self.undo.len() > 1 && (self.undo.len() > DEPTH || held > BYTES) {
            held -= self.undo.first().map_or(0, Weigh::weight);
            self.undo.remove(0);
        }
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

    /// A state of a given weight.
    struct Heavy(usize);

    impl Weigh for Heavy {
        fn weight(&self) -> usize {
            self.0
        }
    }

    #[test]
    fn the_oldest_states_go_beyond_the_byte_budget() {
        let mut h = History::default();
        for _ in 0..5 {
            h.record(Heavy(BYTES / 3));
        }
        // Three fit (just), the fourth would not: the two oldest went.
        assert_eq!(h.undo.len(), 3);
        // One state larger than the budget is still kept (the last edit can always be undone).
        h.record(Heavy(2 * BYTES));
        assert_eq!(h.undo.len(), 1);
        let mut h = History::default();
        for i in 0..(DEPTH as u32 + 10) {
            h.record(i);
        }
        assert_eq!(h.undo.len(), DEPTH);
        assert_eq!(h.undo.first(), Some(&10));
    }

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
