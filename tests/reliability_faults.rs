//! Faults under load, against real tmux servers and real HTTP: the tmux server killed while 32
//! agents call tools, a pane killed under a wait or a run_command, sessions killed under their output
//! connection, and clients that hang up in the middle of a call. Every call must return, the
//! gateway must stay up and nothing may leak (control clients, subscriptions, wait slots).

mod common;

use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::calls::{Client, legacy};
use common::probe::metric;
use common::tmux::TestTmux;
use common::tools::{call, call_ok, client, type_line, wait_for_screen};
use common::{
    STATELESS_VERSION, TestGateway, config_with_server, response_message, spawn_gateway,
    stateless_meta, wait_until,
};
use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};

const AGENTS: usize = 32;
/// The engine's command timeout in these tests; a wait lasts at most 1 s more.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(5);
/// Longer than any call may take: its own timeout plus a generous margin for a loaded machine.
const CALL_DEADLINE: Duration = Duration::from_secs(20);

fn config(socket: &str) -> muxgate::config::Config {
    let mut config = config_with_server("work", socket, true);
    config.engine.command_timeout_ms = COMMAND_TIMEOUT.as_millis() as u64;
    config.engine.output_idle_close_secs = 1;
    config
}

/// One agent's call, by turn: reads, a write, and a short wait, all on session `main` (its
/// pane ids change when the server is restarted; the session name does not).
fn agent_call(agent: usize, turn: usize) -> (&'static str, Value) {
    match (agent + turn) % 4 {
        0 => ("list_sessions", json!({})),
        1 => ("capture_pane", json!({"target": "main"})),
        2 => (
            "send_keys",
            json!({"target": "main", "keys": "true", "literal": true}),
        ),
        _ => (
            "wait_for_text",
            json!({"target": "main", "patterns": ["never-printed"], "timeout": 1}),
        ),
    }
}

/// Calls `name` and says whether it succeeded; a transport-level error counts as a failure.
/// Panics when the call does not return within [`CALL_DEADLINE`].
async fn returns_in_time(client: &Client, name: &str, args: Value) -> bool {
    let params = CallToolRequestParams::new(name.to_owned())
        .with_arguments(args.as_object().expect("object").clone());
    match tokio::time::timeout(CALL_DEADLINE, client.call_tool(params)).await {
        Ok(Ok(result)) => result.is_error == Some(false),
        Ok(Err(_)) => false,
        Err(_) => panic!("{name} {args} did not return within {CALL_DEADLINE:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tmux_server_killed_under_32_agents() {
    let tmux = TestTmux::start();
    let gateway = spawn_gateway(config(&tmux.socket)).await;
    let mut clients = Vec::new();
    for i in 0..AGENTS {
        let token = gateway.mint(
            &format!("agent-{i}"),
            &["mux:read", "mux:write", "mux:admin"],
        );
        clients.push(legacy(&gateway, &token).await);
    }

    let stop = Arc::new(AtomicBool::new(false));
    let down_at: Arc<OnceLock<Instant>> = Arc::new(OnceLock::new());
    let back_at: Arc<OnceLock<Instant>> = Arc::new(OnceLock::new());
    // Agents with a call that succeeded, one that failed after the kill, one that succeeded
    // after the restart.
    let (served, saw_down, recovered) = (
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicUsize::new(0)),
    );
    let mut agents = Vec::new();
    for (agent, client) in clients.into_iter().enumerate() {
        let (stop, down_at, back_at) = (stop.clone(), down_at.clone(), back_at.clone());
        let (served, saw_down, recovered) = (served.clone(), saw_down.clone(), recovered.clone());
        agents.push(tokio::spawn(async move {
            let (mut ok, mut failed, mut is_back, mut was_down) = (0usize, 0usize, false, false);
            let mut turn = 0;
            while !stop.load(Ordering::Relaxed) {
                let (name, args) = agent_call(agent, turn);
                turn += 1;
                let started = Instant::now();
                if returns_in_time(&client, name, args).await {
                    ok += 1;
                    if ok == 1 {
                        served.fetch_add(1, Ordering::Relaxed);
                    }
                    if !is_back && back_at.get().is_some_and(|at| started > *at) {
                        is_back = true;
                        recovered.fetch_add(1, Ordering::Relaxed);
                    }
                } else {
                    failed += 1;
                    if !was_down && down_at.get().is_some_and(|at| started > *at) {
                        was_down = true;
                        saw_down.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            (ok, failed, client)
        }));
    }

    assert!(
        wait_until(Duration::from_secs(30), || served.load(Ordering::Relaxed)
            == AGENTS)
        .await,
        "only {} of {AGENTS} agents were served before the kill",
        served.load(Ordering::Relaxed)
    );
    let server = gateway.engine.server("work").expect("configured").clone();
    let sent_before_kill = server
        .worker()
        .stats()
        .commands_sent
        .load(Ordering::Relaxed);
    // The tmux helpers block; keep the runtime's other thread serving the gateway meanwhile.
    down_at.set(Instant::now()).expect("set once");
    tokio::task::block_in_place(|| tmux.kill_server());
    // Down until every agent has had a call fail.
    let all_down = wait_until(Duration::from_secs(30), || {
        saw_down.load(Ordering::Relaxed) == AGENTS
    })
    .await;
    tokio::task::block_in_place(|| tmux.start_again());
    back_at.set(Instant::now()).expect("set once");

    let all_back = wait_until(Duration::from_secs(30), || {
        recovered.load(Ordering::Relaxed) == AGENTS
    })
    .await;
    stop.store(true, Ordering::Relaxed);
    let mut totals = (0, 0);
    let mut clients = Vec::new();
    for agent in agents {
        let (ok, failed, client) = agent.await.expect("agent task");
        totals = (totals.0 + ok, totals.1 + failed);
        clients.push(client);
    }
    eprintln!(
        "{} calls succeeded, {} failed; {} of {AGENTS} agents succeeded after the restart",
        totals.0,
        totals.1,
        recovered.load(Ordering::Relaxed)
    );
    assert!(sent_before_kill > 0, "no call reached tmux before the kill");
    assert!(totals.1 > 0, "no call failed while the server was down");
    assert!(
        all_down,
        "only {} of {AGENTS} agents had a call fail while the server was down",
        saw_down.load(Ordering::Relaxed)
    );
    assert!(all_back, "not every agent's calls succeeded again");

    // The gateway is up for everyone, old clients and new.
    let fresh = client(&gateway).await;
    let sessions = call_ok(&fresh, "list_sessions", json!({})).await;
    assert!(sessions.to_string().contains("main"), "{sessions}");
    let health = reqwest::get(format!("{}/healthz", gateway.base))
        .await
        .expect("GET /healthz");
    assert!(health.status().is_success(), "{}", health.status());
    // After the restart the gateway holds one command connection; output connections close
    // once their waits are over (idle close is 1 s here).
    assert!(
        wait_until(Duration::from_secs(10), || tmux.muxgate_clients().len()
            <= 1)
        .await,
        "control clients left: {:?}",
        tmux.muxgate_clients()
    );
    drop(clients);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pane_killed_under_a_wait_reports_pane_exited() {
    let tmux = TestTmux::start();
    let gateway = spawn_gateway(config(&tmux.socket)).await;
    let client = client(&gateway).await;
    let server = gateway.engine.server("work").expect("configured").clone();

    for kill in ["kill-pane", "kill-window", "SIGKILL"] {
        let pane = tmux
            .ok(&[
                "new-window",
                "-d",
                "-t",
                "main",
                "-P",
                "-F",
                "#{pane_id}",
                "sleep 600",
            ])
            .trim()
            .to_owned();
        let started = Instant::now();
        let (result, ()) = tokio::join!(
            call(
                &client,
                "wait_for_text",
                json!({"target": pane, "patterns": ["never"], "timeout": 30}),
            ),
            async {
                assert!(
                    wait_until(Duration::from_secs(10), || server.output().subscriptions()
                        == 1)
                    .await,
                    "the wait never subscribed"
                );
                if kill == "SIGKILL" {
                    let pid = tmux.ok(&["display-message", "-p", "-t", &pane, "#{pane_pid}"]);
                    let status = std::process::Command::new("kill")
                        .args(["-KILL", pid.trim()])
                        .status()
                        .expect("run kill");
                    assert!(status.success());
                } else {
                    tmux.ok(&[kill, "-t", &pane]);
                }
            },
        );
        let result = common::tools::ok(result);
        assert_eq!(result["outcome"], "pane_exited", "{kill}: {result}");
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "{kill}: too slow"
        );
        assert!(
            wait_until(Duration::from_secs(5), || server.output().subscriptions()
                == 0)
            .await,
            "{kill}: the wait kept its subscription"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_sessions_leak_no_connection_and_no_output() {
    let tmux = TestTmux::start();
    tmux.ok(&["new-session", "-d", "-s", "quiet", "sh"]);
    let gateway = spawn_gateway(config(&tmux.socket)).await;
    let client = client(&gateway).await;
    let server = gateway.engine.server("work").expect("configured").clone();
    let quiet = tmux.pane_id("quiet").to_string();

    // A wait on `quiet` keeps its output connection open for the whole test; the first line
    // it sees with "leak-" must be its own, never a line printed in another session.
    let quiet_wait = call(
        &client,
        "wait_for_text",
        json!({"target": quiet, "patterns": ["leak-"], "timeout": 60}),
    );
    let doomed_sessions = async {
        assert!(
            wait_until(Duration::from_secs(10), || server.output().subscriptions()
                == 1)
            .await
        );
        // Command connection + the output connection of `quiet`.
        let baseline = 2;
        assert!(
            wait_until(Duration::from_secs(10), || tmux.muxgate_clients().len()
                == baseline)
            .await,
            "{:?}",
            tmux.muxgate_clients()
        );
        for round in 0..4 {
            let name = format!("doomed-{round}");
            tmux.ok(&["new-session", "-d", "-s", &name, "sh"]);
            let pane = tmux.pane_id(&name).to_string();
            let (doomed, ()) = tokio::join!(
                call(
                    &client,
                    "wait_for_text",
                    json!({"target": pane, "patterns": ["never"], "timeout": 30}),
                ),
                async {
                    assert!(
                        wait_until(Duration::from_secs(10), || server.output().subscriptions()
                            == 2)
                        .await
                    );
                    // One output connection for every watched session: the doomed session's
                    // window joins the watch session instead.
                    assert_eq!(tmux.muxgate_clients().len(), baseline);
                    assert_eq!(server.output().watched_windows(), 2);
                    type_line(&tmux, &pane, &format!("echo LE''AK-{round}"));
                    // Printed (the command line shows LE''AK) before its session goes.
                    wait_for_screen(&tmux, &pane, &format!("LEAK-{round}")).await;
                    tmux.ok(&["kill-session", "-t", &name]);
                },
            );
            let doomed = common::tools::ok(doomed);
            assert_eq!(doomed["outcome"], "pane_exited", "{doomed}");
            assert!(
                wait_until(Duration::from_secs(10), || server
                    .output()
                    .watched_windows()
                    == 1)
                .await,
                "round {round}: watched windows {}",
                server.output().watched_windows()
            );
            // The command connection may be reconnecting: linking the doomed window switched
            // it into the doomed session (see watch_session.rs), and the kill detached it.
            assert!(tmux.muxgate_clients().len() <= baseline, "round {round}");
            assert_eq!(server.output().subscriptions(), 1, "round {round}");
        }
        type_line(&tmux, &quiet, "echo LE''AK-quiet");
    };
    let (quiet_result, ()) = tokio::join!(quiet_wait, doomed_sessions);
    let quiet_result = common::tools::ok(quiet_result);
    assert_eq!(quiet_result["outcome"], "matched", "{quiet_result}");
    assert_eq!(quiet_result["matched_line"], "LEAK-quiet", "{quiet_result}");
    assert!(
        wait_until(Duration::from_secs(10), || tmux.muxgate_clients().len()
            == 1)
        .await,
        "after the last wait: {:?}",
        tmux.muxgate_clients()
    );
}

/// What a hung-up call may leave behind: wait slots, subscriptions, output connections.
async fn leftovers(gateway: &TestGateway, tmux: &TestTmux) -> (f64, usize, usize) {
    let server = gateway.engine.server("work").expect("configured");
    (
        metric(&gateway.base, "muxgate_waits_active").await,
        server.output().subscriptions(),
        tmux.muxgate_clients().len(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_hangs_up_mid_call_leaves_nothing_behind() {
    let tmux = TestTmux::start();
    let gateway = spawn_gateway(config(&tmux.socket)).await;
    let pane = tmux.pane_id("main").to_string();
    // Warm up: the command connection exists before the baseline is taken.
    call_ok(&client(&gateway).await, "list_sessions", json!({})).await;
    let baseline = leftovers(&gateway, &tmux).await;
    assert_eq!(baseline, (0.0, 0, 1));

    for stateless in [false, true] {
        let mut raw = gateway.raw();
        let mut params = json!({
            "name": "wait_for_text",
            "arguments": {"target": pane, "patterns": ["never"], "timeout": 60},
        });
        if stateless {
            raw.protocol_version = Some(STATELESS_VERSION.to_owned());
            params["_meta"] = stateless_meta();
        } else {
            raw.initialize().await;
        }
        let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params});
        let request = raw.post(&body);
        let hung_up = tokio::spawn(async move {
            let response = request.send().await.expect("POST tools/call");
            response_message(response).await
        });
        let server = gateway.engine.server("work").expect("configured");
        assert!(
            wait_until(Duration::from_secs(10), || server.output().subscriptions()
                == 1)
            .await,
            "stateless={stateless}: the wait never started"
        );
        assert_eq!(metric(&gateway.base, "muxgate_waits_active").await, 1.0);
        // Dropping the request drops its connection: the client is gone.
        hung_up.abort();
        let _ = hung_up.await;

        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let now = leftovers(&gateway, &tmux).await;
            if now == baseline {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "stateless={stateless}: left behind (waits, subscriptions, control clients) \
                 {now:?}, expected {baseline:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        if !stateless {
            // The MCP session survives its caller's hang-up and still serves.
            let answer = raw
                .request(&json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call",
                    "params": {"name": "list_sessions", "arguments": {}}}))
                .await;
            assert!(answer["result"].is_object(), "{answer}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_first_waits_on_one_pane_all_see_its_output() {
    let tmux = TestTmux::start();
    let gateway = spawn_gateway(config(&tmux.socket)).await;
    let server = gateway.engine.server("work").expect("configured").clone();
    let pane = tmux.pane_id("main").to_string();
    const WAITERS: usize = 8;

    // Several agents start waiting on a pane nobody watches yet, at the same moment: they
    // race to open its stream and must end up sharing one.
    let mut waits = Vec::new();
    for i in 0..WAITERS {
        let token = gateway.mint(&format!("waiter-{i}"), &["mux:read"]);
        let client = legacy(&gateway, &token).await;
        let pane = pane.clone();
        waits.push(tokio::spawn(async move {
            common::calls::ok(
                &client,
                "wait_for_text",
                json!({"target": pane, "patterns": ["shared-99"], "timeout": 20}),
            )
            .await
        }));
    }
    assert!(
        wait_until(Duration::from_secs(10), || server.output().subscriptions()
            == WAITERS)
        .await,
        "only {} of {WAITERS} waits are subscribed to the pane's stream",
        server.output().subscriptions()
    );
    type_line(&tmux, &pane, "echo shared-$((99))");
    for wait in waits {
        let result = wait.await.expect("waiter");
        assert_eq!(result["outcome"], "matched", "{result}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pane_killed_under_run_command_reports_pane_exited() {
    let tmux = TestTmux::start();
    let gateway = spawn_gateway(config(&tmux.socket)).await;
    let client = client(&gateway).await;
    let server = gateway.engine.server("work").expect("configured").clone();
    let pane = tmux
        .ok(&[
            "new-window",
            "-d",
            "-t",
            "main",
            "-P",
            "-F",
            "#{pane_id}",
            "env PS1='$ ' bash --norc --noprofile",
        ])
        .trim()
        .to_owned();
    assert!(
        wait_until(Duration::from_secs(10), || tmux
            .ok(&["capture-pane", "-p", "-t", &pane])
            .contains('$'))
        .await,
        "bash never showed its prompt"
    );
    let (result, ()) = tokio::join!(
        call(
            &client,
            "run_command",
            json!({"target": pane, "command": "sleep 600", "timeout": 30}),
        ),
        async {
            assert!(
                wait_until(Duration::from_secs(10), || tmux
                    .ok(&["capture-pane", "-p", "-t", &pane])
                    .contains("sleep 600"))
                .await,
                "the command was never typed"
            );
            tmux.ok(&["kill-pane", "-t", &pane]);
        },
    );
    let result = common::tools::ok(result);
    assert_eq!(result["pane_exited"], true, "{result}");
    assert_eq!(result["timed_out"], false, "{result}");
    assert!(
        wait_until(Duration::from_secs(5), || server.output().subscriptions()
            == 0)
        .await,
        "the run kept its subscription"
    );
}
