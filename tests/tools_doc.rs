//! `docs/tools.md` is the output of `muxgate tools`; this fails when they drift apart.

use std::process::Command;

use muxgate::mcp::catalog;

const REGENERATE: &str = "regenerate it with `cargo run -- tools > docs/tools.md`";

fn checked_in() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/tools.md"))
        .expect("docs/tools.md exists")
}

#[test]
fn docs_tools_md_matches_the_catalog() {
    let expected = catalog::render_markdown(&catalog::tools());
    assert!(
        checked_in() == expected,
        "docs/tools.md is out of date; {REGENERATE}"
    );
}

#[test]
fn muxgate_tools_prints_the_checked_in_catalog() {
    let output = Command::new(env!("CARGO_BIN_EXE_muxgate"))
        .arg("tools")
        .output()
        .expect("run muxgate tools");
    assert!(output.status.success());
    assert!(
        String::from_utf8_lossy(&output.stdout) == checked_in(),
        "`muxgate tools` differs from docs/tools.md; {REGENERATE}"
    );
}
