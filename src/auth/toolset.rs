//! Toolsets: the named families of tools a client is shown.
//!
//! What a client is *shown* costs it tokens in every conversation; what it may *do* is the
//! business of its scopes (tiers). A toolset only shapes `tools/list`: it grants nothing, and a
//! tool outside the client's toolsets stays callable when its scopes allow it, so a workflow
//! that names a tool keeps working whatever the listing shows.
//!
//! A client's toolsets come from its token's `muxgate.toolsets` claim, else `[clients.<sub>]
//! toolsets` (or `[clients_default] toolsets`), else [`Toolsets::default`].

use std::fmt;

/// One family of tools.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Toolset {
    /// Listings and reading panes.
    Inspect,
    /// Typing, running commands, waiting for output.
    Run,
    /// Creating, selecting and closing sessions, windows and panes.
    Manage,
    /// Names, sizes, layouts, moving and swapping.
    Layout,
    /// Options, environment, hooks and server/session/window details.
    Config,
    /// Paste buffers, copy mode and piping a pane's output.
    Buffers,
    /// tmux `wait-for` channels.
    Channels,
    /// Killing the server, respawning and clearing panes.
    Destroy,
    /// Every Zellij tool.
    Zellij,
    /// What a human does beside the agent: typing a secret, watching a pane, recordings.
    Humans,
    /// Agents as workers: spawning, listing and stopping agent CLIs.
    Fleet,
}

impl Toolset {
    /// Every toolset, in the order documentation lists them.
    pub const ALL: [Toolset; 11] = [
        Toolset::Inspect,
        Toolset::Run,
        Toolset::Manage,
        Toolset::Layout,
        Toolset::Config,
        Toolset::Buffers,
        Toolset::Channels,
        Toolset::Destroy,
        Toolset::Zellij,
        Toolset::Humans,
        Toolset::Fleet,
    ];

    /// What a client is shown unless told otherwise: the everyday work of an agent.
    pub const DEFAULT: [Toolset; 4] = [
        Toolset::Inspect,
        Toolset::Run,
        Toolset::Manage,
        Toolset::Zellij,
    ];

    /// Its name in tokens and the configuration.
    pub fn name(self) -> &'static str {
        match self {
            Toolset::Inspect => "inspect",
            Toolset::Run => "run",
            Toolset::Manage => "manage",
            Toolset::Layout => "layout",
            Toolset::Config => "config",
            Toolset::Buffers => "buffers",
            Toolset::Channels => "channels",
            Toolset::Destroy => "destroy",
            Toolset::Zellij => "zellij",
            Toolset::Humans => "humans",
            Toolset::Fleet => "fleet",
        }
    }

    fn bit(self) -> u16 {
        1 << self as u16
    }
}

impl fmt::Display for Toolset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A set of toolsets.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Toolsets(u16);

impl Toolsets {
    /// Every toolset.
    pub fn all() -> Self {
        Self::from_iter(Toolset::ALL)
    }

    /// Whether `toolset` is in the set.
    pub fn contains(self, toolset: Toolset) -> bool {
        self.0 & toolset.bit() != 0
    }

    /// Parses toolset names; `all` and `default` stand for those selections. An empty list is
    /// refused: a client shown no tool at all is a mistake, not a policy.
    pub fn parse<S: AsRef<str>>(names: &[S]) -> Result<Self, UnknownToolset> {
        if names.is_empty() {
            return Err(UnknownToolset(String::new()));
        }
        let mut set = Self(0);
        for name in names {
            let name = name.as_ref();
            set.0 |= match name {
                "all" => Self::all().0,
                "default" => Self::default().0,
                _ => Toolset::ALL
                    .into_iter()
                    .find(|t| t.name() == name)
                    .ok_or_else(|| UnknownToolset(name.to_owned()))?
                    .bit(),
            };
        }
        Ok(set)
    }
}

impl Default for Toolsets {
    fn default() -> Self {
        Self::from_iter(Toolset::DEFAULT)
    }
}

impl FromIterator<Toolset> for Toolsets {
    fn from_iter<I: IntoIterator<Item = Toolset>>(toolsets: I) -> Self {
        Self(toolsets.into_iter().fold(0, |bits, t| bits | t.bit()))
    }
}

impl fmt::Debug for Toolsets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set()
            .entries(Toolset::ALL.into_iter().filter(|t| self.contains(*t)))
            .finish()
    }
}

/// A toolset name that is not one (empty: an empty list).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownToolset(pub String);

impl fmt::Display for UnknownToolset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let known: Vec<&str> = Toolset::ALL.iter().map(|t| t.name()).collect();
        if self.0.is_empty() {
            write!(f, "toolsets is empty")?;
        } else {
            write!(f, "unknown toolset {:?}", self.0)?;
        }
        write!(
            f,
            "; name some of: {}, or all, or default",
            known.join(", ")
        )
    }
}

impl std::error::Error for UnknownToolset {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_expand() {
        let set = Toolsets::parse(&["inspect", "layout"]).unwrap();
        assert!(set.contains(Toolset::Inspect) && set.contains(Toolset::Layout));
        assert!(!set.contains(Toolset::Run));
        assert_eq!(Toolsets::parse(&["all"]).unwrap(), Toolsets::all());
        let widened = Toolsets::parse(&["default", "destroy"]).unwrap();
        assert!(Toolset::DEFAULT.iter().all(|t| widened.contains(*t)));
        assert!(widened.contains(Toolset::Destroy) && !widened.contains(Toolset::Config));
    }

    #[test]
    fn unknown_and_empty_lists_are_refused_with_the_known_names() {
        let error = Toolsets::parse(&["inspect", "everything"]).unwrap_err();
        assert_eq!(error, UnknownToolset("everything".into()));
        let text = error.to_string();
        assert!(text.contains("\"everything\"") && text.contains("inspect, run, manage"));
        let empty: [&str; 0] = [];
        assert!(
            Toolsets::parse(&empty)
                .unwrap_err()
                .to_string()
                .contains("empty")
        );
    }

    #[test]
    fn names_round_trip() {
        for toolset in Toolset::ALL {
            assert_eq!(
                Toolsets::parse(&[toolset.name()]).unwrap(),
                Toolsets::from_iter([toolset])
            );
        }
    }
}
