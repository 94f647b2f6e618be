//! Worked examples for `docs/tools.md`: one call and its answer per tool that knows what agents
//! are doing. A unit test holds every example to its tool's schemas, so an example cannot name
//! an argument or an answer field the tool does not have.

/// One call and the answer it got.
pub(super) struct Example {
    pub tool: &'static str,
    /// What the example shows.
    pub title: &'static str,
    /// The call's `arguments`, as JSON.
    pub arguments: &'static str,
    /// The answer's `structuredContent`, as JSON.
    pub answer: &'static str,
}

/// The examples, in the order the document shows them.
pub(super) const EXAMPLES: &[Example] = &[
    Example {
        tool: "list_commands",
        title: "What a shell ran, with exit status and working directory",
        arguments: r#"{"target": "%3", "limit": 2}"#,
        answer: r#"{"pane_id": "%3", "recording_since_ms": 1795766372011, "shell_integration": true,
 "at_prompt": true, "cwd": "/src/app",
 "commands": [
  {"id": 7, "command": "cargo build", "cwd": "/src/app", "started_ms": 1795766380112,
   "duration_ms": 48213, "exit_status": 0, "output_bytes": 10422},
  {"id": 8, "command": "cargo test", "cwd": "/src/app", "started_ms": 1795766428990,
   "duration_ms": 9140, "exit_status": 101, "output_bytes": 3310}]}"#,
    },
    Example {
        tool: "get_command_output",
        title: "One command's own output (no prompt, no echo), its last lines",
        arguments: r#"{"target": "%3", "id": 8, "max_lines": 3}"#,
        answer: r#"{"pane_id": "%3", "id": 8, "command": "cargo test", "exit_status": 101,
 "output": "[... 41 lines truncated ...]\ntest result: FAILED. 57 passed; 1 failed\nerror: test failed, to rerun pass `--lib`",
 "line_count": 43, "truncated": true, "truncated_lines": 41, "truncated_bytes": 0}"#,
    },
    Example {
        tool: "get_pane_state",
        title: "A program blocked reading its terminal: it waits for you",
        arguments: r#"{"target": "%5"}"#,
        answer: r#"{"pane_id": "%5", "current_command": "python3", "foreground_pid": 48120,
 "foreground_command_line": "python3 deploy.py", "waiting_for_input": true,
 "blocked_in": "read_terminal", "idle_for_ms": 5210, "recording_since_ms": 1795766372011,
 "at_prompt": false, "alternate_screen": false, "in_mode": false, "dead": false}"#,
    },
    Example {
        tool: "wait_for_state",
        title: "A fleet: the first of a session's panes to finish a command",
        arguments: r#"{"targets": ["agents"], "condition": "command_finished", "timeout": 600}"#,
        answer: r#"{"outcome": "reached",
 "reached": [{"pane_id": "%12", "after_ms": 73004, "exit_status": 0, "command": "make test"}],
 "pending": ["%10", "%11", "%13"], "waited_ms": 73004, "cursor": "%10@1795766372011:3+,%11@1795766372011:0,%12@1795766372011:8,%13@1795766372011:5+"}"#,
    },
    Example {
        tool: "wait_for_state",
        title: "The next of them, missing none that finished in between (since: the last cursor)",
        arguments: r#"{"targets": ["agents"], "condition": "command_finished", "timeout": 600,
 "since": "%10@1795766372011:3+,%11@1795766372011:0,%12@1795766372011:8,%13@1795766372011:5+"}"#,
        answer: r#"{"outcome": "reached",
 "reached": [{"pane_id": "%10", "after_ms": 0, "exit_status": 1, "command": "cargo build"}],
 "pending": ["%11", "%12", "%13"], "waited_ms": 0, "cursor": "%10@1795766372011:3,%11@1795766372011:0,%12@1795766372011:8,%13@1795766372011:5+"}"#,
    },
    Example {
        tool: "wait_for_state",
        title: "Every pane you may see, until one prints a line with some text",
        arguments: r#"{"condition": "text", "pattern": "error:", "timeout": 300}"#,
        answer: r#"{"outcome": "reached",
 "reached": [{"pane_id": "%4", "after_ms": 1840, "line": "error: could not compile `app`"}],
 "pending": ["%3", "%5"], "waited_ms": 1840}"#,
    },
    Example {
        tool: "send_prompt",
        title: "A multi-line prompt to an agent CLI, submitted exactly once",
        arguments: r#"{"target": "%7", "text": "Fix the failing test in src/lib.rs.\nRun cargo test before you stop.", "timeout": 60}"#,
        answer: r#"{"pane_id": "%7", "outcome": "submitted", "ready_by": "agent_report",
 "evidence": "input_cleared", "enter_presses": 1, "waited_ms": 2310,
 "output_position": "p.eyJjIjoiJTc6MTI6MjA0OCJ9"}"#,
    },
    Example {
        tool: "report_agent_state",
        title: "An agent's own hook says it waits for you (deploy/hooks/muxgate-agent-state)",
        arguments: r#"{"target": "%7", "state": "waiting_for_input", "agent": "claude-code"}"#,
        answer: r#"{"pane_id": "%7", "state": "waiting_for_input"}"#,
    },
    Example {
        tool: "run_command",
        title: "A command's output and exit status; in an integrated shell only the command is typed",
        arguments: r#"{"target": "%3", "command": "git status --short", "timeout": 20}"#,
        answer: r#"{"pane_id": "%3", "shell": "bash", "exit_status": 0, "timed_out": false,
 "started": true, "output": " M src/lib.rs\n", "output_truncated": false,
 "truncated_lines": 0, "truncated_bytes": 0, "output_lost": false, "pane_exited": false,
 "elapsed_ms": 41, "effective_timeout": 20.0}"#,
    },
    Example {
        tool: "request_secret_input",
        title: "A client that cannot show its user a link: no link anywhere in the answer; an approver takes the request at the gateway",
        arguments: r#"{"target": "%3", "label": "sudo password on build-1"}"#,
        answer: r#"{"server": "default", "pane_id": "%3", "request_id": "s-1", "status": "pending",
 "expires_in_seconds": 300,
 "next_step": "Your client cannot show the link to its user, so it was not given to you: request s-1 waits at the gateway for 300 s for an approver (a human with a mux:approve token), who lists it with `muxgate approvals secrets` (GET /approvals/secrets), takes its link with `muxgate approvals secret-link s-1` and types the secret there. Tell your human that request s-1 (%3) waits for them; then wait for the pane's program to go on (wait_for_text or wait_for_idle)."}"#,
    },
];

/// The examples as Markdown, after the table.
pub(super) fn render() -> String {
    let mut out = String::from("\n## Examples\n");
    for example in EXAMPLES {
        out.push_str(&format!(
            "\n### `{}`: {}\n\n```json\n{}\n```\n\nanswers\n\n```json\n{}\n```\n",
            example.tool, example.title, example.arguments, example.answer
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Map, Value};

    fn object(json: &str, what: &str) -> Map<String, Value> {
        match serde_json::from_str(json) {
            Ok(Value::Object(object)) => object,
            other => panic!("{what} is not a JSON object: {other:?}"),
        }
    }

    /// The schema `schema` stands for, following a `$ref` into `root`'s `$defs`.
    fn resolved<'a>(schema: &'a Value, root: &'a Map<String, Value>) -> &'a Value {
        match schema.get("$ref").and_then(Value::as_str) {
            Some(reference) => reference
                .strip_prefix("#/$defs/")
                .and_then(|name| root.get("$defs")?.get(name))
                .unwrap_or(schema),
            None => schema,
        }
    }

    /// Checks that every field of `value` (and of the objects in its arrays) is a property of
    /// `schema`.
    fn fits(value: &Value, schema: &Value, root: &Map<String, Value>, what: &str) {
        let schema = resolved(schema, root);
        match value {
            Value::Object(fields) => {
                let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
                    return;
                };
                for (name, field) in fields {
                    let property = properties
                        .get(name)
                        .unwrap_or_else(|| panic!("{what}: no field {name}"));
                    fits(field, property, root, what);
                }
            }
            Value::Array(items) => {
                if let Some(item) = schema.get("items") {
                    for value in items {
                        fits(value, item, root, what);
                    }
                }
            }
            _ => {}
        }
    }

    #[test]
    fn every_example_fits_its_tools_schemas() {
        let tools = crate::mcp::catalog::tools();
        for example in EXAMPLES {
            let what = format!("{} ({})", example.tool, example.title);
            let tool = tools
                .iter()
                .find(|t| t.name == example.tool)
                .unwrap_or_else(|| panic!("{what}: no such tool"));
            let arguments = object(example.arguments, &what);
            let input = &tool.input_schema;
            fits(
                &Value::Object(arguments.clone()),
                &Value::Object((**input).clone()),
                input,
                &what,
            );
            let required = input.get("required").and_then(Value::as_array);
            for name in required.into_iter().flatten() {
                let name = name.as_str().unwrap_or_default();
                assert!(arguments.contains_key(name), "{what}: {name} is required");
            }
            let output = tool.output_schema.as_ref().expect("an output schema");
            let answer = Value::Object(object(example.answer, &what));
            fits(&answer, &Value::Object((**output).clone()), output, &what);
        }
    }

    #[test]
    fn the_examples_follow_the_table() {
        let rendered = render();
        assert!(rendered.starts_with("\n## Examples\n"));
        assert_eq!(rendered.matches("\n### ").count(), EXAMPLES.len());
    }
}
