//! One caller's paste buffers on one tmux server: loading, pasting, reading back and
//! deleting them.
//!
//! This module owns the command lines; callers name a buffer by its logical name and get a
//! [`BufferError`] that says what happened, not what to tell anyone about it. The tmux name
//! is always derived from the owner given at construction ([`LogicalBufferName::tmux_name`]),
//! so nothing built here can reach a buffer another client (or a human) made.

use crate::ops::buffer::{LogicalBufferName, decode_show_buffer, show_buffer_escaped};
use crate::typed::op_error::{OpError, wraps_op_error};
use crate::{
    BatchMode, Caller, CommandOutcome, EngineError, PaneId, QuoteError, TmuxCommand, TmuxServer,
};

/// Why a buffer operation failed.
#[derive(Debug, thiserror::Error)]
pub enum BufferError {
    /// As any operation; `Unanswered` when tmux answered the version query but not
    /// `show-buffer`.
    #[error(transparent)]
    Op(#[from] OpError),
    /// The owner has no buffer by that name.
    #[error("no such buffer")]
    Missing,
}

wraps_op_error!(BufferError);

/// Whether tmux's message says the buffer does not exist ("no buffer …" from show and paste,
/// "unknown buffer: …" from delete).
fn is_missing_buffer(message: &str) -> bool {
    ["no buffer", "unknown buffer"]
        .iter()
        .any(|needle| message.contains(needle))
}

/// An engine failure, with tmux's "no such buffer" told apart.
fn classify(error: EngineError) -> BufferError {
    match error {
        EngineError::Command(message) if is_missing_buffer(&message) => BufferError::Missing,
        error => error.into(),
    }
}

/// `set-buffer`: `content` after `--`, so content starting with `-` is not an option.
fn load_command(tmux_name: &str, content: &[u8]) -> Result<TmuxCommand, QuoteError> {
    TmuxCommand::new("set-buffer")
        .opt("-b", tmux_name)
        .end_of_options()
        .arg(content)
        .build()
}

/// `paste-buffer -r` (newlines stay newlines rather than becoming carriage returns), with
/// `-p` for bracketed paste when the program asked for it; the buffer is kept.
fn paste_command(tmux_name: &str, pane: PaneId, bracket: bool) -> Result<TmuxCommand, QuoteError> {
    let mut command = TmuxCommand::new("paste-buffer").flag("-r");
    if bracket {
        command = command.flag("-p");
    }
    command.opt("-b", tmux_name).target(pane).build()
}

/// `delete-buffer` of the buffer tmux knows as `tmux_name` (also used to clean up the transient
/// buffers of a delivery that failed).
pub(crate) fn delete_command(tmux_name: &str) -> Result<TmuxCommand, QuoteError> {
    TmuxCommand::new("delete-buffer")
        .opt("-b", tmux_name)
        .build()
}

/// The server's version then the buffer: whether `show-buffer` escapes its output depends
/// on the version, and asking on the same line means no restart can come in between.
fn read_commands(tmux_name: &str) -> Result<Vec<TmuxCommand>, QuoteError> {
    Ok(vec![
        TmuxCommand::new("display-message")
            .flag("-p")
            .trusted_format("#{version}")
            .build()?,
        TmuxCommand::new("show-buffer")
            .opt("-b", tmux_name)
            .build()?,
    ])
}

/// The buffer's bytes from the answers to [`read_commands`].
fn parse_read(outcomes: Vec<CommandOutcome>) -> Result<Vec<u8>, BufferError> {
    let mut outcomes = outcomes.into_iter();
    // An unknown version is taken as recent (raw output), as `show_buffer_escaped` does.
    let version = match outcomes.next() {
        Some(CommandOutcome::Ok(lines)) => lines
            .first()
            .map(|l| String::from_utf8_lossy(l).into_owned())
            .unwrap_or_default(),
        _ => String::new(),
    };
    match outcomes.next() {
        Some(CommandOutcome::Ok(lines)) => {
            Ok(decode_show_buffer(&lines, show_buffer_escaped(&version)))
        }
        Some(CommandOutcome::Failed(message)) if is_missing_buffer(&message) => {
            Err(BufferError::Missing)
        }
        Some(CommandOutcome::Failed(message)) => Err(OpError::Refused(message).into()),
        _ => Err(OpError::Unanswered.into()),
    }
}

/// The paste buffers one client owns on one tmux server, acted on as `caller` (the engine's
/// fairness key).
#[derive(Clone)]
pub struct TmuxBuffers {
    server: TmuxServer,
    caller: Caller,
    /// The client identity the buffers' tmux names are derived from.
    owner: String,
}

impl TmuxBuffers {
    /// The buffers `owner` (a client identity) owns on `server`, acted on as `caller`.
    pub fn new(server: TmuxServer, caller: Caller, owner: String) -> Self {
        Self {
            server,
            caller,
            owner,
        }
    }

    fn tmux_name(&self, name: &LogicalBufferName) -> String {
        name.tmux_name(&self.owner)
    }

    /// Stores `content` in the buffer `name`, replacing what it held.
    pub async fn load(&self, name: &LogicalBufferName, content: &[u8]) -> Result<(), BufferError> {
        let command = load_command(&self.tmux_name(name), content)?;
        self.server.run(&self.caller, command).await?;
        Ok(())
    }

    /// Pastes the buffer `name` into `pane`; no Enter follows it.
    pub async fn paste(
        &self,
        name: &LogicalBufferName,
        pane: PaneId,
        bracket: bool,
    ) -> Result<(), BufferError> {
        let command = paste_command(&self.tmux_name(name), pane, bracket)?;
        self.server
            .run(&self.caller, command)
            .await
            .map_err(classify)?;
        Ok(())
    }

    /// The exact bytes of the buffer `name`.
    pub async fn read(&self, name: &LogicalBufferName) -> Result<Vec<u8>, BufferError> {
        let commands = read_commands(&self.tmux_name(name))?;
        let outcomes = self
            .server
            .run_batch(&self.caller, commands, BatchMode::Independent, None)
            .await?;
        parse_read(outcomes)
    }

    /// Deletes the buffer `name`; whether there was one.
    pub async fn delete(&self, name: &LogicalBufferName) -> Result<bool, BufferError> {
        let command = delete_command(&self.tmux_name(name))?;
        match self
            .server
            .run(&self.caller, command)
            .await
            .map_err(classify)
        {
            Ok(_) => Ok(true),
            Err(BufferError::Missing) => Ok(false),
            Err(error) => Err(error),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_lines() {
        assert_eq!(
            load_command("muxgate_x_a", b"-n x").unwrap().text(),
            "set-buffer -b 'muxgate_x_a' -- '-n x'"
        );
        assert_eq!(
            paste_command("muxgate_x_a", PaneId(3), true)
                .unwrap()
                .text(),
            "paste-buffer -r -p -b 'muxgate_x_a' -t '%3'"
        );
        assert_eq!(
            paste_command("muxgate_x_a", PaneId(3), false)
                .unwrap()
                .text(),
            "paste-buffer -r -b 'muxgate_x_a' -t '%3'"
        );
        assert_eq!(
            delete_command("muxgate_x_a").unwrap().text(),
            "delete-buffer -b 'muxgate_x_a'"
        );
        let read: Vec<String> = read_commands("muxgate_x_a")
            .unwrap()
            .into_iter()
            .map(|command| command.text())
            .collect();
        assert_eq!(read[1], "show-buffer -b 'muxgate_x_a'");
        assert!(read[0].starts_with("display-message -p "), "{}", read[0]);
        assert!(load_command("b", b"a\0b").is_err());
    }

    #[test]
    fn answers_to_a_read() {
        let ok = |lines: &[&[u8]]| CommandOutcome::Ok(lines.iter().map(|l| l.to_vec()).collect());
        assert_eq!(
            parse_read(vec![ok(&[b"3.3a"]), ok(&[br"a\tb"])]).unwrap(),
            b"a\tb"
        );
        assert_eq!(
            parse_read(vec![ok(&[b"3.5"]), ok(&[br"a\tb", b""])]).unwrap(),
            b"a\\tb\n"
        );
        assert_eq!(
            parse_read(vec![CommandOutcome::Failed("x".into()), ok(&[br"a\tb"])]).unwrap(),
            b"a\\tb",
            "an unknown version reads raw"
        );
        assert!(matches!(
            parse_read(vec![
                ok(&[b"3.5"]),
                CommandOutcome::Failed("no buffer muxgate_x_a".into())
            ]),
            Err(BufferError::Missing)
        ));
        assert!(matches!(
            parse_read(vec![ok(&[b"3.5"]), CommandOutcome::Failed("odd".into())]),
            Err(BufferError::Op(OpError::Refused(m))) if m == "odd"
        ));
        assert!(matches!(
            parse_read(vec![ok(&[b"3.5"])]),
            Err(BufferError::Op(OpError::Unanswered))
        ));
    }

    #[test]
    fn missing_buffers_are_told_apart() {
        assert!(matches!(
            classify(EngineError::Command("unknown buffer: muxgate_x_a".into())),
            BufferError::Missing
        ));
        assert!(matches!(
            classify(EngineError::Command("can't find pane: %9".into())),
            BufferError::Op(OpError::Engine(EngineError::Command(_)))
        ));
    }
}
