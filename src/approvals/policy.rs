//! Which calls a human must approve: the `[approvals]` rules, compiled, and the one question
//! they answer — does this call need approval, and by which rule?
//!
//! A rule matches a call when every field it sets matches (fields left out match anything):
//! the tool's name, its tier, the client's `sub`, and a regular expression searched in every
//! string the arguments hold (nested ones included, so a batch's operations count). The first
//! matching rule wins; its name is what the approver and the audit log see.
//!
//! An argument pattern is a tripwire, not a sandbox: an agent can type `rm -` and `rf` in two
//! calls. A tool or tier with no pattern holds every call of it.
//!
//! Pure: no I/O. The waiting itself is [`super::desk`]'s.

use regex::{Regex, RegexBuilder};
use serde::Deserialize;
use serde_json::Value;

use crate::auth::Tier;
use crate::auth::pattern::{NamePattern, compile_patterns};

/// Longest regular expression accepted, compiled, in bytes: a pattern is configuration, but
/// one that compiles to megabytes would cost that on every call.
const MAX_PATTERN_BYTES: usize = 1 << 20;

/// How many strings of one call's arguments are searched at most; a call with more is held
/// (a rule with a pattern cannot tell, so it errs on the side of asking).
const MAX_STRINGS: usize = 4096;

/// `[approvals]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalsConfig {
    /// How long a held call waits for a decision, in seconds, at most the caller's
    /// `max_wait_seconds`; no decision by then is a denial.
    #[serde(default = "default_timeout_secs")]
    pub timeout_secs: u64,
    /// Who may decide (`sub` patterns); empty: anyone whose token grants `mux:approve` alone.
    #[serde(default)]
    pub approvers: Vec<String>,
    #[serde(default)]
    /// The rules, in order: a call the first matching rule names is held.
    pub rules: Vec<RuleConfig>,
}

impl Default for ApprovalsConfig {
    fn default() -> Self {
        Self {
            timeout_secs: default_timeout_secs(),
            approvers: Vec::new(),
            rules: Vec::new(),
        }
    }
}

fn default_timeout_secs() -> u64 {
    120
}

/// `[[approvals.rules]]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleConfig {
    /// What the approver and the audit log call the rule.
    pub name: String,
    /// Tool names (exact); empty: any tool.
    #[serde(default)]
    pub tools: Vec<String>,
    /// Tiers (`read-only`, `mutating`, `destructive`); empty: any tier.
    #[serde(default)]
    pub tiers: Vec<String>,
    /// Client `sub` patterns (`*` and `?`); empty: any client.
    #[serde(default)]
    pub clients: Vec<String>,
    /// A regular expression searched in the arguments' strings; absent: any arguments.
    #[serde(default)]
    pub pattern: Option<String>,
}

/// The compiled rules, and who may decide.
#[derive(Debug, Clone, Default)]
pub struct ApprovalPolicy {
    rules: Vec<Rule>,
    approvers: Vec<NamePattern>,
}

#[derive(Debug, Clone)]
struct Rule {
    name: String,
    tools: Vec<String>,
    tiers: Vec<Tier>,
    clients: Vec<NamePattern>,
    pattern: Option<Regex>,
}

/// A call as the policy sees it.
#[derive(Debug, Clone, Copy)]
pub struct CallFacts<'a> {
    /// The tool called.
    pub tool: &'a str,
    /// The tool's tier.
    pub tier: Tier,
    /// The caller's `sub`.
    pub sub: &'a str,
    /// The call's arguments.
    pub args: &'a Value,
}

/// Why a rule was refused: which of its fields, and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleError {
    /// The index of the rule in `approvals.rules`; `None` for `approvals.approvers`.
    pub index: Option<usize>,
    pub field: &'static str,
    pub message: String,
}

impl ApprovalPolicy {
    /// Compiles the configured rules; the first bad field is the error.
    pub fn compile(config: &ApprovalsConfig) -> Result<Self, RuleError> {
        let rules = config
            .rules
            .iter()
            .enumerate()
            .map(|(index, rule)| {
                Rule::compile(rule).map_err(|(field, message)| RuleError {
                    index: Some(index),
                    field,
                    message,
                })
            })
            .collect::<Result<_, _>>()?;
        let approvers =
            compile_patterns(&config.approvers).map_err(|(pattern, error)| RuleError {
                index: None,
                field: "approvers",
                message: format!("`{pattern}`: {error}"),
            })?;
        Ok(Self { rules, approvers })
    }

    /// Whether `sub` may decide held calls (its token's scopes are checked apart).
    pub fn may_decide(&self, sub: &str) -> bool {
        self.approvers.is_empty() || self.approvers.iter().any(|p| p.matches(sub))
    }

    /// The tool names rules name that are not in `known` (a misspelt name would hold nothing).
    pub fn unknown_tools<'a>(&'a self, known: &[&str]) -> Vec<&'a str> {
        self.rules
            .iter()
            .flat_map(|rule| &rule.tools)
            .map(String::as_str)
            .filter(|tool| !known.contains(tool))
            .collect()
    }

    /// Whether no call is ever held.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The pattern of the rule named `rule`, if it has one (an approver is shown what it
    /// matched).
    pub(crate) fn pattern_of(&self, rule: &str) -> Option<&Regex> {
        self.rules
            .iter()
            .find(|r| r.name == rule)
            .and_then(|r| r.pattern.as_ref())
    }

    /// The name of the first rule that holds this call, if any.
    pub fn rule_for(&self, call: CallFacts<'_>) -> Option<&str> {
        self.rules
            .iter()
            .find(|rule| rule.matches(call))
            .map(|rule| rule.name.as_str())
    }
}

impl Rule {
    fn compile(config: &RuleConfig) -> Result<Self, (&'static str, String)> {
        if config.name.trim().is_empty() || config.name.chars().any(char::is_control) {
            return Err((
                "name",
                "must be a non-empty name without control characters".into(),
            ));
        }
        let tiers = config
            .tiers
            .iter()
            .map(|name| {
                tier_named(name).ok_or_else(|| {
                    (
                        "tiers",
                        format!("unknown tier `{name}`; use read-only, mutating or destructive"),
                    )
                })
            })
            .collect::<Result<_, _>>()?;
        let clients = compile_patterns(&config.clients)
            .map_err(|(pattern, error)| ("clients", format!("`{pattern}`: {error}")))?;
        let pattern = match &config.pattern {
            None => None,
            Some(text) => Some(
                RegexBuilder::new(text)
                    .size_limit(MAX_PATTERN_BYTES)
                    .build()
                    .map_err(|error| ("pattern", error.to_string()))?,
            ),
        };
        Ok(Self {
            name: config.name.clone(),
            tools: config.tools.clone(),
            tiers,
            clients,
            pattern,
        })
    }

    fn matches(&self, call: CallFacts<'_>) -> bool {
        (self.tools.is_empty() || self.tools.iter().any(|tool| tool == call.tool))
            && (self.tiers.is_empty() || self.tiers.contains(&call.tier))
            && (self.clients.is_empty() || self.clients.iter().any(|p| p.matches(call.sub)))
            && self
                .pattern
                .as_ref()
                .is_none_or(|pattern| any_string_matches(pattern, call.args))
    }
}

fn tier_named(name: &str) -> Option<Tier> {
    [Tier::ReadOnly, Tier::Mutating, Tier::Destructive]
        .into_iter()
        .find(|tier| tier.as_str() == name)
}

/// Whether `pattern` is found in what the arguments would type or run, however deep: every
/// string, every string decoded from base64 (`encoding: "base64"` input), and the strings of
/// each array joined without and with spaces (keys typed one after the other, a command's
/// argv). Past [`MAX_STRINGS`] strings, yes.
fn any_string_matches(pattern: &Regex, value: &Value) -> bool {
    let mut stack = vec![value];
    let mut seen = 0usize;
    while let Some(value) = stack.pop() {
        match value {
            Value::String(text) => {
                seen += 1;
                if seen > MAX_STRINGS || readings(text).any(|t| pattern.is_match(&t)) {
                    return true;
                }
            }
            Value::Array(items) => {
                let texts: Vec<&str> = items.iter().filter_map(Value::as_str).collect();
                if texts.len() > 1
                    && [texts.concat(), texts.join(" ")]
                        .iter()
                        .any(|joined| readings(joined).any(|t| pattern.is_match(&t)))
                {
                    return true;
                }
                stack.extend(items);
            }
            Value::Object(map) => stack.extend(map.values()),
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
    false
}

/// A string as given, and as decoded from base64 when it is valid base64.
fn readings(text: &str) -> impl Iterator<Item = std::borrow::Cow<'_, str>> {
    use base64::Engine as _;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .ok()
        .map(|bytes| std::borrow::Cow::Owned(String::from_utf8_lossy(&bytes).into_owned()));
    std::iter::once(std::borrow::Cow::Borrowed(text)).chain(decoded)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn policy(toml_text: &str) -> ApprovalPolicy {
        let config: ApprovalsConfig = toml::from_str(toml_text).unwrap();
        ApprovalPolicy::compile(&config).unwrap()
    }

    fn call<'a>(tool: &'a str, tier: Tier, sub: &'a str, args: &'a Value) -> CallFacts<'a> {
        CallFacts {
            tool,
            tier,
            sub,
            args,
        }
    }

    const RULES: &str = r#"
        [[rules]]
        name = "dangerous"
        tools = ["run_command", "send_keys", "pane_batch"]
        pattern = 'rm -rf|git push|kubectl delete'

        [[rules]]
        name = "kills"
        tiers = ["destructive"]
        clients = ["agent-*"]
    "#;

    #[test]
    fn a_pattern_is_searched_in_every_string_of_the_arguments() {
        let p = policy(RULES);
        let plain = json!({"target": "%1", "command": "ls -l"});
        assert_eq!(
            p.rule_for(call("run_command", Tier::Mutating, "a", &plain)),
            None
        );
        let risky = json!({"target": "%1", "command": "cd /x && rm -rf build"});
        assert_eq!(
            p.rule_for(call("run_command", Tier::Mutating, "a", &risky)),
            Some("dangerous")
        );
        let nested = json!({"operations": [{"send_keys": {"keys": ["git push", "Enter"]}}]});
        assert_eq!(
            p.rule_for(call("pane_batch", Tier::Mutating, "a", &nested)),
            Some("dangerous")
        );
        // The same text to a tool the rule does not name is not held.
        assert_eq!(
            p.rule_for(call("capture_pane", Tier::ReadOnly, "a", &risky)),
            None
        );
    }

    #[test]
    fn text_split_or_encoded_is_read_as_it_would_be_typed() {
        use base64::Engine as _;
        let p = policy(RULES);
        let split = json!({"keys": ["echo rm -", "rf SPLIT", "Enter"]});
        assert_eq!(
            p.rule_for(call("send_keys", Tier::Mutating, "a", &split)),
            Some("dangerous")
        );
        let argv = json!({"command": ["rm", "-rf", "/x"]});
        assert_eq!(
            p.rule_for(call("run_command", Tier::Mutating, "a", &argv)),
            Some("dangerous")
        );
        let encoded = base64::engine::general_purpose::STANDARD.encode("git push --force");
        let b64 = json!({"keys": [encoded], "literal": true, "encoding": "base64"});
        assert_eq!(
            p.rule_for(call("send_keys", Tier::Mutating, "a", &b64)),
            Some("dangerous")
        );
        let plain = json!({"keys": ["ls", "Enter"]});
        assert_eq!(
            p.rule_for(call("send_keys", Tier::Mutating, "a", &plain)),
            None
        );
    }

    #[test]
    fn approvers_and_tool_names_are_checked() {
        let p = policy(
            "approvers = [\"ops-*\"]\n[[rules]]\nname = \"x\"\ntools = [\"send_keys\", \"run_comand\"]",
        );
        assert!(p.may_decide("ops-alice") && !p.may_decide("agent-1"));
        assert!(policy("").may_decide("anyone"));
        assert_eq!(
            p.unknown_tools(&["send_keys", "run_command"]),
            ["run_comand"]
        );
    }

    #[test]
    fn tiers_and_clients_narrow_a_rule() {
        let p = policy(RULES);
        let args = json!({"target": "$1"});
        assert_eq!(
            p.rule_for(call("kill_session", Tier::Destructive, "agent-7", &args)),
            Some("kills")
        );
        assert_eq!(
            p.rule_for(call("kill_session", Tier::Destructive, "ops", &args)),
            None
        );
        assert_eq!(
            p.rule_for(call("rename_session", Tier::Mutating, "agent-7", &args)),
            None
        );
    }

    #[test]
    fn too_many_strings_are_held_rather_than_half_searched() {
        let p = policy(RULES);
        let many: Vec<Value> = (0..=MAX_STRINGS)
            .map(|i| json!(format!("echo {i}")))
            .collect();
        let args = json!({"keys": many});
        assert_eq!(
            p.rule_for(call("send_keys", Tier::Mutating, "a", &args)),
            Some("dangerous")
        );
    }

    #[test]
    fn bad_rules_name_their_field() {
        let bad = |toml_text: &str| {
            let config: ApprovalsConfig = toml::from_str(toml_text).unwrap();
            ApprovalPolicy::compile(&config).unwrap_err()
        };
        let e = bad("[[rules]]\nname = \"x\"\ntiers = [\"admin\"]");
        assert_eq!((e.index, e.field), (Some(0), "tiers"));
        assert!(
            e.message.contains("read-only, mutating or destructive"),
            "{}",
            e.message
        );
        let e = bad("[[rules]]\nname = \"ok\"\n[[rules]]\nname = \"x\"\npattern = \"(\"");
        assert_eq!((e.index, e.field), (Some(1), "pattern"));
        let e = bad("[[rules]]\nname = \"\"");
        assert_eq!(e.field, "name");
        let e = bad("[[rules]]\nname = \"x\"\nclients = [\"\"]");
        assert_eq!(e.field, "clients");
    }

    #[test]
    fn no_rules_hold_nothing() {
        let p = policy("");
        assert!(p.is_empty());
        let args = json!({"command": "rm -rf /"});
        assert_eq!(
            p.rule_for(call("run_command", Tier::Mutating, "a", &args)),
            None
        );
    }
}
