//! The tmux control-mode engine.
//!
//! Every tmux server muxgate drives is reached through persistent control-mode clients, never
//! one subprocess per operation. The folders follow the path of a command and its output:
//! - [`wire`]: what crosses a control-mode line, all pure: the parser of what tmux writes
//!   ([`wire::protocol`]), quoting ([`wire::quote`]), typed command lines ([`wire::command`];
//!   only this crate builds them), `-F` formats and their rows, ids and the targets clients
//!   name, and the grammar of the formats a client may have tmux expand;
//! - [`client`]: the control-mode clients and the one serialized worker per server that writes
//!   every command ([`client::worker`]), how the clients start ([`client::spawn`]), their
//!   latency, `wait-for` channels, stale clients of a gone gateway, starting a server;
//! - [`output`]: per-pane output streams, fed by the output connections ([`output::monitor`])
//!   attached to the watch session, and the text lines every wait on a pane shares;
//! - [`follow`]: the follow-up algorithms on a pane's output (following it for text);
//! - [`ops`]: operations as commands and the parsers of their answers (pure);
//! - [`typed`]: the typed operations on one server, as one caller (sessions, windows, panes,
//!   buffers, options, copy mode, a pane's state…), and `Multiplexer` for tmux ([`typed::panes`]);
//! - [`unsupported`]: what tmux does not offer that a shared tool can ask for, as data.
//!
//! [`TmuxServer`] ties one server's worker, output hub and run claims together; [`TmuxEngine`]
//! holds the configured servers by name; [`EngineError`] is why a command did not run, and
//! [`EngineSettings`] the `[engine]` tunables.

pub mod client;
mod engine;
mod error;
pub mod follow;
pub mod ops;
pub mod output;
mod settings;
pub mod typed;
pub mod unsupported;
pub mod wire;

pub use client::connection::ConnectError;
pub use client::latency::{LatencyHistogram, LatencySnapshot};
pub use client::remote::{LinkDown, LinkStatus, RemoteHost};
pub use client::spawn::{ClientLaunch, ClientWrapper, RunAs, TmuxEndpoint, TmuxSocket};
pub use client::worker::{BatchMode, Caller, CommandOutcome, WorkerHandle, WorkerStats};
pub use engine::{LEDGER_KEEP, ServerInstance, TmuxEngine, TmuxServer};
pub use error::{EngineError, QueueScope};
pub use output::monitor::{OutputHub, OutputStats};
pub use output::shared_lines::{LineBatch, LineReader};
pub use output::{OutputSubscription, StreamEnd};
pub use settings::EngineSettings;
pub use typed::claims::{PaneClaim, PaneClaims};
pub use wire::command::{CommandBuilder, TmuxCommand};
pub use wire::ids::{PaneId, SessionId, WindowId};
pub use wire::quote::QuoteError;
