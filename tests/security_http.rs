//! The security layers end to end over real HTTP: a loopback listener serving a small
//! stand-in for the MCP endpoint behind `require_bearer` → `limit_requests` →
//! `bind_sessions`, with the handler asking policy and limits and writing the audit log the
//! way the real tool layer does. Every rejection path is driven with a real client, and at the
//! end the audit file and everything logged are searched for every secret sent.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::middleware::from_fn_with_state;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use governor::clock::FakeRelativeClock;
use muxgate::audit::{AuditConfig, AuditKey, AuditLog, CallStart, Head, Outcome, verify};
use muxgate::auth::{
    self, AuthConfig, Authenticator, ClientPolicyConfig, MintRequest, Principal, ProtectedResource,
    RejectReason, SessionBindings, SessionRef, Tier, TokenMinter,
};
use muxgate::limits::{LimitOverrides, Limits, LimitsConfig, limit_requests};
use serde_json::{Value, json};

/// Everything the process logs, captured for the secret search.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

struct CaptureWriter(Arc<Mutex<Vec<u8>>>);

impl Write for CaptureWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Capture {
    type Writer = CaptureWriter;
    fn make_writer(&'a self) -> Self::Writer {
        CaptureWriter(Arc::clone(&self.0))
    }
}

fn logs() -> &'static Capture {
    static LOGS: OnceLock<Capture> = OnceLock::new();
    LOGS.get_or_init(|| {
        let capture = Capture::default();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_ansi(false)
            .with_writer(capture.clone())
            .finish();
        tracing::subscriber::set_global_default(subscriber)
            .expect("one subscriber per test binary");
        capture
    })
}

struct Gateway {
    audit: AuditLog,
    limits: Arc<Limits<FakeRelativeClock>>,
}

fn tier_of(name: &str) -> Tier {
    match name {
        "read" => Tier::ReadOnly,
        "write" => Tier::Mutating,
        _ => Tier::Destructive,
    }
}

/// The stand-in tool endpoint. Body: `{"tool", "tier", "server", "session", "owner", "args"}`.
/// The first request of a client (no session header) opens a session, like `initialize`.
async fn tool_endpoint(State(gw): State<Arc<Gateway>>, req: Request) -> Response {
    let principal = Principal::from_extensions(req.extensions())
        .cloned()
        .expect("authenticated");
    let session = req
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = axum::body::to_bytes(req.into_body(), 1 << 20)
        .await
        .unwrap();
    let call: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let Some(tool) = call["tool"].as_str() else {
        let id = format!("session-{}", rand_id());
        return (
            [("mcp-session-id", id)],
            Json(json!({ "initialized": true })),
        )
            .into_response();
    };
    let server = call["server"].as_str().unwrap_or("default");
    let target = call["session"].as_str().unwrap_or("main");
    let owner = call["owner"].as_str().unwrap_or("");
    let targets = [target.to_owned()];
    let open = gw
        .audit
        .start(CallStart {
            sub: &principal.sub,
            mcp_session: session.as_deref(),
            tool,
            server: Some(server),
            host: None,
            targets: &targets,
            args: &call["args"],
            schema: None,
        })
        .await
        .expect("the start record is queued");
    let decision = gw
        .limits
        .check_tool_call(&principal.sub)
        .map_err(|e| (Outcome::Limited, "limit", e.to_string()))
        .and_then(|()| {
            auth::can_call(
                &principal,
                tier_of(call["tier"].as_str().unwrap_or("admin")),
            )
            .and_then(|()| {
                let session = SessionRef {
                    name: target,
                    owner: (!owner.is_empty()).then_some(owner),
                };
                auth::check_session(&principal, server, session)
            })
            .map_err(|d| (Outcome::Denied, d.kind(), d.to_string()))
        });
    let (outcome, error_kind, text) = match decision {
        Ok(()) => (Outcome::Ok, None, "done".to_owned()),
        Err((outcome, kind, text)) => (outcome, Some(kind), text),
    };
    open.end(outcome, error_kind);
    Json(json!({ "isError": outcome != Outcome::Ok, "text": text })).into_response()
}

fn rand_id() -> String {
    auth::generate_secret()
}

struct Running {
    base: String,
    http: reqwest::Client,
    audit: AuditLog,
    audit_path: std::path::PathBuf,
    clock: FakeRelativeClock,
    rejections: Arc<Mutex<Vec<RejectReason>>>,
    minter: TokenMinter,
    _dir: tempfile::TempDir,
}

async fn start() -> Running {
    logs();
    let dir = tempfile::tempdir().unwrap();
    let audit_path = dir.path().join("audit.jsonl");
    let secret = auth::generate_secret();
    let auth_cfg = AuthConfig::hs256(secret);
    let mut clients: BTreeMap<String, ClientPolicyConfig<LimitOverrides>> = BTreeMap::new();
    clients.insert(
        "flood".into(),
        toml::from_str("[limits]\nrequests_per_second = 1\nrequest_burst = 3").unwrap(),
    );
    clients.insert(
        "capped".into(),
        toml::from_str(r#"scopes = ["mux:read"]"#).unwrap(),
    );

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let resource =
        Arc::new(ProtectedResource::new(&auth_cfg, &format!("http://{addr}/mcp")).unwrap());
    let rejections = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&rejections);
    let authn = Arc::new(
        Authenticator::new(&auth_cfg, &clients, &resource)
            .unwrap()
            .with_reject_hook(Arc::new(move |r| sink.lock().unwrap().push(r))),
    );
    let clock = FakeRelativeClock::default();
    let overrides: Vec<(&String, &LimitOverrides)> =
        clients.iter().map(|(sub, c)| (sub, &c.limits)).collect();
    let limits = Arc::new(Limits::with_clock(
        &LimitsConfig::default(),
        overrides,
        clock.clone(),
    ));
    let audit = AuditLog::open(
        &AuditConfig {
            path: Some(audit_path.clone()),
            ..AuditConfig::default()
        },
        Some(dir.path()),
    )
    .unwrap();
    let gateway = Arc::new(Gateway {
        audit: audit.clone(),
        limits: Arc::clone(&limits),
    });
    let app = Router::new()
        .route("/mcp", post(tool_endpoint).delete(|| async { "bye" }))
        .with_state(gateway)
        .layer(from_fn_with_state(
            Arc::new(SessionBindings::default()),
            auth::bind_sessions,
        ))
        .layer(from_fn_with_state(limits, limit_requests))
        .layer(from_fn_with_state(authn, auth::require_bearer))
        .merge(resource.router());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    Running {
        base: format!("http://{addr}"),
        http: reqwest::Client::new(),
        audit,
        audit_path,
        clock,
        rejections,
        minter: TokenMinter::from_config(&auth_cfg).unwrap(),
        _dir: dir,
    }
}

impl Running {
    fn token(&self, sub: &str, scopes: &[&str], servers: Option<&[&str]>) -> String {
        self.minter
            .mint(&MintRequest {
                sub: sub.into(),
                scopes: scopes.iter().map(|s| s.to_string()).collect(),
                ttl: Duration::from_secs(600),
                servers: servers.map(|s| s.iter().map(|x| x.to_string()).collect()),
                sessions: None,
                own_sessions: false,
                workspace: None,
                toolsets: None,
            })
            .unwrap()
    }

    async fn post(
        &self,
        token: Option<&str>,
        session: Option<&str>,
        body: Value,
    ) -> (u16, reqwest::header::HeaderMap, Value) {
        let mut req = self.http.post(format!("{}/mcp", self.base)).json(&body);
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        if let Some(s) = session {
            req = req.header("mcp-session-id", s);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let body = resp.json().await.unwrap_or(Value::Null);
        (status, headers, body)
    }

    /// Opens a session for `token` and returns its id.
    async fn open_session(&self, token: &str) -> String {
        let (status, headers, _) = self.post(Some(token), None, json!({})).await;
        assert_eq!(status, 200);
        headers["mcp-session-id"].to_str().unwrap().to_owned()
    }
}

#[tokio::test]
async fn security_layers_over_real_http() {
    let gw = start().await;
    let mut sent_secrets: Vec<String> = Vec::new();

    // --- 401 paths -------------------------------------------------------------------
    let (status, headers, body) = gw.post(None, None, json!({})).await;
    assert_eq!(status, 401);
    let challenge = headers["www-authenticate"].to_str().unwrap().to_owned();
    assert_eq!(
        challenge,
        format!(
            "Bearer resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\"",
            gw.base
        )
    );
    assert_eq!(body["reason"], "missing");

    let forged = TokenMinter::from_config(&AuthConfig::hs256(auth::generate_secret()))
        .unwrap()
        .mint(&MintRequest {
            sub: "alice".into(),
            scopes: vec!["mux:admin".into()],
            ttl: Duration::from_secs(60),
            servers: None,
            sessions: None,
            own_sessions: false,
            workspace: None,
            toolsets: None,
        })
        .unwrap();
    sent_secrets.push(forged.clone());
    let (status, headers, body) = gw.post(Some(&forged), None, json!({})).await;
    assert_eq!(status, 401);
    assert_eq!(body["reason"], "bad_signature");
    assert!(
        headers["www-authenticate"]
            .to_str()
            .unwrap()
            .starts_with("Bearer error=\"invalid_token\", error_description=\"the token's signature does not verify\"")
    );
    let (status, _, body) = gw.post(Some("not.a.jwt"), None, json!({})).await;
    assert_eq!(
        (status, body["reason"].as_str()),
        (401, Some("malformed_token"))
    );

    // --- metadata is public ------------------------------------------------------------
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let doc: Value = gw
            .http
            .get(format!("{}{path}", gw.base))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(doc["resource"], format!("{}/mcp", gw.base));
        assert_eq!(doc["bearer_methods_supported"], json!(["header"]));
    }

    // --- policy: scope and ACL ----------------------------------------------------------
    let reader = gw.token("alice", &["mux:read"], Some(&["build"]));
    sent_secrets.push(reader.clone());
    let session = gw.open_session(&reader).await;
    let (status, _, body) = gw
        .post(
            Some(&reader),
            Some(&session),
            json!({ "tool": "send_keys", "tier": "write", "server": "build",
                    "args": { "pane_id": "%1", "keys": "SCOPE-DENIED-KEYS" } }),
        )
        .await;
    sent_secrets.push("SCOPE-DENIED-KEYS".into());
    assert_eq!(status, 200);
    assert_eq!(body["isError"], true);
    assert!(
        body["text"]
            .as_str()
            .unwrap()
            .contains("needs scope `mux:write`"),
        "{body}"
    );

    let (_, _, body) = gw
        .post(
            Some(&reader),
            Some(&session),
            json!({ "tool": "capture_pane", "tier": "read", "server": "prod", "args": { "pane_id": "%1" } }),
        )
        .await;
    assert_eq!(body["isError"], true);
    assert!(
        body["text"]
            .as_str()
            .unwrap()
            .starts_with("unknown server `prod`"),
        "{body}"
    );

    let (_, _, body) = gw
        .post(
            Some(&reader),
            Some(&session),
            json!({ "tool": "capture_pane", "tier": "read", "server": "build", "args": { "pane_id": "%1" } }),
        )
        .await;
    assert_eq!(body["isError"], false, "{body}");

    // Config caps the token: `capped` holds mux:admin in its token but only mux:read by config.
    let capped = gw.token("capped", &["mux:admin"], None);
    sent_secrets.push(capped.clone());
    let capped_session = gw.open_session(&capped).await;
    let (_, _, body) = gw
        .post(
            Some(&capped),
            Some(&capped_session),
            json!({ "tool": "kill_session", "tier": "admin", "args": {} }),
        )
        .await;
    assert!(
        body["text"]
            .as_str()
            .unwrap()
            .contains("needs scope `mux:admin`"),
        "{body}"
    );

    // --- session hijack ---------------------------------------------------------------
    let mallory = gw.token("mallory", &["mux:admin"], None);
    sent_secrets.push(mallory.clone());
    let (status, _, body) = gw
        .post(
            Some(&mallory),
            Some(&session),
            json!({ "tool": "send_keys", "tier": "write", "args": { "keys": "HIJACK-KEYS" } }),
        )
        .await;
    sent_secrets.push("HIJACK-KEYS".into());
    assert_eq!(status, 404);
    assert_eq!(body["error"], "session_not_found");
    let (status, _, _) = gw
        .post(
            Some(&reader),
            Some(&session),
            json!({ "tool": "list_sessions", "tier": "read", "server": "build", "args": {} }),
        )
        .await;
    assert_eq!(status, 200, "the owner keeps its session");

    // --- request rate: exactly the burst, then 429 -----------------------------------------
    let flood = gw.token("flood", &["mux:read"], None);
    sent_secrets.push(flood.clone());
    let mut accepted = 0;
    let mut refused = None;
    for _ in 0..6 {
        let (status, headers, body) = gw.post(Some(&flood), None, json!({})).await;
        match status {
            200 => accepted += 1,
            429 => {
                refused = Some((headers, body));
                break;
            }
            other => panic!("unexpected status {other}"),
        }
    }
    assert_eq!(accepted, 3);
    let (headers, body) = refused.expect("the fourth request is refused");
    assert_eq!(headers["retry-after"], "1");
    assert_eq!(body["limit"], "requests_per_second");
    gw.clock.advance(Duration::from_secs(1));
    assert_eq!(gw.post(Some(&flood), None, json!({})).await.0, 200);

    // --- audited secrets ----------------------------------------------------------------
    let writer = gw.token("writer", &["mux:write"], None);
    sent_secrets.push(writer.clone());
    let writer_session = gw.open_session(&writer).await;
    let payloads = [
        json!({ "pane_id": "%2", "keys": "AUDIT-KEYS-SECRET" }),
        json!({ "pane_id": "%2", "text": "AUDIT-TEXT-SECRET" }),
        json!({ "pane_id": "%2", "command": "AUDIT-COMMAND-SECRET" }),
        json!({ "session_name": "s", "environment": { "DB_PASSWORD": "AUDIT-ENV-SECRET" } }),
        json!({ "operations": [ { "tool": "send_keys", "arguments": { "keys": "AUDIT-BATCH-SECRET" } } ] }),
        json!({ "pane_id": "%2", "bogus_field": "AUDIT-UNKNOWN-SECRET" }),
        json!(["AUDIT-MALFORMED-SECRET"]),
        json!({ "content": "AUDIT-BUFFER-SECRET", "logical_name": "clip" }),
    ];
    for args in &payloads {
        let (status, _, body) = gw
            .post(
                Some(&writer),
                Some(&writer_session),
                json!({ "tool": "send_keys", "tier": "write", "args": args }),
            )
            .await;
        assert_eq!(
            (status, body["isError"].as_bool()),
            (200, Some(false)),
            "{body}"
        );
    }
    sent_secrets.extend(
        [
            "AUDIT-KEYS-SECRET",
            "AUDIT-TEXT-SECRET",
            "AUDIT-COMMAND-SECRET",
            "AUDIT-ENV-SECRET",
            "AUDIT-BATCH-SECRET",
            "AUDIT-UNKNOWN-SECRET",
            "AUDIT-MALFORMED-SECRET",
            "AUDIT-BUFFER-SECRET",
        ]
        .map(String::from),
    );

    gw.audit.close().await.unwrap();
    let audit_text = std::fs::read_to_string(&gw.audit_path).unwrap();
    let log_text = String::from_utf8_lossy(&logs().0.lock().unwrap()).into_owned();
    for secret in &sent_secrets {
        assert!(
            !audit_text.contains(secret.as_str()),
            "secret in the audit file: {secret:.40}"
        );
        assert!(
            !log_text.contains(secret.as_str()),
            "secret in the logs: {secret:.40}"
        );
    }
    // The hijack attempt is logged with both subs.
    assert!(
        log_text
            .lines()
            .any(|l| l.contains("presented by another client")
                && l.contains("owner=alice")
                && l.contains("presented_by=mallory")),
        "hijack not logged"
    );
    // The audit trail is complete, redacted and intact.
    let lines: Vec<Value> = audit_text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let starts: std::collections::HashMap<&str, &Value> = lines
        .iter()
        .filter(|l| l["kind"] == "start")
        .map(|l| (l["call"].as_str().unwrap(), l))
        .collect();
    // Each call as (start, end) records.
    let calls: Vec<(&Value, &Value)> = lines
        .iter()
        .filter(|l| l["kind"] == "end")
        .map(|end| (starts[end["call"].as_str().unwrap()], end))
        .collect();
    assert_eq!(calls.len(), starts.len(), "every call started and ended");
    let denied = calls
        .iter()
        .filter(|(_, end)| end["outcome"] == "denied")
        .count();
    assert_eq!(denied, 3, "scope, ACL and capped-scope denials");
    assert!(
        calls
            .iter()
            .any(|(start, end)| end["error_kind"] == "missing_scope" && start["sub"] == "alice")
    );
    assert!(
        calls
            .iter()
            .any(|(_, end)| end["error_kind"] == "server_not_visible")
    );
    assert_eq!(
        calls
            .iter()
            .filter(|(start, _)| start["sub"] == "writer")
            .count(),
        payloads.len()
    );
    assert!(starts.values().all(|l| l["mcp_session"].is_string()));
    let key = AuditKey::load(&gw._dir.path().join("audit.key")).unwrap();
    let head_file = muxgate::audit::files::default_head(gw._dir.path(), &gw.audit_path);
    let head = Head::load(&head_file, &key).unwrap();
    assert!(head.is_some(), "closing the log wrote its head");
    let report = verify(
        &gw.audit_path,
        &key,
        head.as_ref().map(muxgate::audit::Head::anchor),
    )
    .unwrap();
    assert!(report.is_intact(), "{report}");

    // Every 401 was counted with its reason.
    assert_eq!(
        gw.rejections.lock().unwrap().as_slice(),
        &[
            RejectReason::Missing,
            RejectReason::BadSignature,
            RejectReason::MalformedToken
        ]
    );
}
