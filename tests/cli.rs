//! The `muxgate` binary: `serve` start-up banner and SIGTERM, `check-config` and `doctor` exit
//! codes.

mod common;

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

fn muxgate() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_muxgate"));
    // Only what the test sets: no MUXGATE_* from the environment running the tests. tmux's
    // socket directory is kept, so that tmux servers land where the test run put the others.
    command
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .envs(std::env::var_os("TMUX_TMPDIR").map(|dir| ("TMUX_TMPDIR", dir)))
        .stdin(Stdio::null())
        .kill_on_drop(true);
    command
}

fn write_config(dir: &tempfile::TempDir, name: &str, text: &str) -> std::path::PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, text).expect("write config");
    path
}

#[tokio::test]
async fn serve_prints_the_endpoint_and_stops_cleanly_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        &dir,
        "serve.toml",
        &format!(
            "[tmux.servers.work]\nsocket_name = '{}'\nallow_absent = true\n",
            common::tmux::unique_socket_name()
        ),
    );
    let mut child = muxgate()
        .arg("serve")
        .arg("--config")
        .arg(&config)
        .args(["--bind", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn muxgate serve");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut banner = String::new();
    let url = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = lines.next_line().await.expect("read stdout") {
            banner.push_str(&line);
            banner.push('\n');
            if let Some(url) = line.trim().strip_prefix("MCP endpoint: ") {
                return url.to_owned();
            }
        }
        panic!("serve exited before printing its endpoint: {banner}");
    })
    .await
    .expect("banner within 30 s");
    assert!(
        url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"),
        "{url}"
    );
    // The rest of the banner: servers and the client snippet.
    let rest = tokio::time::timeout(Duration::from_secs(5), async {
        let mut text = String::new();
        while let Some(line) = lines.next_line().await.expect("read stdout") {
            text.push_str(&line);
            text.push('\n');
            if line == "}" {
                break;
            }
        }
        text
    })
    .await
    .expect("snippet within 5 s");
    assert!(rest.contains("tmux servers: work"), "{rest}");
    assert!(rest.contains(&format!("\"url\": \"{url}\"")), "{rest}");

    let health = reqwest::get(url.replace("/mcp", "/healthz"))
        .await
        .expect("GET /healthz");
    assert_eq!(health.status(), reqwest::StatusCode::OK);

    let pid = child.id().expect("running") as libc::pid_t;
    // SAFETY: kill(2) with a pid we spawned and still own (not yet reaped).
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let status = tokio::time::timeout(Duration::from_secs(15), child.wait())
        .await
        .expect("exit within the grace period")
        .expect("wait");
    assert!(status.success(), "{status}");
}

#[tokio::test]
async fn check_config_prints_ok_or_the_offending_key() {
    let dir = tempfile::tempdir().unwrap();
    let good = write_config(&dir, "good.toml", "[http]\nbind = '127.0.0.1:9999'\n");
    let output = muxgate()
        .arg("check-config")
        .arg(&good)
        .output()
        .await
        .expect("run");
    assert!(output.status.success());
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.starts_with("OK: "), "{stdout}");
    assert!(stdout.contains("127.0.0.1:9999"), "{stdout}");

    let bad = write_config(&dir, "bad.toml", "[engine]\nqueue_capacity = 'lots'\n");
    let output = muxgate()
        .arg("check-config")
        .arg(&bad)
        .output()
        .await
        .expect("run");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("engine.queue_capacity"), "{stderr}");
    assert!(stderr.contains(&bad.display().to_string()), "{stderr}");

    let output = muxgate()
        .arg("check-config")
        .arg(&good)
        .env("MUXGATE_HTTP__BIND", "nope")
        .output()
        .await
        .expect("run");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("MUXGATE_HTTP__BIND"), "{stderr}");
}

#[tokio::test]
async fn doctor_exit_code_reflects_failed_checks() {
    let dir = tempfile::tempdir().unwrap();
    let socket = common::tmux::unique_socket_name();
    let required = write_config(
        &dir,
        "required.toml",
        &format!("[tmux.servers.s]\nsocket_name = '{socket}'\n"),
    );
    let output = muxgate()
        .arg("doctor")
        .arg("--config")
        .arg(&required)
        .output()
        .await
        .expect("run");
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stdout).contains("not running"));

    let optional = write_config(
        &dir,
        "optional.toml",
        &format!("[tmux.servers.s]\nsocket_name = '{socket}'\nallow_absent = true\n"),
    );
    let output = muxgate()
        .arg("doctor")
        .env("MUXGATE_CONFIG", &optional)
        .output()
        .await
        .expect("run");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
}

/// Starts `muxgate serve` on `config` with `state` as its state directory; returns the child,
/// the MCP URL and the bearer token the banner printed.
async fn serve_with_state(
    config: &std::path::Path,
    state: &std::path::Path,
) -> (tokio::process::Child, String, String) {
    let mut child = muxgate()
        .arg("serve")
        .arg("--config")
        .arg(config)
        .args(["--bind", "127.0.0.1:0"])
        .env("XDG_STATE_HOME", state)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn muxgate serve");
    let (url, token) = banner(&mut child).await;
    (child, url, token)
}

/// The MCP URL and bearer token a starting `muxgate serve` prints.
async fn banner(child: &mut tokio::process::Child) -> (String, String) {
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let (mut url, mut token) = (None, None);
    tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = lines.next_line().await.expect("read stdout") {
            let line = line.trim();
            if let Some(u) = line.strip_prefix("MCP endpoint: ") {
                url = Some(u.to_owned());
            }
            if let Some(t) = line.strip_prefix("bearer token: ") {
                token = Some(t.to_owned());
                break;
            }
        }
    })
    .await
    .expect("banner within 30 s");
    (
        url.expect("an endpoint in the banner"),
        token.expect("a token in the banner"),
    )
}

/// The HTTP status of an MCP `initialize` sent with `token`.
async fn initialize_status(url: &str, token: &str) -> u16 {
    reqwest::Client::new()
        .post(url)
        .bearer_auth(token)
        .header("Accept", "application/json, text/event-stream")
        .json(&serde_json::json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "cli-test", "version": "0"}}
        }))
        .send()
        .await
        .expect("POST /mcp")
        .status()
        .as_u16()
}

/// Without a configured secret the gateway keeps one in the state directory: the token printed
/// at the first start still works after a restart, `muxgate token` mints with the same secret,
/// and before there is one `token` says what to configure.
#[tokio::test]
async fn the_embedded_default_keeps_its_secret_across_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let config = write_config(
        &dir,
        "local.toml",
        &format!(
            "[tmux.servers.work]\nsocket_name = '{}'\nallow_absent = true\n",
            common::tmux::unique_socket_name()
        ),
    );
    let token = |state: &std::path::Path| {
        let mut command = muxgate();
        command
            .args(["token", "--sub", "script"])
            .arg("--config")
            .arg(&config)
            .env("XDG_STATE_HOME", state);
        command
    };
    let refused = token(&state).output().await.expect("run token");
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("MUXGATE_AUTH__SECRET"), "{stderr}");

    let (mut first, _, printed) = serve_with_state(&config, &state).await;
    first.kill().await.expect("stop the first gateway");
    let secret = state.join("muxgate/local.secret");
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(&secret)
            .expect("the secret is kept")
            .permissions(),
    );
    assert_eq!(mode & 0o777, 0o600);

    let (_second, url, _) = serve_with_state(&config, &state).await;
    assert_eq!(
        initialize_status(&url, &printed).await,
        200,
        "the old token"
    );
    let minted = token(&state).output().await.expect("run token");
    assert!(minted.status.success(), "{minted:?}");
    let minted = String::from_utf8_lossy(&minted.stdout).trim().to_owned();
    assert_eq!(
        initialize_status(&url, &minted).await,
        200,
        "a minted token"
    );
    let other_state = dir.path().join("other");
    let (_third, other_url, _) = serve_with_state(&config, &other_state).await;
    assert_eq!(
        initialize_status(&other_url, &printed).await,
        401,
        "another state directory has another secret"
    );
}

/// The embedded default (no config file, no secret) is one local user's gateway: a script
/// making a hundred quick calls is not rate limited. The same calls against a config file that
/// sets no rates get the shipped per-client rates (tool calls 10/s, burst 20).
#[tokio::test]
async fn the_embedded_default_lets_a_local_script_make_many_quick_calls() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let tmux_dir = dir.path().join("tmux");
    std::fs::create_dir(&tmux_dir).unwrap();
    let refusals = |url: String, token: String| async move {
        let mut mcp = common::RawMcp::new(&url);
        mcp.bearer = Some(token);
        mcp.initialize().await;
        let mut refused = 0;
        for id in 1..=100 {
            let response = mcp
                .post(
                    &serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                                           "params": {"name": "list_servers", "arguments": {}}}),
                )
                .send()
                .await
                .expect("POST tools/call");
            let message = common::response_message(response).await;
            if message["result"]["isError"] != false {
                refused += 1;
            }
        }
        refused
    };

    let mut embedded = muxgate()
        .args(["serve", "--bind", "127.0.0.1:0"])
        .env("XDG_STATE_HOME", &state)
        .env("TMUX_TMPDIR", &tmux_dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn muxgate serve");
    let (url, token) = banner(&mut embedded).await;
    assert_eq!(refusals(url, token).await, 0, "the embedded default");

    let config = write_config(
        &dir,
        "plain.toml",
        &format!(
            "[tmux.servers.work]\nsocket_name = '{}'\nallow_absent = true\n",
            common::tmux::unique_socket_name()
        ),
    );
    let (_configured, url, token) = serve_with_state(&config, &state).await;
    assert!(
        refusals(url, token).await > 0,
        "a config file keeps the shipped rates"
    );
}
