//! The `tmux://` resources and the prompts over MCP against a real tmux server: what is listed,
//! what reads return, what stays invisible outside a client's ACL, and the errors.

mod common;

use common::tmux::TestTmux;
use common::tools::{client, client_with, session_limited_token, type_line, wait_for_screen};
use common::{config_with_server, spawn_gateway};
use rmcp::model::{GetPromptRequestParams, ReadResourceRequestParams, ResourceContents};
use serde_json::{Value, json};

/// The JSON or text of a resource, read through the client.
async fn read(client: &common::tools::Client, uri: &str) -> Result<String, rmcp::ErrorData> {
    let result = client
        .read_resource(ReadResourceRequestParams::new(uri))
        .await
        .map_err(|e| match e {
            rmcp::ServiceError::McpError(error) => error,
            other => panic!("resources/read {uri}: {other}"),
        })?;
    match &result.contents[..] {
        [ResourceContents::TextResourceContents { text, .. }] => Ok(text.clone()),
        other => panic!("{uri}: expected one text content, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_and_panes_are_listed_and_read() {
    let tmux = TestTmux::start();
    tmux.ok(&["new-session", "-d", "-s", "build", "-x", "80", "-y", "10"]);
    let pane = tmux
        .ok(&["display-message", "-p", "-t", "build", "#{pane_id}"])
        .trim()
        .to_owned();
    type_line(&tmux, &pane, "echo resource-$((6*7))");
    wait_for_screen(&tmux, &pane, "resource-42").await;
    let gateway = spawn_gateway(config_with_server("dev", &tmux.socket, false)).await;
    let client = client(&gateway).await;

    let listed = client.list_all_resources().await.expect("resources/list");
    let uris: Vec<&str> = listed.iter().map(|r| r.uri.as_str()).collect();
    let encoded = pane.replace('%', "%25");
    for expected in [
        "tmux://dev/sessions".to_owned(),
        "tmux://dev/sessions/build".to_owned(),
        format!("tmux://dev/panes/{encoded}/content"),
    ] {
        assert!(uris.contains(&expected.as_str()), "{expected} in {uris:?}");
    }

    let sessions: Value =
        serde_json::from_str(&read(&client, "tmux://dev/sessions").await.unwrap()).expect("JSON");
    assert_eq!(sessions["sessions"][0]["name"], "build", "{sessions}");
    let session: Value =
        serde_json::from_str(&read(&client, "tmux://dev/sessions/build").await.unwrap()).unwrap();
    assert_eq!(
        session["windows"].as_array().map(Vec::len),
        Some(1),
        "{session}"
    );
    let content = read(&client, &format!("tmux://dev/panes/{encoded}/content"))
        .await
        .unwrap();
    assert!(content.contains("resource-42"), "{content}");
    // The raw pane id is accepted too.
    let raw = read(&client, &format!("tmux://dev/panes/{pane}"))
        .await
        .unwrap();
    assert!(raw.contains(&pane), "{raw}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_hidden_and_malformed_resources_are_errors_naming_the_uri() {
    let tmux = TestTmux::start();
    tmux.ok(&["new-session", "-d", "-s", "mine"]);
    tmux.ok(&["new-session", "-d", "-s", "theirs"]);
    let gateway = spawn_gateway(config_with_server("dev", &tmux.socket, false)).await;
    let token = session_limited_token(&gateway, "limited", &["mux:read"], &["mine"]);
    let limited = client_with(&gateway, &token).await;

    // Outside the ACL is exactly like missing: not listed, not found.
    let listed = limited.list_all_resources().await.unwrap();
    assert!(
        listed.iter().all(|r| !r.uri.contains("theirs")),
        "{listed:?}"
    );
    for uri in ["tmux://dev/sessions/theirs", "tmux://dev/sessions/absent"] {
        let error = read(&limited, uri).await.unwrap_err();
        assert_eq!(error.code.0, -32002, "{uri}: {error:?}");
        assert_eq!(error.data, Some(json!({ "uri": uri })), "{uri}");
    }
    let malformed = "test://not-a-muxgate-resource";
    let error = read(&limited, malformed).await.unwrap_err();
    assert_eq!(error.code.0, -32602, "{error:?}");
    assert_eq!(error.data, Some(json!({ "uri": malformed })));
    assert!(read(&limited, "tmux://dev/sessions/mine").await.is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompts_are_listed_and_filled_in() {
    let tmux = TestTmux::start();
    let gateway = spawn_gateway(config_with_server("dev", &tmux.socket, true)).await;
    let client = client(&gateway).await;

    let prompts = client.list_all_prompts().await.expect("prompts/list");
    let names: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
    assert!(names.contains(&"run_and_wait"), "{names:?}");
    assert!(names.contains(&"diagnose_failing_pane"), "{names:?}");

    let arguments = json!({"command": "make test", "pane_id": "%3"});
    let filled = client
        .get_prompt(
            GetPromptRequestParams::new("run_and_wait")
                .with_arguments(arguments.as_object().unwrap().clone()),
        )
        .await
        .expect("prompts/get");
    let text = format!("{:?}", filled.messages);
    assert!(text.contains("make test") && text.contains("%3"), "{text}");
    assert!(text.contains("run_command"), "{text}");

    let unknown = client
        .get_prompt(GetPromptRequestParams::new("no_such_prompt"))
        .await
        .unwrap_err();
    assert!(unknown.to_string().contains("no prompt named"), "{unknown}");
}
