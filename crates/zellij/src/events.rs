//! Parser for the NDJSON stream of `zellij subscribe --format json`.
//!
//! Each line is one event. A `pane_update` carries the pane's whole viewport (trailing blank
//! lines trimmed), never a diff; `pane_closed` says a subscribed pane is gone. Zellij sends an
//! update only when the viewport changed. Events carry no exit status.

use serde::Deserialize;

use super::ids::PaneId;

/// One event of a subscription.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PaneEvent {
    /// The pane's viewport after a render.
    Update {
        pane: PaneId,
        /// Visible lines, top to bottom, trailing blank lines removed.
        viewport: Vec<String>,
        /// Scrollback lines, only on the initial event and only when asked for.
        scrollback: Option<Vec<String>>,
        /// The first event after subscribing: the state when the subscription started.
        is_initial: bool,
    },
    /// The pane closed; no more events will come for it.
    Closed { pane: PaneId },
}

/// A line that is not a known event.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unexpected subscribe event {line:?}: {detail}")]
pub(crate) struct EventParseError {
    pub line: String,
    pub detail: String,
}

#[derive(Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
enum RawEvent {
    PaneUpdate {
        pane_id: String,
        viewport: Vec<String>,
        #[serde(default)]
        scrollback: Option<Vec<String>>,
        #[serde(default)]
        is_initial: bool,
    },
    PaneClosed {
        pane_id: String,
    },
}

/// Parses one NDJSON line.
pub(crate) fn parse_event(line: &str) -> Result<PaneEvent, EventParseError> {
    let fail = |detail: String| EventParseError {
        line: line.chars().take(200).collect(),
        detail,
    };
    let raw: RawEvent = serde_json::from_str(line).map_err(|e| fail(e.to_string()))?;
    let pane = |id: &str| id.parse::<PaneId>().map_err(|e| fail(e.to_string()));
    Ok(match raw {
        RawEvent::PaneUpdate {
            pane_id,
            viewport,
            scrollback,
            is_initial,
        } => PaneEvent::Update {
            pane: pane(&pane_id)?,
            viewport,
            scrollback,
            is_initial,
        },
        RawEvent::PaneClosed { pane_id } => PaneEvent::Closed {
            pane: pane(&pane_id)?,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn update_event() {
        let line = r#"{"event":"pane_update","is_initial":true,"pane_id":"terminal_0","scrollback":null,"viewport":["$ echo MK_$((40+2))","MK_42","$ "]}"#;
        assert_eq!(
            parse_event(line),
            Ok(PaneEvent::Update {
                pane: PaneId::Terminal(0),
                viewport: vec!["$ echo MK_$((40+2))".into(), "MK_42".into(), "$ ".into()],
                scrollback: None,
                is_initial: true,
            })
        );
    }

    #[test]
    fn closed_event() {
        let line = r#"{"event":"pane_closed","pane_id":"plugin_2"}"#;
        assert_eq!(
            parse_event(line),
            Ok(PaneEvent::Closed {
                pane: PaneId::Plugin(2)
            })
        );
    }

    #[test]
    fn junk_is_an_error() {
        for line in [
            "",
            "Pane terminal_9 not found",
            r#"{"event":"other"}"#,
            r#"{"event":"pane_closed","pane_id":"x"}"#,
            r#"{"event":"pane_update","pane_id":"terminal_1"}"#,
        ] {
            assert!(parse_event(line).is_err(), "{line:?}");
        }
    }
}
