//! Shell integration for the shells the gateway starts: how to start bash, zsh or fish so that
//! they mark prompts and commands (OSC 133) and their working directory (OSC 7) for the
//! [`ledger`](crate::ledger), without touching the user's files.
//!
//! [`launch`] turns the path of a pane's default shell into the argv that starts it integrated,
//! given to tmux as several arguments (so tmux executes it directly: no shell parses it). The
//! integration scripts travel as arguments too, so they reach a shell in a sandbox as well as
//! on the host, and nothing is written where the user keeps anything:
//!
//! - **bash** reads the script as its `--rcfile`, from a pipe (`<(...)` of a one-line
//!   bootstrap). The script reads what a login bash reads (`/etc/profile`, then the first of
//!   `~/.bash_profile`, `~/.bash_login`, `~/.profile`), then adds its marks: `D` with `$?`,
//!   OSC 7 and `A` from `PROMPT_COMMAND` (placed last, after anything that rebuilds `PS1`, with
//!   `$?` kept for the user's own prompt commands), `B` at the end of `PS1`, `C` in `PS0`.
//!   Unlike a real login shell, `~/.bash_logout` is not run at exit.
//! - **zsh** starts as a login shell with `ZDOTDIR` pointing at a fresh private directory
//!   holding only a `.zshenv`. That file puts `ZDOTDIR` back, removes the directory and reads
//!   the user's `.zshenv`; zsh then reads the user's `.zprofile`, `.zshrc` and `.zlogin` itself.
//!   Marks come from `precmd` and `preexec` hooks (the command line as `cmdline_url`).
//! - **fish** starts as a login shell with the script as its `--init-command`, run after the
//!   user's configuration; marks come from its `fish_prompt`, `fish_preexec` and
//!   `fish_postexec` events. fish 4 prints the marks itself and the script then does nothing.
//!
//! Any other shell (sh, dash, ksh…) starts as before, unmarked; `run_command` marks its own
//! runs there. Pure: no I/O.

use crate::shell::Shell;

/// The bash script, read as `--rcfile`.
const BASH: &str = include_str!("muxgate.bash");
/// The zsh script, written as the `.zshenv` of a temporary `ZDOTDIR`.
const ZSH: &str = include_str!("muxgate.zsh");
/// The fish script, run as `--init-command`.
const FISH: &str = include_str!("muxgate.fish");

/// Starts bash (`$0`) interactive with the script (`$1`) as its rcfile, read from a pipe.
const BASH_BOOT: &str = r#"exec "$0" --rcfile <(printf '%s' "$1") -i"#;
/// Writes the script (`$1`) as `.zshenv` of a new private directory and starts zsh (`$0`) as a
/// login shell with that directory as `ZDOTDIR`; without the directory, zsh starts plain.
const ZSH_BOOT: &str = r#"d=$(mktemp -d "${TMPDIR:-/tmp}/muxgate-zsh.XXXXXXXX") && print -r -- "$1" > "$d/.zshenv" && export MUXGATE_ZDOTDIR="${ZDOTDIR-}" MUXGATE_ZDOTDIR_SET="${ZDOTDIR+1}" ZDOTDIR="$d"; exec "$0" -l"#;

/// The argv that starts the shell at `shell` (an absolute path) integrated, or `None` when
/// there is no script for it.
pub fn launch(shell: &str) -> Option<Vec<String>> {
    if !shell.starts_with('/') {
        return None;
    }
    let argv: &[&str] = match Shell::named(shell.rsplit('/').next()?)? {
        Shell::Bash => &[shell, "-c", BASH_BOOT, shell, BASH],
        Shell::Zsh => &[shell, "-f", "-c", ZSH_BOOT, shell, ZSH],
        Shell::Fish => &[shell, "-l", "-C", FISH],
        Shell::Sh => return None,
    };
    Some(argv.iter().map(|s| (*s).to_owned()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_shell_gets_its_own_script() {
        let bash = launch("/bin/bash").unwrap();
        assert_eq!(bash[..3], ["/bin/bash", "-c", BASH_BOOT]);
        assert_eq!(bash[3], "/bin/bash");
        assert!(bash[4].contains("PROMPT_COMMAND"));
        let zsh = launch("/usr/bin/zsh").unwrap();
        assert_eq!(zsh[..4], ["/usr/bin/zsh", "-f", "-c", ZSH_BOOT]);
        assert!(zsh[5].contains("add-zsh-hook"));
        let fish = launch("/usr/local/bin/fish").unwrap();
        assert_eq!(fish[..3], ["/usr/local/bin/fish", "-l", "-C"]);
        assert!(fish[3].contains("fish_postexec"));
    }

    #[test]
    fn other_shells_and_relative_paths_start_plain() {
        for shell in [
            "/bin/sh",
            "/bin/dash",
            "/bin/ksh",
            "bash",
            "",
            "/",
            "/bin/bash5",
        ] {
            assert_eq!(launch(shell), None, "{shell}");
        }
    }

    #[test]
    fn no_script_holds_a_nul_byte() {
        // tmux cannot receive one in an argument.
        for script in [BASH, ZSH, FISH, BASH_BOOT, ZSH_BOOT] {
            assert!(!script.contains('\0'));
        }
    }
}
