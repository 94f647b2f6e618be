//! Pane tools over MCP (real HTTP, rmcp's client) against real tmux servers: reads, searches,
//! lifecycle, copy mode, pipes, every validation path, the session ACL, and a human attached
//! through a terminal whose view read-only tools, split_window and send_keys leave alone.

mod common;

use std::time::Duration;

use common::mcp_client::{Client, connect, connect_with, fails, ok};
use common::tmux::TestTmux;
use common::{TestGateway, config_with_server, spawn_gateway, wait_until};
use serde_json::{Value, json};

/// The gateway's name for the test server.
const SERVER: &str = "work";

async fn gateway(tmux: &TestTmux) -> TestGateway {
    spawn_gateway(config_with_server(SERVER, &tmux.socket, false)).await
}

/// A token for `sub` limited to sessions matching `sessions`, with every scope.
fn limited_token(gateway: &TestGateway, sub: &str, sessions: &[&str]) -> String {
    muxgate::auth::TokenMinter::from_config(&gateway.config.auth)
        .unwrap()
        .mint(&muxgate::auth::MintRequest {
            sub: sub.into(),
            scopes: vec!["mux:read".into(), "mux:write".into(), "mux:admin".into()],
            ttl: Duration::from_secs(600),
            servers: None,
            sessions: Some(sessions.iter().map(|s| (*s).to_owned()).collect()),
            own_sessions: false,
            workspace: None,
            toolsets: None,
        })
        .unwrap()
}

/// Waits until the pane's whole history (and screen) contains `needle`.
async fn wait_for_text(tmux: &TestTmux, pane: &str, needle: &str) {
    let found = wait_until(Duration::from_secs(10), || {
        tmux.ok(&["capture-pane", "-p", "-J", "-S", "-", "-t", pane])
            .contains(needle)
    })
    .await;
    assert!(found, "{needle:?} never appeared in {pane}");
}

/// Waits for a whole line of output: unlike [`wait_for_text`], the echo of the command that
/// prints it (`seq 1 100` contains `100`) does not count.
async fn wait_for_line(tmux: &TestTmux, pane: &str, line: &str) {
    let found = wait_until(Duration::from_secs(10), || {
        tmux.ok(&["capture-pane", "-p", "-J", "-S", "-", "-t", pane])
            .lines()
            .any(|printed| printed.trim_end() == line)
    })
    .await;
    assert!(found, "no line {line:?} appeared in {pane}");
}

fn format(tmux: &TestTmux, target: &str, format: &str) -> String {
    tmux.ok(&["display-message", "-p", "-t", target, format])
        .trim_end()
        .to_owned()
}

fn ids(panes: &Value) -> Vec<String> {
    panes
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap().to_owned())
        .collect()
}

/// The calls every tool with a `target` must refuse the same way.
async fn assert_target_validation(client: &Client, tool: &str, base: Value) {
    let with = |key: &str, value: Value| {
        let mut args = base.clone();
        args[key] = value;
        args
    };
    let err = fails(client, tool, with("bogus", json!(1)), "invalid_arguments").await;
    assert!(
        err["message"].as_str().unwrap().contains("bogus"),
        "{tool}: {err}"
    );
    let err = fails(
        client,
        tool,
        with("target", json!("main:{last}")),
        "invalid_arguments",
    )
    .await;
    assert!(
        err["message"].as_str().unwrap().contains("main:{last}"),
        "{tool}: {err}"
    );
    let mut missing = base.clone();
    missing.as_object_mut().unwrap().remove("target");
    let err = fails(client, tool, missing, "invalid_arguments").await;
    assert!(
        err["message"].as_str().unwrap().contains("target"),
        "{tool}: {err}"
    );
    fails(client, tool, with("target", json!("%9999")), "not_found").await;
    let err = fails(client, tool, with("server", json!("nope")), "not_found").await;
    assert!(err["suggestion"].as_str().unwrap().contains("list_servers"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listings_and_single_pane_reads() {
    let tmux = TestTmux::start();
    let left = format(&tmux, "main", "#{pane_id}");
    tmux.ok(&["split-window", "-h", "-t", &left]);
    let right = format(&tmux, "main", "#{pane_id}");
    tmux.ok(&["new-window", "-d", "-t", "main", "-n", "logs"]);
    tmux.ok(&[
        "new-session",
        "-d",
        "-s",
        "ci-build",
        "-x",
        "80",
        "-y",
        "24",
    ]);
    tmux.ok(&["send-keys", "-t", &right, "cd /tmp && sleep 30", "Enter"]);
    let gateway = gateway(&tmux).await;
    let client = connect(&gateway).await;

    // Every pane, in one listing, as tmux itself lists them.
    let all = ok(&client, "list_panes", json!({})).await;
    let expected: Vec<String> = tmux
        .ok(&["list-panes", "-a", "-F", "#{pane_id}"])
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(ids(&all["panes"]), expected);
    assert_eq!(all["server"], SERVER);

    // Scopes: a session, a window, the window of a pane.
    let session = ok(&client, "list_panes", json!({"target": "main"})).await;
    assert_eq!(session["panes"].as_array().unwrap().len(), 3);
    let window_id = format(&tmux, &left, "#{window_id}");
    let window = ok(&client, "list_panes", json!({"target": window_id})).await;
    assert_eq!(ids(&window["panes"]), [left.clone(), right.clone()]);
    let of_pane = ok(&client, "list_panes", json!({"target": right})).await;
    assert_eq!(ids(&of_pane["panes"]), [left.clone(), right.clone()]);

    // Filters, as an object and as a JSON string.
    assert!(
        wait_until(Duration::from_secs(10), || format(
            &tmux,
            &right,
            "#{pane_current_command}"
        ) == "sleep")
        .await
    );
    let sleeping = ok(
        &client,
        "list_panes",
        json!({"filters": {"current_command": "sleep"}}),
    )
    .await;
    assert_eq!(ids(&sleeping["panes"]), std::slice::from_ref(&right));
    let narrow = ok(
        &client,
        "list_panes",
        json!({"filters": "{\"session_name__startswith\": \"ci\", \"width__lte\": 80}"}),
    )
    .await;
    assert_eq!(narrow["panes"].as_array().unwrap().len(), 1);
    assert_eq!(narrow["panes"][0]["session_name"], "ci-build");
    let err = fails(
        &client,
        "list_panes",
        json!({"filters": {"colour": "red"}}),
        "invalid_arguments",
    )
    .await;
    assert!(
        err["suggestion"]
            .as_str()
            .unwrap()
            .contains("current_command")
    );
    fails(
        &client,
        "list_panes",
        json!({"filters": {"title__like": "x"}}),
        "invalid_arguments",
    )
    .await;
    fails(
        &client,
        "list_panes",
        json!({"filters": "not json"}),
        "invalid_arguments",
    )
    .await;
    fails(
        &client,
        "list_panes",
        json!({"target": "nosuch"}),
        "not_found",
    )
    .await;
    fails(
        &client,
        "list_panes",
        json!({"target": "@999"}),
        "not_found",
    )
    .await;
    fails(
        &client,
        "list_panes",
        json!({"bogus": 1}),
        "invalid_arguments",
    )
    .await;

    // get_pane_info: a pane, a window's active pane, a session's active pane.
    let info = ok(&client, "get_pane_info", json!({"target": right})).await;
    assert_eq!(info["id"], right.as_str());
    assert_eq!(info["current_command"], "sleep");
    assert_eq!(
        info["current_path"],
        format(&tmux, &right, "#{pane_current_path}")
    );
    assert_eq!(
        info["width"].as_u64().unwrap().to_string(),
        format(&tmux, &right, "#{pane_width}")
    );
    assert!(info["active"].as_bool().unwrap());
    assert_eq!(info["dead"], false);
    let by_window = ok(&client, "get_pane_info", json!({"target": window_id})).await;
    assert_eq!(by_window["id"], right.as_str());
    let by_session = ok(&client, "get_pane_info", json!({"target": "ci-build"})).await;
    assert_eq!(by_session["session_name"], "ci-build");
    assert_target_validation(&client, "get_pane_info", json!({"target": left})).await;

    // find_pane_by_position: left / right halves.
    for (corner, want) in [
        ("top_left", &left),
        ("bottom_left", &left),
        ("top_right", &right),
        ("bottom_right", &right),
    ] {
        let found = ok(
            &client,
            "find_pane_by_position",
            json!({"target": window_id, "corner": corner}),
        )
        .await;
        assert_eq!(found["id"], want.as_str(), "{corner}");
    }
    let err = fails(
        &client,
        "find_pane_by_position",
        json!({"target": left, "corner": "middle"}),
        "invalid_arguments",
    )
    .await;
    assert!(err["message"].as_str().unwrap().contains("middle"), "{err}");
    assert_target_validation(
        &client,
        "find_pane_by_position",
        json!({"target": left, "corner": "top_left"}),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn captures_snapshots_formats_and_searches() {
    let tmux = TestTmux::start();
    let pane = format(&tmux, "main", "#{pane_id}");
    tmux.ok(&[
        "send-keys",
        "-t",
        &pane,
        "for i in $(seq 1 300); do echo line$i; done; printf '\\033[31mred\\033[0m\\n'; printf '%0250d\\n' 7",
        "Enter",
    ]);
    wait_for_text(&tmux, &pane, "0007").await;
    let gateway = gateway(&tmux).await;
    let client = connect(&gateway).await;

    // The whole history, tail kept behind a marker.
    let capture = ok(
        &client,
        "capture_pane",
        json!({"target": pane, "start": "-", "max_lines": 50}),
    )
    .await;
    let text = capture["text"].as_str().unwrap();
    assert!(capture["truncated"].as_bool().unwrap());
    assert_eq!(capture["lines"], 50);
    let cut = capture["truncated_lines"].as_u64().unwrap();
    assert_eq!(cut, capture["total_lines"].as_u64().unwrap() - 50);
    assert!(
        text.starts_with(&format!("[... {cut} lines truncated ...]\n")),
        "{text}"
    );
    assert!(
        text.contains("line300\n") && !text.contains("line200\n"),
        "{text}"
    );
    assert_eq!(text.lines().count(), 51);

    // Default: the visible screen only.
    let screen = ok(&client, "capture_pane", json!({"target": pane})).await;
    let screen_text = screen["text"].as_str().unwrap();
    assert!(!screen_text.contains("line1\n") && screen_text.contains("line299"));
    assert_eq!(screen["truncated"], false);

    // A range in the history; wrapped lines joined or not; colours kept on request.
    let range = ok(
        &client,
        "capture_pane",
        json!({"target": pane, "start": -5, "end": "-1"}),
    )
    .await;
    assert_eq!(range["lines"], 5, "{range}");
    let wrapped = ok(&client, "capture_pane", json!({"target": pane})).await;
    let joined = ok(
        &client,
        "capture_pane",
        json!({"target": pane, "join_wrapped": true}),
    )
    .await;
    let long = format!("{:0250}", 7);
    assert!(!wrapped["text"].as_str().unwrap().contains(&long));
    assert!(joined["text"].as_str().unwrap().contains(&long));
    let colours = ok(
        &client,
        "capture_pane",
        json!({"target": pane, "escape_sequences": true}),
    )
    .await;
    assert!(colours["text"].as_str().unwrap().contains("\u{1b}[31mred"));
    assert!(!screen_text.contains('\u{1b}'));
    for bad in [
        json!({"start": "top"}),
        json!({"max_lines": 0}),
        json!({"end": 1.5}),
    ] {
        let mut args = bad.clone();
        args["target"] = json!(pane);
        fails(&client, "capture_pane", args, "invalid_arguments").await;
    }
    assert_target_validation(&client, "capture_pane", json!({"target": pane})).await;

    // snapshot_pane: one call, state and text agree with tmux. By default: what the pane shows
    // and runs, the cursor, and only what is unusual about it.
    let brief = ok(&client, "snapshot_pane", json!({"target": "main"})).await;
    assert_eq!(brief["pane_id"], pane.as_str());
    assert!(brief["content"].as_str().unwrap().contains("line299"));
    for hidden in [
        "at_top",
        "history_limit",
        "pid",
        "alternate_screen",
        "in_mode",
        "title",
    ] {
        assert!(brief.get(hidden).is_none(), "{hidden} in {brief}");
    }
    let titled = ok(
        &client,
        "snapshot_pane",
        json!({"target": "main", "fields": ["title"]}),
    )
    .await;
    let titled = titled.as_object().unwrap();
    let mut keys: Vec<&str> = titled.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["pane_id", "server", "title"]);
    let snap = ok(
        &client,
        "snapshot_pane",
        json!({"target": "main", "fields": ["all"]}),
    )
    .await;
    assert_eq!(snap["pane_id"], pane.as_str());
    for (field, variable) in [
        ("cursor_x", "cursor_x"),
        ("cursor_y", "cursor_y"),
        ("width", "pane_width"),
        ("height", "pane_height"),
        ("history_size", "history_size"),
        ("pid", "pane_pid"),
    ] {
        assert_eq!(
            snap[field].as_u64().unwrap().to_string(),
            format(&tmux, &pane, &format!("#{{{variable}}}")),
            "{field}"
        );
    }
    assert_eq!(snap["alternate_screen"], false);
    assert_eq!(snap["in_mode"], false);
    assert_eq!(snap["current_command"], "sh");
    assert!(snap["at_top"].as_bool().unwrap() && snap["at_left"].as_bool().unwrap());
    assert!(snap["content"].as_str().unwrap().contains("line299"));
    let small = ok(
        &client,
        "snapshot_pane",
        json!({"target": pane, "max_lines": 3}),
    )
    .await;
    assert_eq!(small["content_lines"], 3);
    assert!(small["truncated"].as_bool().unwrap());
    assert_target_validation(&client, "snapshot_pane", json!({"target": pane})).await;

    // display_message expands formats in the pane's context; commands are refused.
    let shown = ok(
        &client,
        "display_message",
        json!({"target": pane, "format_string": "#{pane_id}:#{pane_width}:#{?pane_dead,dead,alive}"}),
    )
    .await;
    assert_eq!(
        shown["output"],
        format!("{pane}:{}:alive", format(&tmux, &pane, "#{pane_width}"))
    );
    let marker = std::env::temp_dir().join(format!("muxgate-display-{}", std::process::id()));
    // The grammar: commands, re-expansion, the regex that pins tmux at 100 % CPU, the padding
    // that takes it to gigabytes, loops and name checks that reveal sessions the caller may
    // not see, and server-wide variables; each refusal names the construct.
    for (refused, names) in [
        (format!("#(touch {})", marker.display()), "#("),
        ("#{E:status-right}".to_owned(), "`E`"),
        ("#{T:status-left}".to_owned(), "`T`"),
        (
            "#{l;s/^(a|a)*\\1*$/x/:aaaaaaaaaaaaaaaaaaaaaaaaaaaa}".to_owned(),
            "`s/…/`",
        ),
        ("#{p200000000:pane_id}".to_owned(), "1000"),
        ("#{N/s:b-1}".to_owned(), "`N/s`"),
        ("#{S:#{session_name} }".to_owned(), "`S`"),
        ("#{socket_path}".to_owned(), "socket_path"),
        ("#{pid}".to_owned(), "pid"),
    ] {
        let err = fails(
            &client,
            "display_message",
            json!({"target": pane, "format_string": refused}),
            "invalid_arguments",
        )
        .await;
        let message = err["message"].as_str().unwrap();
        assert!(
            message.contains("refused") && message.contains(names),
            "{message}"
        );
    }
    assert!(!marker.exists());
    // tmux never saw them: it answers at once.
    let started = std::time::Instant::now();
    ok(
        &client,
        "display_message",
        json!({"target": pane, "format_string": "#{=5:pane_id}"}),
    )
    .await;
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_target_validation(
        &client,
        "display_message",
        json!({"target": pane, "format_string": "#{pane_id}"}),
    )
    .await;

    // search_panes: literal, case, regex, scope, scrollback, paging.
    // The new pane prints its line itself: typed into a shell that has not started yet, the
    // output would share a row with the prompt the shell prints late ("# NEEDLE-42").
    let other = tmux
        .split_running(&pane, "echo NEEDLE-$((6*7)); exec sh")
        .to_string();
    wait_for_text(&tmux, &other, "NEEDLE-42").await;
    tmux.ok(&["send-keys", "-t", &pane, "echo needle-lower", "Enter"]);
    wait_for_text(&tmux, &pane, "needle-lower").await;
    let found = ok(&client, "search_panes", json!({"pattern": "needle-"})).await;
    assert_eq!(found["total_panes_matched"], 2, "{found}");
    let exact = ok(
        &client,
        "search_panes",
        json!({"pattern": "NEEDLE-42", "match_case": true}),
    )
    .await;
    assert_eq!(exact["matches"].as_array().unwrap().len(), 1);
    assert_eq!(exact["matches"][0]["pane_id"], other.as_str());
    assert_eq!(exact["matches"][0]["matched_lines"], json!(["NEEDLE-42"]));
    let regex = ok(
        &client,
        "search_panes",
        json!({"pattern": "^NEEDLE-\\d+$", "regex": true}),
    )
    .await;
    assert_eq!(regex["total_panes_matched"], 1);
    let literal = ok(&client, "search_panes", json!({"pattern": "NEEDLE-\\d+"})).await;
    assert_eq!(literal["total_panes_matched"], 0);
    let scoped = ok(
        &client,
        "search_panes",
        json!({"pattern": "needle", "target": other}),
    )
    .await;
    assert_eq!(
        scoped["total_panes_matched"], 2,
        "a pane scope searches its window"
    );
    // The loop's first lines scrolled off screen long ago: only the scrollback has them.
    let visible = ok(&client, "search_panes", json!({"pattern": "line150"})).await;
    assert_eq!(visible["total_panes_matched"], 0);
    let history = ok(
        &client,
        "search_panes",
        json!({"pattern": "line1", "start": "-", "max_matched_lines_per_pane": 2}),
    )
    .await;
    let lines = &history["matches"][0];
    assert_eq!(lines["matched_lines"].as_array().unwrap().len(), 2);
    assert!(lines["lines_truncated"].as_bool().unwrap());
    assert!(lines["matched_line_count"].as_u64().unwrap() > 100);
    let page = ok(
        &client,
        "search_panes",
        json!({"pattern": "needle", "limit": 1}),
    )
    .await;
    assert_eq!(page["matches"].as_array().unwrap().len(), 1);
    assert_eq!(page["truncated"], true);
    assert_eq!(page["next_offset"], 1);
    let second = ok(
        &client,
        "search_panes",
        json!({"pattern": "needle", "limit": 1, "offset": 1}),
    )
    .await;
    assert_eq!(second["truncated"], false);
    assert_ne!(
        second["matches"][0]["pane_id"],
        page["matches"][0]["pane_id"]
    );
    for bad in [
        json!({"pattern": ""}),
        json!({"pattern": "(", "regex": true}),
        json!({"pattern": "x", "limit": 0}),
        json!({"pattern": "x", "target": "a:{last}"}),
        json!({"pattern": "x", "bogus": true}),
    ] {
        fails(&client, "search_panes", bad, "invalid_arguments").await;
    }
    fails(
        &client,
        "search_panes",
        json!({"pattern": "x", "target": "@999"}),
        "not_found",
    )
    .await;
}

/// The smallest output budget a gateway accepts.
const SMALL_BUDGET: u32 = 16 * 1024;

/// A pane holding more than [`SMALL_BUDGET`] of text (1500 lines of 23 bytes, with quotes and a
/// backslash to escape).
async fn flooded_pane(tmux: &TestTmux) -> String {
    let pane = format(tmux, "main", "#{pane_id}");
    tmux.ok(&[
        "send-keys",
        "-t",
        &pane,
        r#"seq -f 'row%05g "quoted" \x' 1 1500"#,
        "Enter",
    ]);
    wait_for_text(tmux, &pane, "row01500").await;
    pane
}

/// A tool call over raw HTTP: the answer's size on the wire and its result.
async fn call_measured(gateway: &TestGateway, tool: &str, arguments: Value) -> (usize, Value) {
    let mut raw = gateway.raw();
    raw.initialize().await;
    let response = raw
        .post(&json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                      "params": {"name": tool, "arguments": arguments}}))
        .send()
        .await
        .unwrap();
    let body = response.text().await.unwrap();
    let message = if body.trim_start().starts_with('{') {
        body.clone()
    } else {
        common::sse_events(&body)
            .into_iter()
            .map(|event| event.data)
            .find(|data| data.contains(r#""id":7"#))
            .expect("the answer event")
    };
    let message: Value = serde_json::from_str(&message).unwrap();
    (body.len(), message["result"].clone())
}

fn small_budget_gateway_config(tmux: &TestTmux) -> muxgate::config::Config {
    let mut config = config_with_server(SERVER, &tmux.socket, false);
    config.limits.max_output_bytes = std::num::NonZeroU32::new(SMALL_BUDGET).unwrap();
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_capped_capture_fits_the_budget_whole_and_keeps_the_tail() {
    let tmux = TestTmux::start();
    let pane = flooded_pane(&tmux).await;
    let gateway = spawn_gateway(small_budget_gateway_config(&tmux)).await;
    let (size, result) = call_measured(
        &gateway,
        "capture_pane",
        json!({"target": pane, "start": "-", "max_lines": 100000}),
    )
    .await;
    assert!(
        size <= SMALL_BUDGET as usize,
        "the whole answer is {size} bytes"
    );
    let capture = &result["structuredContent"];
    let text = capture["text"].as_str().unwrap();
    assert!(capture["dropped_bytes"].as_u64().unwrap() > 0);
    assert_eq!(capture["truncated"], true);
    assert!(
        text.contains(r#"row01500 "quoted" \x"#),
        "the tail is kept: {text}"
    );
    // The budget is used, not wasted: the text is most of what could fit.
    assert!(size > SMALL_BUDGET as usize * 3 / 4, "{size}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_shares_one_budget() {
    let tmux = TestTmux::start();
    let pane = flooded_pane(&tmux).await;
    let gateway = spawn_gateway(small_budget_gateway_config(&tmux)).await;
    let capture = json!({"op": "capture_pane", "target": pane, "start": "-", "max_lines": 100000});
    let (size, result) = call_measured(
        &gateway,
        "pane_batch",
        json!({"operations": [capture, capture, capture]}),
    )
    .await;
    assert_eq!(result["isError"], false, "{result}");
    assert!(
        size <= SMALL_BUDGET as usize,
        "the whole answer is {size} bytes"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_too_large_for_the_budget_is_an_error_naming_it() {
    let tmux = TestTmux::start();
    for i in 0..80 {
        tmux.ok(&[
            "new-session",
            "-d",
            "-s",
            &format!("{i:03}-{}", "n".repeat(60)),
        ]);
    }
    let gateway = spawn_gateway(small_budget_gateway_config(&tmux)).await;
    let (size, result) = call_measured(&gateway, "list_sessions", json!({})).await;
    assert!(size <= SMALL_BUDGET as usize, "{size}");
    assert_eq!(result["isError"], true, "{result}");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("max_output_bytes (16384)"), "{text}");
    assert!(text.contains("ask for less"), "{text}");
}

/// A tmux reply larger than the budget lets the gateway read (here 200 KB of scrollback against
/// 16 KiB) is the caller's to shrink: an `invalid_arguments` error naming `max_output_bytes`
/// and saying how to ask for less, never "tmux refused the command"; the smaller range works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_too_large_to_read_names_the_budget_and_how_to_ask_for_less() {
    let tmux = TestTmux::start();
    let pane = format(&tmux, "main", "#{pane_id}");
    tmux.ok(&[
        "send-keys",
        "-t",
        &pane,
        "seq -f '%0100g' 1 3000; echo flood-$((6*7))-done",
        "Enter",
    ]);
    wait_for_text(&tmux, &pane, "flood-42-done").await;
    let gateway = spawn_gateway(small_budget_gateway_config(&tmux)).await;
    let (_, whole) = call_measured(
        &gateway,
        "capture_pane",
        json!({"target": pane, "start": "-", "max_lines": 20}),
    )
    .await;
    assert_eq!(whole["isError"], true, "{whole}");
    let text = whole["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("error (invalid_arguments): "), "{text}");
    assert!(text.contains("`max_output_bytes`"), "{text}");
    assert!(text.contains("ask for less"), "{text}");
    assert!(!text.contains("refused"), "{text}");
    let (_, tail) = call_measured(
        &gateway,
        "capture_pane",
        json!({"target": pane, "start": -30, "max_lines": 20}),
    )
    .await;
    assert_eq!(tail["isError"], false, "{tail}");
    let text = tail["structuredContent"]["text"].as_str().unwrap();
    assert!(text.lines().any(|l| l == "flood-42-done"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hidden_panes_look_like_missing_ones() {
    let tmux = TestTmux::start();
    tmux.ok(&["new-session", "-d", "-s", "ci-build"]);
    let hidden = format(&tmux, "main", "#{pane_id}");
    let visible = format(&tmux, "ci-build", "#{pane_id}");
    let hidden_window = format(&tmux, "main", "#{window_id}");
    let gateway = gateway(&tmux).await;
    let token = limited_token(&gateway, "ci", &["ci-*"]);
    let client = connect_with(&gateway, &token).await;

    let listed = ok(&client, "list_panes", json!({})).await;
    assert_eq!(ids(&listed["panes"]), std::slice::from_ref(&visible));
    let search = ok(&client, "search_panes", json!({"pattern": "$"})).await;
    assert!(
        search["matches"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["pane_id"] == visible.as_str())
    );

    let calls: Vec<(&str, Value)> = vec![
        ("get_pane_info", json!({})),
        ("capture_pane", json!({})),
        ("snapshot_pane", json!({})),
        ("display_message", json!({"format_string": "#{pane_id}"})),
        ("find_pane_by_position", json!({"corner": "top_left"})),
        ("list_panes", json!({})),
        ("search_panes", json!({"pattern": "x"})),
        ("split_window", json!({})),
        ("kill_pane", json!({})),
        ("respawn_pane", json!({})),
        ("select_pane", json!({})),
        ("resize_pane", json!({"width": 10})),
        ("set_pane_title", json!({"title": "x"})),
        ("clear_pane", json!({})),
        ("enter_copy_mode", json!({})),
        ("exit_copy_mode", json!({})),
        ("pipe_pane", json!({})),
        ("send_keys", json!({"keys": ["Enter"]})),
        ("paste_text", json!({"text": "x"})),
        ("paste_buffer", json!({"logical_name": "b"})),
    ];
    for (tool, args) in calls {
        let mut hidden_args = args.clone();
        hidden_args["target"] = json!(hidden);
        let mut missing_args = args.clone();
        missing_args["target"] = json!("%9999");
        let seen = fails(&client, tool, hidden_args, "not_found").await;
        let missing = fails(&client, tool, missing_args, "not_found").await;
        assert_eq!(
            seen["message"].as_str().unwrap().replace(&hidden, "%9999"),
            missing["message"].as_str().unwrap(),
            "{tool}: a hidden pane must read like a missing one"
        );
    }
    let err = fails(
        &client,
        "list_panes",
        json!({"target": hidden_window}),
        "not_found",
    )
    .await;
    assert!(err["message"].as_str().unwrap().contains(&hidden_window));
    fails(
        &client,
        "list_panes",
        json!({"target": "main"}),
        "not_found",
    )
    .await;
    fails(
        &client,
        "swap_pane",
        json!({"source": visible, "target": hidden}),
        "not_found",
    )
    .await;
    fails(
        &client,
        "display_message",
        json!({"target": visible, "format_string": "#{S:#{session_name} }"}),
        "invalid_arguments",
    )
    .await;
    // Nothing happened to the hidden session.
    assert_eq!(
        tmux.ok(&["list-panes", "-t", "main", "-F", "#{pane_id}"])
            .trim(),
        hidden
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn split_kill_respawn_and_focus() {
    let tmux = TestTmux::start();
    let first = format(&tmux, "main", "#{pane_id}");
    let dir = tempfile::tempdir().unwrap();
    let gateway = gateway(&tmux).await;
    let client = connect(&gateway).await;

    // Default split: the new pane appears, focus stays.
    let below = ok(&client, "split_window", json!({"target": first})).await;
    let below_id = below["id"].as_str().unwrap().to_owned();
    assert_eq!(format(&tmux, "main", "#{pane_id}"), first, "focus moved");
    assert!(below["top"].as_u64().unwrap() > 0);
    assert_eq!(
        below["window_id"],
        format(&tmux, &first, "#{window_id}").as_str()
    );

    // Right, sized, in a directory, with a command and environment; then selected.
    let out = dir.path().join("env");
    let right = ok(
        &client,
        "split_window",
        json!({
            "target": first, "direction": "right", "size": 30,
            "start_directory": dir.path(),
            "shell": format!("printf '%s|%s' \"$MUXGATE_T\" \"$PWD\" > '{}'; sleep 60", out.display()),
            "environment": {"MUXGATE_T": "va lue;#{x}"},
        }),
    )
    .await;
    let right_id = right["id"].as_str().unwrap().to_owned();
    assert_eq!(right["width"], 30);
    assert!(right["left"].as_u64().unwrap() > 0);
    let written =
        common::tmux::wait_for_file(&out, Duration::from_secs(10), |d| d.contains(&b'|')).await;
    assert_eq!(
        String::from_utf8(written).unwrap(),
        format!("va lue;#{{x}}|{}", dir.path().display())
    );
    let above = ok(
        &client,
        "split_window",
        json!({"target": below_id, "direction": "above", "size": "40%", "select": true}),
    )
    .await;
    let above_id = above["id"].as_str().unwrap().to_owned();
    assert_eq!(
        format(&tmux, "main", "#{pane_id}"),
        above_id,
        "select moves focus"
    );
    ok(
        &client,
        "split_window",
        json!({"target": "main", "direction": "left"}),
    )
    .await;
    for bad in [
        json!({"direction": "diagonal"}),
        json!({"size": "150%"}),
        json!({"size": 0}),
        json!({"start_directory": "relative/dir"}),
        json!({"environment": {"BAD-NAME": "x"}}),
        json!({"shell": ""}),
    ] {
        let mut args = bad.clone();
        args["target"] = json!(first);
        fails(&client, "split_window", args, "invalid_arguments").await;
    }
    assert_target_validation(&client, "split_window", json!({"target": first})).await;

    // select_pane: explicit moves, reported back.
    let selected = ok(&client, "select_pane", json!({"target": first})).await;
    assert_eq!(selected["active_pane"]["id"], first.as_str());
    assert_eq!(format(&tmux, "main", "#{pane_id}"), first);
    let panes: Vec<String> = tmux
        .ok(&["list-panes", "-t", &first, "-F", "#{pane_id}"])
        .lines()
        .map(str::to_owned)
        .collect();
    let index = panes.iter().position(|p| *p == first).unwrap();
    let next = ok(
        &client,
        "select_pane",
        json!({"target": first, "direction": "next"}),
    )
    .await;
    assert_eq!(
        next["active_pane"]["id"],
        panes[(index + 1) % panes.len()].as_str()
    );
    let previous = ok(
        &client,
        "select_pane",
        json!({"target": first, "direction": "previous"}),
    )
    .await;
    assert_eq!(previous["active_pane"]["id"], first.as_str());
    let last = ok(
        &client,
        "select_pane",
        json!({"target": first, "direction": "last"}),
    )
    .await;
    assert_eq!(
        last["active_pane"]["id"],
        panes[(index + 1) % panes.len()].as_str()
    );
    let right_of = ok(
        &client,
        "select_pane",
        json!({"target": first, "direction": "right"}),
    )
    .await;
    assert_eq!(
        format(&tmux, "main", "#{pane_id}"),
        right_of["active_pane"]["id"].as_str().unwrap()
    );
    assert_ne!(right_of["active_pane"]["id"], first.as_str());
    fails(
        &client,
        "select_pane",
        json!({"target": first, "direction": "sideways"}),
        "invalid_arguments",
    )
    .await;
    assert_target_validation(&client, "select_pane", json!({"target": first})).await;

    // respawn_pane: a new program in the same pane.
    ok(
        &client,
        "respawn_pane",
        json!({"target": right_id, "shell": "sleep 77"}),
    )
    .await;
    assert!(
        wait_until(Duration::from_secs(10), || format(
            &tmux,
            &right_id,
            "#{pane_start_command}"
        )
        .contains("sleep 77"))
        .await
    );
    let err = fails(
        &client,
        "respawn_pane",
        json!({"target": right_id, "kill": false}),
        "conflict",
    )
    .await;
    assert!(
        err["message"].as_str().unwrap().contains("still active"),
        "{err}"
    );
    fails(
        &client,
        "respawn_pane",
        json!({"target": "main"}),
        "invalid_arguments",
    )
    .await;
    assert_target_validation(&client, "respawn_pane", json!({"target": right_id})).await;

    // kill_pane: only by pane id.
    let killed = ok(&client, "kill_pane", json!({"target": above_id})).await;
    assert_eq!(killed["pane_id"], above_id.as_str());
    assert!(
        !tmux
            .ok(&["list-panes", "-a", "-F", "#{pane_id}"])
            .contains(&above_id)
    );
    let err = fails(
        &client,
        "kill_pane",
        json!({"target": format(&tmux, &first, "#{window_id}")}),
        "invalid_arguments",
    )
    .await;
    assert!(err["suggestion"].as_str().unwrap().contains("kill_window"));
    fails(
        &client,
        "kill_pane",
        json!({"target": above_id}),
        "not_found",
    )
    .await;
    assert_target_validation(&client, "kill_pane", json!({"target": below_id})).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resize_swap_title_clear_copy_mode_and_pipe() {
    let tmux = TestTmux::start();
    let left = format(&tmux, "main", "#{pane_id}");
    tmux.ok(&["split-window", "-h", "-d", "-t", &left]);
    let right = tmux
        .ok(&["list-panes", "-t", &left, "-F", "#{pane_id}"])
        .lines()
        .find(|p| *p != left)
        .unwrap()
        .to_owned();
    let gateway = gateway(&tmux).await;
    let client = connect(&gateway).await;

    // resize_pane: cells, then zoom on and off (idempotent).
    let resized = ok(&client, "resize_pane", json!({"target": left, "width": 50})).await;
    assert_eq!(resized["width"], 50);
    assert_eq!(format(&tmux, &left, "#{pane_width}"), "50");
    let zoomed = ok(
        &client,
        "resize_pane",
        json!({"target": right, "zoom": true}),
    )
    .await;
    assert_eq!(zoomed["zoomed"], true);
    assert_eq!(format(&tmux, &right, "#{window_zoomed_flag}"), "1");
    ok(
        &client,
        "resize_pane",
        json!({"target": right, "zoom": true}),
    )
    .await;
    assert_eq!(format(&tmux, &right, "#{window_zoomed_flag}"), "1");
    ok(
        &client,
        "resize_pane",
        json!({"target": right, "zoom": false}),
    )
    .await;
    assert_eq!(format(&tmux, &right, "#{window_zoomed_flag}"), "0");
    for bad in [
        json!({"width": 10, "zoom": true}),
        json!({}),
        json!({"height": 0}),
        json!({"width": -1}),
    ] {
        let mut args = bad.clone();
        args["target"] = json!(left);
        fails(&client, "resize_pane", args, "invalid_arguments").await;
    }
    assert_target_validation(&client, "resize_pane", json!({"target": left, "height": 5})).await;

    // swap_pane: the two trade places.
    let left_x = format(&tmux, &left, "#{pane_left}");
    let right_x = format(&tmux, &right, "#{pane_left}");
    let swapped = ok(
        &client,
        "swap_pane",
        json!({"source": left, "target": right}),
    )
    .await;
    assert_eq!(format(&tmux, &left, "#{pane_left}"), right_x);
    assert_eq!(format(&tmux, &right, "#{pane_left}"), left_x);
    assert_eq!(
        swapped["source"]["left"].as_u64().unwrap().to_string(),
        right_x
    );
    fails(
        &client,
        "swap_pane",
        json!({"source": left, "target": left}),
        "invalid_arguments",
    )
    .await;
    fails(
        &client,
        "swap_pane",
        json!({"source": "@1", "target": left}),
        "invalid_arguments",
    )
    .await;
    fails(
        &client,
        "swap_pane",
        json!({"source": left, "target": "%9999"}),
        "not_found",
    )
    .await;
    fails(
        &client,
        "swap_pane",
        json!({"source": left}),
        "invalid_arguments",
    )
    .await;

    // set_pane_title: literal, no format expansion.
    ok(
        &client,
        "set_pane_title",
        json!({"target": left, "title": "build #{pane_id} 100%"}),
    )
    .await;
    assert_eq!(
        format(&tmux, &left, "#{pane_title}"),
        "build #{pane_id} 100%"
    );
    fails(
        &client,
        "set_pane_title",
        json!({"target": left, "title": "a\u{1b}b"}),
        "invalid_arguments",
    )
    .await;
    assert_target_validation(
        &client,
        "set_pane_title",
        json!({"target": left, "title": "t"}),
    )
    .await;

    // clear_pane: screen and history gone.
    tmux.ok(&["send-keys", "-t", &left, "seq 1 200", "Enter"]);
    wait_for_line(&tmux, &left, "200").await;
    assert_ne!(format(&tmux, &left, "#{history_size}"), "0");
    ok(&client, "clear_pane", json!({"target": left})).await;
    assert_eq!(format(&tmux, &left, "#{history_size}"), "0");
    // The seq output is gone; the shell may still print its prompt after the clear (it does
    // when the clear lands between the last number and the prompt).
    let screen = tmux.ok(&["capture-pane", "-p", "-t", &left]);
    assert!(
        !screen
            .lines()
            .any(|line| line.trim().parse::<u32>().is_ok()),
        "{screen}"
    );
    assert_target_validation(&client, "clear_pane", json!({"target": left})).await;

    // Copy mode: in, scrolled, out.
    tmux.ok(&["send-keys", "-t", &right, "seq 1 100", "Enter"]);
    wait_for_line(&tmux, &right, "100").await;
    let entered = ok(
        &client,
        "enter_copy_mode",
        json!({"target": right, "scroll_up": 5}),
    )
    .await;
    assert_eq!(entered["in_mode"], true);
    assert_eq!(entered["mode"], "copy-mode");
    assert_eq!(entered["scroll_position"], 5);
    assert_eq!(format(&tmux, &right, "#{pane_in_mode}"), "1");
    let snap = ok(&client, "snapshot_pane", json!({"target": right})).await;
    assert_eq!(snap["in_mode"], true);
    assert_eq!(snap["scroll_position"], 5);
    let exited = ok(&client, "exit_copy_mode", json!({"target": right})).await;
    assert_eq!(exited["in_mode"], false);
    assert_eq!(format(&tmux, &right, "#{pane_in_mode}"), "0");
    ok(&client, "exit_copy_mode", json!({"target": right})).await;
    fails(
        &client,
        "enter_copy_mode",
        json!({"target": right, "scroll_up": -1}),
        "invalid_arguments",
    )
    .await;
    assert_target_validation(&client, "enter_copy_mode", json!({"target": right})).await;
    assert_target_validation(&client, "exit_copy_mode", json!({"target": right})).await;

    // pipe_pane: a path full of shell and tmux syntax is written literally.
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("a b");
    std::fs::create_dir(&sub).unwrap();
    let path = sub.join("it's \"#{pane_id}\" 100%Y $HOME ;x.log");
    let started = ok(
        &client,
        "pipe_pane",
        json!({"target": right, "output_path": path}),
    )
    .await;
    assert_eq!(started["piping"], true);
    assert_eq!(format(&tmux, &right, "#{pane_pipe}"), "1");
    tmux.ok(&["send-keys", "-t", &right, "echo piped-$((40+2))", "Enter"]);
    let data = common::tmux::wait_for_file(&path, Duration::from_secs(10), |d| {
        String::from_utf8_lossy(d).contains("piped-42")
    })
    .await;
    assert!(!data.is_empty());
    assert_eq!(
        std::fs::read_dir(&sub).unwrap().count(),
        1,
        "one file, at the exact path"
    );
    let stopped = ok(&client, "pipe_pane", json!({"target": right})).await;
    assert_eq!(stopped["piping"], false);
    assert_eq!(format(&tmux, &right, "#{pane_pipe}"), "0");
    for bad in ["relative.log", "/tmp/a\nb", "/tmp/dir/"] {
        fails(
            &client,
            "pipe_pane",
            json!({"target": right, "output_path": bad}),
            "invalid_arguments",
        )
        .await;
    }
    assert_target_validation(&client, "pipe_pane", json!({"target": right})).await;
}

/// What an attached human sees: their client's size, session and current window, and each
/// window's active pane and size.
fn human_view(tmux: &TestTmux) -> (String, String) {
    let clients = tmux.ok(&[
        "list-clients",
        "-F",
        "#{client_termname} #{client_width}x#{client_height} #{session_name} #{window_id}",
    ]);
    let human: Vec<_> = clients.lines().filter(|l| l.starts_with("xterm")).collect();
    assert_eq!(human.len(), 1, "{clients}");
    let windows = tmux.ok(&[
        "list-windows",
        "-a",
        "-F",
        "#{window_id} #{window_width}x#{window_height} #{window_active} #{pane_id} #{window_zoomed_flag}",
    ]);
    (human[0].to_owned(), windows)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attached_human_keeps_their_view() {
    let tmux = TestTmux::start();
    tmux.ok(&["new-window", "-t", "main"]);
    tmux.ok(&["select-window", "-t", "main:1"]);
    let work = format(&tmux, "main:0", "#{pane_id}");
    let human = common::pty::attach_human(&tmux, 100, 30);
    assert!(
        wait_until(Duration::from_secs(5), || tmux
            .ok(&["list-clients", "-F", "#{client_termname}"])
            .contains("xterm"))
        .await
    );
    let before = human_view(&tmux);
    assert!(before.0.contains("100x30"), "{before:?}");
    let gateway = gateway(&tmux).await;
    let client = connect(&gateway).await;

    let watched = format(&tmux, "main:1", "#{pane_id}");
    for target in [&work, &watched] {
        for (tool, args) in [
            ("list_panes", json!({})),
            ("get_pane_info", json!({"target": target})),
            ("snapshot_pane", json!({"target": target})),
            ("capture_pane", json!({"target": target, "start": "-"})),
            (
                "display_message",
                json!({"target": target, "format_string": "#{pane_id}"}),
            ),
            (
                "find_pane_by_position",
                json!({"target": target, "corner": "top_left"}),
            ),
            ("search_panes", json!({"pattern": "x"})),
            (
                "send_keys",
                json!({"target": target, "keys": "echo hi", "literal": true}),
            ),
            ("paste_text", json!({"target": target, "text": "true"})),
        ] {
            ok(&client, tool, args).await;
        }
    }
    assert_eq!(human_view(&tmux).0, before.0, "the human's client changed");
    let windows_before = before.1.clone();

    // split_window (default) in the watched window: layout grows, focus and size stay.
    ok(&client, "split_window", json!({"target": watched})).await;
    let after = human_view(&tmux);
    assert_eq!(after.0, before.0, "the human's client changed");
    let active = |windows: &str| -> Vec<String> {
        windows
            .lines()
            .map(|l| {
                let f: Vec<&str> = l.split(' ').collect();
                format!("{} {} {} {}", f[0], f[1], f[2], f[3])
            })
            .collect()
    };
    assert_eq!(
        active(&after.1),
        active(&windows_before),
        "focus or window size changed"
    );
    drop(human);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stateless_clients_use_the_same_tools() {
    let tmux = TestTmux::start();
    let pane = format(&tmux, "main", "#{pane_id}");
    let gateway = gateway(&tmux).await;
    let mut raw = gateway.raw();
    raw.protocol_version = Some(common::STATELESS_VERSION.to_owned());
    let call = |id: u64, name: &str, arguments: Value| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": name, "arguments": arguments, "_meta": common::stateless_meta()}})
    };
    let sent = raw
        .request(&call(
            1,
            "send_keys",
            json!({"target": pane, "keys": "echo stateless-$((1+1))", "literal": true}),
        ))
        .await;
    assert_eq!(sent["result"]["isError"], false, "{sent}");
    wait_for_text(&tmux, &pane, "stateless-2").await;
    let captured = raw
        .request(&call(2, "capture_pane", json!({"target": pane})))
        .await;
    let text = captured["result"]["structuredContent"]["text"]
        .as_str()
        .unwrap();
    assert!(text.lines().any(|l| l == "stateless-2"), "{captured}");
    let refused = raw
        .request(&call(
            3,
            "capture_pane",
            json!({"target": pane, "bogus": 1}),
        ))
        .await;
    assert_eq!(refused["result"]["isError"], true, "{refused}");
}
