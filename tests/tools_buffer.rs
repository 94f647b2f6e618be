//! Buffer tools over MCP against real tmux: content comes back byte for byte (tmux 3.3
//! escapes show-buffer output over control mode; it is decoded), pastes are exact, each
//! client sees only its own buffers, and humans' buffers are never reachable.

mod common;

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use common::mcp_client::{connect, connect_with, fails, ok};
use common::tmux::{TestTmux, wait_for_file};
use common::{config_with_server, spawn_gateway};
use muxgate_tmux::ops::buffer::LogicalBufferName;
use serde_json::json;

/// The tmux name of `logical` for client `sub`.
fn tmux_name(sub: &str, logical: &str) -> String {
    LogicalBufferName::parse(logical).unwrap().tmux_name(sub)
}

/// Contents that exercise tmux's escaping of show-buffer output and the control protocol.
fn contents() -> Vec<Vec<u8>> {
    let mut cases: Vec<Vec<u8>> = [
        &b"plain"[..],
        b"back\\slash \\t \\033 \\\\ \\",
        b"tab\there\rcr\x1b[31mesc\x07bel\x7fdel",
        b"trailing newline\n",
        b"\n\nleading and\n\n\nblank lines\n\n",
        b"%end 1 2 1\n%begin 1 2 1\n%error 3 4 1",
        b"quotes ' \" ; #{pane_id} #(id) $(id) %Y",
        "é€😀 \u{301}".as_bytes(),
        b"invalid \xff\xfe \xc3( \xed\xa0\x80",
        b" ",
        b"\\",
        b"\\0\\00\\000\\1",
    ]
    .iter()
    .map(|c| c.to_vec())
    .collect();
    cases.push((1..=255u8).collect());
    cases.push((0..20_000).map(|i| b' ' + (i % 95) as u8).collect());
    cases
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn buffers_round_trip_exactly() {
    let tmux = TestTmux::start();
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let client = connect(&gateway).await;

    for (i, content) in contents().iter().enumerate() {
        let name = format!("case.{i}");
        let loaded = ok(
            &client,
            "load_buffer",
            json!({"logical_name": name, "content": STANDARD.encode(content), "encoding": "base64"}),
        )
        .await;
        assert_eq!(loaded["bytes"], content.len());
        // What tmux holds, read outside the gateway.
        let held = tmux
            .command()
            .args(["save-buffer", "-b", &tmux_name("test", &name), "-"])
            .output()
            .unwrap()
            .stdout;
        assert_eq!(held, *content, "case {i}: tmux holds other bytes");
        let shown = ok(
            &client,
            "show_buffer",
            json!({"logical_name": name, "encoding": "base64"}),
        )
        .await;
        assert_eq!(
            STANDARD.decode(shown["content"].as_str().unwrap()).unwrap(),
            *content,
            "case {i}: show_buffer returned other bytes"
        );
        assert_eq!(shown["bytes"], content.len());
        assert_eq!(shown["truncated"], false);
        if let Ok(text) = std::str::from_utf8(content) {
            let shown = ok(&client, "show_buffer", json!({"logical_name": name})).await;
            assert_eq!(shown["content"], text, "case {i}: text differs");
            let reloaded = ok(
                &client,
                "load_buffer",
                json!({"logical_name": name, "content": text}),
            )
            .await;
            assert_eq!(reloaded["bytes"], content.len());
        }
    }

    // Long text keeps its last lines behind a marker.
    let long: String = (1..=600).map(|i| format!("line {i}\n")).collect();
    ok(
        &client,
        "load_buffer",
        json!({"logical_name": "long", "content": long}),
    )
    .await;
    let shown = ok(
        &client,
        "show_buffer",
        json!({"logical_name": "long", "max_lines": 10}),
    )
    .await;
    let text = shown["content"].as_str().unwrap();
    assert!(
        text.starts_with("[... 591 lines truncated ...]\nline 592\n"),
        "{text}"
    );
    assert!(text.ends_with("line 600\n"));
    assert_eq!(shown["truncated"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paste_buffer_is_exact_and_keeps_the_buffer() {
    let tmux = TestTmux::start();
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let client = connect(&gateway).await;
    let content: Vec<u8> = contents().concat();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("pasted");
    let pane = tmux
        .record_input("main", &out, content.len() * 2, false)
        .await;
    ok(
        &client,
        "load_buffer",
        json!({"logical_name": "all", "content": STANDARD.encode(&content), "encoding": "base64"}),
    )
    .await;
    for bracket in [true, false] {
        let pasted = ok(
            &client,
            "paste_buffer",
            json!({"logical_name": "all", "target": pane, "bracket": bracket}),
        )
        .await;
        assert_eq!(pasted["pane_id"], pane.as_str());
    }
    let got = wait_for_file(&out, Duration::from_secs(10), |d| {
        d.len() >= content.len() * 2
    })
    .await;
    assert!(
        got == [content.clone(), content].concat(),
        "pasted bytes differ"
    );
    ok(&client, "show_buffer", json!({"logical_name": "all"})).await;

    fails(
        &client,
        "paste_buffer",
        json!({"logical_name": "nothing", "target": pane}),
        "not_found",
    )
    .await;
    for bad in [
        json!({"logical_name": "all", "target": "main:{last}"}),
        json!({"logical_name": "all"}),
        json!({"logical_name": "a b", "target": pane}),
        json!({"logical_name": "all", "target": pane, "bogus": 1}),
    ] {
        fails(&client, "paste_buffer", bad, "invalid_arguments").await;
    }
    let err = fails(
        &client,
        "paste_buffer",
        json!({"logical_name": "all", "target": "%9999"}),
        "not_found",
    )
    .await;
    assert!(
        err["suggestion"].as_str().unwrap().contains("list_panes"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_client_reaches_only_its_own_buffers() {
    let tmux = TestTmux::start();
    tmux.ok(&["set-buffer", "-b", "clip", "human secret"]);
    tmux.ok(&["set-buffer", "human unnamed"]);
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let mine = connect(&gateway).await;
    let other = connect_with(
        &gateway,
        &gateway.mint("other", &["mux:read", "mux:write", "mux:admin"]),
    )
    .await;

    ok(
        &mine,
        "load_buffer",
        json!({"logical_name": "notes", "content": "mine"}),
    )
    .await;
    let err = fails(
        &other,
        "show_buffer",
        json!({"logical_name": "notes"}),
        "not_found",
    )
    .await;
    assert!(err["suggestion"].as_str().unwrap().contains("load_buffer"));
    let deleted = ok(&other, "delete_buffer", json!({"logical_name": "notes"})).await;
    assert_eq!(deleted["deleted"], false);
    ok(
        &other,
        "load_buffer",
        json!({"logical_name": "notes", "content": "theirs"}),
    )
    .await;
    let shown = ok(&mine, "show_buffer", json!({"logical_name": "notes"})).await;
    assert_eq!(shown["content"], "mine");
    for name in ["clip", "buffer0"] {
        fails(
            &mine,
            "show_buffer",
            json!({"logical_name": name}),
            "not_found",
        )
        .await;
    }

    let deleted = ok(&mine, "delete_buffer", json!({"logical_name": "notes"})).await;
    assert_eq!(deleted["deleted"], true);
    let deleted = ok(&mine, "delete_buffer", json!({"logical_name": "notes"})).await;
    assert_eq!(deleted["deleted"], false);
    let names = tmux.ok(&["list-buffers", "-F", "#{buffer_name}"]);
    assert!(!names.contains(&tmux_name("test", "notes")), "{names}");
    assert!(names.contains(&tmux_name("other", "notes")), "{names}");
    assert_eq!(tmux.ok(&["show-buffer", "-b", "clip"]), "human secret");
    assert_eq!(tmux.ok(&["show-buffer", "-b", "buffer0"]), "human unnamed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_buffer_arguments_are_refused() {
    let tmux = TestTmux::start();
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let client = connect(&gateway).await;
    let before = tmux.ok(&["list-buffers", "-F", "#{buffer_name}"]);

    for name in ["", "a b", "../x", "x;y", "é", &"n".repeat(65)] {
        for (tool, extra) in [
            ("load_buffer", json!({"content": "x"})),
            ("show_buffer", json!({})),
            ("delete_buffer", json!({})),
        ] {
            let mut args = extra.clone();
            args["logical_name"] = json!(name);
            let err = fails(&client, tool, args, "invalid_arguments").await;
            assert!(
                err["message"].as_str().unwrap().contains("buffer name"),
                "{err}"
            );
        }
    }
    let err = fails(
        &client,
        "load_buffer",
        json!({"logical_name": "n", "content": "a\u{0}b"}),
        "invalid_arguments",
    )
    .await;
    assert!(err["message"].as_str().unwrap().contains("NUL"));
    for bad in [
        json!({"logical_name": "n", "content": "***", "encoding": "base64"}),
        json!({"logical_name": "n", "content": "x".repeat((1 << 20) + 1)}),
        json!({"logical_name": "n", "content": "x", "bogus": 1}),
        json!({"logical_name": "n"}),
        json!({"content": "x"}),
    ] {
        fails(&client, "load_buffer", bad, "invalid_arguments").await;
    }
    for bad in [
        json!({"logical_name": "n", "max_lines": 0}),
        json!({"logical_name": "n", "encoding": "hex"}),
    ] {
        fails(&client, "show_buffer", bad, "invalid_arguments").await;
    }
    fails(
        &client,
        "show_buffer",
        json!({"logical_name": "n"}),
        "not_found",
    )
    .await;
    fails(
        &client,
        "delete_buffer",
        json!({"logical_name": "n", "server": "nope"}),
        "not_found",
    )
    .await;
    assert_eq!(tmux.ok(&["list-buffers", "-F", "#{buffer_name}"]), before);
}
