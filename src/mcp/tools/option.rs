//! Tools for tmux options and environment variables: read and set, at server, global, session,
//! window or pane level.
//!
//! Rules beyond tmux's own:
//! - hooks are options in tmux, but they run commands later, outside any call and after the
//!   caller has gone, so set_option refuses them (show_hooks reads them);
//! - values containing `#(` are refused: tmux runs the shell command inside when it expands the
//!   option as a format (status lines, titles);
//! - changing server options, global options or the global environment affects every session,
//!   so it needs access to every session on the server.

use std::collections::BTreeMap;

use muxgate_mux::lines::excerpt;
use rmcp::handler::server::common::Extension;
use rmcp::handler::server::wrapper::Parameters;

use crate::mcp::json_answer::Json;
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::support::{
    build_error, check_tmux_format, is_env_name, op_failure, require_every_session,
};
use crate::mcp::McpServer;
use crate::mcp::access::{TmuxAccess, engine_error};
use crate::mcp::call::CallContext;
use crate::mcp::error::{ToolError, ToolErrorKind};
use muxgate_tmux::typed::environment::Environment;
use muxgate_tmux::typed::op_error::OpError;
use muxgate_tmux::typed::options::{OptionError, OptionLevel, OptionPlace};

/// Which objects an option (or hook) belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum OptionScope {
    Server,
    Session,
    Window,
    Pane,
}

impl OptionScope {
    fn level(self) -> OptionLevel {
        match self {
            OptionScope::Server => OptionLevel::Server,
            OptionScope::Session => OptionLevel::Session,
            OptionScope::Window => OptionLevel::Window,
            OptionScope::Pane => OptionLevel::Pane,
        }
    }
}

/// Where an option command applies, resolved and checked against the caller's access.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ScopeTarget {
    pub scope: OptionScope,
    /// `-g`.
    pub global: bool,
    /// The `-t` id (`$N`, `@N` or `%N`), when the scope is one object.
    pub target: Option<String>,
}

impl ScopeTarget {
    /// Whether a change here reaches beyond one object (server-wide or global).
    pub(crate) fn is_shared(&self) -> bool {
        self.target.is_none()
    }

    /// The place for the typed option operations.
    pub(crate) fn place(&self) -> OptionPlace {
        OptionPlace {
            level: self.scope.level(),
            global: self.global,
            target: self.target.clone(),
        }
    }
}

/// Resolves `scope` + `global` + `target` into the object the command acts on.
pub(crate) async fn scope_target(
    tmux: &TmuxAccess<'_>,
    at: &OptionTargetArgs,
) -> Result<ScopeTarget, ToolError> {
    let scope = at.scope;
    match (scope, at.global, at.target.as_deref()) {
        (OptionScope::Server, false, None) => Ok(ScopeTarget {
            scope,
            global: false,
            target: None,
        }),
        (OptionScope::Server, _, _) => Err(ToolError::invalid_arguments(
            "server options have neither `global` nor `target`: they are server-wide",
            "omit global and target, or use scope session, window or pane",
        )),
        (_, true, None) => Ok(ScopeTarget {
            scope,
            global: true,
            target: None,
        }),
        (_, true, Some(_)) => Err(ToolError::invalid_arguments(
            "pass either global: true or a target, not both",
            "global options are defaults for every session or window; a target names one",
        )),
        (_, false, None) => Err(ToolError::invalid_arguments(
            format!(
                "{} options need a target (or global: true)",
                scope_name(scope)
            ),
            "pass a session ($N or name), window (@N) or pane (%N) id from the list tools",
        )),
        (_, false, Some(text)) => {
            let target = tmux.target(text).await?;
            let resolved = tmux.resolve(&target).await?;
            let id = match scope {
                OptionScope::Session => resolved.session_id.to_string(),
                OptionScope::Window => resolved.window_id.to_string(),
                _ => resolved.pane_id.to_string(),
            };
            Ok(ScopeTarget {
                scope,
                global: false,
                target: Some(id),
            })
        }
    }
}

fn scope_name(scope: OptionScope) -> &'static str {
    match scope {
        OptionScope::Server => "server",
        OptionScope::Session => "session",
        OptionScope::Window => "window",
        OptionScope::Pane => "pane",
    }
}

/// Hooks tmux 3.3–3.5 knows besides the `after-<command>` ones.
const HOOK_NAMES: [&str; 30] = [
    "alert-activity",
    "alert-bell",
    "alert-silence",
    "client-active",
    "client-attached",
    "client-dark-theme",
    "client-detached",
    "client-focus-in",
    "client-focus-out",
    "client-light-theme",
    "client-resized",
    "client-session-changed",
    "command-error",
    "pane-died",
    "pane-exited",
    "pane-focus-in",
    "pane-focus-out",
    "pane-mode-changed",
    "pane-set-clipboard",
    "pane-title-changed",
    "session-closed",
    "session-created",
    "session-renamed",
    "session-window-changed",
    "window-layout-changed",
    "window-linked",
    "window-pane-changed",
    "window-renamed",
    "window-resized",
    "window-unlinked",
];

/// Whether `name` (without an array index) is a tmux hook.
pub(crate) fn is_hook_name(name: &str) -> bool {
    let base = name.split('[').next().unwrap_or(name);
    base.starts_with("after-") || HOOK_NAMES.contains(&base)
}

/// Checks an option name: `name`, `@user-name`, optionally with an array index `name[3]`;
/// 1-64 characters from A-Z a-z 0-9 _ - after the optional `@`.
pub(crate) fn check_option_name(name: &str) -> Result<(), ToolError> {
    let (base, index) = match name.split_once('[') {
        Some((base, rest)) => (base, Some(rest)),
        None => (name, None),
    };
    let body = base.strip_prefix('@').unwrap_or(base);
    let valid_body = (1..=64).contains(&body.len())
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        && !body.starts_with('-');
    let valid_index = index.is_none_or(|rest| {
        rest.strip_suffix(']')
            .is_some_and(|n| (1..=4).contains(&n.len()) && n.bytes().all(|b| b.is_ascii_digit()))
    });
    if valid_body && valid_index {
        return Ok(());
    }
    Err(ToolError::invalid_arguments(
        format!(
            "option name {:?} is not valid: use a tmux option name such as status or mode-keys, or a user option such as @my-flag",
            excerpt(name)
        ),
        "check the name against tmux's option list",
    ))
}

/// The error for an option tmux does not know.
fn unknown_option(name: &str, message: &str) -> ToolError {
    ToolError::invalid_arguments(
        format!("tmux: {message}"),
        format!(
            "{:?} is not an option at this scope; check the name and the scope (server, session, window, pane)",
            excerpt(name)
        ),
    )
}

/// A failed option operation as an error for the model; tmux's "invalid option" as
/// [`unknown_option`] when `unknown` says so (given the error it would otherwise be).
pub(crate) fn option_error(
    tmux: &TmuxAccess<'_>,
    error: OptionError,
    unknown: impl FnOnce(ToolError) -> ToolError,
    other: impl FnOnce(ToolError) -> ToolError,
) -> ToolError {
    match error {
        OptionError::Op(OpError::Quote(error)) => build_error(error),
        OptionError::Op(error) => {
            other(op_failure(tmux.server_name(), error, "call list_sessions"))
        }
        OptionError::Unknown(error) => unknown(engine_error(
            tmux.server_name(),
            error,
            "call list_sessions",
        )),
    }
}

fn environment_error(tmux: &TmuxAccess<'_>, error: OpError) -> ToolError {
    op_failure(tmux.server_name(), error, "call list_sessions")
}

/// Where an option or hook is: the server, a scope and its object, or the scope's global
/// value. Every option and hook tool takes these arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct OptionTargetArgs {
    #[serde(default)]
    pub server: Option<String>,
    pub scope: OptionScope,
    /// Session `$N`/name, window `@N` or pane `%N`; not with `global` or scope server.
    #[serde(default)]
    pub target: Option<String>,
    /// The global default instead (what objects without their own value inherit).
    #[serde(default)]
    pub global: bool,
}

// `deny_unknown_fields` on the outer struct still refuses a misspelled argument: serde checks
// what the flattened place left over.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ShowOptionInput {
    #[serde(flatten)]
    pub at: OptionTargetArgs,
    /// e.g. `status`, `mode-keys`, `remain-on-exit`, or a user option `@name`.
    pub option: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ShowOptionOutput {
    pub server: String,
    pub scope: OptionScope,
    /// The object read (`$N`, `@N` or `%N`); absent for server and global options.
    pub target: Option<String>,
    pub global: bool,
    pub option: String,
    /// The value in effect (including one inherited from the global default); array options
    /// give one element per line. Absent when a user option is not set.
    pub value: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SetOptionInput {
    #[serde(flatten)]
    pub at: OptionTargetArgs,
    /// e.g. `status`, `mode-keys`, `remain-on-exit`, or a user option `@name`.
    pub option: String,
    /// The new value (no `#(`); give `value` or `unset: true`.
    #[serde(default)]
    pub value: Option<String>,
    /// Remove the value here, so the object inherits the global default.
    #[serde(default)]
    pub unset: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct SetOptionOutput {
    pub server: String,
    pub scope: OptionScope,
    pub target: Option<String>,
    pub global: bool,
    pub option: String,
    /// Whether the option was unset (rather than set).
    pub unset: bool,
}

/// Which environment: the server's global one or a session's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum EnvironmentScope {
    Global,
    Session,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ShowEnvironmentInput {
    #[serde(default)]
    pub server: Option<String>,
    /// global, or session (overrides global for its new panes).
    pub scope: EnvironmentScope,
    /// With scope session: the session (`$N` or name).
    #[serde(default)]
    pub target: Option<String>,
    /// Only this variable.
    #[serde(default)]
    pub name: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ShowEnvironmentOutput {
    pub server: String,
    pub scope: EnvironmentScope,
    /// The session read (`$N`); absent for the global environment.
    pub target: Option<String>,
    /// Variables and values.
    pub variables: BTreeMap<String, String>,
    /// Variables marked for removal: new panes do not get them even if the global
    /// environment has them.
    pub removed: Vec<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SetEnvironmentInput {
    #[serde(default)]
    pub server: Option<String>,
    /// global, or session (overrides global for its new panes).
    pub scope: EnvironmentScope,
    /// With scope session: the session (`$N` or name).
    #[serde(default)]
    pub target: Option<String>,
    /// Variable name (letters, digits, _; not starting with a digit).
    pub name: String,
    /// The value; give `value` or `unset: true`.
    #[serde(default)]
    pub value: Option<String>,
    /// Remove the variable.
    #[serde(default)]
    pub unset: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct SetEnvironmentOutput {
    pub server: String,
    pub scope: EnvironmentScope,
    pub target: Option<String>,
    pub name: String,
    /// Whether the variable was removed (rather than set). The value is not echoed.
    pub unset: bool,
}

/// The `-g` / `-t $N` of an environment command.
async fn environment_target(
    tmux: &TmuxAccess<'_>,
    scope: EnvironmentScope,
    target: Option<&str>,
) -> Result<Option<String>, ToolError> {
    match (scope, target) {
        (EnvironmentScope::Global, None) => Ok(None),
        (EnvironmentScope::Global, Some(_)) => Err(ToolError::invalid_arguments(
            "the global environment takes no target",
            "omit target, or use scope session",
        )),
        (EnvironmentScope::Session, None) => Err(ToolError::invalid_arguments(
            "scope session needs a target",
            "pass the session's id ($N) or name",
        )),
        (EnvironmentScope::Session, Some(text)) => {
            let resolved = tmux.resolve(&tmux.target(text).await?).await?;
            Ok(Some(resolved.session_id.to_string()))
        }
    }
}

fn check_env_name(name: &str) -> Result<(), ToolError> {
    if is_env_name(name) {
        Ok(())
    } else {
        Err(ToolError::invalid_arguments(
            format!(
                "variable name {:?} is not valid: use letters, digits and _ (not starting with a digit)",
                excerpt(name)
            ),
            "pass a name such as PATH or MY_VAR",
        ))
    }
}

#[tool_router(router = option_tools, vis = "pub(crate)")]
impl McpServer {
    #[tool(
        name = "show_option",
        description = "Read one tmux option: server, session, window, pane, or global default.\n\n\
            Returns the value in effect, inherited from the global default if the object has none; \
            none for an unset `@name`.",
        annotations(
            title = "Show option",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn show_option(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<ShowOptionInput>,
    ) -> Result<Json<ShowOptionOutput>, ToolError> {
        check_option_name(&input.option)?;
        let tmux = self.tmux_access(&call, input.at.server.as_deref()).await?;
        let place = scope_target(&tmux, &input.at).await?;
        let value = tmux
            .options()
            .show(&place.place(), &input.option)
            .await
            .map_err(|e| {
                option_error(
                    &tmux,
                    e,
                    |e| unknown_option(&input.option, &e.message),
                    |e| e,
                )
            })?;
        Ok(Json(ShowOptionOutput {
            server: tmux.server_name().to_owned(),
            scope: place.scope,
            target: place.target,
            global: place.global,
            option: input.option,
            value,
        }))
    }

    #[tool(
        name = "set_option",
        description = "Set or unset one tmux option (server, session, window, pane or global).\n\n\
            Humans may see the change (status line, colours, keys). Server and global changes need \
            access to every session. Refused: hooks (see show_hooks) and values containing `#(`.",
        annotations(
            title = "Set option",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn set_option(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<SetOptionInput>,
    ) -> Result<Json<SetOptionOutput>, ToolError> {
        check_option_name(&input.option)?;
        if is_hook_name(&input.option) {
            return Err(ToolError::new(
                ToolErrorKind::Forbidden,
                format!(
                    "{:?} is a hook: hooks run commands later, outside any call, and cannot be set through the gateway",
                    excerpt(&input.option)
                ),
                "run the command directly instead (send_keys, run_command); show_hooks reads hooks",
            ));
        }
        match (&input.value, input.unset) {
            (Some(_), true) | (None, false) => {
                return Err(ToolError::invalid_arguments(
                    "pass either value or unset: true",
                    "value sets the option; unset removes it at this level",
                ));
            }
            // Option values (status-left, window-status-format …) are expanded as formats
            // later, on every redraw.
            (Some(value), false) => check_tmux_format(value, "value")?,
            _ => {}
        }
        let tmux = self.tmux_access(&call, input.at.server.as_deref()).await?;
        let place = scope_target(&tmux, &input.at).await?;
        if place.is_shared() {
            require_every_session(&tmux, "a server or global option")?;
        }
        tmux.options()
            .set(&place.place(), &input.option, input.value.as_deref())
            .await
            .map_err(|e| {
                option_error(
                    &tmux,
                    e,
                    |e| match e.kind {
                        ToolErrorKind::Conflict => unknown_option(&input.option, &e.message),
                        _ => e,
                    },
                    |e| match e.kind {
                        ToolErrorKind::Conflict => ToolError::invalid_arguments(
                            e.message,
                            "check the value's type (on/off, a number, a colour...) with show_option",
                        ),
                        _ => e,
                    },
                )
            })?;
        Ok(Json(SetOptionOutput {
            server: tmux.server_name().to_owned(),
            scope: place.scope,
            target: place.target,
            global: place.global,
            option: input.option,
            unset: input.unset,
        }))
    }

    #[tool(
        name = "show_environment",
        description = "Read the tmux environment new panes get: global or a session's.\n\n\
            Returns variables and those marked removed. Running panes keep theirs.",
        annotations(
            title = "Show environment",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn show_environment(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<ShowEnvironmentInput>,
    ) -> Result<Json<ShowEnvironmentOutput>, ToolError> {
        if let Some(name) = &input.name {
            check_env_name(name)?;
        }
        let tmux = self.tmux_access(&call, input.server.as_deref()).await?;
        let target = environment_target(&tmux, input.scope, input.target.as_deref()).await?;
        let Environment { variables, removed } = tmux
            .environment()
            .show(target.as_deref(), input.name.as_deref())
            .await
            .map_err(|e| environment_error(&tmux, e))?;
        Ok(Json(ShowEnvironmentOutput {
            server: tmux.server_name().to_owned(),
            scope: input.scope,
            target,
            variables,
            removed,
        }))
    }

    #[tool(
        name = "set_environment",
        description = "Set or remove a variable in the tmux environment new panes get.\n\n\
            Running programs are not affected (send a shell an export instead). Global needs \
            access to every session. The value is not echoed.",
        annotations(
            title = "Set environment",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn set_environment(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<SetEnvironmentInput>,
    ) -> Result<Json<SetEnvironmentOutput>, ToolError> {
        check_env_name(&input.name)?;
        if input.value.is_some() == input.unset {
            return Err(ToolError::invalid_arguments(
                "pass either value or unset: true",
                "value sets the variable; unset removes it",
            ));
        }
        let tmux = self.tmux_access(&call, input.server.as_deref()).await?;
        let target = environment_target(&tmux, input.scope, input.target.as_deref()).await?;
        if target.is_none() {
            require_every_session(&tmux, "the global environment")?;
        }
        tmux.environment()
            .set(target.as_deref(), &input.name, input.value.as_deref())
            .await
            .map_err(|e| environment_error(&tmux, e))?;
        Ok(Json(SetEnvironmentOutput {
            server: tmux.server_name().to_owned(),
            scope: input.scope,
            target,
            name: input.name,
            unset: input.unset,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shared_place_arguments_are_listed_and_misspellings_still_refused() {
        let args = |extra: (&str, serde_json::Value)| {
            let mut args = serde_json::json!({"scope": "session", "option": "status"});
            args[extra.0] = extra.1;
            serde_json::from_value::<SetOptionInput>(args)
        };
        let input = args(("global", true.into())).unwrap();
        assert!(input.at.global && input.at.scope == OptionScope::Session);
        let error = args(("gloabl", true.into())).unwrap_err().to_string();
        assert!(error.contains("unknown field `gloabl`"), "{error}");

        let tool = crate::mcp::catalog::tools()
            .into_iter()
            .find(|tool| tool.name == "set_option")
            .unwrap();
        let properties = tool.input_schema["properties"].as_object().unwrap();
        let names: Vec<&str> = properties.keys().map(String::as_str).collect();
        for name in [
            "server", "scope", "target", "global", "option", "value", "unset",
        ] {
            assert!(names.contains(&name), "{name} not in {names:?}");
        }
        assert_eq!(tool.input_schema["additionalProperties"], false);
        assert_eq!(
            tool.input_schema["required"],
            serde_json::json!(["scope", "option"])
        );
    }

    #[test]
    fn option_names() {
        for good in [
            "status",
            "mode-keys",
            "@my_flag",
            "status-format[1]",
            "@x-1",
        ] {
            assert!(check_option_name(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "@",
            "-g",
            "a b",
            "x;y",
            "status[",
            "status[x]",
            "s[12345]",
            "#{x}",
        ] {
            assert!(check_option_name(bad).is_err(), "{bad:?}");
        }
        assert!(is_hook_name("after-new-window"));
        assert!(is_hook_name("pane-died[0]"));
        assert!(is_hook_name("session-created"));
        assert!(!is_hook_name("pane-border-style"));
        assert!(!is_hook_name("window-size"));
    }
}
