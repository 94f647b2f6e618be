//! Waiting tools over MCP against a real tmux server: wait_for_text, wait_for_channel,
//! signal_channel.

mod common;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use common::tmux::TestTmux;
use common::tools::{
    assert_stalled_calls_end_at_their_own_timeout, call, call_err, call_ok, client,
    gateway_with_slow_commands, type_line, wait_for_screen,
};
use common::{config_with_server, spawn_gateway, wait_until, wait_until_async};
use muxgate_tmux::TmuxServer;
use serde_json::json;

/// Runs `action` once `server` has `count` live output subscriptions (the wait under test is
/// watching), so that output it causes cannot come too early.
async fn when_watched(server: &TmuxServer, count: usize, action: impl FnOnce()) {
    assert!(
        wait_until(Duration::from_secs(10), || server.output().subscriptions()
            >= count)
        .await,
        "the wait never subscribed"
    );
    action();
}

fn limited_config(socket: &str, waits: u32, max_wait_seconds: u32) -> muxgate::config::Config {
    let mut config = config_with_server("work", socket, false);
    config.limits.max_concurrent_waits = waits.try_into().unwrap();
    config.limits.max_wait_seconds = max_wait_seconds.try_into().unwrap();
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_for_text_sees_only_new_output() {
    let tmux = TestTmux::start();
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let client = client(&gateway).await;
    let pane = tmux.pane_id("main").to_string();

    type_line(&tmux, &pane, "echo OLD-$((1+1))");
    wait_for_screen(&tmux, &pane, "OLD-2").await;
    let stale = call_ok(
        &client,
        "wait_for_text",
        json!({"target": pane, "patterns": ["old-2"], "timeout": 1}),
    )
    .await;
    assert_eq!(stale["outcome"], "timeout", "{stale}");
    assert_eq!(stale["found"], false);
    assert_eq!(stale["effective_timeout"], 1.0);
    // Unless the screen is asked for: then the text already shown matches at once.
    let shown = call_ok(
        &client,
        "wait_for_text",
        json!({"target": pane, "patterns": ["old-2"], "include_screen": true, "timeout": 5}),
    )
    .await;
    assert_eq!(shown["outcome"], "matched", "{shown}");
    assert_eq!(shown["matched_line"], "OLD-2");
    assert!(shown["elapsed_ms"].as_u64().unwrap() < 4000, "{shown}");

    // The typed line shows `$((40+2))`; only the command's output says 42.
    let engine = gateway.engine.server("work").unwrap();
    let (found, ()) = tokio::join!(
        call_ok(
            &client,
            "wait_for_text",
            json!({"target": pane, "patterns": ["nope", "ready-42"], "timeout": 10}),
        ),
        when_watched(engine, 1, || type_line(
            &tmux,
            &pane,
            "echo READY-$((40+2)); echo after"
        )),
    );
    assert_eq!(found["outcome"], "matched", "{found}");
    assert_eq!(found["found"], true);
    assert_eq!(found["matched_line"], "READY-42");
    assert_eq!(found["matched_pattern"], "ready-42");
    assert_eq!(found["saw_new_output"], true);
    let tail: Vec<&str> = found["tail"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    assert!(tail.contains(&"READY-42"), "{tail:?}");
    assert!(found["elapsed_ms"].as_u64().unwrap() < 10_000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_for_text_stop_any_output_and_regex() {
    let tmux = TestTmux::start();
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let client = client(&gateway).await;
    let pane = tmux.pane_id("main").to_string();

    let engine = gateway.engine.server("work").unwrap();

    // Stop patterns are checked first, even when a success line arrives in the same burst.
    let (stopped, ()) = tokio::join!(
        call_ok(
            &client,
            "wait_for_text",
            json!({"target": pane, "patterns": ["done"], "stop": ["error"], "timeout": 10}),
        ),
        when_watched(engine, 1, || type_line(
            &tmux,
            &pane,
            "echo \"err\"\"or: boom\"; echo do\"\"ne"
        )),
    );
    assert_eq!(stopped["outcome"], "stopped", "{stopped}");
    assert_eq!(stopped["found"], false);
    assert_eq!(stopped["matched_line"], "error: boom");
    assert_eq!(stopped["matched_pattern"], "error");
    wait_for_screen(&tmux, &pane, "done").await;

    // Any output: the command waits for a line read without echo (once it says so), so the
    // first new visible text is its own output.
    type_line(
        &tmux,
        &pane,
        "stty -echo; echo no-e''cho; read x; stty echo; echo h\"\"i-there",
    );
    wait_for_screen(&tmux, &pane, "no-echo").await;
    let (any, ()) = tokio::join!(
        call_ok(
            &client,
            "wait_for_text",
            json!({"target": pane, "patterns": null, "timeout": 10}),
        ),
        when_watched(engine, 1, || type_line(&tmux, &pane, "go")),
    );
    assert_eq!(any["outcome"], "any_output", "{any}");
    assert_eq!(any["matched_line"], "hi-there");
    assert_eq!(any["found"], false);
    wait_for_screen(&tmux, &pane, "hi-there\n").await;

    let (regex, ()) = tokio::join!(
        call_ok(
            &client,
            "wait_for_text",
            json!({"target": pane, "patterns": ["^Value=\\d+$"], "regex": true,
                   "match_case": true, "timeout": 10}),
        ),
        when_watched(engine, 1, || type_line(
            &tmux,
            &pane,
            "echo value=7; echo Value=17"
        )),
    );
    assert_eq!(regex["outcome"], "matched", "{regex}");
    assert_eq!(regex["matched_line"], "Value=17");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_for_text_reports_exits_and_full_screen_programs() {
    let tmux = TestTmux::start();
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let client = client(&gateway).await;
    let engine = gateway.engine.server("work").unwrap();
    // Each program below waits for a line of input before it does what the wait is to see, and
    // gets it once the wait watches: the exit or the switch of screen happens during the wait,
    // however long the wait takes to start.
    let go = |pane: &str| {
        tmux.ok(&["send-keys", "-t", pane, "Enter"]);
    };

    // A program that exits in a pane kept open: its status comes from tmux itself.
    let kept = tmux
        .ok(&[
            "new-window",
            "-d",
            "-t",
            "main",
            "-P",
            "-F",
            "#{pane_id}",
            "read _; exit 3",
        ])
        .trim()
        .to_owned();
    tmux.ok(&["set-option", "-p", "-t", &kept, "remain-on-exit", "on"]);
    let (exited, ()) = tokio::join!(
        call_ok(
            &client,
            "wait_for_text",
            json!({"target": kept, "patterns": ["never"], "timeout": 60}),
        ),
        when_watched(engine, 1, || go(&kept)),
    );
    assert_eq!(exited["outcome"], "pane_exited", "{exited}");
    // tmux 3.3a now and then never records a dead pane's status; muxgate reports what it has.
    let known = tmux.ok(&["display-message", "-p", "-t", &kept, "#{pane_dead_status}"]);
    // A wait on a pane already dead answers at once, with how its program ended.
    let again = call_ok(
        &client,
        "wait_for_text",
        json!({"target": kept, "patterns": ["never"], "timeout": 60}),
    )
    .await;
    for answer in [&exited, &again] {
        assert_eq!(answer["outcome"], "pane_exited", "{answer}");
        match known.trim().parse::<i64>() {
            Ok(status) => assert_eq!(answer["pane_exit_status"], status, "{answer}"),
            Err(_) => assert!(answer["pane_exit_status"].is_null(), "{answer}"),
        }
    }

    // A pane that closes.
    let closing = tmux
        .ok(&[
            "new-window",
            "-d",
            "-t",
            "main",
            "-P",
            "-F",
            "#{pane_id}",
            "read _",
        ])
        .trim()
        .to_owned();
    let (closed, ()) = tokio::join!(
        call_ok(
            &client,
            "wait_for_text",
            json!({"target": closing, "patterns": ["never"], "timeout": 60}),
        ),
        when_watched(engine, 1, || go(&closing)),
    );
    assert_eq!(closed["outcome"], "pane_exited", "{closed}");
    assert!(closed["pane_exit_status"].is_null());

    // A full-screen program: text on the alternate screen is not matched line by line. It
    // draws at once when told to (it is already reading), and stays until the wait is over.
    let pane = tmux.pane_id("main").to_string();
    type_line(
        &tmux,
        &pane,
        "read _; printf '\\033[?1049hre''ady\\r\\n'; read _; printf '\\033[?1049l'",
    );
    let (alt, ()) = tokio::join!(
        call_ok(
            &client,
            "wait_for_text",
            json!({"target": pane, "patterns": ["ready"], "timeout": 5}),
        ),
        when_watched(engine, 1, || go(&pane)),
    );
    assert_eq!(alt["outcome"], "alternate_screen", "{alt}");
    assert_eq!(alt["alternate_screen"], true);
    assert_eq!(alt["found"], false);
    go(&pane);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_for_text_refuses_bad_input() {
    let tmux = TestTmux::start();
    tmux.ok(&["new-session", "-d", "-s", "ci-build"]);
    let gateway = spawn_gateway(limited_config(&tmux.socket, 4, 2)).await;
    let client = client(&gateway).await;
    let pane = tmux.pane_id("main").to_string();

    let unknown = call_err(
        &client,
        "wait_for_text",
        json!({"target": pane, "bogus": 1}),
    )
    .await;
    assert_eq!(unknown["kind"], "invalid_arguments");
    assert!(
        unknown["message"].as_str().unwrap().contains("bogus"),
        "{unknown}"
    );

    let missing_target = call_err(&client, "wait_for_text", json!({"patterns": ["x"]})).await;
    assert!(
        missing_target["message"]
            .as_str()
            .unwrap()
            .contains("target")
    );

    for (args, kind, needle) in [
        (
            json!({"target": "main:{last}"}),
            "invalid_arguments",
            "main:{last}",
        ),
        (json!({"target": "%999"}), "not_found", "%999"),
        (
            json!({"target": pane, "patterns": []}),
            "invalid_arguments",
            "empty list",
        ),
        (
            json!({"target": pane, "patterns": ["a", ""]}),
            "invalid_arguments",
            "pattern 1",
        ),
        (
            json!({"target": pane, "patterns": ["("], "regex": true}),
            "invalid_arguments",
            "regular expression",
        ),
        (
            json!({"target": pane, "stop": ["("], "regex": true}),
            "invalid_arguments",
            "stop",
        ),
        (
            json!({"target": pane, "timeout": -1}),
            "invalid_arguments",
            "timeout",
        ),
    ] {
        let error = call_err(&client, "wait_for_text", args.clone()).await;
        assert_eq!(error["kind"], kind, "{args}: {error}");
        assert!(
            error["message"].as_str().unwrap().contains(needle),
            "{args}: {error}"
        );
    }

    // Longer timeouts are clamped to the client's max_wait_seconds (2 here), not refused.
    let started = Instant::now();
    let clamped = call_ok(
        &client,
        "wait_for_text",
        json!({"target": pane, "patterns": ["never"], "timeout": 300}),
    )
    .await;
    assert_eq!(clamped["effective_timeout"], 2.0);
    assert_eq!(clamped["outcome"], "timeout");
    assert!(started.elapsed() < Duration::from_secs(30));

    // A pane in a session the caller may not see looks exactly like a missing one.
    let token = common::tools::session_limited_token(&gateway, "ci", &["mux:read"], &["ci-*"]);
    let limited = common::tools::client_with(&gateway, &token).await;
    let hidden = call_err(&limited, "wait_for_text", json!({"target": pane})).await;
    assert_eq!(hidden["kind"], "not_found", "{hidden}");
    let visible_pane = tmux.pane_id("ci-build").to_string();
    let ok = call_ok(
        &limited,
        "wait_for_text",
        json!({"target": visible_pane, "timeout": 0.2}),
    )
    .await;
    assert_eq!(ok["outcome"], "timeout");
}

/// CPU time (user + system, in clock ticks) the process `pid` has used.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("read /proc stat");
    // Fields after the command name (which may contain spaces) start after the last ')'.
    let rest = &stat[stat.rfind(')').expect("comm") + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    // utime and stime are fields 14 and 15 of stat, i.e. 11 and 12 after the state field.
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

/// A wait that idles costs tmux nothing: a 5 s wait sends the same commands and opens the same
/// connections as a 0.2 s one (its set-up: resolving, subscribing, reading the pane's state),
/// counted from before each wait starts to after it ends, so that no part of a set-up slowed
/// down by a loaded machine can fall outside the count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_wait_sends_tmux_nothing() {
    let tmux = TestTmux::start();
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let client = client(&gateway).await;
    let pane = tmux.pane_id("main").to_string();
    let server_pid: u32 = tmux
        .ok(&["display-message", "-p", "#{pid}"])
        .trim()
        .parse()
        .unwrap();
    let engine = gateway.engine.server("work").unwrap().clone();
    let counts = || {
        (
            engine
                .worker()
                .stats()
                .commands_sent
                .load(Ordering::Relaxed),
            engine.output().stats().connects.load(Ordering::Relaxed),
        )
    };
    let wait = |timeout: f64| {
        call_ok(
            &client,
            "wait_for_text",
            json!({"target": pane, "patterns": ["never"], "timeout": timeout}),
        )
    };

    // The first wait attaches the output connection and links the pane's window.
    assert_eq!(wait(0.1).await["outcome"], "timeout");
    let before = counts();
    assert_eq!(wait(0.2).await["outcome"], "timeout");
    let after = counts();
    let short = (after.0 - before.0, after.1 - before.1);
    let cpu = cpu_ticks(server_pid);
    let before = counts();
    let long = wait(5.0).await;
    let after = counts();
    let cpu = cpu_ticks(server_pid) - cpu;
    assert_eq!(long["outcome"], "timeout", "{long}");
    assert!(short.0 > 0, "the set-up asks tmux something");
    assert_eq!(
        (after.0 - before.0, after.1 - before.1),
        short,
        "(commands, connections) of a 5 s wait against a 0.2 s one"
    );
    // tmux's own once-a-second format checks cost it a little; polling would cost far more.
    eprintln!("tmux server CPU during a 5 s idle wait: {cpu} ticks");
    assert!(
        cpu < 50,
        "tmux server used {cpu} ticks while the wait idled"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_wait_frees_its_slot_and_subscription() {
    let tmux = TestTmux::start();
    let gateway = spawn_gateway(limited_config(&tmux.socket, 1, 120)).await;
    let client = client(&gateway).await;
    let pane = tmux.pane_id("main").to_string();
    let engine = gateway.engine.server("work").unwrap().clone();

    let long_wait = call(
        &client,
        "wait_for_text",
        json!({"target": pane, "patterns": ["never"], "timeout": 60}),
    );
    let while_waiting = async {
        assert!(
            wait_until(Duration::from_secs(5), || engine.output().subscriptions()
                == 1)
            .await
        );
        // The only slot is taken: a second wait is refused.
        call_err(
            &client,
            "wait_for_text",
            json!({"target": pane, "timeout": 0.1}),
        )
        .await
    };
    // Dropping the call future makes rmcp's client send notifications/cancelled.
    let busy = tokio::select! {
        _ = long_wait => panic!("the long wait ended by itself"),
        busy = while_waiting => busy,
    };
    assert_eq!(busy["kind"], "busy", "{busy}");
    assert!(
        wait_until(Duration::from_secs(5), || engine.output().subscriptions()
            == 0)
        .await,
        "the cancelled wait kept its subscription"
    );
    // Its slot is free again.
    let mut freed = false;
    for _ in 0..50 {
        let result = call(
            &client,
            "wait_for_text",
            json!({"target": pane, "timeout": 0.1}),
        )
        .await;
        if result.is_error == Some(false) {
            freed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(freed, "the cancelled wait kept its slot");
}

/// A wait whose tmux server stops answering before the wait could begin still ends at its own
/// timeout, with a timeout error (not after the engine's command timeout).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_on_a_stalled_server_ends_at_its_own_timeout() {
    let tmux = TestTmux::start();
    let (_gateway, client) = gateway_with_slow_commands(&tmux).await;
    let pane = tmux.pane_id("main").to_string();
    assert_stalled_calls_end_at_their_own_timeout(
        &client,
        &tmux,
        &pane,
        "wait_for_text",
        |target| json!({"target": target, "patterns": ["never"], "timeout": 1}),
    )
    .await;

    // Once the server answers again, waits work.
    let resumed = call_ok(
        &client,
        "wait_for_text",
        json!({"target": pane, "patterns": ["never"], "timeout": 0.5}),
    )
    .await;
    assert_eq!(resumed["outcome"], "timeout", "{resumed}");
}

/// Calls `tool` over raw HTTP (with `progressToken` when `token` is given); returns the
/// progress notifications the answer's stream carried, and the result.
async fn call_with_progress(
    mcp: &common::RawMcp,
    id: u64,
    tool: &str,
    arguments: serde_json::Value,
    token: Option<&str>,
) -> (Vec<serde_json::Value>, serde_json::Value) {
    let mut params = json!({"name": tool, "arguments": arguments});
    if let Some(token) = token {
        params["_meta"] = json!({"progressToken": token});
    }
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
    let (progress, response) = common::call_with_progress(mcp, id, &body).await;
    (progress, response["result"]["structuredContent"].clone())
}

/// A waiting call of a client that sent a progressToken hears from the gateway every
/// `http.progress_interval_secs` while it waits (so clients that reset their timeout on
/// progress keep waiting); a call that ends sooner, or without a token, gets none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_wait_sends_progress_to_clients_that_asked() {
    let tmux = TestTmux::start();
    let mut config = config_with_server("work", &tmux.socket, false);
    config.http.progress_interval_secs = 1;
    let gateway = spawn_gateway(config).await;
    let mut mcp = gateway.raw();
    mcp.initialize().await;
    let pane = tmux.pane_id("main").to_string();
    let wait =
        |timeout: f64| json!({"target": pane, "patterns": ["never-printed"], "timeout": timeout});

    let (progress, result) =
        call_with_progress(&mcp, 2, "wait_for_text", wait(3.5), Some("w2")).await;
    assert_eq!(result["outcome"], "timeout", "{result}");
    assert!((2..=4).contains(&progress.len()), "{progress:?}");
    let mut last = 0.0;
    for note in &progress {
        let params = &note["params"];
        assert_eq!(params["progressToken"], "w2");
        let value = params["progress"].as_f64().unwrap();
        assert!(value > last, "progress increases: {progress:?}");
        last = value;
        assert_eq!(params["total"], 4.0, "{params}");
        let message = params["message"].as_str().unwrap();
        assert!(
            message.starts_with(&format!("wait_for_text on {pane}: still waiting after ")),
            "{message}"
        );
        assert!(message.contains("s left"), "{message}");
    }

    let (progress, _) = call_with_progress(&mcp, 3, "wait_for_text", wait(2.5), None).await;
    assert!(progress.is_empty(), "no token, no progress: {progress:?}");
    let (progress, _) = call_with_progress(&mcp, 4, "wait_for_text", wait(0.5), Some("w4")).await;
    assert!(progress.is_empty(), "a short wait sends none: {progress:?}");
}

/// wait_for_state keeps to the limits wait_for_text keeps to: its timeout is clamped to the
/// client's max_wait_seconds, it holds one of the client's wait slots, and a client that sent a
/// progressToken hears from it while it waits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_wait_keeps_to_the_wait_limits_and_sends_progress() {
    let tmux = TestTmux::start();
    let mut config = limited_config(&tmux.socket, 1, 3);
    config.http.progress_interval_secs = 1;
    let gateway = spawn_gateway(config).await;
    let mut mcp = gateway.raw();
    mcp.initialize().await;
    let pane = tmux.pane_id("main").to_string();
    let quiet = |timeout: f64| json!({"targets": [pane], "condition": "idle", "idle_ms": 600_000, "timeout": timeout});

    // Asked for 300 s, waits the client's 3.
    let (progress, result) =
        call_with_progress(&mcp, 2, "wait_for_state", quiet(300.0), Some("s2")).await;
    assert_eq!(result["outcome"], "timeout", "{result}");
    let waited = result["waited_ms"].as_u64().expect("waited_ms");
    assert!((2_900..10_000).contains(&waited), "{result}");
    assert!((2..=4).contains(&progress.len()), "{progress:?}");
    for note in &progress {
        let params = &note["params"];
        assert_eq!(params["progressToken"], "s2");
        assert_eq!(params["total"], 3.0, "{params}");
        let message = params["message"].as_str().expect("message");
        assert!(
            message.starts_with("wait_for_state: still waiting after "),
            "{message}"
        );
    }

    // One slot: a second wait while the first runs is refused at once. The first waits for a
    // line only the test prints, after the refusal (on a gateway whose clients may wait long,
    // so that no timeout ends it first; a tmux server of its own, which no other gateway
    // watches).
    let tmux = TestTmux::start();
    let pane = tmux.pane_id("main").to_string();
    let quiet = |timeout: f64| json!({"targets": [pane], "condition": "idle", "idle_ms": 600_000, "timeout": timeout});
    let gateway = spawn_gateway(limited_config(&tmux.socket, 1, 120)).await;
    let client = client(&gateway).await;
    let text =
        json!({"targets": [pane], "condition": "text", "pattern": "slot-0-free", "timeout": 60});
    let (first, refused) = tokio::join!(call_ok(&client, "wait_for_state", text), async {
        assert!(
            wait_until_async(Duration::from_secs(30), || async {
                common::probe::metric(&gateway.base, "muxgate_waits_active").await == 1.0
            })
            .await,
            "the first wait never took its slot"
        );
        let refused = call_err(&client, "wait_for_state", quiet(2.0)).await;
        // The line, again until the wait has seen it: the pane's window is linked into the
        // watch session some time after the wait takes its slot.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            type_line(&tmux, &pane, "echo slot-$((0))-free");
            let over = wait_until_async(Duration::from_secs(1), || async {
                common::probe::metric(&gateway.base, "muxgate_waits_active").await == 0.0
            })
            .await;
            if over {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the first wait never saw its line"
            );
        }
        refused
    });
    assert_eq!(refused["kind"], "busy", "{refused}");
    assert_eq!(first["outcome"], "reached", "{first}");
}

/// Send, then wait, as the tool descriptions teach: output printed before the wait starts
/// counts when the wait is given the send's `output_position`, and the echo of the typed
/// command never matches, for a command that prints at once and one that prints later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_since_an_input_sees_fast_output_and_ignores_the_echo() {
    let tmux = TestTmux::start();
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let client = client(&gateway).await;
    let pane = tmux.pane_id("main").to_string();

    // Prints at once: the output is on screen before the wait begins.
    let sent = call_ok(
        &client,
        "send_keys",
        json!({"target": pane, "keys": "printf 'FAST-%s\\n' OUT", "enter": true}),
    )
    .await;
    let position = sent["output_position"]
        .as_str()
        .expect("a position")
        .to_owned();
    wait_for_screen(&tmux, &pane, "FAST-OUT").await;
    let without = call_ok(
        &client,
        "wait_for_text",
        json!({"target": pane, "patterns": ["FAST-OUT"], "timeout": 1}),
    )
    .await;
    assert_eq!(
        without["outcome"], "timeout",
        "the race this fixes: {without}"
    );
    let with = call_ok(
        &client,
        "wait_for_text",
        json!({"target": pane, "patterns": ["FAST-OUT"], "since": position, "timeout": 5}),
    )
    .await;
    assert_eq!(with["outcome"], "matched", "{with}");
    assert_eq!(with["matched_line"], "FAST-OUT");

    // Prints after a second: the echo (`...; echo SLOW-DONE`) is on screen at once.
    let sent = call_ok(
        &client,
        "send_keys",
        json!({"target": pane, "keys": "sleep 1; echo SLOW-DONE", "enter": true}),
    )
    .await;
    let position = sent["output_position"]
        .as_str()
        .expect("a position")
        .to_owned();
    let waited = call_ok(
        &client,
        "wait_for_text",
        json!({"target": pane, "patterns": ["SLOW-DONE"], "since": position, "timeout": 10}),
    )
    .await;
    assert_eq!(waited["outcome"], "matched", "{waited}");
    // The echo's line holds `sleep 1; echo SLOW-DONE`: only the output is the line alone.
    assert_eq!(waited["matched_line"], "SLOW-DONE", "{waited}");

    // A position is its pane's: another pane's wait refuses it.
    let other = tmux.split("main").to_string();
    let refused = call_err(
        &client,
        "wait_for_text",
        json!({"target": other, "patterns": ["x"], "since": position, "timeout": 1}),
    )
    .await;
    assert!(
        refused["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("since: it was made for %")),
        "{refused}"
    );
    let garbage = call_err(
        &client,
        "wait_for_text",
        json!({"target": pane, "patterns": ["x"], "since": "p.nonsense"}),
    )
    .await;
    assert!(garbage.to_string().contains("output_position"), "{garbage}");
}

/// `send_keys_batch` gives each pane it typed into a position, read in the same write as the
/// input: fast output counts, the echo of everything typed into that pane does not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keys_batch_gives_each_pane_a_position_to_wait_since() {
    let tmux = TestTmux::start();
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let client = client(&gateway).await;
    let first = tmux.pane_id("main").to_string();
    let second = tmux.split("main").to_string();

    let sent = call_ok(
        &client,
        "send_keys_batch",
        json!({"operations": [
            {"target": first, "keys": "printf 'A-%s\\n' FAST", "enter": true},
            {"target": second, "keys": "sleep 1; echo B-SLOW", "enter": true},
            {"target": first, "keys": "echo A-SECOND", "enter": true},
        ]}),
    )
    .await;
    assert_eq!(sent["succeeded"], 3, "{sent}");
    let positions = sent["output_positions"].as_object().expect("positions");
    assert_eq!(positions.len(), 2, "one per pane: {sent}");
    let since = |pane: &str| positions[pane].as_str().expect("a position").to_owned();

    wait_for_screen(&tmux, &first, "A-SECOND").await;
    // The second command was typed ahead: sh runs it after its next prompt, so its output may
    // share the prompt's line; the echo lines hold `printf`/`echo`.
    for pattern in ["A-FAST", "A-SECOND"] {
        let seen = call_ok(
            &client,
            "wait_for_text",
            json!({"target": first, "patterns": [pattern], "since": since(&first), "timeout": 5}),
        )
        .await;
        assert_eq!(seen["outcome"], "matched", "{seen}");
        let line = seen["matched_line"].as_str().expect("a line");
        assert!(
            line.ends_with(pattern) && !line.contains("echo") && !line.contains("printf"),
            "the echo matched: {seen}"
        );
    }
    let slow = call_ok(
        &client,
        "wait_for_text",
        json!({"target": second, "patterns": ["B-SLOW"], "since": since(&second), "timeout": 10}),
    )
    .await;
    assert_eq!(slow["outcome"], "matched", "{slow}");
    // Not the echo's line (`sleep 1; echo B-SLOW`).
    assert_eq!(slow["matched_line"], "B-SLOW", "{slow}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_wait_after_its_send_does_not_match_the_echo() {
    let tmux = TestTmux::start();
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let client = client(&gateway).await;
    let pane = tmux.pane_id("main").to_string();
    for command in ["echo BATCH-FAST", "sleep 1; echo BATCH-SLOW"] {
        let marker = command.rsplit(' ').next().unwrap();
        let batch = call_ok(
            &client,
            "pane_batch",
            json!({"operations": [
                {"op": "send_keys", "target": pane, "keys": command, "enter": true},
                {"op": "wait_for_text", "target": pane, "patterns": [marker], "timeout": 10},
            ]}),
        )
        .await;
        let wait = &batch["results"][1];
        assert_eq!(wait["result"]["outcome"], "matched", "{batch}");
        // The line alone: the echo's holds the command typed.
        assert_eq!(wait["result"]["matched_line"], marker, "{batch}");
    }
}

/// A call still running keeps its answer's stream alive with SSE comments every
/// `http.progress_interval_secs`, progress token or not, so that clients with short read
/// timeouts and proxies do not drop it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_call_keeps_its_stream_alive() {
    let tmux = TestTmux::start();
    let mut config = config_with_server("work", &tmux.socket, false);
    config.http.progress_interval_secs = 1;
    let gateway = spawn_gateway(config).await;
    let mut mcp = gateway.raw();
    mcp.initialize().await;
    let pane = tmux.pane_id("main").to_string();
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {
        "name": "wait_for_text",
        "arguments": {"target": pane, "patterns": ["never-printed"], "timeout": 2.5}}});
    let text = mcp
        .post(&body)
        .send()
        .await
        .expect("POST")
        .text()
        .await
        .expect("body");
    let answer_at = text.find("\"id\":9").expect("the answer");
    let keep_alives =
        text[..answer_at].matches("\n:\n").count() + usize::from(text.starts_with(":\n"));
    assert!(keep_alives >= 1, "no keep-alive before the answer:\n{text}");
}

/// However many waits start at once, a server's watched sessions stay within their cap and
/// share one output connection: waits beyond the cap are refused at once as busy, the others
/// are watched, wait and end at their deadline (queued links count against it), and the tmux
/// server keeps answering.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_storm_of_waits_stays_within_the_cap_and_its_deadlines() {
    const SESSIONS: usize = 48;
    const CAP: usize = 32;
    let tmux = TestTmux::start();
    let panes: Vec<String> = (0..SESSIONS)
        .map(|i| tmux.session_running(&format!("storm-{i}"), "sh"))
        .collect();
    let mut config = limited_config(&tmux.socket, 64, 60);
    config.engine.max_watched_sessions = CAP;
    let gateway = spawn_gateway(common::relaxed(config)).await;
    let client = client(&gateway).await;

    let started = Instant::now();
    let results = futures::future::join_all(panes.iter().map(|pane| {
        call(
            &client,
            "wait_for_text",
            json!({"target": pane, "patterns": ["never-printed"], "timeout": 3}),
        )
    }))
    .await;
    let elapsed = started.elapsed();
    let (mut waited, mut busy) = (0, 0);
    for result in results {
        if result.is_error == Some(true) {
            let error = common::tools::err(result);
            assert_eq!(error["kind"], "busy", "{error}");
            busy += 1;
        } else {
            let answer = common::tools::ok(result);
            assert_eq!(answer["outcome"], "timeout", "{answer}");
            waited += 1;
        }
    }
    assert_eq!((waited, busy), (CAP, SESSIONS - CAP));
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
    // The server is alive, with the gateway's command client and its one output client.
    let sessions = tmux.ok(&["list-sessions", "-F", "#{session_name}"]);
    let real = sessions.lines().filter(|s| *s != "_muxgate").count();
    assert_eq!(real, SESSIONS + 1, "{sessions}");
    let clients = tmux.ok(&["list-clients", "-F", "#{client_name}"]);
    assert!(clients.lines().count() <= 2, "{clients}");
}

/// A `tmux` that pipes every client's output through a relay (`cat`) whose pid it appends to
/// `dir/relays`: stopping the relays stops the gateway reading, as a slow reader would.
fn relayed_tmux(dir: &std::path::Path) -> std::path::PathBuf {
    let relays = dir.join("relays");
    let script = format!(
        "tmux \"$@\" | sh -c 'echo $$ >> \"$0\"; exec cat' '{}'",
        relays.display()
    );
    common::tmux::tmux_wrapper(dir, &script)
}

/// tmux pauses a pane whose output a control client has not taken for `pause-after` seconds,
/// dropping it (`%pause`). Here the gateway stops reading while the pane floods: tmux pauses
/// the pane, the gateway resumes it as soon as it reads on, marks the gap, and a wait begun
/// before the flood still sees the line printed after the resume.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pane_tmux_paused_in_a_flood_is_resumed_and_waits_see_what_follows() {
    let tmux = TestTmux::start();
    let pane = tmux.session_running("flood", "env PS1='$ ' sh");
    wait_for_screen(&tmux, &pane, "$").await;
    let dir = tempfile::tempdir().unwrap();
    let mut config = config_with_server("work", &tmux.socket, false);
    config.engine.pause_after_secs = 1;
    config.engine.tmux_bin = relayed_tmux(dir.path());
    let gateway = spawn_gateway(config).await;
    let client = client(&gateway).await;
    let engine = gateway.engine.server("work").unwrap();
    let relays = dir.path().join("relays");
    // Relays of tmux runs that have ended (a version check) are gone: only live ones take the
    // signal.
    let signal = |name: &str| {
        for pid in std::fs::read_to_string(&relays).unwrap().split_whitespace() {
            let _ = std::process::Command::new("kill")
                .args([name, pid])
                .stderr(std::process::Stdio::null())
                .status();
        }
    };
    let stats = engine.output().stats();

    let flood_then_resume = async {
        assert!(
            wait_until(Duration::from_secs(10), || engine.output().subscriptions()
                >= 1)
            .await,
            "the wait never subscribed"
        );
        // The pane's output reaches the gateway (its window is linked into the watch session
        // some time after the wait subscribes): a no-op command's echo is read.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let read = stats.bytes_read.load(Ordering::Relaxed);
            type_line(&tmux, &pane, ":");
            let streamed = wait_until(Duration::from_secs(1), || {
                stats.bytes_read.load(Ordering::Relaxed) > read
            })
            .await;
            if streamed {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the pane's output never reached the gateway"
            );
        }
        signal("-STOP");
        // The flood lasts longer than pause-after, all of it while the gateway reads nothing;
        // the line the wait looks for waits for a line of input.
        type_line(
            &tmux,
            &pane,
            "timeout 2.5 yes flood; echo flood-$((0))-over; read _; echo after-$((1+1))-resume",
        );
        let over = wait_until(Duration::from_secs(60), || {
            common::tools::screen(&tmux, &pane).contains("flood-0-over")
        })
        .await;
        assert!(over, "the flood never ended");
        signal("-CONT");
        // The gateway reads on; tmux pauses the pane when it next has output for it (a key's
        // echo: the pane reads a line) and finds the flood still unread after pause-after; the
        // gateway finds the `%pause` and asks tmux to resume the pane...
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            tmux.ok(&["send-keys", "-t", &pane, "-l", "x"]);
            let paused = wait_until(Duration::from_secs(1), || {
                stats.pauses.load(Ordering::Relaxed) >= 1
            })
            .await;
            if paused {
                break;
            }
            assert!(Instant::now() < deadline, "tmux never paused the pane");
        }
        // ...which it has done once the pane's output reaches the gateway again (every key
        // typed is echoed; echoes before the resume are dropped by tmux, hence the retries).
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let read = stats.bytes_read.load(Ordering::Relaxed);
            tmux.ok(&["send-keys", "-t", &pane, "-l", "x"]);
            let resumed = wait_until(Duration::from_secs(1), || {
                stats.bytes_read.load(Ordering::Relaxed) > read
            })
            .await;
            if resumed {
                break;
            }
            assert!(Instant::now() < deadline, "the pane was never resumed");
        }
        tmux.ok(&["send-keys", "-t", &pane, "Enter"]);
    };
    let (found, ()) = tokio::join!(
        call_ok(
            &client,
            "wait_for_text",
            json!({"target": pane, "patterns": ["after-2-resume"], "timeout": 120}),
        ),
        flood_then_resume,
    );
    assert_eq!(found["outcome"], "matched", "{found}");
    // Text on both sides of the gap is never joined into one line.
    assert_eq!(found["matched_line"], "after-2-resume", "{found}");
    assert_eq!(found["resynced"], true, "{found}");
}
