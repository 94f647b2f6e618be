//! What happened that a human should know: the kind (which routes it), whose it is, a key
//! that says when two are the same event, and a one-line summary.

use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Longest text of a client's (a label, a subject) carried in an event, in characters.
const CLIENT_TEXT_CHARS: usize = 120;

/// The kinds of events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// A tool call is held until a human approves or denies it.
    ApprovalPending,
    /// A secret entry link was handed out: someone must type the secret.
    SecretRequested,
}

impl EventKind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            EventKind::ApprovalPending => "approval_pending",
            EventKind::SecretRequested => "secret_requested",
        }
    }
}

/// One event.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Event {
    pub(crate) kind: EventKind,
    /// Whose: the client (`sub`) whose call caused it.
    pub(crate) client: String,
    /// Two events with the same kind and key are one (the later is not sent again).
    pub(crate) key: String,
    /// One line, for a person.
    pub(crate) summary: String,
    /// The details, as the JSON format carries them.
    pub(crate) detail: Value,
    /// When.
    pub(crate) at: SystemTime,
}

impl Event {
    /// A call held for approval: id, tool, server and the rule that held it (never the
    /// arguments, which may hold what the target's readers must not see).
    pub(crate) fn approval_pending(
        id: &str,
        client: &str,
        tool: &str,
        server: Option<&str>,
        rule: &str,
    ) -> Self {
        let (tool, server, rule) = (plain(tool), server.map(plain), plain(rule));
        let on = server
            .as_ref()
            .map(|s| format!(" on {s}"))
            .unwrap_or_default();
        let client = plain(client);
        Self {
            kind: EventKind::ApprovalPending,
            key: id.to_owned(),
            summary: format!(
                "{client}'s {tool}{on} waits for approval (rule {rule}): muxgate approvals approve|deny {id}"
            ),
            detail: json!({"id": id, "tool": tool, "server": server, "rule": rule}),
            client,
            at: SystemTime::now(),
        }
    }

    /// A secret entry link handed out for `place` (`server:pane`), labelled `label`.
    pub(crate) fn secret_requested(id: &str, client: &str, label: &str, place: &str) -> Self {
        let (client, label) = (plain(client), plain(label));
        Self {
            kind: EventKind::SecretRequested,
            key: id.to_owned(),
            summary: format!(
                "{client} asks for a secret ({label}) to be typed into {place}: open the link it was given"
            ),
            detail: json!({"id": id, "label": label, "place": place}),
            client,
            at: SystemTime::now(),
        }
    }
}

/// A client's `text` as one line: control characters dropped, cut to [`CLIENT_TEXT_CHARS`].
fn plain(text: &str) -> String {
    let mut plain: String = text.chars().filter(|c| !c.is_control()).collect();
    if let Some((cut, _)) = plain.char_indices().nth(CLIENT_TEXT_CHARS) {
        plain.truncate(cut);
        plain.push('…');
    }
    plain
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clients_words_reach_a_summary_as_one_short_line() {
        let event = Event::secret_requested(
            "s-1",
            "alice",
            &format!("db\npassword\u{1b}[2J{}", "x".repeat(500)),
            "build:%3",
        );
        assert!(!event.summary.contains('\n') && !event.summary.contains('\u{1b}'));
        assert!(event.summary.chars().count() < 300, "{}", event.summary);
        assert_eq!(event.detail["label"].as_str().unwrap().chars().count(), 121);
    }

    #[test]
    fn an_approval_names_the_call_but_not_its_arguments() {
        let event = Event::approval_pending("ab12", "bob", "send_keys", Some("build-1"), "push");
        assert_eq!(
            event.summary,
            "bob's send_keys on build-1 waits for approval (rule push): muxgate approvals approve|deny ab12"
        );
        assert_eq!(event.key, "ab12");
    }
}
