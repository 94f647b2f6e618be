//! The mark scanner never panics, finds the same marks however the stream is cut, and the
//! ledger built from them keeps its records ordered and within their output ranges.

#![no_main]

use std::time::SystemTime;

use libfuzzer_sys::fuzz_target;
use muxgate_mux::ledger::Ledger;
use muxgate_mux::ledger::marks::MarkScanner;

fuzz_target!(|data: &[u8]| {
    let Some((&cut, stream)) = data.split_first() else {
        return;
    };
    let mut whole = Vec::new();
    MarkScanner::new().feed(stream, 0, &mut whole);

    let mut split = Vec::new();
    let mut scanner = MarkScanner::new();
    let step = usize::from(cut).max(1);
    for (i, chunk) in stream.chunks(step).enumerate() {
        scanner.feed(chunk, (i * step) as u64, &mut split);
    }
    assert_eq!(whole, split);

    let mut ledger = Ledger::new(4);
    for mark in whole {
        assert!(mark.start < mark.end && mark.end <= stream.len() as u64);
        ledger.apply(mark, SystemTime::UNIX_EPOCH, |range| {
            assert!(range.start <= range.end);
            None
        });
    }
    let mut last = 0;
    for record in ledger.records() {
        assert!(record.id > last);
        last = record.id;
        if let Some(to) = record.output_to {
            assert!(record.output_from <= to);
        }
    }
});
