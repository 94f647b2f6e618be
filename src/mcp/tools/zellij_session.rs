//! Read-only Zellij tools that show the workspace before acting: the Zellij halves of
//! `list_sessions` and `list_panes`, and the attached clients and the live
//! layout (list_servers names the Zellij servers too). None changes anything or moves focus.

use rmcp::handler::server::common::Extension;
use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::pane::{ListPanesInput, ListPanesOutput};
use super::session::{ListSessionsInput, ListSessionsOutput};
use super::support::name_filter;
use super::zellij_objects::ZELLIJ_PANE_FIELDS;
use super::zellij_objects::{ZellijClientInfo, ZellijPaneInfo};
use crate::mcp::McpServer;
use crate::mcp::call::CallContext;
use crate::mcp::error::ToolError;
use crate::mcp::fields::object;
use crate::mcp::filter::Filters;
use crate::mcp::zellij_access::ZellijAccess;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ZellijSessionInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Session; omit for the default.
    #[serde(default)]
    pub session: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ZellijListClientsOutput {
    pub server: String,
    pub session: String,
    /// Attached clients (humans' terminals); empty when nobody is attached.
    pub clients: Vec<ZellijClientInfo>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ZellijDumpLayoutOutput {
    pub server: String,
    pub session: String,
    /// The live layout in Zellij's KDL layout format.
    pub layout: String,
    /// Bytes cut from the start to respect your output limit.
    pub truncated_bytes: usize,
}

impl ZellijAccess<'_> {
    /// `list_sessions` on a Zellij server: each session you may see as its name, age and
    /// whether it exited. The `name` filter applies as on tmux; Zellij sessions carry no
    /// owner tag (`created_by_you` is false for all) and no per-session client count, so
    /// `attached` and `fields` are refused rather than ignored.
    pub(crate) async fn list_sessions(
        &self,
        input: ListSessionsInput,
    ) -> Result<ListSessionsOutput, ToolError> {
        let filters = input.filters.as_ref();
        let name = name_filter(filters.and_then(|f| f.name.as_deref()))?;
        let only_yours = filters.and_then(|f| f.created_by_you) == Some(true);
        let sessions = self
            .backend
            .list_sessions()
            .await
            .map_err(|e| self.error(e))?
            .into_iter()
            .filter(|s| self.can_see(&s.name) && !only_yours)
            .filter(|s| name.as_ref().is_none_or(|p| p.matches(s.name.as_str())))
            .map(|s| {
                Map::from_iter([
                    ("name".to_owned(), Value::from(s.name.to_string())),
                    ("created_ago".to_owned(), Value::from(s.created_ago)),
                    ("exited".to_owned(), Value::from(s.exited)),
                ])
            })
            .collect();
        Ok(ListSessionsOutput {
            server: self.server_name().to_owned(),
            sessions,
        })
    }

    /// `list_panes` on a Zellij server: the panes of one session (`target`, default the
    /// server's), as Zellij describes them. `filters` match those rows' fields (a tab:
    /// `{"tab_id": 2}`); plugin panes (tab bar, status bar) are left out unless a filter names
    /// `plugin`. `fields` is refused: a Zellij row is always whole.
    pub(crate) async fn list_panes(
        &self,
        input: ListPanesInput,
    ) -> Result<ListPanesOutput, ToolError> {
        let filters = match &input.filters {
            Some(filters) => Filters::parse(filters, ZELLIJ_PANE_FIELDS, "list_panes")?,
            None => Filters::default(),
        };
        let with_plugins = input
            .filters
            .as_ref()
            .is_some_and(|f| f.keys().any(|k| k.split("__").next() == Some("plugin")));
        let session = self.session(input.target.as_deref())?;
        let panes = self
            .backend
            .list_panes(&session)
            .await
            .map_err(|e| self.error(e))?
            .into_iter()
            .filter(|p| with_plugins || p.is_user_terminal())
            .map(|p| object(&ZellijPaneInfo::from(p)))
            .filter(|row| match row {
                Ok(row) => filters.matches(row),
                Err(_) => true,
            })
            .collect::<Result<_, _>>()?;
        Ok(ListPanesOutput {
            server: self.server_name().to_owned(),
            session: Some(session.to_string()),
            panes,
        })
    }
}

#[tool_router(router = zellij_session_tools, vis = "pub(crate)")]
impl McpServer {
    #[tool(
        name = "zellij_list_clients",
        description = "List the clients (humans' terminals) attached to a Zellij session and the pane each has focused.\n\n\
            Empty when nobody is attached.",
        annotations(
            title = "List Zellij clients",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn zellij_list_clients(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<ZellijSessionInput>,
    ) -> Result<Json<ZellijListClientsOutput>, ToolError> {
        let z = self.zellij_access(&call, input.server.as_deref()).await?;
        let session = z.session(input.session.as_deref())?;
        let clients = z
            .backend
            .list_clients(&session)
            .await
            .map_err(|e| z.error(e))?
            .into_iter()
            .map(ZellijClientInfo::from)
            .collect();
        Ok(Json(ZellijListClientsOutput {
            server: z.server_name().to_owned(),
            session: session.to_string(),
            clients,
        }))
    }

    #[tool(
        name = "zellij_dump_layout",
        description = "Return the live layout of a Zellij session as KDL (tabs, panes, splits, commands, cwd).\n\n\
            `focus=true` marks the focused tab and panes. Has no ids (see list_panes).",
        annotations(
            title = "Dump Zellij layout",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn zellij_dump_layout(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<ZellijSessionInput>,
    ) -> Result<Json<ZellijDumpLayoutOutput>, ToolError> {
        let z = self.zellij_access(&call, input.server.as_deref()).await?;
        let session = z.session(input.session.as_deref())?;
        let layout = z
            .backend
            .dump_layout(&session)
            .await
            .map_err(|e| z.error(e))?;
        let (layout, truncated_bytes) = z.budget().cap_output(&layout);
        Ok(Json(ZellijDumpLayoutOutput {
            server: z.server_name().to_owned(),
            session: session.to_string(),
            layout,
            truncated_bytes,
        }))
    }
}
