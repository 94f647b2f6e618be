//! Shells the gateway starts mark their commands for the ledger: bash, zsh and fish, each
//! reading the user's own startup files (which stay untouched), in new sessions, windows and
//! panes, and in the first session of a server the gateway starts. With integration off, or a
//! `default-command` set, panes start exactly as tmux would start them.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::tmux::{TestTmux, unique_socket_name};
use common::tools::{Client, call_ok, call_until, client, type_line};
use common::{config_with_server, spawn_gateway};
use muxgate_mux::shell_integration;
use serde_json::{Value, json};

/// A shell, where its startup file lives under `$HOME`, and what that file says.
struct Shell {
    path: &'static str,
    rc_file: &'static str,
    rc_text: &'static str,
}

const BASH: Shell = Shell {
    path: "/bin/bash",
    rc_file: ".bash_profile",
    rc_text: "export FROM_RC=bash-profile-read\n",
};
const ZSH: Shell = Shell {
    path: "/usr/bin/zsh",
    rc_file: ".zshrc",
    rc_text: "export FROM_RC=zshrc-read\n",
};
const FISH: Shell = Shell {
    path: "/usr/bin/fish",
    rc_file: ".config/fish/config.fish",
    rc_text: "set -gx FROM_RC fish-config-read\n",
};

/// A home directory holding `shell`'s startup file.
fn home_for(shell: &Shell) -> tempfile::TempDir {
    let home = tempfile::tempdir().expect("a home directory");
    let file = home.path().join(shell.rc_file);
    std::fs::create_dir_all(file.parent().expect("a parent")).expect("its directory");
    std::fs::write(file, shell.rc_text).expect("the startup file");
    home
}

/// Every file under `dir`, with its contents.
fn files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut seen = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(path) = todo.pop() {
        if path.is_dir() {
            for entry in std::fs::read_dir(&path).expect("a readable directory") {
                todo.push(entry.expect("an entry").path());
            }
        } else {
            let contents = std::fs::read(&path).expect("a readable file");
            seen.insert(path, contents);
        }
    }
    seen
}

/// The user's files in `home` are as they were `before`, and nothing of muxgate's was left
/// there (what the shell itself writes, such as its history, is the shell's business).
fn untouched(home: &Path, before: &BTreeMap<PathBuf, Vec<u8>>) {
    let after = files(home);
    for (path, contents) in before {
        assert_eq!(
            after.get(path),
            Some(contents),
            "{} changed",
            path.display()
        );
    }
    let ours: Vec<_> = after
        .keys()
        .filter(|path| path.to_string_lossy().contains("muxgate"))
        .collect();
    assert!(ours.is_empty(), "{ours:?}");
}

/// `pane`'s records once `n` have finished.
async fn finished(client: &Client, pane: &str, n: usize) -> Value {
    call_until(client, "list_commands", pane, |listed| {
        listed["commands"]
            .as_array()
            .is_some_and(|c| c.len() == n && c.iter().all(|record| record.get("running").is_none()))
    })
    .await
}

/// Starts recording `pane` and waits until its shell reads the terminal.
async fn at_its_prompt(client: &Client, pane: &str) {
    call_ok(client, "list_commands", json!({"target": pane})).await;
    call_until(client, "get_pane_state", pane, |s| {
        s["waiting_for_input"] == true
    })
    .await;
}

/// The id of the first pane of `session`, asked of tmux on the test side.
fn first_pane(tmux: &TestTmux, session: &str) -> String {
    tmux.ok(&["list-panes", "-t", session, "-F", "#{pane_id}"])
        .lines()
        .next()
        .expect("a pane")
        .to_owned()
}

/// A command typed by hand and one run by `run_command` in `pane` are both recorded, with the
/// command line, exit status, working directory and output; the user's startup file was read.
async fn commands_are_recorded(client: &Client, tmux: &TestTmux, pane: &str, shell: &Shell) {
    at_its_prompt(client, pane).await;
    type_line(tmux, pane, "cd /tmp && echo $FROM_RC; false");
    finished(client, pane, 1).await;
    // The prompt after it (its `A` mark) is what shows the shell itself marks its prompts.
    let listed = call_until(client, "list_commands", pane, |l| l["at_prompt"] == true).await;
    assert_eq!(
        listed["shell_integration"], true,
        "{}: {listed}",
        shell.path
    );
    let typed = &listed["commands"][0];
    assert_eq!(
        typed["command"], "cd /tmp && echo $FROM_RC; false",
        "{listed}"
    );
    assert_eq!(typed["exit_status"], 1, "{listed}");
    let output = call_ok(client, "get_command_output", json!({"target": pane})).await;
    let rc_value = shell.rc_text.split_whitespace().last().expect("a value");
    assert_eq!(
        output["output"],
        rc_value.trim_start_matches("FROM_RC="),
        "{output}"
    );

    let ran = call_ok(
        client,
        "run_command",
        json!({"target": pane, "command": "echo via-run; false"}),
    )
    .await;
    assert_eq!(ran["exit_status"], 1, "{ran}");
    let listed = finished(client, pane, 2).await;
    let run = &listed["commands"][1];
    assert_eq!(run["command"], "echo via-run; false", "{listed}");
    assert_eq!(run["cwd"], "/tmp", "{listed}");
    call_until(client, "list_commands", pane, |l| l["at_prompt"] == true).await;
    let output = call_ok(client, "get_command_output", json!({"target": pane})).await;
    assert_eq!(output["output"], "via-run", "{output}");

    // Exact output, also without a final newline (zsh's missing-newline mark stays out of it).
    call_until(client, "list_commands", pane, |l| l["at_prompt"] == true).await;
    type_line(tmux, pane, "printf 'no newline'");
    finished(client, pane, 3).await;
    let output = call_ok(client, "get_command_output", json!({"target": pane})).await;
    assert_eq!(output["output"], "no newline", "{}: {output}", shell.path);
    call_until(client, "list_commands", pane, |l| l["at_prompt"] == true).await;
    let ran = call_ok(
        client,
        "run_command",
        json!({"target": pane, "command": "printf 'two\\nlines'\necho; sh -c 'exit 7'"}),
    )
    .await;
    assert_eq!(ran["output"], "two\nlines\n", "{}: {ran}", shell.path);
    assert_eq!(ran["exit_status"], 7, "{ran}");
    // The shell marks its commands: run_command typed no markers of its own.
    let screen = common::tools::screen(tmux, pane);
    assert!(!screen.contains("133;"), "{screen}");
    assert!(screen.contains("exit 7"), "{screen}");
}

/// `shell` as the server's default shell: a session, a window and a split pane the gateway
/// creates each record their commands.
async fn integrated(shell: Shell) {
    let tmux = TestTmux::start();
    tmux.ok(&["set-option", "-g", "default-command", ""]);
    tmux.ok(&["set-option", "-g", "default-shell", shell.path]);
    let home = home_for(&shell);
    let before = files(home.path());
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let client = client(&gateway).await;
    let environment = json!({"HOME": home.path()});

    call_ok(
        &client,
        "create_session",
        json!({"name": "s", "start_directory": "/", "environment": environment}),
    )
    .await;
    let pane = first_pane(&tmux, "s");
    commands_are_recorded(&client, &tmux, &pane, &shell).await;

    // A run that outlives its timeout keeps running, and is recorded when it ends.
    let slow = call_ok(
        &client,
        "run_command",
        json!({"target": pane, "command": "echo slow; sleep 30", "timeout": 1}),
    )
    .await;
    assert_eq!(slow["timed_out"], true, "{slow}");
    assert_eq!(slow["started"], true, "{slow}");
    assert_eq!(slow["output"], "slow\n", "{slow}");
    tmux.ok(&["send-keys", "-t", &pane, "C-c"]);
    let listed = finished(&client, &pane, 5).await;
    assert_eq!(listed["commands"][4]["command"], "echo slow; sleep 30");
    assert_eq!(listed["commands"][4]["exit_status"], 130, "{listed}");

    let window = call_ok(
        &client,
        "create_window",
        json!({"target": "s", "start_directory": "/", "environment": environment}),
    )
    .await;
    let window_pane = first_pane(&tmux, window["window"]["id"].as_str().unwrap());
    commands_are_recorded(&client, &tmux, &window_pane, &shell).await;

    let split = call_ok(
        &client,
        "split_window",
        json!({"target": pane, "start_directory": "/", "environment": environment}),
    )
    .await;
    let split_pane = split["id"].as_str().unwrap().to_owned();
    commands_are_recorded(&client, &tmux, &split_pane, &shell).await;

    untouched(home.path(), &before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bash_started_by_the_gateway_records_its_commands() {
    integrated(BASH).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zsh_started_by_the_gateway_records_its_commands() {
    let tmux_dir = std::env::temp_dir();
    integrated(ZSH).await;
    // The temporary ZDOTDIR is gone, and the shell sees the user's own (here: none).
    let leftovers: Vec<_> = std::fs::read_dir(&tmux_dir)
        .expect("the temporary directory")
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with("muxgate-zsh."))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    let tmux = TestTmux::start();
    tmux.ok(&["set-option", "-g", "default-command", ""]);
    tmux.ok(&["set-option", "-g", "default-shell", ZSH.path]);
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let client = client(&gateway).await;
    call_ok(&client, "create_session", json!({"name": "z"})).await;
    let pane = first_pane(&tmux, "z");
    at_its_prompt(&client, &pane).await;
    let ran = call_ok(
        &client,
        "run_command",
        json!({"target": pane, "command": "echo ${ZDOTDIR-unset} $MUXGATE_ZDOTDIR_SET; [[ -o login ]]"}),
    )
    .await;
    assert_eq!(ran["output"], "unset\n", "{ran}");
    assert_eq!(
        ran["exit_status"], 0,
        "a login shell, as tmux starts it: {ran}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fish_started_by_the_gateway_records_its_commands() {
    integrated(FISH).await;
}

/// Integration off, or a `default-command` set: panes start as tmux starts them, unmarked;
/// `run_command` still records its own runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn panes_start_plain_when_integration_is_off_or_a_default_command_is_set() {
    let tmux = TestTmux::start();
    tmux.ok(&["set-option", "-g", "default-command", ""]);
    let mut config = config_with_server("work", &tmux.socket, false);
    config.tmux.shell_integration = false;
    let gateway = spawn_gateway(config).await;
    let client = client(&gateway).await;
    let commanded = TestTmux::start();
    let commanded_gateway =
        spawn_gateway(config_with_server("work", &commanded.socket, false)).await;
    let commanded_client = common::tools::client(&commanded_gateway).await;

    let homes = [home_for(&BASH), home_for(&ZSH), home_for(&FISH)];
    for (shell, tmux, client) in [
        (BASH, &tmux, &client),
        (ZSH, &tmux, &client),
        (FISH, &tmux, &client),
        // The test server's default-command is `sh`: kept, with bash as the default shell.
        (BASH, &commanded, &commanded_client),
    ] {
        tmux.ok(&["set-option", "-g", "default-shell", shell.path]);
        let name = format!("plain-{}", tmux.ok(&["list-sessions"]).lines().count());
        // A home with the shell's startup file: zsh greets a user without one with a wizard.
        let home = homes.iter().find(|h| h.path().join(shell.rc_file).exists());
        let environment = json!({"HOME": home.expect("a home").path()});
        call_ok(
            client,
            "create_session",
            json!({"name": name, "environment": environment}),
        )
        .await;
        let pane = first_pane(tmux, &name);
        at_its_prompt(client, &pane).await;
        type_line(tmux, &pane, "echo by-hand");
        let ran = call_ok(
            client,
            "run_command",
            json!({"target": pane, "command": "echo ran"}),
        )
        .await;
        assert_eq!(ran["output"], "ran\n", "{ran}");
        let listed = finished(client, &pane, 1).await;
        assert_eq!(
            listed["shell_integration"], false,
            "{}: {listed}",
            shell.path
        );
        assert_eq!(listed["commands"][0]["command"], "echo ran", "{listed}");
    }
    // Every pane but the gateway's watch session's placeholder.
    let started = commanded.ok(&[
        "list-panes",
        "-a",
        "-F",
        "#{session_name}|#{pane_start_command}",
    ]);
    assert!(
        started
            .lines()
            .filter(|line| !line.starts_with("_muxgate|"))
            .all(|line| line.ends_with("|sh") || line.ends_with('|')),
        "{started}"
    );
}

/// A server `create_session` starts reads its configuration as it starts: its first shell is
/// replaced by the integrated one as soon as the default shell is known. The gateway hands the
/// server its own `SHELL`, which the tests set to bash (`common::isolation`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_session_of_a_server_the_gateway_starts_is_integrated() {
    let socket = unique_socket_name();
    let gateway = spawn_gateway(config_with_server("fresh", &socket, true)).await;
    let client = client(&gateway).await;
    // Dropped at the end: kills the server this test starts.
    let mut tmux = TestTmux {
        socket,
        socket_path: std::path::PathBuf::new(),
    };
    let created = call_ok(
        &client,
        "create_session",
        json!({"name": "first", "start_directory": "/"}),
    )
    .await;
    assert_eq!(created["started_server"], true, "{created}");
    tmux.socket_path = tmux
        .ok(&["display-message", "-p", "#{socket_path}"])
        .trim()
        .into();
    let shell = tmux.ok(&["display-message", "-p", "#{default-shell}"]);
    assert_eq!(shell.trim(), common::isolation::LOGIN_SHELL);
    assert!(shell_integration::launch(shell.trim()).is_some(), "{shell}");
    let pane = first_pane(&tmux, "first");
    at_its_prompt(&client, &pane).await;
    type_line(&tmux, &pane, "true");
    let listed = finished(&client, &pane, 1).await;
    assert_eq!(listed["shell_integration"], true, "{shell}: {listed}");
}

/// The shells the tests start live in the tests' own home, never the developer's: the tmux
/// servers get it, and so do the shells in their panes (bash here, as the gateway's servers
/// start it), with none of the variables that name another startup file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tests_start_their_shells_in_a_home_of_their_own() {
    let home = std::env::var_os("HOME").expect("a HOME");
    assert_ne!(
        Some(&home),
        common::isolation::user_home().as_ref(),
        "the developer's home"
    );
    let home = Path::new(&home);
    assert!(home.join(".zshrc").is_file(), "{}", home.display());

    let tmux = TestTmux::start();
    let server = tmux.ok(&["show-environment", "-g", "HOME"]);
    assert_eq!(server.trim(), format!("HOME={}", home.display()));
    let pane = tmux
        .split_running("main", common::isolation::LOGIN_SHELL)
        .to_string();
    type_line(
        &tmux,
        &pane,
        "echo \"home=$HOME rc=${ENV-}${BASH_ENV-}${ZDOTDIR-} shell=$SHELL\" | tr = :",
    );
    let seen = format!(
        "home:{} rc: shell:{}",
        home.display(),
        common::isolation::LOGIN_SHELL
    );
    common::tools::wait_for_screen(&tmux, &pane, &seen).await;
}

/// A shell still running its startup file holds its terminal: the commands the file runs are
/// in the shell's own process group (no job control yet), and what is typed waits for the
/// shell. `run_command` then types and answers; it does not call the shell busy. (A `~/.bashrc`
/// that runs `pyenv rehash` at startup was refused once.) The file waits until the run's line
/// shows on the screen (the terminal echoes it while the shell is busy), so the check ran
/// while the file was running, however slow the machine.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shell_still_running_its_startup_file_takes_a_run() {
    let tmux = TestTmux::start();
    tmux.ok(&["set-option", "-g", "default-command", ""]);
    tmux.ok(&["set-option", "-g", "default-shell", BASH.path]);
    let home = tempfile::tempdir().expect("a home directory");
    let go = home.path().join("go");
    std::fs::write(
        home.path().join(BASH.rc_file),
        "while [ ! -e \"$HOME/go\" ]; do sleep 0.1; done\n",
    )
    .expect("the startup file");
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let client = client(&gateway).await;
    call_ok(
        &client,
        "create_session",
        json!({"name": "s", "start_directory": "/", "environment": {"HOME": home.path()}}),
    )
    .await;
    let pane = first_pane(&tmux, "s");
    let run = call_ok(
        &client,
        "run_command",
        json!({"target": pane, "command": "echo after-$((20+1))", "timeout": 20}),
    );
    let release = async {
        common::tools::wait_for_screen(&tmux, &pane, "after-$((20+1))").await;
        std::fs::write(&go, "").expect("the go file");
    };
    let (run, ()) = tokio::join!(run, release);
    assert_eq!(run["output"], "after-21\n", "{run}");
    assert_eq!(run["exit_status"], 0, "{run}");
}
