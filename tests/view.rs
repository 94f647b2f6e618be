//! The live view end to end: a real tmux server, the gateway over real HTTP, links minted by
//! the `view_link` tool and by `muxgate view-link`, and the page's event stream read as a
//! browser reads it.
//!
//! Pane output is written straight to the pane's terminal (as a program in it would print),
//! so the time from output to event is the gateway's alone; `view_update_latency` measures it
//! (BENCHMARKS.md).

mod common;

use std::io::Write as _;
use std::time::{Duration, Instant, SystemTime};

use common::calls::token;
use common::tmux::TestTmux;
use common::tools::{call_err, call_ok, client};
use common::{TestGateway, config_with_server, spawn_gateway};
use muxgate::view::link::{ViewGrant, ViewKey, sign};
use muxgate_tmux::PaneId;
use serde_json::json;

/// One Server-Sent Event.
#[derive(Debug, Clone)]
struct SseEvent {
    event: String,
    data: String,
}

/// An open `/view/events` stream, read event by event.
struct EventStream {
    response: reqwest::Response,
    buffer: String,
}

impl EventStream {
    async fn open(url: &str) -> Self {
        let response = reqwest::Client::new()
            .get(url)
            .send()
            .await
            .expect("GET /view/events");
        assert_eq!(response.status(), 200, "events refused");
        assert_eq!(
            response.headers()["content-type"],
            "text/event-stream",
            "not an event stream"
        );
        Self {
            response,
            buffer: String::new(),
        }
    }

    /// The next event (comments skipped), or `None` at the end of the stream or after `timeout`.
    async fn next(&mut self, timeout: Duration) -> Option<SseEvent> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let mut event = SseEvent {
                    event: "message".into(),
                    data: String::new(),
                };
                let mut lines = 0;
                for line in block.lines() {
                    if let Some(name) = line.strip_prefix("event:") {
                        event.event = name.trim().to_owned();
                    } else if let Some(data) = line.strip_prefix("data:") {
                        if lines > 0 {
                            event.data.push('\n');
                        }
                        event.data.push_str(data.strip_prefix(' ').unwrap_or(data));
                        lines += 1;
                    }
                }
                if lines > 0 {
                    return Some(event);
                }
                continue;
            }
            let chunk = tokio::time::timeout_at(deadline, self.response.chunk())
                .await
                .ok()?
                .ok()??;
            self.buffer.push_str(&String::from_utf8_lossy(&chunk));
        }
    }

    /// Waits for a `screen` event whose text holds `needle`.
    async fn screen_with(&mut self, needle: &str, timeout: Duration) -> Option<String> {
        let deadline = Instant::now() + timeout;
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            let event = self.next(left).await?;
            if event.event == "screen" && event.data.contains(needle) {
                return Some(event.data);
            }
        }
        None
    }
}

/// Writes `bytes` to `pane`'s terminal, as a program running in it prints.
fn print_in_pane(tmux: &TestTmux, pane: &str, bytes: &[u8]) {
    let tty = tmux.ok(&["display-message", "-p", "-t", pane, "#{pane_tty}"]);
    let mut terminal = std::fs::OpenOptions::new()
        .write(true)
        .open(tty.trim())
        .expect("open the pane's terminal");
    terminal.write_all(bytes).expect("write to the pane");
}

async fn gateway(tmux: &TestTmux) -> TestGateway {
    spawn_gateway(config_with_server("work", &tmux.socket, false)).await
}

/// The gateway's view key, as `muxgate serve` wrote it to the state directory.
fn view_key(gateway: &TestGateway) -> ViewKey {
    let dir = gateway.config.state.dir.as_deref().expect("a state dir");
    muxgate::view::key::load(dir)
        .expect("read the view key")
        .expect("the gateway wrote a view key")
}

/// A signed link to `pane` of the test server's session `work`, valid for ten minutes.
fn link_for(key: &ViewKey, tmux: &TestTmux, pane: PaneId) -> String {
    let ten_minutes = Duration::from_secs(600);
    sign(
        key,
        &ViewGrant::new(
            "work",
            pane,
            tmux.server_pid(),
            SystemTime::now(),
            ten_minutes,
        ),
    )
}

async fn get(url: &str) -> reqwest::Response {
    reqwest::Client::new().get(url).send().await.expect("GET")
}

/// Asks `url` until it answers `status`; fails saying `why` after `within`.
async fn wait_for_status(url: &str, status: u16, within: Duration, why: &str) {
    let deadline = Instant::now() + within;
    while get(url).await.status() != status {
        assert!(Instant::now() < deadline, "{why}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_shows_the_pane_live_escaped_and_takes_no_input() {
    let tmux = TestTmux::start();
    let gateway = gateway(&tmux).await;
    let client = client(&gateway).await;
    let pane = tmux.pane_id("main").to_string();
    print_in_pane(&tmux, &pane, b"\x1b[2J\x1b[Hbefore the view\r\n");

    let link = call_ok(&client, "view_link", json!({"target": "main"})).await;
    assert_eq!(link["pane_id"], pane.as_str());
    let url = link["url"].as_str().expect("a link");
    assert!(
        url.starts_with(&format!("{}/view?t=", gateway.base)),
        "{link}"
    );
    let path = &url[gateway.base.len()..];

    let page = get(url).await;
    assert_eq!(page.status(), 200);
    let headers = page.headers().clone();
    assert!(
        headers["content-security-policy"]
            .to_str()
            .unwrap()
            .contains("script-src 'self'")
    );
    assert_eq!(headers["x-frame-options"], "DENY");
    assert_eq!(headers["cache-control"], "no-store");
    assert_eq!(headers["referrer-policy"], "no-referrer");
    let html = page.text().await.unwrap();
    assert!(html.contains(r#"<pre id="screen""#), "{html}");
    assert!(
        !html.contains("<form") && !html.contains("<textarea"),
        "{html}"
    );
    for asset in ["/view/app.js", "/view/app.css"] {
        assert_eq!(get(&format!("{}{asset}", gateway.base)).await.status(), 200);
    }

    let query = &path["/view".len()..];
    let mut events = EventStream::open(&format!("{}/view/events{query}", gateway.base)).await;
    let first = events
        .next(Duration::from_secs(5))
        .await
        .expect("a first screen");
    assert_eq!(first.event, "screen");
    assert!(first.data.contains("before the view"), "{}", first.data);

    let printed = Instant::now();
    print_in_pane(
        &tmux,
        &pane,
        b"\x1b[1;31m<script>alert(1)</script>\x1b[0m live-42\r\n",
    );
    let screen = events
        .screen_with("live-42", Duration::from_secs(2))
        .await
        .expect("the printed line reached the stream");
    assert!(
        printed.elapsed() < Duration::from_secs(1),
        "{:?}",
        printed.elapsed()
    );
    assert!(
        screen.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
        "{screen}"
    );
    assert!(!screen.contains("<script"), "{screen}");
    assert!(
        screen.contains(r#"<span class="b" style="color:#cd0000;">"#),
        "{screen}"
    );

    // Nothing takes input: no route accepts a body.
    let http = reqwest::Client::new();
    for route in ["/view", "/view/events"] {
        let response = http
            .post(format!("{}{route}{query}", gateway.base))
            .body("echo typed\n")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 405, "{route}");
    }

    // The pane closes: the stream says so and ends.
    tmux.ok(&["new-session", "-d", "-s", "keep", "sh"]);
    tmux.ok(&["kill-pane", "-t", &pane]);
    let mut end = None;
    while let Some(event) = events.next(Duration::from_secs(5)).await {
        if event.event == "end" {
            end = Some(event.data);
            break;
        }
    }
    let end = end.expect("an end event");
    assert!(end.contains("closed") || end.contains("exited"), "{end}");
    assert!(events.next(Duration::from_secs(2)).await.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_expired_and_foreign_links_are_refused_alike() {
    let tmux = TestTmux::start();
    let gateway = gateway(&tmux).await;
    let key = view_key(&gateway);
    let pane = tmux.pane_id("main");
    let now = SystemTime::now();
    let good = link_for(&key, &tmux, pane);
    let forged = link_for(&ViewKey::new([9; 32]), &tmux, pane);
    let expired = sign(
        &key,
        &ViewGrant::new("work", pane, tmux.server_pid(), now, Duration::ZERO),
    );
    // Another pane's payload under this pane's signature.
    let other = link_for(&key, &tmux, PaneId(pane.0 + 1));
    let spliced = format!(
        "{}.{}",
        other.split_once('.').unwrap().0,
        good.split_once('.').unwrap().1
    );

    let mut bodies = Vec::new();
    for token in [
        forged.as_str(),
        expired.as_str(),
        spliced.as_str(),
        "",
        "garbage",
    ] {
        for route in ["/view", "/view/events"] {
            let response = get(&format!("{}{route}?t={token}", gateway.base)).await;
            assert_eq!(response.status(), 403, "{route} {token}");
            assert_eq!(response.headers()["cache-control"], "no-store");
            let body = response.text().await.unwrap();
            assert!(token.is_empty() || !body.contains(token), "{body}");
            bodies.push(body);
        }
    }
    let no_token = get(&format!("{}/view", gateway.base)).await;
    assert_eq!(no_token.status(), 403);
    bodies.push(no_token.text().await.unwrap());
    bodies.dedup();
    assert_eq!(bodies.len(), 1, "the refusals differ: {bodies:?}");

    // Signed, but for a pane or server that is not there: 404, as vague.
    let gone = link_for(&key, &tmux, PaneId(9999));
    let response = get(&format!("{}/view/events?t={gone}", gateway.base)).await;
    assert_eq!(response.status(), 404);
    let elsewhere = sign(
        &key,
        &ViewGrant::new(
            "nope",
            pane,
            tmux.server_pid(),
            now,
            Duration::from_secs(600),
        ),
    );
    let response = get(&format!("{}/view?t={elsewhere}", gateway.base)).await;
    assert_eq!(response.status(), 404);

    // And the valid one works.
    assert_eq!(
        get(&format!("{}/view?t={good}", gateway.base))
            .await
            .status(),
        200
    );

    // A request from another origin's page is refused before the link is read.
    let response = reqwest::Client::new()
        .get(format!("{}/view/events?t={good}", gateway.base))
        .header("Origin", "https://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 403);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tool_mints_only_for_panes_the_client_may_see() {
    let tmux = TestTmux::start();
    tmux.ok(&["new-session", "-d", "-s", "theirs", "sh"]);
    let gateway = gateway(&tmux).await;
    let limited = token(&gateway, "agent", &["mux:read"], Some(&["main"]), false);
    let agent = rmcp::ServiceExt::serve(
        rmcp::model::ClientConfig::default(),
        gateway.transport_with(&limited),
    )
    .await
    .expect("connect");
    let theirs = tmux.pane_id("theirs").to_string();
    let refused = call_err(&agent, "view_link", json!({"target": theirs})).await;
    assert_eq!(refused["kind"], "not_found", "{refused}");
    let too_long = call_err(
        &agent,
        "view_link",
        json!({"target": "main", "minutes": 100_000}),
    )
    .await;
    assert_eq!(too_long["kind"], "invalid_arguments", "{too_long}");
    assert!(
        too_long["message"]
            .as_str()
            .unwrap()
            .contains("view.max_link_minutes"),
        "{too_long}"
    );
    let minted = call_ok(&agent, "view_link", json!({"target": "main", "minutes": 1})).await;
    let expires = minted["expires_at"].as_u64().unwrap();
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    assert!((now + 55..=now + 61).contains(&expires), "{minted}");

    // A link ends when the token it was made with does.
    let brief = muxgate::auth::TokenMinter::from_config(&gateway.config.auth)
        .unwrap()
        .mint(&muxgate::auth::MintRequest {
            sub: "agent".into(),
            scopes: vec!["mux:read".into()],
            ttl: Duration::from_secs(120),
            servers: None,
            sessions: None,
            own_sessions: false,
            workspace: None,
            toolsets: None,
        })
        .unwrap();
    let agent = rmcp::ServiceExt::serve(
        rmcp::model::ClientConfig::default(),
        gateway.transport_with(&brief),
    )
    .await
    .expect("connect");
    let minted = call_ok(
        &agent,
        "view_link",
        json!({"target": "main", "minutes": 60}),
    )
    .await;
    let expires = minted["expires_at"].as_u64().unwrap();
    assert!((now + 100..=now + 125).contains(&expires), "{minted}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_signs_links_the_gateway_accepts() {
    let tmux = TestTmux::start();
    let gateway = gateway(&tmux).await;
    let dir = tempfile::tempdir().unwrap();
    let state = gateway.config.state.dir.as_deref().unwrap();
    let config = dir.path().join("muxgate.toml");
    std::fs::write(
        &config,
        format!(
            "[state]\ndir = '{}'\n[tmux.servers.work]\nsocket_name = '{}'\n",
            state.display(),
            tmux.socket
        ),
    )
    .unwrap();
    let pane = tmux.pane_id("main").to_string();
    let run = |extra: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_muxgate"))
            .args(["view-link", "--config"])
            .arg(&config)
            .args(["--server", "work", "--base-url", &gateway.base])
            .args(extra)
            .env_remove("MUXGATE_CONFIG")
            .output()
            .expect("run muxgate view-link")
    };
    let out = run(&["--target", &pane, "--minutes", "5"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let url = String::from_utf8(out.stdout).unwrap();
    assert!(
        url.starts_with(&format!("{}/view?t=", gateway.base)),
        "{url}"
    );
    assert_eq!(get(url.trim()).await.status(), 200);

    let out = run(&["--target", "main"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("pane id"));
    let out = run(&["--target", "%999"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("cannot find pane %999"), "{stderr}");
    let out = run(&["--target", &pane, "--minutes", "99999"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("view.max_link_minutes"));
}

/// Pane output → `screen` event, one line at a time: the figure in BENCHMARKS.md.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn view_update_latency() {
    const SAMPLES: usize = 60;
    let tmux = TestTmux::start();
    let gateway = gateway(&tmux).await;
    let key = view_key(&gateway);
    let pane = tmux.pane_id("main");
    let link = link_for(&key, &tmux, pane);
    let mut events = EventStream::open(&format!("{}/view/events?t={link}", gateway.base)).await;
    events
        .next(Duration::from_secs(5))
        .await
        .expect("a first screen");
    let pane = pane.to_string();
    let mut samples = Vec::with_capacity(SAMPLES);
    for i in 0..SAMPLES {
        // Past the coalescing interval, so each line is the first output after a quiet spell.
        tokio::time::sleep(Duration::from_millis(80)).await;
        let marker = format!("mark-{i:03}");
        let started = Instant::now();
        print_in_pane(&tmux, &pane, format!("{marker}\r\n").as_bytes());
        events
            .screen_with(&marker, Duration::from_secs(2))
            .await
            .unwrap_or_else(|| panic!("{marker} never reached the stream"));
        samples.push(started.elapsed());
    }
    samples.sort();
    let at = |q: f64| samples[((samples.len() as f64 * q) as usize).min(samples.len() - 1)];
    println!(
        "view update latency over {SAMPLES} lines: p50 {:.2} ms, p95 {:.2} ms, max {:.2} ms",
        at(0.5).as_secs_f64() * 1e3,
        at(0.95).as_secs_f64() * 1e3,
        samples[samples.len() - 1].as_secs_f64() * 1e3,
    );
    assert!(at(0.95) < Duration::from_millis(500), "p95 {:?}", at(0.95));
}

/// A `muxgate serve` logging at debug level logs each view request's path, never its link,
/// good or forged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn links_never_reach_the_log() {
    let tmux = TestTmux::start();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let config = common::serve::write_config(
        dir.path(),
        "work",
        &tmux.socket,
        &format!(
            "[log]\nlevel = 'debug'\n[state]\ndir = '{}'\n",
            state.display()
        ),
    );
    let serve =
        common::serve::ServeProcess::start(&config, &dir.path().join("serve.log"), &[]).await;
    let key = muxgate::view::key::load(&state)
        .expect("read the view key")
        .expect("serve wrote a view key");
    let pane = tmux.pane_id("main");
    let good = link_for(&key, &tmux, pane);
    let forged = link_for(&ViewKey::new([3; 32]), &tmux, pane);
    assert_eq!(
        get(&format!("{}/view?t={good}", serve.base)).await.status(),
        200
    );
    let mut events = EventStream::open(&format!("{}/view/events?t={good}", serve.base)).await;
    events.next(Duration::from_secs(5)).await.expect("a screen");
    drop(events);
    assert_eq!(
        get(&format!("{}/view/events?t={forged}", serve.base))
            .await
            .status(),
        403
    );
    let logged = common::wait_until(Duration::from_secs(5), || {
        serve.log().contains("/view/events") && serve.log().contains("link refused")
    })
    .await;
    let log = serve.log();
    assert!(logged, "the view requests were not logged:\n{log}");
    for token in [&good, &forged] {
        let (payload, tag) = token.split_once('.').unwrap();
        assert!(
            !log.contains(payload) && !log.contains(tag),
            "a link in the log:\n{log}"
        );
    }
}

/// A resized pane is shown at its new size with the next output after the resize.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resized_pane_is_shown_at_its_new_size() {
    let tmux = TestTmux::start();
    let gateway = gateway(&tmux).await;
    let key = view_key(&gateway);
    let pane = tmux.pane_id("main");
    let link = link_for(&key, &tmux, pane);
    let mut events = EventStream::open(&format!("{}/view/events?t={link}", gateway.base)).await;
    let first = events.next(Duration::from_secs(5)).await.expect("a screen");
    assert_eq!(first.data.split('\n').count(), 40, "the pane's 40 rows");
    // Past the size check's interval, so the next output checks the size.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    tmux.ok(&["resize-window", "-t", "main", "-x", "60", "-y", "20"]);
    print_in_pane(&tmux, &pane.to_string(), b"after the resize\r\n");
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let event = events
            .next(deadline.saturating_duration_since(Instant::now()))
            .await
            .expect("a screen at the new size");
        let rows: Vec<&str> = event.data.split('\n').collect();
        if rows.len() == 20 {
            assert!(event.data.contains("after the resize"), "{}", event.data);
            assert_eq!(rows[rows.len() - 1].len(), 60, "the pane's 60 columns");
            break;
        }
    }
}

/// Past `view.max_viewers` open streams, one more is answered 503 until one closes; past
/// `view.max_viewers_per_link` on one link, 429, while other links still get their view.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn views_past_the_caps_wait_their_turn() {
    let tmux = TestTmux::start();
    let mut config = config_with_server("work", &tmux.socket, false);
    config.view.max_viewers = 3;
    config.view.max_viewers_per_link = 2;
    let gateway = spawn_gateway(config).await;
    let key = view_key(&gateway);
    let pane = tmux.pane_id("main");
    let pid = tmux.server_pid();
    let link = |minutes: u64| {
        let grant = ViewGrant::new(
            "work",
            pane,
            pid,
            SystemTime::now(),
            Duration::from_secs(minutes * 60),
        );
        let url = format!("{}/view/events?t={}", gateway.base, sign(&key, &grant));
        url
    };
    let (a, b, c) = (link(10), link(11), link(12));
    let mut first = EventStream::open(&a).await;
    first.next(Duration::from_secs(5)).await.expect("a screen");
    let _second = EventStream::open(&a).await;
    let refused = get(&a).await;
    assert_eq!(refused.status(), 429, "a third view of one link");
    assert!(refused.text().await.unwrap().contains("this link"));
    let _other = EventStream::open(&b).await;
    assert_eq!(
        get(&c).await.status(),
        503,
        "every slot of the gateway is taken"
    );
    drop(first);
    let given_back = "the closed view's place was not given back";
    wait_for_status(&c, 200, Duration::from_secs(5), given_back).await;
}

/// A link names the tmux server's process: after the server restarts, `%0` is another pane
/// and the old link shows nothing (404), while a link made for the new server works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_ends_with_the_tmux_server_it_was_made_for() {
    let tmux = TestTmux::start();
    let gateway = gateway(&tmux).await;
    let key = view_key(&gateway);
    let pane = tmux.pane_id("main");
    let grant = |pid: u32| {
        let grant = ViewGrant::new(
            "work",
            pane,
            pid,
            SystemTime::now(),
            Duration::from_secs(600),
        );
        format!("{}/view/events?t={}", gateway.base, sign(&key, &grant))
    };
    let old = grant(tmux.server_pid());
    EventStream::open(&old).await;
    tmux.kill_server();
    tmux.start_again();
    assert_eq!(
        tmux.pane_id("main"),
        pane,
        "the new server reuses the pane number"
    );
    let new = grant(tmux.server_pid());
    let restarted = "the restarted server is not viewable";
    wait_for_status(&new, 200, Duration::from_secs(10), restarted).await;
    assert_eq!(
        get(&old).await.status(),
        404,
        "the old link shows the new pane"
    );
}

/// A tenant in workspace mode may watch its own workspace's pane; the link shows nothing once
/// the workspace stops, and opening it does not start the workspace again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workspace_pane_is_viewed_while_its_workspace_runs() {
    if !common::needs::sandbox("a_workspace_pane_is_viewed_while_its_workspace_runs") {
        return;
    }
    let shared = TestTmux::start();
    let state = common::workspaces::WorkspaceState::new();
    let gateway =
        spawn_gateway(state.config(config_with_server("shared", &shared.socket, false))).await;
    let alice = common::tools::client_with(&gateway, &gateway.mint("alice", &["mux:admin"])).await;
    let created = call_ok(&alice, "create_session", json!({"name": "a1"})).await;
    let pane = created["session"]["active_pane_id"]
        .as_str()
        .unwrap()
        .to_owned();
    call_ok(
        &alice,
        "run_command",
        json!({"target": pane, "command": "echo seen-from-the-workspace", "timeout": 20}),
    )
    .await;
    let minted = call_ok(&alice, "view_link", json!({"target": pane})).await;
    let url = minted["url"]
        .as_str()
        .unwrap()
        .replacen("/view?", "/view/events?", 1);
    let mut stream = EventStream::open(&url).await;
    stream
        .screen_with("seen-from-the-workspace", Duration::from_secs(5))
        .await
        .expect("the workspace pane's screen");
    drop(stream);

    state.stop_all().await;
    assert_eq!(
        get(&url).await.status(),
        404,
        "a stopped workspace shows nothing"
    );
    assert_eq!(
        state.sandbox_pid("alice"),
        None,
        "the view started the workspace"
    );
}
