//! Secret entry, end to end: the agent (the official rmcp client) asks for a secret, a human
//! types it at the one-time link (real HTTP), and it reaches the pane of a real tmux server,
//! typed where the screen does not show it, and nowhere else: not the agent's answers, not the
//! audit log, not the gateway's log lines.

mod common;

use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::tmux::TestTmux;
use common::tools::{call, call_ok, client, type_line, wait_for_screen};
use common::{TestGateway, config_with_server, spawn_gateway, tool_error};
use rmcp::model::ProtocolVersion;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationAction, ElicitationCapability, UrlElicitationCapability,
};
use rmcp::service::{RequestContext, RunningService, Service};
use rmcp::{
    ClientHandler, ClientLifecycleMode, ClientServiceExt, ErrorData, RoleClient, ServiceExt,
};
use serde_json::{Value, json};

const SECRET: &str = "hunter2 s3cret";
/// A command that reads a line without echo and says whether it was the secret, without the
/// secret on its command line (the screen shows that).
fn read_secret() -> String {
    let digest = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(SECRET));
    format!(
        r#"read -rs X; [ "$(printf %s "$X" | sha256sum | cut -d' ' -f1)" = {digest} ] && echo "MATCHED ${{#X}}" || echo "DIFFERENT ${{#X}}""#
    )
}

/// Every log line the gateways of this test binary write at the most verbose setting an
/// operator can give (`MUXGATE_LOG=trace`: everything, rmcp's own message dumps kept at `error`
/// unless asked for by name, as `muxgate serve` does). The browser test's own DevTools client
/// (`tungstenite`, a test-only crate the gateway does not use) is left out: it logs the frames
/// it sends, which carry the secret the test types into the page.
fn captured_logs() -> Arc<Mutex<Vec<u8>>> {
    static LOGS: std::sync::OnceLock<Arc<Mutex<Vec<u8>>>> = std::sync::OnceLock::new();
    LOGS.get_or_init(|| {
        let logs = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&logs);
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(
                "trace,rmcp=error,tungstenite=off,tokio_tungstenite=off",
            ))
            .with_writer(move || LogSink(Arc::clone(&sink)))
            .try_init();
        logs
    })
    .clone()
}

struct LogSink(Arc<Mutex<Vec<u8>>>);

impl Write for LogSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

async fn gateway_with_audit(tmux: &TestTmux, audit: &Path) -> TestGateway {
    let mut config = config_with_server("work", &tmux.socket, false);
    config.audit.path = Some(audit.to_owned());
    spawn_gateway(config).await
}

/// A bash pane at its prompt.
async fn bash_pane(tmux: &TestTmux) -> String {
    let pane = tmux.session_running("s", "env PS1='ready$ ' bash --norc --noprofile");
    wait_for_screen(tmux, &pane, "ready$").await;
    pane
}

/// Asks for a secret until the pane is ready for one (its program reads with echo off), as an
/// agent whose client answers the gateway's input requests (2026-07-28) with its handler.
async fn request_when_ready<S: Service<RoleClient>>(
    agent: &RunningService<RoleClient, S>,
    args: Value,
) -> Value {
    for _ in 0..100 {
        let request = CallToolRequestParams::new("request_secret_input")
            .with_arguments(args.as_object().expect("arguments").clone());
        let result = agent.call_tool(request).await.expect("tools/call");
        if result.is_error != Some(true) {
            // Nothing the model reads (text, structured content, `_meta`) holds the link.
            assert_no_link(&serde_json::to_value(&result).expect("a result"));
            return result.structured_content.expect("structured content");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the pane never became ready for a secret");
}

fn token_of(url: &str) -> String {
    url.split_once("?t=")
        .expect("a token in the link")
        .1
        .to_owned()
}

/// Posts the form as a browser on the gateway's page would.
async fn post_secret(base: &str, token: &str, secret: &str) -> (u16, String) {
    post_secret_from(base, token, secret, None).await
}

/// Posts the secret until the answer has `status` (the pane's program settles in between):
/// the last answer after 5 s.
async fn post_secret_until(base: &str, token: &str, status: u16) -> (u16, String) {
    let mut answer = (0, String::new());
    for _ in 0..100 {
        answer = post_secret(base, token, SECRET).await;
        if answer.0 == status {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    answer
}

async fn post_secret_from(
    base: &str,
    token: &str,
    secret: &str,
    origin: Option<&str>,
) -> (u16, String) {
    let body = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("t", token)
        .append_pair("secret", secret)
        .finish();
    // A browser posting the page's form sends the page's origin (its referrer policy is
    // same-origin; under no-referrer it would send `Origin: null`).
    let request = reqwest::Client::new()
        .post(format!("{base}/secret"))
        .header("content-type", "application/x-www-form-urlencoded")
        .header("origin", origin.unwrap_or(base))
        .body(body);
    let response = request.send().await.expect("POST /secret");
    let status = response.status().as_u16();
    (status, response.text().await.unwrap_or_default())
}

/// `pairs` as a form's body.
fn form(pairs: &[(&str, &str)]) -> String {
    let mut body = url::form_urlencoded::Serializer::new(String::new());
    for (name, value) in pairs {
        body.append_pair(name, value);
    }
    body.finish()
}

async fn get_page(url: &str) -> (u16, reqwest::header::HeaderMap, String) {
    let response = reqwest::get(url).await.expect("GET /secret");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    (status, headers, response.text().await.unwrap_or_default())
}

fn audit_secret_records(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|record| record["kind"] == "secret")
        .collect()
}

/// The whole flow through a link: refused where the screen would show the secret, typed once
/// where it would not, and seen by nobody but the program that asked for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_typed_at_its_link_reaches_the_pane_and_nothing_else() {
    let logs = captured_logs();
    let tmux = TestTmux::start();
    let dir = tempfile::tempdir().unwrap();
    let audit = dir.path().join("audit.jsonl");
    let gateway = gateway_with_audit(&tmux, &audit).await;
    let agent = client(&gateway).await;
    let pane = bash_pane(&tmux).await;
    let args = json!({"target": pane, "label": "test <b>password</b>"});
    // The prompt shows a moment before the shell blocks in its read (until then it reads as a
    // line editor): ask once it waits there.
    let settled = common::wait_until_async(Duration::from_secs(10), || async {
        call_ok(&agent, "get_pane_state", json!({"target": pane})).await["waiting_for_input"]
            == true
    })
    .await;
    assert!(settled, "the shell never waited at its prompt");

    // At the shell's prompt the secret would be drawn and kept in history: no link.
    let at_prompt = call(&agent, "request_secret_input", args.clone()).await;
    let error = tool_error(&at_prompt);
    assert_eq!(error["kind"], "conflict", "{error}");
    assert!(
        error["message"].as_str().unwrap().contains("prompt"),
        "{error}"
    );

    type_line(&tmux, &pane, &read_secret());
    let answer = request_when_ready(&agent, args.clone()).await;
    assert_eq!(answer["status"], "pending", "{answer}");
    assert_eq!(answer["expires_in_seconds"], 300);
    assert_no_link(&answer);
    let url = approver_link(&gateway, &answer).await;
    assert!(
        url.starts_with(&format!("{}/secret?t=", gateway.base)),
        "{url}"
    );
    let token = token_of(&url);

    // The page: a password field, the agent's label shown as text, locked-down headers.
    let (status, headers, page) = get_page(&url).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("type=\"password\""), "{page}");
    assert!(page.contains("test &lt;b&gt;password&lt;/b&gt;"), "{page}");
    let csp = headers["content-security-policy"].to_str().unwrap();
    assert!(csp.contains("default-src 'none'") && csp.contains("frame-ancestors 'none'"));
    assert_eq!(headers["cache-control"], "no-store");
    assert_eq!(headers["referrer-policy"], "same-origin");
    assert!(page.contains("Received by <code>bash"), "{page}");

    // Refusals type nothing and keep the link: a control character, another site's form.
    let (status, page) = post_secret(&gateway.base, &token, "a\nb").await;
    assert_eq!(status, 400, "{page}");
    assert!(page.contains("control character"), "{page}");
    let (status, _) =
        post_secret_from(&gateway.base, &token, SECRET, Some("https://evil.example")).await;
    assert_eq!(status, 403);

    // Keys that tmux would type into every pane of the window are not sent.
    tmux.ok(&["set-option", "-w", "-t", &pane, "synchronize-panes", "on"]);
    let (status, page) = post_secret(&gateway.base, &token, SECRET).await;
    assert_eq!(status, 409, "{page}");
    assert!(page.contains("synchronize-panes"), "{page}");
    tmux.ok(&["set-option", "-w", "-t", &pane, "synchronize-panes", "off"]);

    // The program stopped asking (back at the prompt): not typed, the link still good.
    tmux.ok(&["send-keys", "-t", &pane, "C-c"]);
    let back = common::wait_until(Duration::from_secs(10), || {
        common::tools::screen(&tmux, &pane)
            .matches("ready$")
            .count()
            == 2
    })
    .await;
    assert!(back, "{}", common::tools::screen(&tmux, &pane));
    let refused = post_secret_until(&gateway.base, &token, 409).await;
    assert_eq!(refused.0, 409, "{}", refused.1);
    assert!(refused.1.contains("prompt"), "{}", refused.1);
    assert_eq!(
        get_page(&url).await.0,
        200,
        "a refused secret keeps the link"
    );

    // Asked again: typed, once.
    type_line(&tmux, &pane, &read_secret());
    let typed = post_secret_until(&gateway.base, &token, 200).await;
    assert_eq!(typed.0, 200, "{}", typed.1);
    wait_for_screen(&tmux, &pane, &format!("MATCHED {}", SECRET.len())).await;
    assert_eq!(post_secret(&gateway.base, &token, SECRET).await.0, 404);
    assert_eq!(get_page(&url).await.0, 404, "the link is spent");

    // Metrics count what happened, and carry nothing of it.
    let scrape = reqwest::get(format!("{}/metrics", gateway.base))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let metric = |name: &str| common::probe::sample(&scrape, name);
    let event = |name: &str| {
        metric(&format!(
            "muxgate_secret_requests_total{{event=\"{name}\"}}"
        ))
    };
    assert_eq!(event("requested"), Some(1.0), "{scrape}");
    assert_eq!(event("typed"), Some(1.0));
    assert!(event("refused").is_some_and(|n| n >= 2.0));
    assert_eq!(metric("muxgate_secret_requests_open"), Some(0.0));
    assert!(!scrape.contains("hunter2"));

    // Nobody else saw it: the agent's view of the pane, the audit log, the log lines.
    let seen = call_ok(&agent, "capture_pane", json!({"target": pane})).await;
    assert!(!seen.to_string().contains("hunter2"), "{seen}");
    let records = audit_secret_records(&audit);
    let events: Vec<&str> = records
        .iter()
        .map(|r| r["event"].as_str().unwrap())
        .collect();
    // Requested, refused at the prompt (and while the shell was between commands), typed.
    assert_eq!(events.first(), Some(&"requested"), "{records:?}");
    assert_eq!(events.last(), Some(&"typed"), "{records:?}");
    let middle = &events[1..events.len() - 1];
    assert!(
        !middle.is_empty() && middle.iter().all(|e| *e == "refused"),
        "{records:?}"
    );
    let typed = records.last().unwrap();
    assert_eq!(typed["bytes"], SECRET.len());
    assert_eq!(typed["request"], answer["request_id"]);
    assert_eq!(
        (&typed["sub"], &typed["pane"]),
        (&json!("test"), &json!(pane))
    );
    let audit_text = std::fs::read_to_string(&audit).unwrap();
    assert!(!audit_text.contains("hunter2"));
    let log_text = String::from_utf8_lossy(&logs.lock().unwrap()).into_owned();
    assert!(!log_text.is_empty(), "the log capture works");
    let leaked: Vec<&str> = log_text.lines().filter(|l| l.contains("hunter2")).collect();
    assert!(leaked.is_empty(), "the secret is in log lines: {leaked:#?}");
    let leaks: Vec<&str> = log_text.lines().filter(|l| l.contains(&token)).collect();
    assert!(
        leaks.is_empty(),
        "the link's token is in log lines: {leaks:#?}"
    );
}

/// A hostile program in another pane of the same server watches everything a pane can reach
/// while the secret is typed (every process's command line, tmux's paste buffers, every pane's
/// screen and history, tmux's environment): the secret is in none of them. And a link is for
/// the program it was asked for: after the pane is respawned, the new program does not get it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_neighbouring_pane_sees_no_secret_and_a_respawned_pane_gets_none() {
    let tmux = TestTmux::start();
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let agent = client(&gateway).await;
    let pane = bash_pane(&tmux).await;
    let loot = tempfile::tempdir().unwrap();
    let loot_file = loot.path().join("seen");
    // Runs in a pane of the victim's server, with its $TMUX: what any tenant there can do.
    let stop = loot.path().join("stop");
    let watch = format!(
        "while [ ! -e {stop} ]; do ps -eo args; cat /proc/[0-9]*/cmdline; \\
         tmux list-buffers -F '#{{buffer_sample}}'; tmux show-environment -g; \\
         for p in $(tmux list-panes -a -F '#{{pane_id}}'); do tmux capture-pane -p -J -S - -t $p; done; \\
         sleep 0.02; done > {seen} 2>&1; echo WATCH\"\"ED",
        stop = stop.display(),
        seen = loot_file.display()
    );
    let attacker = tmux.split_running("s", "bash --norc --noprofile");
    type_line(&tmux, &pane, &read_secret());
    let answer = request_when_ready(&agent, json!({"target": pane, "label": "pw"})).await;
    let token = token_of(&approver_link(&gateway, &answer).await);
    type_line(&tmux, &attacker.to_string(), &watch);
    let watching = common::wait_until(Duration::from_secs(10), || {
        std::fs::metadata(&loot_file).is_ok_and(|m| m.len() > 0)
    })
    .await;
    assert!(watching, "the watcher did not start");
    let typed = post_secret_until(&gateway.base, &token, 200).await;
    assert_eq!(typed.0, 200, "{}", typed.1);
    wait_for_screen(&tmux, &pane, &format!("MATCHED {}", SECRET.len())).await;
    // Rounds after the secret arrived (the watcher copied the pane's answer) and enough of
    // them to have read the pane's memory at length, then stop: an idle machine gets there
    // sooner than a loaded one, and the check below holds on both.
    let matched = format!("MATCHED {}", SECRET.len());
    let another_round = common::wait_until(Duration::from_secs(10), || {
        let notes = std::fs::read(&loot_file).unwrap_or_default();
        notes.len() > 10_000 && String::from_utf8_lossy(&notes).contains(&matched)
    })
    .await;
    assert!(another_round, "the watcher never saw the pane's answer");
    std::fs::write(&stop, "").unwrap();
    wait_for_screen(&tmux, &attacker.to_string(), "WATCHED").await;
    let seen = std::fs::read(&loot_file).expect("the watcher's notes");
    assert!(
        seen.len() > 10_000,
        "the watcher saw little: {} bytes",
        seen.len()
    );
    assert!(
        !String::from_utf8_lossy(&seen).contains("hunter2"),
        "the neighbouring pane saw the secret"
    );

    // A link for one program, then the pane respawned with another that also reads a secret.
    wait_for_screen(&tmux, &pane, "ready$").await;
    type_line(&tmux, &pane, &read_secret());
    let answer = request_when_ready(&agent, json!({"target": pane, "label": "pw"})).await;
    let token = token_of(&approver_link(&gateway, &answer).await);
    tmux.ok(&[
        "respawn-pane",
        "-k",
        "-t",
        &pane,
        "env PS1='again$ ' bash --norc --noprofile",
    ]);
    wait_for_screen(&tmux, &pane, "again$").await;
    type_line(&tmux, &pane, &read_secret());
    let refused = post_secret_until(&gateway.base, &token, 410).await;
    assert_eq!(refused.0, 410, "{}", refused.1);
    assert!(refused.1.contains("no longer exists"), "{}", refused.1);
    type_line(&tmux, &pane, "not-the-secret");
    wait_for_screen(&tmux, &pane, "DIFFERENT 14").await;
}

/// Bad requests are refused with the reason, and make no link.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_make_no_link() {
    let tmux = TestTmux::start();
    let dir = tempfile::tempdir().unwrap();
    let audit = dir.path().join("audit.jsonl");
    let gateway = gateway_with_audit(&tmux, &audit).await;
    let agent = client(&gateway).await;
    let pane = bash_pane(&tmux).await;
    type_line(&tmux, &pane, &read_secret());
    for (args, kind, says) in [
        (
            json!({"target": pane, "label": ""}),
            "invalid_arguments",
            "label",
        ),
        (
            json!({"target": pane, "label": "a\nb"}),
            "invalid_arguments",
            "one line",
        ),
        (
            json!({"target": pane, "label": "x", "expires_in_seconds": 0}),
            "invalid_arguments",
            "expires_in_seconds",
        ),
        (
            json!({"target": pane, "label": "x", "expires_in_seconds": 3601}),
            "invalid_arguments",
            "expires_in_seconds",
        ),
        (json!({"target": "%999", "label": "x"}), "not_found", "%999"),
    ] {
        let error = tool_error(&call(&agent, "request_secret_input", args).await);
        assert_eq!(error["kind"], kind, "{error}");
        assert!(error["message"].as_str().unwrap().contains(says), "{error}");
    }
    // A REPL edits its input itself and would draw the secret, whoever leads the pane.
    let repl = tmux.split_running(&pane, "python3 -q").to_string();
    wait_for_screen(&tmux, &repl, ">>>").await;
    let error = tool_error(
        &call(
            &agent,
            "request_secret_input",
            json!({"target": repl, "label": "x"}),
        )
        .await,
    );
    assert_eq!(error["kind"], "conflict", "{error}");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("edits its input"),
        "{error}"
    );
    assert!(audit_secret_records(&audit).is_empty());
    let (status, _, page) = get_page(&format!("{}/secret?t=forged", gateway.base)).await;
    assert_eq!(status, 404, "{page}");
    let (status, _, _) = get_page(&format!("{}/secret", gateway.base)).await;
    assert_eq!(status, 400);
}

/// A user at a client that supports URL-mode elicitation.
#[derive(Clone)]
struct User {
    accepts: bool,
    /// The links the client was asked to show.
    shown: Arc<Mutex<Vec<String>>>,
}

impl User {
    /// A user who accepts (or declines) every link, shown none yet.
    fn new(accepts: bool) -> Self {
        User {
            accepts,
            shown: Arc::default(),
        }
    }

    /// A user who accepts (or declines) every link, connected as the agent's MCP client.
    async fn connect(
        gateway: &TestGateway,
        accepts: bool,
    ) -> (Self, rmcp::service::RunningService<RoleClient, Self>) {
        let user = User::new(accepts);
        let agent = user
            .clone()
            .serve(gateway.transport())
            .await
            .expect("MCP client connects");
        (user, agent)
    }

    /// The same user at a 2026-07-28 client (`server/discover`, stateless).
    async fn discover(
        gateway: &TestGateway,
        accepts: bool,
    ) -> (Self, rmcp::service::RunningService<RoleClient, Self>) {
        let user = User::new(accepts);
        let agent = user
            .clone()
            .serve_with_lifecycle(
                gateway.transport(),
                ClientLifecycleMode::Discover {
                    preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                },
            )
            .await
            .expect("MCP client discovers");
        (user, agent)
    }
}

impl ClientHandler for User {
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let ElicitRequestParams::UrlElicitationParams { url, .. } = request else {
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        };
        self.shown.lock().unwrap().push(url.clone());
        if !self.accepts {
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        }
        // The user opens the link and types the secret after saying yes.
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            let base = url.split("/secret?").next().unwrap_or_default().to_owned();
            post_secret(&base, &token_of(&url), SECRET).await
        });
        Ok(ElicitResult::new(ElicitationAction::Accept))
    }

    fn get_info(&self) -> ClientConfig {
        let mut info = ClientConfig::default();
        info.capabilities.elicitation =
            Some(ElicitationCapability::new().with_url(UrlElicitationCapability::new()));
        info
    }
}

/// A gateway with an audit log, and a bash pane whose program waits to read a secret.
struct Reading {
    tmux: TestTmux,
    dir: tempfile::TempDir,
    gateway: TestGateway,
    pane: String,
}

impl Reading {
    async fn start() -> Self {
        let tmux = TestTmux::start();
        let dir = tempfile::tempdir().unwrap();
        let gateway = gateway_with_audit(&tmux, &dir.path().join("audit.jsonl")).await;
        let pane = bash_pane(&tmux).await;
        type_line(&tmux, &pane, &read_secret());
        Self {
            tmux,
            dir,
            gateway,
            pane,
        }
    }
}

/// Where the client supports URL elicitation, the link goes to the user and the call waits for
/// the secret: the model sees neither the link nor the secret. A user who declines gets the
/// link withdrawn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn url_elicitation_offers_the_link_to_the_user_not_the_model() {
    let Reading {
        tmux,
        dir: _dir,
        gateway,
        pane,
    } = Reading::start().await;

    let (user, agent) = User::connect(&gateway, true).await;
    let answer = request_when_ready(&agent, json!({"target": pane, "label": "pw"})).await;
    assert_eq!(answer["status"], "typed", "{answer}");
    assert_no_link(&answer);
    assert_eq!(user.shown.lock().unwrap().len(), 1);
    wait_for_screen(&tmux, &pane, &format!("MATCHED {}", SECRET.len())).await;

    type_line(&tmux, &pane, &read_secret());
    let (declining, agent) = User::connect(&gateway, false).await;
    let answer = request_when_ready(&agent, json!({"target": pane, "label": "pw"})).await;
    assert_eq!(answer["status"], "declined", "{answer}");
    let shown = declining.shown.lock().unwrap()[0].clone();
    assert_eq!(
        get_page(&shown).await.0,
        404,
        "a declined link is withdrawn"
    );
}

/// Asserts that nothing a model could read in a result (its text, its structured content, its
/// `_meta`) holds a secret entry link or its token.
fn assert_no_link(result: &Value) {
    let text = result.to_string();
    assert!(
        !text.contains("/secret?") && !text.contains("?t="),
        "the result hands the model a link: {result}"
    );
}

/// The link an approver (`alice`, a token with `mux:approve` alone) takes for the request
/// `answer` names.
async fn approver_link(gateway: &TestGateway, answer: &Value) -> String {
    let approver = gateway.mint("alice", &["mux:approve"]);
    let id = answer["request_id"].as_str().expect("a request id");
    link_from_approvers(gateway, &approver, id).await
}

/// What an approver (a token with `mux:approve` alone) gets from the gateway's pending secret
/// requests: the listing, then a link for request `id`.
async fn link_from_approvers(gateway: &TestGateway, approver: &str, id: &str) -> String {
    let http = reqwest::Client::new();
    let listing: Value = http
        .get(format!("{}/approvals/secrets", gateway.base))
        .bearer_auth(approver)
        .send()
        .await
        .expect("GET /approvals/secrets")
        .json()
        .await
        .expect("a JSON listing");
    assert!(
        listing["pending"]
            .as_array()
            .is_some_and(|p| p.iter().any(|r| r["id"] == id)),
        "{id} is not listed: {listing}"
    );
    assert_no_link(&listing);
    let issued: Value = http
        .post(format!("{}/approvals/secrets/{id}", gateway.base))
        .bearer_auth(approver)
        .send()
        .await
        .expect("POST /approvals/secrets/{id}")
        .json()
        .await
        .expect("a JSON answer");
    issued["url"].as_str().expect("a link").to_owned()
}

/// `muxgate approvals secrets` and `secret-link` as the approver `token`: the request is listed
/// (no link), `own` (an approver under the agent's identity) is refused its link, and the
/// approver gets one.
fn link_from_cli(gateway: &TestGateway, token: &str, own: &str, id: &str) -> String {
    let url = format!("{}/approvals", gateway.base);
    let cli = |token: &str, args: &[&str]| {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_muxgate"))
            .arg("approvals")
            .args(args)
            .args(["--url", &url])
            .env("MUXGATE_APPROVER_TOKEN", token)
            .output()
            .expect("run muxgate approvals");
        let text = String::from_utf8_lossy(&output.stdout).into_owned()
            + &String::from_utf8_lossy(&output.stderr);
        (output.status.success(), text)
    };
    let (ok, listed) = cli(token, &["secrets"]);
    assert!(ok && listed.starts_with("id "), "{listed}");
    assert!(listed.contains(id) && listed.contains("pw"), "{listed}");
    assert!(!listed.contains("/secret?"), "{listed}");
    let (ok, refused) = cli(own, &["secret-link", id]);
    assert!(!ok && refused.contains("403"), "{refused}");
    assert!(refused.contains("own identity"), "{refused}");
    let (ok, issued) = cli(token, &["secret-link", id]);
    assert!(ok, "{issued}");
    issued
        .lines()
        .next()
        .filter(|line| line.starts_with(&format!("{}/secret?t=", gateway.base)))
        .unwrap_or_else(|| panic!("no link printed: {issued}"))
        .to_owned()
}

/// A 2026-07-28 client that supports URL elicitation is asked with an `InputRequiredResult`
/// (`inputRequests`, URL mode): its handler gets the link, the user types the secret there, and
/// the retried call's result says it was typed, with no link in it. A user who declines gets
/// the link withdrawn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_client_is_asked_with_input_requests_and_its_result_holds_no_link() {
    let Reading {
        tmux,
        dir: _dir,
        gateway,
        pane,
    } = Reading::start().await;

    let (user, agent) = User::discover(&gateway, true).await;
    let answer = request_when_ready(&agent, json!({"target": pane, "label": "pw"})).await;
    assert_no_link(&answer);
    assert_eq!(answer["status"], "typed", "{answer}");
    assert_eq!(
        user.shown.lock().unwrap().len(),
        1,
        "the user was shown one link"
    );
    wait_for_screen(&tmux, &pane, &format!("MATCHED {}", SECRET.len())).await;

    type_line(&tmux, &pane, &read_secret());
    let (declining, agent) = User::discover(&gateway, false).await;
    let answer = request_when_ready(&agent, json!({"target": pane, "label": "pw"})).await;
    assert_no_link(&answer);
    assert_eq!(answer["status"], "declined", "{answer}");
    let shown = declining.shown.lock().unwrap()[0].clone();
    assert_eq!(
        get_page(&shown).await.0,
        404,
        "a declined link is withdrawn"
    );
}

/// A 2026-07-28 client that declares URL elicitation but answers without the user's response
/// (it retries with the request state alone, as a client that could not show the link would):
/// the round before held the link for the client only, and the result holds none; the request
/// waits for an approver instead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_client_that_does_not_answer_the_input_request_gets_the_fallback() {
    let Reading {
        tmux,
        dir: _dir,
        gateway,
        pane,
    } = Reading::start().await;
    let (user, agent) = User::discover(&gateway, true).await;
    let args = json!({"target": pane, "label": "pw"});
    let mut first = None;
    for _ in 0..100 {
        let request = CallToolRequestParams::new("request_secret_input")
            .with_arguments(args.as_object().expect("arguments").clone());
        match agent.call_tool_once(request).await.expect("tools/call") {
            CallToolResponse::InputRequired(input) => {
                first = Some(input);
                break;
            }
            CallToolResponse::Complete(result) => {
                assert_eq!(result.is_error, Some(true), "{result:?}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            other => panic!("unexpected answer {other:?}"),
        }
    }
    let first = first.expect("the pane became ready and the client was asked");
    let asked = serde_json::to_value(&first).unwrap();
    let requests = asked["inputRequests"].as_object().expect("input requests");
    assert_eq!(requests.len(), 1, "{asked}");
    let (_, request) = requests.iter().next().unwrap();
    assert_eq!(request["method"], "elicitation/create", "{asked}");
    assert_eq!(request["params"]["mode"], "url", "{asked}");
    let url = request["params"]["url"]
        .as_str()
        .expect("the link, for the client");
    assert!(
        url.starts_with(&format!("{}/secret?t=", gateway.base)),
        "{url}"
    );
    assert!(user.shown.lock().unwrap().is_empty(), "asked once, by hand");

    let state = first.request_state.clone().expect("a request state");
    let retry = CallToolRequestParams::new("request_secret_input")
        .with_arguments(args.as_object().expect("arguments").clone());
    let mut retry = retry;
    retry.request_state = Some(state);
    let CallToolResponse::Complete(result) = agent.call_tool_once(retry).await.expect("retry")
    else {
        panic!("the retry without answers was asked again");
    };
    let answer = serde_json::to_value(&result).unwrap();
    assert_no_link(&answer);
    let structured = result.structured_content.expect("structured content");
    assert_eq!(structured["status"], "pending", "{structured}");
    assert_eq!(structured["pane_id"], json!(pane), "{structured}");
    let link = approver_link(&gateway, &structured).await;
    let typed = post_secret_until(&gateway.base, &token_of(&link), 200).await;
    assert_eq!(typed.0, 200, "{}", typed.1);
    wait_for_screen(&tmux, &pane, &format!("MATCHED {}", SECRET.len())).await;
}

/// A client that cannot show a link to its user (no URL elicitation), in either era, gets no
/// link either: the result says a human must take the request at the gateway. The agent's own
/// token cannot list it; an approver can, and types the secret through the link the gateway
/// gives them. Nobody is handed a link for their own request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_url_elicitation_the_link_goes_to_an_approver_never_to_the_model() {
    let tmux = TestTmux::start();
    let dir = tempfile::tempdir().unwrap();
    let gateway = gateway_with_audit(&tmux, &dir.path().join("audit.jsonl")).await;
    let alice = gateway.mint("alice", &["mux:approve"]);
    let itself = gateway.mint("test", &["mux:approve"]);
    let http = reqwest::Client::new();
    for era in [common::LEGACY_VERSION, common::STATELESS_VERSION] {
        let pane = tmux.session_running(era, "env PS1='ready$ ' bash --norc --noprofile");
        wait_for_screen(&tmux, &pane, "ready$").await;
        let agent = if era == common::LEGACY_VERSION {
            common::calls::legacy(&gateway, &gateway.token).await
        } else {
            common::calls::stateless(&gateway, &gateway.token).await
        };
        type_line(&tmux, &pane, &read_secret());
        let answer = request_when_ready(&agent, json!({"target": pane, "label": "pw"})).await;
        assert_no_link(&answer);
        assert_eq!(answer["status"], "pending", "{era}: {answer}");
        let next = answer["next_step"].as_str().unwrap_or_default();
        assert!(
            next.contains("muxgate approvals secrets") && next.contains("/approvals/secrets"),
            "{era}: the result names the human's way to the request: {answer}"
        );
        let id = answer["request_id"]
            .as_str()
            .expect("a request id")
            .to_owned();

        // The agent's own token lists nothing; an approver for their own request gets no link.
        let listed = http
            .get(format!("{}/approvals/secrets", gateway.base))
            .bearer_auth(&gateway.token)
            .send()
            .await
            .unwrap();
        assert_eq!(listed.status().as_u16(), 403, "{era}");
        let own = http
            .post(format!("{}/approvals/secrets/{id}", gateway.base))
            .bearer_auth(&itself)
            .send()
            .await
            .unwrap();
        assert_eq!(own.status().as_u16(), 403, "{era}");

        // One era's approver asks over HTTP, the other's with `muxgate approvals`.
        let url = if era == common::LEGACY_VERSION {
            link_from_approvers(&gateway, &alice, &id).await
        } else {
            tokio::task::block_in_place(|| link_from_cli(&gateway, &alice, &itself, &id))
        };
        let typed = post_secret_until(&gateway.base, &token_of(&url), 200).await;
        assert_eq!(typed.0, 200, "{era}: {}", typed.1);
        wait_for_screen(&tmux, &pane, &format!("MATCHED {}", SECRET.len())).await;
    }
}

/// From the inbox, without a token: an approver signed in by a one-time link sees the request
/// waiting (never its link), and its button leads to a fresh link, where the secret is typed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_request_is_taken_from_the_inbox() {
    let tmux = TestTmux::start();
    let dir = tempfile::tempdir().unwrap();
    let gateway = gateway_with_audit(&tmux, &dir.path().join("audit.jsonl")).await;
    let pane = tmux.session_running("inbox", "env PS1='ready$ ' bash --norc --noprofile");
    wait_for_screen(&tmux, &pane, "ready$").await;
    let agent = common::calls::stateless(&gateway, &gateway.token).await;
    type_line(&tmux, &pane, &read_secret());
    let answer = request_when_ready(&agent, json!({"target": pane, "label": "db password"})).await;
    assert_eq!(answer["status"], "pending", "{answer}");
    let id = answer["request_id"]
        .as_str()
        .expect("a request id")
        .to_owned();

    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let alice = gateway.mint("alice", &["mux:approve"]);
    let made: Value = http
        .post(format!("{}/approvals/link", gateway.base))
        .bearer_auth(&alice)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let link = made["url"].as_str().expect("a sign-in link");
    let signed = http
        .post(format!("{}/inbox/signin", gateway.base))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form(&[("t", &token_of(link))]))
        .send()
        .await
        .unwrap();
    assert_eq!(signed.status().as_u16(), 303);
    let set = signed.headers()["set-cookie"].to_str().unwrap().to_owned();
    for part in ["HttpOnly", "SameSite=Lax"] {
        assert!(set.contains(part), "{set}");
    }
    // The session ends with the approver's token (an hour), before the configured 12 h.
    let max_age: u64 = set
        .split("Max-Age=")
        .nth(1)
        .and_then(|rest| rest.split(';').next())
        .and_then(|secs| secs.parse().ok())
        .expect("a Max-Age");
    assert!((3500..=3600).contains(&max_age), "{set}");
    let cookie = set.split(';').next().unwrap().to_owned();

    let inbox = http
        .get(format!("{}/inbox", gateway.base))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(inbox.status().as_u16(), 200);
    let page = inbox.text().await.unwrap();
    assert!(
        page.contains("Secrets to type (1)") && page.contains("db password"),
        "{page}"
    );
    assert!(
        !page.contains("/secret?t="),
        "the inbox shows a link: {page}"
    );

    let opened = http
        .post(format!("{}/inbox/secret", gateway.base))
        .header("cookie", &cookie)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form(&[("id", &id)]))
        .send()
        .await
        .unwrap();
    assert_eq!(opened.status().as_u16(), 303);
    let url = opened.headers()["location"].to_str().unwrap().to_owned();
    assert!(url.starts_with("../secret?t="), "{url}");
    let typed = post_secret_until(&gateway.base, &token_of(&url), 200).await;
    assert_eq!(typed.0, 200, "{}", typed.1);
    wait_for_screen(&tmux, &pane, &format!("MATCHED {}", SECRET.len())).await;

    // Without the session, nothing is opened.
    let outside = http
        .post(format!("{}/inbox/secret", gateway.base))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form(&[("id", &id)]))
        .send()
        .await
        .unwrap();
    assert_eq!(outside.headers()["location"], "../inbox");
}

/// The form as a human uses it: headless Chromium (Debian's package) opens the link, the
/// secret is put in the password field and the form submitted, and the pane's program gets it.
/// (A page whose headers made the browser post `Origin: null` was refused here.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_human_types_the_secret_in_a_real_browser() {
    if !common::needs::program("chromium", "chromium", "the secret form's browser test") {
        return;
    }
    let Reading {
        tmux,
        dir: _dir,
        gateway,
        pane,
    } = Reading::start().await;
    let agent = client(&gateway).await;
    let answer = request_when_ready(&agent, json!({"target": pane, "label": "pw"})).await;
    let url = approver_link(&gateway, &answer).await;

    let browser = common::browser::Browser::start(&url).await;
    let mut page = browser.page(&url).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let field = "document.querySelector('input[name=secret]')";
    loop {
        let ready = page
            .try_command(
                "Runtime.evaluate",
                json!({"expression": format!("!!{field}"), "returnByValue": true}),
            )
            .await;
        if ready.is_ok_and(|r| r["result"]["value"] == true) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the form never loaded"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let secret = serde_json::to_string(SECRET).unwrap();
    page.eval(&format!(
        "{field}.value = {secret}; document.querySelector('form').submit(); true"
    ))
    .await;
    wait_for_screen(&tmux, &pane, &format!("MATCHED {}", SECRET.len())).await;
}
