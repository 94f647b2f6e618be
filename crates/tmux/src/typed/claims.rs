//! Exclusive claims on panes for programmatic runs.
//!
//! A command typed by `run_command` owns its pane's input until its end marker appears: a
//! second run typed meanwhile would become input to the first command. A [`PaneClaims`] set
//! (one per server) lets one run at a time claim a pane; the claim ends when its guard is
//! dropped, however the run ends. Keystrokes sent by other tools are not affected (a C-c must
//! still reach a running command).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use crate::wire::ids::PaneId;

/// The panes of one server that a run currently owns.
#[derive(Debug, Clone, Default)]
pub struct PaneClaims {
    panes: Arc<Mutex<HashSet<PaneId>>>,
}

/// A pane's claim; released on drop.
#[derive(Debug)]
pub struct PaneClaim {
    panes: Arc<Mutex<HashSet<PaneId>>>,
    pane: PaneId,
}

fn lock(panes: &Mutex<HashSet<PaneId>>) -> std::sync::MutexGuard<'_, HashSet<PaneId>> {
    // Every update is a single insert or remove, so a poisoned set is still consistent.
    panes.lock().unwrap_or_else(|e| e.into_inner())
}

impl PaneClaims {
    /// Claims `pane`; `None` while another claim on it is alive.
    pub fn claim(&self, pane: PaneId) -> Option<PaneClaim> {
        lock(&self.panes).insert(pane).then(|| PaneClaim {
            panes: self.panes.clone(),
            pane,
        })
    }

    /// How many panes are claimed (for leak checks).
    pub fn len(&self) -> usize {
        lock(&self.panes).len()
    }

    /// Whether no pane is claimed.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Drop for PaneClaim {
    fn drop(&mut self) {
        lock(&self.panes).remove(&self.pane);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_claim_per_pane_until_dropped() {
        let claims = PaneClaims::default();
        let first = claims.claim(PaneId(1)).expect("free pane");
        assert!(claims.claim(PaneId(1)).is_none());
        let other = claims.claim(PaneId(2)).expect("another pane");
        assert_eq!(claims.len(), 2);
        drop(first);
        assert!(claims.claim(PaneId(1)).is_some());
        drop(other);
        assert!(claims.is_empty());
    }
}
