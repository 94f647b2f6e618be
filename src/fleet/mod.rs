//! The agents `spawn_agent` starts: which programs it may start and which repositories it may
//! give them worktrees of ([`config`]), the worktrees themselves ([`worktree`]: git, run as a
//! bounded child process), and the gateway's record of each agent it spawned ([`registry`]:
//! kind, pane, worktree, owner; saved in the state directory so that a restart forgets none).

pub mod config;
pub(crate) mod registry;
pub(crate) mod worktree;

pub use config::{AgentProgram, Readiness, Repository};
