//! Client targets either parse into something that renders and parses back the same, or are
//! refused with a short message.

#![no_main]

use libfuzzer_sys::fuzz_target;
use muxgate_tmux::wire::target::Target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match Target::parse(text) {
        Ok(target) => {
            let shown = target.to_string();
            assert_eq!(Target::parse(&shown).as_ref(), Ok(&target));
            let rendered = target.tmux_target();
            assert!(!rendered.contains([' ', ';', '\'', '"', '#', ':', '.', '\n']));
        }
        // 40 quoted characters, each escaped to at most 10 bytes, plus the explanation.
        Err(error) => assert!(error.to_string().len() < 600),
    }
});
