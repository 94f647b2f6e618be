//! The control-mode parser never panics and keeps blocks well-formed, whatever tmux sends.

#![no_main]

use libfuzzer_sys::fuzz_target;
use muxgate_tmux::wire::protocol::{Event, Parser};

fuzz_target!(|data: &[u8]| {
    let mut parser = Parser::new();
    let mut open = false;
    for line in data.split(|&b| b == b'\n') {
        match parser.feed(line) {
            Some(Event::Begin { .. }) => {
                assert!(!open, "a block began inside a block");
                open = true;
            }
            Some(Event::Block(_)) => {
                assert!(open, "a block ended that never began");
                open = false;
            }
            Some(_) => assert!(!open, "a notification was reported inside a block"),
            None => assert!(open, "only body lines are swallowed"),
        }
        assert_eq!(parser.in_block(), open);
    }
});
