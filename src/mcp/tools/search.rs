//! `search_panes`: find text on the screens (and scrollback) of many panes at once.
//!
//! Cost: one `list-panes` for the candidates (ACL-filtered), then the captures of every
//! candidate pipelined in batches (one write per batch), matched in the gateway with Rust's
//! `regex` (linear time; patterns are size-limited). Panes are ordered by id and paged with
//! `offset`/`limit`; each pane keeps its last `max_matched_lines_per_pane` matching lines, and
//! the whole answer stays within the caller's output budget.

use regex::{Regex, RegexBuilder};
use rmcp::handler::server::common::Extension;
use rmcp::handler::server::wrapper::Parameters;

use crate::mcp::json_answer::Json;
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::pane::LineArg;
use crate::limits::output::{self, Carried};
use crate::mcp::McpServer;
use crate::mcp::access::TmuxAccess;
use crate::mcp::call::CallContext;
use crate::mcp::error::ToolError;
use crate::mcp::pane_ops::{PaneRow, PaneScope, not_found, pane_rows};
use muxgate_mux::multiplexer::CaptureRange;
use muxgate_tmux::PaneId;

/// Longest pattern accepted, and the compiled-size ceiling of its regex.
const MAX_PATTERN_LEN: usize = 1024;
const REGEX_SIZE_LIMIT: usize = 1 << 20;
/// Captures written per batch (keeps one call inside the caller's queue share).
const CAPTURES_PER_BATCH: usize = 64;
/// Longest matched line returned, in characters (longer ones are cut with a marker).
const MAX_LINE_CHARS: usize = 2000;

fn default_per_pane() -> usize {
    50
}

fn default_limit() -> usize {
    500
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SearchPanesInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Text to find (literal unless `regex`).
    pub pattern: String,
    /// `pattern` is a regular expression (Rust regex syntax).
    #[serde(default)]
    pub regex: bool,
    /// Match case exactly.
    #[serde(default)]
    pub match_case: bool,
    /// Only this session (`$N`, name), window `@N` or pane's window `%N`; default: all.
    #[serde(default)]
    pub target: Option<String>,
    /// First line: 0 screen top (default), -N into scrollback, "-" its start.
    #[serde(default)]
    pub start: Option<LineArg>,
    /// Last line, as `start`; "-" (default) screen bottom.
    #[serde(default)]
    pub end: Option<LineArg>,
    /// Most matching lines returned per pane; the last are kept.
    #[serde(default = "default_per_pane")]
    pub max_matched_lines_per_pane: usize,
    /// Matching panes to skip (paging).
    #[serde(default)]
    pub offset: usize,
    /// Most matching panes returned.
    #[serde(default = "default_limit")]
    pub limit: usize,
}

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct SearchPanesOutput {
    pub server: String,
    /// Matching panes on this page, ordered by pane id.
    pub matches: Vec<PaneMatch>,
    /// Panes searched, and panes that matched (on every page).
    pub panes_searched: usize,
    pub total_panes_matched: usize,
    pub offset: usize,
    pub limit: usize,
    /// Whether matching panes were left for a later page (or cut by your output budget);
    /// call again with `offset` = `next_offset`.
    pub truncated: bool,
    pub next_offset: Option<usize>,
}

/// The matches in one pane.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct PaneMatch {
    pub pane_id: String,
    pub session_id: String,
    pub session_name: String,
    pub window_id: String,
    pub window_name: String,
    /// Matching lines (wrapped lines joined), the last `max_matched_lines_per_pane` of them.
    pub matched_lines: Vec<String>,
    /// All matching lines in the pane, and whether some were left out.
    pub matched_line_count: usize,
    pub lines_truncated: bool,
}

#[tool_router(router = search_tools, vis = "pub(crate)")]
impl McpServer {
    #[tool(
        name = "search_panes",
        description = "Search many panes' text (the screen, or scrollback with `start`) for a \
            string or regex.\n\n\
            Paged by `offset`/`limit`. To filter by program, \
            title or path use list_panes `filters`.",
        annotations(
            title = "Search panes",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn search_panes(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<SearchPanesInput>,
    ) -> Result<Json<SearchPanesOutput>, ToolError> {
        let tmux = self.tmux_access(&call, input.server.as_deref()).await?;
        let matcher = build_matcher(&input.pattern, input.regex, input.match_case)?;
        if input.max_matched_lines_per_pane == 0 || input.limit == 0 {
            return Err(ToolError::invalid_arguments(
                "max_matched_lines_per_pane and limit must be at least 1",
                "omit them for the defaults (50 and 500)",
            ));
        }
        let scope = match input.target.as_deref() {
            Some(target) => PaneScope::Of(tmux.target(target).await?),
            None => PaneScope::All,
        };
        let mut rows = pane_rows(&tmux, &scope).await?;
        if let PaneScope::Of(target) = &scope
            && rows.is_empty()
        {
            return Err(not_found(target));
        }
        rows.sort_by_key(|r| r.pane());
        rows.dedup_by_key(|r| r.pane());
        let range = CaptureRange {
            start: input.start.map(|s| s.0),
            end: input.end.map(|e| e.0),
            join_wrapped: true,
            escape_sequences: false,
        };
        let matched = search(
            &tmux,
            &rows,
            &range,
            &matcher,
            input.max_matched_lines_per_pane,
        )
        .await?;
        let total = matched.len();
        let page = page_within_budget(&tmux, matched, input.offset, input.limit);
        let next = input.offset + page.len();
        let truncated = next < total;
        Ok(Json(SearchPanesOutput {
            server: tmux.server_name().to_owned(),
            panes_searched: rows.len(),
            total_panes_matched: total,
            offset: input.offset,
            limit: input.limit,
            truncated,
            next_offset: truncated.then_some(next),
            matches: page,
        }))
    }
}

/// The panes of `rows` with lines `matcher` finds in `range`, captured a batch at a time.
async fn search(
    tmux: &TmuxAccess<'_>,
    rows: &[PaneRow],
    range: &CaptureRange,
    matcher: &Regex,
    max_lines_per_pane: usize,
) -> Result<Vec<PaneMatch>, ToolError> {
    let mut matched = Vec::new();
    for chunk in rows.chunks(CAPTURES_PER_BATCH) {
        let panes: Vec<PaneId> = chunk.iter().map(PaneRow::pane).collect();
        let captured = tmux
            .pane_reads()
            .capture_each(&panes, range)
            .await
            .map_err(|e| tmux.error(e, "call list_panes"))?;
        for (row, lines) in chunk.iter().zip(captured) {
            // A pane that closed since the listing simply has no matches.
            if let Some(lines) = lines
                && let Some(found) = match_pane(row, &lines, matcher, max_lines_per_pane)
            {
                matched.push(found);
            }
        }
    }
    Ok(matched)
}

/// The page `offset`, `limit` of `matched`, cut short where the call's output budget ends
/// (never empty), and charged to it.
fn page_within_budget(
    tmux: &TmuxAccess<'_>,
    matched: Vec<PaneMatch>,
    offset: usize,
    limit: usize,
) -> Vec<PaneMatch> {
    let budget = tmux
        .call
        .output
        .remaining(tmux.limits.max_output_bytes(tmux.call.sub()));
    let mut used = 0;
    let mut page = Vec::new();
    for found in matched.into_iter().skip(offset).take(limit) {
        // The lines as sent (twice, escaped), their separators, and the match's fields.
        let size: usize = found
            .matched_lines
            .iter()
            .map(|l| output::cost(l, Carried::InToolResult) + 8)
            .sum::<usize>()
            + 400;
        if !page.is_empty() && used + size > budget {
            break;
        }
        used += size;
        page.push(found);
    }
    tmux.call.output.charge(used);
    page
}

fn build_matcher(pattern: &str, regex: bool, match_case: bool) -> Result<Regex, ToolError> {
    if pattern.is_empty() {
        return Err(ToolError::invalid_arguments(
            "pattern is empty",
            "pass the text to search for",
        ));
    }
    if pattern.len() > MAX_PATTERN_LEN {
        return Err(ToolError::invalid_arguments(
            format!("pattern is longer than {MAX_PATTERN_LEN} bytes"),
            "search for a shorter, distinctive part of the text",
        ));
    }
    let source = if regex {
        pattern.to_owned()
    } else {
        regex::escape(pattern)
    };
    RegexBuilder::new(&source)
        .case_insensitive(!match_case)
        .size_limit(REGEX_SIZE_LIMIT)
        .build()
        .map_err(|e| {
            let detail: String = e.to_string().chars().take(300).collect();
            ToolError::invalid_arguments(
                format!("pattern is not a valid regex: {detail}"),
                "fix the regex (Rust syntax), or pass regex false to search for the literal text",
            )
        })
}

fn match_pane(
    row: &PaneRow,
    lines: &[Vec<u8>],
    matcher: &Regex,
    per_pane: usize,
) -> Option<PaneMatch> {
    let hits: Vec<String> = lines
        .iter()
        .map(|l| String::from_utf8_lossy(l))
        .filter(|l| matcher.is_match(l))
        .map(|l| shorten_line(l.trim_end()))
        .collect();
    if hits.is_empty() {
        return None;
    }
    let count = hits.len();
    let kept = hits[count.saturating_sub(per_pane)..].to_vec();
    Some(PaneMatch {
        pane_id: row.info.record.pane.to_string(),
        session_id: row.info.record.session_id.clone(),
        session_name: row.info.record.session_name.clone(),
        window_id: row.info.record.window_id.clone(),
        window_name: row.info.record.window_name.clone(),
        lines_truncated: kept.len() < count,
        matched_line_count: count,
        matched_lines: kept,
    })
}

fn shorten_line(line: &str) -> String {
    match line.char_indices().nth(MAX_LINE_CHARS) {
        Some((cut, _)) => format!("{}[... line cut ...]", &line[..cut]),
        None => line.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::error::ToolErrorKind;
    use muxgate_tmux::ops::pane_row::PaneRecord;

    fn row() -> PaneRow {
        let line = [
            "%7", "0", "$1", "@2", "0", "1", "1", "0", "80", "24", "0", "0", "1", "0", "", "0", "",
            "", "9", "1", "main", "win", "", "sh", "/",
        ]
        .join("|");
        PaneRow::from(PaneRecord::parse(line.as_bytes()).unwrap())
    }

    #[test]
    fn literal_patterns_are_escaped_and_case_folds_by_default() {
        let m = build_matcher("a.b(", false, false).unwrap();
        assert!(m.is_match("xA.B(y") && !m.is_match("axb("));
        let m = build_matcher("a.b", true, true).unwrap();
        assert!(m.is_match("axb") && !m.is_match("AXB"));
        for (pattern, regex) in [("", false), ("(", true)] {
            let err = build_matcher(pattern, regex, false).unwrap_err();
            assert_eq!(err.kind, ToolErrorKind::InvalidArguments);
        }
        assert!(build_matcher(&"a".repeat(MAX_PATTERN_LEN + 1), false, false).is_err());
        assert!(build_matcher("(a{1000}){1000}", true, false).is_err());
    }

    #[test]
    fn keeps_the_last_matches_of_a_pane() {
        let lines: Vec<Vec<u8>> = (0..10)
            .map(|i| format!("error {i}   ").into_bytes())
            .chain([b"fine".to_vec()])
            .collect();
        let m = build_matcher("ERROR", false, false).unwrap();
        let found = match_pane(&row(), &lines, &m, 3).unwrap();
        assert_eq!(found.matched_lines, ["error 7", "error 8", "error 9"]);
        assert_eq!(found.matched_line_count, 10);
        assert!(found.lines_truncated);
        assert_eq!(
            (found.pane_id.as_str(), found.window_name.as_str()),
            ("%7", "win")
        );
        assert!(
            match_pane(
                &row(),
                &lines,
                &build_matcher("zzz", false, false).unwrap(),
                3
            )
            .is_none()
        );
    }

    #[test]
    fn long_lines_are_cut() {
        let line = "é".repeat(MAX_LINE_CHARS + 5);
        let cut = shorten_line(&line);
        assert!(cut.ends_with("[... line cut ...]"));
        assert_eq!(
            cut.chars().count(),
            MAX_LINE_CHARS + "[... line cut ...]".len()
        );
    }
}
