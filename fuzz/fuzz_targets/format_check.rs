//! Format checking never panics, and what it accepts is short, holds no shell command and no NUL;
//! what it refuses comes with a short message.

#![no_main]

use libfuzzer_sys::fuzz_target;
use muxgate_tmux::wire::format_check::{MAX_FORMAT_BYTES, check_format};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    match check_format(&text) {
        Ok(()) => {
            assert!(text.len() <= MAX_FORMAT_BYTES);
            assert!(!text.contains("#(") && !text.contains('\0'));
            assert!(!text.ends_with('#') || text.ends_with("##"));
        }
        // At most 40 quoted characters, each escaped to at most 6 bytes, plus the explanation.
        Err(error) => assert!(error.to_string().len() < 600),
    }
});
