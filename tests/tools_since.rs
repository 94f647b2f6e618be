//! capture_since over MCP against a real tmux server: only new rows, trimmed and cleared
//! history, respawned panes and bad cursors.

mod common;

use common::tmux::TestTmux;
use common::tools::{call_err, call_ok, client, type_line, wait_for_screen};
use common::{config_with_server, spawn_gateway};
use serde_json::{Value, json};

/// A pane running `sh` (prompt `$ `, whoever runs the tests) in a new session, once its prompt
/// shows.
async fn sh_pane(tmux: &TestTmux, name: &str) -> String {
    let pane = tmux
        .ok(&[
            "new-session",
            "-d",
            "-s",
            name,
            "-x",
            "80",
            "-y",
            "20",
            "-P",
            "-F",
            "#{pane_id}",
            "env PS1='$ ' sh",
        ])
        .trim()
        .to_owned();
    wait_for_screen(tmux, &pane, "$").await;
    pane
}

fn lines(result: &Value) -> Vec<&str> {
    let text = result["lines"].as_str().unwrap();
    if text.is_empty() {
        Vec::new()
    } else {
        text.split('\n').collect()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_rows_printed_after_the_cursor_come_back() {
    let tmux = TestTmux::start();
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let client = client(&gateway).await;
    let pane = sh_pane(&tmux, "s").await;
    type_line(&tmux, &pane, "echo before-$((1+1))");
    wait_for_screen(&tmux, &pane, "before-2").await;

    let start = call_ok(&client, "capture_since", json!({"target": pane})).await;
    assert!(lines(&start).contains(&"before-2"), "{start}");
    assert_eq!(start["lines_missed"], false);
    assert_eq!(start["partial_line"], "$");

    type_line(&tmux, &pane, "echo one; echo two");
    wait_for_screen(&tmux, &pane, "two\n$").await;
    let next = call_ok(
        &client,
        "capture_since",
        json!({"target": pane, "cursor": start["cursor"]}),
    )
    .await;
    assert_eq!(
        lines(&next),
        ["$ echo one; echo two", "one", "two"],
        "{next}"
    );
    assert_eq!(next["line_count"], 3);
    assert_eq!(next["lines_missed"], false);

    // Nothing new: nothing returned. The cursor alone names the pane.
    let quiet = call_ok(&client, "capture_since", json!({"cursor": next["cursor"]})).await;
    assert_eq!(quiet["line_count"], 0, "{quiet}");

    // Many rows scroll the screen into the history: all of them, in order.
    type_line(&tmux, &pane, "seq 1 60");
    wait_for_screen(&tmux, &pane, "60\n$").await;
    let many = call_ok(
        &client,
        "capture_since",
        json!({"cursor": quiet["cursor"], "max_lines": 1000}),
    )
    .await;
    let got = lines(&many);
    assert_eq!(got[0], "$ seq 1 60");
    let numbers: Vec<String> = (1..=60).map(|n| n.to_string()).collect();
    assert_eq!(got[1..], numbers, "{many}");

    // max_lines keeps the newest rows behind a marker.
    type_line(&tmux, &pane, "seq 100 130");
    wait_for_screen(&tmux, &pane, "130\n$").await;
    let tail = call_ok(
        &client,
        "capture_since",
        json!({"cursor": many["cursor"], "max_lines": 5}),
    )
    .await;
    assert_eq!(tail["truncated"], true);
    assert_eq!(tail["truncated_lines"], 27);
    assert_eq!(
        lines(&tail),
        [
            "[... 27 lines truncated ...]",
            "126",
            "127",
            "128",
            "129",
            "130"
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trimmed_or_cleared_history_is_reported_or_found_again() {
    let tmux = TestTmux::start();
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let client = client(&gateway).await;
    // A short history, so tmux trims it soon.
    tmux.ok(&["set-option", "-g", "history-limit", "50"]);
    let pane = sh_pane(&tmux, "t").await;

    let start = call_ok(&client, "capture_since", json!({"target": pane})).await;
    type_line(&tmux, &pane, "seq 1 400");
    wait_for_screen(&tmux, &pane, "400\n$").await;
    let trimmed = call_ok(
        &client,
        "capture_since",
        json!({"cursor": start["cursor"], "max_lines": 1000}),
    )
    .await;
    assert_eq!(trimmed["lines_missed"], true, "{trimmed}");
    assert_eq!(*lines(&trimmed).last().unwrap(), "400");

    // After clear-history the rows are renumbered; the anchor on screen finds them again.
    type_line(&tmux, &pane, "echo marker-a");
    wait_for_screen(&tmux, &pane, "marker-a\n$").await;
    let before_clear = call_ok(
        &client,
        "capture_since",
        json!({"cursor": trimmed["cursor"]}),
    )
    .await;
    tmux.ok(&["clear-history", "-t", &pane]);
    type_line(&tmux, &pane, "echo marker-b");
    wait_for_screen(&tmux, &pane, "marker-b\n$").await;
    let after_clear = call_ok(
        &client,
        "capture_since",
        json!({"cursor": before_clear["cursor"]}),
    )
    .await;
    assert_eq!(after_clear["lines_missed"], false, "{after_clear}");
    assert_eq!(lines(&after_clear), ["$ echo marker-b", "marker-b"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_cursors_and_respawned_panes_are_refused() {
    let tmux = TestTmux::start();
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let client = client(&gateway).await;
    let pane = sh_pane(&tmux, "r").await;
    let other = sh_pane(&tmux, "o").await;
    let start = call_ok(&client, "capture_since", json!({"target": pane})).await;

    for cursor in ["", "nonsense", "mgc1.e30", "mgc1.!!"] {
        let error = call_err(
            &client,
            "capture_since",
            json!({"target": pane, "cursor": cursor}),
        )
        .await;
        assert_eq!(error["kind"], "invalid_arguments", "{cursor}: {error}");
        assert!(error["message"].as_str().unwrap().contains("cursor"));
    }
    let elsewhere = call_err(
        &client,
        "capture_since",
        json!({"target": other, "cursor": start["cursor"]}),
    )
    .await;
    assert_eq!(elsewhere["kind"], "invalid_arguments", "{elsewhere}");
    let neither = call_err(&client, "capture_since", json!({})).await;
    assert_eq!(neither["kind"], "invalid_arguments");
    let unknown = call_err(
        &client,
        "capture_since",
        json!({"target": pane, "since": 3}),
    )
    .await;
    assert!(
        unknown["message"].as_str().unwrap().contains("since"),
        "{unknown}"
    );
    let missing = call_err(&client, "capture_since", json!({"target": "%999"})).await;
    assert_eq!(missing["kind"], "not_found", "{missing}");

    tmux.ok(&["respawn-pane", "-k", "-t", &pane, "env PS1='$ ' sh"]);
    wait_for_screen(&tmux, &pane, "$").await;
    let respawned = call_err(&client, "capture_since", json!({"cursor": start["cursor"]})).await;
    assert_eq!(respawned["kind"], "conflict", "{respawned}");
    assert!(respawned["message"].as_str().unwrap().contains("respawned"));
}
