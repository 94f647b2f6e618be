//! run_command over MCP against real shells in a real tmux server.

mod common;

use std::sync::atomic::Ordering;
use std::time::Duration;

use common::tmux::TestTmux;
use common::tools::{
    assert_stalled_calls_end_at_their_own_timeout, call, call_err, call_ok, client, foreground_is,
    gateway_with_slow_commands, screen, wait_for_screen,
};
use common::{config_with_server, spawn_gateway, wait_until};
use serde_json::{Value, json};

/// Starts a session `name` running `argv` (a shell without its startup files) and returns its
/// pane id once the shell shows its prompt.
async fn shell_pane(tmux: &TestTmux, name: &str, argv: &[&str]) -> String {
    let program = argv[0];
    let installed = std::process::Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        installed,
        "{program} is not installed; the run_command tests need bash, zsh, dash and fish \
         (apt-get install zsh fish, or run .ci/run)"
    );
    let mut args = vec![
        "new-session",
        "-d",
        "-s",
        name,
        "-x",
        "120",
        "-y",
        "40",
        "-P",
        "-F",
        "#{pane_id}",
    ];
    args.extend_from_slice(argv);
    let pane = tmux.ok(&args).trim().to_owned();
    let ready = wait_until(Duration::from_secs(10), || {
        !screen(tmux, &pane).trim().is_empty()
    })
    .await;
    assert!(ready, "{program} never showed a prompt");
    pane
}

async fn run(client: &common::tools::Client, pane: &str, command: &str) -> Value {
    call_ok(
        client,
        "run_command",
        json!({"target": pane, "command": command, "timeout": 20}),
    )
    .await
}

/// The same checks in every shell; `fish` switches the syntax where fish differs.
async fn exercise_shell(client: &common::tools::Client, pane: &str, shell: &str) {
    let fish = shell == "fish";
    let hello = run(client, pane, "echo hello").await;
    assert_eq!(hello["shell"], shell, "{hello}");
    assert_eq!(hello["exit_status"], 0);
    assert_eq!(hello["output"], "hello\n", "{hello}");
    assert_eq!(hello["timed_out"], false);
    assert_eq!(hello["started"], true);

    let failed = run(client, pane, "false").await;
    assert_eq!(failed["exit_status"], 1, "{failed}");
    assert_eq!(failed["output"], "");

    let missing = run(client, pane, "nosuchcommand_muxgate").await;
    assert_eq!(missing["exit_status"], 127, "{missing}");
    assert!(
        missing["output"]
            .as_str()
            .unwrap()
            .contains("nosuchcommand_muxgate"),
        "{missing}"
    );

    let quotes = run(client, pane, r#"printf '%s\n' "it's" 'q"d' ünï€😀 'a  b'"#).await;
    assert_eq!(quotes["exit_status"], 0, "{quotes}");
    assert_eq!(quotes["output"], "it's\nq\"d\nünï€😀\na  b\n");

    let multi_line = if fish {
        "for i in 1 2 3\n  echo n$i\nend\nprintf 'no newline'"
    } else {
        "for i in 1 2 3; do\n  echo n$i\ndone\ncat <<'EOF'\n  here $HOME\nEOF\nprintf 'no newline'"
    };
    let multi = run(client, pane, multi_line).await;
    assert_eq!(multi["exit_status"], 0, "{multi}");
    let expected = if fish {
        "n1\nn2\nn3\nno newline"
    } else {
        "n1\nn2\nn3\n  here $HOME\nno newline"
    };
    assert_eq!(multi["output"], expected, "{multi}");

    let status = if fish { "sh -c 'exit 42'" } else { "(exit 42)" };
    assert_eq!(run(client, pane, status).await["exit_status"], 42);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_command_in_bash_zsh_sh_and_fish() {
    let tmux = TestTmux::start();
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let client = client(&gateway).await;
    for (shell, argv) in [
        ("bash", &["bash", "--norc", "--noprofile"][..]),
        ("zsh", &["zsh", "-f"][..]),
        ("sh", &["dash"][..]),
        ("fish", &["fish", "--no-config"][..]),
    ] {
        if !common::needs::program(argv[0], argv[0], &format!("run_command in {shell}")) {
            continue;
        }
        let pane = shell_pane(&tmux, shell, argv).await;
        exercise_shell(&client, &pane, shell).await;
    }
    // Every run released its pane and its subscription.
    let server = gateway.engine.server("work").unwrap();
    assert!(server.claims().is_empty());
    assert!(
        wait_until(Duration::from_secs(5), || server.output().subscriptions()
            == 0)
        .await
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_command_reads_stdin_and_reports_interrupts() {
    let tmux = TestTmux::start();
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let client = client(&gateway).await;
    let pane = shell_pane(&tmux, "b", &["bash", "--norc", "--noprofile"]).await;

    // A command reading stdin gets what is typed after it started.
    let reading = run(&client, &pane, "read line; echo \"got:$line\"");
    let typing = async {
        wait_for_screen(&tmux, &pane, "muxgate=%s").await;
        common::tools::type_line(&tmux, &pane, "some input");
    };
    let (read, ()) = tokio::join!(reading, typing);
    assert_eq!(read["exit_status"], 0, "{read}");
    assert_eq!(read["output"], "some input\ngot:some input\n");

    // C-c from another call interrupts it: 130. It is sent once the sleep holds the terminal
    // (before the command line runs, C-c would only cancel the line being read; before the
    // sleep takes the terminal, it would reach the shell only).
    let sleeping = run(
        &client,
        &pane,
        "echo sleep-$((1+1)); sleep 30; echo not-reached",
    );
    let interrupt = async {
        wait_for_screen(&tmux, &pane, "sleep-2\n").await;
        foreground_is(&client, &pane, "sleep 30").await;
        call_ok(
            &client,
            "send_keys",
            json!({"target": pane, "keys": "C-c", "enter": false}),
        )
        .await
    };
    let (interrupted, _) = tokio::join!(sleeping, interrupt);
    assert_eq!(interrupted["exit_status"], 130, "{interrupted}");
    assert!(
        !interrupted["output"]
            .as_str()
            .unwrap()
            .contains("not-reached")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_command_keeps_running_and_keeps_the_pane_busy() {
    let tmux = TestTmux::start();
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let client = client(&gateway).await;
    let pane = shell_pane(&tmux, "b", &["bash", "--norc", "--noprofile"]).await;

    let slow = call_ok(
        &client,
        "run_command",
        json!({"target": pane, "command": "echo begun; sleep 3; echo finished-$((1+1))",
               "timeout": 1}),
    )
    .await;
    assert_eq!(slow["timed_out"], true, "{slow}");
    assert!(slow["exit_status"].is_null());
    assert_eq!(slow["started"], true);
    assert_eq!(slow["output"], "begun\n");
    assert_eq!(slow["effective_timeout"], 1.0);

    // The command still runs: the shell is not at its prompt, so another run is refused.
    let busy = call_err(
        &client,
        "run_command",
        json!({"target": pane, "command": "echo hi"}),
    )
    .await;
    assert_eq!(busy["kind"], "conflict", "{busy}");
    // The host names what holds the terminal: the command, not the shell.
    let says = busy["message"].as_str().unwrap();
    assert!(says.contains("busy") && says.contains("sleep 3"), "{busy}");
    let finished = call_ok(
        &client,
        "wait_for_text",
        json!({"target": pane, "patterns": ["finished-2"], "timeout": 10}),
    )
    .await;
    assert_eq!(finished["outcome"], "matched", "{finished}");
    // The last line is on the screen a moment before the command's job has left and the
    // shell holds the terminal again; an agent waits for that state, as here.
    let free = call_ok(
        &client,
        "wait_for_state",
        json!({"targets": [pane], "condition": "waiting_for_input", "timeout": 10}),
    )
    .await;
    assert_eq!(free["outcome"], "reached", "{free}");
    assert_eq!(run(&client, &pane, "echo free").await["output"], "free\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn megabytes_of_output_keep_the_tail() {
    let tmux = TestTmux::start();
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let client = client(&gateway).await;
    let pane = shell_pane(&tmux, "b", &["bash", "--norc", "--noprofile"]).await;

    // About 1.3 MB, more than an output ring holds.
    let big = call_ok(
        &client,
        "run_command",
        json!({"target": pane, "command": "seq 1 200000", "timeout": 60, "max_lines": 100}),
    )
    .await;
    assert_eq!(big["exit_status"], 0, "{}", big["output"]);
    let output = big["output"].as_str().unwrap();
    assert!(
        output.ends_with("199999\n200000\n"),
        "{}",
        &output[output.len() - 100..]
    );
    assert_eq!(big["output_truncated"], true);
    assert_eq!(big["truncated_lines"], 200000 - 100);
    assert!(output.starts_with("[... 199900 lines truncated ...]\n199901\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_lost_in_a_tiny_ring_is_reported_not_hidden() {
    let tmux = TestTmux::start();
    let mut config = config_with_server("work", &tmux.socket, false);
    // A ring far smaller than one burst of output: the reader must fall behind.
    config.engine.output_ring_bytes = 256;
    let gateway = spawn_gateway(config).await;
    let client = client(&gateway).await;
    let pane = shell_pane(&tmux, "b", &["bash", "--norc", "--noprofile"]).await;

    let big = call_ok(
        &client,
        "run_command",
        json!({"target": pane, "command": "seq 1 100000; echo last-line", "timeout": 60}),
    )
    .await;
    // The loss is reported, and the end (status, last line) still arrives.
    assert_eq!(big["exit_status"], 0, "{big}");
    assert_eq!(big["output_truncated"], true);
    assert_eq!(big["output_lost"], true, "{big}");
    let output = big["output"].as_str().unwrap();
    assert!(output.ends_with("last-line\n"), "{output}");

    // Where the loss falls within the returned lines, it is marked there.
    let marked = call_ok(
        &client,
        "run_command",
        json!({"target": pane, "command": "seq 1 100000; echo last-line", "timeout": 60, "max_lines": 10000}),
    )
    .await;
    assert_eq!(marked["output_lost"], true, "{marked}");
    let output = marked["output"].as_str().unwrap();
    assert!(output.contains("[... output lost: "), "{output}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_runs_in_two_panes_do_not_mix() {
    let tmux = TestTmux::start();
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let client = client(&gateway).await;
    let a = shell_pane(&tmux, "a", &["bash", "--norc", "--noprofile"]).await;
    let b = shell_pane(&tmux, "b", &["dash"]).await;
    let loop_of = |tag: &str| format!("for i in 1 2 3 4 5; do echo {tag}$i; sleep 0.1; done");
    let (loop_a, loop_b) = (loop_of("A"), loop_of("B"));
    let (ra, rb) = tokio::join!(run(&client, &a, &loop_a), run(&client, &b, &loop_b));
    assert_eq!(ra["output"], "A1\nA2\nA3\nA4\nA5\n", "{ra}");
    assert_eq!(rb["output"], "B1\nB2\nB3\nB4\nB5\n", "{rb}");
    assert_eq!(
        (ra["shell"].as_str(), rb["shell"].as_str()),
        (Some("bash"), Some("sh"))
    );

    // Two runs in one pane: the second is refused while the first owns the pane.
    // The first waits for a line the test types once the second has been refused.
    let (first, second) = tokio::join!(run(&client, &a, "read _; echo one"), async {
        wait_for_screen(&tmux, &a, "read _; echo one").await;
        let refused = call_err(
            &client,
            "run_command",
            json!({"target": a, "command": "echo two"}),
        )
        .await;
        common::tools::type_line(&tmux, &a, "go");
        refused
    });
    assert_eq!(first["output"], "go\none\n", "{first}");
    assert_eq!(second["kind"], "conflict", "{second}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_run_releases_everything() {
    let tmux = TestTmux::start();
    let mut config = config_with_server("work", &tmux.socket, false);
    config.limits.max_concurrent_waits = 1.try_into().unwrap();
    let gateway = spawn_gateway(config).await;
    let client = client(&gateway).await;
    let pane = shell_pane(&tmux, "b", &["bash", "--norc", "--noprofile"]).await;
    let server = gateway.engine.server("work").unwrap().clone();
    let commands_before = server
        .worker()
        .stats()
        .commands_sent
        .load(Ordering::Relaxed);

    // Dropping the call future makes rmcp's client send notifications/cancelled.
    let cancelled = tokio::time::timeout(
        Duration::from_secs(2),
        call(
            &client,
            "run_command",
            json!({"target": pane, "command": "sleep 30", "timeout": 60}),
        ),
    )
    .await;
    assert!(cancelled.is_err(), "the run ended by itself");
    assert!(
        wait_until(Duration::from_secs(5), || server.claims().is_empty()
            && server.output().subscriptions() == 0)
        .await,
        "the cancelled run kept its claim or subscription"
    );
    assert!(
        server
            .worker()
            .stats()
            .commands_sent
            .load(Ordering::Relaxed)
            > commands_before
    );
    // The command itself keeps running in the pane; the wait slot is free for a new wait.
    let waited = call_ok(
        &client,
        "wait_for_text",
        json!({"target": pane, "patterns": ["never"], "timeout": 0.2}),
    )
    .await;
    assert_eq!(waited["outcome"], "timeout");
    tmux.ok(&["send-keys", "-t", &pane, "C-c"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_command_refuses_what_it_cannot_run() {
    let tmux = TestTmux::start();
    tmux.ok(&["new-session", "-d", "-s", "ci-x"]);
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let client = client(&gateway).await;
    let pane = shell_pane(&tmux, "b", &["bash", "--norc", "--noprofile"]).await;
    let sleeper = tmux
        .ok(&[
            "new-session",
            "-d",
            "-s",
            "busy",
            "-P",
            "-F",
            "#{pane_id}",
            "sleep 600",
        ])
        .trim()
        .to_owned();

    for (args, kind, needle) in [
        (
            json!({"target": pane, "command": "echo", "bogus": 1}),
            "invalid_arguments",
            "bogus",
        ),
        (json!({"target": pane}), "invalid_arguments", "command"),
        (
            json!({"target": pane, "command": "  "}),
            "invalid_arguments",
            "empty",
        ),
        (
            json!({"target": pane, "command": "a\tb"}),
            "invalid_arguments",
            "U+0009",
        ),
        (
            json!({"target": pane, "command": "x", "max_lines": 0}),
            "invalid_arguments",
            "max_lines",
        ),
        (
            json!({"target": pane, "command": "x", "shell": "csh"}),
            "invalid_arguments",
            "csh",
        ),
        (
            json!({"target": pane, "command": "x", "timeout": 0}),
            "invalid_arguments",
            "timeout",
        ),
        (
            json!({"target": "%999", "command": "x"}),
            "not_found",
            "%999",
        ),
        (
            json!({"target": "a:{last}", "command": "x"}),
            "invalid_arguments",
            "a:{last}",
        ),
        (
            json!({"target": sleeper, "command": "x"}),
            "conflict",
            "sleep",
        ),
    ] {
        let error = call_err(&client, "run_command", args.clone()).await;
        assert_eq!(error["kind"], kind, "{args}: {error}");
        assert!(
            error["message"].as_str().unwrap().contains(needle),
            "{args}: {error}"
        );
    }
    // Nothing was typed into the shell by the refused calls.
    assert!(
        !screen(&tmux, &pane).contains("muxgate"),
        "{}",
        screen(&tmux, &pane)
    );

    // A pane in a session the caller may not see looks exactly like a missing one.
    let token = common::tools::session_limited_token(&gateway, "ci", &["mux:write"], &["ci-*"]);
    let limited = common::tools::client_with(&gateway, &token).await;
    let hidden = call_err(
        &limited,
        "run_command",
        json!({"target": pane, "command": "x"}),
    )
    .await;
    assert_eq!(hidden["kind"], "not_found", "{hidden}");
}

/// An agent that runs a command in a pane just made is not refused while the pane's program
/// starts: until tmux has executed it, tmux names it `tmux` (seen under load right after
/// `create_session`). Here the pane's first process is named `tmux` for 0.6 s, then becomes
/// `sh`, so the run always meets that moment; a pane that stays `tmux` is refused as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_waits_for_a_new_pane_to_start_its_shell() {
    let tmux = TestTmux::start();
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let client = client(&gateway).await;
    // bash under the name `tmux`, executed by tmux itself: the pane's program is named `tmux`
    // from the fork on, never anything else until the script's own `exec`. (A wrapper such as
    // `bash -c 'exec -a tmux …'` is named `bash` for a moment, and a loaded machine meets it.)
    let bin = tempfile::tempdir().expect("temp dir");
    let named_tmux = bin.path().join("tmux");
    let bash = common::needs::on_path("bash").expect("bash is not on PATH");
    std::os::unix::fs::symlink(bash, &named_tmux).expect("link bash as tmux");
    let named_tmux = named_tmux.to_string_lossy().into_owned();
    let new_pane = |name: &str, then: &str| {
        let script = format!("sleep 0.6; {then}");
        let args = ["new-session", "-d", "-s", name, "-P", "-F", "#{pane_id}"];
        let mut args = args.to_vec();
        args.extend([named_tmux.as_str(), "-c", &script]);
        tmux.ok(&args).trim().to_owned()
    };

    let starting = new_pane("starting", "exec sh");
    let ran = run(&client, &starting, "echo ran").await;
    assert_eq!(
        (&ran["exit_status"], &ran["output"]),
        (&json!(0), &json!("ran\n")),
        "{ran}"
    );

    let nested = new_pane("nested", "sleep 30; true");
    let refused = call_err(
        &client,
        "run_command",
        json!({"target": nested, "command": "true", "timeout": 5}),
    )
    .await;
    let message = refused["message"].as_str().unwrap_or_default();
    assert!(message.contains("is running \"tmux\""), "{refused}");
}

/// A run on a server that stopped answering ends at the run's own timeout, not at the much
/// longer timeout of one tmux command, whether its target needs resolving or not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_on_a_stalled_server_ends_at_its_own_timeout() {
    let tmux = TestTmux::start();
    let (_gateway, client) = gateway_with_slow_commands(&tmux).await;
    let pane = tmux.pane_id("main").to_string();
    assert_stalled_calls_end_at_their_own_timeout(
        &client,
        &tmux,
        &pane,
        "run_command",
        |target| json!({"target": target, "command": "true", "timeout": 1}),
    )
    .await;

    // Once the server answers again, runs work.
    let ran = call_ok(
        &client,
        "run_command",
        json!({"target": pane, "command": "echo back", "timeout": 10}),
    )
    .await;
    assert_eq!(ran["output"], "back\n", "{ran}");
}
