//! An agent's state from evidence (`get_pane_state`'s `agent_status`), against stand-ins that
//! draw each shipped kind's real screens with its timing (`tests/programs/agent_screens.py`):
//! a start-up banner, the idle input box, a spinner redrawn every 100 ms, a permission dialog
//! opening mid-task below the spinner's line, and the program ending. And an agent's own hook,
//! which counts until the screen changes after it, and never over a dialog.

mod common;

use std::path::Path;
use std::time::Duration;

use common::tmux::TestTmux;
use common::tools::{Client, call_ok, client, type_line};
use common::{config_with_server, spawn_gateway};
use serde_json::{Value, json};

const STAND_IN: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/programs/agent_screens.py"
);

/// The CLIs the stand-in plays, by program name, and the kind muxgate should name.
const KINDS: [(&str, &str); 5] = [
    ("claude", "claude-code"),
    ("codex", "codex"),
    ("gemini", "gemini-cli"),
    ("aider", "aider"),
    ("opencode", "opencode"),
];

/// The stand-in, installed in `dir` under `program`'s name.
fn install(dir: &Path, program: &str) -> String {
    let path = dir.join(program);
    std::fs::copy(STAND_IN, &path).expect("copy the stand-in");
    path.display().to_string()
}

/// `get_pane_state`'s `agent_status` of `pane`, once its state is `state` (20 s at most).
async fn until_state(client: &Client, pane: &str, state: &str) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let answer = call_ok(client, "get_pane_state", json!({"target": pane})).await;
        let status = answer["agent_status"].clone();
        if status["state"] == state {
            return status;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{pane} never reached {state}: {answer}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_kinds_screens_read_as_its_states() {
    let tmux = TestTmux::start();
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let client = client(&gateway).await;
    let bin = tempfile::tempdir().expect("a directory for the stand-ins");
    for (program, kind) in KINDS {
        let pane = tmux.session_running(program, "sh");
        // A plain shell is no agent.
        let shell = call_ok(&client, "get_pane_state", json!({"target": pane})).await;
        assert!(shell.get("agent_status").is_none(), "{shell}");

        type_line(
            &tmux,
            &pane,
            &format!("{} --startup 3 --busy 2.5", install(bin.path(), program)),
        );
        let starting = until_state(&client, &pane, "starting").await;
        assert_eq!(starting["kind"], kind, "{starting}");

        let idle = until_state(&client, &pane, "idle").await;
        assert!(
            idle["explain"][0]
                .as_str()
                .unwrap()
                .starts_with("screen: its prompt"),
            "{idle}"
        );

        type_line(&tmux, &pane, "fix the build");
        let working = until_state(&client, &pane, "working").await;
        assert!(
            working["explain"][0]
                .as_str()
                .unwrap()
                .starts_with("screen: busy"),
            "{working}"
        );

        // The dialog opens mid-task, below the spinner's last line.
        let blocked = until_state(&client, &pane, "blocked").await;
        let expected_why = if program == "aider" {
            "confirmation"
        } else {
            "permission"
        };
        assert_eq!(blocked["blocked_on"], expected_why, "{blocked}");
        let explain = blocked["explain"].to_string();
        assert!(
            explain.contains("dialog") && explain.contains("outranked"),
            "{blocked}"
        );

        type_line(&tmux, &pane, "1");
        until_state(&client, &pane, "working").await;
        until_state(&client, &pane, "idle").await;

        type_line(&tmux, &pane, "/exit");
        let exited = until_state(&client, &pane, "exited").await;
        assert_eq!(exited["kind"], kind, "{exited}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hook_counts_until_the_screen_changes_after_it() {
    let tmux = TestTmux::start();
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let client = client(&gateway).await;
    let bin = tempfile::tempdir().expect("a directory for the stand-in");
    let pane = tmux.session_running("agent", "sh");
    type_line(
        &tmux,
        &pane,
        &format!("{} --startup 0.2 --busy 1", install(bin.path(), "claude")),
    );
    until_state(&client, &pane, "idle").await;
    // Its hook says it works on something its idle screen does not show: the newest word.
    call_ok(
        &client,
        "report_agent_state",
        json!({"target": pane, "state": "working", "agent": "claude-code"}),
    )
    .await;
    let reported = until_state(&client, &pane, "working").await;
    assert!(
        reported["explain"][0]
            .as_str()
            .unwrap()
            .starts_with("hook:"),
        "{reported}"
    );
    // The screen moves on (it got a task): the older report is set aside.
    type_line(&tmux, &pane, "next task");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let status = until_state(&client, &pane, "working").await;
        if status["explain"][0]
            .as_str()
            .unwrap()
            .starts_with("screen: busy")
        {
            assert!(
                status["explain"].to_string().contains("set aside"),
                "{status}"
            );
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{status}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // And its dialog needs a human, whatever the hook said last.
    let blocked = until_state(&client, &pane, "blocked").await;
    assert_eq!(blocked["blocked_on"], "permission", "{blocked}");
}
