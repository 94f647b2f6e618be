//! Which panes are recorded without being asked: the `[[recordings.rules]]`, compiled, and the
//! two questions they answer — could a call of this client start a recording at all (so that
//! calls of other clients cost nothing), and does this client acting on a pane of this session
//! start one?
//!
//! A rule matches when every field it sets matches (an empty list matches anything): the
//! client's `sub` and the name of the session the pane is in, both with the `*` and `?`
//! patterns of the target ACLs. The first matching rule names the recording.
//!
//! Pure: no I/O. The recording itself is [`super::recorder`]'s.

use serde::Deserialize;

use crate::auth::pattern::{NamePattern, compile_patterns};

/// `[[recordings.rules]]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordingRuleConfig {
    /// What the recording's title and the logs call the rule.
    pub name: String,
    /// Client `sub` patterns (`*` and `?`); empty: any client.
    #[serde(default)]
    pub clients: Vec<String>,
    /// Session name patterns; empty: any session.
    #[serde(default)]
    pub sessions: Vec<String>,
}

/// The compiled rules.
#[derive(Debug, Clone, Default)]
pub struct RecordingPolicy {
    rules: Vec<Rule>,
}

#[derive(Debug, Clone)]
struct Rule {
    name: String,
    clients: Vec<NamePattern>,
    sessions: Vec<NamePattern>,
}

/// Why a rule was refused: its index in `recordings.rules`, the field, what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleError {
    pub index: usize,
    pub field: &'static str,
    pub message: String,
}

impl RecordingPolicy {
    /// Compiles the configured rules; the first bad field is the error.
    pub fn compile(rules: &[RecordingRuleConfig]) -> Result<Self, RuleError> {
        let rules = rules
            .iter()
            .enumerate()
            .map(|(index, rule)| {
                Rule::compile(rule).map_err(|(field, message)| RuleError {
                    index,
                    field,
                    message,
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(Self { rules })
    }

    /// Whether no pane is ever recorded without a request.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Whether some rule could record a pane `sub` acts on (its sessions not yet known).
    pub fn may_record_for(&self, sub: &str) -> bool {
        self.rules
            .iter()
            .any(|rule| matches_any(&rule.clients, sub))
    }

    /// The first rule recording a pane of `session` that `sub` acts on.
    pub fn rule_for(&self, sub: &str, session: &str) -> Option<&str> {
        self.rules
            .iter()
            .find(|rule| matches_any(&rule.clients, sub) && matches_any(&rule.sessions, session))
            .map(|rule| rule.name.as_str())
    }
}

/// Whether `name` matches one of `patterns`; an empty list matches anything.
fn matches_any(patterns: &[NamePattern], name: &str) -> bool {
    patterns.is_empty() || patterns.iter().any(|pattern| pattern.matches(name))
}

impl Rule {
    fn compile(config: &RecordingRuleConfig) -> Result<Self, (&'static str, String)> {
        if config.name.trim().is_empty() || config.name.chars().any(char::is_control) {
            return Err((
                "name",
                "must be a non-empty name without control characters".into(),
            ));
        }
        let clients = compile_patterns(&config.clients)
            .map_err(|(pattern, error)| ("clients", format!("`{pattern}`: {error}")))?;
        let sessions = compile_patterns(&config.sessions)
            .map_err(|(pattern, error)| ("sessions", format!("`{pattern}`: {error}")))?;
        Ok(Self {
            name: config.name.clone(),
            clients,
            sessions,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(name: &str, clients: &[&str], sessions: &[&str]) -> RecordingRuleConfig {
        RecordingRuleConfig {
            name: name.into(),
            clients: clients.iter().map(|s| (*s).into()).collect(),
            sessions: sessions.iter().map(|s| (*s).into()).collect(),
        }
    }

    #[test]
    fn a_rule_needs_its_client_and_its_session() {
        let policy = RecordingPolicy::compile(&[
            rule("ci-builds", &["ci-*"], &["build-*"]),
            rule("everything-of-bob", &["bob"], &[]),
        ])
        .unwrap();
        assert_eq!(policy.rule_for("ci-7", "build-42"), Some("ci-builds"));
        assert_eq!(policy.rule_for("ci-7", "scratch"), None);
        assert_eq!(policy.rule_for("alice", "build-42"), None);
        assert_eq!(
            policy.rule_for("bob", "anything"),
            Some("everything-of-bob")
        );
        assert!(policy.may_record_for("ci-7"));
        assert!(policy.may_record_for("bob"));
        assert!(!policy.may_record_for("alice"));
    }

    #[test]
    fn empty_lists_match_everything_and_no_rules_match_nothing() {
        let all = RecordingPolicy::compile(&[rule("all", &[], &[])]).unwrap();
        assert_eq!(all.rule_for("anyone", "any"), Some("all"));
        let none = RecordingPolicy::compile(&[]).unwrap();
        assert!(none.is_empty());
        assert!(!none.may_record_for("anyone"));
        assert_eq!(none.rule_for("anyone", "any"), None);
    }

    #[test]
    fn bad_rules_name_their_field() {
        let error =
            RecordingPolicy::compile(&[rule("ok", &[], &[]), rule(" ", &[], &[])]).unwrap_err();
        assert_eq!((error.index, error.field), (1, "name"));
        let error = RecordingPolicy::compile(&[rule("r", &[""], &[])]).unwrap_err();
        assert_eq!((error.index, error.field), (0, "clients"));
        let error = RecordingPolicy::compile(&[rule("r", &[], &["a\u{7}"])]).unwrap_err();
        assert_eq!(error.field, "sessions");
    }
}
