//! A webhook receiver of the test's own, on loopback, that logs what it is sent.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};

/// What the receiver was sent, by path: each request's headers and body.
pub(crate) type Received = Arc<Mutex<HashMap<String, Vec<(HeaderMap, Vec<u8>)>>>>;

/// A webhook receiver on loopback: `/flaky` answers 500 to its first request, `/gone` 410 to
/// every one, any other path 200. Its base URL.
pub(crate) async fn receiver(received: Received) -> String {
    async fn take(
        State(received): State<Received>,
        Path(name): Path<String>,
        headers: HeaderMap,
        body: axum::body::Bytes,
    ) -> StatusCode {
        let mut received = received.lock().expect("the receiver's log");
        let requests = received.entry(name.clone()).or_default();
        requests.push((headers, body.to_vec()));
        match name.as_str() {
            "flaky" if requests.len() == 1 => StatusCode::INTERNAL_SERVER_ERROR,
            "gone" => StatusCode::GONE,
            _ => StatusCode::OK,
        }
    }
    let app = axum::Router::new()
        .route("/{name}", axum::routing::post(take))
        .with_state(received);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let base = format!("http://{}", listener.local_addr().expect("an address"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    base
}

/// The JSON bodies `path` (`/ops` → `"ops"`) was sent, in order.
pub(crate) fn json_posts(received: &Received, path: &str) -> Vec<serde_json::Value> {
    received
        .lock()
        .expect("the log")
        .get(path)
        .map(|posts| {
            posts
                .iter()
                .map(|(_, body)| serde_json::from_slice(body).expect("JSON"))
                .collect()
        })
        .unwrap_or_default()
}
