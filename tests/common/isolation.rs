//! The test process's environment, set before any test runs: a `HOME` of its own, `bash` as
//! the login shell, and none of the variables that make a shell or tmux read a file of the
//! developer's.
//!
//! Everything a test starts inherits it: the tmux servers the tests start (their tmux.conf,
//! their default shell and the shells in their panes), the tmux servers the gateways in the test
//! process start (they get the gateway's `HOME` and `SHELL`), `muxgate` processes, browsers.
//! So a slow or broken `~/.bashrc`, a `~/.tmux.conf` or an unusual `$SHELL` on the machine
//! running the suite cannot decide whether it passes, and no test writes to the developer's
//! home. The tests of the user's own startup files write the files they read
//! (`tests/shell_integration.rs`).
//!
//! It runs from `.init_array`, before the test harness starts any thread: changing the
//! environment of a process whose threads may read it concurrently is undefined behaviour,
//! and Rust's test harness has no hook before its threads start. Test binaries share it
//! through `common` (and `zellij_common`), which every integration test that starts a program
//! includes.

use std::ffi::OsString;
use std::path::PathBuf;

/// Where the developer's own `HOME` is kept for the few tests that look for a program
/// installed below it (`~/.cargo/bin/zellij`); also marks the environment as already isolated
/// (in a test binary that includes this module twice, and in a child test process).
pub(crate) const USER_HOME_VAR: &str = "TESTS_USER_HOME";

/// The shell tmux and Zellij start when a test names none: always installed where the suite
/// runs, and integrated by the gateway (tests/shell_integration.rs relies on that).
pub(crate) const LOGIN_SHELL: &str = "/bin/bash";

/// The startup files the isolated home holds, and why.
const HOME_FILES: &[(&str, &str)] = &[
    // zsh runs its new-user wizard in a home without any startup file.
    (
        ".zshrc",
        "# The test suite's own home: nothing to set up.\n",
    ),
];

/// Variables that name a startup file to read instead of (or besides) the ones in `HOME`, or
/// that a shell imports as settings: `ENV` (sh, dash, bash as sh), `BASH_ENV` (every
/// non-interactive bash, such as the `bash -c` tmux runs commands with), `ZDOTDIR` (zsh),
/// `XDG_*_HOME` (fish's config and history, tmux's `$XDG_CONFIG_HOME/tmux/tmux.conf`, muxgate's
/// own state directory), `INPUTRC` (readline), `SHELLOPTS` and `BASHOPTS` (bash options),
/// `PROMPT_COMMAND`, `PS1` and `PS2` (prompts the tests read on screen), `CDPATH` (makes `cd`
/// print), `HISTFILE`, and `TMUX`/`TMUX_PANE` (a suite started inside tmux would otherwise talk
/// to the developer's server).
const REMOVED: &[&str] = &[
    "ENV",
    "BASH_ENV",
    "ZDOTDIR",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_CACHE_HOME",
    "XDG_STATE_HOME",
    "INPUTRC",
    "SHELLOPTS",
    "BASHOPTS",
    "PROMPT_COMMAND",
    "PS1",
    "PS2",
    "CDPATH",
    "HISTFILE",
    "TMUX",
    "TMUX_PANE",
];

#[used]
#[unsafe(link_section = ".init_array")]
static ISOLATE: extern "C" fn() = isolate;

extern "C" fn isolate() {
    if std::env::var_os(USER_HOME_VAR).is_some() {
        return;
    }
    let home = tempfile::Builder::new()
        .prefix("muxgate-test-home.")
        .tempdir()
        .expect("a home directory for the tests")
        .keep();
    for (name, text) in HOME_FILES {
        std::fs::write(home.join(name), text).expect("a startup file in the tests' home");
    }
    let user_home = std::env::var_os("HOME").unwrap_or_default();
    // SAFETY: this runs before `main`, so no other thread exists to read the environment.
    unsafe {
        std::env::set_var(USER_HOME_VAR, &user_home);
        std::env::set_var("HOME", &home);
        std::env::set_var("SHELL", LOGIN_SHELL);
        for name in REMOVED {
            std::env::remove_var(name);
        }
    }
    HOME.set(home).expect("set once");
    // SAFETY: registers a plain function; atexit cannot fail in a way that matters here (the
    // home would merely be left behind).
    unsafe { libc::atexit(remove_home) };
}

/// The isolated home this process made (not set in a process that inherited one).
static HOME: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

extern "C" fn remove_home() {
    if let Some(home) = HOME.get() {
        let _ = std::fs::remove_dir_all(home);
    }
}

/// The developer's `HOME` the tests were started with, to find programs installed below it;
/// never a home for anything the tests start.
pub(crate) fn user_home() -> Option<OsString> {
    std::env::var_os(USER_HOME_VAR).filter(|home| !home.is_empty())
}
