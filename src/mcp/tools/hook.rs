//! Read-only tools for tmux hooks: the commands tmux runs on events (a window created, a pane
//! exited…). Setting hooks is deliberately not offered: a hook keeps running commands after
//! the call and the caller are gone (see [`super::option`], which refuses them too).

use rmcp::handler::server::common::Extension;
use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::option::{OptionScope, ScopeTarget, is_hook_name, option_error, scope_target};
use crate::mcp::McpServer;
use crate::mcp::access::TmuxAccess;
use crate::mcp::call::CallContext;
use crate::mcp::error::ToolError;
use crate::mux::lines::excerpt;
use crate::mux::tmux::options::Hook;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShowHooksInput {
    #[serde(default)]
    pub server: Option<String>,
    /// session (client, session and alert events), window or pane.
    pub scope: OptionScope,
    /// Session `$N`/name, window `@N` or pane `%N`; not with `global`.
    #[serde(default)]
    pub target: Option<String>,
    /// Read the global hooks instead.
    #[serde(default)]
    pub global: bool,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShowHookInput {
    #[serde(default)]
    pub server: Option<String>,
    /// session, window or pane.
    pub scope: OptionScope,
    /// Session `$N`/name, window `@N` or pane `%N`; not with `global`.
    #[serde(default)]
    pub target: Option<String>,
    /// Read the global hook instead.
    #[serde(default)]
    pub global: bool,
    /// e.g. `after-new-window`, `pane-exited`, `session-created`.
    pub hook_name: String,
}

/// One command attached to a hook.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct HookEntry {
    /// Hook name, e.g. `after-new-window`.
    pub name: String,
    /// Position in the hook's command list.
    pub index: u32,
    /// The tmux command it runs.
    pub command: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ShowHooksOutput {
    pub server: String,
    pub scope: OptionScope,
    /// The object read (`$N`, `@N` or `%N`); absent for global hooks.
    pub target: Option<String>,
    pub global: bool,
    /// Hooks that have commands (hooks without any are left out).
    pub hooks: Vec<HookEntry>,
}

impl From<Hook> for HookEntry {
    fn from(hook: Hook) -> Self {
        Self {
            name: hook.name,
            index: hook.index,
            command: hook.command,
        }
    }
}

fn hook_scope(scope: OptionScope) -> Result<OptionScope, ToolError> {
    match scope {
        OptionScope::Server => Err(ToolError::invalid_arguments(
            "hooks belong to sessions, windows or panes (or their global defaults), not the server",
            "use scope session with global: true for server-wide events",
        )),
        other => Ok(other),
    }
}

async fn read_hooks(
    tmux: &TmuxAccess<'_>,
    place: &ScopeTarget,
    name: Option<&str>,
) -> Result<Vec<HookEntry>, ToolError> {
    let hooks = tmux
        .options()
        .hooks(&place.place(), name)
        .await
        .map_err(|e| option_error(tmux, e, |e| e, |e| e))?;
    Ok(hooks.into_iter().map(HookEntry::from).collect())
}

#[tool_router(router = hook_tools, vis = "pub(crate)")]
impl McpServer {
    #[tool(
        name = "show_hooks",
        description = "List tmux hooks that have commands (session, window, pane or global).\n\n\
            Hooks run commands on events and may explain surprising behaviour. Returns name, index \
            and command of each.",
        annotations(
            title = "Show hooks",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn show_hooks(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<ShowHooksInput>,
    ) -> Result<Json<ShowHooksOutput>, ToolError> {
        let scope = hook_scope(input.scope)?;
        let tmux = self.tmux_access(&call, input.server.as_deref()).await?;
        let place = scope_target(&tmux, scope, input.global, input.target.as_deref()).await?;
        let hooks = read_hooks(&tmux, &place, None).await?;
        Ok(Json(ShowHooksOutput {
            server: tmux.server_name().to_owned(),
            scope: place.scope,
            target: place.target,
            global: place.global,
            hooks,
        }))
    }

    #[tool(
        name = "show_hook",
        description = "Read one tmux hook's commands (session, window, pane or global).\n\n\
            An unset hook gives an empty list.",
        annotations(
            title = "Show hook",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn show_hook(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<ShowHookInput>,
    ) -> Result<Json<ShowHooksOutput>, ToolError> {
        let scope = hook_scope(input.scope)?;
        let valid_name = is_hook_name(&input.hook_name)
            && !input.hook_name.contains('[')
            && input
                .hook_name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b == b'-');
        if !valid_name {
            return Err(ToolError::invalid_arguments(
                format!("{:?} is not a tmux hook name", excerpt(&input.hook_name)),
                "call show_hooks, or use a name like after-new-window, pane-exited or session-created",
            ));
        }
        let tmux = self.tmux_access(&call, input.server.as_deref()).await?;
        let place = scope_target(&tmux, scope, input.global, input.target.as_deref()).await?;
        let hooks = read_hooks(&tmux, &place, Some(&input.hook_name))
            .await?
            .into_iter()
            .filter(|h| h.name == input.hook_name)
            .collect();
        Ok(Json(ShowHooksOutput {
            server: tmux.server_name().to_owned(),
            scope: place.scope,
            target: place.target,
            global: place.global,
            hooks,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hooks_belong_to_sessions_windows_and_panes() {
        assert!(hook_scope(OptionScope::Server).is_err());
        assert_eq!(hook_scope(OptionScope::Pane).unwrap(), OptionScope::Pane);
    }
}
