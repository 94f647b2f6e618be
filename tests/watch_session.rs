//! One output connection per tmux server: the windows of watched panes are linked into the
//! gateway's watch session (`_muxgate`). These tests act as a human would (the tmux command line,
//! a client attached through a real terminal) and check that nothing ends differently because
//! muxgate watches: killed sessions and windows take their programs with them, the server exits
//! with its last real session, bare ids resolve to the real session, and nothing is left behind
//! when the gateway stops or dies.

mod common;

use std::time::Duration;

use common::human::Human;
use common::tmux::TestTmux;
use common::tools::{call, call_err, call_ok, client};
use common::{config_with_server, spawn_gateway, wait_until};
use muxgate_tmux::{Caller, EngineSettings, OutputSubscription, PaneId, StreamEnd, TmuxServer};
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn server_for(tmux: &TestTmux) -> (TmuxServer, CancellationToken) {
    let settings = EngineSettings {
        output_idle_close: Duration::from_millis(300),
        ..EngineSettings::default()
    };
    common::tmux::engine_for(tmux, settings)
}

fn caller() -> Caller {
    Caller::new("agent")
}

async fn watch(server: &TmuxServer, pane: PaneId) -> OutputSubscription {
    server
        .subscribe(&caller(), pane, common::subscribe_deadline())
        .await
        .unwrap()
}

/// The pid of the program in `pane`.
fn program_pid(tmux: &TestTmux, pane: &str) -> i32 {
    tmux.ok(&["display-message", "-p", "-t", pane, "#{pane_pid}"])
        .trim()
        .parse()
        .unwrap()
}

fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    unsafe { libc::kill(pid, 0) == 0 }
}

fn sessions(tmux: &TestTmux) -> String {
    tmux.ok(&["list-sessions", "-F", "#{session_name}"])
}

fn server_running(tmux: &TestTmux) -> bool {
    tmux.tmux(&["list-sessions"]).status.success()
}

/// How the stream ends (within 5 s).
async fn end_of(mut sub: OutputSubscription) -> StreamEnd {
    tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            if let Err(end) = sub.next().await {
                return end;
            }
        }
    })
    .await
    .expect("the stream never ended")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_a_watched_session_ends_its_programs_and_its_streams() {
    let tmux = TestTmux::start();
    let _human = Human::attach(&tmux, "main", 100, 30);
    let pane = tmux.session_running("agent", "sleep 1000");
    let pid = program_pid(&tmux, &pane);
    let (server, _shutdown) = server_for(&tmux);
    let sub = watch(&server, pane.parse().unwrap()).await;
    // The one visible trace: the watch session, holding the watched window.
    assert!(sessions(&tmux).contains("_muxgate"), "{}", sessions(&tmux));
    // A bare pane id still resolves to the pane's own session.
    assert_eq!(
        tmux.ok(&["display-message", "-p", "-t", &pane, "#{session_name}"])
            .trim(),
        "agent"
    );

    tmux.ok(&["kill-session", "-t", "agent"]);
    assert!(
        wait_until(Duration::from_secs(3), || !alive(pid)).await,
        "the killed session's program lives on"
    );
    assert_eq!(end_of(sub).await, StreamEnd::SessionClosed);
    assert!(
        wait_until(Duration::from_secs(3), || sessions(&tmux) == "main\n").await,
        "{}",
        sessions(&tmux)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_exits_with_its_last_real_session() {
    let tmux = TestTmux::start();
    let _human = Human::attach(&tmux, "main", 100, 30);
    let (server, _shutdown) = server_for(&tmux);
    let _sub = watch(&server, tmux.pane_id("main")).await;
    tmux.ok(&["kill-session", "-t", "main"]);
    assert!(
        wait_until(Duration::from_secs(3), || !server_running(&tmux)).await,
        "the server outlived its last session: {}",
        sessions(&tmux)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_exits_when_the_last_shell_exits() {
    let tmux = TestTmux::start();
    let _human = Human::attach(&tmux, "main", 100, 30);
    let (server, _shutdown) = server_for(&tmux);
    let pane = tmux.pane_id("main");
    let sub = watch(&server, pane).await;
    tmux.ok(&["send-keys", "-t", &pane.to_string(), "exit", "Enter"]);
    assert!(matches!(
        end_of(sub).await,
        StreamEnd::PaneExited { .. } | StreamEnd::PaneClosed | StreamEnd::ServerGone
    ));
    assert!(
        wait_until(Duration::from_secs(3), || !server_running(&tmux)).await,
        "the server outlived its last shell"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_window_is_gone_everywhere() {
    let tmux = TestTmux::start();
    let _human = Human::attach(&tmux, "main", 100, 30);
    let window = tmux.ok(&[
        "new-window",
        "-d",
        "-t",
        "main",
        "-P",
        "-F",
        "#{window_id}",
        "sleep 1000",
    ]);
    let window = window.trim();
    let pane = tmux.ok(&["display-message", "-p", "-t", window, "#{pane_id}"]);
    let pid = program_pid(&tmux, pane.trim());
    let (server, _shutdown) = server_for(&tmux);
    let sub = watch(&server, pane.trim().parse().unwrap()).await;
    assert_eq!(
        tmux.ok(&["display-message", "-p", "-t", window, "#{session_name}"])
            .trim(),
        "main"
    );

    tmux.ok(&["kill-window", "-t", window]);
    assert!(wait_until(Duration::from_secs(3), || !alive(pid)).await);
    assert!(matches!(
        end_of(sub).await,
        StreamEnd::PaneClosed | StreamEnd::PaneExited { .. }
    ));
    let windows = tmux.ok(&["list-windows", "-a", "-F", "#{window_id}"]);
    assert!(!windows.contains(window), "{windows}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_leaves_nothing_behind_when_it_stops() {
    let tmux = TestTmux::start();
    let _human = Human::attach(&tmux, "main", 100, 30);
    tmux.session_running("agent", "sleep 1000");
    let layout = || {
        (
            sessions(&tmux),
            tmux.ok(&["list-windows", "-a", "-F", "#{session_name} #{window_id}"]),
        )
    };
    let before = layout();
    let (server, shutdown) = server_for(&tmux);
    let subs = vec![
        watch(&server, tmux.pane_id("main")).await,
        watch(&server, tmux.pane_id("agent")).await,
    ];
    assert_ne!(layout(), before);
    shutdown.cancel();
    assert!(
        wait_until(Duration::from_secs(5), || layout() == before).await,
        "{:?} != {before:?}",
        layout()
    );
    drop(subs);
}

/// A gateway killed outright leaves its watch session behind; the next one to watch on the
/// server removes it first, and killed sessions take their programs with them again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_session_left_by_a_dead_gateway_is_removed_by_the_next() {
    let tmux = TestTmux::start();
    let _human = Human::attach(&tmux, "main", 100, 30);
    let pane = tmux.session_running("agent", "sleep 1000");
    let pid = program_pid(&tmux, &pane);
    let (server, _shutdown) = server_for(&tmux);
    let _sub = watch(&server, pane.parse().unwrap()).await;
    // The gateway dies: its watch client is killed without a word.
    let client: i32 = tmux
        .ok(&["list-clients", "-t", "_muxgate", "-F", "#{client_pid}"])
        .trim()
        .parse()
        .unwrap();
    // SAFETY: kill(2) on the test's own tmux client.
    assert_eq!(unsafe { libc::kill(client, libc::SIGKILL) }, 0);
    assert!(
        wait_until(Duration::from_secs(3), || tmux
            .ok(&["list-clients", "-F", "#{session_name}"])
            .lines()
            .all(|s| s != "_muxgate"))
        .await
    );
    assert!(sessions(&tmux).contains("_muxgate"));

    // The next gateway's command client attaches to the most recent session, the stale one,
    // and must leave it before killing it: tmux crashed killing a session under it.
    let (next, _next_shutdown) = server_for(&tmux);
    let _watched = watch(&next, tmux.pane_id("main")).await;
    assert!(server_running(&tmux), "the tmux server crashed");
    let watching = tmux.ok(&["list-clients", "-t", "_muxgate", "-F", "#{client_pid}"]);
    assert_eq!(watching.lines().count(), 1, "{watching}");
    tmux.ok(&["kill-session", "-t", "agent"]);
    assert!(wait_until(Duration::from_secs(3), || !alive(pid)).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_windows_are_unlinked_and_the_watch_session_ends_with_the_last() {
    let tmux = TestTmux::start();
    let _human = Human::attach(&tmux, "main", 100, 30);
    tmux.session_running("agent", "sleep 1000");
    let (server, _shutdown) = server_for(&tmux);
    let main = watch(&server, tmux.pane_id("main")).await;
    let agent = watch(&server, tmux.pane_id("agent")).await;
    // The watch session's windows but its own first one (a placeholder it keeps current).
    let linked = || {
        tmux.tmux(&["list-windows", "-t", "=_muxgate", "-F", "#{window_id}"])
            .stdout
            .iter()
            .filter(|b| **b == b'\n')
            .count()
            .saturating_sub(1)
    };
    assert_eq!(linked(), 2);
    drop(agent);
    assert!(wait_until(Duration::from_secs(3), || linked() == 1).await);
    drop(main);
    assert!(
        wait_until(Duration::from_secs(3), || !sessions(&tmux)
            .contains("_muxgate"))
        .await,
        "{}",
        sessions(&tmux)
    );
    // And it comes back for the next subscriber.
    let _again = watch(&server, tmux.pane_id("agent")).await;
    assert_eq!(linked(), 1);
}

/// A server that dies while the output connection waits for an answer tmux never began (its
/// line written while the server was stopped) is let go at once, not when that answer times
/// out: meanwhile the dead server's watch session would still count as running, and a
/// subscriber on the server started next in its place would be linked into a session of that
/// id on the wrong server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_dies_under_a_question_is_let_go_at_once() {
    let tmux = TestTmux::start();
    tmux.session_running("kept", "cat");
    tmux.session_running("idle", "cat");
    let (server, _shutdown) = server_for(&tmux);
    let _kept = watch(&server, tmux.pane_id("kept")).await;
    let idle = watch(&server, tmux.pane_id("idle")).await;
    let open = || {
        server
            .output()
            .stats()
            .connections_open
            .load(std::sync::atomic::Ordering::Relaxed)
    };
    assert_eq!(open(), 1);
    let pid: i32 = tmux
        .ok(&["display-message", "-p", "#{pid}"])
        .trim()
        .parse()
        .unwrap();
    // SAFETY: signals to the test's own tmux server.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGSTOP) }, 0);
    // The idle window's unlink is written after 300 ms, and the stopped server never begins it.
    drop(idle);
    tokio::time::sleep(Duration::from_secs(1)).await;
    // SAFETY: as above.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    assert!(
        wait_until(Duration::from_secs(3), || open() == 0).await,
        "the dead server's output connection is still open"
    );
    // The next server in its place gets a watch session of its own.
    tmux.session_running("fresh", "cat");
    let mut fresh = watch(&server, tmux.pane_id("fresh")).await;
    tmux.ok(&["send-keys", "-t", "fresh", "-l", "after-restart"]);
    let seen = tokio::time::timeout(Duration::from_secs(5), async {
        let mut text = Vec::new();
        while !String::from_utf8_lossy(&text).contains("after-restart") {
            match fresh.next().await {
                Ok(chunk) => text.extend_from_slice(&chunk.data),
                Err(end) => return Err(end),
            }
        }
        Ok(())
    })
    .await;
    assert!(matches!(seen, Ok(Ok(()))), "{seen:?}");
}

/// An owner session takes one switch of the worker's client while the watch session lives
/// (`watch_session::links`): its second window, and a window linked again after going idle, cost
/// a link alone, and bare ids of both still resolve to the owner.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owner_is_switched_to_once_while_the_watch_session_lives() {
    let tmux = TestTmux::start();
    tmux.session_running("agent", "sleep 1000");
    let first_pane = tmux.pane_id("agent");
    let second_pane = tmux.ok(&[
        "new-window",
        "-d",
        "-P",
        "-F",
        "#{pane_id}",
        "-t",
        "agent:",
        "sleep 1000",
    ]);
    let second_pane: PaneId = second_pane.trim().parse().unwrap();
    let (server, _shutdown) = server_for(&tmux);
    // Keeps the watch session running throughout.
    let _main = watch(&server, tmux.pane_id("main")).await;
    // The worker counts a line before writing it, so before its reply wakes the caller.
    let sent = || async {
        server
            .worker()
            .stats()
            .commands_sent
            .load(std::sync::atomic::Ordering::Relaxed)
    };

    let before = sent().await;
    let first = watch(&server, first_pane).await;
    let first_cost = sent().await - before;
    let before = sent().await;
    let _second = watch(&server, second_pane).await;
    let second_cost = sent().await - before;
    assert_eq!(
        first_cost,
        second_cost + 1,
        "the first window's link carries the one switch ({first_cost} commands, then {second_cost})"
    );
    let resolves_to = |pane: PaneId| {
        tmux.ok(&[
            "display-message",
            "-p",
            "-t",
            &pane.to_string(),
            "#{session_name}",
        ])
        .trim()
        .to_owned()
    };
    assert_eq!(resolves_to(first_pane), "agent");
    assert_eq!(resolves_to(second_pane), "agent");

    // Unlinked when idle, then linked again: no switch.
    drop(first);
    let linked = || tmux.ok(&["list-windows", "-t", "=_muxgate", "-F", "#{window_id}"]);
    let window = tmux.ok(&[
        "display-message",
        "-p",
        "-t",
        &first_pane.to_string(),
        "#{window_id}",
    ]);
    assert!(wait_until(Duration::from_secs(3), || !linked().contains(window.trim())).await);
    let before = sent().await;
    let again = watch(&server, first_pane).await;
    let again_cost = sent().await - before;
    assert_eq!(again_cost, second_cost);
    assert!(linked().contains(window.trim()));
    assert_eq!(resolves_to(first_pane), "agent");

    // The worker connects again (its client detached; it connects for its next command): a new
    // connection attaches where tmux chooses, so the owner is switched to once more.
    let connects = || {
        server
            .worker()
            .stats()
            .connects
            .load(std::sync::atomic::Ordering::Relaxed)
    };
    let connected = connects();
    let clients = tmux.ok(&["list-clients", "-F", "#{client_name} #{session_name}"]);
    let worker = clients
        .lines()
        .find(|line| !line.ends_with(" _muxgate"))
        .and_then(|line| line.split(' ').next())
        .expect("the worker's client")
        .to_owned();
    tmux.ok(&["detach-client", "-t", &worker]);
    drop(again);
    assert!(wait_until(Duration::from_secs(3), || !linked().contains(window.trim())).await);
    let before = sent().await;
    let _after_reconnect = watch(&server, first_pane).await;
    let cost_after_reconnect = sent().await - before;
    assert!(connects() > connected, "the worker did not connect again");
    assert_eq!(cost_after_reconnect, first_cost);
    assert_eq!(resolves_to(first_pane), "agent");
}

/// While a wait watches a pane (so the watch session exists), no tool shows the watch session:
/// not in a listing, an answer, a resource or a count, and a target naming it is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_tool_shows_the_watch_session() {
    let tmux = TestTmux::start();
    let pane = tmux.session_running("agent", "sleep 1000");
    let window = tmux.ok(&["display-message", "-p", "-t", &pane, "#{window_id}"]);
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let client = client(&gateway).await;
    let engine = gateway.engine.server("work").unwrap().clone();

    let wait = call(
        &client,
        "wait_for_text",
        json!({"target": pane, "patterns": ["never"], "timeout": 8}),
    );
    let look = async {
        assert!(
            wait_until(Duration::from_secs(10), || engine.output().subscriptions()
                == 1)
            .await
        );
        assert!(sessions(&tmux).contains("_muxgate"));
        let mut answers = Vec::new();
        for (tool, args) in [
            ("list_sessions", json!({})),
            ("list_windows", json!({})),
            ("list_panes", json!({})),
            ("get_server_info", json!({})),
            ("get_pane_info", json!({"target": pane})),
            ("get_window_info", json!({"target": window.trim()})),
            ("get_session_info", json!({"target": "agent"})),
            ("search_panes", json!({"pattern": "x"})),
            (
                "display_message",
                json!({"target": pane, "format_string": "#{session_name}"}),
            ),
        ] {
            answers.push((tool, call_ok(&client, tool, args).await));
        }
        let resources = client.list_all_resources().await.unwrap();
        answers.push(("resources/list", json!(format!("{resources:?}"))));
        let sessions = &answers[0].1["sessions"];
        assert_eq!(sessions.as_array().map(Vec::len), Some(2), "{sessions}");
        let watch_id = tmux.ok(&["display-message", "-p", "-t", "=_muxgate", "#{session_id}"]);
        let refused = [
            call_err(&client, "list_windows", json!({"target": watch_id.trim()})).await,
            call_err(&client, "list_panes", json!({"target": "_muxgate"})).await,
            call_err(&client, "create_session", json!({"name": "_muxgate"})).await,
        ];
        (answers, refused)
    };
    let (waited, (answers, refused)) = tokio::join!(wait, look);
    assert_eq!(common::tools::ok(waited)["outcome"], "timeout");
    for (tool, answer) in answers {
        assert!(!answer.to_string().contains("_muxgate"), "{tool}: {answer}");
    }
    for error in refused {
        assert!(
            matches!(
                error["kind"].as_str(),
                Some("not_found" | "invalid_arguments")
            ),
            "{error}"
        );
    }
}

/// A watched pane moved out of its window (`break-pane`) has its new window linked: what it
/// prints afterwards still reaches its stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watched_pane_moved_to_a_new_window_is_still_watched() {
    let tmux = TestTmux::start();
    let pane = tmux.split("main");
    let (server, _shutdown) = server_for(&tmux);
    let mut sub = watch(&server, pane).await;
    tmux.ok(&["break-pane", "-d", "-s", &pane.to_string()]);
    // Once the monitor has seen the layout change, the new window is linked.
    let window = tmux.ok(&[
        "display-message",
        "-p",
        "-t",
        &pane.to_string(),
        "#{window_id}",
    ]);
    let linked = || tmux.ok(&["list-windows", "-t", "=_muxgate", "-F", "#{window_id}"]);
    assert!(
        wait_until(Duration::from_secs(10), || linked()
            .lines()
            .any(|w| w == window.trim()))
        .await,
        "the new window {} was never linked: {}",
        window.trim(),
        linked()
    );
    tmux.ok(&[
        "send-keys",
        "-t",
        &pane.to_string(),
        "echo moved-$((6*7))",
        "Enter",
    ]);
    let seen = tokio::time::timeout(Duration::from_secs(5), async {
        let mut text = Vec::new();
        while !String::from_utf8_lossy(&text).contains("moved-42") {
            text.extend(sub.next().await.expect("the stream ended").data);
        }
    })
    .await;
    assert!(seen.is_ok(), "the moved pane's output never arrived");
}
