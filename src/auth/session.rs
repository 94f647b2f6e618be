//! Binding MCP sessions to the client that opened them.
//!
//! rmcp serves any request that presents a valid `Mcp-Session-Id`, whoever sends it. This
//! module remembers which `sub` each session was created for and refuses it to anyone else.
//! [`bind_sessions`] runs after [`super::require_bearer`]:
//! - a request without the header passes; if the response creates a session (it carries
//!   `Mcp-Session-Id`), the session is bound to the caller;
//! - a request with the header passes only if the session is bound to the caller. A session
//!   bound to someone else, or not bound at all (never issued here, or forgotten), is answered
//!   `404 session_not_found`, exactly like an unknown session, so ids cannot be probed. A
//!   foreign session is logged at `warn` with both subs (never a token);
//! - a successful `DELETE`, or a 404 from downstream, forgets the binding.
//!
//! Bindings idle longer than the configured time are forgotten (rmcp's own sessions expire
//! after 5 idle minutes by default, so a longer idle time never strands a live session), and
//! the table is capped: when full, the least recently used binding goes.
//!
//! One client may hold at most `max_per_sub` sessions: an `initialize` (marked [`OpensSession`]
//! by the body check in front of this layer) beyond that is refused with `429` before rmcp
//! creates anything, so no token can pile up sessions.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Json;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::{HeaderName, Method, StatusCode};

use super::principal::Principal;

/// The MCP session header (Streamable HTTP).
pub static MCP_SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");

/// Why a session was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SessionRefused {
    /// No binding for this id.
    #[error("session not bound")]
    Unknown,
    /// Bound to another client.
    #[error("session belongs to another client")]
    OtherClient {
        /// The client the session belongs to.
        owner: String,
    },
}

/// Request extension: this request is an `initialize`, which opens an MCP session.
#[derive(Debug, Clone, Copy)]
pub struct OpensSession;

#[derive(Debug)]
struct Binding {
    sub: Arc<str>,
    last_seen: Instant,
}

/// MCP session id → `sub`.
#[derive(Debug)]
pub struct SessionBindings {
    bindings: Mutex<HashMap<String, Binding>>,
    capacity: usize,
    idle_ttl: Duration,
    max_per_sub: usize,
}

impl SessionBindings {
    /// Default capacity: far above any realistic number of live sessions.
    pub const DEFAULT_CAPACITY: usize = 100_000;
    /// Default idle time before a binding is forgotten.
    pub const DEFAULT_IDLE_TTL: Duration = Duration::from_secs(3600);

    /// A table of at most `capacity` (at least 1) bindings, each forgotten after `idle_ttl`
    /// without use.
    pub fn new(capacity: usize, idle_ttl: Duration) -> Self {
        Self {
            bindings: Mutex::new(HashMap::new()),
            capacity: capacity.max(1),
            idle_ttl,
            max_per_sub: usize::MAX,
        }
    }

    /// At most `max` live sessions per client.
    pub fn with_max_per_sub(mut self, max: usize) -> Self {
        self.max_per_sub = max;
        self
    }

    /// Live (not idle-expired) sessions of `sub`.
    pub fn live_for(&self, sub: &str) -> usize {
        let now = Instant::now();
        self.lock()
            .values()
            .filter(|b| &*b.sub == sub && now.duration_since(b.last_seen) < self.idle_ttl)
            .count()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Binding>> {
        // A panic while holding this lock cannot leave the map inconsistent (every update is
        // a single insert/remove), so a poisoned lock is still usable.
        self.bindings.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Binds `session_id` to `sub` (replacing any earlier binding of that id).
    pub fn bind(&self, session_id: &str, sub: &str) {
        let now = Instant::now();
        let mut map = self.lock();
        if map.len() >= self.capacity && !map.contains_key(session_id) {
            map.retain(|_, b| now.duration_since(b.last_seen) < self.idle_ttl);
            if map.len() >= self.capacity
                && let Some(oldest) = map
                    .iter()
                    .min_by_key(|(_, b)| b.last_seen)
                    .map(|(id, _)| id.clone())
            {
                map.remove(&oldest);
            }
        }
        map.insert(
            session_id.to_owned(),
            Binding {
                sub: Arc::from(sub),
                last_seen: now,
            },
        );
    }

    /// Whether `sub` may use `session_id`; refreshes the binding when it may.
    pub fn check(&self, session_id: &str, sub: &str) -> Result<(), SessionRefused> {
        let now = Instant::now();
        let mut map = self.lock();
        let Some(binding) = map.get_mut(session_id) else {
            return Err(SessionRefused::Unknown);
        };
        if now.duration_since(binding.last_seen) >= self.idle_ttl {
            map.remove(session_id);
            return Err(SessionRefused::Unknown);
        }
        if &*binding.sub != sub {
            return Err(SessionRefused::OtherClient {
                owner: binding.sub.to_string(),
            });
        }
        binding.last_seen = now;
        Ok(())
    }

    /// Forgets a binding.
    pub fn unbind(&self, session_id: &str) {
        self.lock().remove(session_id);
    }

    /// Number of bindings held.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no binding is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Default for SessionBindings {
    fn default() -> Self {
        Self::new(Self::DEFAULT_CAPACITY, Self::DEFAULT_IDLE_TTL)
    }
}

fn too_many_sessions(max: usize) -> Response {
    (
        StatusCode::TOO_MANY_REQUESTS,
        Json(serde_json::json!({
            "error": "too_many_sessions",
            "message": format!(
                "this client already has {max} MCP sessions open (http.max_sessions_per_client); \
                 end one (DELETE) or reuse it"
            ),
        })),
    )
        .into_response()
}

fn session_not_found() -> Response {
    (
        StatusCode::NOT_FOUND,
        Json(serde_json::json!({
            "error": "session_not_found",
            "message": "unknown MCP session; start a new one with initialize",
        })),
    )
        .into_response()
}

/// axum middleware: `from_fn_with_state(Arc<SessionBindings>, bind_sessions)`, layered inside
/// (after) [`super::require_bearer`].
pub async fn bind_sessions(
    State(bindings): State<Arc<SessionBindings>>,
    req: Request,
    next: Next,
) -> Response {
    let Some(principal) = Principal::from_extensions(req.extensions()) else {
        tracing::error!(
            "session binding runs without an authenticated principal; check layer order"
        );
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    let sub = principal.sub.clone();
    let presented = match req.headers().get(&MCP_SESSION_ID) {
        None => None,
        Some(value) => match value.to_str() {
            Ok(id) => Some(id.to_owned()),
            Err(_) => return session_not_found(),
        },
    };
    if presented.is_none()
        && req.extensions().get::<OpensSession>().is_some()
        && bindings.live_for(&sub) >= bindings.max_per_sub
    {
        return too_many_sessions(bindings.max_per_sub);
    }
    if let Some(id) = &presented {
        match bindings.check(id, &sub) {
            Ok(()) => {}
            Err(SessionRefused::Unknown) => return session_not_found(),
            Err(SessionRefused::OtherClient { owner }) => {
                tracing::warn!(
                    mcp_session = %id,
                    owner = %owner,
                    presented_by = %sub,
                    "MCP session presented by another client; refused"
                );
                return session_not_found();
            }
        }
    }
    let is_delete = req.method() == Method::DELETE;
    let response = next.run(req).await;
    match &presented {
        None => {
            if let Some(id) = response
                .headers()
                .get(&MCP_SESSION_ID)
                .and_then(|v| v.to_str().ok())
            {
                bindings.bind(id, &sub);
            }
        }
        Some(id) => {
            let ended = is_delete && response.status().is_success();
            if ended || response.status() == StatusCode::NOT_FOUND {
                bindings.unbind(id);
            }
        }
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::Router;
    use axum::body::Body;
    use axum::routing::any;
    use std::sync::atomic::{AtomicU64, Ordering};
    use tower::ServiceExt;

    #[test]
    fn bind_check_unbind() {
        let b = SessionBindings::default();
        assert_eq!(b.check("s1", "alice"), Err(SessionRefused::Unknown));
        b.bind("s1", "alice");
        assert_eq!(b.check("s1", "alice"), Ok(()));
        assert_eq!(
            b.check("s1", "mallory"),
            Err(SessionRefused::OtherClient {
                owner: "alice".into()
            })
        );
        b.unbind("s1");
        assert_eq!(b.check("s1", "alice"), Err(SessionRefused::Unknown));
        assert!(b.is_empty());
    }

    #[test]
    fn idle_bindings_expire() {
        let b = SessionBindings::new(10, Duration::ZERO);
        b.bind("s1", "alice");
        assert_eq!(b.check("s1", "alice"), Err(SessionRefused::Unknown));
        assert!(b.is_empty());
    }

    #[test]
    fn capacity_evicts_the_least_recently_used() {
        let b = SessionBindings::new(2, Duration::from_secs(3600));
        b.bind("s1", "a");
        std::thread::sleep(Duration::from_millis(2));
        b.bind("s2", "b");
        std::thread::sleep(Duration::from_millis(2));
        assert_eq!(b.check("s1", "a"), Ok(()));
        b.bind("s3", "c");
        assert_eq!(b.len(), 2);
        assert_eq!(b.check("s2", "b"), Err(SessionRefused::Unknown));
        assert_eq!(b.check("s1", "a"), Ok(()));
        assert_eq!(b.check("s3", "c"), Ok(()));
    }

    /// A stand-in for the MCP service: `initialize` (no session header) creates a session,
    /// DELETE ends it, unknown ids get 404 like rmcp.
    fn app(bindings: Arc<SessionBindings>) -> Router {
        let counter = Arc::new(AtomicU64::new(0));
        let handler = move |req: Request| {
            let counter = Arc::clone(&counter);
            async move {
                match req.headers().get(&MCP_SESSION_ID) {
                    None => {
                        let id = format!("sess-{}", counter.fetch_add(1, Ordering::SeqCst));
                        ([(MCP_SESSION_ID.clone(), id)], "created").into_response()
                    }
                    Some(id) if id == "sess-gone" => StatusCode::NOT_FOUND.into_response(),
                    Some(_) if req.method() == Method::DELETE => {
                        StatusCode::ACCEPTED.into_response()
                    }
                    Some(_) => "served".into_response(),
                }
            }
        };
        Router::new()
            .route("/mcp", any(handler))
            .layer(axum::middleware::from_fn_with_state(
                bindings,
                bind_sessions,
            ))
    }

    /// Sends one request through the binding layer.
    async fn send(
        app: &Router,
        method: Method,
        sub: Option<&str>,
        session: Option<&str>,
    ) -> Response {
        app.clone()
            .oneshot(req(method, sub, session))
            .await
            .unwrap()
    }

    fn session_id(created: &Response) -> String {
        created.headers()[&MCP_SESSION_ID]
            .to_str()
            .unwrap()
            .to_owned()
    }

    fn req(method: Method, sub: Option<&str>, session: Option<&str>) -> Request {
        let mut r = Request::builder().method(method).uri("/mcp");
        if let Some(s) = session {
            r = r.header(&MCP_SESSION_ID, s);
        }
        let mut r = r.body(Body::empty()).unwrap();
        if let Some(sub) = sub {
            r.extensions_mut().insert(Principal::new(sub, ["mux:read"]));
        }
        r
    }

    #[tokio::test]
    async fn hijacked_session_is_refused_like_an_unknown_one() {
        let bindings = Arc::new(SessionBindings::default());
        let app = app(Arc::clone(&bindings));
        let created = send(&app, Method::POST, Some("alice"), None).await;
        let id = session_id(&created);
        assert_eq!(bindings.check(&id, "alice"), Ok(()));

        let own = send(&app, Method::POST, Some("alice"), Some(&id)).await;
        assert_eq!(own.status(), StatusCode::OK);

        let stolen = send(&app, Method::POST, Some("mallory"), Some(&id)).await;
        assert_eq!(stolen.status(), StatusCode::NOT_FOUND);
        let body = axum::body::to_bytes(stolen.into_body(), 1024)
            .await
            .unwrap();
        assert!(String::from_utf8_lossy(&body).contains("session_not_found"));
        // The victim's session still works.
        let own = send(&app, Method::POST, Some("alice"), Some(&id)).await;
        assert_eq!(own.status(), StatusCode::OK);

        let made_up = send(&app, Method::POST, Some("alice"), Some("sess-999")).await;
        assert_eq!(made_up.status(), StatusCode::NOT_FOUND);
    }

    #[tokio::test]
    async fn delete_and_downstream_404_forget_the_binding() {
        let bindings = Arc::new(SessionBindings::default());
        let app = app(Arc::clone(&bindings));
        let created = send(&app, Method::POST, Some("alice"), None).await;
        let id = session_id(&created);
        let deleted = send(&app, Method::DELETE, Some("alice"), Some(&id)).await;
        assert_eq!(deleted.status(), StatusCode::ACCEPTED);
        assert!(bindings.is_empty());

        bindings.bind("sess-gone", "alice");
        let gone = send(&app, Method::POST, Some("alice"), Some("sess-gone")).await;
        assert_eq!(gone.status(), StatusCode::NOT_FOUND);
        assert!(bindings.is_empty());
    }

    #[tokio::test]
    async fn missing_principal_fails_closed() {
        let app = app(Arc::new(SessionBindings::default()));
        let resp = app.oneshot(req(Method::POST, None, None)).await.unwrap();
        assert_eq!(resp.status(), StatusCode::INTERNAL_SERVER_ERROR);
    }
}
