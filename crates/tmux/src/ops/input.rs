//! Input for a pane — keys, literal text, pastes — as the tmux commands that deliver it.
//!
//! An [`InputPlan`] collects the steps for one pane and turns them into commands meant to run
//! as ONE `;`-chained line (one write, nothing after a failure). How each kind of input gets
//! there byte for byte:
//! - key names: one `send-keys -t %N -- <key>…` (names validated by [`crate::ops::keys`]);
//! - literal text that is valid UTF-8: `send-keys -t %N -l -- <text>`; control bytes arrive
//!   unchanged (quoting writes them as octal escapes);
//! - literal text that is not valid UTF-8: `send-keys -l` turns text into keys one UTF-8
//!   character at a time, and how it writes a "key" that is no character is up to the tmux
//!   version (3.3a happens to write the raw byte). Such text goes through a transient buffer
//!   instead, `set-buffer -b <name> -- <bytes>` then `paste-buffer -d -r -b <name> -t %N`,
//!   which writes the bytes to the pane as they are and deletes the buffer;
//! - NUL bytes, which no tmux argument can hold: the key `C-@`, which types exactly one NUL;
//! - pastes: the transient-buffer route with `-p` (bracketed paste markers when the program in
//!   the pane asked for them) and `-r` (no newline translation).
//!
//! Transient buffers are named by the caller (see [`crate::ops::buffer::transient_buffer_name`]) and
//! listed in the plan, so that whoever runs it can delete the ones a failed line left behind.
//! Pure: builds commands, runs nothing.

use crate::ops::keys::KeyName;
use crate::wire::command::TmuxCommand;
use crate::wire::ids::PaneId;
use crate::wire::quote::QuoteError;

/// What ends a bracketed paste: text after it inside the paste reaches the program as if
/// typed (a shell runs it).
const PASTE_END: &[u8] = b"\x1b[201~";

/// Why input cannot be turned into commands.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    /// The text of a bracketed paste holds a NUL byte.
    #[error(
        "a bracketed paste cannot carry NUL bytes (offset {offset}); paste with bracket false, or send NUL as the key C-@"
    )]
    NulInBracketedPaste {
        /// Byte offset of the first NUL in the text.
        offset: usize,
    },
    /// The text of a bracketed paste holds the end marker `ESC [201~`.
    #[error(
        "the text contains the bracketed-paste end marker ESC [201~ (offset {offset}): the program would take what follows it as typed input, not pasted text; remove it, or paste with bracket false"
    )]
    PasteEndInBracketedPaste {
        /// Byte offset of the first marker in the text.
        offset: usize,
    },
    /// An argument cannot be put on a tmux command line.
    #[error(transparent)]
    Quote(#[from] QuoteError),
}

/// The commands that deliver some input to one pane, in order.
#[derive(Debug, Clone)]
pub struct InputPlan {
    pane: PaneId,
    commands: Vec<TmuxCommand>,
    transient_buffers: Vec<String>,
    /// Bytes of text (literal or pasted) and number of keys, for reports.
    text_bytes: usize,
    keys: usize,
}

impl InputPlan {
    /// An empty plan for input to `pane`.
    pub fn new(pane: PaneId) -> Self {
        Self {
            pane,
            commands: Vec::new(),
            transient_buffers: Vec::new(),
            text_bytes: 0,
            keys: 0,
        }
    }

    /// The pane the input is for.
    pub fn pane(&self) -> PaneId {
        self.pane
    }

    /// Presses keys, in order, with one `send-keys`.
    pub fn keys(&mut self, keys: &[KeyName]) -> Result<&mut Self, InputError> {
        self.press(keys)?;
        self.keys += keys.len();
        Ok(self)
    }

    fn press(&mut self, keys: &[KeyName]) -> Result<(), InputError> {
        if keys.is_empty() {
            return Ok(());
        }
        let mut command = TmuxCommand::new("send-keys")
            .target(self.pane)
            .end_of_options();
        for key in keys {
            command = command.arg(key.as_str());
        }
        self.commands.push(command.build()?);
        Ok(())
    }

    /// Types `text` exactly. `buffer_name` is called for each run of bytes that is not valid
    /// UTF-8 (each needs its own transient buffer).
    pub fn literal(
        &mut self,
        text: &[u8],
        mut buffer_name: impl FnMut() -> String,
    ) -> Result<&mut Self, InputError> {
        self.text_bytes += text.len();
        for segment in split_nul(text) {
            match segment {
                Segment::Nuls(n) => self.nuls(n)?,
                Segment::Text(bytes) => match std::str::from_utf8(bytes) {
                    Ok(utf8) => {
                        let command = TmuxCommand::new("send-keys")
                            .target(self.pane)
                            .flag("-l")
                            .end_of_options()
                            .arg(utf8)
                            .build()?;
                        self.commands.push(command);
                    }
                    Err(_) => self.through_buffer(bytes, false, buffer_name())?,
                },
            }
        }
        Ok(self)
    }

    /// Pastes `text` through a transient buffer named `buffer_name`. With `bracket`, tmux wraps
    /// it in bracketed-paste markers if the program in the pane enabled that mode; NUL bytes
    /// are then refused. Without `bracket`, NUL bytes are typed as `C-@` between pastes (each
    /// further run after a NUL calls `buffer_name` again).
    pub fn paste(
        &mut self,
        text: &[u8],
        bracket: bool,
        mut buffer_name: impl FnMut() -> String,
    ) -> Result<&mut Self, InputError> {
        if bracket && let Some(offset) = memchr::memchr(0, text) {
            return Err(InputError::NulInBracketedPaste { offset });
        }
        if bracket && let Some(offset) = memchr::memmem::find(text, PASTE_END) {
            return Err(InputError::PasteEndInBracketedPaste { offset });
        }
        self.text_bytes += text.len();
        for segment in split_nul(text) {
            match segment {
                Segment::Nuls(n) => self.nuls(n)?,
                Segment::Text(bytes) => self.through_buffer(bytes, bracket, buffer_name())?,
            }
        }
        Ok(self)
    }

    /// NUL bytes of the text, typed as `C-@` (counted as text, not as keys).
    fn nuls(&mut self, n: usize) -> Result<(), InputError> {
        self.press(&vec![KeyName::nul(); n])
    }

    fn through_buffer(
        &mut self,
        bytes: &[u8],
        bracket: bool,
        name: String,
    ) -> Result<(), InputError> {
        let set = TmuxCommand::new("set-buffer")
            .opt("-b", &name)
            .end_of_options()
            .arg(bytes)
            .build()?;
        let mut paste = TmuxCommand::new("paste-buffer").flag("-d").flag("-r");
        if bracket {
            paste = paste.flag("-p");
        }
        let paste = paste.opt("-b", &name).target(self.pane).build()?;
        self.commands.push(set);
        self.commands.push(paste);
        self.transient_buffers.push(name);
        Ok(())
    }

    /// Whether the plan holds no command.
    pub fn is_empty(&self) -> bool {
        self.commands.is_empty()
    }

    /// The commands, in order; run them as one chained line.
    pub fn commands(&self) -> &[TmuxCommand] {
        &self.commands
    }

    /// Transient buffers the commands create (and, when they all run, delete again).
    pub fn transient_buffers(&self) -> &[String] {
        &self.transient_buffers
    }

    /// Bytes of literal or pasted text in the plan.
    pub fn text_bytes(&self) -> usize {
        self.text_bytes
    }

    /// Keys pressed by name (including a final Enter).
    pub fn key_count(&self) -> usize {
        self.keys
    }

    /// The commands, in order, taken out of the plan.
    pub fn into_commands(self) -> Vec<TmuxCommand> {
        self.commands
    }
}

/// A run of text without NUL, or a run of NULs.
#[derive(Debug, PartialEq, Eq)]
enum Segment<'a> {
    Text(&'a [u8]),
    Nuls(usize),
}

fn split_nul(mut text: &[u8]) -> Vec<Segment<'_>> {
    let mut out = Vec::new();
    while !text.is_empty() {
        match memchr::memchr(0, text) {
            Some(0) => {
                let n = text.iter().take_while(|&&b| b == 0).count();
                out.push(Segment::Nuls(n));
                text = &text[n..];
            }
            Some(at) => {
                out.push(Segment::Text(&text[..at]));
                text = &text[at..];
            }
            None => {
                out.push(Segment::Text(text));
                text = &[];
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(plan: &InputPlan) -> Vec<String> {
        plan.commands()
            .iter()
            .map(|c| String::from_utf8_lossy(c.as_bytes()).into_owned())
            .collect()
    }

    fn names() -> impl FnMut() -> String {
        let mut n = 0;
        move || {
            n += 1;
            format!("muxgate_tmp_{n}")
        }
    }

    #[test]
    fn keys_and_enter_are_send_keys_after_end_of_options() {
        let mut plan = InputPlan::new(PaneId(3));
        plan.keys(&[KeyName::parse("C-c").unwrap(), KeyName::parse("-").unwrap()])
            .unwrap()
            .keys(&[KeyName::enter()])
            .unwrap();
        assert_eq!(
            lines(&plan),
            [
                "send-keys -t '%3' -- 'C-c' '-'",
                "send-keys -t '%3' -- 'Enter'"
            ]
        );
        assert_eq!(plan.key_count(), 3);
        assert!(plan.transient_buffers().is_empty());
    }

    #[test]
    fn utf8_text_is_typed_and_other_bytes_are_pasted_raw() {
        let mut plan = InputPlan::new(PaneId(1));
        plan.literal(b"-n 'x'\n", names()).unwrap();
        assert_eq!(lines(&plan), [r"send-keys -t '%1' -l -- '-n '\''x'\'\012"]);

        let mut plan = InputPlan::new(PaneId(1));
        plan.literal(b"a\xffb", names()).unwrap();
        assert_eq!(
            lines(&plan),
            [
                r"set-buffer -b 'muxgate_tmp_1' -- 'a'\377'b'",
                "paste-buffer -d -r -b 'muxgate_tmp_1' -t '%1'",
            ]
        );
        assert_eq!(plan.transient_buffers(), ["muxgate_tmp_1"]);
        assert_eq!(plan.text_bytes(), 3);
    }

    #[test]
    fn nul_bytes_become_ctrl_at_keys() {
        let mut plan = InputPlan::new(PaneId(2));
        plan.literal(b"\0\0a\0\xfe", names()).unwrap();
        assert_eq!(
            lines(&plan),
            [
                "send-keys -t '%2' -- 'C-@' 'C-@'",
                "send-keys -t '%2' -l -- 'a'",
                "send-keys -t '%2' -- 'C-@'",
                r"set-buffer -b 'muxgate_tmp_1' -- \376",
                "paste-buffer -d -r -b 'muxgate_tmp_1' -t '%2'",
            ]
        );
        assert_eq!(plan.key_count(), 0);
        assert_eq!(plan.text_bytes(), 5);
    }

    #[test]
    fn a_bracketed_paste_cannot_end_itself_early() {
        let mut plan = InputPlan::new(PaneId(4));
        let text = b"echo safe\x1b[201~rm -rf ~\n";
        assert_eq!(
            plan.paste(text, true, names()).unwrap_err(),
            InputError::PasteEndInBracketedPaste { offset: 9 }
        );
        assert!(
            InputPlan::new(PaneId(4))
                .paste(text, false, names())
                .is_ok()
        );
        assert!(
            InputPlan::new(PaneId(4))
                .paste(b"\x1b[200~ok", true, names())
                .is_ok()
        );
    }

    #[test]
    fn pastes_bracket_on_request_and_refuse_nul_only_then() {
        let mut plan = InputPlan::new(PaneId(4));
        plan.paste(b"x;y", true, names()).unwrap();
        assert_eq!(
            lines(&plan),
            [
                "set-buffer -b 'muxgate_tmp_1' -- 'x;y'",
                "paste-buffer -d -r -p -b 'muxgate_tmp_1' -t '%4'",
            ]
        );
        let err = InputPlan::new(PaneId(4))
            .paste(b"ab\0", true, names())
            .unwrap_err();
        assert_eq!(err, InputError::NulInBracketedPaste { offset: 2 });
        let mut plan = InputPlan::new(PaneId(4));
        plan.paste(b"a\0b", false, names()).unwrap();
        assert_eq!(plan.commands().len(), 5);
        assert_eq!(plan.transient_buffers(), ["muxgate_tmp_1", "muxgate_tmp_2"]);
    }

    #[test]
    fn splits_on_nul_runs() {
        assert_eq!(split_nul(b""), []);
        assert_eq!(
            split_nul(b"a\0\0b"),
            [Segment::Text(b"a"), Segment::Nuls(2), Segment::Text(b"b")]
        );
        assert_eq!(split_nul(b"\0"), [Segment::Nuls(1)]);
    }
}
