//! Workspace names and the directory each one lives in.
//!
//! A workspace is named by a token's `sub`, a `workspace` claim or a `[clients.<sub>]
//! workspace` key: up to 256 characters of anything but control characters. Such a name is
//! not a safe file name, so the directory is derived from it: a name of 1–64 characters from
//! `A-Z a-z 0-9 _ . -` (not `.` or `..`) is its own directory name; any other name becomes `~`
//! and the first 32 hex digits of its SHA-256 (`~` never occurs in the first kind, so the two
//! cannot collide). Pure; unit-tested.

use std::fmt;

use sha2::{Digest, Sha256};

/// Longest workspace name, in characters (as long as a `sub`).
pub(crate) const MAX_NAME_CHARS: usize = 256;

/// A valid workspace name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct WorkspaceName(String);

/// A string that cannot name a workspace.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid workspace name: use 1-{MAX_NAME_CHARS} characters, no control characters")]
pub struct InvalidWorkspaceName;

impl WorkspaceName {
    /// A name of 1 to 256 characters without control characters.
    pub fn parse(name: &str) -> Result<Self, InvalidWorkspaceName> {
        let chars = name.chars().count();
        if (1..=MAX_NAME_CHARS).contains(&chars) && !name.chars().any(char::is_control) {
            Ok(Self(name.to_owned()))
        } else {
            Err(InvalidWorkspaceName)
        }
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The name of the workspace's directory (see the module docs).
    pub fn dir_name(&self) -> String {
        if is_plain(&self.0) {
            self.0.clone()
        } else {
            let digest = Sha256::digest(self.0.as_bytes());
            format!("~{}", &hex::encode(digest)[..32])
        }
    }
}

impl fmt::Display for WorkspaceName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Whether `name` can be a directory name as it is.
fn is_plain(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name != "."
        && name != ".."
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn plain_names_are_their_own_directory() {
        for name in ["alice", "team-a", "ci_bot.7", &"x".repeat(64)] {
            assert_eq!(WorkspaceName::parse(name).unwrap().dir_name(), name);
        }
    }

    #[test]
    fn other_names_are_hashed() {
        for name in [
            ".",
            "..",
            "a/b",
            "../etc",
            "alice@example.com",
            "é",
            &"x".repeat(65),
        ] {
            let dir = WorkspaceName::parse(name).unwrap().dir_name();
            assert!(dir.starts_with('~') && dir.len() == 33, "{name}: {dir}");
        }
        assert_ne!(
            WorkspaceName::parse("a/b").unwrap().dir_name(),
            WorkspaceName::parse("a/c").unwrap().dir_name()
        );
    }

    #[test]
    fn bad_names_are_refused() {
        assert!(WorkspaceName::parse("").is_err());
        assert!(WorkspaceName::parse("a\nb").is_err());
        assert!(WorkspaceName::parse(&"x".repeat(MAX_NAME_CHARS + 1)).is_err());
        assert!(WorkspaceName::parse(&"é".repeat(MAX_NAME_CHARS)).is_ok());
    }

    proptest! {
        #[test]
        fn directory_names_are_safe_and_distinct(a in "\\PC{1,80}", b in "\\PC{1,80}") {
            let (Ok(x), Ok(y)) = (WorkspaceName::parse(&a), WorkspaceName::parse(&b)) else {
                return Ok(());
            };
            let dir = x.dir_name();
            prop_assert!(!dir.is_empty() && dir != "." && dir != "..");
            prop_assert!(!dir.contains('/') && !dir.contains('\0'));
            prop_assert!(dir.len() <= 64);
            if a != b {
                prop_assert_ne!(dir, y.dir_name());
            }
        }
    }
}
