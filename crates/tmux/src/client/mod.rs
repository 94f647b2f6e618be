//! The control-mode clients of one server and the one worker that writes every command.
//!
//! - [`spawn`]: how tmux children start (endpoint and wrapper, environment, PDEATHSIG, marker
//!   TERM);
//! - [`remote`]: servers on another machine, their clients started over the host's link;
//! - [`connection`]: one `tmux -C` child, its reader task and FIFO reply matching;
//! - [`worker`]: one per server, the serialized, fair, pipelined command queue;
//! - [`latency`]: the worker's command latency histogram, read by the metrics exporter;
//! - [`channel`]: `wait-for` channel names, signals, and waits on a client of their own;
//! - [`stale`]: finding control clients left behind by a dead gateway;
//! - [`start`]: starting a server that is not running (the one subprocess a tool may need).

pub mod channel;
pub mod connection;
pub mod latency;
pub mod remote;
pub mod spawn;
pub mod stale;
pub mod start;
pub mod worker;
