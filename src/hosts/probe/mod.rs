//! What tmux does not tell about a host's panes, read on the host itself: a pane's foreground
//! process and whether it waits for input (`/proc`), and its terminal's modes (`tcgetattr(3)`).
//! The gateway cannot read those across the link, so `muxgate host-probe` reads them there and
//! answers over a channel of the host's SSH connection.
//!
//! - [`wire`]: the questions and answers on that channel, one line each (pure);
//! - [`serve`]: `muxgate host-probe`, the host's end;
//! - [`remote`]: the gateway's end, a [`muxgate_mux::host::Host`] for the host's panes.

pub(crate) mod remote;
pub(crate) mod serve;
pub(crate) mod wire;
