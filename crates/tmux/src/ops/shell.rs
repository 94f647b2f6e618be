//! What a tmux server starts in a new pane, and the argv that starts its default shell with
//! shell integration ([`muxgate_mux::shell_integration`]) instead.
//!
//! tmux runs `default-command` when it is set and `default-shell` (as a login shell) when it
//! is not. Only the second is replaced: a `default-command` is the user's choice of what a pane
//! runs, kept as it is.

use muxgate_mux::shell_integration;

use crate::wire::format::{row_format, split_row};
use crate::{CommandBuilder, TmuxCommand};

const FIELDS: [&str; 2] = ["default-command", "default-shell"];

/// The command that prints the server's `default-command` and `default-shell` (one row).
pub(crate) fn pane_start() -> CommandBuilder {
    TmuxCommand::new("display-message")
        .flag("-p")
        .arg(row_format(&FIELDS))
}

/// The argv for a new pane from [`pane_start`]'s answer: the default shell integrated, or
/// `None` (tmux then starts the pane as usual) when a `default-command` is set or the shell has
/// no script.
pub(crate) fn integrated_launch(rows: &[Vec<u8>]) -> Option<Vec<String>> {
    let [row] = rows else { return None };
    let fields = split_row(row, FIELDS.len())?;
    let [command, shell] = fields.as_slice() else {
        return None;
    };
    if !command.is_empty() || shell.contains(char::REPLACEMENT_CHARACTER) {
        return None;
    }
    shell_integration::launch(shell)
}

/// Ends `command` (a `new-session`, `new-window`, `split-window` or `respawn-pane` with its
/// options) with the launch argv: several arguments, so tmux executes them without a shell.
pub(crate) fn with_launch(mut command: CommandBuilder, argv: &[String]) -> CommandBuilder {
    command = command.end_of_options();
    for arg in argv {
        command = command.arg(arg);
    }
    command
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::format::encode_row;

    fn row(command: &str, shell: &str) -> Vec<Vec<u8>> {
        vec![encode_row(&[command, shell])]
    }

    #[test]
    fn the_default_shell_is_integrated_unless_a_default_command_is_set() {
        let bash = integrated_launch(&row("", "/bin/bash")).unwrap();
        assert_eq!(bash[0], "/bin/bash");
        assert_eq!(integrated_launch(&row("sh", "/bin/bash")), None);
        assert_eq!(integrated_launch(&row("", "/bin/sh")), None);
    }

    #[test]
    fn odd_answers_start_the_pane_as_usual() {
        assert_eq!(integrated_launch(&[]), None);
        assert_eq!(integrated_launch(&[b"/bin/bash".to_vec()]), None);
        let mut two = row("", "/bin/bash");
        two.push(Vec::new());
        assert_eq!(integrated_launch(&two), None);
        let mut invalid = row("", "/bin/");
        invalid[0].extend_from_slice(&[0xff, b'b', b'a', b's', b'h']);
        assert_eq!(integrated_launch(&invalid), None);
    }

    #[test]
    fn the_launch_follows_the_options() {
        let argv = ["/bin/bash".to_owned(), "-c".to_owned(), "a b".to_owned()];
        let command = with_launch(TmuxCommand::new("new-window").flag("-d"), &argv)
            .build()
            .unwrap();
        assert_eq!(
            command.as_bytes(),
            b"new-window -d -- '/bin/bash' '-c' 'a b'"
        );
    }
}
