//! Whatever arguments a remote tmux client gets, the command line the gateway writes for them
//! is read back by the host's gate as exactly those arguments; and whatever line reaches the
//! gate, it answers without panicking.

#![no_main]

use std::ffi::OsStr;

use libfuzzer_sys::fuzz_target;
use muxgate::hosts::gate::check;
use muxgate_tmux::client::remote::command_line;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // Any line at all: an answer, never a panic.
    let _ = check(Some(text), "tmux");
    // The same bytes as arguments (NUL-separated): they come back unchanged.
    let args: Vec<&str> = text.split('\0').collect();
    let line = command_line(&["tmux".into()], "muxgate-1", args.iter().map(OsStr::new));
    let allowed = check(Some(&line), "tmux").expect("the gateway's own line is allowed");
    assert_eq!(allowed.term.as_deref(), Some("muxgate-1"));
    assert_eq!(allowed.args, args);
});
