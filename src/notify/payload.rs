//! One webhook request per target format, from an event: its headers and body. Pure.
//!
//! - `json`: the event as a JSON object (`event`, `client`, `summary`, `at`, and the event's
//!   details), signed so that the receiver can tell it came from this gateway and was not
//!   replayed: `X-Muxgate-Timestamp: UNIX_SECONDS` and `X-Muxgate-Signature: sha256=HEX`, the
//!   HMAC-SHA256 of `UNIX_SECONDS.BODY` under the target's key.
//! - `slack`: `{"text": "muxgate: SUMMARY"}`, which Slack's incoming webhooks (and the services
//!   that copy them) post as a message.
//! - `ntfy`: the summary as the body, with `Title`, `Tags` and `Priority` headers.
//!
//! An inbox sign-in link, when the target carries one, goes in as `inbox_url` (JSON), a last
//! line (Slack) or the `Click` header (ntfy: tapping the notification opens it).

use std::time::{SystemTime, UNIX_EPOCH};

use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

use super::config::NotifyFormat;
use super::event::{Event, EventKind};

/// A webhook request: headers and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Request {
    pub(crate) headers: Vec<(&'static str, String)>,
    pub(crate) body: Vec<u8>,
}

/// The request `format` makes of `event` with the inbox sign-in `link` (if any), signed with
/// `key` (`json`), at `now`.
pub(crate) fn request(
    format: NotifyFormat,
    event: &Event,
    key: &[u8],
    link: Option<&str>,
    now: SystemTime,
) -> Request {
    match format {
        NotifyFormat::Json => signed_json(event, key, link, now),
        NotifyFormat::Slack => {
            let open = link
                .map(|url| format!("\nOpen the inbox: {url}"))
                .unwrap_or_default();
            Request {
                headers: vec![("content-type", "application/json".into())],
                body: json!({"text": format!("muxgate: {}{open}", event.summary)})
                    .to_string()
                    .into_bytes(),
            }
        }
        NotifyFormat::Ntfy => {
            let mut headers = vec![
                ("content-type", "text/plain; charset=utf-8".into()),
                ("title", title(event.kind).into()),
                ("tags", tag(event.kind).into()),
                ("priority", "high".into()),
            ];
            headers.extend(link.map(|url| ("click", url.to_owned())));
            Request {
                headers,
                body: event.summary.clone().into_bytes(),
            }
        }
    }
}

fn signed_json(event: &Event, key: &[u8], link: Option<&str>, now: SystemTime) -> Request {
    let mut body = json!({
        "event": event.kind.as_str(),
        "client": event.client,
        "summary": event.summary,
        "at": crate::utc::Utc::from(event.at).rfc3339_millis(),
    });
    if let (Value::Object(body), Some(workspace)) = (&mut body, &event.workspace) {
        body.insert("workspace".into(), json!(workspace));
    }
    if let (Value::Object(body), Some(url)) = (&mut body, link) {
        body.insert("inbox_url".into(), json!(url));
    }
    if let (Value::Object(body), Value::Object(detail)) = (&mut body, &event.detail) {
        for (name, value) in detail {
            body.entry(name.clone()).or_insert_with(|| value.clone());
        }
    }
    let body = body.to_string().into_bytes();
    let timestamp = now
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs()
        .to_string();
    Request {
        headers: vec![
            ("content-type", "application/json".into()),
            ("x-muxgate-event", event.kind.as_str().into()),
            ("x-muxgate-timestamp", timestamp.clone()),
            (
                "x-muxgate-signature",
                format!("sha256={}", signature(key, &timestamp, &body)),
            ),
        ],
        body,
    }
}

/// The hex HMAC-SHA256 of `TIMESTAMP.BODY` under `key`.
pub(crate) fn signature(key: &[u8], timestamp: &str, body: &[u8]) -> String {
    // HMAC takes a key of any length: this cannot fail.
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(key) else {
        return String::new();
    };
    mac.update(timestamp.as_bytes());
    mac.update(b".");
    mac.update(body);
    hex::encode(mac.finalize().into_bytes())
}

fn title(kind: EventKind) -> &'static str {
    match kind {
        EventKind::ApprovalPending => "muxgate: approval pending",
        EventKind::SecretRequested => "muxgate: secret requested",
        EventKind::AgentBlocked => "muxgate: an agent needs you",
        EventKind::AgentIdle => "muxgate: an agent is done",
        EventKind::AgentExited => "muxgate: an agent ended",
        EventKind::HostDown => "muxgate: a host is down",
        EventKind::HostUp => "muxgate: a host is back",
    }
}

fn tag(kind: EventKind) -> &'static str {
    match kind {
        EventKind::ApprovalPending => "lock",
        EventKind::SecretRequested => "key",
        EventKind::AgentBlocked => "raising_hand",
        EventKind::AgentIdle => "white_check_mark",
        EventKind::AgentExited => "stop_sign",
        EventKind::HostDown => "warning",
        EventKind::HostUp => "white_check_mark",
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn event() -> Event {
        let mut event = Event::approval_pending("ab12", "bob", "send_keys", None, "push");
        event.at = UNIX_EPOCH + Duration::from_millis(1_700_000_000_123);
        event
    }

    fn header<'a>(request: &'a Request, name: &str) -> &'a str {
        request
            .headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
            .unwrap_or_else(|| panic!("no {name}"))
    }

    #[test]
    fn json_is_signed_over_its_timestamp_and_body() {
        let now = UNIX_EPOCH + Duration::from_secs(1_700_000_001);
        let request = request(NotifyFormat::Json, &event(), b"key", None, now);
        let body: Value = serde_json::from_slice(&request.body).expect("json");
        assert_eq!(body["event"], "approval_pending");
        assert_eq!(body["client"], "bob");
        assert_eq!(body["id"], "ab12");
        assert_eq!(body["at"], "2023-11-14T22:13:20.123Z");
        assert_eq!(header(&request, "x-muxgate-timestamp"), "1700000001");
        let expected = signature(b"key", "1700000001", &request.body);
        assert_eq!(
            header(&request, "x-muxgate-signature"),
            format!("sha256={expected}")
        );
        // Another key, another timestamp or another body: another signature.
        assert_ne!(signature(b"other", "1700000001", &request.body), expected);
        assert_ne!(signature(b"key", "1700000002", &request.body), expected);
        assert_ne!(signature(b"key", "1700000001", b"{}"), expected);
    }

    #[test]
    fn the_signature_is_what_any_hmac_library_computes() {
        // Python: hmac.new(b"key", b"1700000001.{}", hashlib.sha256).hexdigest()
        assert_eq!(
            signature(b"key", "1700000001", b"{}"),
            "a76572789c7fdbeab1ef1b6c0bc46e46f0235ef6353c120b31d480e846e8b314"
        );
    }

    #[test]
    fn slack_and_ntfy_carry_the_summary() {
        let now = SystemTime::now();
        let slack = request(NotifyFormat::Slack, &event(), b"", None, now);
        let text: Value = serde_json::from_slice(&slack.body).expect("json");
        assert!(
            text["text"]
                .as_str()
                .unwrap()
                .starts_with("muxgate: bob's send_keys")
        );
        let ntfy = request(NotifyFormat::Ntfy, &event(), b"", None, now);
        assert_eq!(header(&ntfy, "title"), "muxgate: approval pending");
        assert!(
            String::from_utf8(ntfy.body)
                .unwrap()
                .contains("approve|deny ab12")
        );
        assert!(!ntfy.headers.iter().any(|(name, _)| *name == "click"));
    }

    #[test]
    fn an_inbox_link_and_the_workspace_ride_along_in_every_format() {
        let now = SystemTime::now();
        let url = Some("https://gw.example/inbox/signin?t=abc");
        let team = event().in_workspace("team-a");
        let json = request(NotifyFormat::Json, &team, b"k", url, now);
        let body: Value = serde_json::from_slice(&json.body).expect("json");
        assert_eq!(body["inbox_url"], "https://gw.example/inbox/signin?t=abc");
        assert_eq!(body["workspace"], "team-a");
        let slack = request(NotifyFormat::Slack, &team, b"", url, now);
        let text: Value = serde_json::from_slice(&slack.body).expect("json");
        assert!(
            text["text"]
                .as_str()
                .unwrap()
                .ends_with("\nOpen the inbox: https://gw.example/inbox/signin?t=abc"),
            "{text}"
        );
        let ntfy = request(NotifyFormat::Ntfy, &team, b"", url, now);
        assert_eq!(
            header(&ntfy, "click"),
            "https://gw.example/inbox/signin?t=abc"
        );
    }
}
