//! The text of an answer: what a model reads, rendered from the structured answer.
//!
//! A tool's `structuredContent` is the full, schema-valid answer, for programs. Many clients show
//! the model only the text content, and the MCP default (the same JSON again, as text) makes
//! every answer twice as large and spells each row's keys over and over. The text is rendered
//! instead, losslessly and compactly:
//!
//! ```text
//! server: main
//! panes (2):
//! id→session_name→width→height→active→current_command
//! %0→work→80→24→true→bash
//! %1→work→80→24→→vim
//! output:
//! …a multi-line string, verbatim, last…
//! ```
//!
//! (`→` stands for a tab.) Scalars are `key: value` lines (nested objects flatten to
//! `key.sub`); a list of objects is a tab-separated table under one header (an absent field is
//! an empty cell); a list of scalars is a JSON array; multi-line strings come last, verbatim,
//! each under its `key:` line. Cells that could break the table (tabs, newlines, or a value that
//! is not a string, number or boolean) are written as JSON.
//!
//! Nulls say nothing an absent key does not, so [`drop_nulls`] removes them from the structured
//! answer too (output schemas never require a nullable field, see the catalog's compaction).

use std::fmt::Write;

use rmcp::model::{CallToolResponse, ContentBlock};
use serde_json::{Map, Value};

/// Shapes a successful structured answer: nulls dropped, and its text rendered from it in place
/// of any text it had (none from muxgate's [`super::json_answer::Json`], a JSON copy from rmcp's
/// `CallToolResult::structured`). Errors and answers without structured content are left as
/// they are.
pub(crate) fn shape(response: &mut CallToolResponse) {
    let CallToolResponse::Complete(result) = response else {
        return;
    };
    if result.is_error == Some(true) {
        return;
    }
    let Some(structured) = result.structured_content.as_mut() else {
        return;
    };
    drop_nulls(structured);
    result.content = vec![ContentBlock::text(render(structured))];
}

/// The text rendering of a structured answer.
pub(crate) fn render(value: &Value) -> String {
    let mut out = String::new();
    match value {
        Value::Object(object) => render_object(&mut out, object),
        other => push_line(&mut out, "", &scalar(other)),
    }
    if out.ends_with('\n') {
        out.pop();
    }
    out
}

/// Removes every `null` member of every object, recursively (array elements stay: a position
/// in a list carries meaning).
pub(crate) fn drop_nulls(value: &mut Value) {
    match value {
        Value::Object(object) => {
            object.retain(|_, member| !member.is_null());
            object.values_mut().for_each(drop_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_nulls),
        _ => {}
    }
}

fn render_object(out: &mut String, object: &Map<String, Value>) {
    let mut blocks = Vec::new();
    let mut tables = Vec::new();
    flatten(out, "", object, &mut tables, &mut blocks);
    for (key, rows) in tables {
        render_table(out, &key, rows);
    }
    for (key, text) in blocks {
        let _ = writeln!(out, "{key}:");
        out.push_str(text);
        if !text.ends_with('\n') {
            out.push('\n');
        }
    }
}

/// Writes the scalar members of `object` (under `prefix`) and collects its tables and
/// multi-line texts, which are written after every scalar.
fn flatten<'a>(
    out: &mut String,
    prefix: &str,
    object: &'a Map<String, Value>,
    tables: &mut Vec<(String, &'a [Value])>,
    blocks: &mut Vec<(String, &'a str)>,
) {
    for (key, value) in object {
        let key = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        match value {
            Value::Object(inner) => flatten(out, &key, inner, tables, blocks),
            Value::Array(items) if !items.is_empty() && items.iter().all(Value::is_object) => {
                tables.push((key, items));
            }
            Value::String(text) if text.contains(['\n', '\r']) => blocks.push((key, text)),
            Value::Array(_) => push_line(out, &key, &Value::to_string(value)),
            other => push_line(out, &key, &scalar(other)),
        }
    }
}

fn render_table(out: &mut String, key: &str, rows: &[Value]) {
    let mut columns: Vec<&str> = Vec::new();
    for row in rows.iter().filter_map(Value::as_object) {
        for column in row.keys() {
            if !columns.contains(&column.as_str()) {
                columns.push(column);
            }
        }
    }
    let _ = writeln!(out, "{key} ({}):", rows.len());
    out.push_str(&columns.join("\t"));
    out.push('\n');
    for row in rows {
        let cells: Vec<String> = columns
            .iter()
            .map(|column| row.get(*column).map(cell).unwrap_or_default())
            .collect();
        out.push_str(&cells.join("\t"));
        out.push('\n');
    }
}

/// A table cell: plain when it cannot be mistaken for a cell boundary, JSON otherwise.
fn cell(value: &Value) -> String {
    match value {
        Value::String(text) if !text.contains(['\t', '\n', '\r']) && text.trim() == text => {
            text.clone()
        }
        Value::Bool(_) | Value::Number(_) | Value::Null => scalar(value),
        other => other.to_string(),
    }
}

fn scalar(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Null => "null".to_owned(),
        other => other.to_string(),
    }
}

fn push_line(out: &mut String, key: &str, value: &str) {
    if key.is_empty() {
        out.push_str(value);
    } else {
        let _ = write!(out, "{key}: {value}");
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn scalars_are_lines_and_nested_objects_flatten() {
        let text = render(&json!({
            "server": "main",
            "exit_status": 0,
            "timed_out": false,
            "cursor": {"x": 3, "y": 7},
            "names": ["a", "b c"],
        }));
        assert_eq!(
            text,
            "server: main\nexit_status: 0\ntimed_out: false\ncursor.x: 3\ncursor.y: 7\n\
             names: [\"a\",\"b c\"]"
        );
    }

    #[test]
    fn rows_become_one_table_with_every_column() {
        let text = render(&json!({
            "server": "main",
            "panes": [
                {"id": "%0", "active": true, "current_command": "bash"},
                {"id": "%1", "current_command": "vim", "dead": true},
            ],
        }));
        assert_eq!(
            text,
            "server: main\npanes (2):\nid\tactive\tcurrent_command\tdead\n\
             %0\ttrue\tbash\t\n%1\t\tvim\ttrue"
        );
    }

    #[test]
    fn cells_that_could_break_the_table_are_json() {
        let text = render(&json!({"rows": [{"a": "x\ty", "b": " padded", "c": {"k": 1}}]}));
        assert_eq!(
            text,
            "rows (1):\na\tb\tc\n\"x\\ty\"\t\" padded\"\t{\"k\":1}"
        );
    }

    #[test]
    fn multi_line_text_comes_last_verbatim() {
        let text = render(&json!({
            "output": "line 1\nkey: not a key\n",
            "exit_status": 2,
        }));
        assert_eq!(text, "exit_status: 2\noutput:\nline 1\nkey: not a key");
    }

    #[test]
    fn an_empty_list_stays_visible() {
        assert_eq!(render(&json!({"panes": []})), "panes: []");
    }

    #[test]
    fn nulls_go_from_objects_but_not_from_lists() {
        let mut value = json!({"a": null, "b": {"c": null, "d": 1}, "e": [null, {"f": null}]});
        drop_nulls(&mut value);
        assert_eq!(value, json!({"b": {"d": 1}, "e": [null, {}]}));
    }
}
