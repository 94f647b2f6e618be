//! Quoting yields one line that tmux's lexer turns back into exactly the input.

#![no_main]

use libfuzzer_sys::fuzz_target;
use muxgate_tmux::wire::quote::{QuoteError, quote_arg, unquote};

fuzz_target!(|data: &[u8]| {
    let mut out = Vec::new();
    match quote_arg(&mut out, data) {
        Ok(()) => {
            assert!(!out.contains(&b'\n') && !out.contains(&b'\r') && !out.contains(&0));
            assert_eq!(unquote(&out).as_deref(), Some(data));
        }
        Err(QuoteError::Nul { offset }) => assert_eq!(data.get(offset), Some(&0)),
    }
});
