//! Tools that type into panes: `send_keys` (key names, or literal text) and `paste_text`.
//!
//! Both deliver exactly what the client sent, in one body for both backends
//! ([`crate::mcp::shared_tool::MuxTool`]) on the backend's `Multiplexer::deliver`: in one tmux
//! write per call (see [`muxgate_tmux::ops::input`] for how each kind of byte gets there), or
//! in one Zellij input batch after a mark of the screen. Text that is not
//! valid UTF-8 cannot travel in a JSON string; clients send it base64-encoded with
//! `encoding: "base64"`.
//!
//! What reaches the pane is input to whatever program runs there, so both tools are
//! open-world: the program may do anything with it.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use rmcp::handler::server::common::Extension;
use rmcp::handler::server::wrapper::Parameters;

use crate::mcp::json_answer::Json;
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};

use crate::mcp::McpServer;
use crate::mcp::access::check_target;
use crate::mcp::backend::Backend;
use crate::mcp::call::CallContext;
use crate::mcp::error::ToolError;
use crate::mcp::pane_access::{PaneAccess, zellij_input_refusal};
use crate::mcp::shared_tool::{MuxTool, Reply};
use muxgate_mux::multiplexer::{InputPiece, Multiplexer};
use muxgate_tmux::ops::keys::{KEY_EXAMPLES, KeyName};
use muxgate_zellij::backend::InputStep;
use muxgate_zellij::panes::input_steps;
use muxgate_zellij::unsupported;

/// Most key names in one call.
pub(crate) const MAX_KEYS: usize = 1000;
/// Most bytes of text in one call.
pub(crate) const MAX_TEXT_BYTES: usize = 1 << 20;

/// How text arrives in a JSON string.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum TextEncoding {
    #[default]
    Utf8,
    Base64,
}

/// One string or a list of strings.
#[derive(Debug, Clone, PartialEq, Eq, JsonSchema)]
#[schemars(untagged)]
pub(crate) enum Strings {
    One(String),
    Many(Vec<String>),
}

impl Strings {
    fn items(&self) -> &[String] {
        match self {
            Strings::One(one) => std::slice::from_ref(one),
            Strings::Many(many) => many,
        }
    }
}

impl<'de> Deserialize<'de> for Strings {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct StringsVisitor;
        impl<'de> Visitor<'de> for StringsVisitor {
            type Value = Strings;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string or a list of strings")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Strings, E> {
                Ok(Strings::One(v.to_owned()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Strings, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element::<String>()? {
                    if items.len() == MAX_KEYS {
                        return Err(de::Error::custom(format!(
                            "more than {MAX_KEYS} items; split the input over several calls"
                        )));
                    }
                    items.push(item);
                }
                Ok(Strings::Many(items))
            }
        }
        deserializer.deserialize_any(StringsVisitor)
    }
}

fn yes() -> bool {
    true
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SendKeysInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Pane `%N`; a window or session: its active pane. Zellij: `[SESSION:]terminal_N`.
    pub target: String,
    #[serde(flatten)]
    pub keystrokes: Keystrokes,
}

/// What `send_keys` (and each operation of `send_keys_batch`) presses and types.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub(crate) struct Keystrokes {
    /// Sent in order: a string that is a key name (Enter, C-c, M-x, Up, Tab, BSpace, F5…) is
    /// pressed, any other string is typed exactly; literal: true types everything. E.g. "ls -la",
    /// ["C-c"], ["git status", "Enter"].
    pub keys: Strings,
    /// Type every string as text, even key names.
    #[serde(default)]
    pub literal: bool,
    /// Press Enter at the end; false for control keys (C-c) or partial input.
    #[serde(default = "yes")]
    pub enter: bool,
    /// "base64" (with `literal: true`) for bytes that are not UTF-8.
    #[serde(default)]
    pub encoding: TextEncoding,
}

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct SendKeysOutput {
    pub server: String,
    /// Zellij: the pane's session.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    pub pane_id: String,
    /// Named keys pressed, including the final Enter.
    pub keys_pressed: usize,
    /// Bytes of literal text typed.
    pub text_bytes: usize,
    /// Whether Enter was pressed at the end.
    pub enter: bool,
    /// Pass as wait_for_text `since`: output from here on counts, the echo of these keys not.
    pub output_position: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct PasteTextInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Pane `%N`; a window or session: its active pane. Zellij: `[SESSION:]terminal_N`.
    pub target: String,
    /// The text, pasted exactly (newlines kept).
    pub text: String,
    /// Bracketed paste if the program asked for it (shells then don't run each line).
    #[serde(default = "yes")]
    pub bracket: bool,
    /// "base64" for bytes that are not UTF-8.
    #[serde(default)]
    pub encoding: TextEncoding,
}

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct PasteTextOutput {
    pub server: String,
    /// Zellij: the pane's session.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    pub pane_id: String,
    /// Bytes pasted.
    pub bytes: usize,
    /// Whether bracketed paste was requested.
    pub bracket: bool,
    /// Pass as wait_for_text `since`: output from here on counts, the echo of this text not.
    pub output_position: Option<String>,
}

#[tool_router(router = input_tools, vis = "pub(crate)")]
impl McpServer {
    #[tool(
        name = "send_keys",
        description = "Type text or press keys in a pane, then Enter (unless `enter` is false).\n\n\
            In copy mode they go to copy mode (exit_copy_mode leaves it). Then wait_for_text \
            `since: output_position`, not capture_pane polling; for multi-line text prefer \
            paste_text.",
        annotations(
            title = "Send keys",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    pub(crate) async fn send_keys(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<SendKeysInput>,
    ) -> Result<Json<SendKeysOutput>, ToolError> {
        let request = KeysRequest::parse(&input.keystrokes)?;
        self.serve(&call, SendKeys { input, request })
            .await
            .map(Json)
    }

    #[tool(
        name = "paste_text",
        description = "Paste text into a pane as one paste, through a private buffer deleted at \
            once.\n\n\
            With `bracket`, shells and editors insert multi-line text whole instead of running \
            each line. No Enter is pressed: send_keys [\"Enter\"] runs it.",
        annotations(
            title = "Paste text",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    pub(crate) async fn paste_text(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<PasteTextInput>,
    ) -> Result<Json<PasteTextOutput>, ToolError> {
        let text = decode_text(&input.text, input.encoding, "text")?;
        if text.is_empty() {
            return Err(ToolError::invalid_arguments(
                "text is empty: nothing to paste",
                "pass the text to paste",
            ));
        }
        self.serve(&call, PasteText { input, text }).await.map(Json)
    }
}

/// `send_keys`'s call: its input and the keystrokes it asks for, checked.
struct SendKeys {
    input: SendKeysInput,
    request: KeysRequest,
}

impl MuxTool for SendKeys {
    type Answer = SendKeysOutput;

    fn server(&self) -> Option<&str> {
        self.input.server.as_deref()
    }

    /// Zellij has no keypad keys and types only UTF-8 text.
    fn check(&self, backend: Backend) -> Result<(), ToolError> {
        match backend {
            Backend::Tmux => check_target(&self.input.target),
            Backend::Zellij => self
                .request
                .zellij_steps(self.input.keystrokes.enter)
                .map(drop),
        }
    }

    /// On Zellij each key is pressed in Zellij's own spelling, and the position is a mark of
    /// the screen before the input.
    async fn act<A: PaneAccess>(self, _: &McpServer, access: A) -> Reply<Self> {
        let enter = self.input.keystrokes.enter;
        let scoped = access.pane(&self.input.target).await?;
        let mark = scoped
            .mux
            .deliver(&scoped.pane, &self.request.pieces(enter))
            .await
            .map_err(|e| access.error(&scoped, e))?;
        let typed = self.request.typed();
        Ok(SendKeysOutput {
            server: access.server_name().to_owned(),
            pane_id: scoped.pane.to_string(),
            keys_pressed: self.request.keys_pressed(enter),
            text_bytes: self.request.text_bytes(),
            enter,
            output_position: mark.map(|mark| access.output_position(&scoped, mark, &typed)),
            session: scoped.session,
        })
    }
}

/// The refusal of a paste that is not UTF-8 for a Zellij pane.
pub(crate) fn not_utf8_for_zellij() -> ToolError {
    ToolError::unsupported(unsupported::NOT_UTF8, "paste UTF-8 text into a Zellij pane")
}

/// `paste_text`'s call: its input and the text it pastes, decoded.
struct PasteText {
    input: PasteTextInput,
    text: Vec<u8>,
}

impl MuxTool for PasteText {
    type Answer = PasteTextOutput;

    fn server(&self) -> Option<&str> {
        self.input.server.as_deref()
    }

    /// Zellij pastes only UTF-8 text.
    fn check(&self, backend: Backend) -> Result<(), ToolError> {
        match backend {
            Backend::Tmux => check_target(&self.input.target),
            Backend::Zellij => std::str::from_utf8(&self.text)
                .map(drop)
                .map_err(|_| not_utf8_for_zellij()),
        }
    }

    /// On Zellij `bracket` sends Zellij's bracketed paste, and `bracket: false` types the text.
    async fn act<A: PaneAccess>(self, _: &McpServer, access: A) -> Reply<Self> {
        let bracket = self.input.bracket;
        let scoped = access.pane(&self.input.target).await?;
        let bytes = self.text.len();
        let typed = String::from_utf8_lossy(&self.text).into_owned();
        let paste = [InputPiece::Paste {
            text: self.text,
            bracket,
        }];
        let mark = scoped
            .mux
            .deliver(&scoped.pane, &paste)
            .await
            .map_err(|e| access.error(&scoped, e))?;
        Ok(PasteTextOutput {
            server: access.server_name().to_owned(),
            pane_id: scoped.pane.to_string(),
            bytes,
            bracket,
            output_position: mark.map(|mark| access.output_position(&scoped, mark, &typed)),
            session: scoped.session,
        })
    }
}

/// The text a `send_keys` call types (key names left out), as the pane would echo it; `None`
/// for input that is not valid.
pub(crate) fn typed_text(input: &Keystrokes) -> Option<String> {
    KeysRequest::parse(input)
        .ok()
        .map(|request| request.typed())
}

/// What a `send_keys` call asks for, validated: what to press (key names tmux knows) and
/// type, in order, before the final Enter.
#[derive(Debug, PartialEq, Eq)]
struct KeysRequest(Vec<InputPiece>);

impl KeysRequest {
    /// tmux's rule, without tmux's mangling: a string that is a key name is pressed, any other
    /// string is typed as text (`send-keys -l`, so a leading `-`, a trailing `;`, `#{` and
    /// quotes arrive as sent). With `literal` every string is text.
    fn parse(input: &Keystrokes) -> Result<Self, ToolError> {
        if input.encoding != TextEncoding::Utf8 && !input.literal {
            return Err(ToolError::invalid_arguments(
                "encoding \"base64\" needs literal: true (base64 strings are text, never key names)",
                "pass literal: true with the base64 text, or drop encoding",
            ));
        }
        let mut pieces: Vec<InputPiece> = Vec::new();
        let mut text_len = 0;
        for item in input.keys.items() {
            let key = (!input.literal)
                .then(|| KeyName::parse(item).ok())
                .flatten();
            let piece = match key {
                Some(key) => InputPiece::Key(key.as_str().to_owned()),
                None => {
                    let text = decode_text(item, input.encoding, "keys")?;
                    text_len += text.len();
                    check_text_len(text_len)?;
                    InputPiece::Text(text)
                }
            };
            match (pieces.last_mut(), piece) {
                // Adjacent texts are one text (one tmux argument instead of several).
                (Some(InputPiece::Text(before)), InputPiece::Text(more)) => before.extend(more),
                (_, InputPiece::Text(text)) if text.is_empty() => {}
                (_, piece) => pieces.push(piece),
            }
        }
        if pieces.is_empty() && !input.enter {
            return Err(ToolError::invalid_arguments(
                "keys is empty and enter is false: nothing to send",
                format!(
                    "pass the text to type (e.g. keys \"ls -la\") or key names to press \
                     ({KEY_EXAMPLES}), or enter true"
                ),
            ));
        }
        Ok(Self(pieces))
    }

    /// The text typed (key names left out), as the pane would echo it.
    fn typed(&self) -> String {
        let mut typed = Vec::new();
        for piece in &self.0 {
            if let InputPiece::Text(text) = piece {
                typed.extend_from_slice(text);
            }
        }
        String::from_utf8_lossy(&typed).into_owned()
    }

    /// Bytes of text typed.
    fn text_bytes(&self) -> usize {
        let text = |piece: &InputPiece| match piece {
            InputPiece::Text(text) => text.len(),
            _ => 0,
        };
        self.0.iter().map(text).sum()
    }

    /// Named keys pressed, the final Enter included.
    fn keys_pressed(&self, enter: bool) -> usize {
        let named = self
            .0
            .iter()
            .filter(|p| matches!(p, InputPiece::Key(_)))
            .count();
        named + usize::from(enter)
    }

    /// The pieces in order, then Enter if `enter`.
    fn pieces(&self, enter: bool) -> Vec<InputPiece> {
        let mut pieces = self.0.clone();
        if enter {
            pieces.push(InputPiece::Key(KeyName::enter().as_str().to_owned()));
        }
        pieces
    }

    /// The same input for a Zellij pane ([`input_steps`]), then Enter if `enter`.
    fn zellij_steps(&self, enter: bool) -> Result<Vec<InputStep>, ToolError> {
        input_steps(&self.pieces(enter)).map_err(zellij_input_refusal)
    }
}

/// What a `send_keys` call types, in order (Enter last if asked), and the text it types (key
/// names left out), for a batch of them.
pub(crate) fn keys_input(input: &Keystrokes) -> Result<(Vec<InputPiece>, String), ToolError> {
    let request = KeysRequest::parse(input)?;
    Ok((request.pieces(input.enter), request.typed()))
}

/// The bytes of a text argument in the given encoding.
fn decode_text(text: &str, encoding: TextEncoding, field: &str) -> Result<Vec<u8>, ToolError> {
    let bytes = match encoding {
        TextEncoding::Utf8 => text.as_bytes().to_vec(),
        TextEncoding::Base64 => STANDARD.decode(text.trim()).map_err(|e| {
            ToolError::invalid_arguments(
                format!("{field} is not valid base64: {e}"),
                "encode the bytes with standard base64 (RFC 4648, with padding)",
            )
        })?,
    };
    check_text_len(bytes.len())?;
    Ok(bytes)
}

pub(crate) fn check_text_len(len: usize) -> Result<(), ToolError> {
    if len > MAX_TEXT_BYTES {
        return Err(ToolError::invalid_arguments(
            format!("text is longer than {MAX_TEXT_BYTES} bytes"),
            "split it over several calls",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use muxgate_tmux::PaneId;
    use muxgate_tmux::typed::panes::input_plan as input_plan_of;
    use serde_json::json;

    use super::*;
    use crate::mcp::error::ToolErrorKind;

    fn input(value: serde_json::Value) -> Keystrokes {
        serde_json::from_value::<SendKeysInput>(value)
            .unwrap()
            .keystrokes
    }

    fn key(name: &str) -> InputPiece {
        InputPiece::Key(name.to_owned())
    }

    fn text(text: &str) -> InputPiece {
        InputPiece::Text(text.as_bytes().to_vec())
    }

    #[test]
    fn a_zellij_pane_gets_the_same_input_in_its_own_key_spelling() {
        let steps = |value| {
            let request = KeysRequest::parse(&input(value)).unwrap();
            request
                .zellij_steps(true)
                .map(|steps| format!("{steps:?}"))
                .map_err(|e| e.message)
        };
        assert_eq!(
            steps(json!({"target": "t", "keys": ["ls", "C-c", "Up"]})).unwrap(),
            r#"[Text("ls"), Keys([Key("Ctrl c"), Key("Up"), Key("Enter")])]"#
        );
        let keypad = steps(json!({"target": "t", "keys": ["KP0"]})).unwrap_err();
        assert!(
            keypad.contains("Zellij does not offer the key \"KP0\""),
            "{keypad}"
        );
        let bytes = json!({"target": "t", "keys": "/w==", "literal": true, "encoding": "base64"});
        assert!(steps(bytes).unwrap_err().contains("not UTF-8"));
    }

    #[test]
    fn key_names_are_pressed_and_other_strings_typed() {
        let parse = |value| KeysRequest::parse(&input(value)).unwrap().0;
        assert_eq!(
            parse(json!({"target": "%1", "keys": ["C-c", "Enter", "q"]})),
            [key("C-c"), key("Enter"), key("q")]
        );
        // The reference server's shape: one string of text, Enter by default.
        assert_eq!(
            parse(json!({"target": "%1", "keys": "echo hi"})),
            [text("echo hi")]
        );
        // What tmux would mangle arrives as sent; adjacent texts join.
        assert_eq!(
            parse(
                json!({"target": "%1", "keys": ["-n", "x;", "#{pane_id}", "C-c", "'\"", "ctrl+c"]})
            ),
            [text("-nx;#{pane_id}"), key("C-c"), text("'\"ctrl+c")]
        );
        assert_eq!(
            parse(json!({"target": "%1", "keys": ["ls ", "Enter"], "literal": true})),
            [text("ls Enter")]
        );
        assert_eq!(
            parse(json!({"target": "%1", "keys": ["", "Up"]})),
            [key("Up")]
        );
    }

    #[test]
    fn the_plan_keeps_the_order_and_ends_with_enter() {
        let request = KeysRequest::parse(&input(
            json!({"target": "%1", "keys": ["C-u", "git status", "Tab", "Tab"]}),
        ))
        .unwrap();
        let plan = input_plan_of(PaneId(1), &request.pieces(true)).unwrap();
        let lines: Vec<String> = plan
            .commands()
            .iter()
            .map(|c| String::from_utf8_lossy(c.as_bytes()).into_owned())
            .collect();
        assert_eq!(
            lines,
            [
                "send-keys -t '%1' -- 'C-u'",
                "send-keys -t '%1' -l -- 'git status'",
                "send-keys -t '%1' -- 'Tab' 'Tab' 'Enter'",
            ]
        );
        assert_eq!((plan.key_count(), plan.text_bytes()), (4, 10));
    }

    #[test]
    fn base64_carries_bytes_for_literal_text_only() {
        let text = KeysRequest::parse(&input(
            json!({"target": "%1", "keys": "/w==", "literal": true, "encoding": "base64"}),
        ))
        .unwrap();
        assert_eq!(text.0, [InputPiece::Text(vec![0xff])]);
        let err = KeysRequest::parse(&input(
            json!({"target": "%1", "keys": "Enter", "encoding": "base64"}),
        ))
        .unwrap_err();
        assert_eq!(err.kind, ToolErrorKind::InvalidArguments);
        assert!(err.message.contains("literal"), "{}", err.message);
        assert!(
            err.suggestion.contains("literal: true"),
            "{}",
            err.suggestion
        );
        let err = KeysRequest::parse(&input(
            json!({"target": "%1", "keys": "!!", "literal": true, "encoding": "base64"}),
        ))
        .unwrap_err();
        assert!(err.message.contains("base64"), "{}", err.message);
    }

    #[test]
    fn nothing_to_send_is_an_error_but_a_bare_enter_is_not() {
        let err = KeysRequest::parse(&input(json!({"target": "%1", "keys": [], "enter": false})))
            .unwrap_err();
        assert!(err.message.contains("nothing to send"));
        assert!(KeysRequest::parse(&input(json!({"target": "%1", "keys": []}))).is_ok());
    }

    #[test]
    fn strings_take_one_or_many_and_cap_the_list() {
        let one: Strings = serde_json::from_value(json!("a")).unwrap();
        assert_eq!(one.items(), ["a"]);
        let err = serde_json::from_value::<Strings>(json!(vec!["a"; MAX_KEYS + 1])).unwrap_err();
        assert!(err.to_string().contains("more than"), "{err}");
        let err = serde_json::from_value::<Strings>(json!(3)).unwrap_err();
        assert!(err.to_string().contains("a string or a list"), "{err}");
    }
}
