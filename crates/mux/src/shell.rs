//! The shells a pane can run, as one vocabulary for every backend and every use: detecting the
//! shell a pane runs, how a command is typed into it ([`crate::shell_run`], the Zellij run
//! markers), whether it has an integration script ([`crate::shell_integration`]), and the shell
//! a client names when the gateway cannot detect it.
//!
//! Pure: no I/O.

use schemars::JsonSchema;
use serde::Deserialize;

/// A shell family: how it quotes, reports exit status and reads a typed line. A client names
/// one in lowercase (`run_command`'s `shell`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
// A variant's doc comment is schema text every agent pays for in tools/list: only `Sh`, whose
// name does not say what it covers, has one.
#[allow(missing_docs)]
pub enum Shell {
    Bash,
    Zsh,
    /// Any POSIX shell without its own line editor: dash, sh, ash, ksh.
    Sh,
    Fish,
}

impl Shell {
    /// The shell a program's file name names exactly (`bash`, `dash`…), if it is a known one.
    pub fn named(name: &str) -> Option<Self> {
        match name {
            "bash" => Some(Self::Bash),
            "zsh" => Some(Self::Zsh),
            "sh" | "dash" | "ash" | "ksh" | "mksh" | "posh" => Some(Self::Sh),
            "fish" => Some(Self::Fish),
            _ => None,
        }
    }

    /// The shell a pane's foreground program is, as a multiplexer reports it (tmux
    /// `#{pane_current_command}`: `bash`, a login shell's `-zsh`, `/usr/bin/fish`), or `None`
    /// when it is not a known shell.
    pub fn detect(program: &str) -> Option<Self> {
        let name = program.trim();
        let name = name.rsplit('/').next().unwrap_or(name);
        Self::named(name.trim_start_matches('-'))
    }

    /// The shell's name in lowercase, as clients write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Bash => "bash",
            Self::Zsh => "zsh",
            Self::Sh => "sh",
            Self::Fish => "fish",
        }
    }

    /// fish quotes with `\'` inside quotes and reports the status as `$status`; every other
    /// shell here is POSIX (`'…'` quoting, `$?`).
    pub fn is_fish(self) -> bool {
        self == Self::Fish
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detection_reads_the_program_name() {
        assert_eq!(Shell::detect("bash"), Some(Shell::Bash));
        assert_eq!(Shell::detect("-zsh"), Some(Shell::Zsh));
        assert_eq!(Shell::detect("/usr/bin/fish"), Some(Shell::Fish));
        assert_eq!(Shell::detect(" dash "), Some(Shell::Sh));
        assert_eq!(Shell::detect("sh"), Some(Shell::Sh));
        assert_eq!(Shell::detect("vim"), None);
        assert_eq!(Shell::detect(""), None);
        assert_eq!(Shell::named("-bash"), None);
    }

    #[test]
    fn a_client_names_a_shell_in_lowercase() {
        let shell: Shell = serde_json::from_str("\"fish\"").unwrap();
        assert_eq!(shell, Shell::Fish);
        assert!(serde_json::from_str::<Shell>("\"Fish\"").is_err());
        assert_eq!(Shell::Sh.as_str(), "sh");
    }
}
