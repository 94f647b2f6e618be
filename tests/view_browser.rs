//! The live view in a real browser: headless Chromium (Debian's package) opens a view link,
//! and the DevTools protocol reads the page's text and takes screenshots. Text printed in the
//! pane must show within 1 s, and a later line must replace the screen: a page that does not
//! update fails. Skipped with a note when Chromium is not installed, except under `CI=true`.
//!
//! The screenshots are written to `<target>/tmp/view-screenshots/` for a person to look at.

mod common;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use serde_json::json;

use common::browser::Browser;
use common::tmux::TestTmux;
use common::{config_with_server, needs, spawn_gateway};
use muxgate::view::link::{ViewGrant, sign};

fn print_in_pane(tmux: &TestTmux, pane: &str, bytes: &[u8]) {
    let tty = tmux.ok(&["display-message", "-p", "-t", pane, "#{pane_tty}"]);
    let mut terminal = std::fs::OpenOptions::new()
        .write(true)
        .open(tty.trim())
        .expect("open the pane's terminal");
    terminal.write_all(bytes).expect("write to the pane");
}

fn screenshot_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("view-screenshots");
    std::fs::create_dir_all(&dir).expect("a screenshot directory");
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chromium_shows_pane_output_within_a_second_and_the_update() {
    if !needs::program("chromium", "chromium", "the live view's browser test") {
        return;
    }
    let tmux = TestTmux::start();
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let dir = gateway.config.state.dir.as_deref().expect("a state dir");
    let key = muxgate::view::key::load(dir)
        .expect("read the view key")
        .expect("a view key");
    let pane = tmux.pane_id("main");
    let token = sign(
        &key,
        &ViewGrant::new(
            "work",
            pane,
            tmux.server_pid(),
            SystemTime::now(),
            Duration::from_secs(600),
        ),
    );
    let url = format!("{}/view?t={token}", gateway.base);
    let pane = pane.to_string();
    print_in_pane(&tmux, &pane, b"\x1b[2J\x1b[H");

    let browser = Browser::start(&url).await;
    let mut page = browser.page(&url).await;
    // The page is live once its script has put the first screen up.
    let live = page.wait_for_text("", Duration::from_secs(10)).await;
    assert!(live.is_some());
    let deadline = Instant::now() + Duration::from_secs(10);
    while page
        .eval("document.getElementById('status').textContent")
        .await
        != "live"
    {
        assert!(Instant::now() < deadline, "the page never went live");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let shots = screenshot_dir();
    print_in_pane(
        &tmux,
        &pane,
        b"\x1b[1;32mhello from the pane\x1b[0m <b>not bold</b>\r\n",
    );
    let took = page
        .wait_for_text("hello from the pane", Duration::from_secs(1))
        .await
        .expect("the printed text shows in the browser within 1 s");
    let first = shots.join("1-printed.png");
    page.screenshot(&first).await;
    let text = page.screen_text().await;
    assert!(
        text.contains("<b>not bold</b>"),
        "markup shown as text: {text}"
    );
    assert_eq!(
        page.eval("document.querySelectorAll('#screen b, #screen script').length")
            .await,
        0
    );
    assert!(!text.contains("the screen was updated"), "{text}");

    print_in_pane(&tmux, &pane, b"\x1b[2J\x1b[Hthe screen was updated\r\n");
    page.wait_for_text("the screen was updated", Duration::from_secs(1))
        .await
        .expect("the update shows in the browser");
    let second = shots.join("2-updated.png");
    page.screenshot(&second).await;
    let text = page.screen_text().await;
    assert!(
        !text.contains("hello from the pane"),
        "the screen was cleared: {text}"
    );
    println!(
        "pane text shown in {:.0} ms; screenshots: {} and {}",
        took.as_secs_f64() * 1e3,
        first.display(),
        second.display()
    );
}

/// The page's approvals panel: the view link alone is refused by `/approvals`; with an
/// approver's token pasted in, the waiting call is listed and approved from the page, and the
/// agent's call then runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approver_decides_a_held_call_from_the_page() {
    if !needs::program("chromium", "chromium", "the live view's browser test") {
        return;
    }
    let tmux = TestTmux::start();
    let mut config = config_with_server("work", &tmux.socket, false);
    let rules: toml::Table = toml::from_str(
        "[approvals]\n[[approvals.rules]]\nname = 'dangerous'\ntools = ['send_keys']\n\
         pattern = 'rm -rf'\n",
    )
    .expect("rules");
    config.approvals = rules["approvals"].clone().try_into().expect("approvals");
    let gateway = spawn_gateway(config).await;
    let dir = gateway.config.state.dir.as_deref().expect("a state dir");
    let key = muxgate::view::key::load(dir)
        .expect("read the view key")
        .expect("a view key");
    let pane = tmux.pane_id("main");
    let token = sign(
        &key,
        &ViewGrant::new(
            "work",
            pane,
            tmux.server_pid(),
            SystemTime::now(),
            Duration::from_secs(600),
        ),
    );
    let url = format!("{}/view?t={token}", gateway.base);

    let agent = common::tools::client(&gateway).await;
    let risky = json!({"target": pane.to_string(), "keys": "# rm -rf nothing",
                       "literal": true, "enter": false});
    let held = tokio::spawn(async move { common::tools::call(&agent, "send_keys", risky).await });

    let browser = Browser::start(&url).await;
    let mut page = browser.page(&url).await;
    page.wait_live().await;
    let without = page
        .command(
            "Runtime.evaluate",
            json!({"expression": "fetch('/approvals', {cache: 'no-store'}).then(r => r.status)",
                   "awaitPromise": true, "returnByValue": true}),
        )
        .await;
    assert_eq!(
        without["result"]["value"], 401,
        "the view link alone reaches /approvals: {without}"
    );

    let approver = gateway.mint("alice", &["mux:approve"]);
    page.eval(&format!(
        "document.getElementById('approver-token').value = {};\
         document.getElementById('approvals-load').click(); true",
        json!(approver)
    ))
    .await;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let listed = page
            .eval("document.getElementById('approvals-list').textContent")
            .await;
        if listed.as_str().is_some_and(|t| t.contains("send_keys")) {
            assert!(
                listed.as_str().unwrap().contains("rm -rf nothing"),
                "{listed}"
            );
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the held call was never listed: {listed}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    page.screenshot(&screenshot_dir().join("3-approval-waiting.png"))
        .await;
    page.eval("document.querySelector('#approvals-list li button').click(); true")
        .await;
    let result = tokio::time::timeout(Duration::from_secs(10), held)
        .await
        .expect("the held call ends once approved")
        .expect("the agent's task");
    assert_eq!(result.is_error, Some(false), "{result:?}");
    let approval = &result.meta.as_ref().expect("_meta")["muxgate/approval"];
    assert_eq!(approval["by"], "alice", "{approval}");
}
