//! Agents as workers: `spawn_agent` starts a configured agent CLI (the stand-in of
//! `tests/programs/agent_screens.py`, playing Claude Code's screens) in a new session, in a
//! new git worktree of a configured repository, and submits its first task once its screen
//! says it is ready; `list_agents` shows the fleet; `stop_agent` ends one, keeping its branch
//! and refusing to drop uncommitted work unless forced. Bad requests change nothing.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::tmux::TestTmux;
use common::tools::{Client, call_err, call_ok, call_ok_once_up, client, type_line, until_listed};
use common::{TestGateway, config_with_server, spawn_gateway};
use muxgate::config::Config;
use serde_json::{Value, json};

const STAND_IN: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/programs/agent_screens.py"
);

/// git in `dir`, with an identity of its own (no user configuration is read).
fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "user.name=test",
            "-c",
            "user.email=test@example.invalid",
        ])
        .args(args)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A repository with one commit on `main`, a directory for worktrees, and the stand-in
/// installed as `claude`.
struct Place {
    _dir: tempfile::TempDir,
    repo: PathBuf,
    worktrees: PathBuf,
    claude: PathBuf,
    /// Every line the stand-in read.
    log: PathBuf,
}

impl Place {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("a directory");
        let repo = dir.path().join("app");
        std::fs::create_dir(&repo).expect("repo dir");
        git(&repo, &["init", "-q", "-b", "main"]);
        std::fs::write(repo.join("README"), "app\n").expect("a file");
        git(&repo, &["add", "README"]);
        git(&repo, &["commit", "-q", "-m", "first"]);
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).expect("bin dir");
        let claude = bin.join("claude");
        std::fs::copy(STAND_IN, &claude).expect("the stand-in");
        Self {
            log: dir.path().join("lines.log"),
            worktrees: dir.path().join("worktrees"),
            repo,
            claude,
            _dir: dir,
        }
    }

    /// A key for signed notifications.
    fn key_file(&self) -> PathBuf {
        let file = self.log.with_file_name("notify.key");
        std::fs::write(&file, "fleet-key-9\n").expect("the key");
        file
    }

    fn config(&self, tmux: &TestTmux) -> Config {
        let mut config = config_with_server("fleet", &tmux.socket, false);
        let extra = Config::from_toml_str(&format!(
            "[agents.claude-code]\ncommand = '{}'\n\
             args = ['--startup', '1.5', '--busy', '1', '--log', '{}']\n\
             resume_args = ['--continue']\n\
             resume_session_args = ['--resume', '{{session}}']\n\
             env = {{ AGENT_ROLE = 'worker' }}\n\
             [repositories.app]\npath = '{}'\nworktrees = '{}'\n",
            self.claude.display(),
            self.log.display(),
            self.repo.display(),
            self.worktrees.display(),
        ))
        .expect("valid fleet config");
        config.agents = extra.agents;
        config.repositories = extra.repositories;
        config
    }
}

/// The environment of `pane`'s program, read from `/proc`.
fn environment_of(tmux: &TestTmux, pane: &str) -> String {
    let pid = tmux.ok(&["display-message", "-p", "-t", pane, "#{pane_pid}"]);
    let environ = std::fs::read(format!("/proc/{}/environ", pid.trim())).expect("environ");
    String::from_utf8_lossy(&environ).replace('\0', "\n")
}

async fn setup() -> (TestTmux, Place, TestGateway, Client) {
    let tmux = TestTmux::start();
    let place = Place::new();
    let gateway = spawn_gateway(place.config(&tmux)).await;
    let client = client(&gateway).await;
    (tmux, place, gateway, client)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_is_spawned_in_a_worktree_given_its_task_and_stopped() {
    let (tmux, place, _gateway, client) = setup().await;
    let spawned = call_ok(
        &client,
        "spawn_agent",
        json!({
            "kind": "claude-code", "id": "fix-login", "repository": "app",
            "title": "Fix the login", "env": {"TASK": "login"},
            "prompt": "fix the login bug", "timeout": 30
        }),
    )
    .await;
    // Ready by its idle screen (not by a sleep), and the prompt taken.
    assert_eq!(spawned["state"], "idle", "{spawned}");
    assert!(
        spawned["explain"][0]
            .as_str()
            .unwrap()
            .starts_with("screen: its prompt"),
        "{spawned}"
    );
    assert!(spawned["waited_ms"].as_u64().unwrap() >= 1500, "{spawned}");
    assert_eq!(spawned["prompt"]["outcome"], "submitted", "{spawned}");
    let pane = spawned["pane_id"].as_str().unwrap().to_owned();

    // Its worktree: a new branch from main, where its program runs, with its variables.
    let worktree = place.worktrees.join("fix-login");
    assert_eq!(spawned["worktree"]["branch"], "agent/fix-login");
    assert_eq!(spawned["worktree"]["path"], worktree.display().to_string());
    assert_eq!(
        git(&worktree, &["rev-parse", "--abbrev-ref", "HEAD"]),
        "agent/fix-login"
    );
    let cwd = tmux.ok(&["display-message", "-p", "-t", &pane, "#{pane_current_path}"]);
    assert_eq!(Path::new(cwd.trim()), worktree);
    let environment = environment_of(&tmux, &pane);
    for variable in [
        "MUXGATE_AGENT_ID=fix-login",
        "AGENT_ROLE=worker",
        "TASK=login",
    ] {
        assert!(environment.lines().any(|l| l == variable), "{variable}");
    }
    let title = tmux.ok(&["display-message", "-p", "-t", &pane, "#{pane_title}"]);
    assert_eq!(title.trim(), "Fix the login");

    // The task runs, then a permission dialog: the fleet shows it blocked, and why.
    let blocked = until_listed(&client, "fix-login", "blocked").await;
    assert_eq!(blocked["blocked_on"], "permission", "{blocked}");
    assert_eq!(blocked["kind"], "claude-code");
    assert_eq!(blocked["host"], "local");
    assert_eq!(blocked["title"], "Fix the login");
    assert!(
        blocked["why"].as_str().unwrap().contains("dialog"),
        "{blocked}"
    );
    assert!(blocked["last_line"].is_string(), "{blocked}");

    // The agent may write its repository's configuration: nothing it names there runs when
    // the gateway reads the worktree.
    let marker = place.worktrees.join("fsmonitor-ran");
    let monitor = place.worktrees.join("monitor.sh");
    std::fs::write(
        &monitor,
        format!("#!/bin/sh\ntouch '{}'\n", marker.display()),
    )
    .unwrap();
    let executable = std::os::unix::fs::PermissionsExt::from_mode(0o755);
    std::fs::set_permissions(&monitor, executable).unwrap();
    git(
        &worktree,
        &["config", "core.fsmonitor", &monitor.display().to_string()],
    );

    // Uncommitted work is not dropped unless the caller says so.
    std::fs::write(worktree.join("fix.txt"), "half done\n").expect("a change");
    let refused = call_err(&client, "stop_agent", json!({"agent_id": "fix-login"})).await;
    assert_eq!(refused["kind"], "conflict", "{refused}");
    assert!(
        refused["message"].as_str().unwrap().contains("fix.txt"),
        "{refused}"
    );
    assert!(worktree.is_dir(), "a refused stop removes nothing");
    assert!(!marker.exists(), "the agent's fsmonitor ran as the gateway");
    until_listed(&client, "fix-login", "blocked").await;

    let stopped = call_ok(
        &client,
        "stop_agent",
        json!({"agent_id": "fix-login", "force": true}),
    )
    .await;
    assert_eq!(stopped["session_killed"], true, "{stopped}");
    assert_eq!(stopped["dropped_changes"], 1, "{stopped}");
    assert_eq!(stopped["branch_kept"], "agent/fix-login");
    assert!(!worktree.exists(), "the worktree is removed");
    assert_eq!(
        git(&place.repo, &["branch", "--list", "agent/fix-login"]),
        "agent/fix-login",
        "the branch stays"
    );
    let sessions = tmux.ok(&["list-sessions", "-F", "#{session_name}"]);
    assert!(!sessions.lines().any(|s| s == "fix-login"), "{sessions}");
    let list = call_ok(&client, "list_agents", json!({})).await;
    assert_eq!(list["agents"], json!([]), "{list}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_ends_reads_exited_and_its_id_is_taken_until_stopped() {
    let (tmux, _place, _gateway, client) = setup().await;
    let first = call_ok(&client, "spawn_agent", json!({"kind": "claude-code"})).await;
    assert_eq!(first["agent_id"], "claude-code-1", "{first}");
    assert_eq!(first["state"], "idle", "{first}");
    assert!(first.get("worktree").is_none() && first.get("prompt").is_none());
    let second = call_ok(&client, "spawn_agent", json!({"kind": "claude-code"})).await;
    assert_eq!(second["agent_id"], "claude-code-2", "{second}");
    let again = call_err(
        &client,
        "spawn_agent",
        json!({"kind": "claude-code", "id": "claude-code-1"}),
    )
    .await;
    assert_eq!(again["kind"], "conflict", "{again}");

    // Its program ends: its pane stays, and the fleet says so.
    let pane = first["pane_id"].as_str().unwrap();
    type_line(&tmux, pane, "/exit");
    let exited = until_listed(&client, "claude-code-1", "exited").await;
    assert_eq!(exited["kind"], "claude-code", "{exited}");
    let dead = tmux.ok(&["display-message", "-p", "-t", pane, "#{pane_dead}"]);
    assert_eq!(dead.trim(), "1");

    // Its session gone, it still shows (to the client that spawned it) until stopped.
    tmux.ok(&["kill-session", "-t", "claude-code-1"]);
    let gone = until_listed(&client, "claude-code-1", "exited").await;
    assert_eq!(gone["why"], "its session is gone", "{gone}");
    let stopped = call_ok(&client, "stop_agent", json!({"agent_id": "claude-code-1"})).await;
    assert_eq!(stopped["session_killed"], false, "{stopped}");
    let respawned = call_ok(
        &client,
        "spawn_agent",
        json!({"kind": "claude-code", "id": "claude-code-1"}),
    )
    .await;
    assert_eq!(respawned["agent_id"], "claude-code-1", "{respawned}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_spawn_is_refused_and_changes_nothing() {
    let (tmux, place, _gateway, client) = setup().await;
    let before = tmux.ok(&["list-sessions", "-F", "#{session_name}"]);
    let cases = [
        (
            json!({"kind": "copilot"}),
            "invalid_arguments",
            "claude-code",
        ),
        (
            json!({"kind": "claude-code", "repository": "other"}),
            "not_found",
            "app",
        ),
        (
            json!({"kind": "claude-code", "repository": "app", "base": "--orphan"}),
            "invalid_arguments",
            "base",
        ),
        (
            json!({"kind": "claude-code", "repository": "app", "base": "no-such-branch"}),
            "conflict",
            "git",
        ),
        (
            json!({"kind": "claude-code", "id": "a/b"}),
            "invalid_arguments",
            "id",
        ),
        (
            json!({"kind": "claude-code", "env": {"AGENT_ROLE": "boss"}}),
            "invalid_arguments",
            "AGENT_ROLE",
        ),
        (
            json!({"kind": "claude-code", "repository": "app", "start_directory": "/tmp"}),
            "invalid_arguments",
            "not both",
        ),
        (
            json!({"kind": "claude-code", "prompt": "  \n"}),
            "invalid_arguments",
            "prompt",
        ),
    ];
    for (args, kind, says) in cases {
        let refused = call_err(&client, "spawn_agent", args.clone()).await;
        assert_eq!(refused["kind"], kind, "{args}: {refused}");
        let text = format!("{} {}", refused["message"], refused["suggestion"]);
        assert!(text.contains(says), "{args}: {refused}");
    }
    assert_eq!(
        tmux.ok(&["list-sessions", "-F", "#{session_name}"]),
        before,
        "no session was made"
    );
    let worktrees = std::fs::read_dir(&place.worktrees).map_or(0, |dir| dir.count());
    assert_eq!(worktrees, 0, "no worktree was left");
    assert_eq!(git(&place.repo, &["branch", "--list", "agent/*"]), "");
    let stop = call_err(&client, "stop_agent", json!({"agent_id": "nobody"})).await;
    assert_eq!(stop["kind"], "not_found", "{stop}");
}

/// The lines the stand-in read, in order.
fn lines_read(place: &Place) -> Vec<String> {
    std::fs::read_to_string(&place.log)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocked_agent_is_answered_once_and_only_on_the_screen_that_was_read() {
    let (tmux, place, _gateway, client) = setup().await;
    let spawned = call_ok(
        &client,
        "spawn_agent",
        json!({"kind": "claude-code", "id": "asker", "prompt": "deploy it"}),
    )
    .await;
    assert_eq!(spawned["prompt"]["outcome"], "submitted", "{spawned}");
    let pane = spawned["pane_id"].as_str().unwrap().to_owned();
    let blocked = until_listed(&client, "asker", "blocked").await;
    let digest = blocked["screen_digest"].as_str().unwrap().to_owned();
    assert_eq!(digest.len(), 16, "{blocked}");

    // An answer to a screen the caller did not read is not typed.
    let stale = call_ok(
        &client,
        "answer_agent",
        json!({"target": pane, "screen_digest": "0123456789abcdef", "keys": ["1", "Enter"]}),
    )
    .await;
    assert_eq!(stale["outcome"], "screen_changed", "{stale}");
    assert_eq!(stale["screen_digest"], digest.as_str(), "{stale}");
    assert!(stale["last_line"].is_string(), "{stale}");

    // The screen it read: answered, and the agent goes back to work.
    let args = json!({
        "target": pane, "screen_digest": digest, "keys": ["1", "Enter"],
        "idempotency_key": "answer-asker-1"
    });
    let answered = call_ok(&client, "answer_agent", args.clone()).await;
    assert_eq!(answered["outcome"], "answered", "{answered}");
    assert_eq!(answered["replayed"], false);
    assert_ne!(answered["screen_digest"], digest.as_str());

    // A retry (the client never saw the answer) types nothing and gets the same answer.
    let retried = call_ok(&client, "answer_agent", args).await;
    assert_eq!(retried["replayed"], true, "{retried}");
    assert_eq!(retried["outcome"], "answered");
    assert_eq!(retried["screen_digest"], answered["screen_digest"]);
    // The key names that answer: for other keys it is refused, nothing typed.
    let reused = call_err(
        &client,
        "answer_agent",
        json!({"target": pane, "screen_digest": digest, "keys": ["2"],
               "idempotency_key": "answer-asker-1"}),
    )
    .await;
    assert_eq!(reused["kind"], "conflict", "{reused}");

    // What the agent read: the task, one answer, then (after the retry) only the test's
    // marker: a second "1" would have come before it.
    until_listed(&client, "asker", "idle").await;
    type_line(&tmux, &pane, "marker");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !lines_read(&place).contains(&"marker".to_owned()) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{:?}",
            lines_read(&place)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(lines_read(&place), ["deploy it", "1", "marker"]);

    let bad = call_err(
        &client,
        "answer_agent",
        json!({"target": pane, "screen_digest": digest, "keys": ["a\u{7}b"]}),
    )
    .await;
    assert_eq!(bad["kind"], "invalid_arguments", "{bad}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_is_told_once_of_each_edge_a_spawned_agent_makes() {
    let received: common::webhook::Received = std::sync::Arc::default();
    let hooks = common::webhook::receiver(received.clone()).await;
    let tmux = TestTmux::start();
    let place = Place::new();
    let mut config = place.config(&tmux);
    let tables: toml::Table = toml::from_str(&format!(
        "[notify.targets.lead]\nformat = 'json'\nurl = '{hooks}/lead'\nsecret_file = '{}'\n\
         events = ['agent_blocked', 'agent_idle', 'agent_exited']\n",
        place.key_file().display()
    ))
    .expect("the tables");
    config.notify = tables["notify"].clone().try_into().expect("notify");
    // A state directory of the test's own: a second gateway reads the first one's records.
    let state = tempfile::tempdir().expect("a state directory");
    config.state.dir = Some(state.path().to_owned());
    let gateway = spawn_gateway(config.clone()).await;
    let client = client(&gateway).await;
    let events = || common::webhook::json_posts(&received, "lead");
    let until_events = |n: usize| {
        let events = &events;
        async move {
            let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
            loop {
                let got = events();
                if got.len() >= n {
                    return got;
                }
                assert!(tokio::time::Instant::now() < deadline, "{got:?}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    };

    let spawned = call_ok(
        &client,
        "spawn_agent",
        json!({"kind": "claude-code", "id": "pusher", "prompt": "push it"}),
    )
    .await;
    let pane = spawned["pane_id"].as_str().unwrap().to_owned();
    // Its dialog: told once, with why, and nothing about what it was asked to do.
    let blocked = until_events(1).await;
    assert_eq!(blocked[0]["event"], "agent_blocked", "{blocked:?}");
    assert_eq!(blocked[0]["agent"], "pusher");
    assert_eq!(blocked[0]["blocked_on"], "permission");
    assert!(!blocked[0].to_string().contains("push it"));

    let row = until_listed(&client, "pusher", "blocked").await;
    let answered = call_ok(
        &client,
        "answer_agent",
        json!({"target": pane, "screen_digest": row["screen_digest"], "keys": ["1", "Enter"]}),
    )
    .await;
    assert_eq!(answered["outcome"], "answered", "{answered}");
    let idle = until_events(2).await;
    assert_eq!(idle[1]["event"], "agent_idle", "{idle:?}");

    type_line(&tmux, &pane, "/exit");
    let exited = until_events(3).await;
    assert_eq!(exited[2]["event"], "agent_exited", "{exited:?}");
    // Settled: no event twice, none for the states between (working).
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let kinds: Vec<Value> = events().iter().map(|e| e["event"].clone()).collect();
    assert_eq!(kinds, ["agent_blocked", "agent_idle", "agent_exited"]);

    // Stopped on purpose: no news.
    let quiet = call_ok(
        &client,
        "spawn_agent",
        json!({"kind": "claude-code", "id": "quiet"}),
    )
    .await;
    assert_eq!(quiet["state"], "idle");
    call_ok(&client, "stop_agent", json!({"agent_id": "quiet"})).await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(events().len(), 3, "{:?}", events());

    // The gateway restarts; its agent does not. The new gateway follows it from its records:
    // given a task, its dialog is told.
    let later = call_ok(
        &client,
        "spawn_agent",
        json!({"kind": "claude-code", "id": "later"}),
    )
    .await;
    let pane = later["pane_id"].as_str().unwrap().to_owned();
    drop(client);
    gateway
        .stop(Duration::from_secs(10))
        .await
        .expect("the first gateway stops");
    let logs = common::logs::captured("muxgate::mcp::agent_watch=info");
    let _again = spawn_gateway(config).await;
    // Given its task only once the new gateway follows it: an edge before that is one no
    // watch saw.
    let following = common::wait_until(Duration::from_secs(20), || {
        let text = common::logs::text(&logs);
        text.contains("following a recorded agent again") && text.contains("later")
    })
    .await;
    assert!(following, "{}", common::logs::text(&logs));
    type_line(&tmux, &pane, "deploy it");
    let told = until_events(4).await;
    assert_eq!(told[3]["event"], "agent_blocked", "{told:?}");
    assert_eq!(told[3]["agent"], "later", "{told:?}");
}

/// A coordinator waits on its workers without polling: `wait_for_state` with an agent
/// condition ends when one of them needs it (blocked, with its screen's last line), names the
/// others still pending, waits for all of them when asked, and sends tmux nothing while they
/// sit quiet.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_coordinator_is_woken_when_a_worker_needs_it_and_waits_for_free() {
    let (_tmux, _place, gateway, client) = setup().await;
    let pane_of = |spawned: &Value| spawned["pane_id"].as_str().expect("a pane").to_owned();
    let asker = pane_of(
        &call_ok(
            &client,
            "spawn_agent",
            json!({"kind": "claude-code", "id": "asker", "prompt": "push it"}),
        )
        .await,
    );
    let resting = pane_of(
        &call_ok(
            &client,
            "spawn_agent",
            json!({"kind": "claude-code", "id": "resting"}),
        )
        .await,
    );
    let wait = |targets: Vec<&str>, condition: &str, mode: &str, timeout: f64| {
        call_ok(
            &client,
            "wait_for_state",
            json!({"targets": targets, "condition": condition, "mode": mode, "timeout": timeout}),
        )
    };

    // The asker works for a second, then asks: the wait ends then, naming it.
    let woken = wait(vec![&asker, &resting], "agent_blocked", "any", 20.0).await;
    assert_eq!(woken["outcome"], "reached", "{woken}");
    let reached = &woken["reached"][0];
    assert_eq!(reached["pane_id"], asker.as_str(), "{woken}");
    assert_eq!(reached["agent_state"], "blocked");
    assert!(reached["line"].is_string(), "{woken}");
    assert_eq!(woken["pending"], json!([resting]));

    // Both have something for the coordinator now (one asks, one is done): all of them.
    let both = wait(vec![&asker, &resting], "agent_waiting", "all", 20.0).await;
    assert_eq!(both["outcome"], "reached", "{both}");
    let mut states: Vec<&str> = both["reached"]
        .as_array()
        .expect("reached")
        .iter()
        .map(|r| r["agent_state"].as_str().expect("a state"))
        .collect();
    states.sort_unstable();
    assert_eq!(states, ["blocked", "idle"], "{both}");

    // The asker is not idle: that wait times out, naming it pending.
    let not_yet = wait(vec![&asker], "agent_idle", "any", 1.0).await;
    assert_eq!(not_yet["outcome"], "timeout", "{not_yet}");
    assert_eq!(not_yet["pending"], json!([asker]));

    // Waiting on a quiet agent costs its set-up only, however long it lasts.
    let commands = || {
        common::probe::metric(
            &gateway.base,
            "muxgate_tmux_commands_total{server=\"fleet\"}",
        )
    };
    let before = commands().await;
    wait(vec![&resting], "agent_blocked", "any", 1.0).await;
    let short = commands().await - before;
    let before = commands().await;
    wait(vec![&resting], "agent_blocked", "any", 3.0).await;
    let long = commands().await - before;
    assert!(short > 0.0, "the set-up reads the agent's state");
    assert_eq!(short, long, "waiting 2 s longer sent tmux commands");

    let refused = call_err(
        &client,
        "wait_for_state",
        json!({"targets": [asker], "condition": "agent_idle", "pattern": "done"}),
    )
    .await;
    assert_eq!(refused["kind"], "invalid_arguments", "{refused}");
}

/// The command line of `pane`'s program, read from `/proc`.
fn command_line_of(tmux: &TestTmux, pane: &str) -> String {
    let pid = tmux.ok(&["display-message", "-p", "-t", pane, "#{pane_pid}"]);
    let cmdline = std::fs::read(format!("/proc/{}/cmdline", pid.trim())).expect("cmdline");
    String::from_utf8_lossy(&cmdline).replace('\0', " ")
}

/// After its tmux server is lost (a reboot, a killed server), an agent is started again with
/// `resume`: in its worktree, uncommitted work kept, its kind's `resume_args` given, its
/// first prompt taken, and the answer says what did not come back. A worktree whose directory
/// is gone is made again on its branch (and the answer says its uncommitted work is lost). An
/// agent that still runs is not started twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_agent_is_resumed_in_its_worktree_and_told_what_was_lost() {
    let (tmux, place, gateway, client) = setup().await;
    let spawned = call_ok(
        &client,
        "spawn_agent",
        json!({"kind": "claude-code", "id": "fixer", "repository": "app", "title": "fixer"}),
    )
    .await;
    let worktree = PathBuf::from(spawned["worktree"]["path"].as_str().expect("a worktree"));
    std::fs::write(worktree.join("notes.txt"), "half done\n").expect("uncommitted work");

    let running = call_err(&client, "spawn_agent", json!({"resume": "fixer"})).await;
    assert_eq!(running["kind"], "conflict", "{running}");

    // The machine reboots: tmux is started again, with none of its sessions.
    tmux.kill_server();
    tmux.start_again();
    let resumed = call_ok_once_up(
        &client,
        "spawn_agent",
        json!({"resume": "fixer", "prompt": "carry on"}),
    )
    .await;
    assert_eq!(resumed["agent_id"], "fixer", "{resumed}");
    assert_eq!(resumed["prompt"]["outcome"], "submitted", "{resumed}");
    let lost = resumed["lost"].to_string();
    assert!(lost.contains("screen and scrollback"), "{lost}");
    assert!(!lost.contains("conversation"), "{lost}");
    assert!(!lost.contains("not committed"), "{lost}");
    let pane = resumed["pane_id"].as_str().expect("a pane").to_owned();
    assert!(command_line_of(&tmux, &pane).contains("--continue"));
    let cwd = tmux.ok(&["display-message", "-p", "-t", &pane, "#{pane_current_path}"]);
    assert_eq!(Path::new(cwd.trim()), worktree);
    assert!(worktree.join("notes.txt").exists(), "uncommitted work kept");
    let row = until_listed(&client, "fixer", "blocked").await;
    assert_eq!(row["pane_id"], pane.as_str(), "{row}");
    assert_eq!(row["title"], "fixer", "{row}");

    // Lost with its worktree's directory: made again on its branch, and said so.
    tmux.kill_server();
    tmux.start_again();
    std::fs::remove_dir_all(&worktree).expect("the worktree goes");
    let again = call_ok_once_up(&client, "spawn_agent", json!({"resume": "fixer"})).await;
    let lost = again["lost"].to_string();
    assert!(lost.contains("not committed"), "{lost}");
    assert!(
        worktree.join("README").exists(),
        "made again from its branch"
    );
    assert!(!worktree.join("notes.txt").exists());
    assert_eq!(git(&worktree, &["branch", "--show-current"]), "agent/fixer");

    // Its hook reported the CLI's own session id: the next resume takes that conversation up.
    let pane = again["pane_id"].as_str().expect("a pane").to_owned();
    let bad = call_err(
        &client,
        "report_agent_state",
        json!({"target": pane, "state": "idle", "session_id": "--dangerously"}),
    )
    .await;
    assert_eq!(bad["kind"], "invalid_arguments", "{bad}");
    // The repository's hook script, given Claude Code's hook JSON on its standard input.
    let mut hook = std::process::Command::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/deploy/hooks/muxgate-agent-state"
    ))
    .args(["idle", "claude-code"])
    .env("MUXGATE_URL", &gateway.mcp_url)
    .env("MUXGATE_TOKEN", &gateway.token)
    .env("TMUX_PANE", &pane)
    .stdin(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .expect("run the hook script");
    std::io::Write::write_all(
        &mut hook.stdin.take().expect("its stdin"),
        br#"{"session_id": "4f1c2a9e-7b3d", "hook_event_name": "PostToolUse",
             "tool_input": {"session_id": "not-its-own"}}"#,
    )
    .expect("the hook's input");
    let hooked = hook.wait_with_output().expect("the hook ends");
    assert!(
        hooked.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&hooked.stderr)
    );
    tmux.kill_server();
    tmux.start_again();
    let taken_up = call_ok(&client, "spawn_agent", json!({"resume": "fixer"})).await;
    let pane = taken_up["pane_id"].as_str().expect("a pane").to_owned();
    let command = command_line_of(&tmux, &pane);
    assert!(
        command.contains("--resume") && command.contains("4f1c2a9e-7b3d"),
        "{command}"
    );
    assert!(!command.contains("--continue"), "{command}");
    assert!(!taken_up["lost"].to_string().contains("conversation"));
    let saved = std::fs::read_to_string(
        gateway
            .config
            .state
            .dir
            .as_ref()
            .expect("a state dir")
            .join("agents.json"),
    )
    .expect("the agents' records");
    assert!(
        saved.contains("\"cli_session\":\"4f1c2a9e-7b3d\""),
        "{saved}"
    );

    for (args, kind) in [
        (json!({"resume": "nobody"}), "not_found"),
        (
            json!({"resume": "fixer", "kind": "claude-code"}),
            "invalid_arguments",
        ),
        (json!({}), "invalid_arguments"),
    ] {
        let refused = call_err(&client, "spawn_agent", args.clone()).await;
        assert_eq!(refused["kind"], kind, "{args}: {refused}");
    }
    drop(place);
}

/// Reads SSE messages from `response` until one satisfies `found` (20 s at most).
async fn until_message(
    response: &mut reqwest::Response,
    text: &mut String,
    found: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(message) = common::sse_events(text)
            .into_iter()
            .filter_map(|event| serde_json::from_str::<Value>(&event.data).ok())
            .find(|m| found(m))
        {
            return message;
        }
        let chunk = tokio::time::timeout_at(deadline, response.chunk())
            .await
            .unwrap_or_else(|_| panic!("no such message within 20 s: {text}"))
            .expect("read the stream")
            .unwrap_or_else(|| panic!("the stream ended: {text}"));
        text.push_str(&String::from_utf8_lossy(&chunk));
    }
}

/// A coordinator subscribes to the fleet resource instead of polling: with 2026-07-28
/// `subscriptions/listen` and with a 2025 session's `resources/subscribe`, it is told
/// (`notifications/resources/updated`) when an agent it may see changes state, and reading
/// the resource then shows the agent as list_agents does. A pane's resource sends no updates.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_coordinator_subscribed_to_the_fleet_is_told_of_each_change() {
    let (_tmux, _place, gateway, client) = setup().await;
    let uri = "tmux://fleet/agents";
    let updated = |m: &Value| m["method"] == "notifications/resources/updated";

    // 2026-07-28: the subscription is a request whose answer streams.
    let mut stateless = gateway.raw();
    stateless.bearer = Some(gateway.token.clone());
    stateless.protocol_version = Some(common::STATELESS_VERSION.to_owned());
    let listen = json!({
        "jsonrpc": "2.0", "id": 7, "method": "subscriptions/listen",
        "params": {"notifications": {"resourceSubscriptions": [uri, "tmux://fleet/sessions"]},
                   "_meta": common::stateless_meta()}
    });
    let mut stream = stateless.post(&listen).send().await.expect("listen");
    assert!(stream.status().is_success(), "{}", stream.status());
    let mut text = String::new();
    let acknowledged = until_message(&mut stream, &mut text, |m| {
        m["method"] == "notifications/subscriptions/acknowledged"
    })
    .await;
    assert_eq!(
        acknowledged["params"]["notifications"]["resourceSubscriptions"],
        json!([uri]),
        "only the fleet resource sends updates: {acknowledged}"
    );

    // 2025: a session subscribes, and hears on its GET stream.
    let mut legacy = gateway.raw();
    legacy.bearer = Some(gateway.token.clone());
    legacy.initialize().await;
    let mut events = legacy.stream().send().await.expect("GET stream");
    let subscribed = legacy
        .request(
            &json!({"jsonrpc": "2.0", "id": 3, "method": "resources/subscribe",
                         "params": {"uri": uri}}),
        )
        .await;
    assert!(subscribed.get("result").is_some(), "{subscribed}");
    let refused = legacy
        .request(
            &json!({"jsonrpc": "2.0", "id": 4, "method": "resources/subscribe",
                         "params": {"uri": "tmux://fleet/sessions"}}),
        )
        .await;
    assert!(refused.get("error").is_some(), "{refused}");

    call_ok(
        &client,
        "spawn_agent",
        json!({"kind": "claude-code", "id": "told", "prompt": "push it"}),
    )
    .await;
    let told = until_message(&mut stream, &mut text, updated).await;
    assert_eq!(told["params"]["uri"], uri, "{told}");
    let mut legacy_text = String::new();
    let told = until_message(&mut events, &mut legacy_text, updated).await;
    assert_eq!(told["params"]["uri"], uri, "{told}");

    // Woken, it reads the resource: the agent, as list_agents shows it.
    let read = stateless
        .request(
            &json!({"jsonrpc": "2.0", "id": 8, "method": "resources/read",
                         "params": {"uri": uri, "_meta": common::stateless_meta()}}),
        )
        .await;
    let body: Value = serde_json::from_str(
        read["result"]["contents"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("{read}")),
    )
    .expect("JSON");
    assert_eq!(body["agents"][0]["agent_id"], "told", "{body}");

    // Its later edges (working, then blocked on its dialog) wake it again.
    until_listed(&client, "told", "blocked").await;
    let mut rest = text
        .rfind("\n\n")
        .map_or(text.clone(), |end| text[end + 2..].to_owned());
    let again = until_message(&mut stream, &mut rest, updated).await;
    assert_eq!(again["params"]["uri"], uri);
}
