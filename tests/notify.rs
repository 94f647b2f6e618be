//! `[notify]` end to end: a call held for approval is told to webhooks of each format (a
//! receiver of the test's own on loopback), once, signed where the format signs, without the
//! call's arguments; a target that fails now and then gets the event after a retry, one that
//! refuses it is not asked again, and `/metrics` counts each outcome. The call itself is not
//! slowed: it is held and answered as without notifications.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::tmux::TestTmux;
use common::tools::{call, client};
use common::webhook::{Received, receiver};
use common::{config_with_server, spawn_gateway, wait_until};
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_call_is_told_to_every_target_once() {
    let received: Received = Arc::default();
    let hooks = receiver(received.clone()).await;
    let dir = tempfile::tempdir().expect("a directory");
    let key_file = dir.path().join("notify.key");
    std::fs::write(&key_file, "hook-key-4f1\n").expect("the key");
    let tmux = TestTmux::start();
    let mut config = config_with_server("work", &tmux.socket, false);
    let tables: toml::Table = toml::from_str(&format!(
        r#"
        [[approvals.rules]]
        name = "pushes"
        tools = ["send_keys"]
        pattern = 'git push'

        [notify.targets.signed]
        format = "json"
        url = "{hooks}/signed"
        secret_file = "{key}"
        [notify.targets.chat]
        format = "slack"
        url = "{hooks}/chat"
        [notify.targets.phone]
        format = "ntfy"
        url = "{hooks}/phone"
        [notify.targets.flaky]
        format = "slack"
        url = "{hooks}/flaky"
        [notify.targets.gone]
        format = "slack"
        url = "{hooks}/gone"
        [notify.targets.others]
        format = "slack"
        url = "{hooks}/others"
        clients = ["someone-else"]
        [notify.targets.secrets-only]
        format = "slack"
        url = "{hooks}/secrets-only"
        events = ["secret_requested"]
        [notify.targets.own-team]
        format = "slack"
        url = "{hooks}/own-team"
        workspaces = ["te*"]
        [notify.targets.other-team]
        format = "slack"
        url = "{hooks}/other-team"
        workspaces = ["team-b"]
        "#,
        key = key_file.display()
    ))
    .expect("the tables");
    config.approvals = tables["approvals"].clone().try_into().expect("approvals");
    config.approvals.timeout_secs = 2;
    config.notify = tables["notify"].clone().try_into().expect("notify");
    let gateway = spawn_gateway(config).await;
    let agent = client(&gateway).await;
    let pane = tmux.pane_id("main").to_string();

    // Held, nobody decides: denied after 2 s, as without notifications.
    let started = std::time::Instant::now();
    let held = call(
        &agent,
        "send_keys",
        json!({"target": pane, "keys": "git push --force origin main"}),
    )
    .await;
    assert_eq!(held.is_error, Some(true), "{held:?}");
    assert!(started.elapsed() < Duration::from_secs(10));

    let all_in = wait_until(Duration::from_secs(15), || {
        let received = received.lock().expect("the log");
        ["signed", "chat", "phone", "gone", "own-team"]
            .iter()
            .all(|name| received.get(*name).is_some_and(|r| !r.is_empty()))
            && received.get("flaky").is_some_and(|r| r.len() == 2)
    })
    .await;
    assert!(all_in, "{:?}", received.lock().expect("the log").keys());
    // Settled: nothing more comes (no second post after success or a refusal).
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let received = received.lock().expect("the log").clone();
    for (name, count) in [
        ("signed", 1),
        ("chat", 1),
        ("phone", 1),
        ("flaky", 2),
        ("gone", 1),
        ("own-team", 1),
    ] {
        assert_eq!(received[name].len(), count, "{name}");
    }
    assert!(!received.contains_key("others") && !received.contains_key("secrets-only"));
    // A team's target hears its own team's events only (the caller works in workspace
    // `test`, its `sub`).
    assert!(!received.contains_key("other-team"));

    // The JSON is signed with the key over the timestamp and the body.
    let (headers, body) = &received["signed"][0];
    let header = |name: &str| headers[name].to_str().expect("a header").to_owned();
    let timestamp = header("x-muxgate-timestamp");
    let mut mac = Hmac::<Sha256>::new_from_slice(b"hook-key-4f1").expect("a key");
    mac.update(format!("{timestamp}.").as_bytes());
    mac.update(body);
    assert_eq!(
        header("x-muxgate-signature"),
        format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
    );
    let event: Value = serde_json::from_slice(body).expect("json");
    assert_eq!(event["event"], "approval_pending", "{event}");
    assert_eq!(event["client"], "test", "{event}");
    assert_eq!(event["tool"], "send_keys", "{event}");
    assert_eq!(event["rule"], "pushes", "{event}");
    assert_eq!(event["workspace"], "test", "{event}");
    assert!(event.get("inbox_url").is_none(), "{event}");
    // Slack's text and ntfy's body carry the summary; no body carries the arguments.
    let chat: Value = serde_json::from_slice(&received["chat"][0].1).expect("json");
    assert!(
        chat["text"]
            .as_str()
            .unwrap()
            .contains("waits for approval"),
        "{chat}"
    );
    assert_eq!(received["phone"][0].0["title"], "muxgate: approval pending");
    for requests in received.values() {
        for (_, body) in requests {
            assert!(!String::from_utf8_lossy(body).contains("git push"));
        }
    }

    let posts = |target: &str, outcome: &str| {
        format!("muxgate_notification_posts_total{{target=\"{target}\",outcome=\"{outcome}\"}}")
    };
    for (target, outcome, count) in [
        ("signed", "delivered", 1.0),
        ("flaky", "retried", 1.0),
        ("flaky", "delivered", 1.0),
        ("gone", "failed", 1.0),
        ("gone", "retried", 0.0),
        ("others", "delivered", 0.0),
    ] {
        assert_eq!(
            common::probe::metric_sample(&gateway.base, &posts(target, outcome)).await,
            Some(count),
            "{target} {outcome}"
        );
    }
}

#[tokio::test]
async fn a_target_that_cannot_be_used_is_refused_at_start() {
    for (table, says) in [
        (
            "[notify.targets.x]\nformat = 'json'\nurl = 'https://h.example/'",
            "notify.targets.x: secret_file: required",
        ),
        (
            "[notify.targets.x]\nformat = 'slack'\nurl = 'ftp://h.example/'",
            "is not http or https",
        ),
        (
            "[notify.targets.x]\nformat = 'ntfy'\nurl = 'https://h.example/'\nclients = ['']",
            "clients",
        ),
        (
            "[notify.targets.x]\nformat = 'teams'\nurl = 'https://h.example/'",
            "unknown variant",
        ),
        (
            "[notify.targets.x]\nformat = 'ntfy'\nurl = 'https://h.example/'\nworkspaces = ['']",
            "workspaces",
        ),
        (
            "[notify.targets.x]\nformat = 'ntfy'\nurl = 'https://h.example/'\ninbox_for = 'alice'",
            "notify.targets.x.inbox_for: a sign-in link needs http.public_url",
        ),
        (
            "[http]\npublic_url = 'https://gw.example'\n[approvals]\napprovers = ['bob']\n\
             [notify.targets.x]\nformat = 'ntfy'\nurl = 'https://h.example/'\ninbox_for = 'alice'",
            "\"alice\" is not among approvals.approvers",
        ),
        (
            "[http]\npublic_url = 'https://gw.example'\n\
             [notify.targets.x]\nformat = 'ntfy'\nurl = 'https://h.example/'\ninbox_for = 'alice'",
            "inbox links need approvals.approvers",
        ),
        (
            "[inbox]\nlink_ttl_secs = 5",
            "inbox.link_ttl_secs: must be 60 to 86400 seconds",
        ),
    ] {
        let error = muxgate::config::Config::from_toml_str(table)
            .expect_err(table)
            .to_string();
        assert!(error.contains(says), "{table}: {error}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_request_is_told_without_its_link() {
    let received: Received = Arc::default();
    let hooks = receiver(received.clone()).await;
    let tmux = TestTmux::start();
    let mut config = config_with_server("work", &tmux.socket, false);
    let tables: toml::Table = toml::from_str(&format!(
        "[notify.targets.phone]\nformat = 'ntfy'\nurl = '{hooks}/phone'\n\
         events = ['secret_requested']\n"
    ))
    .expect("the table");
    config.notify = tables["notify"].clone().try_into().expect("notify");
    let gateway = spawn_gateway(config).await;
    let agent = client(&gateway).await;
    let pane = tmux.session_running("s", "env PS1='ready$ ' bash --norc --noprofile");
    common::tools::wait_for_screen(&tmux, &pane, "ready$").await;
    common::tools::type_line(&tmux, &pane, "read -rs SECRET; echo got-${#SECRET}");
    // Asked until the shell waits in its read with echo off.
    let mut opened = None;
    for _ in 0..100 {
        let answer = call(
            &agent,
            "request_secret_input",
            json!({"target": pane, "label": "db password"}),
        )
        .await;
        if answer.is_error != Some(true) {
            opened = answer.structured_content;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let opened = opened.expect("a secret request");
    let told = wait_until(Duration::from_secs(10), || {
        received
            .lock()
            .expect("the log")
            .get("phone")
            .is_some_and(|r| !r.is_empty())
    })
    .await;
    assert!(told, "no notification");
    let received = received.lock().expect("the log").clone();
    let (headers, body) = &received["phone"][0];
    assert_eq!(headers["title"], "muxgate: secret requested");
    let body = String::from_utf8_lossy(body);
    assert!(
        body.contains("db password") && body.contains(&format!("work:{pane}")),
        "{body}"
    );
    // The link (which lets whoever holds it type into the pane) is not in it.
    assert!(!body.contains("/secret") && !body.contains("t="), "{body}");
    assert_eq!(opened["status"], "pending", "{opened}");
}
