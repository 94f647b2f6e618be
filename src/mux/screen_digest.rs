//! A digest of what a screen shows, which an answer to an agent names to say "the screen I
//! read": the visible lines, their trailing blanks dropped (tmux pads lines to the pane's
//! width, and a resize changes nothing a reader sees), SHA-256, the first 8 bytes in hex.
//! Short enough to pass back in a call, long enough that two screens never share one by
//! chance.

use sha2::{Digest, Sha256};

/// The digest of `lines`, the visible screen top to bottom.
pub(crate) fn screen_digest<L: AsRef<str>>(lines: &[L]) -> String {
    let mut hasher = Sha256::new();
    let shown = lines
        .iter()
        .map(|line| line.as_ref().as_bytes().trim_ascii_end())
        .collect::<Vec<_>>();
    // Blank lines at the bottom are no part of what is shown either.
    let end = shown
        .iter()
        .rposition(|line| !line.is_empty())
        .map_or(0, |last| last + 1);
    for line in &shown[..end] {
        hasher.update(line);
        hasher.update(b"\n");
    }
    hex::encode(&hasher.finalize()[..8])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_text_gives_the_same_digest_however_it_is_padded() {
        let read = screen_digest(&["Do you want to proceed?", "❯ 1. Yes", "  2. No"]);
        let padded = screen_digest(&[
            "Do you want to proceed?   ",
            "❯ 1. Yes",
            "  2. No",
            "",
            "  ",
        ]);
        assert_eq!(read, padded);
        assert_eq!(read.len(), 16);
        assert!(read.chars().all(|c| c.is_ascii_hexdigit()));
    }

    #[test]
    fn any_change_a_reader_could_see_changes_it() {
        let read = screen_digest(&["Do you want to proceed?", "❯ 1. Yes", "  2. No"]);
        for changed in [
            vec!["Do you want to proceed?", "  1. Yes", "❯ 2. No"],
            vec!["Do you want to proceed?", "❯ 1. Yes"],
            vec!["", "Do you want to proceed?", "❯ 1. Yes", "  2. No"],
            vec!["Do you want to proceed?❯ 1. Yes", "  2. No"],
        ] {
            assert_ne!(screen_digest(&changed), read, "{changed:?}");
        }
    }
}
