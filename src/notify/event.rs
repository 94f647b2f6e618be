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
    /// A spawned agent waits for a human: a dialog, a permission, a login, a question.
    AgentBlocked,
    /// A spawned agent is done with its task and waits for the next.
    AgentIdle,
    /// A spawned agent's program ended.
    AgentExited,
    /// A host's link is down (and stayed down a while): its servers cannot be reached.
    HostDown,
    /// A host told down is reachable again.
    HostUp,
}

impl EventKind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            EventKind::ApprovalPending => "approval_pending",
            EventKind::SecretRequested => "secret_requested",
            EventKind::AgentBlocked => "agent_blocked",
            EventKind::AgentIdle => "agent_idle",
            EventKind::AgentExited => "agent_exited",
            EventKind::HostDown => "host_down",
            EventKind::HostUp => "host_up",
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
    /// The workspace (team) of the client whose event it is, in workspace mode: targets with
    /// `workspaces` take only their teams' events.
    pub(crate) workspace: Option<String>,
}

impl Event {
    /// The same event, as one of the client working in `workspace` (kept whole: targets are
    /// chosen by it, and two names alike in their first characters are two teams).
    pub(crate) fn in_workspace(mut self, workspace: &str) -> Self {
        self.workspace = Some(workspace.chars().filter(|c| !c.is_control()).collect());
        self
    }

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
            workspace: None,
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
            workspace: None,
        }
    }
}

/// A spawned agent's edge into a state a person may act on.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AgentEdge<'a> {
    /// The client that spawned it.
    pub(crate) client: &'a str,
    pub(crate) server: &'a str,
    pub(crate) agent: &'a str,
    /// Its `[agents.<kind>]`.
    pub(crate) kind: &'a str,
    pub(crate) blocked_on: Option<&'a str>,
    /// The evidence that decided.
    pub(crate) why: Option<&'a str>,
}

impl Event {
    /// Agent `edge.agent` entered `state` (blocked, idle or exited); none for another state.
    /// Each edge is its own event (its key holds when it came), so a second block after an
    /// answer is told again.
    pub(crate) fn agent_state(state: &str, edge: &AgentEdge<'_>) -> Option<Self> {
        let (kind, what) = match state {
            "blocked" => (EventKind::AgentBlocked, "waits for you"),
            "idle" => (EventKind::AgentIdle, "is done and waits for its next task"),
            "exited" => (EventKind::AgentExited, "ended"),
            _ => return None,
        };
        let at = SystemTime::now();
        let when = at
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        let (agent, server, client) = (plain(edge.agent), plain(edge.server), plain(edge.client));
        let on = edge
            .blocked_on
            .map(|why| format!(" ({why})"))
            .unwrap_or_default();
        Some(Self {
            kind,
            key: format!("{server}/{agent}/{state}/{when}"),
            summary: format!("{client}'s agent {agent} on {server} {what}{on}"),
            detail: json!({
                "agent": agent, "kind": plain(edge.kind), "server": server, "state": state,
                "blocked_on": edge.blocked_on, "why": edge.why.map(plain),
            }),
            client,
            at,
            workspace: None,
        })
    }
}

impl Event {
    /// Host `host`'s link went down (`reason`: its last error) or, with `None`, came back.
    /// Nobody's call caused it: it goes to targets that take every client's events.
    pub(crate) fn host_link(host: &str, down: Option<&str>) -> Self {
        let at = SystemTime::now();
        let when = at
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        let host = plain(host);
        let (kind, summary) = match down {
            Some(reason) => (
                EventKind::HostDown,
                format!("host {host} is unreachable: {}", plain(reason)),
            ),
            None => (EventKind::HostUp, format!("host {host} is reachable again")),
        };
        Self {
            key: format!("{host}/{}/{when}", kind.as_str()),
            summary,
            detail: json!({"host": host, "reason": down.map(plain)}),
            kind,
            client: String::new(),
            at,
            workspace: None,
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
