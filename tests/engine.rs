//! The tmux control-mode engine against real tmux servers on private sockets.

mod common;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use common::tmux::TestTmux;
use common::wait_until;
use muxgate_tmux::{
    BatchMode, Caller, CommandOutcome, ConnectError, EngineError, EngineSettings,
    OutputSubscription, PaneId, StreamEnd, TmuxCommand, TmuxServer,
};
use tokio_util::sync::CancellationToken;

fn settings() -> EngineSettings {
    EngineSettings {
        command_timeout: Duration::from_secs(5),
        reconnect_backoff: Duration::from_millis(50),
        output_idle_close: Duration::from_millis(300),
        ..EngineSettings::default()
    }
}

fn server_for(tmux: &TestTmux, settings: EngineSettings) -> (TmuxServer, CancellationToken) {
    common::tmux::engine_for(tmux, settings)
}

fn display(format: &'static str) -> TmuxCommand {
    TmuxCommand::for_test("display-message")
        .flag("-p")
        .trusted_format(format)
        .build()
        .unwrap()
}

fn caller() -> Caller {
    Caller::new("test")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_commands_and_reports_tmux_errors() {
    let tmux = TestTmux::start();
    let (server, _shutdown) = server_for(&tmux, settings());
    let lines = server
        .run(&caller(), display("#{session_name}"))
        .await
        .unwrap();
    assert_eq!(lines, vec![b"main".to_vec()]);

    let bad = TmuxCommand::for_test("send-keys")
        .target(PaneId(999))
        .arg("x")
        .build()
        .unwrap();
    match server.run(&caller(), bad).await {
        Err(EngineError::Command(message)) => assert!(message.contains("%999"), "{message}"),
        other => panic!("expected a tmux error, got {other:?}"),
    }
    // One control client, attached with the marker TERM, and nothing else.
    assert_eq!(tmux.muxgate_clients().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_run_independently_or_stop_at_the_first_error_of_a_line() {
    let tmux = TestTmux::start();
    let (server, _shutdown) = server_for(&tmux, settings());
    let bad = || {
        TmuxCommand::for_test("send-keys")
            .target(PaneId(999))
            .arg("x")
            .build()
            .unwrap()
    };
    let commands = || vec![display("one"), bad(), display("three")];

    let outcomes = server
        .run_batch(&caller(), commands(), BatchMode::Independent, None)
        .await
        .unwrap();
    assert_eq!(outcomes[0], CommandOutcome::Ok(vec![b"one".to_vec()]));
    assert!(matches!(&outcomes[1], CommandOutcome::Failed(m) if m.contains("%999")));
    assert_eq!(outcomes[2], CommandOutcome::Ok(vec![b"three".to_vec()]));

    let outcomes = server
        .run_batch(&caller(), commands(), BatchMode::StopOnError, None)
        .await
        .unwrap();
    assert_eq!(outcomes[0], CommandOutcome::Ok(vec![b"one".to_vec()]));
    assert!(matches!(&outcomes[1], CommandOutcome::Failed(_)));
    assert_eq!(outcomes[2], CommandOutcome::NotRun);

    // Lines of two, one and two: a failure stops its own line only, and every outcome keeps its
    // place.
    let paired = vec![
        bad(),
        display("skipped"),
        display("three"),
        display("four"),
        display("five"),
    ];
    let outcomes = server
        .run_batch(&caller(), paired, BatchMode::Lines(vec![2, 1, 2]), None)
        .await
        .unwrap();
    assert_eq!(outcomes.len(), 5);
    assert!(matches!(&outcomes[0], CommandOutcome::Failed(m) if m.contains("%999")));
    assert_eq!(outcomes[1], CommandOutcome::NotRun);
    assert_eq!(outcomes[2], CommandOutcome::Ok(vec![b"three".to_vec()]));
    assert_eq!(outcomes[3], CommandOutcome::Ok(vec![b"four".to_vec()]));
    assert_eq!(outcomes[4], CommandOutcome::Ok(vec![b"five".to_vec()]));

    // The connection is still in step after a chain that stopped early.
    let lines = server.run(&caller(), display("after")).await.unwrap();
    assert_eq!(lines, vec![b"after".to_vec()]);
}

/// Deterministic pseudo-random bytes (xorshift), so failures reproduce.
fn random_bytes(seed: &mut u64, len: usize, valid_utf8: bool) -> Vec<u8> {
    const SPECIAL: &[&[u8]] = &[
        b"'",
        b"\"",
        b";",
        b" ; ",
        b"#{pane_id}",
        b"#(id)",
        b"$HOME",
        b"~",
        b"\\",
        b"\n",
        b"\t",
        b"\r",
        b"\x1b[31m",
        b"\x7f",
        b"-n",
        b"--",
        "é€😀".as_bytes(),
        b"\xff\xfe",
        b"%1",
        b"{",
    ];
    let mut next = || {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        *seed
    };
    let mut out = Vec::with_capacity(len);
    while out.len() < len {
        let r = next();
        if r % 4 == 0 {
            out.extend_from_slice(SPECIAL[(r >> 8) as usize % SPECIAL.len()]);
        } else {
            out.push(((r >> 16) % 255 + 1) as u8);
        }
    }
    if valid_utf8 {
        out = String::from_utf8_lossy(&out).into_owned().into_bytes();
    }
    out.retain(|&b| b != 0);
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_buffer_receives_exactly_the_bytes_sent() {
    let tmux = TestTmux::start();
    let (server, _shutdown) = server_for(&tmux, settings());
    let dir = tempfile::tempdir().unwrap();
    let mut seed = 0x9e37_79b9_7f4a_7c15;
    let mut cases: Vec<Vec<u8>> = (0..300)
        .map(|i| random_bytes(&mut seed, 1 + i * 7 % 400, false))
        .collect();
    cases.push((1..=255u8).collect());
    cases.push(random_bytes(&mut seed, 100_000, false));
    cases.push(b"-".to_vec());

    let commands = cases
        .iter()
        .enumerate()
        .flat_map(|(i, data)| {
            let path = dir.path().join(format!("b{i}"));
            [
                TmuxCommand::for_test("set-buffer")
                    .opt("-b", format!("t{i}"))
                    .end_of_options()
                    .arg(data)
                    .build()
                    .unwrap(),
                TmuxCommand::for_test("save-buffer")
                    .opt("-b", format!("t{i}"))
                    .arg(path.as_os_str().as_encoded_bytes())
                    .build()
                    .unwrap(),
            ]
        })
        .collect();
    let outcomes = server
        .run_batch(&caller(), commands, BatchMode::Independent, None)
        .await
        .unwrap();
    assert!(
        outcomes.iter().all(|o| matches!(o, CommandOutcome::Ok(_))),
        "{outcomes:?}"
    );
    for (i, data) in cases.iter().enumerate() {
        let got = std::fs::read(dir.path().join(format!("b{i}"))).unwrap();
        assert_eq!(&got, data, "case {i} differs");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_keys_literal_delivers_exactly_the_text_sent() {
    let tmux = TestTmux::start();
    let (server, _shutdown) = server_for(&tmux, settings());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("received");
    let mut seed = 42;
    // send-keys -l takes text: tmux drops bytes that are not UTF-8 (paste covers those).
    let mut cases: Vec<Vec<u8>> = (0..120)
        .map(|i| random_bytes(&mut seed, 1 + i * 13 % 300, true))
        .collect();
    cases.push((1..=127u8).collect());
    cases.push(random_bytes(&mut seed, 20_000, true));
    let expected: Vec<u8> = cases.concat();

    // A pane that records its input raw (no echo, no line editing, no signals), once it says
    // its terminal is set up.
    tmux.record_input("main", &out, expected.len(), false).await;
    let pane = tmux.pane_id("main");

    let commands = cases
        .iter()
        .map(|data| {
            TmuxCommand::for_test("send-keys")
                .target(pane)
                .flag("-l")
                .end_of_options()
                .arg(data)
                .build()
                .unwrap()
        })
        .collect();
    let outcomes = server
        .run_batch(&caller(), commands, BatchMode::StopOnError, None)
        .await
        .unwrap();
    assert!(
        outcomes.iter().all(|o| matches!(o, CommandOutcome::Ok(_))),
        "{outcomes:?}"
    );
    let got =
        common::tmux::wait_for_file(&out, Duration::from_secs(10), |d| d.len() >= expected.len())
            .await;
    assert_eq!(got.len(), expected.len());
    assert!(got == expected, "received bytes differ from the bytes sent");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_call_returns_when_the_server_is_killed_mid_burst() {
    let tmux = TestTmux::start();
    let (server, _shutdown) = server_for(&tmux, settings());
    server.run(&caller(), display("warm")).await.unwrap();

    let mut calls = Vec::new();
    for i in 0..200 {
        let server = server.clone();
        calls.push(tokio::spawn(async move {
            let caller = Caller::new(format!("agent{}", i % 8));
            let started = Instant::now();
            let result = server.run(&caller, display("#{session_name}")).await;
            (result, started.elapsed())
        }));
    }
    tmux.kill_server();
    let mut errors = 0;
    for call in calls {
        let (result, elapsed) = tokio::time::timeout(Duration::from_secs(10), call)
            .await
            .expect("a call hung after kill-server")
            .unwrap();
        assert!(elapsed < Duration::from_secs(6), "a call took {elapsed:?}");
        if let Err(e) = result {
            errors += 1;
            assert!(
                matches!(
                    e,
                    EngineError::Unavailable { .. } | EngineError::ConnectionLost { .. }
                ),
                "unexpected error {e:?}"
            );
        }
    }
    eprintln!("{errors} of 200 calls failed after kill-server");

    // While the server is down, calls fail fast with a clear error...
    match server.run(&caller(), display("x")).await {
        // Depending on how far the old server got in exiting: gone, or seen exiting.
        Err(EngineError::Unavailable { cause, .. }) => assert!(
            matches!(
                cause,
                ConnectError::NoServer { .. } | ConnectError::ServerExited { .. }
            ),
            "{cause}"
        ),
        other => panic!("expected Unavailable, got {other:?}"),
    }
    // ...and succeed again once a server is back (after the reconnect backoff: until then they
    // still fail fast).
    tmux.start_again();
    let deadline = Instant::now() + Duration::from_secs(10);
    let lines = loop {
        match server.run(&caller(), display("#{session_name}")).await {
            Ok(lines) => break lines,
            Err(EngineError::Unavailable { .. }) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            other => panic!("the server is back: {other:?}"),
        }
    };
    assert_eq!(lines, vec![b"main".to_vec()]);
}

/// A connect that met the server exiting (a restart under way) does not hold the next call
/// back for the reconnect backoff: the server running by then answers it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_after_a_connect_that_met_the_server_exiting_is_not_held_back() {
    let tmux = TestTmux::start();
    let dir = tempfile::tempdir().unwrap();
    let (server, _shutdown) = server_for(&tmux, exiting_first(dir.path(), 1));
    assert_seen_exiting(server.run(&caller(), display("x")).await);
    let lines = server
        .run(&caller(), display("#{session_name}"))
        .await
        .unwrap();
    assert_eq!(lines, vec![b"main".to_vec()]);
    assert_eq!(attaches(dir.path()), 2);
}

/// A server found exiting by two connects running is not being restarted: calls then fail at
/// once for the backoff, without a process each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_found_exiting_twice_running_is_backed_off() {
    let tmux = TestTmux::start();
    let dir = tempfile::tempdir().unwrap();
    let (server, _shutdown) = server_for(&tmux, exiting_first(dir.path(), 10));
    for _ in 0..5 {
        assert_seen_exiting(server.run(&caller(), display("x")).await);
    }
    assert_eq!(attaches(dir.path()), 2);
}

/// A server that is simply absent keeps the backoff: calls within it fail at once, without a
/// process each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_to_an_absent_server_start_no_process_each() {
    let tmux = TestTmux::start();
    let dir = tempfile::tempdir().unwrap();
    let (server, _shutdown) = server_for(&tmux, exiting_first(dir.path(), 0));
    tmux.kill_server();
    for _ in 0..5 {
        match server.run(&caller(), display("x")).await {
            Err(EngineError::Unavailable {
                cause: ConnectError::NoServer { .. },
                ..
            }) => {}
            other => panic!("expected no server, got {other:?}"),
        }
    }
    assert_eq!(attaches(dir.path()), 1);
}

/// Settings whose tmux ends its first `exits` control clients before they attach, with
/// nothing said (what a client sees of a server exiting under it), and whose reconnect
/// backoff outlasts any test.
fn exiting_first(dir: &std::path::Path, exits: usize) -> EngineSettings {
    let attaches = dir.join("attaches");
    let script = format!(
        "case \"$*\" in *-C*) echo . >> '{0}'; [ \"$(wc -l < '{0}')\" -gt {exits} ] || exit 0 ;; esac\nexec tmux \"$@\"",
        attaches.display()
    );
    EngineSettings {
        tmux_bin: common::tmux::tmux_wrapper(dir, &script),
        reconnect_backoff: Duration::from_secs(60),
        ..settings()
    }
}

/// Control clients started with [`exiting_first`]'s tmux.
fn attaches(dir: &std::path::Path) -> usize {
    std::fs::read_to_string(dir.join("attaches")).map_or(0, |text| text.lines().count())
}

fn assert_seen_exiting(result: Result<Vec<Vec<u8>>, EngineError>) {
    match result {
        Err(EngineError::Unavailable {
            cause: ConnectError::ServerExited { .. },
            ..
        }) => {}
        other => panic!("expected the server seen exiting, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_survive_the_attached_session_being_killed() {
    let tmux = TestTmux::start();
    tmux.ok(&["new-session", "-d", "-s", "other"]);
    let (server, _shutdown) = server_for(&tmux, settings());
    let attached = String::from_utf8(
        server
            .run(&caller(), display("#{session_id}"))
            .await
            .unwrap()
            .remove(0),
    )
    .unwrap();
    // Kill the session the command connection sits in, and keep working in the same breath.
    let kill = TmuxCommand::for_test("kill-session")
        .opt("-t", &attached)
        .build()
        .unwrap();
    let mut commands = vec![kill];
    commands.extend((0..20).map(|_| display("alive")));
    let outcomes = server
        .run_batch(&caller(), commands, BatchMode::Independent, None)
        .await
        .unwrap();
    assert!(
        outcomes.iter().all(|o| matches!(o, CommandOutcome::Ok(_))),
        "{outcomes:?}"
    );
    // Later commands go through a new connection attached to the remaining session.
    for _ in 0..5 {
        let lines = server
            .run(&caller(), display("#{session_id}"))
            .await
            .unwrap();
        assert_ne!(String::from_utf8_lossy(&lines[0]), attached);
    }
    assert_eq!(tmux.muxgate_clients().len(), 1);
}

/// Every command appends a letter to one tmux buffer, so the buffer records the exact order in
/// which tmux ran them.
fn mark(letter: &str) -> TmuxCommand {
    TmuxCommand::for_test("set-buffer")
        .flag("-a")
        .opt("-b", "order")
        .arg(letter)
        .build()
        .unwrap()
}

/// Holds tmux's queue for a moment (so that everything queued meanwhile is ordered by the
/// worker alone), runs `flood` as the flooder and then one command as the victim, and returns
/// how many flood commands tmux ran before the victim's.
async fn flood_commands_before_victim(
    flood: impl FnOnce(TmuxServer) -> Vec<tokio::task::JoinHandle<()>>,
) -> (usize, usize) {
    let tmux = TestTmux::start();
    let settings = settings();
    let depth = settings.pipeline_depth;
    let (server, _shutdown) = server_for(&tmux, settings);
    server.run(&caller(), mark(".")).await.unwrap();
    let hold = TmuxCommand::for_test("run-shell")
        .arg("sleep 0.5")
        .build()
        .unwrap();
    let held = {
        let server = server.clone();
        tokio::spawn(async move { server.run(&caller(), hold).await })
    };
    while server
        .worker()
        .stats()
        .lines_written
        .load(std::sync::atomic::Ordering::SeqCst)
        < 3
    {
        tokio::task::yield_now().await;
    }
    let flooding = flood(server.clone());
    while server.worker().queued() < 1000 - depth {
        tokio::task::yield_now().await;
    }
    server.run(&Caller::new("victim"), mark("V")).await.unwrap();
    held.await.unwrap().unwrap();
    for f in flooding {
        f.await.unwrap();
    }
    let order = tmux.ok(&["show-buffer", "-b", "order"]);
    assert_eq!(order.matches('f').count(), 1000);
    (order.find('V').unwrap() - 1, depth)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_callers_flood_does_not_starve_another() {
    let (ahead, depth) = flood_commands_before_victim(|server| {
        (0..1000)
            .map(|_| {
                let server = server.clone();
                tokio::spawn(async move {
                    server
                        .run(&Caller::new("flooder"), mark("f"))
                        .await
                        .unwrap();
                })
            })
            .collect()
    })
    .await;
    eprintln!(
        "the victim's command ran after {ahead} of 1000 queued flood commands (pipeline depth {depth})"
    );
    assert!(
        ahead <= depth + 1,
        "{ahead} flood commands ran before the victim's command"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_callers_large_batch_does_not_starve_another() {
    let (ahead, depth) = flood_commands_before_victim(|server| {
        vec![tokio::spawn(async move {
            let commands = (0..1000).map(|_| mark("f")).collect();
            let outcomes = server
                .run_batch(
                    &Caller::new("flooder"),
                    commands,
                    BatchMode::Independent,
                    None,
                )
                .await
                .unwrap();
            assert!(outcomes.iter().all(|o| matches!(o, CommandOutcome::Ok(_))));
        })]
    })
    .await;
    eprintln!(
        "the victim's command ran after {ahead} commands of a 1000-line batch (pipeline depth {depth})"
    );
    assert!(
        ahead <= 2 * depth,
        "{ahead} batch commands ran before the victim's command"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_queue_is_a_clear_error() {
    let tmux = TestTmux::start();
    let (server, _shutdown) = server_for(
        &tmux,
        EngineSettings {
            per_caller_queue: 10,
            ..settings()
        },
    );
    let greedy = Caller::new("greedy");
    let mut calls = Vec::new();
    for _ in 0..200 {
        let (server, greedy) = (server.clone(), greedy.clone());
        calls.push(tokio::spawn(async move {
            server.run(&greedy, display("g")).await
        }));
    }
    let mut full = 0;
    for call in calls {
        if let Err(e) = call.await.unwrap() {
            assert!(matches!(e, EngineError::QueueFull { .. }), "{e:?}");
            assert!(e.to_string().contains("your share"), "{e}");
            full += 1;
        }
    }
    assert!(
        full > 0,
        "200 concurrent commands never filled a share of 10"
    );
    // Another caller is unaffected.
    server
        .run(&Caller::new("other"), display("o"))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_tmux_never_answers_times_out_and_the_engine_recovers() {
    let tmux = TestTmux::start();
    let (server, _shutdown) = server_for(
        &tmux,
        EngineSettings {
            command_timeout: Duration::from_millis(300),
            ..settings()
        },
    );
    // `wait-for` on the command connection blocks every later command on that connection.
    let block = TmuxCommand::for_test("wait-for")
        .arg("never-signalled")
        .build()
        .unwrap();
    let _ = server.run(&caller(), block).await;
    let stuck = server.run(&caller(), display("stuck")).await;
    assert!(
        matches!(stuck, Err(EngineError::Timeout { .. })),
        "{stuck:?}"
    );
    // After the stall timeout the engine drops the wedged client and reconnects.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if server.run(&caller(), display("ok")).await.is_ok() {
            break;
        }
        assert!(Instant::now() < deadline, "the engine never recovered");
    }
    assert!(wait_until(Duration::from_secs(2), || tmux.muxgate_clients().len() == 1).await);
    // One stall, one kill: the worker does not spin on the dying client.
    assert_eq!(server.worker().stats().stalls.load(Ordering::Relaxed), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_streams_deliver_new_output_and_end_when_the_program_exits() {
    let tmux = TestTmux::start();
    let (server, _shutdown) = server_for(&tmux, settings());
    tmux.ok(&["set-option", "-g", "remain-on-exit", "on"]);
    let pane = tmux.pane_id("main");
    let mut sub = server
        .subscribe(&caller(), pane, common::subscribe_deadline())
        .await
        .unwrap();

    let type_line = |text: &str| {
        TmuxCommand::for_test("send-keys")
            .target(pane)
            .flag("-l")
            .end_of_options()
            .arg(format!("{text}\r"))
            .build()
            .unwrap()
    };
    server
        .run(&caller(), type_line("echo MARK_$((6*7))"))
        .await
        .unwrap();
    let mut seen = Vec::new();
    while !seen.windows(7).any(|w| w == b"MARK_42") {
        let chunk = tokio::time::timeout(Duration::from_secs(5), sub.next())
            .await
            .unwrap()
            .unwrap();
        seen.extend(chunk.data);
    }

    server.run(&caller(), type_line("exit 3")).await.unwrap();
    // tmux reports the exit through a subscription it checks about once a second; a loaded
    // machine can take several.
    let end = tokio::time::timeout(Duration::from_secs(15), async {
        loop {
            if let Err(end) = sub.next().await {
                return end;
            }
        }
    })
    .await
    .expect("the stream never ended");
    // tmux 3.3a now and then never records a dead pane's status (about 1 exit in 8 with no
    // gateway involved); then muxgate cannot know it either.
    let known = tmux.ok(&[
        "display-message",
        "-p",
        "-t",
        &pane.to_string(),
        "#{pane_dead_status}",
    ]);
    let status = known.trim().parse::<i32>().ok();
    assert!(status.is_none() || status == Some(3), "{known:?}");
    assert_eq!(end, StreamEnd::PaneExited { status });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_connections_close_when_idle_and_streams_end_with_the_session() {
    let tmux = TestTmux::start();
    tmux.ok(&["new-session", "-d", "-s", "doomed"]);
    let (server, _shutdown) = server_for(&tmux, settings());
    let pane = tmux.pane_id("doomed");

    let sub = server
        .subscribe(&caller(), pane, common::subscribe_deadline())
        .await
        .unwrap();
    assert_eq!(
        tmux.muxgate_clients().len(),
        2,
        "command + output connection"
    );
    drop(sub);
    assert!(
        wait_until(Duration::from_secs(3), || tmux.muxgate_clients().len() == 1).await,
        "the idle output connection stayed: {:?}",
        tmux.muxgate_clients()
    );

    let mut sub = server
        .subscribe(&caller(), pane, common::subscribe_deadline())
        .await
        .unwrap();
    tmux.ok(&["kill-session", "-t", "doomed"]);
    let end = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            if let Err(end) = sub.next().await {
                return end;
            }
        }
    })
    .await
    .expect("the stream never ended");
    assert!(
        matches!(end, StreamEnd::SessionClosed | StreamEnd::PaneClosed),
        "{end:?}"
    );
    let open = || {
        server
            .output()
            .stats()
            .connections_open
            .load(std::sync::atomic::Ordering::SeqCst)
    };
    assert!(wait_until(Duration::from_secs(3), || open() == 0).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_clients_of_a_dead_muxgate_are_removed_at_start() {
    let tmux = TestTmux::start();
    // A control client whose owner is gone: started by a shell that exits at once, marked with
    // the TERM of a pid that is not its parent. Its stdin is a pipe this test holds open.
    let (ghost_stdin, keep_open) = std::io::pipe().unwrap();
    let ghost = format!(
        // (An `&` job gets /dev/null as stdin unless it is redirected from another descriptor.)
        "exec 3<&0; TERM=muxgate-999999 tmux -L {} -C attach-session -f no-output <&3 >/dev/null 2>&1 &",
        tmux.socket
    );
    let spawned = std::process::Command::new("sh")
        .arg("-c")
        .arg(&ghost)
        .stdin(ghost_stdin)
        .status()
        .unwrap();
    assert!(spawned.success());
    assert!(wait_until(Duration::from_secs(3), || tmux.muxgate_clients().len() == 1).await);

    let (server, _shutdown) = server_for(&tmux, settings());
    server.run(&caller(), display("x")).await.unwrap();
    assert!(
        wait_until(Duration::from_secs(3), || {
            let clients = tmux.muxgate_clients();
            clients.len() == 1 && !clients[0].contains("muxgate-999999")
        })
        .await,
        "the stale client is still attached: {:?}",
        tmux.muxgate_clients()
    );
    drop(keep_open);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_detaches_every_control_client() {
    let tmux = TestTmux::start();
    let (server, shutdown) = server_for(&tmux, settings());
    let pane = tmux.pane_id("main");
    let _sub = server
        .subscribe(&caller(), pane, common::subscribe_deadline())
        .await
        .unwrap();
    assert_eq!(tmux.muxgate_clients().len(), 2);
    shutdown.cancel();
    assert!(wait_until(Duration::from_secs(3), || tmux.muxgate_clients().is_empty()).await);
    assert!(matches!(
        server.run(&caller(), display("x")).await,
        Err(EngineError::ShuttingDown)
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watched_sessions_are_capped_per_server() {
    let tmux = TestTmux::start();
    let (server, _shutdown) = server_for(
        &tmux,
        EngineSettings {
            max_watched_sessions: 1,
            ..settings()
        },
    );
    tmux.ok(&["new-session", "-d", "-s", "other"]);
    let watched = server
        .subscribe(
            &caller(),
            tmux.pane_id("main"),
            common::subscribe_deadline(),
        )
        .await
        .unwrap();
    let refused = server
        .subscribe(
            &caller(),
            tmux.pane_id("other"),
            common::subscribe_deadline(),
        )
        .await;
    assert!(
        matches!(refused, Err(EngineError::TooManyWatched { limit: 1, .. })),
        "{refused:?}"
    );
    assert_eq!(
        tmux.muxgate_clients().len(),
        2,
        "command + one output client"
    );
    // Another pane of the watched session shares its connection.
    let second = tmux.split("main");
    let sibling = server
        .subscribe(&caller(), second, common::subscribe_deadline())
        .await
        .unwrap();
    // Once the watched session is released (idle close), another may be watched.
    drop(watched);
    drop(sibling);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match server
            .subscribe(
                &caller(),
                tmux.pane_id("other"),
                common::subscribe_deadline(),
            )
            .await
        {
            Ok(_) => break,
            Err(EngineError::TooManyWatched { .. }) => {
                assert!(
                    Instant::now() < deadline,
                    "the released session was never closed"
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("{e:?}"),
        }
    }
}

/// A tmux that takes 3 s to attach an output client (one attaching with `pause-after`),
/// announced by a file.
fn slow_attach_tmux(dir: &std::path::Path) -> std::path::PathBuf {
    let started = dir.join("slow-attach-started");
    let script = format!(
        "case \"$*\" in *pause-after*) touch '{}'; sleep 3 ;; esac\nexec tmux \"$@\"",
        started.display()
    );
    common::tmux::tmux_wrapper(dir, &script)
}

/// A server whose output connection attaches slowly (3 s: [`slow_attach_tmux`]), with its first
/// subscriber (of `main`) already waiting for that attach.
struct SlowAttach {
    server: TmuxServer,
    first: tokio::task::JoinHandle<Result<OutputSubscription, EngineError>>,
    _shutdown: CancellationToken,
    _dir: tempfile::TempDir,
}

impl SlowAttach {
    async fn begin(tmux: &TestTmux) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let (server, shutdown) = server_for(
            tmux,
            EngineSettings {
                tmux_bin: slow_attach_tmux(dir.path()),
                ..settings()
            },
        );
        let first = tokio::spawn({
            let (server, pane) = (server.clone(), tmux.pane_id("main"));
            async move { server.subscribe(&caller(), pane, within(20_000)).await }
        });
        let started = dir.path().join("slow-attach-started");
        assert!(wait_until(Duration::from_secs(10), || started.exists()).await);
        Self {
            server,
            first,
            _shutdown: shutdown,
            _dir: dir,
        }
    }
}

/// `ms` from now, as a subscription deadline.
fn within(ms: u64) -> tokio::time::Instant {
    tokio::time::Instant::now() + Duration::from_millis(ms)
}

/// Subscribers that queue behind a change of the watch session (here its slow attach) are
/// linked together, one worker job for the lot, not one round trip each; one that gave up
/// meanwhile is not linked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscribers_queued_behind_the_attach_are_linked_in_one_job() {
    const QUEUED: usize = 31;
    let tmux = TestTmux::start();
    for i in 0..=QUEUED {
        tmux.ok(&["new-session", "-d", "-s", &format!("s{i}")]);
    }
    let attach = SlowAttach::begin(&tmux).await;
    let (server, first) = (attach.server.clone(), attach.first);
    let jobs = || server.worker().stats().latency.snapshot().count;
    let found_none = jobs();

    let mut queued = Vec::new();
    for i in 0..QUEUED {
        let (server, pane) = (server.clone(), tmux.pane_id(&format!("s{i}")));
        queued.push(tokio::spawn(async move {
            server.subscribe(&caller(), pane, within(20_000)).await
        }));
    }
    // One more gives up while the attach goes on.
    let gave_up = server
        .subscribe(&caller(), tmux.pane_id(&format!("s{QUEUED}")), within(300))
        .await;
    assert!(matches!(gave_up, Err(EngineError::Timeout { .. })));
    // Each has found its pane (a command each, the one that gave up too) and waits for its link.
    let found = found_none + QUEUED as u64 + 1;
    assert!(
        wait_until(Duration::from_secs(10), || jobs() >= found).await,
        "{} of {} panes found",
        jobs() - found_none,
        QUEUED + 1
    );
    let before = jobs();

    let mut subscriptions = vec![first.await.unwrap().unwrap()];
    for subscriber in queued {
        subscriptions.push(subscriber.await.unwrap().unwrap());
    }
    // The first window's link, then one batch for the other 31.
    let batches = jobs() - before;
    assert!(
        batches <= 3,
        "{batches} jobs to link {} windows",
        QUEUED + 1
    );
    assert_eq!(server.output().watched_windows(), QUEUED + 1);
    drop(subscriptions);
}

/// Every watched session shares one output connection: a slow attach of it holds no caller
/// past its deadline, and once it is attached, more sessions and panes are watched without
/// another attach.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_attach_blocks_no_deadline_and_happens_once() {
    let tmux = TestTmux::start();
    tmux.ok(&["new-session", "-d", "-s", "queued"]);
    tmux.ok(&["new-session", "-d", "-s", "later"]);
    // The first subscriber attaches the output connection, slowly.
    let attach = SlowAttach::begin(&tmux).await;
    let (server, first) = (attach.server.clone(), attach.first);

    // A session queued behind the attach gives up at its deadline.
    let asked = Instant::now();
    let queued = server
        .subscribe(&caller(), tmux.pane_id("queued"), within(500))
        .await;
    assert!(
        matches!(queued, Err(EngineError::Timeout { .. })),
        "{:?}",
        queued.err()
    );
    assert!(
        asked.elapsed() < Duration::from_secs(2),
        "{:?}",
        asked.elapsed()
    );

    // The attach completes; other sessions and a new pane are then watched at once, through
    // the same connection.
    let watched = first.await.unwrap().unwrap();
    let new_pane = tmux.split("main");
    let asked = Instant::now();
    let mut more = Vec::new();
    for pane in [tmux.pane_id("queued"), tmux.pane_id("later"), new_pane] {
        more.push(
            server
                .subscribe(&caller(), pane, within(2_000))
                .await
                .unwrap(),
        );
    }
    assert!(
        asked.elapsed() < Duration::from_secs(2),
        "{:?}",
        asked.elapsed()
    );
    assert_eq!(server.output().stats().connects.load(Ordering::Relaxed), 1);
    drop((watched, more));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_clients_never_resize_windows() {
    let tmux = TestTmux::start();
    tmux.ok(&["new-session", "-d", "-s", "sized", "-x", "200", "-y", "50"]);
    let size = || {
        tmux.ok(&[
            "display-message",
            "-p",
            "-t",
            "sized",
            "#{window_width}x#{window_height}",
        ])
    };
    assert_eq!(size().trim(), "200x50");
    let (server, _shutdown) = server_for(&tmux, settings());
    // The strictest sizing rule: a window takes the size of the smallest client that counts.
    // A control client counted at its default 80x24 would shrink the window.
    let pane = tmux.pane_id("sized");
    for policy in ["smallest", "latest"] {
        tmux.ok(&["set-option", "-w", "-t", "sized", "window-size", policy]);
        let watched = server
            .subscribe(&caller(), pane, common::subscribe_deadline())
            .await
            .unwrap();
        // Any command: the command connection attaches on first use.
        server
            .run(&caller(), display("#{session_attached}"))
            .await
            .unwrap();
        assert_eq!(
            tmux.muxgate_clients().len(),
            2,
            "command and output clients are attached"
        );
        assert_eq!(size().trim(), "200x50", "window-size {policy}");
        drop(watched);
    }
}

/// A reply larger than the caller's budget is read to its end and thrown away: the command
/// fails saying so, and the connection answers the next commands in step.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_over_the_callers_budget_is_dropped_and_the_connection_stays_in_step() {
    let tmux = TestTmux::start();
    let (server, _shutdown) = server_for(&tmux, settings());
    let small = Caller::new("small").with_reply_budget(1_000);
    let long = TmuxCommand::for_test("display-message")
        .flag("-p")
        .arg("x".repeat(5_000))
        .build()
        .unwrap();
    let outcomes = server
        .run_batch(
            &small,
            vec![long.clone(), display("#{session_name}")],
            BatchMode::Independent,
            None,
        )
        .await
        .unwrap();
    match &outcomes[0] {
        CommandOutcome::Failed(message) => assert!(message.contains("larger than"), "{message}"),
        other => panic!("an oversized reply came through: {other:?}"),
    }
    assert_eq!(outcomes[1], CommandOutcome::Ok(vec![b"main".to_vec()]));
    // A caller with room gets the whole reply on the same connection.
    let whole = server.run(&caller(), long).await.unwrap();
    assert_eq!(whole, vec![b"x".repeat(5_000)]);
}

/// One caller may open at most its share of a server's output connections; another caller
/// still gets its own, and a session already watched costs nothing more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_opens_at_most_its_share_of_output_connections() {
    let tmux = TestTmux::start();
    tmux.ok(&["new-session", "-d", "-s", "second"]);
    let (server, _shutdown) = server_for(&tmux, settings());
    let greedy = Caller::new("greedy").with_watch_share(1);
    let first = tmux.pane_id("main");
    let second = tmux.pane_id("second");
    let _watching = server
        .subscribe(&greedy, first, common::subscribe_deadline())
        .await
        .unwrap();
    let Err(refused) = server
        .subscribe(&greedy, second, common::subscribe_deadline())
        .await
    else {
        panic!("a second session is beyond the share");
    };
    assert!(
        matches!(refused, EngineError::TooManyWatched { limit: 1, .. }),
        "{refused:?}"
    );
    // A pane of the session it already watches is free.
    let again = server
        .subscribe(&greedy, tmux.split("main"), common::subscribe_deadline())
        .await;
    assert!(again.is_ok());
    let other = Caller::new("other").with_watch_share(1);
    assert!(
        server
            .subscribe(&other, second, common::subscribe_deadline())
            .await
            .is_ok()
    );
}
