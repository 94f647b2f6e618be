//! wait_for_channel and signal_channel over MCP against a real tmux server: signals before and
//! during a wait, timeouts, a server killed under a wait, and no waiting client left behind.

mod common;

use std::time::Duration;

use common::tmux::TestTmux;
use common::tools::{call, call_err, call_ok, client};
use common::{config_with_server, spawn_gateway, wait_until};
use serde_json::json;

/// `tmux wait-for` clients on this test's socket still running.
fn waiting_clients(tmux: &TestTmux) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|entry| std::fs::read(entry.ok()?.path().join("cmdline")).ok())
        .filter(|cmdline| {
            let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
            args.contains(&&b"wait-for"[..]) && args.contains(&tmux.socket.as_bytes())
        })
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn channels_wake_waiters_and_time_out_cleanly() {
    let tmux = TestTmux::start();
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let client = client(&gateway).await;
    let info = call_ok(&client, "get_server_info", json!({})).await;
    let prefix = info["channel_prefix"].as_str().unwrap().to_owned();
    assert!(
        prefix.starts_with("muxgate_"),
        "a shared server's channels are the client's: {info}"
    );

    // A signal sent before the wait is remembered.
    let sent = call_ok(&client, "signal_channel", json!({"channel": "early.done"})).await;
    assert_eq!(sent["signalled"], true);
    let early = call_ok(
        &client,
        "wait_for_channel",
        json!({"channel": "early.done", "timeout": 5}),
    )
    .await;
    assert_eq!(early["signalled"], true, "{early}");

    // A signal from a script in the pane, during the wait.
    let (woken, ()) = tokio::join!(
        call(
            &client,
            "wait_for_channel",
            json!({"channel": "job-1", "timeout": 20}),
        ),
        async {
            assert!(wait_until(Duration::from_secs(10), || waiting_clients(&tmux) == 1).await);
            tmux.ok(&["wait-for", "-S", &format!("{prefix}job-1")]);
        }
    );
    let woken = common::tools::ok(woken);
    assert_eq!(woken["signalled"], true, "{woken}");
    assert_eq!(woken["tmux_channel"], format!("{prefix}job-1"));
    assert_eq!(woken["timed_out"], false);

    // Meanwhile other calls are not held up, and a timeout leaves no client behind.
    let (timed_out, listed) = tokio::join!(
        call_ok(
            &client,
            "wait_for_channel",
            json!({"channel": "never", "timeout": 1})
        ),
        async {
            assert!(
                wait_until(Duration::from_secs(10), || waiting_clients(&tmux) == 1).await,
                "the wait never started"
            );
            call_ok(&client, "list_sessions", json!({})).await
        }
    );
    assert_eq!(timed_out["timed_out"], true, "{timed_out}");
    assert_eq!(timed_out["effective_timeout"], 1.0);
    assert!(listed["sessions"].as_array().is_some());
    assert!(wait_until(Duration::from_secs(5), || waiting_clients(&tmux) == 0).await);

    for bad in ["", "a b", "x;y", "#{pane_id}"] {
        let error = call_err(&client, "wait_for_channel", json!({"channel": bad})).await;
        assert_eq!(error["kind"], "invalid_arguments", "{bad:?}: {error}");
        let error = call_err(&client, "signal_channel", json!({"channel": bad})).await;
        assert_eq!(error["kind"], "invalid_arguments", "{bad:?}: {error}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_under_a_channel_wait_is_not_a_signal() {
    let tmux = TestTmux::start();
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let client = client(&gateway).await;
    let (result, ()) = tokio::join!(
        call(
            &client,
            "wait_for_channel",
            json!({"channel": "doomed", "timeout": 20}),
        ),
        async {
            assert!(wait_until(Duration::from_secs(10), || waiting_clients(&tmux) == 1).await);
            tmux.kill_server();
        }
    );
    let error = common::tools::err(result);
    assert_eq!(error["kind"], "unavailable", "{error}");
    assert_eq!(waiting_clients(&tmux), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_channel_wait_leaves_no_client() {
    let tmux = TestTmux::start();
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let client = client(&gateway).await;
    let long_wait = call(
        &client,
        "wait_for_channel",
        json!({"channel": "abandoned", "timeout": 60}),
    );
    // Dropping the call future makes rmcp's client send notifications/cancelled.
    tokio::select! {
        _ = long_wait => panic!("the wait ended by itself"),
        started = wait_until(Duration::from_secs(10), || waiting_clients(&tmux) == 1) => {
            assert!(started, "the wait never started its client");
        }
    }
    assert!(
        wait_until(Duration::from_secs(5), || waiting_clients(&tmux) == 0).await,
        "the cancelled wait left its tmux client running"
    );
}

/// On a shared server one client can neither wake another's wait nor consume its pending
/// signal: each client's channels are its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_cannot_signal_or_consume_each_others_channels() {
    let tmux = TestTmux::start();
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let alice = common::tools::client_with(&gateway, &gateway.mint("alice", &["mux:write"])).await;
    let bob = common::tools::client_with(&gateway, &gateway.mint("bob", &["mux:write"])).await;

    let (bob_waited, _) = tokio::join!(
        call_ok(
            &bob,
            "wait_for_channel",
            json!({"channel": "chan", "timeout": 2})
        ),
        async {
            assert!(wait_until(Duration::from_secs(10), || waiting_clients(&tmux) == 1).await);
            call_ok(&alice, "signal_channel", json!({"channel": "chan"})).await
        }
    );
    assert_eq!(
        bob_waited["timed_out"], true,
        "alice woke bob: {bob_waited}"
    );
    // Alice's signal is still pending for alice, not consumed by bob's next wait.
    let bob_again = call_ok(
        &bob,
        "wait_for_channel",
        json!({"channel": "chan", "timeout": 1}),
    )
    .await;
    assert_eq!(bob_again["signalled"], false, "{bob_again}");
    let alice_waited = call_ok(
        &alice,
        "wait_for_channel",
        json!({"channel": "chan", "timeout": 5}),
    )
    .await;
    assert_eq!(alice_waited["signalled"], true, "{alice_waited}");
}
