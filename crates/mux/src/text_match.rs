//! Matching client-given patterns against lines of pane text.
//!
//! A wait has success patterns and stop patterns (failure markers such as `error`). Both are
//! literal text unless the caller asks for regular expressions, and case-insensitive unless the
//! caller asks for case. Patterns are compiled once per wait with bounded size, so a client
//! cannot make the gateway build a huge automaton; matching is linear in the text.
//!
//! Literal text is matched by a substring search, not a regex (in any case: when it is ASCII,
//! as nearly every pattern an agent sends is): thousands of waits can be in flight at once, and
//! a case-insensitive literal compiled to a regex costs about 15 KB (21 KB once searched), a
//! substring searcher a few dozen bytes. Any case is matched on ASCII-lowercased text, which
//! gives what the regex's Unicode case folding gives for an ASCII pattern, except that `k` and
//! `s` also match the Kelvin sign and the long s: text holding those is matched by the regex
//! after all, built only then.
//!
//! Stop patterns win: when a batch of new lines holds both a stop and a success match, the wait
//! reports the stop, because a failure that scrolled by must not be hidden by a success marker
//! printed after it.
//!
//! Pure: no I/O.

use std::cell::OnceCell;
use std::sync::OnceLock;

use memchr::memmem::Finder;
use regex::{Regex, RegexBuilder};

/// Most patterns in one list.
pub const MAX_PATTERNS: usize = 32;
/// Longest pattern, in bytes.
pub const MAX_PATTERN_LEN: usize = 1024;
/// Compiled size limit per pattern.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// How patterns are read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PatternOptions {
    /// Patterns are regular expressions (Rust `regex` syntax) rather than literal text.
    pub regex: bool,
    /// Upper and lower case differ.
    pub match_case: bool,
}

/// Why a pattern list was refused. Messages quote at most 64 characters of a pattern.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatternError {
    #[error("{list}: pattern {index} is empty")]
    /// An empty pattern.
    Empty {
        /// The list's argument name.
        list: &'static str,
        /// The pattern's index in it.
        index: usize,
    },
    #[error("{list}: at most {MAX_PATTERNS} patterns are allowed, got {count}")]
    /// More than [`MAX_PATTERNS`] patterns.
    TooMany {
        /// The list's argument name.
        list: &'static str,
        /// How many it holds.
        count: usize,
    },
    #[error("{list}: pattern {index} is longer than {MAX_PATTERN_LEN} bytes")]
    /// A pattern longer than [`MAX_PATTERN_LEN`] bytes.
    TooLong {
        /// The list's argument name.
        list: &'static str,
        /// The pattern's index in it.
        index: usize,
    },
    #[error("{list}: pattern {index} ({pattern:?}) is not a valid regular expression: {reason}")]
    /// A regular expression that does not compile.
    Invalid {
        /// The list's argument name.
        list: &'static str,
        /// The pattern's index in it.
        index: usize,
        /// The pattern, cut to 64 characters.
        pattern: String,
        /// What the regex compiler said.
        reason: String,
    },
}

/// One compiled pattern.
#[derive(Debug, Clone)]
pub struct Pattern {
    source: String,
    matcher: Matcher,
    /// A match can never span two lines (literal text without a newline).
    within_line: bool,
}

#[derive(Debug, Clone)]
enum Matcher {
    /// A regular expression, or literal text with non-ASCII characters matched in any case.
    Regex(Regex),
    /// Literal text, case as given. Boxed, as below: a searcher is a few hundred bytes, and a
    /// pattern is moved around in the states of waits.
    Exact(Box<Finder<'static>>),
    /// ASCII literal text in any case: its lowercase, searched for in ASCII-lowercased text.
    AnyCase {
        lowercase: Box<Finder<'static>>,
        /// The pattern has a `k` or an `s`, which Unicode case folding also maps from
        /// characters outside ASCII.
        folds_from_unicode: bool,
        /// Built on first need: the pattern folds from Unicode and the text has such a character.
        unicode: OnceLock<Option<Regex>>,
    },
}

/// Characters outside ASCII that Unicode simple case folding maps to ASCII letters (checked
/// over every code point against the `regex` crate): the Kelvin sign and the long s.
const FOLDS_TO_ASCII: [&str; 2] = ["\u{212A}", "\u{17F}"];

impl Pattern {
    /// Literal text, case as given.
    pub fn literal(text: &str) -> Result<Self, PatternError> {
        let options = PatternOptions {
            regex: false,
            match_case: true,
        };
        compile_one("pattern", 0, text, options)
    }

    /// A regular expression (Rust `regex` syntax), case as given, size-limited.
    pub fn regex(expression: &str) -> Result<Self, PatternError> {
        let options = PatternOptions {
            regex: true,
            match_case: true,
        };
        compile_one("pattern", 0, expression, options)
    }

    /// The index of the first of `lines` it matches.
    pub fn first_match(&self, lines: &[String]) -> Option<usize> {
        lines.iter().position(|line| self.is_match(line))
    }

    /// The pattern as the client gave it.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Whether `line` holds a match.
    pub fn is_match(&self, line: &str) -> bool {
        self.find(&Haystack::new(line)).is_some()
    }

    /// Where the first match starts, in bytes.
    fn find(&self, haystack: &Haystack<'_>) -> Option<usize> {
        match &self.matcher {
            Matcher::Regex(regex) => regex.find(haystack.text).map(|m| m.start()),
            Matcher::Exact(finder) => finder.find(haystack.text.as_bytes()),
            Matcher::AnyCase {
                lowercase,
                folds_from_unicode,
                unicode,
            } => {
                if *folds_from_unicode && haystack.has_unicode_folds() {
                    let built = unicode
                        .get_or_init(|| build_regex(&regex::escape(&self.source), false).ok());
                    if let Some(regex) = built {
                        return regex.find(haystack.text).map(|m| m.start());
                    }
                }
                lowercase.find(haystack.lowercase().as_bytes())
            }
        }
    }
}

/// Text to search, with its ASCII lowercase made once for all the patterns that need it.
struct Haystack<'a> {
    text: &'a str,
    lowercase: OnceCell<String>,
    unicode_folds: OnceCell<bool>,
}

impl<'a> Haystack<'a> {
    fn new(text: &'a str) -> Self {
        Self {
            text,
            lowercase: OnceCell::new(),
            unicode_folds: OnceCell::new(),
        }
    }

    /// Same length and byte offsets as the text: only ASCII letters change.
    fn lowercase(&self) -> &str {
        self.lowercase
            .get_or_init(|| self.text.to_ascii_lowercase())
    }

    /// Whether the text holds a character in [`FOLDS_TO_ASCII`]; scanned once for all the
    /// patterns of a check.
    fn has_unicode_folds(&self) -> bool {
        *self
            .unicode_folds
            .get_or_init(|| FOLDS_TO_ASCII.iter().any(|c| self.text.contains(c)))
    }
}

fn build_regex(expression: &str, match_case: bool) -> Result<Regex, regex::Error> {
    RegexBuilder::new(expression)
        .case_insensitive(!match_case)
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(REGEX_SIZE_LIMIT)
        .build()
}

/// Compiles a client's pattern list; `list` names it in errors (`"patterns"`, `"stop"`).
pub fn compile(
    list: &'static str,
    patterns: &[String],
    options: PatternOptions,
) -> Result<Vec<Pattern>, PatternError> {
    if patterns.len() > MAX_PATTERNS {
        return Err(PatternError::TooMany {
            list,
            count: patterns.len(),
        });
    }
    patterns
        .iter()
        .enumerate()
        .map(|(index, source)| compile_one(list, index, source, options))
        .collect()
}

/// One pattern of a list: `list` and `index` name it in errors.
fn compile_one(
    list: &'static str,
    index: usize,
    source: &str,
    options: PatternOptions,
) -> Result<Pattern, PatternError> {
    if source.is_empty() {
        return Err(PatternError::Empty { list, index });
    }
    if source.len() > MAX_PATTERN_LEN {
        return Err(PatternError::TooLong { list, index });
    }
    let matcher = if !options.regex && options.match_case {
        Matcher::Exact(Box::new(Finder::new(source.as_bytes()).into_owned()))
    } else if !options.regex && source.is_ascii() {
        let lowercase = source.to_ascii_lowercase();
        Matcher::AnyCase {
            folds_from_unicode: lowercase.contains(['k', 's']),
            lowercase: Box::new(Finder::new(lowercase.as_bytes()).into_owned()),
            unicode: OnceLock::new(),
        }
    } else {
        let expression = if options.regex {
            source.to_owned()
        } else {
            regex::escape(source)
        };
        let regex =
            build_regex(&expression, options.match_case).map_err(|e| PatternError::Invalid {
                list,
                index,
                pattern: source.chars().take(64).collect(),
                reason: first_line(&e.to_string()),
            })?;
        Matcher::Regex(regex)
    };
    Ok(Pattern {
        source: source.to_owned(),
        matcher,
        within_line: !options.regex && !source.contains('\n'),
    })
}

fn first_line(text: &str) -> String {
    let line = text
        .lines()
        .rev()
        .find(|l| l.starts_with("error:"))
        .unwrap_or_else(|| text.lines().next().unwrap_or(""));
    line.chars().take(160).collect()
}

/// What a wait looks for.
#[derive(Debug, Clone)]
pub struct WaitMatcher {
    /// `None`: any new output is a match.
    patterns: Option<Vec<Pattern>>,
    stop: Vec<Pattern>,
}

/// A line that decided a wait.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    /// Which list the matching pattern is in.
    pub kind: HitKind,
    /// Index of the pattern in its list.
    pub index: usize,
    /// The line that matched.
    pub line: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
/// Which list of a wait a pattern is in.
pub enum HitKind {
    /// A success pattern matched.
    Pattern,
    /// A stop pattern matched.
    Stop,
}

impl WaitMatcher {
    /// A matcher for `patterns` (`None`: any new output matches) and `stop`.
    pub fn new(patterns: Option<Vec<Pattern>>, stop: Vec<Pattern>) -> Self {
        Self { patterns, stop }
    }

    /// Whether any new output is a match (`patterns: null`).
    pub fn any_output(&self) -> bool {
        self.patterns.is_none()
    }

    /// Checks new lines, oldest first: stop patterns across all of them, then success patterns.
    /// With no success patterns (any output), only stop patterns are checked here.
    pub fn check<'a>(&self, lines: impl Iterator<Item = &'a str> + Clone) -> Option<Hit> {
        let patterns = self.patterns.as_deref().unwrap_or_default();
        if self.stop.iter().chain(patterns).all(|p| p.within_line) {
            // One search per pattern over all the lines instead of one per line: the same
            // answer, since no match can cross a line end, at a fraction of the calls.
            let joined = JoinedLines::new(lines);
            // Lowercased at most once for both lists.
            let haystack = Haystack::new(&joined.text);
            return joined
                .find(&haystack, &self.stop, HitKind::Stop)
                .or_else(|| joined.find(&haystack, patterns, HitKind::Pattern));
        }
        find(&self.stop, lines.clone(), HitKind::Stop)
            .or_else(|| find(patterns, lines, HitKind::Pattern))
    }

    /// The source of the pattern a hit names.
    pub fn source(&self, hit: &Hit) -> &str {
        let list = match hit.kind {
            HitKind::Stop => Some(&self.stop),
            HitKind::Pattern => self.patterns.as_ref(),
        };
        list.and_then(|l| l.get(hit.index))
            .map_or("", Pattern::source)
    }
}

/// Lines joined by `\n`, with where each starts.
struct JoinedLines {
    text: String,
    starts: Vec<usize>,
}

impl JoinedLines {
    fn new<'a>(lines: impl Iterator<Item = &'a str>) -> Self {
        let mut joined = Self {
            text: String::new(),
            starts: Vec::new(),
        };
        for line in lines {
            joined.starts.push(joined.text.len());
            joined.text.push_str(line);
            joined.text.push('\n');
        }
        joined
    }

    /// The earliest line any of `patterns` matches (the first such pattern on it). Only for
    /// patterns that never match across a line end; `haystack` is this text.
    fn find(&self, haystack: &Haystack<'_>, patterns: &[Pattern], kind: HitKind) -> Option<Hit> {
        let mut best: Option<(usize, usize)> = None;
        for (index, pattern) in patterns.iter().enumerate() {
            let Some(found) = pattern.find(haystack) else {
                continue;
            };
            let line = self.starts.partition_point(|s| *s <= found) - 1;
            if best.is_none_or(|(l, _)| line < l) {
                best = Some((line, index));
            }
        }
        let (line, index) = best?;
        let start = self.starts[line];
        let end = self.starts.get(line + 1).map_or(self.text.len(), |s| *s) - 1;
        Some(Hit {
            kind,
            index,
            line: self.text[start..end].to_owned(),
        })
    }
}

fn find<'a>(
    patterns: &[Pattern],
    lines: impl Iterator<Item = &'a str>,
    kind: HitKind,
) -> Option<Hit> {
    if patterns.is_empty() {
        return None;
    }
    lines.into_iter().find_map(|line| {
        patterns
            .iter()
            .position(|p| p.is_match(line))
            .map(|index| Hit {
                kind,
                index,
                line: line.to_owned(),
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    fn literal() -> PatternOptions {
        PatternOptions::default()
    }

    #[test]
    fn one_pattern_finds_the_first_matching_line_case_as_given() {
        let lines = strings(&["$ make", "build ok in 3s"]);
        assert_eq!(Pattern::literal("ok").unwrap().first_match(&lines), Some(1));
        assert_eq!(Pattern::literal("OK").unwrap().first_match(&lines), None);
        assert_eq!(Pattern::literal("$").unwrap().first_match(&lines), Some(0));
        let regex = Pattern::regex(r"in \d+s$").unwrap();
        assert_eq!(regex.first_match(&lines), Some(1));
        assert_eq!(
            Pattern::literal("").unwrap_err(),
            PatternError::Empty {
                list: "pattern",
                index: 0
            }
        );
        assert!(matches!(
            Pattern::regex("("),
            Err(PatternError::Invalid { .. })
        ));
        assert!(Pattern::literal(&"x".repeat(MAX_PATTERN_LEN + 1)).is_err());
    }

    #[test]
    fn literal_patterns_are_literal_and_case_insensitive_by_default() {
        let p = compile("patterns", &strings(&["a.b (x)"]), literal()).unwrap();
        assert!(p[0].is_match("see A.B (X) here"));
        assert!(!p[0].is_match("aXb (x)"));
        let cased = compile(
            "patterns",
            &strings(&["Done"]),
            PatternOptions {
                match_case: true,
                ..literal()
            },
        )
        .unwrap();
        assert!(cased[0].is_match("Done."));
        assert!(!cased[0].is_match("done."));
    }

    #[test]
    fn any_case_literals_fold_as_unicode_does() {
        let p = compile("patterns", &strings(&["ok", "Test", "done"]), literal()).unwrap();
        // The Kelvin sign folds to k, the long s to s: as with the regex these replaced.
        assert!(p[0].is_match("O\u{212A}!"));
        assert!(p[1].is_match("te\u{17F}t"));
        assert!(!p[2].is_match("d\u{212A}ne"));
        assert!(p[2].is_match("DONE \u{212A}"));
        let non_ascii = compile("patterns", &strings(&["ÉTÉ"]), literal()).unwrap();
        assert!(non_ascii[0].is_match("un été"));
        // The longest pattern still builds its Unicode fallback.
        let long = compile("patterns", &["k".repeat(MAX_PATTERN_LEN)], literal()).unwrap();
        assert!(long[0].is_match(&"\u{212A}".repeat(MAX_PATTERN_LEN)));
    }

    #[test]
    fn regex_patterns() {
        let options = PatternOptions {
            regex: true,
            match_case: false,
        };
        let p = compile("patterns", &strings(&[r"^\$ $", r"exit (\d+)"]), options).unwrap();
        assert!(p[0].is_match("$ "));
        assert!(p[1].is_match("EXIT 3"));
    }

    #[test]
    fn bad_pattern_lists_are_refused_with_their_index() {
        let err = compile("stop", &strings(&["ok", ""]), literal()).unwrap_err();
        assert_eq!(
            err,
            PatternError::Empty {
                list: "stop",
                index: 1
            }
        );
        let err = compile("patterns", &vec!["x".to_owned(); 33], literal()).unwrap_err();
        assert!(matches!(err, PatternError::TooMany { count: 33, .. }));
        let err = compile("patterns", &["y".repeat(1025)], literal()).unwrap_err();
        assert_eq!(
            err,
            PatternError::TooLong {
                list: "patterns",
                index: 0
            }
        );
        let options = PatternOptions {
            regex: true,
            ..literal()
        };
        let err = compile("patterns", &strings(&["ok", "(unclosed"]), options).unwrap_err();
        let message = err.to_string();
        assert!(
            message.starts_with("patterns: pattern 1 (\"(unclosed\")"),
            "{message}"
        );
        assert!(!message.contains('\n'));
        // A huge repetition exceeds the compiled-size limit instead of eating memory.
        let err = compile("patterns", &strings(&["(a{1000}){1000}"]), options).unwrap_err();
        assert!(matches!(err, PatternError::Invalid { .. }), "{err}");
    }

    #[test]
    fn stop_wins_over_patterns_in_the_same_batch() {
        let matcher = WaitMatcher::new(
            Some(compile("patterns", &strings(&["ready"]), literal()).unwrap()),
            compile("stop", &strings(&["error", "fatal"]), literal()).unwrap(),
        );
        let lines = ["server ready", "fatal: boom"];
        let hit = matcher.check(lines.iter().copied()).unwrap();
        assert_eq!(hit.kind, HitKind::Stop);
        assert_eq!(hit.index, 1);
        assert_eq!(hit.line, "fatal: boom");
        assert_eq!(matcher.source(&hit), "fatal");
        let hit = matcher.check(["x", "ready now"].into_iter()).unwrap();
        assert_eq!(
            (hit.kind, hit.line.as_str()),
            (HitKind::Pattern, "ready now")
        );
        assert_eq!(matcher.check(["nothing"].into_iter()), None);
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            #[test]
            fn literals_match_where_the_escaped_regex_matches(
                line in "[kKsSaA. \u{212A}\u{17F}éÉ]{0,12}",
                pattern in "[kKsSaA. \u{212A}\u{17F}éÉ]{1,4}",
                match_case in any::<bool>(),
            ) {
                let options = PatternOptions { regex: false, match_case };
                let compiled = compile("patterns", std::slice::from_ref(&pattern), options).unwrap();
                let regex = build_regex(&regex::escape(&pattern), match_case).unwrap();
                let haystack = Haystack::new(&line);
                prop_assert_eq!(
                    compiled[0].find(&haystack),
                    regex.find(&line).map(|m| m.start())
                );
            }

            #[test]
            fn joined_search_finds_what_line_by_line_search_finds(
                lines in prop::collection::vec("[abAB \\n.é]{0,12}", 0..12),
                stop in prop::collection::vec("[abAB.é]{1,3}", 0..3),
                patterns in prop::collection::vec("[abAB \\n.é]{1,3}", 1..4),
                match_case in any::<bool>(),
            ) {
                let options = PatternOptions { regex: false, match_case };
                let matcher = WaitMatcher::new(
                    Some(compile("patterns", &patterns, options).unwrap()),
                    compile("stop", &stop, options).unwrap(),
                );
                let lines: Vec<String> = lines.into_iter().map(|l| l.replace('\n', " ")).collect();
                let iter = lines.iter().map(String::as_str);
                let line_by_line = find(&matcher.stop, iter.clone(), HitKind::Stop).or_else(|| {
                    find(matcher.patterns.as_deref().unwrap_or_default(), iter.clone(), HitKind::Pattern)
                });
                prop_assert_eq!(matcher.check(iter), line_by_line);
            }
        }
    }

    #[test]
    fn patterns_with_a_newline_are_matched_line_by_line() {
        let matcher = WaitMatcher::new(
            Some(compile("patterns", &strings(&["a\nb"]), literal()).unwrap()),
            Vec::new(),
        );
        assert_eq!(matcher.check(["xa", "by"].into_iter()), None);
    }

    #[test]
    fn any_output_checks_only_stop_patterns() {
        let matcher = WaitMatcher::new(None, Vec::new());
        assert!(matcher.any_output());
        assert_eq!(matcher.check(["anything"].into_iter()), None);
    }
}
