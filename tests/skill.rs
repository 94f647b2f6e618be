//! The skill (SKILL.md) over real HTTP: a client that negotiates the Skills extension finds it
//! through `skills/list` and reads it as a resource; a client that does not finds it as a plain
//! resource and a prompt; `muxgate skill` prints the same text; and every example call in it
//! runs, in order, against a real private tmux server.

mod common;

use common::mcp_client::{call, connect};
use common::tmux::TestTmux;
use common::{RawMcp, STATELESS_VERSION, config_with_server, spawn_gateway, stateless_meta};
use rmcp::ServiceExt;
use rmcp::model::ClientConfig;
use serde_json::{Value, json};

const URI: &str = "skill://muxgate/SKILL.md";
const EXTENSION: &str = "io.modelcontextprotocol/skills";

/// A 2026-07-28 request's answer; `skills` says whether the client declares the extension.
async fn stateless(mcp: &RawMcp, method: &str, params: Value, skills: bool) -> Value {
    let mut meta = stateless_meta();
    if skills {
        meta["io.modelcontextprotocol/clientCapabilities"] = json!({"extensions": {EXTENSION: {}}});
    }
    let mut params = params;
    params["_meta"] = meta;
    let answer = mcp
        .request(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
        .await;
    assert!(answer.get("error").is_none(), "{method}: {answer}");
    answer["result"].clone()
}

/// The text of `resources/read` of the skill.
async fn read_skill(mcp: &RawMcp, skills: bool) -> String {
    let read = stateless(mcp, "resources/read", json!({"uri": URI}), skills).await;
    assert_eq!(read["contents"][0]["mimeType"], "text/markdown", "{read}");
    read["contents"][0]["text"]
        .as_str()
        .expect("the skill is text")
        .to_owned()
}

fn listed_uris(list: &Value) -> Vec<&str> {
    list["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .filter_map(|r| r["uri"].as_str())
        .collect()
}

fn prompt_names(list: &Value) -> Vec<&str> {
    list["prompts"]
        .as_array()
        .expect("prompts")
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect()
}

/// The example calls: each line of a fenced `call` block is a tool's name and its arguments.
fn example_calls(skill: &str) -> Vec<(String, Value)> {
    let mut calls = Vec::new();
    let mut in_block = false;
    for line in skill.lines() {
        match (in_block, line.trim()) {
            (false, "```call") => in_block = true,
            (true, "```") => in_block = false,
            (true, line) => {
                let (name, arguments) = line.split_once(' ').expect("`tool {arguments}`");
                let arguments: Value = serde_json::from_str(arguments)
                    .unwrap_or_else(|e| panic!("{line}: arguments are not JSON: {e}"));
                assert!(arguments.is_object(), "{line}");
                calls.push((name.to_owned(), arguments));
            }
            (false, _) => {}
        }
    }
    assert!(!in_block, "an unterminated call block");
    calls
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_skill_reaches_clients_with_and_without_the_extension() {
    let tmux = TestTmux::start();
    let gateway = spawn_gateway(config_with_server("dev", &tmux.socket, false)).await;
    let mut mcp = gateway.raw();
    mcp.protocol_version = Some(STATELESS_VERSION.to_owned());

    let discover = stateless(&mcp, "server/discover", json!({}), false).await;
    assert_eq!(
        discover["capabilities"]["extensions"][EXTENSION],
        json!({}),
        "{discover}"
    );

    // With the extension: skills/list and skills/get name it, resources/read reads it, and it
    // is not offered again as a plain resource or a prompt.
    let skills = stateless(&mcp, "skills/list", json!({}), true).await;
    let entry = &skills["skills"][0];
    assert_eq!(entry["uri"], URI, "{skills}");
    assert_eq!(entry["frontmatter"]["name"], "muxgate", "{skills}");
    let text = read_skill(&mcp, true).await;
    assert!(text.starts_with("---\nname: muxgate\n"), "{text}");
    assert_eq!(entry["resources"][0]["size"], text.len(), "{skills}");
    let got = stateless(&mcp, "skills/get", json!({"uri": URI}), true).await;
    assert_eq!(got["skill"]["uri"], URI, "{got}");
    let listed = stateless(&mcp, "resources/list", json!({}), true).await;
    assert!(!listed_uris(&listed).contains(&URI), "{listed}");
    let prompts = stateless(&mcp, "prompts/list", json!({}), true).await;
    assert!(
        !prompt_names(&prompts).contains(&"use_muxgate"),
        "{prompts}"
    );

    // Without it: the first resource and a prompt carry the same text.
    let listed = stateless(&mcp, "resources/list", json!({}), false).await;
    assert_eq!(listed_uris(&listed).first(), Some(&URI), "{listed}");
    assert_eq!(read_skill(&mcp, false).await, text);
    let prompts = stateless(&mcp, "prompts/list", json!({}), false).await;
    assert!(prompt_names(&prompts).contains(&"use_muxgate"), "{prompts}");
    let prompt = stateless(&mcp, "prompts/get", json!({"name": "use_muxgate"}), false).await;
    assert_eq!(prompt["messages"][0]["content"]["text"], text.as_str());

    // A skill the gateway does not serve is a named error.
    let missing = mcp
        .request(&json!({"jsonrpc": "2.0", "id": 9, "method": "skills/get",
            "params": {"uri": "skill://other/SKILL.md", "_meta": stateless_meta()}}))
        .await;
    let message = missing["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(URI), "{missing}");

    // `muxgate skill` prints exactly what the gateway serves.
    let printed = std::process::Command::new(env!("CARGO_BIN_EXE_muxgate"))
        .arg("skill")
        .output()
        .expect("muxgate skill runs");
    assert!(printed.status.success(), "{printed:?}");
    assert_eq!(String::from_utf8_lossy(&printed.stdout), text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rmcps_client_finds_the_skill_as_it_negotiated() {
    let tmux = TestTmux::start();
    let gateway = spawn_gateway(config_with_server("dev", &tmux.socket, false)).await;

    let plain = connect(&gateway).await;
    let resources = plain.list_all_resources().await.expect("resources/list");
    assert_eq!(resources.first().map(|r| r.uri.as_str()), Some(URI));
    let prompts = plain.list_all_prompts().await.expect("prompts/list");
    assert!(
        prompts.iter().any(|p| p.name == "use_muxgate"),
        "{prompts:?}"
    );

    let mut config = ClientConfig::default();
    config.capabilities = serde_json::from_value(json!({"extensions": {EXTENSION: {}}}))
        .expect("client capabilities");
    let with_skills = config
        .serve(gateway.transport())
        .await
        .expect("MCP client connects");
    let skills = with_skills.list_all_skills().await.expect("skills/list");
    assert_eq!(skills.len(), 1, "{skills:?}");
    assert_eq!(skills[0].uri, URI);
    let resources = with_skills
        .list_all_resources()
        .await
        .expect("resources/list");
    assert!(resources.iter().all(|r| r.uri != URI), "{resources:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_example_call_in_the_skill_runs() {
    let tmux = TestTmux::start();
    let gateway = spawn_gateway(config_with_server("dev", &tmux.socket, false)).await;
    let mut mcp = gateway.raw();
    mcp.protocol_version = Some(STATELESS_VERSION.to_owned());
    let skill = read_skill(&mcp, false).await;
    let calls = example_calls(&skill);
    let names: Vec<&str> = calls.iter().map(|(name, _)| name.as_str()).collect();
    for first in [
        "list_servers",
        "create_session",
        "list_panes",
        "run_command",
        "capture_pane",
        "wait_for_text",
        "pane_batch",
    ] {
        assert!(names.contains(&first), "the skill shows {first}: {names:?}");
    }

    let client = connect(&gateway).await;
    let mut answers = Vec::new();
    for (name, arguments) in &calls {
        let result = call(&client, name, arguments.clone()).await;
        assert_eq!(
            result.is_error,
            Some(false),
            "the skill's example {name} {arguments} failed: {:?}",
            result.content
        );
        answers.push((name.as_str(), result.structured_content.unwrap_or_default()));
    }

    // The examples do what the text says they do.
    let answer = |tool: &str| {
        answers
            .iter()
            .find(|(name, _)| *name == tool)
            .map(|(_, answer)| answer.to_string())
            .unwrap_or_default()
    };
    assert!(
        answer("run_command").contains("\"exit_status\":0"),
        "{}",
        answer("run_command")
    );
    assert!(
        answer("capture_since").contains("built 42 files"),
        "{}",
        answer("capture_since")
    );
    assert!(
        answer("pane_batch").contains("one"),
        "{}",
        answer("pane_batch")
    );
}
