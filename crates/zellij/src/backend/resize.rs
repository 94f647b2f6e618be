//! How a Zellij pane is brought to a size or a fullscreen state with the steps Zellij offers.
//! No I/O: the backend runs the steps this module chooses.
//!
//! Zellij resizes a pane by a step of its own (a share of the tab, several cells), never to a
//! number of cells, and `toggle-fullscreen` only flips. So a size is reached by stepping toward
//! it until the pane reaches or passes it, and a fullscreen state by as many flips as it takes.

use std::ffi::OsString;

use crate::ids::PaneId;
use crate::listing::Pane;

use super::checks::args;

/// Most resize steps spent on one dimension of a pane. Each step is a Zellij action and a
/// listing, so this bounds a call to a few seconds; a pane this far from its size is blocked.
pub(super) const MAX_STEPS: usize = 48;

/// Grow or shrink.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ResizeMode {
    Increase,
    Decrease,
}

/// One dimension of a pane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Axis {
    Columns,
    Rows,
}

impl Axis {
    /// This dimension of a pane's text area, in cells.
    pub(super) fn of(self, pane: &Pane) -> usize {
        match self {
            Axis::Columns => pane.geometry.content_columns,
            Axis::Rows => pane.geometry.content_rows,
        }
    }

    /// The sides whose border moves to change this dimension, in the order tried: the far
    /// side first, the near one when the far one cannot move (the pane is at the tab's edge).
    fn sides(self) -> [&'static str; 2] {
        match self {
            Axis::Columns => ["right", "left"],
            Axis::Rows => ["down", "up"],
        }
    }
}

/// The steps that bring one dimension of a pane toward a size: which side's border to move
/// next, learnt from what each step did. A side whose step did not bring the size closer is
/// not tried again: at the tab's edge Zellij may even move the pane's other border, and the
/// other side's next step wins that back. The steps end once the size reaches or passes the
/// target (a step is several cells, so the size between two steps may never be met), when
/// neither side brings it closer, or after [`MAX_STEPS`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct SizeSteps {
    axis: Axis,
    mode: ResizeMode,
    target: usize,
    size: usize,
    blocked: [bool; 2],
    steps: usize,
}

impl SizeSteps {
    /// The steps from `current` to `target` along `axis`.
    pub(super) fn new(axis: Axis, current: usize, target: usize) -> Self {
        let mode = if target > current {
            ResizeMode::Increase
        } else {
            ResizeMode::Decrease
        };
        Self {
            axis,
            mode,
            target,
            size: current,
            blocked: [false; 2],
            steps: 0,
        }
    }

    fn reached(&self) -> bool {
        match self.mode {
            ResizeMode::Increase => self.size >= self.target,
            ResizeMode::Decrease => self.size <= self.target,
        }
    }

    /// The argv of the next step of `pane`, and the side it moves (for [`Self::record`]);
    /// `None` when the steps are over.
    pub(super) fn next(&self, pane: PaneId) -> Option<(usize, Vec<OsString>)> {
        if self.reached() || self.steps >= MAX_STEPS {
            return None;
        }
        let side = self.blocked.iter().position(|blocked| !blocked)?;
        let mode = match self.mode {
            ResizeMode::Increase => "increase",
            ResizeMode::Decrease => "decrease",
        };
        let id = pane.to_string();
        Some((
            side,
            args(["resize", "--pane-id", &id, mode, self.axis.sides()[side]]),
        ))
    }

    /// Records the size a step on `side` left the pane at.
    pub(super) fn record(&mut self, side: usize, size: usize) {
        let closer = match self.mode {
            ResizeMode::Increase => size > self.size,
            ResizeMode::Decrease => size < self.size,
        };
        if !closer {
            self.blocked[side] = true;
        }
        self.size = size;
        self.steps += 1;
    }
}

/// How many `toggle-fullscreen` flips of a pane give it the fullscreen state `want`, given
/// whether it is fullscreen and whether its tab is (another of its panes, when it is not). A
/// flip of a pane while another pane of its tab is fullscreen ends that one's fullscreen, so
/// making it fullscreen then takes two.
pub(super) fn fullscreen_flips(want: bool, pane_fullscreen: bool, tab_fullscreen: bool) -> usize {
    match (want, pane_fullscreen, tab_fullscreen) {
        (true, true, _) | (false, false, _) => 0,
        (true, false, true) => 2,
        (true, false, false) | (false, true, _) => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the steps against a pane whose size each side's step changes by the given
    /// amount (the side at the tab's edge moving the other border, as Zellij does).
    fn simulate(current: usize, target: usize, per_side: [i64; 2]) -> (usize, Vec<usize>) {
        let mut steps = SizeSteps::new(Axis::Columns, current, target);
        let mut size = current as i64;
        let mut sides = Vec::new();
        while let Some((side, _)) = steps.next(PaneId::Terminal(1)) {
            size = (size + per_side[side]).max(1);
            sides.push(side);
            steps.record(side, size as usize);
        }
        (size as usize, sides)
    }

    #[test]
    fn steps_reach_the_size_or_pass_it_by_less_than_a_step() {
        assert_eq!(simulate(80, 81, [8, 8]), (88, vec![0]));
        assert_eq!(simulate(80, 100, [8, 8]), (104, vec![0, 0, 0]));
        assert_eq!(simulate(80, 60, [-8, -8]), (56, vec![0, 0, 0]));
        assert_eq!(simulate(80, 80, [8, 8]), (80, vec![]), "nothing to do");
    }

    #[test]
    fn a_side_that_loses_ground_is_not_tried_again() {
        // At the tab's right edge, "increase right" shrinks the pane; "increase left" grows it.
        assert_eq!(simulate(80, 81, [-8, 8]), (88, vec![0, 1, 1]));
        // A border that cannot move ends its side; with both ended the steps stop.
        assert_eq!(simulate(47, 3, [0, 0]), (47, vec![0, 1]));
    }

    #[test]
    fn steps_end_after_the_most_allowed() {
        let (size, sides) = simulate(10, 10_000, [1, 1]);
        assert_eq!(sides.len(), MAX_STEPS);
        assert_eq!(size, 10 + MAX_STEPS);
    }

    #[test]
    fn a_step_moves_the_far_border_first() {
        let steps = SizeSteps::new(Axis::Columns, 40, 60);
        assert_eq!(
            steps.next(PaneId::Terminal(3)),
            Some((
                0,
                args(["resize", "--pane-id", "terminal_3", "increase", "right"])
            ))
        );
        let mut steps = SizeSteps::new(Axis::Rows, 40, 20);
        steps.record(0, 40);
        assert_eq!(
            steps.next(PaneId::Terminal(3)),
            Some((
                1,
                args(["resize", "--pane-id", "terminal_3", "decrease", "up"])
            ))
        );
    }

    #[test]
    fn fullscreen_takes_as_many_flips_as_the_tab_needs() {
        assert_eq!(fullscreen_flips(true, true, true), 0, "already fullscreen");
        assert_eq!(fullscreen_flips(false, false, false), 0, "already tiled");
        assert_eq!(fullscreen_flips(false, false, true), 0, "another pane's");
        assert_eq!(fullscreen_flips(true, false, false), 1);
        assert_eq!(
            fullscreen_flips(true, false, true),
            2,
            "end the other's first"
        );
        assert_eq!(fullscreen_flips(false, true, true), 1);
    }
}
