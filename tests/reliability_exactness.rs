//! Exactness at volume: 10,000 seeded random strings (every byte value, quotes, `;`, `#{…}`,
//! `$(…)`, newlines, escape sequences, long lines, multi-byte and invalid UTF-8) typed with
//! send_keys (literal), pasted with paste_text and sent as send_keys_batch operations arrive in a
//! pane byte for byte and in order.
//! A raw-mode recorder in the pane (`stty raw -echo; head -c N > file`) writes what the
//! program received; the file is compared with the concatenation of what was sent.

mod common;

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use common::calls::{Client, legacy, ok};
use common::tmux::{TestTmux, wait_for_file};
use common::{config_with_server, spawn_gateway};
use proptest::prelude::Rng;
use proptest::test_runner::{RngAlgorithm, TestRng};
use serde_json::{Value, json};

const STRINGS: usize = 10_000;
/// Strings per tool call: keeps the run short while each call still carries many strings.
const PER_CALL: usize = 50;

/// Pieces a string is built from, besides random bytes: what quoting, tmux's command and
/// format parsers, send-keys and paste-buffer could get wrong.
const TRICKY: &[&[u8]] = &[
    b"'",
    b"\"",
    b"''",
    b";",
    b" ; ",
    b"\\;",
    b";;",
    b"#{pane_id}",
    b"#{?pane_active,a,b}",
    b"#{",
    b"}",
    b"#(id)",
    b"##",
    b"#",
    b"$(id)",
    b"$(echo $(id))",
    b"`id`",
    b"${HOME}",
    b"\\",
    b"\\\\",
    b"\n",
    b"\r",
    b"\r\n",
    b"\t",
    b"\x1b",
    b"\x1b[31m",
    b"\x1b[200~",
    b"\x1b[201~",
    b"\x1bP",
    b"\x7f",
    b"\0",
    b"-",
    b"--",
    b"-l",
    b"%1",
    b"%begin",
    b"\n%end 1 1 1\n",
    b"Enter",
    b"C-c",
    "é".as_bytes(),
    "€".as_bytes(),
    "😀".as_bytes(),
    "\u{301}".as_bytes(),
    "漢字".as_bytes(),
    b"\xff",
    b"\xc3",
    b"\xc3\x28",
    b"\xe2\x82",
    b"\xed\xa0\x80",
    b"\xf4\x90\x80\x80",
    b"\x80\x80",
];

/// `count` strings from a seeded generator: mostly short, some long lines.
fn generate(seed: u8, count: usize) -> Vec<Vec<u8>> {
    let mut rng = TestRng::from_seed(RngAlgorithm::ChaCha, &[seed; 32]);
    let mut below = |n: u64| rng.next_u64() % n;
    (0..count)
        .map(|_| {
            let len = match below(100) {
                0 => 1000 + below(3000),
                1..=9 => 41 + below(360),
                _ => 1 + below(40),
            } as usize;
            let mut s = Vec::with_capacity(len + 8);
            while s.len() < len {
                match below(10) {
                    0..=2 => s.extend_from_slice(TRICKY[below(TRICKY.len() as u64) as usize]),
                    3 => s.push(below(256) as u8),
                    _ => s.push(b' ' + below(95) as u8),
                }
            }
            s
        })
        .collect()
}

/// One string as a JSON text argument: itself when the whole call is UTF-8, else base64.
fn encode(bytes: &[u8], utf8: bool) -> Value {
    if utf8 {
        json!(std::str::from_utf8(bytes).expect("checked UTF-8"))
    } else {
        json!(STANDARD.encode(bytes))
    }
}

fn encoding(utf8: bool) -> &'static str {
    if utf8 { "utf8" } else { "base64" }
}

async fn setup() -> (TestTmux, common::TestGateway, Client) {
    let tmux = TestTmux::start();
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let client = legacy(&gateway, &gateway.token).await;
    (tmux, gateway, client)
}

/// Waits for the recorder to have `expected.len()` bytes and compares them with `expected`.
async fn assert_received(out: &std::path::Path, expected: &[u8], what: &str) {
    let got = wait_for_file(out, Duration::from_secs(60), |d| d.len() >= expected.len()).await;
    if let Some(at) = got.iter().zip(expected).position(|(a, b)| a != b) {
        panic!(
            "{what}: the pane received other bytes at offset {at}: got {:?}, sent {:?}",
            &got[at..(at + 24).min(got.len())],
            &expected[at..(at + 24).min(expected.len())]
        );
    }
    assert_eq!(got.len(), expected.len(), "{what}: length");
    let invalid = std::str::from_utf8(expected).is_err();
    eprintln!(
        "{what}: {} bytes arrived exactly (invalid UTF-8 included: {invalid})",
        expected.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_random_strings_typed_with_send_keys_arrive_exactly() {
    let (tmux, _gateway, client) = setup().await;
    let strings = generate(7, STRINGS);
    let expected = strings.concat();
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("typed");
    let pane = tmux.record_input("main", &out, expected.len(), false).await;

    for (i, batch) in strings.chunks(PER_CALL).enumerate() {
        let utf8 = batch.iter().all(|s| std::str::from_utf8(s).is_ok());
        let keys: Vec<Value> = batch.iter().map(|s| encode(s, utf8)).collect();
        let sent = ok(
            &client,
            "send_keys",
            json!({"target": pane, "keys": keys, "literal": true, "enter": false,
                   "encoding": encoding(utf8)}),
        )
        .await;
        let bytes: usize = batch.iter().map(Vec::len).sum();
        assert_eq!(sent["text_bytes"], bytes, "call {i}");
    }
    assert_received(&out, &expected, "send_keys").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_random_strings_pasted_with_paste_text_arrive_exactly() {
    let (tmux, _gateway, client) = setup().await;
    let strings = generate(11, STRINGS);
    let expected = strings.concat();
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("pasted");
    let pane = tmux.record_input("main", &out, expected.len(), false).await;

    for (i, batch) in strings.chunks(PER_CALL).enumerate() {
        let text = batch.concat();
        let utf8 = std::str::from_utf8(&text).is_ok();
        // A bracketed paste refuses NUL (whether or not the program asked for brackets) and
        // its own end marker, which the program would read as typed input.
        let bracket = !text.contains(&0) && !text.windows(6).any(|w| w == b"\x1b[201~");
        let pasted = ok(
            &client,
            "paste_text",
            json!({"target": pane, "text": encode(&text, utf8), "encoding": encoding(utf8),
                   "bracket": bracket}),
        )
        .await;
        assert_eq!(pasted["bytes"], text.len(), "call {i}");
    }
    assert_received(&out, &expected, "paste_text").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_random_strings_sent_with_send_keys_batch_arrive_exactly() {
    let (tmux, _gateway, client) = setup().await;
    let strings = generate(13, STRINGS);
    let expected = strings.concat();
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("batched");
    let pane = tmux.record_input("main", &out, expected.len(), false).await;

    for (i, batch) in strings.chunks(PER_CALL).enumerate() {
        let operations: Vec<Value> = batch
            .iter()
            .map(|s| {
                let utf8 = std::str::from_utf8(s).is_ok();
                json!({"target": pane, "keys": [encode(s, utf8)], "literal": true,
                       "enter": false, "encoding": encoding(utf8)})
            })
            .collect();
        let sent = ok(
            &client,
            "send_keys_batch",
            json!({"operations": operations}),
        )
        .await;
        assert_eq!(sent["succeeded"], batch.len(), "call {i}: {sent}");
    }
    assert_received(&out, &expected, "send_keys_batch").await;
}
