//! A headless Chromium driven over the DevTools protocol, for the tests of the pages humans use
//! (the live view, the secret entry form).

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use base64::Engine as _;
use futures::{SinkExt as _, StreamExt as _};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio_tungstenite::tungstenite::Message;

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// A headless Chromium, killed on drop.
pub(crate) struct Browser {
    _child: tokio::process::Child,
    _profile: tempfile::TempDir,
    /// The DevTools HTTP endpoint, `http://127.0.0.1:PORT`.
    devtools: String,
}

impl Browser {
    /// Starts a headless Chromium showing `url`.
    pub(crate) async fn start(url: &str) -> Self {
        let profile = tempfile::tempdir().expect("a profile directory");
        let mut child = tokio::process::Command::new("chromium")
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-extensions",
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
                "--window-size=1100,800",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg(url)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("start chromium");
        let stderr = child.stderr.take().expect("stderr");
        let mut lines = BufReader::new(stderr).lines();
        let devtools = tokio::time::timeout(Duration::from_secs(30), async {
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(rest) = line.split("DevTools listening on ws://").nth(1) {
                    let host = rest.split('/').next().unwrap_or_default();
                    return format!("http://{host}");
                }
            }
            panic!("chromium exited without a DevTools endpoint");
        })
        .await
        .expect("chromium's DevTools endpoint within 30 s");
        // Keep draining its log so it never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Self {
            _child: child,
            _profile: profile,
            devtools,
        }
    }

    /// The DevTools connection of the page that shows `url`.
    pub(crate) async fn page(&self, url: &str) -> Page {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let targets: Value = reqwest::get(format!("{}/json/list", self.devtools))
                .await
                .expect("DevTools /json/list")
                .json()
                .await
                .expect("a target list");
            let found = targets.as_array().and_then(|targets| {
                targets.iter().find(|t| {
                    t["type"] == "page" && t["url"].as_str().is_some_and(|u| u.starts_with(url))
                })
            });
            if let Some(ws) = found.and_then(|t| t["webSocketDebuggerUrl"].as_str()) {
                let (socket, _) = tokio_tungstenite::connect_async(ws)
                    .await
                    .expect("connect to the page's DevTools socket");
                return Page { socket, next_id: 1 };
            }
            assert!(
                Instant::now() < deadline,
                "the page never opened: {targets}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// One page's DevTools socket.
pub(crate) struct Page {
    socket: Socket,
    next_id: u64,
}

impl Page {
    /// Sends a DevTools command and returns its result.
    pub(crate) async fn command(&mut self, method: &str, params: Value) -> Value {
        match self.try_command(method, params).await {
            Ok(result) => result,
            Err(error) => panic!("{method}: {error}"),
        }
    }

    /// Sends a DevTools command: its result, or the error it got.
    pub(crate) async fn try_command(
        &mut self,
        method: &str,
        params: Value,
    ) -> Result<Value, Value> {
        let id = self.next_id;
        self.next_id += 1;
        let request = json!({"id": id, "method": method, "params": params});
        self.socket
            .send(Message::text(request.to_string()))
            .await
            .expect("send a DevTools command");
        let answer = tokio::time::timeout(Duration::from_secs(10), async {
            while let Some(message) = self.socket.next().await {
                let Ok(Message::Text(text)) = message else {
                    continue;
                };
                let value: Value = serde_json::from_str(&text).expect("DevTools JSON");
                if value["id"] == id {
                    return value;
                }
            }
            panic!("the DevTools socket closed");
        })
        .await
        .expect("a DevTools answer within 10 s");
        match answer.get("error") {
            Some(error) => Err(error.clone()),
            None => Ok(answer["result"].clone()),
        }
    }

    /// Waits until the page has loaded and its script put the first screen up (the page may
    /// still be replacing `about:blank` when the socket opens, which evaluation errors say).
    pub(crate) async fn wait_live(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let status = self
                .try_command(
                    "Runtime.evaluate",
                    json!({"expression": "document.getElementById('status')?.textContent",
                           "returnByValue": true}),
                )
                .await;
            if status.is_ok_and(|s| s["result"]["value"] == "live") {
                return;
            }
            assert!(Instant::now() < deadline, "the page never went live");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Evaluates `expression` in the page and returns its value.
    pub(crate) async fn eval(&mut self, expression: &str) -> Value {
        let result = self
            .command(
                "Runtime.evaluate",
                json!({"expression": expression, "returnByValue": true}),
            )
            .await;
        result["result"]["value"].clone()
    }

    /// The text of the page's screen.
    pub(crate) async fn screen_text(&mut self) -> String {
        self.eval("document.getElementById('screen').textContent")
            .await
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// Polls the screen's text until it holds `needle`; how long that took, or `None` after
    /// `timeout`.
    pub(crate) async fn wait_for_text(
        &mut self,
        needle: &str,
        timeout: Duration,
    ) -> Option<Duration> {
        let started = Instant::now();
        while started.elapsed() < timeout {
            if self.screen_text().await.contains(needle) {
                return Some(started.elapsed());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        None
    }

    /// Lays the page out as a 390 px wide phone (an iPhone's CSS width) shows it.
    pub(crate) async fn as_phone(&mut self) {
        self.command(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": 390, "height": 844, "deviceScaleFactor": 2, "mobile": true}),
        )
        .await;
    }

    /// Evaluates `expression` until it is true (the page may be between two documents, which
    /// evaluation errors say); panics after `timeout`, naming `what`.
    pub(crate) async fn wait_until(&mut self, expression: &str, what: &str, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        loop {
            let value = self
                .try_command(
                    "Runtime.evaluate",
                    json!({"expression": expression, "returnByValue": true}),
                )
                .await;
            if value.is_ok_and(|v| v["result"]["value"] == true) {
                return;
            }
            let body = self
                .try_command(
                    "Runtime.evaluate",
                    json!({"expression": "document.body?.innerText", "returnByValue": true}),
                )
                .await
                .map(|v| v["result"]["value"].clone())
                .unwrap_or_default();
            assert!(Instant::now() < deadline, "{what}, never: {body}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// A PNG screenshot of the page, written to `path`.
    pub(crate) async fn screenshot(&mut self, path: &Path) {
        let shot = self
            .command("Page.captureScreenshot", json!({"format": "png"}))
            .await;
        let png = base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().expect("screenshot data"))
            .expect("base64 PNG");
        assert!(png.starts_with(b"\x89PNG"), "not a PNG");
        std::fs::write(path, png).expect("write the screenshot");
    }
}
