//! Recordings: a pane's output as an asciinema v2 `.cast` file, timed and replayable with
//! standard players, started by policy (a client acting on a pane of a session) or on request
//! (`record_pane`), rotated and capped on disk, and named in the audit records of the calls
//! that acted on the pane.
//!
//! - [`cast`]: the file format, written and read back, and cutting a time range (pure);
//! - [`policy`]: the `[[recordings.rules]]` and which panes they record (pure);
//! - [`store`]: the directory: file names, `0600` files, listing, the total cap;
//! - [`writer`]: one recording's files: events, gap markers, rotation;
//! - [`recorder`]: the recordings running now, one task per pane.
//!
//! Where they are used: the MCP layer asks the recorder before each tmux call
//! ([`crate::mcp::recording`]); `muxgate recordings list|export` reads the directory.

pub(crate) mod cast;
pub(crate) mod policy;
pub(crate) mod recorder;
pub mod store;
pub mod writer;

use std::path::{Path, PathBuf};

use serde::Deserialize;

pub use policy::{RecordingPolicy, RecordingRuleConfig};
pub use recorder::{RecordError, Recorder, RecordingRef, Stopped};

/// The directory's name in the state directory, unless `recordings.dir` is set.
pub const DIR_NAME: &str = "recordings";

/// `[recordings]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordingsConfig {
    /// Whether anything is recorded (by rule or on request).
    #[serde(default)]
    pub enabled: bool,
    /// Where the files go; default `<state dir>/recordings`.
    #[serde(default)]
    pub dir: Option<PathBuf>,
    /// A file is closed and the recording goes on in a new one before it passes this size.
    #[serde(default = "default_max_file_bytes")]
    pub max_file_bytes: u64,
    /// The oldest closed files are deleted while the directory holds more than this.
    #[serde(default = "default_max_total_bytes")]
    pub max_total_bytes: u64,
    /// Most panes recorded at once.
    #[serde(default = "default_max_panes")]
    pub max_panes: usize,
    #[serde(default)]
    /// Which panes are recorded without being asked (none by default).
    pub rules: Vec<RecordingRuleConfig>,
}

impl Default for RecordingsConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            dir: None,
            max_file_bytes: default_max_file_bytes(),
            max_total_bytes: default_max_total_bytes(),
            max_panes: default_max_panes(),
            rules: Vec::new(),
        }
    }
}

fn default_max_file_bytes() -> u64 {
    16 * 1024 * 1024
}

fn default_max_total_bytes() -> u64 {
    1024 * 1024 * 1024
}

fn default_max_panes() -> usize {
    64
}

impl RecordingsConfig {
    /// The directory: `dir`, else `recordings` in `state_dir`.
    pub fn dir_in(&self, state_dir: Option<&Path>) -> Option<PathBuf> {
        self.dir
            .clone()
            .or_else(|| state_dir.map(|dir| dir.join(DIR_NAME)))
    }

    /// What the recorder needs, checked; `None` when recordings are off.
    pub fn settings(&self, state_dir: Option<&Path>) -> Result<Option<RecordingsSettings>, String> {
        if !self.enabled {
            return Ok(None);
        }
        let dir = self.dir_in(state_dir).ok_or(
            "recordings.enabled is set but there is no state directory (no state.dir, \
             XDG_STATE_HOME or HOME): set recordings.dir",
        )?;
        let policy = RecordingPolicy::compile(&self.rules).map_err(|error| {
            format!(
                "recordings.rules[{}].{}: {}",
                error.index, error.field, error.message
            )
        })?;
        Ok(Some(RecordingsSettings {
            dir,
            max_file_bytes: self.max_file_bytes,
            max_total_bytes: self.max_total_bytes,
            max_panes: self.max_panes,
            policy,
        }))
    }
}

/// `[recordings]` resolved: the directory found, the rules compiled.
#[derive(Debug, Clone)]
pub struct RecordingsSettings {
    /// Where the casts are written.
    pub dir: PathBuf,
    /// Largest file, in bytes; a recording goes on in a new file past it.
    pub max_file_bytes: u64,
    /// Most bytes of all files; the oldest finished files are deleted past it.
    pub max_total_bytes: u64,
    /// Most panes recorded at once.
    pub max_panes: usize,
    /// Which panes the rules record.
    pub policy: RecordingPolicy,
}
