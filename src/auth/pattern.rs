//! Name patterns for target ACLs: `*` matches any run of characters (also none), `?` exactly
//! one character, everything else itself (case-sensitive). No escapes, no classes: names of
//! tmux servers and sessions rarely need more, and a tiny language is easy to audit.
//!
//! [`NameAllowList`] stacks pattern lists from several sources (token claims, client config); a
//! name is allowed only if every source allows it. Only an *authoritative* source can grant a
//! name explicitly: the client's configuration when the client has one, else its token (but
//! never a token's server patterns in workspace mode). A token's claim under a configuration
//! only narrows it.

use std::fmt;

/// Longest accepted pattern, in characters.
pub(crate) const MAX_PATTERN_CHARS: usize = 128;

/// One compiled pattern.
#[derive(Clone, PartialEq, Eq)]
pub struct NamePattern {
    chars: Vec<char>,
}

/// Why a pattern was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatternError {
    /// Empty pattern.
    #[error("empty pattern")]
    Empty,
    /// Longer than [`MAX_PATTERN_CHARS`].
    #[error("pattern longer than {MAX_PATTERN_CHARS} characters")]
    TooLong,
    /// Control characters have no place in tmux names.
    #[error("pattern contains a control character")]
    ControlChar,
}

impl NamePattern {
    /// Compiles a pattern.
    pub fn new(pattern: &str) -> Result<Self, PatternError> {
        if pattern.is_empty() {
            return Err(PatternError::Empty);
        }
        let chars: Vec<char> = pattern.chars().collect();
        if chars.len() > MAX_PATTERN_CHARS {
            return Err(PatternError::TooLong);
        }
        if chars.iter().any(|c| c.is_control()) {
            return Err(PatternError::ControlChar);
        }
        Ok(Self { chars })
    }

    /// Whether the pattern has no wildcard (it matches one name only).
    pub fn is_literal(&self) -> bool {
        !self.chars.iter().any(|c| matches!(c, '*' | '?'))
    }

    /// Whether `name` matches the whole pattern.
    pub fn matches(&self, name: &str) -> bool {
        let name: Vec<char> = name.chars().collect();
        let pat = &self.chars;
        // Greedy two-pointer match with backtracking to the last `*`: linear in practice,
        // O(n·m) at worst, and patterns are short.
        let (mut p, mut n) = (0usize, 0usize);
        let mut star: Option<(usize, usize)> = None;
        while n < name.len() {
            if p < pat.len() && pat[p] == '*' {
                star = Some((p, n));
                p += 1;
            } else if p < pat.len() && (pat[p] == '?' || pat[p] == name[n]) {
                p += 1;
                n += 1;
            } else if let Some((sp, sn)) = star {
                p = sp + 1;
                n = sn + 1;
                star = Some((sp, sn + 1));
            } else {
                return false;
            }
        }
        pat[p..].iter().all(|&c| c == '*')
    }
}

impl fmt::Debug for NamePattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.chars.iter().collect::<String>())
    }
}

impl fmt::Display for NamePattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.chars.iter().collect::<String>())
    }
}

/// Compiles a list of patterns, naming the first bad one.
pub(crate) fn compile_patterns(
    patterns: &[String],
) -> Result<Vec<NamePattern>, (String, PatternError)> {
    patterns
        .iter()
        .map(|p| NamePattern::new(p).map_err(|e| (p.clone(), e)))
        .collect()
}

/// Pattern lists from several sources; a name passes only if each list has a matching pattern.
/// With no list at all every name passes; an empty list lets nothing pass.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NameAllowList {
    layers: Vec<Layer>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Layer {
    patterns: Vec<NamePattern>,
    /// Whether this source may grant names explicitly (see the module docs).
    authoritative: bool,
}

impl NameAllowList {
    /// No restriction.
    pub fn unrestricted() -> Self {
        Self::default()
    }

    /// Adds an authoritative source's pattern list; the result is at most as permissive as
    /// before.
    pub fn restrict(&mut self, patterns: Vec<NamePattern>) {
        self.layers.push(Layer {
            patterns,
            authoritative: true,
        });
    }

    /// Adds a source that may only narrow: it takes names away, and grants none explicitly.
    pub fn narrow(&mut self, patterns: Vec<NamePattern>) {
        self.layers.push(Layer {
            patterns,
            authoritative: false,
        });
    }

    /// Whether no source restricts names.
    pub fn is_unrestricted(&self) -> bool {
        self.layers.is_empty()
    }

    /// Whether every source allows `name` (true when there is no source).
    pub fn allows(&self, name: &str) -> bool {
        self.layers
            .iter()
            .all(|layer| layer.patterns.iter().any(|p| p.matches(name)))
    }

    /// Whether an authoritative source has a pattern for `name` and all sources allow it: the
    /// grant is explicit rather than the absence of a restriction.
    pub fn grants_explicitly(&self, name: &str) -> bool {
        self.layers.iter().any(|l| l.authoritative) && self.allows(name)
    }

    /// Whether an authoritative source names `name` literally (a pattern without wildcards)
    /// and all sources allow it.
    pub fn names_literally(&self, name: &str) -> bool {
        self.allows(name)
            && self.layers.iter().any(|layer| {
                layer.authoritative
                    && layer
                        .patterns
                        .iter()
                        .any(|p| p.is_literal() && p.matches(name))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn pat(p: &str) -> NamePattern {
        NamePattern::new(p).unwrap()
    }

    #[test]
    fn literal_star_and_question_mark() {
        assert!(pat("build").matches("build"));
        assert!(!pat("build").matches("builds"));
        assert!(!pat("build").matches("Build"));
        assert!(pat("ci-*").matches("ci-"));
        assert!(pat("ci-*").matches("ci-123"));
        assert!(!pat("ci-*").matches("xci-1"));
        assert!(pat("*").matches(""));
        assert!(pat("a?c").matches("abc"));
        assert!(!pat("a?c").matches("ac"));
        assert!(pat("*-prod-*").matches("eu-prod-7"));
        assert!(!pat("*-prod-*").matches("eu-prod"));
        assert!(pat("a*b*c").matches("aXbYbZc"));
        assert!(pat("é?").matches("éß"));
        // A literal `*` in a name is matched by a wildcard, not mistaken for one.
        assert!(pat("*").matches("*x"));
        assert!(pat("a*").matches("a*b"));
    }

    #[test]
    fn bad_patterns_are_refused() {
        assert_eq!(NamePattern::new(""), Err(PatternError::Empty));
        assert_eq!(
            NamePattern::new(&"a".repeat(MAX_PATTERN_CHARS + 1)),
            Err(PatternError::TooLong)
        );
        assert_eq!(NamePattern::new("a\nb"), Err(PatternError::ControlChar));
        let err = compile_patterns(&["ok".into(), "".into()]).unwrap_err();
        assert_eq!(err, ("".to_owned(), PatternError::Empty));
    }

    #[test]
    fn allow_list_layers_intersect() {
        let mut acl = NameAllowList::unrestricted();
        assert!(acl.allows("anything"));
        assert!(!acl.grants_explicitly("anything"));
        acl.restrict(vec![pat("ci-*"), pat("dev")]);
        assert!(acl.allows("ci-1") && acl.allows("dev"));
        assert!(!acl.allows("prod"));
        acl.restrict(vec![pat("*-1")]);
        assert!(acl.allows("ci-1"));
        assert!(!acl.allows("dev"));
        assert!(acl.grants_explicitly("ci-1"));
        let mut none = NameAllowList::unrestricted();
        none.restrict(Vec::new());
        assert!(!none.allows("x"));
    }

    #[test]
    fn a_narrowing_source_grants_nothing_explicitly() {
        let mut acl = NameAllowList::unrestricted();
        acl.narrow(vec![pat("*")]);
        assert!(acl.allows("prod"));
        assert!(
            !acl.grants_explicitly("prod"),
            "a claim alone grants nothing"
        );
        assert!(!acl.names_literally("prod"));
        acl.restrict(vec![pat("b-*"), pat("shared")]);
        assert!(acl.grants_explicitly("b-1"));
        assert!(!acl.names_literally("b-1"), "a glob is not a name");
        assert!(acl.names_literally("shared"));
        acl.narrow(vec![pat("b-*")]);
        assert!(
            !acl.names_literally("shared"),
            "the narrowing source takes it away"
        );
        assert!(pat("build").is_literal() && !pat("b?").is_literal() && !pat("*").is_literal());
    }

    proptest! {
        #[test]
        fn star_matches_everything(name in "\\PC{0,40}") {
            prop_assert!(pat("*").matches(&name));
        }

        #[test]
        fn a_name_matches_itself_when_it_has_no_wildcards(name in "[a-zA-Z0-9_.-]{1,40}") {
            prop_assert!(pat(&name).matches(&name));
            let longer = format!("{name}x");
            prop_assert!(!pat(&name).matches(&longer));
        }

        #[test]
        fn prefix_star_matches_any_suffix(prefix in "[a-z]{1,10}", suffix in "\\PC{0,20}") {
            let name = format!("{prefix}{suffix}");
            let pattern = format!("{prefix}*");
            prop_assert!(pat(&pattern).matches(&name));
        }
    }
}
