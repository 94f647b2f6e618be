//! Answers to the ways clients open a conversation that rmcp refuses with a bare line of text.
//!
//! Clients differ: some send `initialize` after a successful `server/discover` (served: a
//! 2025-era session opens as usual), some name a protocol version newer than any this gateway
//! knows, some leave out a header. Each gets the most useful answer the protocol allows:
//!
//! - `initialize` with an `MCP-Protocol-Version` header naming an unknown version, or a
//!   handshake (a `protocolVersion` in its params) under a version of the per-request era
//!   (2026-07-28 on, which has no `initialize`: a client that discovered at it and now opens a
//!   session, as the Python SDK's `initialize()` after its discover does): the header is
//!   dropped and the body's `protocolVersion` negotiates as usual (the header names a version
//!   already agreed on, and at `initialize` none is yet). An `initialize` of the per-request
//!   era without a handshake is that era's removed method, rmcp's to answer 404 (-32601); a
//!   session-era header that contradicts the body stays rmcp's to refuse.
//! - A 2026-07-28-style request at an unknown version is rmcp's to answer: its `-32022` error
//!   lists the versions it supports, and the client retries with one.
//! - A request at 2026-07-28 or later without `Mcp-Method`, or without the `Mcp-Name` its
//!   method needs: the protocol requires the refusal (`400`, `-32020`); the answer names the
//!   header and the value to send.
//! - A request in no session and naming no protocol version in its `_meta`: `400` with a
//!   JSON-RPC error naming both ways to speak (open a session with `initialize`, or send
//!   2026-07-28 requests), where rmcp answers "Session ID is required".
//! - An `Accept` header without both `application/json` and `text/event-stream`: `406` with a
//!   JSON-RPC error naming the header to send.
//!
//! The rules are [`quirk`], a pure function of the checked message ([`Checked`], from the body
//! check) and the headers; [`answer_quirks`] is the layer that applies them.

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use http::{HeaderMap, StatusCode, header};
use rmcp::model::ProtocolVersion;

use super::body::Checked;

const PROTOCOL_VERSION_HEADER: &str = "mcp-protocol-version";
const METHOD_HEADER: &str = "mcp-method";
const NAME_HEADER: &str = "mcp-name";
const SESSION_HEADER: &str = "mcp-session-id";

/// JSON-RPC codes: an invalid request, and the protocol's code for a header that does not
/// match the body (or is missing).
const INVALID_REQUEST: i64 = -32600;
const HEADER_MISMATCH: i64 = -32020;

/// The methods whose `Mcp-Name` header carries the name or URI in their params.
const NAMED_METHODS: [&str; 5] = [
    "tools/call",
    "prompts/get",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
];

/// How much of a client's own text an answer repeats.
const ECHO_CHARS: usize = 128;

/// What the layer does with a request.
#[derive(Debug, PartialEq)]
pub(crate) enum Quirk {
    /// Drop the `MCP-Protocol-Version` header and serve the request.
    DropVersionHeader,
    /// Answer with a JSON-RPC error; rmcp does not see the request.
    Refuse {
        status: StatusCode,
        code: i64,
        message: String,
    },
}

/// The quirk `request` shows, if any.
pub(crate) fn quirk(request: &Checked, headers: &HeaderMap) -> Option<Quirk> {
    if !accepts_both(headers) {
        return Some(Quirk::Refuse {
            status: StatusCode::NOT_ACCEPTABLE,
            code: INVALID_REQUEST,
            message: "not acceptable: answers come as application/json or as a \
                      text/event-stream; send `Accept: application/json, text/event-stream`"
                .to_owned(),
        });
    }
    let version = header_text(headers, PROTOCOL_VERSION_HEADER);
    let per_request = version.is_some_and(|v| v >= ProtocolVersion::STANDARD_HEADERS.as_str());
    if request.method == "initialize" {
        let known = |v: &str| {
            ProtocolVersion::KNOWN_VERSIONS
                .iter()
                .any(|k| k.as_str() == v)
        };
        return ((per_request && request.handshake) || version.is_some_and(|v| !known(v)))
            .then_some(Quirk::DropVersionHeader);
    }
    if per_request {
        return missing_standard_header(request, headers);
    }
    let in_session = headers.contains_key(SESSION_HEADER);
    (!in_session && request.meta_version.is_none()).then(|| Quirk::Refuse {
        status: StatusCode::BAD_REQUEST,
        code: INVALID_REQUEST,
        message: format!(
            "no MCP session: `{}` came without an Mcp-Session-Id header and without a protocol \
             version in params._meta. Either open a session (`initialize`, then send its \
             Mcp-Session-Id with every request), or send each request at 2026-07-28: \
             params._meta[\"io.modelcontextprotocol/protocolVersion\"] and the \
             MCP-Protocol-Version header (`server/discover` lists the versions)",
            echo(&request.method)
        ),
    })
}

/// At 2026-07-28 and later: the `Mcp-Method` every request carries, and the `Mcp-Name` of the
/// methods that act on a named thing.
fn missing_standard_header(request: &Checked, headers: &HeaderMap) -> Option<Quirk> {
    let refuse = |header: &str, value: &str| Quirk::Refuse {
        status: StatusCode::BAD_REQUEST,
        code: HEADER_MISMATCH,
        message: format!(
            "missing required {header} header: send `{header}: {}` (values that are not plain \
             ASCII as `=?base64?…?=`)",
            echo(value)
        ),
    };
    if !headers.contains_key(METHOD_HEADER) {
        return Some(refuse("Mcp-Method", &request.method));
    }
    let target = request.target.as_deref()?;
    (NAMED_METHODS.contains(&request.method.as_str()) && !headers.contains_key(NAME_HEADER))
        .then(|| refuse("Mcp-Name", target))
}

/// Whether `Accept` names both media types an answer may come in (as rmcp requires).
fn accepts_both(headers: &HeaderMap) -> bool {
    let mut json = false;
    let mut sse = false;
    for value in headers.get_all(header::ACCEPT) {
        for media in value.to_str().unwrap_or_default().split(',') {
            let essence = media.split(';').next().unwrap_or_default().trim();
            json |= essence.eq_ignore_ascii_case("application/json");
            sse |= essence.eq_ignore_ascii_case("text/event-stream");
        }
    }
    json && sse
}

fn header_text<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// A client's text as an answer repeats it: at most [`ECHO_CHARS`] characters.
fn echo(text: &str) -> String {
    text.chars().take(ECHO_CHARS).collect()
}

/// Middleware: answers the quirks [`quirk`] finds in a checked JSON-RPC request; passes
/// everything else (and every request the body check did not read) through.
pub(crate) async fn answer_quirks(mut request: Request, next: Next) -> Response {
    let Some(checked) = request.extensions().get::<Checked>() else {
        return next.run(request).await;
    };
    match quirk(checked, request.headers()) {
        None => next.run(request).await,
        Some(Quirk::DropVersionHeader) => {
            request.headers_mut().remove(PROTOCOL_VERSION_HEADER);
            next.run(request).await
        }
        Some(Quirk::Refuse {
            status,
            code,
            message,
        }) => super::answer::error(status, &checked.id, code, message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const BOTH: &str = "application/json, text/event-stream";

    fn request(method: &str, meta_version: Option<&str>, target: Option<&str>) -> Checked {
        Checked {
            method: method.to_owned(),
            id: json!(7),
            meta_version: meta_version.map(str::to_owned),
            target: target.map(str::to_owned),
            handshake: method == "initialize" && meta_version.is_none(),
        }
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(*name, value.parse().unwrap());
        }
        headers
    }

    fn refusal(quirk: Option<Quirk>) -> (StatusCode, i64, String) {
        match quirk {
            Some(Quirk::Refuse {
                status,
                code,
                message,
            }) => (status, code, message),
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn well_formed_requests_of_both_eras_pass() {
        let stateless = headers(&[
            ("accept", BOTH),
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "list_servers"),
        ]);
        let call = request("tools/call", Some("2026-07-28"), Some("list_servers"));
        assert_eq!(quirk(&call, &stateless), None);
        let in_session = headers(&[
            ("accept", "application/json;q=0.9, text/event-stream"),
            ("mcp-session-id", "abc"),
            ("mcp-protocol-version", "2025-11-25"),
        ]);
        assert_eq!(quirk(&request("tools/list", None, None), &in_session), None);
        let init = headers(&[("accept", BOTH)]);
        assert_eq!(quirk(&request("initialize", None, None), &init), None);
        let discover = headers(&[
            ("accept", BOTH),
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "server/discover"),
        ]);
        let request = request("server/discover", Some("2026-07-28"), None);
        assert_eq!(quirk(&request, &discover), None);
    }

    #[test]
    fn initialize_forgets_a_version_header_it_cannot_know() {
        let future = headers(&[("accept", BOTH), ("mcp-protocol-version", "2031-01-01")]);
        let init = request("initialize", None, None);
        assert_eq!(quirk(&init, &future), Some(Quirk::DropVersionHeader));
        // The per-request era has no `initialize`: over a handshake its header names the era
        // the client discovered in, not the session it opens now.
        let discovered = headers(&[("accept", BOTH), ("mcp-protocol-version", "2026-07-28")]);
        assert_eq!(quirk(&init, &discovered), Some(Quirk::DropVersionHeader));
        // Without a handshake it is that era's removed method: rmcp answers 404.
        let removed = Checked {
            handshake: false,
            ..request("initialize", Some("2026-07-28"), None)
        };
        assert_eq!(quirk(&removed, &discovered), None);
        let session_era = headers(&[("accept", BOTH), ("mcp-protocol-version", "2025-06-18")]);
        assert_eq!(quirk(&init, &session_era), None);
    }

    #[test]
    fn a_missing_standard_header_names_the_value_to_send() {
        let no_name = headers(&[
            ("accept", BOTH),
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "resources/read"),
        ]);
        let read = request(
            "resources/read",
            Some("2026-07-28"),
            Some("tmux://dev/sessions"),
        );
        let (status, code, message) = refusal(quirk(&read, &no_name));
        assert_eq!((status, code), (StatusCode::BAD_REQUEST, HEADER_MISMATCH));
        assert!(
            message.contains("`Mcp-Name: tmux://dev/sessions`"),
            "{message}"
        );

        let no_method = headers(&[("accept", BOTH), ("mcp-protocol-version", "2026-07-28")]);
        let list = request("tools/list", Some("2026-07-28"), None);
        let (_, code, message) = refusal(quirk(&list, &no_method));
        assert_eq!(code, HEADER_MISMATCH);
        assert!(message.contains("`Mcp-Method: tools/list`"), "{message}");
    }

    #[test]
    fn a_request_in_no_session_and_no_era_names_both_ways() {
        for pairs in [
            vec![("accept", BOTH)],
            vec![("accept", BOTH), ("mcp-protocol-version", "2025-11-25")],
        ] {
            let (status, code, message) =
                refusal(quirk(&request("tools/list", None, None), &headers(&pairs)));
            assert_eq!((status, code), (StatusCode::BAD_REQUEST, INVALID_REQUEST));
            assert!(message.contains("initialize") && message.contains("2026-07-28"));
        }
        // A 2025-era request carrying its version in `_meta` is rmcp's to serve statelessly.
        let meta = request("tools/list", Some("2025-11-25"), None);
        assert_eq!(quirk(&meta, &headers(&[("accept", BOTH)])), None);
    }

    #[test]
    fn an_accept_header_without_both_types_says_what_to_send() {
        for accept in ["application/json", "text/event-stream", "*/*", ""] {
            let (status, _, message) = refusal(quirk(
                &request("initialize", None, None),
                &headers(&[("accept", accept)]),
            ));
            assert_eq!(status, StatusCode::NOT_ACCEPTABLE, "{accept}");
            assert!(message.contains(BOTH), "{message}");
        }
    }

    #[test]
    fn a_long_method_is_not_echoed_whole() {
        let long = "x".repeat(10_000);
        let (_, _, message) = refusal(quirk(
            &request(&long, None, None),
            &headers(&[("accept", BOTH)]),
        ));
        assert!(message.len() < 1_000, "{}", message.len());
    }
}
