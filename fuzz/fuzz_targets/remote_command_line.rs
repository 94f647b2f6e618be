//! Whatever arguments a remote tmux client gets, the command line the gateway writes for them
//! is read back by the host's gate as exactly those arguments; and whatever line reaches the
//! gate, it answers without panicking, on a host with workspaces or without.

#![no_main]

use std::ffi::OsStr;

use libfuzzer_sys::fuzz_target;
use muxgate::hosts::gate::{check, Allowed, Policy};
use muxgate_tmux::client::remote::command_line;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let plain = Policy {
        tmux: "tmux",
        workspaces: false,
    };
    let workspaces = Policy {
        tmux: "tmux",
        workspaces: true,
    };
    // Any line at all: an answer, never a panic.
    let _ = check(Some(text), plain);
    let _ = check(Some(text), workspaces);
    // The same bytes as arguments (NUL-separated): they come back unchanged.
    let args: Vec<&str> = text.split('\0').collect();
    let line = command_line(&["tmux".into()], "muxgate-1", args.iter().map(OsStr::new));
    let allowed = check(Some(&line), plain).expect("the gateway's own line is allowed");
    let Allowed::Tmux { term, args: read } = allowed else {
        panic!("the gateway's tmux line was read as {allowed:?}");
    };
    assert_eq!(term.as_deref(), Some("muxgate-1"));
    assert_eq!(read, args);
    // A host with workspaces never runs tmux itself for such a line.
    assert!(!matches!(
        check(Some(&line), workspaces),
        Ok(Allowed::Tmux { .. })
    ));
});
