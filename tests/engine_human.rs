//! A human attached through a real terminal keeps their view while the engine works.
//!
//! Its own test binary: it sets an environment variable for the whole process before any
//! thread starts.

mod common;

use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use common::tmux::TestTmux;
use common::wait_until;
use muxgate_tmux::{
    BatchMode, Caller, EngineSettings, PaneId, TmuxCommand, TmuxServer, TmuxSocket, WindowId,
};
use tokio_util::sync::CancellationToken;

/// A pty pair sized `cols`x`rows`; returns (master, slave).
fn open_pty(cols: u16, rows: u16) -> (OwnedFd, OwnedFd) {
    let mut master = 0;
    let mut slave = 0;
    let size = libc::winsize {
        ws_row: rows,
        ws_col: cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: openpty writes two fds into the provided integers; the size pointer is valid.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            &size,
        )
    };
    assert_eq!(rc, 0, "openpty failed");
    // SAFETY: openpty returned two fresh descriptors that nothing else owns.
    unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) }
}

/// What a human sees: their client's session, window and size, the window's size, and the
/// session environment.
fn human_view(tmux: &TestTmux) -> (String, String, String) {
    let clients = tmux.ok(&[
        "list-clients",
        "-F",
        "#{client_termname} #{client_width}x#{client_height} #{session_name} #{window_id}",
    ]);
    let human: Vec<_> = clients.lines().filter(|l| l.starts_with("xterm")).collect();
    assert_eq!(human.len(), 1, "{clients}");
    // Every session's windows but the watch session's, which links the watched ones while the
    // engine works (tests/watch_session.rs checks that it leaves when the engine stops).
    let windows: String = tmux
        .ok(&[
            "list-windows",
            "-a",
            "-F",
            "#{session_name} #{window_id} #{window_width}x#{window_height} #{window_active}",
        ])
        .lines()
        .filter(|line| !line.starts_with("_muxgate "))
        .map(|line| format!("{line}\n"))
        .collect();
    let env = tmux.ok(&["show-environment", "-t", "main"]);
    (human[0].to_string(), windows, env)
}

#[test]
fn an_attached_human_keeps_window_size_and_environment() {
    // tmux copies variables like SSH_AUTH_SOCK from an attaching client into the session unless
    // the client attaches with -E. Give this process a value a human's session must never get.
    // SAFETY: set before any other thread of this test binary exists.
    unsafe { std::env::set_var("SSH_AUTH_SOCK", "/muxgate-must-not-leak") };

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let tmux = TestTmux::start();
    tmux.ok(&["new-window", "-t", "main"]);
    tmux.ok(&["select-window", "-t", "main:1"]);
    let (master, slave) = open_pty(100, 30);
    let mut human = Command::new("tmux")
        .args(["-L", &tmux.socket, "attach-session", "-t", "main"])
        .env("TERM", "xterm-256color")
        .env_remove("TMUX")
        .env_remove("SSH_AUTH_SOCK")
        .stdin(Stdio::from(slave.try_clone().unwrap()))
        .stdout(Stdio::from(slave.try_clone().unwrap()))
        .stderr(Stdio::from(slave))
        .spawn()
        .unwrap();
    // Drain the terminal so the client never blocks on output.
    let mut master_reader = std::fs::File::from(master);
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while matches!(master_reader.read(&mut buf), Ok(n) if n > 0) {}
    });
    assert!(runtime.block_on(wait_until(Duration::from_secs(5), || {
        tmux.ok(&["list-clients", "-F", "#{client_termname}"])
            .contains("xterm")
    })));
    let before = human_view(&tmux);
    assert!(before.0.contains("100x30"), "{before:?}");
    assert!(!before.2.contains("muxgate-must-not-leak"));

    runtime.block_on(async {
        let shutdown = CancellationToken::new();
        let server = TmuxServer::start(
            "test",
            TmuxSocket::Name(tmux.socket.clone()),
            Arc::new(EngineSettings::default()),
            shutdown.clone(),
        );
        let caller = Caller::new("agent");
        let first_window: WindowId = tmux
            .ok(&["display-message", "-p", "-t", "main:0", "#{window_id}"])
            .trim()
            .parse()
            .unwrap();
        let pane: PaneId = tmux
            .ok(&["display-message", "-p", "-t", "main:0", "#{pane_id}"])
            .trim()
            .parse()
            .unwrap();
        // Work in the window the human is NOT looking at: read, type, watch output.
        let mut sub = server
            .subscribe(&caller, pane, common::subscribe_deadline())
            .await
            .unwrap();
        let commands = vec![
            TmuxCommand::for_test("capture-pane")
                .flag("-p")
                .target(pane)
                .build()
                .unwrap(),
            TmuxCommand::for_test("display-message")
                .flag("-p")
                .target(first_window)
                .trusted_format("#{window_width}")
                .build()
                .unwrap(),
            TmuxCommand::for_test("send-keys")
                .target(pane)
                .flag("-l")
                .end_of_options()
                .arg("echo hi\r")
                .build()
                .unwrap(),
            TmuxCommand::for_test("list-panes")
                .flag("-a")
                .build()
                .unwrap(),
        ];
        for _ in 0..20 {
            server
                .run_batch(&caller, commands.clone(), BatchMode::Independent, None)
                .await
                .unwrap();
        }
        tokio::time::timeout(Duration::from_secs(5), sub.next())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            human_view(&tmux),
            before,
            "the human's view changed while the engine worked"
        );
        shutdown.cancel();
    });
    assert_eq!(human_view(&tmux), before);
    let _ = human.kill();
    let _ = human.wait();
}
