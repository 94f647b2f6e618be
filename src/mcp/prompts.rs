//! MCP prompts: short recipes that tell a model which tools to call, in which order, for common
//! jobs (run a command and wait for it, find out why a pane fails, set up a workspace, stop a
//! program politely).
//!
//! Prompts are static text with validated arguments interpolated; they never touch tmux. An
//! argument that names a tmux object is checked like a tool argument (a pane must look like
//! `%N`), so a recipe never tells a model to use a target the tools would refuse.

use rmcp::ErrorData;
use rmcp::model::{GetPromptResult, JsonObject, Prompt, PromptArgument, PromptMessage, Role};
use serde_json::Value;

use muxgate_tmux::wire::target::{SessionName, Target};

/// One argument of a prompt.
struct ArgSpec {
    name: &'static str,
    description: &'static str,
    required: bool,
}

/// One prompt: its name, what it is for, and its arguments.
struct PromptSpec {
    name: &'static str,
    title: &'static str,
    description: &'static str,
    arguments: &'static [ArgSpec],
}

const SERVER_ARG: ArgSpec = ArgSpec {
    name: "server",
    description: "Configured tmux server name (from list_servers); omit when there is one",
    required: false,
};

const PANE_ARG: ArgSpec = ArgSpec {
    name: "pane_id",
    description: "The pane (%N)",
    required: true,
};

const PROMPTS: [PromptSpec; 4] = [
    PromptSpec {
        name: "run_and_wait",
        title: "Run a command and wait for it",
        description: "Run a shell command in a pane and get its exit status and output without polling.",
        arguments: &[
            ArgSpec {
                name: "command",
                description: "The shell command to run",
                required: true,
            },
            ArgSpec {
                name: "pane_id",
                description: "Pane to run it in (%N); omit to create a session for it",
                required: false,
            },
            SERVER_ARG,
        ],
    },
    PromptSpec {
        name: "diagnose_failing_pane",
        title: "Diagnose a failing pane",
        description: "Find out why the program in a pane failed or hangs, without disturbing it.",
        arguments: &[PANE_ARG, SERVER_ARG],
    },
    PromptSpec {
        name: "build_dev_workspace",
        title: "Build a development workspace",
        description: "Create a detached session with editor, test and server windows for a project.",
        arguments: &[
            ArgSpec {
                name: "session_name",
                description: "Name of the new session (A-Z a-z 0-9 _ -)",
                required: true,
            },
            ArgSpec {
                name: "project_dir",
                description: "Absolute path of the project",
                required: false,
            },
            SERVER_ARG,
        ],
    },
    PromptSpec {
        name: "interrupt_gracefully",
        title: "Interrupt a program gracefully",
        description: "Stop the program running in a pane, escalating only as far as needed.",
        arguments: &[PANE_ARG, SERVER_ARG],
    },
];

/// Every prompt, for `prompts/list`.
pub(crate) fn list() -> Vec<Prompt> {
    PROMPTS
        .iter()
        .map(|spec| {
            let arguments = spec
                .arguments
                .iter()
                .map(|a| {
                    PromptArgument::new(a.name)
                        .with_description(a.description)
                        .with_required(a.required)
                })
                .collect();
            Prompt::new(spec.name, Some(spec.description), Some(arguments)).with_title(spec.title)
        })
        .collect()
}

/// Checked arguments of a prompt call.
struct Args {
    values: Vec<(&'static str, String)>,
}

impl Args {
    fn get(&self, name: &str) -> Option<&str> {
        self.values
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }

    /// `, server "x"` for tool calls in the text, or nothing.
    fn server_clause(&self) -> String {
        self.get("server")
            .map_or_else(String::new, |s| format!(" with server {s:?}"))
    }
}

/// Longest accepted argument value, in bytes.
const MAX_ARGUMENT_BYTES: usize = 4096;

fn validate(spec: &PromptSpec, arguments: Option<&JsonObject>) -> Result<Args, ErrorData> {
    let empty = JsonObject::new();
    let arguments = arguments.unwrap_or(&empty);
    if let Some(unknown) = arguments
        .keys()
        .find(|k| !spec.arguments.iter().any(|a| a.name == k.as_str()))
    {
        return Err(ErrorData::invalid_params(
            format!(
                "prompt {} has no argument {:?}",
                spec.name,
                unknown.chars().take(64).collect::<String>()
            ),
            None,
        ));
    }
    let mut values = Vec::new();
    for arg in spec.arguments {
        let value = match arguments.get(arg.name) {
            None | Some(Value::Null) if arg.required => {
                return Err(ErrorData::invalid_params(
                    format!("prompt {} needs the argument {}", spec.name, arg.name),
                    None,
                ));
            }
            None | Some(Value::Null) => continue,
            Some(Value::String(text)) => text.clone(),
            Some(_) => {
                return Err(ErrorData::invalid_params(
                    format!("argument {} must be a string", arg.name),
                    None,
                ));
            }
        };
        check_value(arg.name, &value)?;
        values.push((arg.name, value));
    }
    Ok(Args { values })
}

fn check_value(name: &str, value: &str) -> Result<(), ErrorData> {
    let invalid = |why: &str| Err(ErrorData::invalid_params(format!("{name}: {why}"), None));
    if value.len() > MAX_ARGUMENT_BYTES || value.contains('\0') {
        return invalid("too long or contains a NUL byte");
    }
    match name {
        "pane_id" if !matches!(Target::parse(value), Ok(Target::Pane(_))) => {
            invalid("expected a pane id like %3 (see list_panes)")
        }
        "session_name" if SessionName::parse(value).is_err() => {
            invalid("use 1-64 characters from A-Z a-z 0-9 _ -")
        }
        "project_dir" if !value.starts_with('/') => invalid("expected an absolute path"),
        "server"
            if value.is_empty()
                || !value
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b)) =>
        {
            invalid("expected a server name from list_servers")
        }
        _ => Ok(()),
    }
}

/// `prompts/get`: the recipe with the arguments filled in.
pub(crate) fn get(
    name: &str,
    arguments: Option<&JsonObject>,
) -> Result<GetPromptResult, ErrorData> {
    let spec = PROMPTS.iter().find(|p| p.name == name).ok_or_else(|| {
        ErrorData::invalid_params(
            format!(
                "no prompt named {:?}; prompts/list shows the prompts",
                name.chars().take(64).collect::<String>()
            ),
            None,
        )
    })?;
    let args = validate(spec, arguments)?;
    let text = match spec.name {
        "run_and_wait" => run_and_wait(&args),
        "diagnose_failing_pane" => diagnose_failing_pane(&args),
        "build_dev_workspace" => build_dev_workspace(&args),
        _ => interrupt_gracefully(&args),
    };
    Ok(
        GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)])
            .with_description(spec.description),
    )
}

fn run_and_wait(args: &Args) -> String {
    let server = args.server_clause();
    let command = args.get("command").unwrap_or_default();
    let pane = match args.get("pane_id") {
        Some(pane) => format!("Use pane {pane}{server}."),
        None => format!(
            "First call create_session{server} with a short unique name; use the \
             active_pane_id it returns as the pane."
        ),
    };
    format!(
        "Run this shell command and report its exit status and output:\n\n{command}\n\n\
         {pane}\n\
         1. Call run_command with that pane and the command, and a timeout that fits the \
         command (it returns the exit status and only this command's output).\n\
         2. If it timed out, the command is still running: call wait_for_text on the pane with \
         a pattern for the end you expect (or no pattern to wait for any output), then \
         capture_since with the cursor you have to read only the new lines. Do not loop on \
         capture_pane: the wait tools wake on output without polling.\n\
         3. Report the exit status and the relevant output lines. Do not kill the pane or the \
         session afterwards unless asked to."
    )
}

fn diagnose_failing_pane(args: &Args) -> String {
    let server = args.server_clause();
    let pane = args.get("pane_id").unwrap_or_default();
    format!(
        "Find out why the program in pane {pane}{server} fails or hangs. Observe only: do not \
         type into it, restart it or kill it while diagnosing.\n\
         1. Call snapshot_pane on {pane}: is the program dead, in copy mode, on the alternate \
         screen (a full-screen program), and what does the screen show?\n\
         2. Call capture_pane on {pane} with scrollback (a negative start) to read the output \
         that led there; call search_panes for words like error, panic, Traceback or \
         Killed to find the first failure.\n\
         3. Call get_window_info on {pane} and show_option (scope pane, option \
         remain-on-exit) and show_hooks (scope pane) to see whether tmux keeps dead panes or \
         runs hooks on them.\n\
         4. Report the cause with the lines that show it, and propose the fix. Only if the \
         user agrees: respawn_pane to restart it, or send_keys to correct its input."
    )
}

fn build_dev_workspace(args: &Args) -> String {
    let server = args.server_clause();
    let session = args.get("session_name").unwrap_or_default();
    let dir = args.get("project_dir").map_or_else(String::new, |d| {
        format!(" and start_directory {d:?} (use it for every window)")
    });
    format!(
        "Set up a development workspace as session {session}{server}. Everything stays \
         detached: humans' views do not change.\n\
         1. Call create_session with name {session:?}, window_name \"editor\"{dir}.\n\
         2. Call create_window twice on the session (names \"tests\" and \"server\"); keep \
         select false.\n\
         3. In the server window call split_window to get a second pane for logs, then \
         select_layout with even-vertical.\n\
         4. Start what the project needs with run_command (builds, installs) or send_keys \
         (long-running servers), one pane each, targeting pane ids.\n\
         5. Report the session id and the pane id of each window's panes."
    )
}

fn interrupt_gracefully(args: &Args) -> String {
    let server = args.server_clause();
    let pane = args.get("pane_id").unwrap_or_default();
    format!(
        "Stop the program running in pane {pane}{server}, gently first.\n\
         1. Call snapshot_pane on {pane} to see what runs there.\n\
         2. Call send_keys with keys C-c (interrupt), then wait_for_text on {pane} for the \
         shell prompt for a few seconds.\n\
         3. If it still runs, send C-c once more; then C-\\ (quit); for a full-screen program \
         try its own quit key (q, :q, Escape) instead.\n\
         4. Only if nothing works and the user agrees: respawn_pane (kills the program and \
         restarts the shell) or kill_pane. Never send C-d blindly: it may close the shell.\n\
         5. Report what stopped it and what the pane shows now."
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn args(value: Value) -> JsonObject {
        value.as_object().unwrap().clone()
    }

    fn text(result: &GetPromptResult) -> String {
        result.messages[0]
            .content
            .as_text()
            .map(|t| t.text.clone())
            .unwrap()
    }

    #[test]
    fn every_prompt_is_listed_with_its_arguments() {
        let prompts = list();
        let names: Vec<_> = prompts.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "run_and_wait",
                "diagnose_failing_pane",
                "build_dev_workspace",
                "interrupt_gracefully"
            ]
        );
        let run = &prompts[0];
        let required: Vec<_> = run
            .arguments
            .as_ref()
            .unwrap()
            .iter()
            .filter(|a| a.required == Some(true))
            .map(|a| a.name.as_str())
            .collect();
        assert_eq!(required, ["command"]);
    }

    #[test]
    fn recipes_name_the_tools_in_order() {
        let result = get(
            "run_and_wait",
            Some(&args(json!({"command": "make test", "pane_id": "%3"}))),
        )
        .unwrap();
        let t = text(&result);
        assert!(t.contains("make test") && t.contains("pane %3"), "{t}");
        let run = t.find("run_command").unwrap();
        let wait = t.find("wait_for_text").unwrap();
        let since = t.find("capture_since").unwrap();
        assert!(run < wait && wait < since, "{t}");

        let t = text(
            &get(
                "diagnose_failing_pane",
                Some(&args(json!({"pane_id": "%1"}))),
            )
            .unwrap(),
        );
        assert!(t.find("snapshot_pane").unwrap() < t.find("capture_pane").unwrap());
        let t = text(
            &get(
                "run_and_wait",
                Some(&args(json!({"command": "ls", "server": "w"}))),
            )
            .unwrap(),
        );
        assert!(t.contains("create_session with server \"w\""), "{t}");
        let t = text(
            &get(
                "build_dev_workspace",
                Some(&args(
                    json!({"session_name": "dev", "project_dir": "/src/app"}),
                )),
            )
            .unwrap(),
        );
        assert!(
            t.contains("\"/src/app\"") && t.contains("create_window"),
            "{t}"
        );
        assert!(
            text(
                &get(
                    "interrupt_gracefully",
                    Some(&args(json!({"pane_id": "%9"})))
                )
                .unwrap()
            )
            .contains("C-c")
        );
    }

    #[test]
    fn bad_arguments_are_refused() {
        let err = |name: &str, value: Value| get(name, Some(&args(value))).unwrap_err().message;
        assert!(err("run_and_wait", json!({})).contains("needs the argument command"));
        assert!(err("run_and_wait", json!({"command": "x", "bogus": 1})).contains("bogus"));
        assert!(err("run_and_wait", json!({"command": 5})).contains("string"));
        assert!(err("diagnose_failing_pane", json!({"pane_id": "main:1"})).contains("pane id"));
        assert!(
            err("build_dev_workspace", json!({"session_name": "a b"})).contains("session_name")
        );
        assert!(
            err(
                "build_dev_workspace",
                json!({"session_name": "a", "project_dir": "rel"})
            )
            .contains("absolute")
        );
        assert!(err("run_and_wait", json!({"command": "x", "server": "a/b"})).contains("server"));
        assert!(get("nope", None).unwrap_err().message.contains("no prompt"));
    }
}
