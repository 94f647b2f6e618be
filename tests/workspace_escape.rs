//! The escape suite: a hostile tenant in workspace mode, attacking from inside its own pane
//! (through `run_command`, as an agent would), against a real `muxgate serve` whose config,
//! key and audit log sit in a directory the workspaces are shown (so the masks are what hides
//! them), with a secret in the gateway's environment, and a second tenant with a secret on its
//! screen, a buffer and a pending channel wait.

mod common;

use std::path::Path;
use std::time::Duration;

use common::serve::ServeProcess;
use common::tools::{Client, call_ok};
use common::workspaces::WorkspaceState;
use muxgate::auth::{MintRequest, TokenMinter};
use muxgate::config::Config;
use rmcp::ServiceExt;
use rmcp::model::ClientConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};

const ENV_SECRET: &str = "env-secret-5f1c9e";
const KEY_SECRET: &str = "key-secret-0123456789abcdef0123456789abcdef";
const BOB_TYPED: &str = "hunter2-bob-typed";
const BOB_BUFFER: &str = "bob-buffer-contents";

/// The gateway's files, in a directory every workspace is shown read-only.
struct GatewayFiles {
    root: tempfile::TempDir,
}

impl GatewayFiles {
    fn new(state: &Path) -> Self {
        // Not under /tmp: a workspace's /tmp is its own, which would hide it anyway.
        let root = tempfile::Builder::new()
            .prefix("escape-")
            .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
            .expect("a directory for the gateway's files");
        let exposed = root.path();
        set_mode(exposed, 0o755);
        for dir in ["muxgate", "audit"] {
            std::fs::create_dir(exposed.join(dir)).unwrap();
            set_mode(&exposed.join(dir), 0o755);
        }
        std::fs::write(exposed.join("muxgate/secret"), KEY_SECRET).unwrap();
        std::fs::write(exposed.join("public.txt"), "public\n").unwrap();
        set_mode(&exposed.join("public.txt"), 0o644);
        let config = format!(
            "[state]\ndir = '{state}'\n\
             [workspaces]\nenabled = true\nexpose = ['{exposed}']\n\
             [auth]\nsecret_file = '{exposed}/muxgate/secret'\n\
             [audit]\npath = '{exposed}/audit/audit.jsonl'\n\
             [limits]\nrequests_per_second = 1000\nrequest_burst = 1000\n\
             tool_calls_per_second = 1000\ntool_call_burst = 1000\n",
            state = state.display(),
            exposed = exposed.display(),
        );
        std::fs::write(exposed.join("muxgate/config.toml"), config).unwrap();
        Self { root }
    }

    fn path(&self, relative: &str) -> String {
        self.root.path().join(relative).display().to_string()
    }
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

async fn client(url: &str, token: &str) -> Client {
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url).auth_header(token),
    );
    ClientConfig::default()
        .serve(transport)
        .await
        .expect("MCP client connects")
}

fn mint(config: &Config, sub: &str) -> String {
    TokenMinter::from_config(&config.auth)
        .unwrap()
        .mint(&MintRequest {
            sub: sub.into(),
            scopes: vec!["mux:read".into(), "mux:write".into(), "mux:admin".into()],
            ttl: Duration::from_secs(600),
            servers: None,
            sessions: None,
            own_sessions: false,
            workspace: None,
            toolsets: None,
        })
        .unwrap()
}

async fn run(client: &Client, pane: &str, command: &str) -> Value {
    call_ok(
        client,
        "run_command",
        json!({"target": pane, "command": command, "timeout": 60}),
    )
    .await
}

/// The host pid of the first process named `name` under `root` (a sandbox's pid).
fn descendant_named(root: i32, name: &str) -> Option<i32> {
    let mut frontier = vec![root];
    while let Some(pid) = frontier.pop() {
        let children =
            std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
        for child in children
            .split_whitespace()
            .filter_map(|p| p.parse::<i32>().ok())
        {
            let comm = std::fs::read_to_string(format!("/proc/{child}/comm")).unwrap_or_default();
            if comm.trim() == name {
                return Some(child);
            }
            frontier.push(child);
        }
    }
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_cannot_reach_another_tenant_or_the_gateway_from_inside_its_pane() {
    if !common::needs::sandbox(
        "a_tenant_cannot_reach_another_tenant_or_the_gateway_from_inside_its_pane",
    ) {
        return;
    }
    let state = WorkspaceState::new();
    let files = GatewayFiles::new(state.path());
    let config_path = files.path("muxgate/config.toml");
    let log = state.path().join("serve.log");
    let gateway = ServeProcess::start(
        Path::new(&config_path),
        &log,
        &[("MUXGATE_METRICS__BEARER_TOKEN", ENV_SECRET)],
    )
    .await;
    let config = Config::load(Some(Path::new(&config_path)), std::iter::empty())
        .unwrap()
        .config;
    let alice = client(&gateway.mcp_url, &mint(&config, "alice")).await;
    let bob = client(&gateway.mcp_url, &mint(&config, "bob")).await;

    // Bob's world: a secret typed on his screen, a buffer, a wait on a channel.
    let created = call_ok(&bob, "create_session", json!({"name": "b-1"})).await;
    let bob_pane = created["session"]["active_pane_id"]
        .as_str()
        .unwrap()
        .to_owned();
    run(
        &bob,
        &bob_pane,
        &format!("tmux set-buffer -b bobbuf {BOB_BUFFER}"),
    )
    .await;
    call_ok(
        &bob,
        "send_keys",
        json!({"target": bob_pane, "keys": BOB_TYPED, "literal": true}),
    )
    .await;
    let bob_sandbox = state.sandbox_pid("bob").expect("bob's sandbox runs");
    let bob_shell = descendant_named(bob_sandbox, "bash").expect("bob's shell");

    // Alice attacks from her own shell.
    let created = call_ok(&alice, "create_session", json!({"name": "a-1"})).await;
    let pane = created["session"]["active_pane_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let port = gateway.base.rsplit(':').next().unwrap().to_owned();
    let state_dir = state.path().display().to_string();
    let attacks = [
        (
            "bob_socket",
            format!("tmux -S {state_dir}/workspaces/bob/run/tmux.sock ls"),
        ),
        ("state_dir", format!("ls {state_dir}")),
        (
            "other_sockets",
            "find / -type s 2>/dev/null | grep -v '^/run/muxgate/tmux.sock$' | grep -q .".into(),
        ),
        (
            "host_tmux_dir",
            "ls /tmp/tmux-0 /tmp/tmux-600000 /tmp/tmux-600001".into(),
        ),
        ("default_server", "tmux -L default ls".into()),
        (
            "config",
            format!("cat {}", files.path("muxgate/config.toml")),
        ),
        ("key", format!("cat {}", files.path("muxgate/secret"))),
        (
            "audit_read",
            format!("cat {}", files.path("audit/audit.jsonl")),
        ),
        ("audit_key", format!("cat {state_dir}/audit.key")),
        (
            "audit_write",
            format!("echo forged >> {}", files.path("audit/audit.jsonl")),
        ),
        (
            "gateway_environ",
            format!("cat /proc/{}/environ", gateway.pid),
        ),
        ("gateway_fds", format!("ls /proc/{}/fd", gateway.pid)),
        ("signal_gateway", format!("kill -0 {}", gateway.pid)),
        ("signal_bob", format!("kill -0 {bob_shell}")),
        ("bob_sandbox", format!("kill -0 {bob_sandbox}")),
        (
            "many_processes",
            "[ $(ls /proc | grep -c '^[0-9]') -gt 12 ]".into(),
        ),
        ("env_secret", format!("env | grep -q {ENV_SECRET}")),
        ("muxgate_env", "env | grep -q MUXGATE".into()),
        ("write_usr", "touch /usr/pwned".into()),
        ("write_etc", "touch /etc/pwned".into()),
        ("user_namespace", "unshare -U true".into()),
        ("gateway_port", format!("exec 3<>/dev/tcp/127.0.0.1/{port}")),
        ("bob_buffer", "tmux show-buffer -b bobbuf".into()),
        // Works, on alice's own server only: bob's wait must not wake (checked below).
        ("signal_channel", "tmux wait-for -S chan".into()),
        // Sanity: the attacks are not blocked by a broken shell.
        ("public_file", format!("cat {}", files.path("public.txt"))),
        ("own_server", "tmux ls | grep -q '^a-1:'".into()),
    ];
    let script: String = attacks
        .iter()
        .map(|(name, command)| {
            format!("if ( {command} ) >/dev/null 2>&1; then echo {name}=REACHED; else echo {name}=blocked; fi\n")
        })
        .collect();
    // Bob waits on channel `chan` while alice attacks (one attack signals `chan`).
    let (ran, bob_waited) = tokio::join!(
        run(&alice, &pane, &script),
        call_ok(
            &bob,
            "wait_for_channel",
            json!({"channel": "chan", "timeout": 8})
        ),
    );
    let output = ran["output"].as_str().unwrap();
    for (name, _) in &attacks {
        let expected = if matches!(*name, "public_file" | "own_server" | "signal_channel") {
            "REACHED"
        } else {
            "blocked"
        };
        assert!(
            output.lines().any(|l| l == format!("{name}={expected}")),
            "{name} should be {expected}:\n{output}"
        );
    }

    // A hook run when a client attaches reads and writes files on the server's side (the
    // sandbox): alice's server tries it as the gateway's next client attaches.
    let hook = format!(
        "tmux set-hook -g client-attached 'load-buffer -b leak {key} ; set-buffer -b w x ; save-buffer -b w {host}'",
        key = files.path("muxgate/secret"),
        host = files.path("pwned-by-hook"),
    );
    run(&alice, &pane, &hook).await;
    let second = call_ok(&alice, "create_session", json!({"name": "a-2"})).await;
    let second_pane = second["session"]["active_pane_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let waited = call_ok(
        &alice,
        "pane_batch",
        json!({"operations": [
            {"op": "send_keys", "target": second_pane, "keys": "echo attached-$((6*7))", "literal": true, "enter": true},
            {"op": "wait_for_text", "target": second_pane, "patterns": ["attached-42"], "timeout": 20},
        ]}),
    )
    .await;
    assert_eq!(waited["results"][1]["success"], true, "{waited}");
    let leaked = run(&alice, &pane, "tmux show-buffer -b leak").await;
    assert_ne!(leaked["exit_status"], 0, "the key was read: {leaked}");
    assert!(!leaked["output"].as_str().unwrap().contains(KEY_SECRET));
    assert!(
        !Path::new(&files.path("pwned-by-hook")).exists(),
        "a gateway client wrote on the host"
    );

    // Bob is untouched: his wait was not woken, his buffer and screen are his.
    assert_eq!(
        bob_waited["signalled"], false,
        "alice woke bob's channel: {bob_waited}"
    );
    let buffer = run(&bob, &bob_pane, "tmux show-buffer -b bobbuf").await;
    assert_eq!(buffer["output"], BOB_BUFFER, "{buffer}");
    let screen = call_ok(&bob, "capture_pane", json!({"target": bob_pane})).await;
    assert!(
        screen["text"].as_str().unwrap().contains(BOB_TYPED),
        "{screen}"
    );
    assert!(!output.contains(BOB_TYPED) && !output.contains(KEY_SECRET));

    // Nothing alice did reached the gateway's files or its audit log.
    let audit = std::fs::read_to_string(files.path("audit/audit.jsonl")).unwrap_or_default();
    assert!(
        !audit.contains("forged"),
        "the audit log was written from a pane"
    );
    assert!(!gateway.log().contains(KEY_SECRET));
    // A command alias on alice's server turns the `wait-for` of the gateway's next channel
    // wait into a `load-buffer` of the key first. That client runs one command without
    // attaching, so tmux has the *client* open the file (a control client, once attached,
    // has the server do it): in the client's jail there is no such file.
    let alias = format!(
        "tmux set -s command-alias[100] 'wait-for=load-buffer -b leak {} ; wait-for'",
        files.path("muxgate/secret")
    );
    run(&alice, &pane, &alias).await;
    call_ok(
        &alice,
        "wait_for_channel",
        json!({"channel": "c2", "timeout": 1}),
    )
    .await;
    let buffer = state.tmux("alice", &["show-buffer", "-b", "leak"]);
    assert!(
        !String::from_utf8_lossy(&buffer.stdout).contains(KEY_SECRET),
        "the gateway's tmux client read the key for alice's server"
    );
    assert!(
        String::from_utf8_lossy(&buffer.stderr).contains("no buffer"),
        "{buffer:?}"
    );

    drop((alice, bob));
    state.stop_all().await;
}
