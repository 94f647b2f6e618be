//! `/view`: the live view of one pane behind a signed, expiring link ([`crate::view`]).
//!
//! - `GET /view?t=TOKEN`: the page; `GET /view/app.js`, `GET /view/app.css`: its script and
//!   stylesheet (public, the same for everyone);
//! - `GET /view/events?t=TOKEN`: Server-Sent Events, `screen` (the whole screen as HTML, at
//!   most every [`COALESCE`]) and a last `end` (why the stream stopped: the pane closed, the
//!   link expired). Comments keep the connection open when the pane is quiet.
//!
//! The screen is a `vt100` emulator seeded with `capture-pane -e` and fed the gateway's own
//! output stream of the pane; a gap in that stream (tmux dropped output, or the viewer fell
//! behind) is repaired by seeding it again. There is no route that takes input.
//!
//! Behind the Host/Origin guard; the link is the only credential. Any token that is not a
//! valid, unexpired link is answered 403 with the same words, and a valid one for a pane that
//! is gone 404 (as is one made for a tmux server that has since restarted, or a workspace
//! that is not running): neither says more. At most `view.max_viewers` streams are open at
//! once (503 past that) and `view.max_viewers_per_link` on one link (429). The token is in the
//! query string, which request spans do not log.

use std::convert::Infallible;
use std::num::NonZeroU16;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use axum::Router;
use axum::extract::{Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::from_fn_with_state;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::Deserialize;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tower::ServiceBuilder;
use tower_http::trace::TraceLayer;

use super::guard::{self, Allowlist};
use crate::view::link::{self, ViewGrant, ViewKey};
use crate::view::viewers::{Full, ViewerSlot, Viewers};
use crate::view::{page, render};
use crate::workspace::{self, WorkspaceName, Workspaces};
use muxgate_mux::multiplexer::CaptureRange;
use muxgate_tmux::ops::pane_shape::PaneShape;
use muxgate_tmux::output::OutputChunk;
use muxgate_tmux::typed::pane_reads::TmuxPaneReads;
use muxgate_tmux::{Caller, OutputSubscription, PaneId, StreamEnd, TmuxEngine, TmuxServer};

/// At most one screen per this interval: a flood costs the viewer twenty renders a second.
pub(crate) const COALESCE: Duration = Duration::from_millis(50);
/// A comment this often keeps a quiet stream open through proxies.
const KEEP_ALIVE: Duration = Duration::from_secs(15);
/// How long opening the pane's output stream and reading its screen may take.
const OPEN_TIMEOUT: Duration = Duration::from_secs(10);
/// The engine caller the views' commands queue as: viewers share one fair share, so they
/// cannot crowd out the agents.
const VIEW_CALLER: &str = "muxgate-view";
/// Lines of scrollback the emulator keeps: none, the page shows the screen.
const SCROLLBACK: usize = 0;
/// How often, at most, a view with output to show asks tmux for the pane's size: a resize
/// shows with the next output after it, and a quiet pane costs tmux nothing.
const SHAPE_CHECK: Duration = Duration::from_secs(1);

/// The largest pane a view shows. The emulator holds a grid of every cell for each viewer,
/// and an agent can make its pane huge (`resize-window -x 10000 -y 10000`): a view of a
/// larger pane ends at once, saying why, instead of exhausting the gateway's memory.
const MAX_COLS: u16 = 500;
const MAX_ROWS: u16 = 300;

/// What the view routes reach.
#[derive(Clone)]
pub struct ViewApi {
    pub key: ViewKey,
    pub tmux: TmuxEngine,
    /// The workspaces, in workspace mode: a link to a workspace's pane is shown while its
    /// sandbox runs (a view never starts one).
    pub workspaces: Option<Workspaces>,
    /// Cancelled at shutdown: open streams end so connections can close.
    pub stop: CancellationToken,
    /// The open event streams (`view.max_viewers`, `view.max_viewers_per_link`).
    pub viewers: Viewers,
}

/// `/view…`, behind the Host/Origin guard.
pub(crate) fn routes(api: ViewApi, allowlist: Arc<Allowlist>) -> Router {
    Router::new()
        .route("/view", get(page_handler))
        .route("/view/events", get(events))
        .route("/view/app.js", get(script))
        .route("/view/app.css", get(stylesheet))
        .with_state(Arc::new(api))
        .layer(
            ServiceBuilder::new()
                .layer(TraceLayer::new_for_http().make_span_with(super::request_span))
                .layer(from_fn_with_state(allowlist, guard::enforce)),
        )
}

#[derive(Debug, Deserialize)]
pub(crate) struct LinkQuery {
    #[serde(default)]
    t: Option<String>,
}

async fn script() -> Response {
    asset(page::JS, "text/javascript; charset=utf-8")
}

async fn stylesheet() -> Response {
    asset(page::CSS, "text/css; charset=utf-8")
}

fn asset(body: &'static str, content_type: &'static str) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    page::security_headers(headers);
    response
}

/// `GET /view`.
async fn page_handler(State(api): State<Arc<ViewApi>>, Query(query): Query<LinkQuery>) -> Response {
    match api.admit(&query) {
        Ok(_) => asset(page::HTML, "text/html; charset=utf-8"),
        Err(refused) => refused.into_response(),
    }
}

/// `GET /view/events`.
async fn events(State(api): State<Arc<ViewApi>>, Query(query): Query<LinkQuery>) -> Response {
    let (grant, server, pane) = match api.admit(&query) {
        Ok(admitted) => admitted,
        Err(refused) => return refused.into_response(),
    };
    let slot = match api.viewers.admit(query.t.as_deref().unwrap_or_default()) {
        Ok(slot) => slot,
        Err(Full::Gateway) => return Refused::Busy.into_response(),
        Err(Full::Link) => return Refused::LinkBusy.into_response(),
    };
    let expires_at = Instant::now() + grant.remaining(SystemTime::now());
    let viewed = Viewed {
        server,
        server_pid: grant.server_pid,
        pane,
    };
    let feed = match Feed::open(viewed, expires_at, api.stop.clone(), slot).await {
        Ok(feed) => feed,
        Err(why) => {
            tracing::debug!(pane = %pane, reason = %why, "live view could not open the pane");
            return Refused::Gone.into_response();
        }
    };
    let stream = futures::stream::unfold(feed, |mut feed| async move {
        let event = feed.next_event().await?;
        Some((Ok::<_, Infallible>(event), feed))
    });
    let mut response = Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(KEEP_ALIVE))
        .into_response();
    page::security_headers(response.headers_mut());
    response
}

impl ViewApi {
    /// The link's grant and its server and pane, or why not.
    fn admit(&self, query: &LinkQuery) -> Result<(ViewGrant, TmuxServer, PaneId), Refused> {
        let token = query.t.as_deref().unwrap_or_default();
        let grant = link::verify(&self.key, token, SystemTime::now()).map_err(|why| {
            // Why, for the operator; never the token itself.
            tracing::debug!(reason = %why, "live view link refused");
            Refused::Invalid
        })?;
        let server = match &grant.workspace {
            Some(name) if grant.server == workspace::SERVER_NAME => {
                let name = WorkspaceName::parse(name).map_err(|_| Refused::Gone)?;
                self.workspaces
                    .as_ref()
                    .and_then(|workspaces| workspaces.running_server(&name))
            }
            Some(_) => None,
            None => self.tmux.server(&grant.server).cloned(),
        };
        // A restarted workspace is another server process, whose panes reuse the ids.
        let server = server
            .filter(|server| server.instance().epoch == grant.epoch)
            .ok_or(Refused::Gone)?;
        let pane = grant.pane_id().ok_or(Refused::Gone)?;
        Ok((grant, server, pane))
    }
}

/// The pane a stream shows: on which server, and which process of it the link was made for.
struct Viewed {
    server: TmuxServer,
    server_pid: u32,
    pane: PaneId,
}

/// Why a view request is refused; the answer says no more than this.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refused {
    /// Not a valid, unexpired link of this gateway (403).
    Invalid,
    /// A valid link to a server or pane that is not there (404).
    Gone,
    /// As many views are open as `view.max_viewers` allows (503).
    Busy,
    /// As many views of this link are open as `view.max_viewers_per_link` allows (429).
    LinkBusy,
}

impl IntoResponse for Refused {
    fn into_response(self) -> Response {
        let (status, message) = match self {
            Refused::Invalid => (
                StatusCode::FORBIDDEN,
                "this view link is invalid or has expired; ask for a new one",
            ),
            Refused::Gone => (
                StatusCode::NOT_FOUND,
                "there is nothing to show here any more",
            ),
            Refused::Busy => (
                StatusCode::SERVICE_UNAVAILABLE,
                "too many live views are open on this gateway; try again later",
            ),
            Refused::LinkBusy => (
                StatusCode::TOO_MANY_REQUESTS,
                "too many views of this link are open; close one or ask for another link",
            ),
        };
        let mut response = (status, message).into_response();
        page::security_headers(response.headers_mut());
        response
    }
}

/// One viewer's screen: the emulator, the pane's output stream feeding it, and when to stop.
struct Feed {
    server: TmuxServer,
    /// The tmux server process the link was made for.
    server_pid: u32,
    pane: PaneId,
    caller: Caller,
    output: OutputSubscription,
    screen: vt100::Parser,
    expires_at: Instant,
    stop: CancellationToken,
    /// The screen last sent, so an unchanged one is not sent again.
    sent: Option<String>,
    sent_at: Option<Instant>,
    /// When the pane's size was last read.
    shape_read: Instant,
    /// Why the stream ended, once it has, to send as the last event.
    end: Option<String>,
    done: bool,
    /// This view's place among the open streams, given back when the stream is dropped.
    _slot: ViewerSlot,
}

impl Feed {
    /// Subscribes to the pane's output, then reads its screen: output from the subscription on
    /// is what the emulator is fed after the screen, so none falls between. Bytes printed while
    /// the screen is read may be applied twice (they are in the capture and the stream); the
    /// pane's next redraw corrects what they drew.
    async fn open(
        viewed: Viewed,
        expires_at: Instant,
        stop: CancellationToken,
        slot: ViewerSlot,
    ) -> Result<Self, String> {
        let Viewed {
            server,
            server_pid,
            pane,
        } = viewed;
        let caller = Caller::new(VIEW_CALLER);
        let deadline = Instant::now() + OPEN_TIMEOUT;
        let output = server
            .subscribe(&caller, pane, deadline)
            .await
            .map_err(|e| e.to_string())?;
        let mut feed = Self {
            screen: vt100::Parser::new(NonZeroU16::MIN, NonZeroU16::MIN, SCROLLBACK),
            server,
            server_pid,
            pane,
            caller,
            output,
            expires_at,
            stop,
            sent: None,
            sent_at: None,
            shape_read: Instant::now(),
            end: None,
            done: false,
            _slot: slot,
        };
        feed.seed(deadline).await?;
        Ok(feed)
    }

    /// Sets the emulator to the pane's screen as tmux has it now, dropping the output read so
    /// far (the screen already shows it); a pane larger than [`MAX_COLS`] × [`MAX_ROWS`] ends
    /// the view instead.
    async fn seed(&mut self, deadline: Instant) -> Result<(), String> {
        let screen = self
            .reads()
            .screen_with_shape(self.pane, &SEED_RANGE, deadline)
            .await
            .map_err(|e| e.to_string())?
            .ok_or("tmux does not describe the pane")?;
        let shape = screen
            .shape
            .ok_or("tmux's description of the pane is unreadable")?;
        if shape.server_pid != self.server_pid {
            return Err("the tmux server restarted since the link was made".into());
        }
        if let Some(why) = too_large(&shape) {
            self.end = Some(why);
            return Ok(());
        }
        if let Err(end) = self.output.take() {
            self.end = Some(end.to_string());
        }
        self.screen = vt100::Parser::new(shape.rows, shape.cols, SCROLLBACK);
        self.screen.process(&seed_bytes(&shape, &screen.rows));
        self.shape_read = Instant::now();
        Ok(())
    }

    /// The pane reads of this view's server, as the view's caller.
    fn reads(&self) -> TmuxPaneReads {
        TmuxPaneReads::new(self.server.clone(), self.caller.clone())
    }

    /// Reads the screen again if the pane's size changed (at most every [`SHAPE_CHECK`]): the
    /// emulator cannot know of a resize from the output alone.
    async fn follow_resize(&mut self) {
        if self.shape_read.elapsed() < SHAPE_CHECK {
            return;
        }
        self.shape_read = Instant::now();
        let deadline = Instant::now() + OPEN_TIMEOUT;
        let Ok(Some(shape)) = self.reads().shape(self.pane).await else {
            return;
        };
        if self.screen.screen().size() != (shape.rows, shape.cols)
            && let Err(why) = self.seed(deadline).await
        {
            tracing::debug!(pane = %self.pane, reason = %why, "live view could not read the resized screen");
        }
    }

    /// The next event: a changed screen or the end; `None` once the end was sent or the
    /// gateway is shutting down.
    async fn next_event(&mut self) -> Option<Event> {
        if self.done {
            return None;
        }
        loop {
            if self.sent.is_none() {
                return Some(self.screen_event());
            }
            if let Some(why) = self.end.take() {
                self.done = true;
                return Some(Event::default().event("end").data(why));
            }
            let chunk = tokio::select! {
                biased;
                () = self.stop.cancelled() => return None,
                () = tokio::time::sleep_until(self.expires_at) => {
                    self.end = Some("the link has expired".into());
                    continue;
                }
                chunk = self.output.next() => chunk,
            };
            self.apply(chunk).await;
            // Coalesce: a screen went out less than COALESCE ago, so gather until then.
            if let Some(due) = self.sent_at.map(|at| at + COALESCE)
                && due > Instant::now()
            {
                tokio::select! {
                    biased;
                    () = self.stop.cancelled() => return None,
                    () = tokio::time::sleep_until(due) => {}
                }
                let more = self.output.take();
                self.apply(more).await;
            }
            self.follow_resize().await;
            let html = render::screen_html(self.screen.screen());
            if self.sent.as_deref() != Some(html.as_str()) {
                self.sent = Some(html);
                return Some(self.screen_event());
            }
        }
    }

    /// Feeds output to the emulator; after a gap, reads the screen again instead.
    async fn apply(&mut self, chunk: Result<OutputChunk, StreamEnd>) {
        match chunk {
            Ok(chunk) if chunk.gap || chunk.missed_bytes > 0 => {
                let deadline = Instant::now() + OPEN_TIMEOUT;
                if let Err(why) = self.seed(deadline).await {
                    tracing::debug!(pane = %self.pane, reason = %why, "live view could not read the screen again");
                    self.screen.process(&chunk.data);
                }
            }
            Ok(chunk) => self.screen.process(&chunk.data),
            Err(end) => self.end = Some(end.to_string()),
        }
    }

    fn screen_event(&mut self) -> Event {
        let html = match &self.sent {
            Some(html) => html.clone(),
            None => {
                let html = render::screen_html(self.screen.screen());
                self.sent = Some(html.clone());
                html
            }
        };
        self.sent_at = Some(Instant::now());
        Event::default().event("screen").data(html)
    }
}

/// Why the view does not show a pane of `shape`'s size, if it is larger than
/// [`MAX_COLS`] × [`MAX_ROWS`].
fn too_large(shape: &PaneShape) -> Option<String> {
    let (cols, rows) = (shape.cols.get(), shape.rows.get());
    (cols > MAX_COLS || rows > MAX_ROWS).then(|| {
        format!(
            "the pane is {cols}x{rows}; the live view shows panes of at most \
             {MAX_COLS}x{MAX_ROWS} (resize it and open the link again)"
        )
    })
}

/// What seeds the emulator: the pane's visible screen with colours and attributes as escapes.
const SEED_RANGE: CaptureRange = CaptureRange {
    start: None,
    end: None,
    join_wrapped: false,
    escape_sequences: true,
};

/// What to feed a fresh emulator so that it shows `rows` (as `capture-pane -e` printed them)
/// with the cursor where tmux has it.
fn seed_bytes(shape: &PaneShape, rows: &[Vec<u8>]) -> Vec<u8> {
    let mut bytes = Vec::new();
    for (i, row) in rows.iter().take(usize::from(shape.rows.get())).enumerate() {
        // Each row from its own line's first column, attributes reset: a row that fills the
        // width must not wrap into the next.
        bytes.extend_from_slice(format!("\x1b[0m\x1b[{};1H", i + 1).as_bytes());
        bytes.extend_from_slice(row);
    }
    bytes.extend_from_slice(
        format!(
            "\x1b[0m\x1b[{};{}H\x1b[?25{}",
            u32::from(shape.cursor_y) + 1,
            u32::from(shape.cursor_x) + 1,
            if shape.cursor_visible { 'h' } else { 'l' }
        )
        .as_bytes(),
    );
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pane_larger_than_the_bound_is_not_shown() {
        let fits = PaneShape::parse(b"77 500 300 0 0 1").unwrap();
        assert_eq!(too_large(&fits), None);
        for huge in [
            &b"77 501 24 0 0 1"[..],
            b"77 80 301 0 0 1",
            b"77 10000 10000 0 0 1",
        ] {
            let shape = PaneShape::parse(huge).unwrap();
            let why = too_large(&shape).unwrap();
            assert!(why.contains("at most 500x300"), "{why}");
        }
    }

    #[test]
    fn a_seeded_screen_shows_the_rows_and_the_cursor() {
        let shape = PaneShape::parse(b"77 10 3 2 1 1").unwrap();
        let rows = [
            b"\x1b[31mred\x1b[39m".to_vec(),
            b"ab".to_vec(),
            b"0123456789".to_vec(),
        ];
        let mut parser = vt100::Parser::new(shape.rows, shape.cols, 0);
        parser.process(&seed_bytes(&shape, &rows));
        let screen = parser.screen();
        assert_eq!(screen.contents(), "red\nab\n0123456789");
        assert_eq!(screen.cursor_position(), (1, 2));
        assert_eq!(
            screen.cell(0, 0).map(vt100::Cell::fgcolor),
            Some(vt100::Color::Idx(1))
        );
        assert!(!screen.hide_cursor());
    }
}
