//! capture_since cursors sent back by clients either decode into a cursor that encodes back to
//! the same string, or are refused; and finding a decoded cursor's rows never panics.

#![no_main]

use libfuzzer_sys::fuzz_target;
use muxgate_tmux::ops::since::{SinceCursor, locate};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(cursor) = SinceCursor::decode(text) else {
        return;
    };
    assert_eq!(SinceCursor::decode(&cursor.encode()).as_ref(), Ok(&cursor));
    let rows: Vec<Vec<u8>> = text.bytes().map(|b| vec![b]).collect();
    for first_row in [0, 1, cursor.mark, cursor.mark.saturating_add(5), u64::MAX] {
        if let Some(index) = locate(&cursor, &rows, first_row) {
            assert!(index <= rows.len());
        }
    }
});
