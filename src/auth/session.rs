//! Binding MCP sessions to the client that opened them, and recycling a client's idle ones.
//!
//! rmcp serves any request that presents a valid `Mcp-Session-Id`, whoever sends it. This
//! module remembers which `sub` each session was created for and refuses it to anyone else.
//! [`bind_sessions`] runs after [`super::require_bearer`]:
//! - a request without the header passes; if the response creates a session (it carries
//!   `Mcp-Session-Id`), the session is bound to the caller;
//! - a request with the header passes only if the session is bound to the caller. A session
//!   bound to someone else, or not bound at all (never issued here, ended, or evicted), is
//!   answered `404 session_not_found`, exactly like an unknown session, so ids cannot be probed
//!   and a client whose session was evicted starts a new one, as the spec asks. A foreign
//!   session is logged at `warn` with both subs (never a token);
//! - a successful `DELETE`, or a 404 from downstream, forgets the binding.
//!
//! **Busy and idle.** A session is *busy* while at least one HTTP request naming it is being
//! answered: from the moment this layer admits the request until its response body has been
//! sent in full, or dropped because the client went away. A tool call in flight keeps the SSE
//! stream of its `POST` open until its answer, and a `GET` stream stays open for as long as the
//! client listens on it, so both keep their session busy. Otherwise the session is *idle*; its
//! idle time runs from the end of its last request (or from its creation).
//!
//! **Recycling.** One client may hold at most `max_per_sub` sessions. An `initialize` (marked
//! [`OpensSession`] by the body check in front of this layer) that would pass that number
//! evicts the client's own least recently used idle sessions to make room; only when every
//! session of the client is busy is it refused, `429 too_many_sessions` with `Retry-After`,
//! before rmcp creates anything. A session idle for `idle_ttl` is evicted too
//! ([`SessionBindings::evict_idle`], run periodically, and at once when a request presents it).
//! Evicting forgets the binding first (from then on the id is answered 404) and then closes the
//! session in rmcp ([`CloseSessions`]), which frees it; being idle, it has no request to cancel
//! and no stream to end. A busy session is never evicted, and one client's `initialize` never
//! evicts another client's session. Each eviction is logged (`info`, the session id and the
//! client's sub) and counted ([`EvictionHook`]).
//!
//! The table as a whole holds at most `capacity` sessions, a bound far above any realistic
//! number of clients times their cap: only there does an `initialize` evict the least recently
//! used idle session of any client (refused, like above, when none is idle).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::Json;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::future::BoxFuture;
use http::header::RETRY_AFTER;
use http::{HeaderName, Method, StatusCode};

use super::principal::Principal;
use crate::http::held_body::HeldBody;

/// The MCP session header (Streamable HTTP).
pub(crate) static MCP_SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");

/// What a client refused for having only busy sessions is told to wait: a busy session frees
/// up when its request ends, which no one can predict (a wait may take minutes).
pub(crate) const BUSY_RETRY_AFTER: Duration = Duration::from_secs(5);

/// How long closing one evicted session in rmcp may take; an idle session's worker answers at
/// once, so this only bounds a stuck one.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(5);

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
    /// Idle past the idle time: evicted now, to be closed by the caller.
    #[error("session idle too long")]
    Expired,
}

/// Request extension: this request is an `initialize`, which opens an MCP session.
#[derive(Debug, Clone, Copy)]
pub struct OpensSession;

/// Why a session was evicted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Eviction {
    /// Room for a new session of the same client (or, at the table's capacity, of any).
    Cap,
    /// Idle for the idle time.
    Idle,
}

impl Eviction {
    /// Every reason, for metrics that list each.
    pub const ALL: [Eviction; 2] = [Eviction::Cap, Eviction::Idle];

    /// The metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            Eviction::Cap => "cap",
            Eviction::Idle => "idle",
        }
    }
}

/// Called once per evicted session (the metrics count them).
pub type EvictionHook = Arc<dyn Fn(Eviction) + Send + Sync>;

/// Ends MCP sessions where they live (rmcp's session manager); see `crate::http::sessions`.
pub trait CloseSessions: Send + Sync {
    /// Closes session `id`, freeing it and ending its streams; an unknown id is no error.
    fn close(&self, id: String) -> BoxFuture<'static, ()>;
}

/// Sessions taken out of the table, each with its client, to be closed.
pub(crate) type Evicted = Vec<(String, Arc<str>)>;

/// Every session of a client is busy: no room for another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllBusy;

#[derive(Debug)]
struct Binding {
    sub: Arc<str>,
    last_used: Instant,
    /// Requests naming the session whose answers are still being sent.
    in_flight: usize,
}

impl Binding {
    fn idle_for(&self, now: Instant) -> Option<Duration> {
        (self.in_flight == 0).then(|| now.saturating_duration_since(self.last_used))
    }
}

#[derive(Debug, Default)]
struct Table {
    sessions: HashMap<String, Binding>,
    /// Admitted `initialize` requests whose session is not bound yet, by client: they hold a
    /// place, so that concurrent ones cannot pass the cap together.
    opening: HashMap<Arc<str>, usize>,
}

impl Table {
    fn held_by(&self, sub: &str) -> usize {
        let bound = self.sessions.values().filter(|b| &*b.sub == sub).count();
        bound + self.opening.get(sub).copied().unwrap_or(0)
    }

    fn held(&self) -> usize {
        self.sessions.len() + self.opening.values().sum::<usize>()
    }

    /// The idle sessions (of `sub`, when given), least recently used first.
    fn idle_by_age(&self, sub: Option<&str>) -> Vec<&str> {
        let mut idle: Vec<(&String, &Binding)> = self
            .sessions
            .iter()
            .filter(|(_, b)| b.in_flight == 0 && sub.is_none_or(|s| &*b.sub == s))
            .collect();
        idle.sort_by_key(|(_, b)| b.last_used);
        idle.into_iter().map(|(id, _)| id.as_str()).collect()
    }
}

/// MCP session id → `sub`, with each session's use; see the module docs.
pub struct SessionBindings {
    table: Mutex<Table>,
    capacity: usize,
    idle_ttl: Duration,
    max_per_sub: usize,
    closer: Option<Arc<dyn CloseSessions>>,
    on_evict: Option<EvictionHook>,
}

impl std::fmt::Debug for SessionBindings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionBindings")
            .field("capacity", &self.capacity)
            .field("idle_ttl", &self.idle_ttl)
            .field("max_per_sub", &self.max_per_sub)
            .finish_non_exhaustive()
    }
}

impl SessionBindings {
    /// Default capacity: far above any realistic number of live sessions.
    pub const DEFAULT_CAPACITY: usize = 100_000;
    /// Default idle time before a session is evicted (`http.session_idle_secs`).
    pub const DEFAULT_IDLE_TTL: Duration = Duration::from_secs(1800);

    /// A table of at most `capacity` (at least 1) sessions, each evicted after `idle_ttl`
    /// idle. Without [`Self::with_recycling`] an evicted session is only forgotten.
    pub fn new(capacity: usize, idle_ttl: Duration) -> Self {
        Self {
            table: Mutex::new(Table::default()),
            capacity: capacity.max(1),
            idle_ttl,
            max_per_sub: usize::MAX,
            closer: None,
            on_evict: None,
        }
    }

    /// At most `max` (at least 1) sessions per client.
    pub fn with_max_per_sub(mut self, max: usize) -> Self {
        self.max_per_sub = max.max(1);
        self
    }

    /// Evicted sessions are closed with `closer` and reported to `hook`.
    pub fn with_recycling(mut self, closer: Arc<dyn CloseSessions>, hook: EvictionHook) -> Self {
        self.closer = Some(closer);
        self.on_evict = Some(hook);
        self
    }

    /// How often [`Self::evict_idle`] should run: a session outlives its idle time by at most
    /// a quarter of it, or a minute.
    pub fn sweep_period(&self) -> Duration {
        (self.idle_ttl / 4).clamp(Duration::from_millis(10), Duration::from_secs(60))
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        // A panic while holding this lock cannot leave the table inconsistent (every update is
        // a single insert, remove or counter step), so a poisoned lock is still usable.
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Makes room for a new session of `sub`: evicts (removes and returns, with their subs)
    /// its least recently used idle sessions while it holds `max_per_sub`, and at the table's
    /// capacity the least recently used idle sessions of anyone. Evicts nothing when there is
    /// not enough idle to make room. The returned [`Opening`] holds the new session's place
    /// until it is bound or dropped.
    pub fn admit(self: &Arc<Self>, sub: &str) -> Result<(Opening, Evicted), AllBusy> {
        let mut table = self.lock();
        let over_cap = (table.held_by(sub) + 1).saturating_sub(self.max_per_sub);
        let mut victims: Vec<String> = Vec::new();
        if over_cap > 0 {
            let idle = table.idle_by_age(Some(sub));
            victims.extend(idle.into_iter().take(over_cap).map(str::to_owned));
            if victims.len() < over_cap {
                return Err(AllBusy);
            }
        }
        let over_capacity = (table.held() + 1 - victims.len()).saturating_sub(self.capacity);
        if over_capacity > 0 {
            let more: Vec<String> = table
                .idle_by_age(None)
                .into_iter()
                .filter(|id| !victims.iter().any(|v| v == id))
                .take(over_capacity)
                .map(str::to_owned)
                .collect();
            if more.len() < over_capacity {
                return Err(AllBusy);
            }
            victims.extend(more);
        }
        let evicted = victims
            .into_iter()
            .filter_map(|id| table.sessions.remove(&id).map(|b| (id, b.sub)))
            .collect();
        let sub: Arc<str> = Arc::from(sub);
        *table.opening.entry(Arc::clone(&sub)).or_insert(0) += 1;
        let opening = Opening {
            bindings: Arc::clone(self),
            sub,
        };
        Ok((opening, evicted))
    }

    /// Binds `session_id` to `sub` (replacing any earlier binding of that id), idle from now.
    pub fn bind(&self, session_id: &str, sub: &str) {
        self.lock().sessions.insert(
            session_id.to_owned(),
            Binding {
                sub: Arc::from(sub),
                last_used: Instant::now(),
                in_flight: 0,
            },
        );
    }

    /// Whether `sub` may use `session_id`; when it may, the session is busy until the returned
    /// [`InUse`] is dropped. A session found idle past the idle time is evicted here
    /// ([`SessionRefused::Expired`]; the caller closes it).
    pub fn begin(self: &Arc<Self>, session_id: &str, sub: &str) -> Result<InUse, SessionRefused> {
        let now = Instant::now();
        let mut table = self.lock();
        let Some(binding) = table.sessions.get_mut(session_id) else {
            return Err(SessionRefused::Unknown);
        };
        if &*binding.sub != sub {
            return Err(SessionRefused::OtherClient {
                owner: binding.sub.to_string(),
            });
        }
        if binding
            .idle_for(now)
            .is_some_and(|idle| idle >= self.idle_ttl)
        {
            table.sessions.remove(session_id);
            return Err(SessionRefused::Expired);
        }
        binding.in_flight += 1;
        binding.last_used = now;
        Ok(InUse {
            bindings: Arc::clone(self),
            session_id: session_id.to_owned(),
        })
    }

    /// Whether `sub` may use `session_id` (without using it).
    pub fn check(&self, session_id: &str, sub: &str) -> Result<(), SessionRefused> {
        match self.lock().sessions.get(session_id) {
            None => Err(SessionRefused::Unknown),
            Some(b) if &*b.sub != sub => Err(SessionRefused::OtherClient {
                owner: b.sub.to_string(),
            }),
            Some(_) => Ok(()),
        }
    }

    /// Forgets a binding.
    pub fn unbind(&self, session_id: &str) {
        self.lock().sessions.remove(session_id);
    }

    /// Whether `session_id` is bound to anyone.
    pub fn is_bound(&self, session_id: &str) -> bool {
        self.lock().sessions.contains_key(session_id)
    }

    /// Sessions held now, bound or being opened.
    pub fn len(&self) -> usize {
        self.lock().held()
    }

    /// Whether no session is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Evicts every session idle for the idle time, and closes them.
    pub async fn evict_idle(&self) {
        let now = Instant::now();
        let mut expired = Vec::new();
        self.lock().sessions.retain(|id, b| {
            let keep = b.idle_for(now).is_none_or(|idle| idle < self.idle_ttl);
            if !keep {
                expired.push((id.clone(), b.sub.clone()));
            }
            keep
        });
        self.close_evicted(expired, Eviction::Idle).await;
    }

    /// Logs, counts and closes sessions already taken out of the table.
    pub async fn close_evicted(&self, evicted: Evicted, why: Eviction) {
        for (id, sub) in evicted {
            tracing::info!(
                mcp_session = %id,
                client = %sub,
                reason = why.as_str(),
                "idle MCP session evicted"
            );
            if let Some(hook) = &self.on_evict {
                hook(why);
            }
            if let Some(closer) = &self.closer
                && tokio::time::timeout(CLOSE_TIMEOUT, closer.close(id.clone()))
                    .await
                    .is_err()
            {
                tracing::warn!(mcp_session = %id, "closing an evicted MCP session timed out");
            }
        }
    }
}

impl Default for SessionBindings {
    fn default() -> Self {
        Self::new(Self::DEFAULT_CAPACITY, Self::DEFAULT_IDLE_TTL)
    }
}

/// The place of a session being opened ([`SessionBindings::admit`]), given back on drop.
pub struct Opening {
    bindings: Arc<SessionBindings>,
    sub: Arc<str>,
}

impl Drop for Opening {
    fn drop(&mut self) {
        let mut table = self.bindings.lock();
        if let Some(count) = table.opening.get_mut(&self.sub) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                table.opening.remove(&self.sub);
            }
        }
    }
}

/// A request being answered in a session ([`SessionBindings::begin`]): the session is busy
/// until this is dropped, and its idle time starts then.
pub struct InUse {
    bindings: Arc<SessionBindings>,
    session_id: String,
}

impl Drop for InUse {
    fn drop(&mut self) {
        if let Some(binding) = self.bindings.lock().sessions.get_mut(&self.session_id) {
            binding.in_flight = binding.in_flight.saturating_sub(1);
            binding.last_used = Instant::now();
        }
    }
}

fn too_many_sessions(max: usize) -> Response {
    (
        StatusCode::TOO_MANY_REQUESTS,
        [(RETRY_AFTER, BUSY_RETRY_AFTER.as_secs().to_string())],
        Json(serde_json::json!({
            "error": "too_many_sessions",
            "message": format!(
                "all {max} MCP sessions of this client are busy (a request in flight or a \
                 stream open; http.max_sessions_per_client); retry after Retry-After seconds, \
                 or end one (DELETE)"
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
    match req.headers().get(&MCP_SESSION_ID).map(|v| v.to_str()) {
        None => open_session(&bindings, &sub, req, next).await,
        Some(Ok(id)) => {
            let id = id.to_owned();
            in_session(&bindings, &id, &sub, req, next).await
        }
        Some(Err(_)) => session_not_found(),
    }
}

/// A request without a session: an `initialize` is admitted (evicting idle sessions of the
/// caller if need be) or refused; the session a response creates is bound to the caller.
async fn open_session(
    bindings: &Arc<SessionBindings>,
    sub: &str,
    req: Request,
    next: Next,
) -> Response {
    let opening = if req.extensions().get::<OpensSession>().is_some() {
        match bindings.admit(sub) {
            Ok((opening, evicted)) => {
                bindings.close_evicted(evicted, Eviction::Cap).await;
                Some(opening)
            }
            Err(AllBusy) => return too_many_sessions(bindings.max_per_sub),
        }
    } else {
        None
    };
    let response = next.run(req).await;
    if let Some(id) = response
        .headers()
        .get(&MCP_SESSION_ID)
        .and_then(|v| v.to_str().ok())
    {
        bindings.bind(id, sub);
    }
    // Given back only now that the session (if any) counts as bound.
    drop(opening);
    response
}

/// A request naming session `id`: served only for the session's own client, which is busy
/// until the answer has been sent.
async fn in_session(
    bindings: &Arc<SessionBindings>,
    id: &str,
    sub: &str,
    req: Request,
    next: Next,
) -> Response {
    let in_use = match bindings.begin(id, sub) {
        Ok(in_use) => in_use,
        Err(SessionRefused::Unknown) => return session_not_found(),
        Err(SessionRefused::Expired) => {
            let evicted = vec![(id.to_owned(), Arc::from(sub))];
            bindings.close_evicted(evicted, Eviction::Idle).await;
            return session_not_found();
        }
        Err(SessionRefused::OtherClient { owner }) => {
            tracing::warn!(
                mcp_session = %id,
                owner = %owner,
                presented_by = %sub,
                "MCP session presented by another client; refused"
            );
            return session_not_found();
        }
    };
    let is_delete = req.method() == Method::DELETE;
    let response = next.run(req).await;
    let ended = is_delete && response.status().is_success();
    if ended || response.status() == StatusCode::NOT_FOUND {
        bindings.unbind(id);
    }
    // The session stays busy until its answer has been sent in full or dropped.
    HeldBody::wrap(response, in_use)
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

    fn ids(evicted: &[(String, Arc<str>)]) -> Vec<&str> {
        evicted.iter().map(|(id, _)| id.as_str()).collect()
    }

    #[tokio::test]
    async fn idle_sessions_expire_but_busy_ones_do_not() {
        let b = Arc::new(SessionBindings::new(10, Duration::ZERO));
        b.bind("s1", "alice");
        assert_eq!(b.begin("s1", "alice").err(), Some(SessionRefused::Expired));
        assert!(b.is_empty());

        let b = Arc::new(SessionBindings::new(10, Duration::from_millis(1)));
        b.bind("busy", "alice");
        b.bind("idle", "alice");
        let in_use = b.begin("busy", "alice").unwrap();
        std::thread::sleep(Duration::from_millis(5));
        b.evict_idle().await;
        assert!(b.is_bound("busy") && !b.is_bound("idle"));
        drop(in_use);
        // Idle from the end of its last request, not from its start.
        assert!(b.is_bound("busy"));
    }

    #[test]
    fn the_cap_evicts_the_clients_least_recently_used_idle_session() {
        let b = Arc::new(SessionBindings::new(100, Duration::from_secs(3600)).with_max_per_sub(2));
        b.bind("a1", "alice");
        std::thread::sleep(Duration::from_millis(2));
        b.bind("a2", "alice");
        b.bind("b1", "bob");
        std::thread::sleep(Duration::from_millis(2));
        drop(b.begin("a1", "alice").unwrap());
        let (opening, evicted) = b.admit("alice").unwrap();
        assert_eq!(ids(&evicted), ["a2"], "a1 was used since");
        // The place is held until bound: another initialize must evict again.
        let (_second, evicted) = b.admit("alice").unwrap();
        assert_eq!(ids(&evicted), ["a1"]);
        b.bind("a3", "alice");
        drop(opening);
        assert!(
            b.is_bound("b1"),
            "another client's session is never evicted"
        );
    }

    #[test]
    fn when_every_session_is_busy_nothing_is_evicted() {
        let b = Arc::new(SessionBindings::new(100, Duration::from_secs(3600)).with_max_per_sub(2));
        b.bind("a1", "alice");
        b.bind("a2", "alice");
        b.bind("b1", "bob");
        let _busy = (
            b.begin("a1", "alice").unwrap(),
            b.begin("a2", "alice").unwrap(),
        );
        assert!(matches!(b.admit("alice"), Err(AllBusy)));
        assert!(b.is_bound("a1") && b.is_bound("a2") && b.is_bound("b1"));
        assert!(b.admit("bob").is_ok());
    }

    #[test]
    fn at_capacity_the_least_recently_used_idle_session_of_anyone_goes() {
        let b = Arc::new(SessionBindings::new(2, Duration::from_secs(3600)));
        b.bind("s1", "a");
        std::thread::sleep(Duration::from_millis(2));
        b.bind("s2", "b");
        std::thread::sleep(Duration::from_millis(2));
        drop(b.begin("s1", "a").unwrap());
        let (_opening, evicted) = b.admit("c").unwrap();
        assert_eq!(ids(&evicted), ["s2"]);
        let _busy = b.begin("s1", "a").unwrap();
        assert!(matches!(b.admit("c"), Err(AllBusy)), "s1 is busy");
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
