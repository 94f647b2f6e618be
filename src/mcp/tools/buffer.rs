//! Paste buffers owned by the caller: load, paste, show, delete.
//!
//! A client names its buffers with a logical name (`[A-Za-z0-9_.-]{1,64}`); the tmux buffer
//! is `muxgate_<tag>_<logical>`, where the tag is derived from the client's identity
//! ([`muxgate_tmux::ops::buffer`]). A client therefore reaches only buffers it loaded
//! itself: never a human's, never another client's.
//!
//! There is deliberately no `list_buffers`: tmux's buffer list holds the human's copy-mode
//! selections and clipboard history (passwords, tokens) and is not the gateway's to show.
//! A client knows the names it loaded.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use muxgate_mux::lines::truncation_marker;
use rmcp::handler::server::common::Extension;
use rmcp::handler::server::wrapper::Parameters;

use crate::mcp::json_answer::Json;
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::input::TextEncoding;
use super::pane::default_max_lines;
use super::support::op_failure;
use crate::mcp::McpServer;
use crate::mcp::access::{TmuxAccess, engine_error, list_hint};
use crate::mcp::call::CallContext;
use crate::mcp::error::{ToolError, ToolErrorKind};
use crate::mcp::pane_ops::{check_max_lines, quote_error};
use muxgate_tmux::ops::buffer::LogicalBufferName;
use muxgate_tmux::typed::buffers::BufferError;
use muxgate_tmux::typed::op_error::OpError;

/// Most bytes one buffer may hold when loaded through the gateway.
pub(crate) const MAX_BUFFER_BYTES: usize = 1 << 20;

fn yes() -> bool {
    true
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct LoadBufferInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Your name for it: 1-64 of A-Z a-z 0-9 _ . -
    pub logical_name: String,
    /// The content.
    pub content: String,
    /// "utf8" (default), or "base64" for bytes that are not UTF-8.
    #[serde(default)]
    pub encoding: TextEncoding,
}

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct LoadBufferOutput {
    pub server: String,
    pub logical_name: String,
    /// Bytes stored.
    pub bytes: usize,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct PasteBufferInput {
    #[serde(default)]
    pub server: Option<String>,
    /// A buffer you loaded with load_buffer.
    pub logical_name: String,
    /// Pane `%N`; a window or session: its active pane.
    pub target: String,
    /// Bracketed paste when the program in the pane asked for it.
    #[serde(default = "yes")]
    pub bracket: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct PasteBufferOutput {
    pub server: String,
    pub logical_name: String,
    pub pane_id: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ShowBufferInput {
    #[serde(default)]
    pub server: Option<String>,
    /// A buffer you loaded with load_buffer.
    pub logical_name: String,
    /// "utf8" (default) as text, or "base64" for the exact bytes.
    #[serde(default)]
    pub encoding: TextEncoding,
    /// Most lines returned as text (the last are kept).
    #[serde(default = "default_max_lines")]
    pub max_lines: usize,
}

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ShowBufferOutput {
    pub server: String,
    pub logical_name: String,
    /// The content (text, or base64 with encoding base64).
    pub content: String,
    /// Size of the whole buffer in bytes.
    pub bytes: usize,
    /// Whether `content` is not the whole buffer (lines cut by `max_lines` behind a marker
    /// line, or the front cut by your output budget).
    pub truncated: bool,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct DeleteBufferInput {
    #[serde(default)]
    pub server: Option<String>,
    /// A buffer you loaded with load_buffer.
    pub logical_name: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct DeleteBufferOutput {
    pub server: String,
    pub logical_name: String,
    /// false when there was no such buffer (nothing to delete).
    pub deleted: bool,
}

#[tool_router(router = buffer_tools, vis = "pub(crate)")]
impl McpServer {
    #[tool(
        name = "load_buffer",
        description = "Store text in a paste buffer private to you, by name, for paste_buffer.\n\n\
            The same name replaces it; kept until deleted or the server exits. To paste once, use \
            paste_text.",
        annotations(
            title = "Load buffer",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn load_buffer(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<LoadBufferInput>,
    ) -> Result<Json<LoadBufferOutput>, ToolError> {
        let tmux = self.tmux_access(&call, input.server.as_deref()).await?;
        let name = logical(&input.logical_name)?;
        let content = match input.encoding {
            TextEncoding::Utf8 => input.content.into_bytes(),
            TextEncoding::Base64 => STANDARD.decode(input.content.trim()).map_err(|e| {
                ToolError::invalid_arguments(
                    format!("content is not valid base64: {e}"),
                    "encode the bytes with standard base64 (RFC 4648, with padding)",
                )
            })?,
        };
        if content.len() > MAX_BUFFER_BYTES {
            return Err(ToolError::invalid_arguments(
                format!("content is longer than {MAX_BUFFER_BYTES} bytes"),
                "store less, or split it over several buffers",
            ));
        }
        if let Some(offset) = memchr::memchr(0, &content) {
            return Err(ToolError::invalid_arguments(
                format!(
                    "content contains a NUL byte at offset {offset}, which tmux cannot receive"
                ),
                "remove NUL bytes (send them to a pane with send_keys as the key C-@)",
            ));
        }
        tmux.buffers()
            .load(&name, &content)
            .await
            .map_err(|e| buffer_error(&tmux, e, "call list_servers", &name))?;
        Ok(Json(LoadBufferOutput {
            server: tmux.server_name().to_owned(),
            logical_name: name.as_str().to_owned(),
            bytes: content.len(),
        }))
    }

    #[tool(
        name = "paste_buffer",
        description = "Paste one of your buffers (load_buffer) into a pane; the buffer is kept.\n\n\
            No Enter is pressed after it.",
        annotations(
            title = "Paste buffer",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn paste_buffer(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<PasteBufferInput>,
    ) -> Result<Json<PasteBufferOutput>, ToolError> {
        let tmux = self.tmux_access(&call, input.server.as_deref()).await?;
        let name = logical(&input.logical_name)?;
        let target = tmux.target(&input.target).await?;
        let pane = tmux.pane_of(&target).await?;
        tmux.buffers()
            .paste(&name, pane, input.bracket)
            .await
            .map_err(|e| buffer_error(&tmux, e, list_hint(&target), &name))?;
        Ok(Json(PasteBufferOutput {
            server: tmux.server_name().to_owned(),
            logical_name: name.as_str().to_owned(),
            pane_id: pane.to_string(),
        }))
    }

    #[tool(
        name = "show_buffer",
        description = "Read one of your buffers (load_buffer) back, exactly as stored.\n\n\
            As text (the last `max_lines` lines) or base64 bytes.",
        annotations(
            title = "Show buffer",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn show_buffer(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<ShowBufferInput>,
    ) -> Result<Json<ShowBufferOutput>, ToolError> {
        let tmux = self.tmux_access(&call, input.server.as_deref()).await?;
        let name = logical(&input.logical_name)?;
        let max_lines = check_max_lines(input.max_lines)?;
        let bytes = tmux.buffers().read(&name).await.map_err(|e| match e {
            BufferError::Op(OpError::Engine(e)) => {
                engine_error(tmux.server_name(), e, "call list_panes")
            }
            e => buffer_error(&tmux, e, "call load_buffer first", &name),
        })?;
        let (content, truncated) = match input.encoding {
            TextEncoding::Base64 => {
                // Base64 grows 4/3 and a tool result carries it twice (nothing in it is
                // escaped): keep the tail that fits what is left once encoded.
                let left = tmux
                    .call
                    .output
                    .remaining(tmux.limits.max_output_bytes(tmux.call.sub()));
                let start = bytes.len().saturating_sub(left / 8 * 3);
                let encoded = STANDARD.encode(&bytes[start..]);
                tmux.call.output.charge(2 * encoded.len());
                (encoded, start > 0)
            }
            TextEncoding::Utf8 => {
                let (text, cut) = tail_lines(&String::from_utf8_lossy(&bytes), max_lines);
                let (text, dropped) = tmux.budget().cap_output(&text);
                (text, cut || dropped > 0)
            }
        };
        Ok(Json(ShowBufferOutput {
            server: tmux.server_name().to_owned(),
            logical_name: name.as_str().to_owned(),
            content,
            bytes: bytes.len(),
            truncated,
        }))
    }

    #[tool(
        name = "delete_buffer",
        description = "Delete one of your buffers (load_buffer).\n\n\
            A missing buffer gives `deleted: false`.",
        annotations(
            title = "Delete buffer",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn delete_buffer(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<DeleteBufferInput>,
    ) -> Result<Json<DeleteBufferOutput>, ToolError> {
        let tmux = self.tmux_access(&call, input.server.as_deref()).await?;
        let name = logical(&input.logical_name)?;
        let deleted = tmux
            .buffers()
            .delete(&name)
            .await
            .map_err(|e| buffer_error(&tmux, e, "call list_servers", &name))?;
        Ok(Json(DeleteBufferOutput {
            server: tmux.server_name().to_owned(),
            logical_name: name.as_str().to_owned(),
            deleted,
        }))
    }
}

fn logical(name: &str) -> Result<LogicalBufferName, ToolError> {
    LogicalBufferName::parse(name).map_err(|e| {
        ToolError::invalid_arguments(e.to_string(), "use the logical_name you gave load_buffer")
    })
}

/// A failed buffer operation as an error for the model: engine failures suggest `list_hint`,
/// a missing buffer is not found under its logical name.
fn buffer_error(
    tmux: &TmuxAccess<'_>,
    error: BufferError,
    list_hint: &str,
    name: &LogicalBufferName,
) -> ToolError {
    match error {
        BufferError::Op(OpError::Quote(error)) => quote_error(error),
        BufferError::Op(OpError::Unanswered) => ToolError::new(
            ToolErrorKind::Unavailable,
            "tmux did not answer show-buffer",
            "retry",
        ),
        BufferError::Op(error) => op_failure(tmux.server_name(), error, list_hint),
        BufferError::Missing => ToolError::not_found(
            format!("you have no buffer named {:?}", name.as_str()),
            "call load_buffer first (buffers vanish when the tmux server restarts)",
        ),
    }
}

/// `text` as is, or its last `max_lines` lines behind a truncation marker.
fn tail_lines(text: &str, max_lines: usize) -> (String, bool) {
    let lines: Vec<&str> = text.split('\n').collect();
    if lines.len() <= max_lines {
        return (text.to_owned(), false);
    }
    let cut = lines.len() - max_lines;
    let tail = lines[cut..].join("\n");
    (format!("{}\n{tail}", truncation_marker(cut)), true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_exact_unless_too_long() {
        assert_eq!(tail_lines("a\nb\n", 3), ("a\nb\n".to_owned(), false));
        assert_eq!(
            tail_lines("a\nb\nc", 2),
            ("[... 1 lines truncated ...]\nb\nc".to_owned(), true)
        );
    }
}
