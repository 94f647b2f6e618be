//! `muxgate doctor`'s checks against real tmux servers on private sockets.

mod common;
mod zellij_common;

use std::time::Duration;

use common::tmux::{TestTmux, unique_socket_name};
use common::{config_with_server, wait_until};
use muxgate::doctor::{self, Outcome};

fn client_count(tmux: &TestTmux) -> usize {
    tmux.ok(&["list-clients", "-F", "#{client_pid}"])
        .lines()
        .count()
}

#[tokio::test]
async fn doctor_tells_live_from_stale_muxgate_clients() {
    let tmux = TestTmux::start();
    let own_pid = std::process::id();
    // Spawned by this process: owner pid matches the parent, so it is live.
    let live = tmux.attach_control_client(&format!("muxgate-{own_pid}"));
    // Claims an owner that is not its parent: what a crashed gateway leaves behind.
    let stale = tmux.attach_control_client("muxgate-1");
    // A human's client is not muxgate's business.
    let _other = tmux.attach_control_client("xterm-256color");
    assert!(
        wait_until(Duration::from_secs(5), || client_count(&tmux) == 3).await,
        "control clients did not attach"
    );

    let config = config_with_server("work", &tmux.socket, false);
    let report = doctor::run(&config).await;
    let text = report.render();

    assert!(report.failed(), "{text}");
    let clients: Vec<_> = report
        .checks
        .iter()
        .filter(|c| c.subject == "clients work")
        .collect();
    assert_eq!(clients.len(), 2, "{text}");
    let live_check = clients
        .iter()
        .find(|c| c.detail.contains(&format!("pid {} ", live.pid())))
        .expect("live client reported");
    assert_eq!(live_check.outcome, Outcome::Ok, "{text}");
    let stale_check = clients
        .iter()
        .find(|c| c.detail.contains(&format!("kill {}", stale.pid())))
        .expect("stale client reported with its kill command");
    assert_eq!(stale_check.outcome, Outcome::Fail, "{text}");
    assert!(
        report.checks.iter().any(|c| c.subject == "server work"
            && c.outcome == Outcome::Ok
            && c.detail.contains("1 session")),
        "{text}"
    );
}

#[tokio::test]
async fn doctor_passes_with_no_muxgate_clients() {
    let tmux = TestTmux::start();
    let report = doctor::run(&config_with_server("work", &tmux.socket, false)).await;
    assert!(!report.failed(), "{}", report.render());
    assert!(
        report
            .checks
            .iter()
            .any(|c| c.subject == "tmux" && c.detail.starts_with("tmux ")),
        "{}",
        report.render()
    );
}

#[tokio::test]
async fn doctor_fails_on_an_absent_server_unless_allowed() {
    let socket = unique_socket_name();
    let report = doctor::run(&config_with_server("gone", &socket, false)).await;
    assert!(report.failed());
    assert!(report.render().contains("not running"));

    let report = doctor::run(&config_with_server("gone", &socket, true)).await;
    assert!(!report.failed(), "{}", report.render());
    assert!(report.render().contains("allowed absent"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_checks_zellij_servers_and_their_sessions() {
    let Some(h) = zellij_common::Harness::new().await else {
        return;
    };
    let session = h.session().await;
    let env = &h.env;
    let path = |p: &Option<std::path::PathBuf>| p.as_ref().unwrap().display().to_string();
    let config = muxgate::config::Config::from_toml_str(&format!(
        "[zellij]\nbinary = '{}'\n\
         [zellij.servers.up]\nsession = '{session}'\nsocket_dir = '{dir}'\nhome = '{home}'\n\
         [zellij.servers.down]\nsession = 'absent'\nsocket_dir = '{dir}'\nhome = '{home}'\n\
         [zellij.servers.any]\nsocket_dir = '{dir}'\n",
        env.binary.display(),
        dir = path(&env.socket_dir),
        home = path(&env.home),
    ))
    .unwrap();
    let mut broken = config.clone();
    broken.zellij.binary = "/nonexistent/zellij".into();

    let report = doctor::run(&config).await;
    let text = report.render();
    let check = |name: &str| {
        report
            .checks
            .iter()
            .find(|c| c.subject == format!("zellij server {name}"))
            .unwrap_or_else(|| panic!("no check of {name}: {text}"))
            .clone()
    };
    assert_eq!(check("up").outcome, Outcome::Ok, "{text}");
    assert!(check("up").detail.contains("1 live session"), "{text}");
    assert_eq!(check("down").outcome, Outcome::Warn, "{text}");
    assert!(
        check("down").detail.contains("absent is not running"),
        "{text}"
    );
    // No default session: nothing to warn about.
    assert_eq!(check("any").outcome, Outcome::Ok, "{text}");

    let report = doctor::run(&broken).await;
    let failed = report
        .checks
        .iter()
        .find(|c| c.subject == "zellij server up")
        .unwrap();
    assert_eq!(failed.outcome, Outcome::Fail, "{}", report.render());
    assert!(
        failed.detail.contains("cannot run zellij"),
        "{}",
        report.render()
    );
}

#[tokio::test]
async fn doctor_checks_workspaces_and_warns_about_shared_servers() {
    if !common::needs::sandbox("doctor_checks_workspaces_and_warns_about_shared_servers") {
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let mut config = muxgate::config::Config::from_toml_str(
        "[clients.alice]\nsessions = ['a-*']\n[tmux.servers.default]\nallow_absent = true\n",
    )
    .unwrap();
    config.state.dir = Some(state.path().to_owned());
    let report = doctor::run(&config).await;
    let isolation = report.checks.iter().find(|c| c.subject == "isolation");
    assert!(
        isolation.is_some_and(|c| c.outcome == Outcome::Warn && c.detail.contains("alice")),
        "{}",
        report.render()
    );

    config.workspaces.enabled = true;
    let report = doctor::run(&config).await;
    let text = report.render();
    let sandbox = report
        .checks
        .iter()
        .find(|c| c.subject == "sandbox")
        .expect(&text);
    assert_eq!(sandbox.outcome, Outcome::Ok, "{text}");
    assert!(
        report
            .checks
            .iter()
            .any(|c| c.subject == "workspaces" && c.detail.starts_with("0 in")),
        "{text}"
    );
    // The configured server stays beside the workspaces, unsandboxed: doctor says so, until
    // the configuration lists none.
    let isolation = report.checks.iter().find(|c| c.subject == "isolation");
    assert!(
        isolation.is_some_and(|c| c.outcome == Outcome::Warn
            && c.detail
                .starts_with("configured tmux server(s) default beside workspaces")),
        "{text}"
    );
    config.tmux.servers.clear();
    let report = doctor::run(&config).await;
    assert!(
        !report.checks.iter().any(|c| c.subject == "isolation"),
        "{}",
        report.render()
    );

    config.workspaces.bwrap = "/nonexistent/bwrap".into();
    let report = doctor::run(&config).await;
    let sandbox = report
        .checks
        .iter()
        .find(|c| c.subject == "sandbox")
        .unwrap();
    assert_eq!(sandbox.outcome, Outcome::Fail);
    assert!(
        sandbox.detail.contains("apt-get install bubblewrap"),
        "{}",
        sandbox.detail
    );
}

/// As root, workspaces run as uids of their own and their sandbox is set up as that uid from
/// the state directory: doctor fails a state directory they cannot pass through to (every
/// workspace would fail to start), and says whether homes and memory get their bounds. As a
/// normal user the same directory is fine (workspaces run as that user).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_checks_that_workspaces_can_reach_the_state_directory() {
    if !common::needs::sandbox("doctor_checks_that_workspaces_can_reach_the_state_directory") {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let base = tempfile::tempdir().unwrap();
    let locked = base.path().join("locked");
    std::fs::create_dir(&locked).unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o700)).unwrap();
    let mut config = muxgate::config::Config::from_toml_str("").unwrap();
    config.state.dir = Some(locked.join("state"));
    config.workspaces.enabled = true;
    // SAFETY: geteuid(2) cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    let report = doctor::run(&config).await;
    let text = report.render();
    let check = |subject: &str| {
        report
            .checks
            .iter()
            .find(|c| c.subject == subject)
            .unwrap_or_else(|| panic!("no {subject} check: {text}"))
    };
    let state = check("state");
    if root {
        assert_eq!(state.outcome, Outcome::Fail, "{text}");
        assert!(
            state.detail.contains(&locked.display().to_string()),
            "{text}"
        );
        assert_eq!(check("homes").outcome, Outcome::Ok, "{text}");
    } else {
        assert_eq!(state.outcome, Outcome::Ok, "{text}");
        assert_eq!(check("homes").outcome, Outcome::Warn, "{text}");
    }
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o711)).unwrap();
    let report = doctor::run(&config).await;
    let state = report.checks.iter().find(|c| c.subject == "state").unwrap();
    assert_eq!(state.outcome, Outcome::Ok, "{}", report.render());
}
