//! What a pane is doing, over MCP against real programs in a real tmux server: list_commands and
//! get_command_output (a bash printing OSC 133 and OSC 7 marks has every command recorded, a
//! plain sh its run_command runs) and get_pane_state (waiting for input only on evidence).

mod common;

use std::time::Duration;

use common::probe::metric;
use common::tmux::TestTmux;
use common::tools::{
    Client, call_err, call_ok, call_until, client, client_with, foreground_is, screen,
    session_limited_token, type_line, wait_for_screen,
};
use common::{config_with_server, spawn_gateway, wait_until, wait_until_async};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};

/// A bash integrated the way terminals integrate it: `D` (with `$?`), OSC 7 and `A` before each
/// prompt, `B` at its end, `C` when a command starts. No rc files are read.
const INTEGRATED_BASH: &str = "env -i HOME=/tmp PATH=/usr/bin:/bin TERM=screen \
     PROMPT_COMMAND='printf \"\\033]133;D;%s\\007\\033]7;file://h%s\\007\\033]133;A\\007\" \"$?\" \"$PWD\"' \
     PS1='$ \\[\\033]133;B\\007\\]' PS0='\\033]133;C\\007' bash --norc --noprofile -i";

async fn pane_running(tmux: &TestTmux, name: &str, command: &str) -> String {
    let pane = tmux.session_running(name, command);
    wait_for_screen(tmux, &pane, "$").await;
    pane
}

/// Lists `pane`'s commands until `done` holds for them.
async fn commands_until(client: &Client, pane: &str, done: impl Fn(&[Value]) -> bool) -> Value {
    call_until(client, "list_commands", pane, |listed| {
        done(listed["commands"].as_array().map_or(&[], Vec::as_slice))
    })
    .await
}

fn finished(commands: &[Value], n: usize) -> bool {
    commands.len() == n && commands.iter().all(|c| c.get("running").is_none())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_integrated_shell_has_every_command_recorded_with_its_output() {
    let tmux = TestTmux::start();
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let client = client(&gateway).await;
    let pane = pane_running(&tmux, "s", INTEGRATED_BASH).await;

    // Recording starts with the first call: nothing before it is known.
    let first = call_ok(&client, "list_commands", json!({"target": pane})).await;
    assert_eq!(first["commands"], json!([]), "{first}");
    assert!(first["recording_since_ms"].as_u64().unwrap() > 0);

    type_line(&tmux, &pane, "cd /tmp");
    type_line(&tmux, &pane, "echo hi; false");
    type_line(&tmux, &pane, "printf 'a\\nb\\n'; sleep 0.2");
    let listed = commands_until(&client, &pane, |c| finished(c, 3)).await;
    let commands = listed["commands"].as_array().unwrap();
    assert_eq!(listed["shell_integration"], true, "{listed}");
    assert_eq!(listed["at_prompt"], true, "{listed}");
    assert_eq!(listed["cwd"], "/tmp", "{listed}");
    assert_eq!(commands[0]["command"], "cd /tmp", "{listed}");
    assert_eq!(commands[0]["exit_status"], 0);
    assert_eq!(commands[1]["command"], "echo hi; false");
    assert_eq!(commands[1]["exit_status"], 1);
    assert_eq!(commands[1]["cwd"], "/tmp");
    assert_eq!(commands[2]["command"], "printf 'a\\nb\\n'; sleep 0.2");
    // The marks are timed as the gateway reads them, so a 200 ms sleep can be seen as 199 ms.
    assert!(
        commands[2]["duration_ms"].as_u64().unwrap() >= 150,
        "{listed}"
    );
    let ids: Vec<u64> = commands.iter().map(|c| c["id"].as_u64().unwrap()).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");

    // One command's own output: no prompt, no echo.
    let output = call_ok(
        &client,
        "get_command_output",
        json!({"target": pane, "id": ids[1]}),
    )
    .await;
    assert_eq!(output["output"], "hi", "{output}");
    assert_eq!(output["exit_status"], 1);
    let latest = call_ok(&client, "get_command_output", json!({"target": pane})).await;
    assert_eq!(latest["id"], ids[2]);
    assert_eq!(latest["output"], "a\nb", "{latest}");
    let tail = call_ok(
        &client,
        "get_command_output",
        json!({"target": pane, "max_lines": 1}),
    )
    .await;
    assert_eq!(tail["output"], "[... 1 lines truncated ...]\nb", "{tail}");
    assert_eq!(tail["truncated"], true);

    // A running command is listed as running, its output readable as it comes.
    type_line(&tmux, &pane, "echo started; sleep 30");
    let running = commands_until(&client, &pane, |c| {
        c.len() == 4 && c[3].get("running").is_some()
    })
    .await;
    assert_eq!(running["at_prompt"], false, "{running}");
    wait_for_screen(&tmux, &pane, "started").await;
    let so_far = call_ok(&client, "get_command_output", json!({"target": pane})).await;
    assert_eq!(so_far["running"], true, "{so_far}");
    assert_eq!(so_far["output"], "started", "{so_far}");
    foreground_is(&client, &pane, "sleep 30").await;
    tmux.ok(&["send-keys", "-t", &pane, "C-c"]);
    let interrupted = commands_until(&client, &pane, |c| finished(c, 4)).await;
    assert_eq!(
        interrupted["commands"][3]["exit_status"], 130,
        "{interrupted}"
    );

    // Bad input: clear errors.
    let missing = call_err(
        &client,
        "get_command_output",
        json!({"target": pane, "id": 999}),
    )
    .await;
    assert_eq!(missing["kind"], "not_found", "{missing}");
    assert!(
        missing["message"]
            .as_str()
            .unwrap()
            .contains("no command 999")
    );
    let limit = call_err(
        &client,
        "list_commands",
        json!({"target": pane, "limit": 0}),
    )
    .await;
    assert_eq!(limit["kind"], "invalid_arguments", "{limit}");
    let listed = call_ok(
        &client,
        "list_commands",
        json!({"target": pane, "limit": 2}),
    )
    .await;
    assert_eq!(listed["commands"].as_array().unwrap().len(), 2);
    assert_eq!(listed["commands"][1]["id"], ids[2] + 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_command_runs_are_recorded_in_a_shell_without_integration() {
    let tmux = TestTmux::start();
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let client = client(&gateway).await;
    let pane = pane_running(&tmux, "plain", "env PS1='$ ' sh").await;

    let ran = call_ok(
        &client,
        "run_command",
        json!({"target": pane, "command": "echo ran; exit 3"}),
    )
    .await;
    assert_eq!(ran["exit_status"], 3, "{ran}");
    // A command typed by hand is not seen: the shell prints no marks.
    type_line(&tmux, &pane, "echo by-hand");
    wait_for_screen(&tmux, &pane, "by-hand\n$").await;

    let listed = call_ok(&client, "list_commands", json!({"target": pane})).await;
    assert_eq!(listed["shell_integration"], false, "{listed}");
    let commands = listed["commands"].as_array().unwrap();
    assert_eq!(commands.len(), 1, "{listed}");
    assert_eq!(commands[0]["command"], "echo ran; exit 3");
    assert_eq!(commands[0]["exit_status"], 3);
    let output = call_ok(&client, "get_command_output", json!({"target": pane})).await;
    assert_eq!(output["output"], "ran", "{output}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_watched_only_for_its_ledger_makes_room_for_a_wait() {
    // The server's cap, then one client's share of it.
    ledger_session_makes_room(|config| config.engine.max_watched_sessions = 1).await;
    ledger_session_makes_room(|config| {
        config.limits.max_watched_sessions = std::num::NonZeroU32::MIN;
    })
    .await;
}

async fn ledger_session_makes_room(cap: impl FnOnce(&mut muxgate::config::Config)) {
    let tmux = TestTmux::start();
    let mut config = config_with_server("work", &tmux.socket, false);
    cap(&mut config);
    let gateway = spawn_gateway(config).await;
    let client = client(&gateway).await;
    let recorded = pane_running(&tmux, "recorded", "env PS1='$ ' sh").await;
    let waited = pane_running(&tmux, "waited", "env PS1='$ ' sh").await;

    let ran = call_ok(
        &client,
        "run_command",
        json!({"target": recorded, "command": "echo kept"}),
    )
    .await;
    assert_eq!(ran["exit_status"], 0, "{ran}");
    // The only output connection allowed now keeps `recorded`'s ledger; a wait elsewhere still
    // gets one.
    type_line(&tmux, &waited, "sleep 0.3; echo ready-$((2+2))");
    let wait = call_ok(
        &client,
        "wait_for_text",
        json!({"target": waited, "patterns": ["ready-4"], "timeout": 10}),
    )
    .await;
    assert_eq!(wait["outcome"], "matched", "{wait}");
    // Its ledger was let go to make that room: recording starts over.
    let listed = call_ok(&client, "list_commands", json!({"target": recorded})).await;
    assert_eq!(listed["commands"], json!([]), "{listed}");
}

/// `get_pane_state` of `pane` once `done` holds for it.
async fn state_until(client: &Client, pane: &str, done: impl Fn(&Value) -> bool) -> Value {
    call_until(client, "get_pane_state", pane, done).await
}

/// Whether a wait (wait_for_state, wait_for_text …) is running in `gateway` now.
async fn a_wait_runs(gateway: &common::TestGateway) -> bool {
    metric(&gateway.base, "muxgate_waits_active").await >= 1.0
}

/// Makes the shell in `pane` loop until the file `gate` exists (printing `tick-N` every
/// 100 ms if `ticking`), then run `then`; returns once the loop runs.
async fn run_behind_gate(
    client: &Client,
    tmux: &TestTmux,
    pane: &str,
    gate: &std::path::Path,
    ticking: bool,
    then: &str,
) {
    let (tick, sleep) = if ticking {
        ("i=$((i+1)); echo tick-$i; ", "sleep 0.1")
    } else {
        ("", "sleep 0.05")
    };
    type_line(
        tmux,
        pane,
        &format!(
            "i=0; while [ ! -e {} ]; do {tick}{sleep}; done; {then}",
            gate.display()
        ),
    );
    state_until(client, pane, |s| s["foreground_command_line"] == sleep).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_output_keeps_its_exact_tail_within_the_ring_and_the_answer_budget() {
    const RING: usize = 64 * 1024;
    const BUDGET: u32 = 16 * 1024;
    let tmux = TestTmux::start();
    let mut config = config_with_server("work", &tmux.socket, false);
    config.engine.output_ring_bytes = RING;
    config.limits.max_output_bytes = std::num::NonZeroU32::new(BUDGET).expect("budget");
    let gateway = spawn_gateway(config).await;
    let client = client(&gateway).await;
    let pane = pane_running(&tmux, "s", INTEGRATED_BASH).await;
    call_ok(&client, "list_commands", json!({"target": pane})).await;
    // 20,000 numbered lines: 108,894 bytes of output, more than the ring holds.
    type_line(&tmux, &pane, "seq 1 20000");
    let listed = commands_until(&client, &pane, |c| finished(c, 1)).await;
    let record = &listed["commands"][0];
    assert_eq!(record["command"], "seq 1 20000", "{listed}");
    assert_eq!(record["exit_status"], 0, "{listed}");
    // Output size as the pane printed it (a terminal's \r\n per line).
    assert_eq!(record["output_bytes"], 108_894 + 20_000, "{listed}");
    let started = record["started_ms"].as_u64().expect("started_ms");
    let since = listed["recording_since_ms"]
        .as_u64()
        .expect("recording_since_ms");
    assert!(started >= since, "{listed}");

    let output = call_ok(
        &client,
        "get_command_output",
        json!({"target": pane, "max_lines": 10_000}),
    )
    .await;
    // What the ring lost is said, never guessed; what is left ends exactly where the command
    // ended, and the answer keeps within the client's budget.
    assert!(
        output["lost_bytes"].as_u64().expect("lost_bytes") > 0,
        "{output}"
    );
    assert_eq!(output["truncated"], true, "{output}");
    assert!(
        output["truncated_bytes"].as_u64().expect("truncated_bytes") > 0,
        "{output}"
    );
    let text = output["output"].as_str().expect("output");
    assert!(text.len() <= BUDGET as usize, "{}", text.len());
    let tail: Vec<&str> = text.lines().rev().take(3).collect();
    assert_eq!(tail, ["20000", "19999", "19998"], "{output}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pane_state_says_waiting_for_input_only_on_evidence() {
    let tmux = TestTmux::start();
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let client = client(&gateway).await;
    let pane = pane_running(&tmux, "s", INTEGRATED_BASH).await;
    let first = call_ok(&client, "get_pane_state", json!({"target": pane})).await;
    assert_eq!(first["dead"], false, "{first}");

    // The shell at its prompt reads the terminal.
    type_line(&tmux, &pane, "true");
    state_until(&client, &pane, |s| s["at_prompt"] == true).await;
    let prompt = state_until(&client, &pane, |s| s["waiting_for_input"] == true).await;
    // bash's readline waits in pselect: a shell with no job running is waiting.
    assert_eq!(prompt["blocked_in"], "poll", "{prompt}");
    assert!(
        prompt["foreground_command_line"]
            .as_str()
            .unwrap()
            .contains("bash"),
        "{prompt}"
    );

    // A sleeping command is busy, not waiting; the shell is not at its prompt (its mark comes
    // with its output, which can trail the process table by a few milliseconds).
    type_line(&tmux, &pane, "sleep 30");
    let busy = state_until(&client, &pane, |s| {
        s["foreground_command_line"] == "sleep 30"
            && s["blocked_in"] == "sleep"
            && s["at_prompt"] == false
    })
    .await;
    assert_eq!(busy["waiting_for_input"], false, "{busy}");
    // While it sleeps, the pane's quiet time grows.
    let quiet = state_until(&client, &pane, |s| {
        s["idle_for_ms"].as_u64().is_some_and(|ms| ms >= 300)
    })
    .await;
    assert_eq!(quiet["foreground_command_line"], "sleep 30", "{quiet}");
    tmux.ok(&["send-keys", "-t", &pane, "C-c"]);

    // A program reading its input (not a shell) waits too.
    type_line(&tmux, &pane, "python3 -c 'input()'");
    state_until(&client, &pane, |s| {
        s["foreground_command_line"] == "python3 -c input()"
            && s["waiting_for_input"] == true
            && s["at_prompt"] == false
    })
    .await;
    type_line(&tmux, &pane, "");

    // A program computing is running: on a CPU, not waiting (at the lowest priority, so that
    // it slows nothing else down meanwhile).
    type_line(&tmux, &pane, "nice -n 19 python3 -c 'while True: pass'");
    let spinning = state_until(&client, &pane, |s| {
        s["foreground_command_line"] == "python3 -c while True: pass"
            && s["blocked_in"] == "running"
    })
    .await;
    assert_eq!(spinning["waiting_for_input"], false, "{spinning}");
    tmux.ok(&["send-keys", "-t", &pane, "C-c"]);
    state_until(&client, &pane, |s| s["at_prompt"] == true).await;

    // A dead pane says how it ended.
    tmux.ok(&["set-option", "-t", &pane, "-p", "remain-on-exit", "on"]);
    type_line(&tmux, &pane, "exit 3");
    // tmux 3.3a learns the status after the dead flag, and sometimes never reports it (seen
    // in about one run in three): then it is left out, never made up.
    let dead = state_until(&client, &pane, |s| s["dead"] == true).await;
    assert!(
        [None, Some(&json!(3))].contains(&dead.get("dead_status")),
        "{dead}"
    );
    assert!(dead.get("waiting_for_input").is_none(), "{dead}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_for_state_reports_panes_as_they_get_there() {
    let tmux = TestTmux::start();
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let client = client(&gateway).await;
    let fast = pane_running(&tmux, "fast", INTEGRATED_BASH).await;
    let slow = pane_running(&tmux, "slow", INTEGRATED_BASH).await;
    // Recording begins, and a prompt is printed after it (so the shells' marks are seen).
    for pane in [&fast, &slow] {
        call_ok(&client, "list_commands", json!({"target": pane})).await;
        type_line(&tmux, pane, "true");
    }
    commands_until(&client, &slow, |c| finished(c, 1)).await;

    // Every pane, in the order they finish (the slow one 2.7 s later, a margin no loaded
    // machine's typing and call take).
    type_line(&tmux, &slow, "sleep 3; false");
    type_line(&tmux, &fast, "sleep 0.3");
    let all = call_ok(
        &client,
        "wait_for_state",
        json!({"targets": [slow, fast], "condition": "command_finished", "mode": "all", "timeout": 10}),
    )
    .await;
    assert_eq!(all["outcome"], "reached", "{all}");
    let reached = all["reached"].as_array().unwrap();
    assert_eq!(reached[0]["pane_id"], fast.as_str(), "{all}");
    assert_eq!(reached[0]["exit_status"], 0);
    assert_eq!(reached[1]["pane_id"], slow.as_str());
    assert_eq!(reached[1]["exit_status"], 1);
    assert_eq!(reached[1]["command"], "sleep 3; false");
    assert!(reached[1]["after_ms"].as_u64().unwrap() >= 600, "{all}");
    assert_eq!(all["pending"], json!([]));

    // The first one only; the other is still pending.
    type_line(&tmux, &slow, "sleep 5");
    type_line(&tmux, &fast, "sleep 0.2; echo done");
    let any = call_ok(
        &client,
        "wait_for_state",
        json!({"targets": [slow, fast], "condition": "command_finished", "timeout": 10}),
    )
    .await;
    assert_eq!(any["reached"][0]["pane_id"], fast.as_str(), "{any}");
    assert_eq!(any["pending"], json!([slow]), "{any}");
    tmux.ok(&["send-keys", "-t", &slow, "C-c"]);

    // Quiet for a while: only once the output stopped. It prints on after the wait started
    // (a tick is seen), so the quiet that ends the wait starts after it did.
    let gates = tempfile::tempdir().expect("temp dir");
    let gate = gates.path().join("idle");
    run_behind_gate(&client, &tmux, &fast, &gate, true, "true").await;
    let stop_printing = async {
        assert!(wait_until_async(Duration::from_secs(10), || a_wait_runs(&gateway)).await);
        // The last tick shown (the typed line's `tick-$i` has no number).
        let last_tick = || {
            screen(&tmux, &fast)
                .split("tick-")
                .filter_map(|rest| {
                    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                    digits.parse::<u64>().ok()
                })
                .max()
                .unwrap_or(0)
        };
        let before = last_tick();
        assert!(
            wait_until(Duration::from_secs(10), || last_tick() > before).await,
            "no tick after the wait started"
        );
        std::fs::write(&gate, b"").expect("open the gate");
    };
    let (idle, ()) = tokio::join!(
        call_ok(
            &client,
            "wait_for_state",
            json!({"targets": [fast], "condition": "idle", "idle_ms": 400, "timeout": 20}),
        ),
        stop_printing
    );
    assert_eq!(idle["outcome"], "reached", "{idle}");
    assert!(idle["waited_ms"].as_u64().unwrap() >= 400, "{idle}");

    // Waiting for input: a shell back at its prompt after a command (bash waits in pselect)…
    // The command ends only once the wait is running and has seen the pane busy.
    let until_released = |gate: std::path::PathBuf| {
        let (client, gateway, fast) = (&client, &gateway, &fast);
        async move {
            assert!(wait_until_async(Duration::from_secs(10), || a_wait_runs(gateway)).await);
            let busy = call_ok(client, "get_pane_state", json!({"target": fast})).await;
            assert_eq!(busy["waiting_for_input"], false, "{busy}");
            assert!(
                a_wait_runs(gateway).await,
                "the wait ended while the pane was busy"
            );
            std::fs::write(&gate, b"").expect("open the gate");
        }
    };
    let waiting_for_input = || {
        call_ok(
            &client,
            "wait_for_state",
            json!({"targets": [fast], "condition": "waiting_for_input", "timeout": 20}),
        )
    };
    let gate = gates.path().join("prompt");
    run_behind_gate(&client, &tmux, &fast, &gate, false, "true").await;
    let (prompt, ()) = tokio::join!(waiting_for_input(), until_released(gate));
    assert_eq!(prompt["outcome"], "reached", "{prompt}");

    // … and a program that reads its terminal after a while.
    let gate = gates.path().join("input");
    run_behind_gate(&client, &tmux, &fast, &gate, false, "python3 -c 'input()'").await;
    let (input, ()) = tokio::join!(waiting_for_input(), until_released(gate));
    assert_eq!(input["outcome"], "reached", "{input}");
    let state = call_ok(&client, "get_pane_state", json!({"target": fast})).await;
    assert_eq!(
        state["foreground_command_line"], "python3 -c input()",
        "{state}"
    );
    type_line(&tmux, &fast, "");

    // Nothing happens: a timeout naming the pending panes.
    let quiet = call_ok(
        &client,
        "wait_for_state",
        json!({"targets": [slow], "condition": "command_finished", "timeout": 0.3}),
    )
    .await;
    assert_eq!(quiet["outcome"], "timeout", "{quiet}");
    assert_eq!(quiet["pending"], json!([slow]));

    // A program that exits while the wait runs (its status comes with the end of the pane's
    // stream, which waits for tmux to learn it).
    tmux.ok(&["set-option", "-t", &slow, "-p", "remain-on-exit", "on"]);
    let exiting = async {
        let waiting = wait_until_async(Duration::from_secs(10), || async {
            metric(&gateway.base, "muxgate_waits_active").await >= 1.0
        })
        .await;
        assert!(waiting, "the wait never started");
        type_line(&tmux, &slow, "exit 4");
    };
    let waiting = call_ok(
        &client,
        "wait_for_state",
        json!({"targets": [slow], "condition": "exited", "timeout": 10}),
    );
    let (exited, ()) = tokio::join!(waiting, exiting);
    assert_eq!(exited["reached"][0]["pane_id"], slow.as_str(), "{exited}");
    // As above: the status when tmux reported it, else nothing.
    assert!(
        [None, Some(&json!(4))].contains(&exited["reached"][0].get("exit_status")),
        "{exited}"
    );

    // Bad input changes nothing and says why.
    let none = call_err(
        &client,
        "wait_for_state",
        json!({"targets": [], "condition": "idle"}),
    )
    .await;
    assert_eq!(none["kind"], "invalid_arguments", "{none}");
    let many: Vec<String> = (0..65).map(|_| fast.clone()).collect();
    let many = call_err(
        &client,
        "wait_for_state",
        json!({"targets": many, "condition": "idle"}),
    )
    .await;
    assert!(
        many["message"].as_str().unwrap().contains("1 to 64"),
        "{many}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_on_state_sends_tmux_nothing() {
    let tmux = TestTmux::start();
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let client = client(&gateway).await;
    let pane = pane_running(&tmux, "s", INTEGRATED_BASH).await;
    type_line(&tmux, &pane, "sleep 60");
    let commands = || {
        metric(
            &gateway.base,
            "muxgate_tmux_commands_total{server=\"work\"}",
        )
    };
    for condition in ["command_finished", "waiting_for_input", "idle"] {
        let wait = |timeout: f64| {
            call_ok(
                &client,
                "wait_for_state",
                json!({"targets": [pane], "condition": condition, "idle_ms": 100_000, "timeout": timeout}),
            )
        };
        // The first call starts recording; later ones cost the same set-up, however long
        // they then wait. Each wait's timeout also bounds its set-up, so even the short ones
        // leave a loaded machine a second for it.
        wait(1.0).await;
        let before = commands().await;
        assert_eq!(wait(1.0).await["outcome"], "timeout");
        let short = commands().await - before;
        let before = commands().await;
        assert_eq!(wait(3.0).await["outcome"], "timeout");
        let long = commands().await - before;
        assert!(short > 0.0, "{condition}: the set-up asks tmux something");
        assert_eq!(
            short, long,
            "{condition}: waiting 2 s longer sent tmux commands"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fleet_of_32_panes_is_reported_in_the_order_they_finish() {
    const PANES: usize = 32;
    let tmux = TestTmux::start();
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let client = client(&gateway).await;
    tmux.ok(&["new-session", "-d", "-s", "fleet", "-x", "200", "-y", "60"]);
    // Each pane runs one command the way an integrated shell reports it (OSC 133 C when its
    // output starts, D with its status when it ends), all starting once the file `go` exists
    // (each looks every 50 ms); they end at random times in a random order, at least 200 ms
    // apart (a looked-for `go` file is seen up to 50 ms late, and 32 shells share 2 cores).
    let seed: u64 = rand::random();
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut ranks: Vec<usize> = (0..PANES).collect();
    ranks.shuffle(&mut rng);
    let mut ends_ms = Vec::with_capacity(PANES);
    let mut at = 1000u64;
    for _ in 0..PANES {
        at += rng.random_range(200..500);
        ends_ms.push(at);
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let go = dir.path().join("go");
    let mut panes = Vec::with_capacity(PANES);
    let mut window = String::new();
    for (i, &k) in ranks.iter().enumerate() {
        let secs = ends_ms[k] as f64 / 1000.0;
        let command = format!(
            "while [ ! -e {} ]; do sleep 0.05; done; printf '\\033]133;C\\007'; sleep {secs}; \
             printf '\\033]133;D;{k}\\007'; touch {}/ended-{k}; sleep 60",
            go.display(),
            dir.path().display()
        );
        let pane = if i % 8 == 0 {
            let created = tmux.ok(&[
                "new-window",
                "-d",
                "-t",
                "fleet:",
                "-P",
                "-F",
                "#{window_id} #{pane_id}",
                &command,
            ]);
            let (w, p) = created.trim().split_once(' ').expect("window and pane ids");
            window = w.to_owned();
            p.to_owned()
        } else {
            let pane = tmux.ok(&[
                "split-window",
                "-d",
                "-t",
                &window,
                "-P",
                "-F",
                "#{pane_id}",
                &command,
            ]);
            tmux.ok(&["select-layout", "-t", &window, "tiled"]);
            pane.trim().to_owned()
        };
        panes.push((k, pane));
    }
    // Recording starts before the commands do.
    for (_, pane) in &panes {
        call_ok(&client, "list_commands", json!({"target": pane})).await;
    }
    let targets: Vec<String> = panes.iter().map(|(_, pane)| pane.clone()).collect();
    std::fs::write(&go, b"").expect("write the go file");
    // An agent's loop: wait for any, handle it, wait again from the answer's cursor, so that a
    // command ending between two waits is still told, once.
    let mut order: Vec<String> = Vec::with_capacity(PANES);
    let mut since: Option<String> = None;
    let mut waits = 0;
    while order.len() < PANES {
        let mut arguments =
            json!({"targets": targets, "condition": "command_finished", "timeout": 30});
        if let Some(cursor) = &since {
            arguments["since"] = json!(cursor);
        }
        let answer = call_ok(&client, "wait_for_state", arguments).await;
        waits += 1;
        assert_eq!(answer["outcome"], "reached", "seed {seed}: {answer}");
        for reached in answer["reached"].as_array().expect("reached") {
            let pane = reached["pane_id"].as_str().expect("pane id").to_owned();
            let (k, _) = panes
                .iter()
                .find(|(_, p)| *p == pane)
                .expect("a fleet pane");
            assert_eq!(reached["exit_status"], *k, "seed {seed}: {answer}");
            assert!(!order.contains(&pane), "seed {seed}: told twice: {answer}");
            order.push(pane);
        }
        since = Some(answer["cursor"].as_str().expect("cursor").to_owned());
        // Now and then the agent takes its time before it waits again: until two more
        // commands have ended, so the next wait must tell both.
        if waits % 3 == 0 {
            let ended = || {
                std::fs::read_dir(dir.path())
                    .expect("read the fleet's directory")
                    .filter(|entry| {
                        entry
                            .as_ref()
                            .is_ok_and(|e| e.file_name().to_string_lossy().starts_with("ended-"))
                    })
                    .count()
            };
            let two_more = (order.len() + 2).min(PANES);
            assert!(
                wait_until(Duration::from_secs(30), || ended() >= two_more).await,
                "seed {seed}: the fleet stopped ending"
            );
        }
    }
    panes.sort_by_key(|(k, _)| *k);
    let expected: Vec<String> = panes.into_iter().map(|(_, pane)| pane).collect();
    assert_eq!(order, expected, "seed {seed}");
    // Some waits told several at once: those that ended while the agent was away.
    assert!(waits < PANES, "seed {seed}: {waits} waits");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_for_state_watches_a_session_or_every_pane_the_caller_may_see() {
    let tmux = TestTmux::start();
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let token = session_limited_token(&gateway, "agent", &["mux:read"], &["own-*"]);
    let client = client_with(&gateway, &token).await;
    // Another tenant's pane closes first; the caller's four close at 3, 4.5 and 6 s, or not at
    // all (seconds apart, so a loaded machine's setup time cannot reorder them).
    tmux.ok(&["new-session", "-d", "-s", "other", "sleep 1"]);
    tmux.ok(&["split-window", "-d", "-t", "other", "sleep 60"]);
    let first = tmux.session_running("own-trio", "sleep 3");
    let split = |command: &str| tmux.split_running("own-trio", command).to_string();
    let second = split("sleep 4.5");
    let third = split("sleep 6");
    let stays = split("sleep 60");

    // No targets: every pane the caller may see, and only those.
    let any = call_ok(
        &client,
        "wait_for_state",
        json!({"condition": "exited", "timeout": 10}),
    )
    .await;
    assert_eq!(any["reached"][0]["pane_id"], first, "{any}");
    assert_eq!(any["reached"].as_array().unwrap().len(), 1, "{any}");
    let mut pending: Vec<&str> = any["pending"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    pending.sort_unstable();
    let mut expected = vec![second.as_str(), third.as_str(), stays.as_str()];
    expected.sort_unstable();
    assert_eq!(pending, expected, "{any}");

    // A session: its panes.
    let session = call_ok(
        &client,
        "wait_for_state",
        json!({"targets": ["own-trio"], "condition": "exited", "timeout": 10}),
    )
    .await;
    assert_eq!(session["reached"][0]["pane_id"], second, "{session}");
    assert_eq!(session["pending"].as_array().unwrap().len(), 2, "{session}");

    // Another tenant's session is not found, and an empty list is refused.
    for (targets, needle) in [(json!(["other"]), "other"), (json!([]), "1 to 64")] {
        let error = call_err(
            &client,
            "wait_for_state",
            json!({"targets": targets, "condition": "exited", "timeout": 1}),
        )
        .await;
        assert!(error.to_string().contains(needle), "{error}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_panes_gives_each_panes_state_on_request() {
    let tmux = TestTmux::start();
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let client = client(&gateway).await;
    let shell = pane_running(&tmux, "shell", INTEGRATED_BASH).await;
    let busy = pane_running(&tmux, "busy", INTEGRATED_BASH).await;
    // The shell's stream records (and sees a prompt); the busy one runs a sleep.
    call_ok(&client, "list_commands", json!({"target": shell})).await;
    type_line(&tmux, &shell, "true");
    commands_until(&client, &shell, |c| finished(c, 1)).await;
    type_line(&tmux, &busy, "sleep 30");
    call_ok(
        &client,
        "report_agent_state",
        json!({"target": shell, "state": "idle", "agent": "codex"}),
    )
    .await;

    // Not by default: a listing asks /proc nothing unless told to.
    let plain = call_ok(&client, "list_panes", json!({})).await;
    assert!(
        plain["panes"][0].get("waiting_for_input").is_none(),
        "{plain}"
    );

    let fields = json!([
        "waiting_for_input",
        "foreground_command_line",
        "idle_for_ms",
        "at_prompt",
        "agent_state"
    ]);
    let listed = {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            let answer = call_ok(&client, "list_panes", json!({"fields": fields})).await;
            let panes = answer["panes"].as_array().expect("panes").clone();
            let of = |id: &str| panes.iter().find(|p| p["id"] == id).cloned();
            // Until the sleep runs: between reading its line and starting the command, bash is
            // itself in the foreground and no longer waiting for input.
            if of(&busy).is_some_and(|p| p["foreground_command_line"] == "sleep 30") {
                break (of(&shell).expect("shell"), of(&busy).expect("busy"));
            }
            assert!(tokio::time::Instant::now() < deadline, "{answer}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    let (shell_row, busy_row) = listed;
    assert_eq!(shell_row["waiting_for_input"], true, "{shell_row}");
    assert_eq!(shell_row["at_prompt"], true, "{shell_row}");
    assert_eq!(shell_row["agent_state"], "idle", "{shell_row}");
    assert!(shell_row["idle_for_ms"].is_u64(), "{shell_row}");
    let command_line = |row: &Value| row["foreground_command_line"].as_str().map(str::to_owned);
    assert!(
        command_line(&shell_row).is_some_and(|c| c.contains("bash")),
        "{shell_row}"
    );
    assert_eq!(busy_row["waiting_for_input"], false, "{busy_row}");
    // The busy pane was never recorded: what only its stream could say is left out.
    assert!(busy_row.get("idle_for_ms").is_none(), "{busy_row}");
    assert!(busy_row.get("at_prompt").is_none(), "{busy_row}");
    assert!(busy_row.get("agent_state").is_none(), "{busy_row}");

    // And as a filter: the panes waiting for input.
    let waiting = call_ok(
        &client,
        "list_panes",
        json!({"filters": {"waiting_for_input": true}}),
    )
    .await;
    let ids: Vec<&Value> = waiting["panes"]
        .as_array()
        .expect("panes")
        .iter()
        .map(|p| &p["id"])
        .collect();
    assert!(ids.contains(&&json!(shell)), "{waiting}");
    assert!(!ids.contains(&&json!(busy)), "{waiting}");
    tmux.ok(&["send-keys", "-t", &busy, "C-c"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_for_state_finds_text_in_the_new_lines_of_many_panes() {
    let tmux = TestTmux::start();
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let client = client(&gateway).await;
    let panes: Vec<String> = ["t0", "t1", "t2"]
        .iter()
        .map(|name| tmux.session_running(name, "env PS1='$ ' sh"))
        .collect();
    for pane in &panes {
        wait_for_screen(&tmux, pane, "$").await;
    }
    // Text already on a screen does not count: only lines printed after the call.
    type_line(&tmux, &panes[0], "echo BUILD OK");
    wait_for_screen(&tmux, &panes[0], "BUILD OK\n").await;
    type_line(&tmux, &panes[2], "sleep 0.5; echo 'build ok: 3 targets'");
    type_line(&tmux, &panes[1], "sleep 0.5; echo 'build failed'");
    let found = call_ok(
        &client,
        "wait_for_state",
        json!({"targets": panes, "condition": "text", "pattern": "build OK", "timeout": 10}),
    )
    .await;
    assert_eq!(found["outcome"], "reached", "{found}");
    let reached = found["reached"].as_array().unwrap();
    assert_eq!(reached.len(), 1, "{found}");
    assert_eq!(reached[0]["pane_id"], panes[2].as_str(), "{found}");
    assert_eq!(reached[0]["line"], "build ok: 3 targets", "{found}");
    assert!(reached[0]["after_ms"].as_u64().unwrap() >= 300, "{found}");

    let timeout = call_ok(
        &client,
        "wait_for_state",
        json!({"targets": [panes[0]], "condition": "text", "pattern": "BUILD OK", "timeout": 0.5}),
    )
    .await;
    assert_eq!(timeout["outcome"], "timeout", "{timeout}");

    for (args, message) in [
        (json!({"condition": "text"}), "needs a pattern"),
        (
            json!({"condition": "idle", "pattern": "x"}),
            "only for condition text",
        ),
        (json!({"condition": "text", "pattern": ""}), "empty"),
    ] {
        let refused = call_err(&client, "wait_for_state", args).await;
        assert_eq!(refused["kind"], "invalid_arguments", "{refused}");
        assert!(
            refused["message"].as_str().unwrap().contains(message),
            "{refused}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_screen_programs_are_seen_as_such() {
    let tmux = TestTmux::start();
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let client = client(&gateway).await;
    let pager = pane_running(&tmux, "pager", "env PS1='$ ' sh").await;
    let editor = pane_running(&tmux, "editor", "env PS1='$ ' sh").await;
    call_ok(&client, "get_pane_state", json!({"target": pager})).await;
    type_line(&tmux, &pager, "less /etc/passwd");
    type_line(&tmux, &editor, "vi -u NONE -n");

    // less blocks reading the terminal: it waits for a key, and says so.
    let less = state_until(&client, &pager, |s| s["alternate_screen"] == true).await;
    assert_eq!(
        less["foreground_command_line"], "less /etc/passwd",
        "{less}"
    );
    let waiting = call_ok(
        &client,
        "wait_for_state",
        json!({"targets": [pager], "condition": "waiting_for_input", "timeout": 10}),
    )
    .await;
    assert_eq!(waiting["outcome"], "reached", "{waiting}");
    let less = call_ok(&client, "get_pane_state", json!({"target": pager})).await;
    assert_eq!(less["blocked_in"], "read_terminal", "{less}");
    // vi polls its terminal (and timers): that is no evidence of waiting, so none is claimed.
    let vi = state_until(&client, &editor, |s| {
        s["alternate_screen"] == true && s["blocked_in"] == "poll"
    })
    .await;
    assert!(vi.get("waiting_for_input").is_none(), "{vi}");

    // Shell tools refuse a full-screen program; a text wait says what it sees.
    for pane in [&pager, &editor] {
        let refused = call_err(
            &client,
            "run_command",
            json!({"target": pane, "command": "true"}),
        )
        .await;
        assert!(
            refused["message"].as_str().unwrap().contains("full-screen"),
            "{refused}"
        );
    }
    tmux.ok(&["send-keys", "-t", &editor, "-l", "ihello"]);
    let text = call_ok(
        &client,
        "wait_for_text",
        json!({"target": editor, "patterns": ["hello"], "timeout": 1}),
    )
    .await;
    assert_eq!(text["outcome"], "alternate_screen", "{text}");

    // Back at the shell, the alternate screen goes. tmux learns the two apart (the terminal's
    // foreground process from the kernel, the screen from less's last output, which it may
    // not have parsed yet), so a state may briefly show the shell on the alternate screen;
    // the wait fails if the screen never comes back.
    tmux.ok(&["send-keys", "-t", &pager, "q"]);
    let back = state_until(&client, &pager, |s| {
        s["current_command"] == "sh" && s["alternate_screen"] == false
    })
    .await;
    assert_eq!(back["alternate_screen"], false, "{back}");
}
