//! Read-only tools for tmux hooks: the commands tmux runs on events (a window created, a pane
//! exited…). Setting hooks is deliberately not offered: a hook keeps running commands after
//! the call and the caller are gone (see [`super::option`], which refuses them too).

use muxgate_mux::lines::excerpt;
use rmcp::handler::server::common::Extension;
use rmcp::handler::server::wrapper::Parameters;

use crate::mcp::json_answer::Json;
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::option::{
    OptionScope, OptionTargetArgs, ScopeTarget, is_hook_name, option_error, scope_target,
};
use crate::mcp::McpServer;
use crate::mcp::access::TmuxAccess;
use crate::mcp::call::CallContext;
use crate::mcp::error::ToolError;
use muxgate_tmux::typed::options::Hook;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ShowHooksInput {
    #[serde(flatten)]
    pub at: OptionTargetArgs,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ShowHookInput {
    #[serde(flatten)]
    pub at: OptionTargetArgs,
    /// e.g. `after-new-window`, `pane-exited`, `session-created`.
    pub hook_name: String,
}

/// One command attached to a hook.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub(crate) struct HookEntry {
    /// Hook name, e.g. `after-new-window`.
    pub name: String,
    /// Position in the hook's command list.
    pub index: u32,
    /// The tmux command it runs.
    pub command: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ShowHooksOutput {
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

fn check_hook_scope(scope: OptionScope) -> Result<(), ToolError> {
    match scope {
        OptionScope::Server => Err(ToolError::invalid_arguments(
            "hooks belong to sessions, windows or panes (or their global defaults), not the server",
            "use scope session with global: true for server-wide events",
        )),
        _ => Ok(()),
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
            Hooks run commands on events and may explain surprising behaviour; client, session \
            and alert events are session hooks. Returns name, index and command of each.",
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
        self.hooks_at(&call, &input.at, None).await.map(Json)
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
        self.hooks_at(&call, &input.at, Some(&input.hook_name))
            .await
            .map(Json)
    }
}

impl McpServer {
    /// The hooks at `at` that have commands; with `name`, only that hook's.
    async fn hooks_at(
        &self,
        call: &CallContext,
        at: &OptionTargetArgs,
        name: Option<&str>,
    ) -> Result<ShowHooksOutput, ToolError> {
        check_hook_scope(at.scope)?;
        let tmux = self.tmux_access(call, at.server.as_deref()).await?;
        let place = scope_target(&tmux, at).await?;
        let mut hooks = read_hooks(&tmux, &place, name).await?;
        hooks.retain(|hook| name.is_none_or(|name| hook.name == name));
        Ok(ShowHooksOutput {
            server: tmux.server_name().to_owned(),
            scope: place.scope,
            target: place.target,
            global: place.global,
            hooks,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hooks_belong_to_sessions_windows_and_panes() {
        assert!(check_hook_scope(OptionScope::Server).is_err());
        assert!(check_hook_scope(OptionScope::Pane).is_ok());
    }
}
