//! The tmux control-mode engine.
//!
//! Layers, from the wire up:
//! - [`protocol`]: pure byte-level parser of control-mode output (replies, notifications, output);
//! - [`quote`]: quoting of arguments for control-mode command lines;
//! - [`command`]: typed command lines built from quoted arguments;
//! - [`connection`]: one `tmux -C` child process, its reader task and reply matching;
//! - [`worker`]: one per tmux server, the serialized, fair, pipelined command queue;
//! - [`output`]: per-pane decoded output streams that waiters subscribe to.
