//! MCP resources: the `tmux://` hierarchy, read with the same access rules as the tools.
//!
//! | URI | Content |
//! |---|---|
//! | `tmux://{server}/sessions` | the sessions you may see (JSON, as list_sessions) |
//! | `tmux://{server}/sessions/{session}` | one session and its windows (JSON) |
//! | `tmux://{server}/sessions/{session}/windows` | its windows (JSON) |
//! | `tmux://{server}/sessions/{session}/windows/{index}` | one window and its panes (JSON) |
//! | `tmux://{server}/panes/{pane_id}` | one pane's metadata (JSON) |
//! | `tmux://{server}/panes/{pane_id}/content` | its visible text (text/plain, tail kept) |
//!
//! `{server}` is a configured server name, `{session}` a session name or id (`$N`),
//! `{pane_id}` a pane id (`%N`, percent-encoded as `%25N` in a URI; the raw form is accepted
//! too). Reading needs the read-only tier and counts against the tool-call rate; objects the
//! caller may not see are "not found" (-32002), exactly like missing ones. `resources/list`
//! returns, per visible server, its session list, each visible session and each visible pane's
//! content; the templates cover the rest. The skill (`skill://muxgate/SKILL.md`, see
//! [`super::skill`]) is read here too, and listed first for clients that did not negotiate the
//! Skills extension.
//!
//! Not here: what the objects are (the session and window tools own their row formats, reused
//! here).

use rmcp::ErrorData;
use rmcp::model::{
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceResult, Resource,
    ResourceContents, ResourceTemplate,
};
use serde::Serialize;
use serde_json::json;

use super::McpServer;
use super::access::{PANES_HINT, TmuxAccess};
use super::call::{self, CallContext, Refusal};
use super::error::{ToolError, ToolErrorKind};
use super::pane_ops::{PaneInfo, PaneScope, pane_info, pane_rows, visible_rows};
use super::skill;
use super::tools::agent_fleet::agents_of;
use super::tools::session::{SessionDetail, SessionInfo, find_session, list_session_rows};
use super::tools::window::list_window_rows;
use crate::audit::{CallStart, Outcome};
use crate::auth::Tier;
use muxgate_mux::multiplexer::CaptureRange;
use muxgate_tmux::PaneId;
use muxgate_tmux::typed::windows::Window;
use muxgate_tmux::wire::target::{SessionSel, Target};

/// The URI scheme.
pub(crate) const SCHEME: &str = "tmux://";

/// The fleet resource's URI for `server` (`tmux://{server}/agents`).
pub(crate) fn agents_uri(server: &str) -> String {
    format!("{SCHEME}{}/agents", percent_encode(server))
}

/// A fleet resource a subscription follows: its URI as the subscriber wrote it (what its
/// updates name) and as [`agents_uri`] writes it (what changes are matched with).
#[derive(Debug, Clone)]
pub(crate) struct Followed {
    pub(crate) asked: String,
    pub(crate) uri: String,
}

/// Lines of pane content kept (the tail), like capture tools' default.
pub(crate) const CONTENT_MAX_LINES: usize = 500;

/// Resources per `resources/list` page.
const PAGE_SIZE: usize = 200;

/// A parsed resource URI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ResourceUri {
    Sessions {
        server: String,
    },
    Session {
        server: String,
        session: SessionSel,
    },
    Windows {
        server: String,
        session: SessionSel,
    },
    Window {
        server: String,
        session: SessionSel,
        index: u32,
    },
    Pane {
        server: String,
        pane: PaneId,
    },
    PaneContent {
        server: String,
        pane: PaneId,
    },
    /// The agents spawn_agent started there ([`super::fleet_feed`]).
    Agents {
        server: String,
    },
}

/// Why a URI is not one of ours.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{0}; resource URIs look like tmux://<server>/sessions[/<session>[/windows[/<index>]]], tmux://<server>/panes/<pane id>[/content] or tmux://<server>/agents"
)]
pub(crate) struct UriError(String);

impl ResourceUri {
    /// Parses a `tmux://` URI (pure).
    pub(crate) fn parse(uri: &str) -> Result<Self, UriError> {
        let rest = uri
            .strip_prefix(SCHEME)
            .ok_or_else(|| UriError("not a tmux:// URI".into()))?;
        let segments: Vec<&str> = rest.split('/').collect();
        let server = match segments.first() {
            Some(s) if !s.is_empty() => percent_decode(s).unwrap_or_else(|| (*s).to_owned()),
            _ => return Err(UriError("the URI names no server".into())),
        };
        let session = |segment: &str| match segment_target(segment) {
            Some(Target::Session(session)) => Ok(session),
            _ => Err(UriError(format!(
                "{:?} is not a session name or id",
                short(segment)
            ))),
        };
        let pane = |segment: &str| match segment_target(segment) {
            Some(Target::Pane(pane)) => Ok(pane),
            _ => Err(UriError(format!("{:?} is not a pane id", short(segment)))),
        };
        match segments[1..] {
            ["sessions"] => Ok(Self::Sessions { server }),
            ["sessions", s] => Ok(Self::Session {
                server,
                session: session(s)?,
            }),
            ["sessions", s, "windows"] => Ok(Self::Windows {
                server,
                session: session(s)?,
            }),
            ["sessions", s, "windows", index] => Ok(Self::Window {
                server,
                session: session(s)?,
                index: index
                    .parse()
                    .map_err(|_| UriError(format!("{:?} is not a window index", short(index))))?,
            }),
            ["panes", p] => Ok(Self::Pane {
                server,
                pane: pane(p)?,
            }),
            ["panes", p, "content"] => Ok(Self::PaneContent {
                server,
                pane: pane(p)?,
            }),
            ["agents"] => Ok(Self::Agents { server }),
            _ => Err(UriError("unknown resource path".into())),
        }
    }

    pub(crate) fn server(&self) -> &str {
        match self {
            Self::Sessions { server }
            | Self::Session { server, .. }
            | Self::Windows { server, .. }
            | Self::Window { server, .. }
            | Self::Pane { server, .. }
            | Self::PaneContent { server, .. }
            | Self::Agents { server } => server,
        }
    }
}

/// A path segment as a target: percent-decoded, or raw when only the raw form is a target
/// (`%12` is both a pane id and the percent-encoding of a control byte).
fn segment_target(segment: &str) -> Option<Target> {
    percent_decode(segment)
        .and_then(|decoded| Target::parse(&decoded).ok())
        .or_else(|| Target::parse(segment).ok())
}

/// Decodes `%XX` escapes; `None` when an escape is malformed or the result is not UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Encodes a path segment (ids contain `%` and `$`; names are already URI-safe otherwise).
fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~$".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn short(text: &str) -> String {
    text.chars().take(64).collect()
}

fn session_uri(server: &str, name: &str) -> String {
    format!(
        "{SCHEME}{}/sessions/{}",
        percent_encode(server),
        percent_encode(name)
    )
}

fn pane_uri(server: &str, pane: &str) -> String {
    format!(
        "{SCHEME}{}/panes/{}",
        percent_encode(server),
        percent_encode(pane)
    )
}

/// The resource templates (static).
pub(crate) fn templates() -> Vec<ResourceTemplate> {
    let json = "application/json";
    vec![
        ResourceTemplate::new("tmux://{server}/sessions", "sessions")
            .with_title("Sessions of a tmux server")
            .with_description("The sessions you may see on a configured server (as list_sessions).")
            .with_mime_type(json),
        ResourceTemplate::new("tmux://{server}/sessions/{session}", "session")
            .with_title("A tmux session")
            .with_description("One session (by name or $N id) and its windows.")
            .with_mime_type(json),
        ResourceTemplate::new(
            "tmux://{server}/sessions/{session}/windows",
            "session-windows",
        )
        .with_title("Windows of a tmux session")
        .with_description("The windows of one session (as list_windows).")
        .with_mime_type(json),
        ResourceTemplate::new(
            "tmux://{server}/sessions/{session}/windows/{index}",
            "window",
        )
        .with_title("A tmux window")
        .with_description("The window at an index of a session, and its panes.")
        .with_mime_type(json),
        ResourceTemplate::new("tmux://{server}/panes/{pane_id}", "pane")
            .with_title("A tmux pane")
            .with_description("One pane's metadata; pane_id is %N (percent-encoded %25N).")
            .with_mime_type(json),
        ResourceTemplate::new("tmux://{server}/panes/{pane_id}/content", "pane-content")
            .with_title("Text of a tmux pane")
            .with_description(format!(
                "The visible text of a pane, at most the last {CONTENT_MAX_LINES} lines."
            ))
            .with_mime_type("text/plain"),
        ResourceTemplate::new("tmux://{server}/agents", "agents")
            .with_title("Agents on a tmux server")
            .with_description(
                "The agents spawn_agent started that you may see (as list_agents); \
                 subscribe to be told when one changes state.",
            )
            .with_mime_type(json),
    ]
}

/// One pane, as the pane resources show it.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct PaneSummary {
    /// Pane id (`%N`).
    pub id: String,
    /// Its index in the window.
    pub index: u32,
    pub window_id: String,
    pub session_id: String,
    pub session_name: String,
    /// Whether it is its window's active pane.
    pub active: bool,
    pub width: u32,
    pub height: u32,
    /// Process id of the program tmux started in it.
    pub pid: u32,
    /// Whether that program has exited (the pane stays with remain-on-exit).
    pub dead: bool,
    pub current_command: String,
    pub current_path: String,
    pub title: String,
}

impl From<PaneInfo> for PaneSummary {
    fn from(info: PaneInfo) -> Self {
        Self {
            id: info.record.pane.to_string(),
            index: info.record.index,
            window_id: info.record.window_id,
            session_id: info.record.session_id,
            session_name: info.record.session_name,
            active: info.record.active,
            width: info.record.width,
            height: info.record.height,
            pid: info.record.pid,
            dead: info.record.dead,
            current_command: info.record.current_command,
            current_path: info.record.current_path,
            title: info.record.title,
        }
    }
}

/// Keeps the last `max` lines, with a marker line saying how many were dropped.
pub(crate) fn keep_tail(lines: &[String], max: usize) -> (String, usize) {
    if lines.len() <= max {
        return (lines.join("\n"), 0);
    }
    let dropped = lines.len() - max;
    let mut text = format!("[... {dropped} lines truncated ...]\n");
    text.push_str(&lines[dropped..].join("\n"));
    (text, dropped)
}

/// A tool-style error as the JSON-RPC error of a request for `uri`, which `data.uri` names
/// (SEP-2164).
fn rpc_error(error: ToolError, uri: &str) -> ErrorData {
    let message = format!("{} ({})", error.message, error.suggestion);
    let data = Some(json!({ "uri": uri }));
    match error.kind {
        ToolErrorKind::NotFound => ErrorData::resource_not_found(message, data),
        ToolErrorKind::InvalidArguments | ToolErrorKind::Unsupported => {
            ErrorData::invalid_params(message, data)
        }
        ToolErrorKind::Forbidden | ToolErrorKind::Busy => ErrorData::invalid_request(message, data),
        _ => ErrorData::internal_error(message, data),
    }
}

#[derive(Serialize)]
struct WindowsContent {
    server: String,
    session: SessionInfo,
    windows: Vec<Window>,
}

#[derive(Serialize)]
struct WindowContent {
    server: String,
    window: Window,
    panes: Vec<PaneSummary>,
}

#[derive(Serialize)]
struct PaneMetadata {
    server: String,
    pane: PaneSummary,
}

impl McpServer {
    /// `resources/list`: what the caller may read, one page at a time; the skill first when
    /// `with_skill` (the client reads it as a plain resource).
    pub(crate) async fn list_resources_for(
        &self,
        call: &CallContext,
        cursor: Option<&str>,
        with_skill: bool,
    ) -> Result<ListResourcesResult, ErrorData> {
        let offset = match cursor {
            None => 0,
            Some(cursor) => cursor
                .parse::<usize>()
                .map_err(|_| ErrorData::invalid_params("invalid cursor", None))?,
        };
        let mut resources: Vec<Resource> = with_skill.then(skill::resource).into_iter().collect();
        if crate::auth::can_call(&call.principal, Tier::ReadOnly).is_ok() {
            for name in self.visible_servers(call) {
                let Ok(tmux) = self.tmux_access(call, Some(name)).await else {
                    continue;
                };
                resources.extend(server_resources(&tmux).await);
                if !self.state().config.agents.is_empty() {
                    resources.push(
                        Resource::new(agents_uri(name), format!("{name}: agents"))
                            .with_mime_type("application/json"),
                    );
                }
            }
        }
        let page: Vec<Resource> = resources
            .iter()
            .skip(offset)
            .take(PAGE_SIZE)
            .cloned()
            .collect();
        let mut result = ListResourcesResult::with_all_items(page);
        if offset + PAGE_SIZE < resources.len() {
            result.next_cursor = Some((offset + PAGE_SIZE).to_string());
        }
        Ok(result)
    }

    /// `resources/templates/list`.
    pub(crate) fn resource_templates(&self) -> ListResourceTemplatesResult {
        ListResourceTemplatesResult::with_all_items(templates())
    }

    /// `resources/read`: checks tier and rate like a read-only tool call, reads, audits. The
    /// skill is static text, read by any client without either.
    pub(crate) async fn read_resource_for(
        &self,
        call: &CallContext,
        uri: &str,
    ) -> Result<ReadResourceResult, ErrorData> {
        if uri == skill::URI {
            return Ok(skill::read());
        }
        let state = self.state();
        let parsed = ResourceUri::parse(uri);
        let targets = [short(uri)];
        let open = state
            .audit
            .start(CallStart {
                sub: call.sub(),
                mcp_session: call.mcp_session.as_deref(),
                tool: "resources/read",
                server: parsed.as_ref().ok().map(ResourceUri::server),
                host: parsed
                    .as_ref()
                    .ok()
                    .and_then(|uri| state.hosts.host_of(uri.server())),
                targets: &targets,
                args: &json!({}),
                schema: None,
            })
            .await
            .map_err(|error| rpc_error(call::audit_unavailable(&error), uri))?;
        let result = match call::admit(call, Tier::ReadOnly, &state.limits) {
            Err(refusal) => Err(refusal),
            Ok(()) => match &parsed {
                Err(e) => Err(Refusal::from(ToolError::invalid_arguments(
                    e.to_string(),
                    "use a URI from resources/list",
                ))),
                Ok(parsed) => self
                    .read_parsed(call, uri, parsed)
                    .await
                    .map_err(Refusal::from),
            },
        };
        open.end(
            result.as_ref().map_or_else(|r| r.outcome, |_| Outcome::Ok),
            result.as_ref().err().map(Refusal::kind),
        );
        result.map_err(|refusal| rpc_error(refusal.error, uri))
    }

    /// The fleet resource `uri` names, for a subscription of `call`'s: checked as a read of it
    /// would be (tier, rate, the server visible); any other URI is refused (a pane is followed
    /// with wait_for_text or capture_since, not a subscription).
    pub(crate) async fn followed(
        &self,
        call: &CallContext,
        uri: &str,
    ) -> Result<Followed, ErrorData> {
        let checked = async {
            call::admit(call, Tier::ReadOnly, &self.state().limits).map_err(|r| r.error)?;
            let server = match ResourceUri::parse(uri) {
                Ok(ResourceUri::Agents { server }) => server,
                _ => {
                    return Err(ToolError::invalid_arguments(
                        "only tmux://<server>/agents resources send updates",
                        "subscribe to a server's agents; follow a pane with wait_for_text or \
                         capture_since",
                    ));
                }
            };
            let tmux = self.tmux_access(call, Some(&server)).await?;
            Ok(Followed {
                asked: uri.to_owned(),
                uri: agents_uri(tmux.server_name()),
            })
        };
        checked.await.map_err(|error| rpc_error(error, uri))
    }

    async fn read_parsed(
        &self,
        call: &CallContext,
        uri: &str,
        parsed: &ResourceUri,
    ) -> Result<ReadResourceResult, ToolError> {
        let tmux = self.tmux_access(call, Some(parsed.server())).await?;
        let server = tmux.server_name().to_owned();
        let body = match parsed {
            ResourceUri::Sessions { .. } => json!({
                "server": server,
                "sessions": list_session_rows(&tmux).await?,
            }),
            ResourceUri::Session { session, .. } => {
                let session = find_session(&tmux, &Target::Session(session.clone())).await?;
                let windows = list_window_rows(&tmux, Some(session.session.id)).await?;
                to_json(&SessionDetail {
                    server,
                    session,
                    windows,
                })?
            }
            ResourceUri::Windows { session, .. } => {
                let session = find_session(&tmux, &Target::Session(session.clone())).await?;
                let windows = list_window_rows(&tmux, Some(session.session.id)).await?;
                to_json(&WindowsContent {
                    server,
                    session,
                    windows,
                })?
            }
            ResourceUri::Window { session, index, .. } => {
                let session = find_session(&tmux, &Target::Session(session.clone())).await?;
                let window = list_window_rows(&tmux, Some(session.session.id))
                    .await?
                    .into_iter()
                    .find(|w| w.index == *index)
                    .ok_or_else(|| {
                        ToolError::not_found(
                            format!(
                                "session {} has no window at index {index}",
                                session.session.name
                            ),
                            "read the session's windows resource",
                        )
                    })?;
                let panes = pane_rows(&tmux, &PaneScope::Of(Target::Window(window.id)))
                    .await?
                    .into_iter()
                    .map(|row| PaneSummary::from(row.info))
                    .collect();
                to_json(&WindowContent {
                    server,
                    window,
                    panes,
                })?
            }
            ResourceUri::Pane { pane, .. } => {
                let pane = PaneSummary::from(pane_info(&tmux, &Target::Pane(*pane)).await?.info);
                to_json(&PaneMetadata { server, pane })?
            }
            ResourceUri::Agents { .. } => to_json(&agents_of(self, &tmux).await?)?,
            ResourceUri::PaneContent { pane, .. } => {
                let text = pane_text(&tmux, *pane).await?;
                return Ok(ReadResourceResult::new(vec![
                    ResourceContents::text(text, uri).with_mime_type("text/plain"),
                ]));
            }
        };
        Ok(ReadResourceResult::new(vec![
            ResourceContents::text(body.to_string(), uri).with_mime_type("application/json"),
        ]))
    }
}

fn to_json<T: Serialize>(value: &T) -> Result<serde_json::Value, ToolError> {
    serde_json::to_value(value)
        .map_err(|e| ToolError::new(ToolErrorKind::Internal, e.to_string(), ""))
}

/// The visible text of a pane the caller may see: wrapped lines joined, trailing blank lines
/// dropped, the last [`CONTENT_MAX_LINES`] kept, then the caller's output budget.
async fn pane_text(tmux: &TmuxAccess<'_>, pane: PaneId) -> Result<String, ToolError> {
    tmux.resolve(&Target::Pane(pane)).await?;
    let visible_joined = CaptureRange {
        join_wrapped: true,
        ..CaptureRange::visible()
    };
    let lines = tmux
        .pane_reads()
        .capture(pane, &visible_joined)
        .await
        .map_err(|e| tmux.error(e, PANES_HINT))?;
    let mut lines: Vec<String> = lines
        .iter()
        .map(|l| String::from_utf8_lossy(l).into_owned())
        .collect();
    while lines.last().is_some_and(|l| l.trim().is_empty()) {
        lines.pop();
    }
    let (text, _) = keep_tail(&lines, CONTENT_MAX_LINES);
    Ok(tmux.budget().cap_resource_text(&text))
}

/// The resources of one server the caller may read (one round trip; none if it is down).
async fn server_resources(tmux: &TmuxAccess<'_>) -> Vec<Resource> {
    let server = tmux.server_name();
    let Ok(listing) = tmux.pane_reads().sessions_and_panes().await else {
        return Vec::new();
    };
    let mut resources = vec![
        Resource::new(
            format!("{SCHEME}{}/sessions", percent_encode(server)),
            format!("{server}: sessions"),
        )
        .with_mime_type("application/json"),
    ];
    if let Some((sessions, panes)) = listing {
        for session in super::tools::session::visible(tmux, sessions) {
            resources.push(
                Resource::new(
                    session_uri(server, &session.session.name),
                    format!("{server}: session {}", session.session.name),
                )
                .with_mime_type("application/json"),
            );
        }
        for pane in visible_rows(tmux, panes).into_iter().map(|row| row.info) {
            resources.push(
                Resource::new(
                    format!(
                        "{}/content",
                        pane_uri(server, &pane.record.pane.to_string())
                    ),
                    format!(
                        "{server}: pane {} ({}, {})",
                        pane.record.pane, pane.record.session_name, pane.record.current_command
                    ),
                )
                .with_description(format!("Visible text of pane {}", pane.record.pane))
                .with_mime_type("text/plain"),
            );
        }
    }
    resources
}

#[cfg(test)]
mod tests {
    use super::*;
    use muxgate_tmux::SessionId;
    use muxgate_tmux::wire::target::SessionName;

    #[test]
    fn uris_parse() {
        let s = |name: &str| SessionSel::Name(SessionName::parse(name).unwrap());
        assert_eq!(
            ResourceUri::parse("tmux://dev/sessions"),
            Ok(ResourceUri::Sessions {
                server: "dev".into()
            })
        );
        assert_eq!(
            ResourceUri::parse("tmux://dev/sessions/build"),
            Ok(ResourceUri::Session {
                server: "dev".into(),
                session: s("build")
            })
        );
        assert_eq!(
            ResourceUri::parse("tmux://dev/sessions/%241/windows"),
            Ok(ResourceUri::Windows {
                server: "dev".into(),
                session: SessionSel::Id(SessionId(1))
            })
        );
        assert_eq!(
            ResourceUri::parse("tmux://dev/sessions/$1/windows/2"),
            Ok(ResourceUri::Window {
                server: "dev".into(),
                session: SessionSel::Id(SessionId(1)),
                index: 2
            })
        );
        for pane in ["%253", "%3"] {
            assert_eq!(
                ResourceUri::parse(&format!("tmux://w/panes/{pane}/content")),
                Ok(ResourceUri::PaneContent {
                    server: "w".into(),
                    pane: PaneId(3)
                }),
                "{pane}"
            );
        }
        // `%12` is a control byte when decoded, so the raw pane id wins.
        assert_eq!(
            ResourceUri::parse("tmux://w/panes/%12"),
            Ok(ResourceUri::Pane {
                server: "w".into(),
                pane: PaneId(12)
            })
        );
        for bad in [
            "file:///etc/passwd",
            "tmux://",
            "tmux:///sessions",
            "tmux://w/sessions/a:b",
            "tmux://w/sessions/x/windows/-1",
            "tmux://w/panes/@1",
            "tmux://w/panes/%251/other",
            "tmux://w/other",
        ] {
            assert!(ResourceUri::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn uris_round_trip() {
        let uri = pane_uri("w", "%7");
        assert_eq!(uri, "tmux://w/panes/%257");
        assert!(matches!(
            ResourceUri::parse(&uri),
            Ok(ResourceUri::Pane {
                pane: PaneId(7),
                ..
            })
        ));
        assert_eq!(session_uri("w", "$2"), "tmux://w/sessions/$2");
        // A host's server names its socket after a slash: one segment, encoded.
        let remote = session_uri("build-1/ci", "main");
        assert_eq!(remote, "tmux://build-1%2Fci/sessions/main");
        assert!(matches!(
            ResourceUri::parse(&remote),
            Ok(ResourceUri::Session { ref server, .. }) if server == "build-1/ci"
        ));
        assert_eq!(percent_decode("%zz"), None);
        assert_eq!(percent_decode("a%20b").as_deref(), Some("a b"));
    }

    #[test]
    fn tails_are_kept_with_a_marker() {
        let lines: Vec<String> = (1..=5).map(|i| format!("l{i}")).collect();
        assert_eq!(keep_tail(&lines, 10), ("l1\nl2\nl3\nl4\nl5".into(), 0));
        assert_eq!(
            keep_tail(&lines, 2),
            ("[... 3 lines truncated ...]\nl4\nl5".into(), 3)
        );
    }

    #[test]
    fn templates_cover_every_uri_form() {
        let names: Vec<_> = templates().into_iter().map(|t| t.uri_template).collect();
        assert_eq!(names.len(), 7);
        assert!(names.iter().all(|t| t.starts_with("tmux://{server}/")));
    }
}
