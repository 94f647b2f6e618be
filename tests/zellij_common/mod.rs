//! Shared harness for the Zellij integration tests: a private, isolated Zellij "server" per
//! test (own socket dir, HOME and TMPDIR; a config written first so no setup wizard opens),
//! and guards that kill and delete every session at the end.
//!
//! Finding the binary: `MUXGATE_ZELLIJ_BIN`, else `zellij` on `PATH`, else
//! `$ZELLIJ_INSTALL_ROOT/bin`, `$CARGO_HOME/bin`, `$HOME/.cargo/bin` (where
//! `scripts/install-zellij` puts it; the developer's `HOME`, not the one the tests run with:
//! see [`isolation`]). Under `CI=true` a missing binary fails the test;
//! otherwise the test is skipped with a printed reason.

#![allow(dead_code)] // each test binary uses a different part of the harness

// The test process's own environment, as for the tests that include `common`. A test that
// includes both gets it twice; the second copy finds it done and does nothing.
#[allow(clippy::duplicate_mod)]
#[path = "../common/isolation.rs"]
mod isolation;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use muxgate_zellij::attach::{PtyClient, TermSize};
use muxgate_zellij::backend::{CreateSessionOptions, ZellijBackend, ZellijServerSpec};
use muxgate_zellij::cli::{ZellijCli, ZellijEnv};
use muxgate_zellij::ids::SessionName;

const CONFIG: &str = r#"show_startup_tips false
show_release_notes false
session_serialization false
default_layout "plain"
default_shell "bash"
scrollback_editor "tail -f"
"#;

/// The `zellij` binary for tests, or `None` (after printing why) when absent outside CI.
pub(crate) fn zellij_binary() -> Option<PathBuf> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(bin) = std::env::var_os("MUXGATE_ZELLIJ_BIN") {
        candidates.push(bin.into());
    }
    if let Some(path) = std::env::var_os("PATH") {
        candidates.extend(std::env::split_paths(&path).map(|d| d.join("zellij")));
    }
    for var in ["ZELLIJ_INSTALL_ROOT", "CARGO_HOME"] {
        if let Some(root) = std::env::var_os(var) {
            candidates.push(Path::new(&root).join("bin/zellij"));
        }
    }
    if let Some(home) = isolation::user_home() {
        candidates.push(Path::new(&home).join(".cargo/bin/zellij"));
    }
    let found = candidates.into_iter().find(|c| {
        Command::new(c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    });
    if found.is_none() {
        let msg =
            "zellij not found (MUXGATE_ZELLIJ_BIN, PATH, ~/.cargo/bin); run scripts/install-zellij";
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("{msg}");
        }
        eprintln!("SKIPPED: {msg}");
    }
    found
}

static COUNTER: AtomicUsize = AtomicUsize::new(0);

/// A private Zellij environment and the sessions created in it; everything is killed and
/// deleted on drop.
pub(crate) struct Harness {
    pub backend: ZellijBackend,
    pub env: ZellijEnv,
    sessions: std::sync::Mutex<Vec<SessionName>>,
    // Dropped last: the sockets and HOME live here.
    _dir: tempfile::TempDir,
}

impl Harness {
    pub(crate) async fn new() -> Option<Self> {
        let binary = zellij_binary()?;
        // Short prefix: the socket path (dir + contract_version_1/ + session) must stay under
        // 108 bytes.
        let dir = tempfile::Builder::new()
            .prefix("mz")
            .tempdir()
            .expect("tempdir");
        let home = dir.path().join("h");
        let layouts = home.join(".config/zellij/layouts");
        std::fs::create_dir_all(&layouts).unwrap();
        std::fs::write(home.join(".config/zellij/config.kdl"), CONFIG).unwrap();
        std::fs::write(layouts.join("plain.kdl"), "layout {\n    pane\n}\n").unwrap();
        for sub in ["s", "t"] {
            std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        }
        let env = ZellijEnv {
            socket_dir: Some(dir.path().join("s")),
            home: Some(home.clone()),
            tmp_dir: Some(dir.path().join("t")),
            session_cwd: Some(home),
            ..ZellijEnv::new(binary)
        };
        let backend = ZellijBackend::open(ZellijServerSpec::new(env.clone()))
            .await
            .expect("open backend");
        Some(Self {
            backend,
            env,
            sessions: std::sync::Mutex::new(Vec::new()),
            _dir: dir,
        })
    }

    /// A fresh session name, unique across tests and processes.
    pub(crate) fn name(&self) -> SessionName {
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        SessionName::new(format!("t{}-{n}", std::process::id())).unwrap()
    }

    /// Creates a headless session that the harness kills at the end.
    pub(crate) async fn session(&self) -> SessionName {
        let name = self.name();
        self.track(&name);
        self.backend
            .create_session(&name, CreateSessionOptions::default())
            .await
            .expect("create session");
        name
    }

    /// Registers a session created by the test itself for cleanup.
    pub(crate) fn track(&self, name: &SessionName) {
        self.sessions.lock().unwrap().push(name.clone());
    }

    pub(crate) fn cli(&self) -> ZellijCli {
        ZellijCli::for_test(self.env.clone())
    }

    /// A client attached through a pty, standing in for a human's terminal.
    pub(crate) async fn attach_client(&self, session: &SessionName) -> PtyClient {
        PtyClient::attach(
            &self.cli(),
            session,
            TermSize {
                rows: 40,
                cols: 120,
            },
            Duration::from_secs(10),
        )
        .await
        .expect("attach client")
    }

    /// Runs a raw `zellij` command in the private environment (cleanup, checks).
    pub(crate) fn zellij(&self, args: &[&str]) -> std::process::Output {
        let mut cmd = Command::new(&self.env.binary);
        cmd.args(args)
            .env_remove("ZELLIJ")
            .env_remove("ZELLIJ_SESSION_NAME")
            .env_remove("ZELLIJ_PANE_ID")
            .env("ZELLIJ_SOCKET_DIR", self.env.socket_dir.as_ref().unwrap())
            .env("HOME", self.env.home.as_ref().unwrap())
            .env("TMPDIR", self.env.tmp_dir.as_ref().unwrap())
            .stdin(std::process::Stdio::null());
        cmd.output().expect("run zellij")
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        let sessions =
            std::mem::take(&mut *self.sessions.lock().unwrap_or_else(|e| e.into_inner()));
        for s in sessions {
            let _ = self.zellij(&["kill-session", s.as_str()]);
            let _ = self.zellij(&["delete-session", "--force", s.as_str()]);
        }
    }
}

/// What a failed terminal check needs to be understood: every process of `session` (found by
/// the `ZELLIJ_SESSION_NAME` Zellij gives its panes) with its process group, the terminal's
/// foreground group, state and ignored/blocked signals, and each terminal's modes.
pub(crate) fn pane_processes(session: &SessionName) -> String {
    let wanted = format!("ZELLIJ_SESSION_NAME={}", session.as_str());
    let mut out = String::new();
    let mut ttys = std::collections::BTreeSet::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return "no /proc".to_owned();
    };
    for entry in dir.flatten() {
        let proc = entry.path();
        let Ok(environ) = std::fs::read(proc.join("environ")) else {
            continue;
        };
        if !environ.split(|b| *b == 0).any(|v| v == wanted.as_bytes()) {
            continue;
        }
        let stat = std::fs::read_to_string(proc.join("stat")).unwrap_or_default();
        let status = std::fs::read_to_string(proc.join("status")).unwrap_or_default();
        let masks: Vec<&str> = status
            .lines()
            .filter(|l| l.starts_with("SigIgn") || l.starts_with("SigBlk"))
            .collect();
        let cmdline = std::fs::read(proc.join("cmdline")).unwrap_or_default();
        // stat: pid (comm) state ppid pgrp session tty_nr tpgid ...
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.split_whitespace().collect())
            .unwrap_or_default();
        out.push_str(&format!(
            "pid {} [{}] state/ppid/pgrp/sid/tty/tpgid {:?} {masks:?}\n",
            entry.file_name().to_string_lossy(),
            String::from_utf8_lossy(&cmdline).replace('\0', " "),
            fields.get(..6).unwrap_or_default(),
        ));
        if let Ok(tty) = std::fs::read_link(proc.join("fd/0"))
            && tty.starts_with("/dev/pts")
        {
            ttys.insert(tty);
        }
    }
    for tty in ttys {
        let modes = Command::new("stty").arg("-a").arg("-F").arg(&tty).output();
        let modes = modes.map_or_else(
            |e| e.to_string(),
            |o| String::from_utf8_lossy(&o.stdout).into_owned(),
        );
        out.push_str(&format!("{}: {modes}\n", tty.display()));
    }
    out
}
