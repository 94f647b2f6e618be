//! send_keys and paste_text over MCP against real tmux: what arrives in the pane is exactly
//! what was sent (recorded raw by `head -c` on a raw-mode terminal), named keys map to the
//! bytes a terminal sends, private buffers never linger, and every validation path.

mod common;

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use common::mcp_client::{Client, connect, fails, ok};
use common::tmux::{TestTmux, wait_for_file};
use common::{config_with_server, spawn_gateway, wait_until};
use serde_json::{Value, json};

/// Deterministic test strings: every byte class the quoting, tmux's parser, send-keys and
/// paste-buffer could get wrong, mixed with printable filler.
fn generated(seed: &mut u64, count: usize) -> Vec<Vec<u8>> {
    const SPECIAL: &[&[u8]] = &[
        b"'",
        b"\"",
        b";",
        b" ; ",
        b"\\;",
        b"#{pane_id}",
        b"#(id)",
        b"$(id)",
        b"`id`",
        b"$HOME",
        b"~",
        b"\\",
        b"\n",
        b"\t",
        b"\r",
        b"\r\n",
        b"\x1b[31m",
        b"\x1b[201~",
        b"\x7f",
        b"-n",
        b"--",
        b"-",
        "é€😀".as_bytes(),
        "\u{301}".as_bytes(),
        b"\xff\xfe",
        b"\xc3",
        b"\xed\xa0\x80",
        b"%1",
        b"%%",
        b"{",
        b"}",
        b"\0",
        b"\0\0",
        b"\x01",
        b"\x03",
        b"\x04",
        b"\x1a",
        b"\x1c",
        b"\x16",
        b"Enter",
        b"C-c",
        b"##",
    ];
    let mut next = || {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        *seed
    };
    let mut cases: Vec<Vec<u8>> = (0..count)
        .map(|i| {
            let len = 1 + i * 13 % 200;
            let mut out = Vec::new();
            while out.len() < len {
                match next() % 4 {
                    0 => out.extend_from_slice(SPECIAL[(next() % SPECIAL.len() as u64) as usize]),
                    _ => out.push(b' ' + (next() % 95) as u8),
                }
            }
            out
        })
        .collect();
    cases.push((1..=255u8).collect());
    cases.push((0..3000).map(|i| b'a' + (i % 26) as u8).collect());
    cases
}

/// The JSON form of some bytes: the text when it is UTF-8, base64 otherwise.
fn encoded(bytes: &[u8]) -> (Value, &'static str) {
    match std::str::from_utf8(bytes) {
        Ok(text) => (json!(text), "utf8"),
        Err(_) => (json!(STANDARD.encode(bytes)), "base64"),
    }
}

fn muxgate_buffers(tmux: &TestTmux) -> Vec<String> {
    tmux.ok(&["list-buffers", "-F", "#{buffer_name}"])
        .lines()
        .filter(|name| name.starts_with("muxgate_"))
        .map(str::to_owned)
        .collect()
}

async fn setup() -> (TestTmux, common::TestGateway, Client) {
    let tmux = TestTmux::start();
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let client = connect(&gateway).await;
    (tmux, gateway, client)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_keys_literal_delivers_exactly_the_bytes_sent() {
    let (tmux, _gateway, client) = setup().await;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("received");
    let cases = generated(&mut 0x9e37_79b9_7f4a_7c15, 300);
    let expected: Vec<u8> = cases.concat();
    let pane = tmux.record_input("main", &out, expected.len(), false).await;

    for (i, case) in cases.iter().enumerate() {
        let (text, encoding) = encoded(case);
        // Some calls split the text over a list, which is concatenated.
        let keys = match (&text, i % 3) {
            (Value::String(s), 0) if encoding == "utf8" && s.chars().count() > 1 => {
                let cut = s.char_indices().nth(1).unwrap().0;
                json!([&s[..cut], &s[cut..]])
            }
            _ => text,
        };
        let sent = ok(
            &client,
            "send_keys",
            json!({"target": pane, "keys": keys, "literal": true, "enter": false, "encoding": encoding}),
        )
        .await;
        assert_eq!(sent["text_bytes"], case.len(), "case {i}");
        assert_eq!(sent["keys_pressed"], 0);
    }
    let got = wait_for_file(&out, Duration::from_secs(20), |d| d.len() >= expected.len()).await;
    assert_eq!(got.len(), expected.len());
    if got != expected {
        let at = got.iter().zip(&expected).position(|(a, b)| a != b).unwrap();
        panic!(
            "received bytes differ from the bytes sent at offset {at}: got {:?}, sent {:?}",
            &got[at..(at + 16).min(got.len())],
            &expected[at..(at + 16).min(expected.len())]
        );
    }
    assert!(
        muxgate_buffers(&tmux).is_empty(),
        "a transient buffer lingers"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paste_text_delivers_exactly_the_bytes_sent() {
    let (tmux, _gateway, client) = setup().await;
    tmux.ok(&["set-buffer", "-b", "human-clipboard", "secret"]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("pasted");
    let cases = generated(&mut 0x2545_f491_4f6c_dd1d, 300);
    let expected: Vec<u8> = cases.concat();
    let pane = tmux.record_input("main", &out, expected.len(), false).await;

    for (i, case) in cases.iter().enumerate() {
        let (text, encoding) = encoded(case);
        // A bracketed paste cannot carry NUL or its own end marker: those go unbracketed.
        let bracket =
            i % 2 == 0 && !case.contains(&0) && !case.windows(6).any(|w| w == b"\x1b[201~");
        let pasted = ok(
            &client,
            "paste_text",
            json!({"target": pane, "text": text, "bracket": bracket, "encoding": encoding}),
        )
        .await;
        assert_eq!(pasted["bytes"], case.len(), "case {i}");
    }
    let got = wait_for_file(&out, Duration::from_secs(20), |d| d.len() >= expected.len()).await;
    assert!(got == expected, "pasted bytes differ from the bytes sent");
    assert!(
        muxgate_buffers(&tmux).is_empty(),
        "a transient buffer lingers"
    );
    assert_eq!(
        tmux.ok(&["show-buffer", "-b", "human-clipboard"]),
        "secret",
        "a human's buffer was touched"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pastes_are_bracketed_when_the_program_asks() {
    let (tmux, _gateway, client) = setup().await;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("bracketed");
    let expected = b"\x1b[200~line 1\nline 2\x1b[201~plain\n".to_vec();
    // A last paste after the refused one: anything the refused one typed would come before it.
    let fence = b"\x1b[200~fence\x1b[201~".to_vec();
    let pane = tmux
        .record_input("main", &out, expected.len() + fence.len(), true)
        .await;
    ok(
        &client,
        "paste_text",
        json!({"target": pane, "text": "line 1\nline 2"}),
    )
    .await;
    ok(
        &client,
        "paste_text",
        json!({"target": pane, "text": "plain\n", "bracket": false}),
    )
    .await;
    // Text that would end the paste early (and be typed as commands) is refused; nothing of
    // it reaches the program.
    let refused = fails(
        &client,
        "paste_text",
        json!({"target": pane, "text": "echo safe\u{1b}[201~touch /tmp/pwned\n"}),
        "invalid_arguments",
    )
    .await;
    assert!(
        refused["message"].as_str().unwrap().contains("201~"),
        "{refused}"
    );
    ok(
        &client,
        "paste_text",
        json!({"target": pane, "text": "fence"}),
    )
    .await;
    // The recorder writes what it read once it has all of it.
    let all = [expected, fence].concat();
    let got = wait_for_file(&out, Duration::from_secs(10), |d| d.len() >= all.len()).await;
    assert_eq!(
        String::from_utf8_lossy(&got),
        String::from_utf8_lossy(&all),
        "the pastes, and nothing of the refused one"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn named_keys_send_what_a_terminal_sends() {
    let (tmux, _gateway, client) = setup().await;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("keys");
    let steps: Vec<(Value, bool, &[u8])> = vec![
        (json!(["a", "C-@", "Enter"]), false, b"a\0\r"),
        (json!("C-c"), false, b"\x03"),
        (
            json!(["Escape", "Tab", "BSpace", "Space", "M-x"]),
            false,
            b"\x1b\t\x7f \x1bx",
        ),
        (json!(["Up", "Left"]), false, b"\x1b[A\x1b[D"),
        (json!(["é", ";", "-"]), false, "é;-".as_bytes()),
        (json!("b"), true, b"b\r"),
        (json!([]), true, b"\r"),
    ];
    let expected: Vec<u8> = steps.iter().flat_map(|s| s.2.to_vec()).collect();
    let pane = tmux.record_input("main", &out, expected.len(), false).await;
    for (keys, enter, _) in &steps {
        let sent = ok(
            &client,
            "send_keys",
            json!({"target": pane, "keys": keys, "enter": enter}),
        )
        .await;
        let named = keys.as_array().map_or(1, Vec::len) + usize::from(*enter);
        assert_eq!(sent["keys_pressed"], named, "{keys}");
        assert_eq!(sent["text_bytes"], 0);
    }
    let got = wait_for_file(&out, Duration::from_secs(10), |d| d.len() >= expected.len()).await;
    assert_eq!(got, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn literal_text_and_enter_run_a_command() {
    let (tmux, _gateway, client) = setup().await;
    let pane = tmux
        .ok(&["display-message", "-p", "-t", "main", "#{pane_id}"])
        .trim()
        .to_owned();
    let sent = ok(
        &client,
        "send_keys",
        json!({"target": "main", "keys": "echo ran-$((6*7)) '#{pane_id}'", "literal": true}),
    )
    .await;
    assert_eq!(sent["pane_id"], pane.as_str());
    assert_eq!(sent["enter"], true);
    assert_eq!(sent["keys_pressed"], 1);
    let ran = wait_until(Duration::from_secs(10), || {
        tmux.ok(&["capture-pane", "-p", "-t", &pane])
            .lines()
            .any(|l| l == "ran-42 #{pane_id}")
    })
    .await;
    assert!(ran, "{}", tmux.ok(&["capture-pane", "-p", "-t", &pane]));
}

/// tmux's rule without tmux's mangling: key names are pressed, other strings typed byte for
/// byte (a leading `-`, a trailing `;`, `#{`, quotes); a call in the reference server's shape
/// (`keys: "…"`, Enter by default) runs its command.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strings_that_are_not_key_names_are_typed_exactly() {
    let (tmux, _gateway, client) = setup().await;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("typed");
    let expected = b"-n x;#{pane_id}'\"ctrl+c\x03echo hi\r".to_vec();
    let pane = tmux.record_input("main", &out, expected.len(), false).await;
    let sent = ok(
        &client,
        "send_keys",
        json!({"target": pane, "keys": ["-n x;", "#{pane_id}", "'\"", "ctrl+c", "C-c"],
               "enter": false}),
    )
    .await;
    assert_eq!(
        (&sent["keys_pressed"], &sent["text_bytes"]),
        (&json!(1), &json!(23)),
        "{sent}"
    );
    let sent = ok(
        &client,
        "send_keys",
        json!({"target": pane, "keys": "echo hi"}),
    )
    .await;
    assert_eq!(
        (&sent["keys_pressed"], &sent["text_bytes"]),
        (&json!(1), &json!(7)),
        "{sent}"
    );
    let got = wait_for_file(&out, Duration::from_secs(10), |d| d.len() >= expected.len()).await;
    assert_eq!(
        String::from_utf8_lossy(&got),
        String::from_utf8_lossy(&expected)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_refused_and_changes_nothing() {
    let (tmux, _gateway, client) = setup().await;
    let pane = tmux
        .ok(&["display-message", "-p", "-t", "main", "#{pane_id}"])
        .trim()
        .to_owned();
    let before = tmux.ok(&["capture-pane", "-p", "-t", &pane]);

    for bad in [
        json!({"target": pane, "keys": [], "enter": false}),
        json!({"target": pane, "keys": "Enter", "encoding": "base64"}),
        json!({"target": pane, "keys": "%%%", "literal": true, "encoding": "base64"}),
        json!({"target": pane, "keys": 7}),
        json!({"target": pane, "keys": ["a"], "encoding": "latin1"}),
        json!({"target": pane, "keys": ["a"], "bogus": 1}),
        json!({"keys": ["a"]}),
        json!({"target": "main:{last}", "keys": ["a"]}),
        json!({"target": pane}),
    ] {
        fails(&client, "send_keys", bad, "invalid_arguments").await;
    }
    let err = fails(
        &client,
        "send_keys",
        json!({"target": pane, "keys": vec!["a"; 1001]}),
        "invalid_arguments",
    )
    .await;
    assert!(err["message"].as_str().unwrap().contains("more than"));
    let err = fails(
        &client,
        "paste_text",
        json!({"target": pane, "text": "a\u{0}b"}),
        "invalid_arguments",
    )
    .await;
    assert!(err["message"].as_str().unwrap().contains("NUL"), "{err}");
    for bad in [
        json!({"target": pane, "text": ""}),
        json!({"target": pane, "text": "!!", "encoding": "base64"}),
        json!({"target": pane, "text": "x", "bogus": 1}),
        json!({"text": "x"}),
        json!({"target": "{last}", "text": "x"}),
        json!({"target": pane}),
    ] {
        fails(&client, "paste_text", bad, "invalid_arguments").await;
    }
    // Missing panes: the private buffer a failed paste created is removed again.
    for (tool, args) in [
        ("paste_text", json!({"target": "%9999", "text": "x"})),
        (
            "send_keys",
            json!({"target": "%9999", "keys": "/w==", "literal": true, "encoding": "base64"}),
        ),
        ("send_keys", json!({"target": "%9999", "keys": ["Enter"]})),
    ] {
        let err = fails(&client, tool, args, "not_found").await;
        assert!(err["suggestion"].as_str().unwrap().contains("list_panes"));
    }
    assert!(
        muxgate_buffers(&tmux).is_empty(),
        "a failed paste left its buffer"
    );
    assert_eq!(tmux.ok(&["capture-pane", "-p", "-t", &pane]), before);
}
