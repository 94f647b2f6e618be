//! The `muxgate` command line.

fn main() {}
