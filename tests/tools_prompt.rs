//! `send_prompt` over MCP against real programs in a real tmux server: the repo's agent-CLI
//! stand-in (`tests/programs/agent_cli.py`: slow start-up that discards typeahead, a busy
//! spinner, an Enter that follows a paste too closely taken as a newline, a yes/no question),
//! bash, the python3 REPL and `cat`. Each program logs or shows what it was given, so every
//! prompt is checked to have been submitted exactly once.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::tmux::TestTmux;
use common::tools::{
    Client, call_err, call_ok, call_until, client, screen, type_line, wait_for_screen,
};
use common::{config_with_server, spawn_gateway, wait_until};
use serde_json::{Value, json};

const AGENT_CLI: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/programs/agent_cli.py");

/// The agent stand-in in a new session, logging to a file in `dir`.
fn agent(
    tmux: &TestTmux,
    dir: &Path,
    name: &str,
    startup: f64,
    busy: (f64, f64),
) -> (String, PathBuf) {
    agent_with(tmux, dir, name, startup, busy, "")
}

/// [`agent`], with more of the stand-in's options.
fn agent_with(
    tmux: &TestTmux,
    dir: &Path,
    name: &str,
    startup: f64,
    busy: (f64, f64),
    options: &str,
) -> (String, PathBuf) {
    let log = dir.join(format!("{name}.log"));
    // Through a wrapper that waits for it (as launchers do): the program is found below it.
    let command = format!(
        "sh -c 'python3 {AGENT_CLI} --log {} --startup {startup} --busy {} {} {options}; exit'",
        log.display(),
        busy.0,
        busy.1
    );
    (tmux.session_running(name, &command), log)
}

/// What the agent logged, one JSON value per line.
fn logged(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect()
}

fn prompts(log: &Path) -> Vec<String> {
    logged(log)
        .iter()
        .filter_map(|entry| entry["prompt"].as_str().map(str::to_owned))
        .collect()
}

async fn send_prompt(client: &Client, pane: &str, text: &str) -> Value {
    call_ok(
        client,
        "send_prompt",
        json!({"target": pane, "text": text, "timeout": 20}),
    )
    .await
}

/// The rows of the agent stand-in's input box on `screen`, without the border.
fn input_box(screen: &str) -> Vec<String> {
    screen
        .lines()
        .skip_while(|line| !line.starts_with('╭'))
        .skip(1)
        .take_while(|line| !line.starts_with('╰'))
        .map(|line| {
            line.trim_end()
                .trim_start_matches('│')
                .trim_end_matches('│')
                .trim()
                .to_owned()
        })
        .collect()
}

fn assert_submitted(answer: &Value) {
    assert_eq!(answer["outcome"], "submitted", "{answer}");
    assert!(answer["enter_presses"].as_u64().unwrap() >= 1, "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_cli_takes_each_prompt_once_whether_starting_busy_or_idle() {
    let tmux = TestTmux::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let client = client(&gateway).await;
    let (pane, log) = agent(&tmux, dir.path(), "agent", 1.5, (1.0, 1.5));

    // While it starts up (typeahead would be discarded): the prompt waits for it.
    let starting = send_prompt(&client, &pane, "first: list the files").await;
    assert_submitted(&starting);
    assert_eq!(starting["ready_by"], "quiet", "{starting}");
    // While it thinks about the first (input is discarded after thinking): multi-line.
    let busy = send_prompt(&client, &pane, "second line one\nsecond line two\n").await;
    assert_submitted(&busy);
    // Idle: back in its read loop.
    wait_for_screen(&tmux, &pane, "done: second").await;
    call_until(&client, "get_pane_state", &pane, |s| {
        s["blocked_in"] == "poll"
    })
    .await;
    let idle = send_prompt(&client, &pane, "third").await;
    assert_submitted(&idle);
    wait_for_screen(&tmux, &pane, "done: third").await;
    assert_eq!(
        prompts(&log),
        [
            "first: list the files",
            "second line one\nsecond line two",
            "third"
        ],
        "{}",
        screen(&tmux, &pane)
    );

    // The hazard is real: a paste and Enter in one burst leave the text in the input box.
    tmux.ok(&["set-buffer", "-b", "burst", "burst"]);
    tmux.ok(&[
        "paste-buffer",
        "-p",
        "-d",
        "-b",
        "burst",
        "-t",
        &pane,
        ";",
        "send-keys",
        "-t",
        &pane,
        "Enter",
    ]);
    // The Enter is seen, as a newline under the text in the box: nothing was submitted.
    let held = wait_until(Duration::from_secs(10), || {
        input_box(&screen(&tmux, &pane)) == ["> burst", ""]
    })
    .await;
    assert!(held, "{}", screen(&tmux, &pane));
    assert_eq!(prompts(&log).len(), 3, "{}", screen(&tmux, &pane));
    // send_prompt on top submits what the box holds with it, once.
    assert_submitted(&send_prompt(&client, &pane, "fourth").await);
    wait_for_screen(&tmux, &pane, "done: burst").await;
    assert_eq!(
        prompts(&log)[3],
        "burst\nfourth",
        "{}",
        screen(&tmux, &pane)
    );
    assert_eq!(prompts(&log).len(), 4);
}

/// A program that ignores the first Enter after a paste gets a second one, and only one: the
/// prompt is submitted once. (Fails if send_prompt never presses Enter again.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_enter_the_program_ignores_is_pressed_once_more() {
    let tmux = TestTmux::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let client = client(&gateway).await;
    let (pane, log) = agent_with(
        &tmux,
        dir.path(),
        "drops",
        0.2,
        (0.2, 0.3),
        "--drop-first-enter",
    );

    let answer = send_prompt(&client, &pane, "take two").await;
    assert_submitted(&answer);
    assert_eq!(answer["enter_presses"], 2, "{answer}");
    wait_for_screen(&tmux, &pane, "done: take two").await;
    let again = send_prompt(&client, &pane, "and again").await;
    assert_submitted(&again);
    assert_eq!(again["enter_presses"], 2, "{again}");
    wait_for_screen(&tmux, &pane, "done: and again").await;
    assert_eq!(
        prompts(&log),
        ["take two", "and again"],
        "{}",
        screen(&tmux, &pane)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_that_ignores_typing_is_reported_not_submitted() {
    let tmux = TestTmux::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let client = client(&gateway).await;
    let (pane, log) = agent(&tmux, dir.path(), "asks", 0.2, (0.2, 0.3));

    assert_submitted(&send_prompt(&client, &pane, "needs permission to clean").await);
    wait_for_screen(&tmux, &pane, "[y/n]").await;
    let ignored = send_prompt(&client, &pane, "next task").await;
    assert_eq!(ignored["outcome"], "not_submitted", "{ignored}");
    assert_eq!(ignored["evidence"], "paste_not_shown", "{ignored}");
    assert_eq!(ignored["enter_presses"], 0, "{ignored}");
    call_ok(
        &client,
        "send_keys",
        json!({"target": pane, "keys": "y", "enter": false}),
    )
    .await;
    wait_for_screen(&tmux, &pane, "allowed").await;
    assert_eq!(
        logged(&log),
        [
            json!({"prompt": "needs permission to clean"}),
            json!({"permission": "y"})
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shell_a_repl_and_a_line_reader_take_the_prompt_once() {
    let tmux = TestTmux::start();
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let client = client(&gateway).await;

    let shell = tmux.session_running(
        "sh",
        "env -i PATH=/usr/bin:/bin TERM=screen PS1='$ ' bash --norc --noprofile -i",
    );
    wait_for_screen(&tmux, &shell, "$").await;
    let answer = send_prompt(&client, &shell, "echo one-$((1+1))").await;
    assert_submitted(&answer);
    assert_eq!(answer["ready_by"], "shell_prompt", "{answer}");
    assert_eq!(answer["evidence"], "newline_echoed", "{answer}");
    assert_eq!(answer["enter_presses"], 1, "{answer}");
    wait_for_screen(&tmux, &shell, "one-2").await;
    // A multi-line prompt reaches the shell as one paste: both lines run, once each.
    assert_submitted(&send_prompt(&client, &shell, "echo a-$((2+1))\necho b-$((2+2))").await);
    wait_for_screen(&tmux, &shell, "b-4").await;
    let text = screen(&tmux, &shell);
    assert_eq!(text.matches("a-3").count(), 1, "{text}");
    assert_eq!(text.matches("one-2").count(), 1, "{text}");

    let repl = tmux.session_running("py", "env -i PATH=/usr/bin:/bin TERM=screen python3 -q");
    wait_for_screen(&tmux, &repl, ">>>").await;
    let answer = send_prompt(&client, &repl, "print(6*7)").await;
    assert_submitted(&answer);
    // Its readline polls, so it is judged by quiet; not a box: one Enter only.
    assert_eq!(answer["ready_by"], "quiet", "{answer}");
    assert_eq!(answer["enter_presses"], 1, "{answer}");
    wait_for_screen(&tmux, &repl, "42").await;
    let text = screen(&tmux, &repl);
    assert_eq!(text.matches("42").count(), 1, "{text}");

    let reader = tmux.session_running("cat", "cat");
    let answer = send_prompt(&client, &reader, "a line for cat").await;
    assert_submitted(&answer);
    assert_eq!(answer["ready_by"], "read_terminal", "{answer}");
    assert_eq!(answer["evidence"], "newline_echoed", "{answer}");
    // The terminal's echo and cat's copy: the line twice, no more.
    wait_for_screen(&tmux, &reader, "a line for cat\na line for cat").await;
    let text = screen(&tmux, &reader);
    assert_eq!(text.matches("a line for cat").count(), 2, "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_program_gets_nothing_and_bad_input_changes_nothing() {
    let tmux = TestTmux::start();
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let client = client(&gateway).await;
    let pane = tmux.session_running("busy", "sleep 60");
    let started = std::time::Instant::now();
    let answer = call_ok(
        &client,
        "send_prompt",
        json!({"target": pane, "text": "too early", "timeout": 1}),
    )
    .await;
    assert_eq!(answer["outcome"], "not_ready", "{answer}");
    assert_eq!(answer["evidence"], "busy", "{answer}");
    assert_eq!(answer["enter_presses"], 0, "{answer}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "bounded by its timeout"
    );
    assert!(!screen(&tmux, &pane).contains("too early"));

    for (args, needle) in [
        (json!({"target": pane, "text": " \n\n"}), "nothing visible"),
        (
            json!({"target": pane, "text": "x", "quiet_ms": 0}),
            "quiet_ms",
        ),
        (json!({"target": "%999", "text": "x"}), "%999"),
    ] {
        let error = call_err(&client, "send_prompt", args).await;
        assert!(error.to_string().contains(needle), "{error}");
    }
    let shell = tmux.session_running("copy", "bash --norc --noprofile -i");
    tmux.ok(&["copy-mode", "-t", &shell]);
    let error = call_err(
        &client,
        "send_prompt",
        json!({"target": shell, "text": "x"}),
    )
    .await;
    assert!(error.to_string().contains("copy mode"), "{error}");
}

const HOOK: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/deploy/hooks/muxgate-agent-state"
);

/// Runs the repo's hook script as an agent's hook would, for `pane`; its stderr.
async fn hook(gateway: &common::TestGateway, token: &str, pane: &str, state: &str) -> String {
    let output = tokio::process::Command::new(HOOK)
        .args([state, "claude-code"])
        .env("MUXGATE_URL", &gateway.mcp_url)
        .env("MUXGATE_TOKEN", token)
        .env("TMUX_PANE", pane)
        .output()
        .await
        .expect("run the hook script");
    assert!(output.status.success(), "the hook never fails its agent");
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agents_own_hook_reports_what_proc_cannot_tell() {
    let tmux = TestTmux::start();
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let client = client(&gateway).await;
    // A program that polls its input (so /proc cannot tell whether it waits) and is quiet;
    // each line it reads, it counts.
    let pane = tmux.session_running(
        "agent",
        "python3 -c 'import os, select\nwhile True:\n    select.select([0], [], [])\n    print(\"got\", len(os.read(0, 4096)))'",
    );
    // In its select: /proc shows a poll, which does not say whether it waits for input.
    call_until(&client, "get_pane_state", &pane, |s| {
        s["blocked_in"] == "poll"
    })
    .await;
    let writer = common::tools::session_limited_token(
        &gateway,
        "hook",
        &["mux:read", "mux:write"],
        &["agent"],
    );

    // Working: not ready, however quiet.
    assert_eq!(hook(&gateway, &writer, &pane, "working").await, "");
    let state = call_ok(&client, "get_pane_state", json!({"target": pane})).await;
    assert_eq!(state["agent_state"], "working", "{state}");
    assert_eq!(state["agent"], "claude-code", "{state}");
    assert!(state.get("waiting_for_input").is_none(), "{state}");
    let busy = call_ok(
        &client,
        "send_prompt",
        json!({"target": pane, "text": "too early", "quiet_ms": 100, "timeout": 1}),
    )
    .await;
    assert_eq!(busy["outcome"], "not_ready", "{busy}");
    assert_eq!(busy["evidence"], "agent_working", "{busy}");

    // Waiting for input: ready at once (long before the quiet time), and submitted.
    assert_eq!(
        hook(&gateway, &writer, &pane, "waiting_for_input").await,
        ""
    );
    let answer = call_ok(
        &client,
        "send_prompt",
        json!({"target": pane, "text": "hello from hook", "quiet_ms": 60000, "timeout": 10}),
    )
    .await;
    assert_submitted(&answer);
    assert_eq!(answer["ready_by"], "agent_report", "{answer}");
    assert_eq!(answer["enter_presses"], 1, "{answer}");
    wait_for_screen(&tmux, &pane, "got 16").await;
    // A line typed after it is read next: a second Enter would have been read before it.
    type_line(&tmux, &pane, "ab");
    wait_for_screen(&tmux, &pane, "got 3").await;
    assert!(!screen(&tmux, &pane).contains("got 1\n"), "a second Enter");
    // It printed since: the report no longer says it waits, and quiet is not long enough.
    let stale = call_ok(
        &client,
        "send_prompt",
        json!({"target": pane, "text": "again", "quiet_ms": 60000, "timeout": 1}),
    )
    .await;
    assert_eq!(stale["outcome"], "not_ready", "{stale}");
    assert_eq!(stale["evidence"], "printing", "{stale}");

    // Reporting takes write access to the pane's session; the hook says so and exits 0.
    let reader = common::tools::session_limited_token(&gateway, "r", &["mux:read"], &["agent"]);
    assert!(
        hook(&gateway, &reader, &pane, "idle")
            .await
            .contains("refused")
    );
    let other = common::tools::session_limited_token(&gateway, "o", &["mux:write"], &["else"]);
    assert!(
        hook(&gateway, &other, &pane, "idle")
            .await
            .contains("refused")
    );
    // The same from inside another tenant's pane, naming the agent's pane as its own.
    let dir = tempfile::tempdir().expect("temp dir");
    let err = dir.path().join("hook.err");
    let attacker = tmux.session_running(
        "else",
        &format!(
            "MUXGATE_URL='{}' MUXGATE_TOKEN='{other}' TMUX_PANE='{pane}' {HOOK} idle attacker \
             2>'{}'; echo hook-done; sleep 60",
            gateway.mcp_url,
            err.display()
        ),
    );
    wait_for_screen(&tmux, &attacker, "hook-done").await;
    let said = std::fs::read_to_string(&err).expect("the hook's stderr");
    assert!(said.contains("refused"), "{said}");
    assert!(
        hook(&gateway, &writer, &pane, "bogus")
            .await
            .contains("STATE must be")
    );
    let state = call_ok(&client, "get_pane_state", json!({"target": pane})).await;
    assert_eq!(state["agent_state"], "waiting_for_input", "{state}");
}

/// A prompt sent with an `idempotency_key` is typed once however often the call is retried
/// (a dropped connection, a client's timeout): the retry gets the first answer, marked
/// `replayed`. The key names one request: used for another text it is refused. A call that
/// typed nothing (`not_ready`) keeps no key, so a retry once the program is ready acts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retried_prompt_is_typed_once() {
    let tmux = TestTmux::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let client = client(&gateway).await;
    let (pane, log) = agent(&tmux, dir.path(), "agent", 0.3, (0.5, 0.5));
    let send = |text: &str, key: &str| {
        call_ok(
            &client,
            "send_prompt",
            json!({"target": pane, "text": text, "timeout": 20, "idempotency_key": key}),
        )
    };

    let first = send("deploy", "deploy-1").await;
    assert_submitted(&first);
    assert_eq!(first["replayed"], false);
    let retried = send("deploy", "deploy-1").await;
    assert_eq!(retried["replayed"], true, "{retried}");
    assert_eq!(retried["outcome"], "submitted");
    assert_eq!(retried["output_position"], first["output_position"]);
    wait_for_screen(&tmux, &pane, "done: deploy").await;
    let reused = call_err(
        &client,
        "send_prompt",
        json!({"target": pane, "text": "rollback", "idempotency_key": "deploy-1"}),
    )
    .await;
    assert_eq!(reused["kind"], "conflict", "{reused}");
    // Settled: the stand-in read the prompt once, and nothing else.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(prompts(&log), ["deploy"], "{}", screen(&tmux, &pane));

    let busy = tmux.session_running("busy", "sleep 60");
    for _ in 0..2 {
        let early = call_ok(
            &client,
            "send_prompt",
            json!({"target": busy, "text": "x", "timeout": 1, "idempotency_key": "early"}),
        )
        .await;
        assert_eq!(early["outcome"], "not_ready", "{early}");
        assert_eq!(early["replayed"], false, "{early}");
    }
    let bad = call_err(
        &client,
        "send_prompt",
        json!({"target": pane, "text": "x", "idempotency_key": "two words"}),
    )
    .await;
    assert_eq!(bad["kind"], "invalid_arguments", "{bad}");
}
