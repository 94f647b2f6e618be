//! `/healthz` and `/readyz` against real tmux servers on private sockets.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::tmux::{TestTmux, unique_socket_name};
use common::{config_with_server, spawn_gateway};
use muxgate::config::Config;
use muxgate::http::health::{self, READINESS_TIMEOUT, ReadinessProbe, ServerReadiness};
use serde_json::{Value, json};

async fn get(url: String) -> (reqwest::StatusCode, Value) {
    let response = reqwest::get(url).await.expect("GET");
    let status = response.status();
    (status, response.json().await.expect("JSON body"))
}

#[tokio::test]
async fn healthz_answers_while_the_process_runs() {
    let gateway = spawn_gateway(config_with_server("s", &unique_socket_name(), false)).await;
    let (status, body) = get(format!("{}/healthz", gateway.base)).await;
    assert_eq!(status, reqwest::StatusCode::OK);
    assert_eq!(body, json!({"status": "ok"}));
}

#[tokio::test]
async fn readyz_is_ready_when_the_server_runs() {
    let tmux = TestTmux::start();
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let (status, body) = get(format!("{}/readyz", gateway.base)).await;
    assert_eq!(status, reqwest::StatusCode::OK, "{body}");
    assert_eq!(
        body,
        json!({"ready": true, "status": "ready", "servers_not_ready": 0})
    );
}

#[tokio::test]
async fn readyz_is_unavailable_while_a_required_server_is_absent() {
    let running = TestTmux::start();
    let absent = unique_socket_name();
    let config = Config::from_toml_str(&format!(
        "[tmux.servers.up]\nsocket_name = '{}'\n[tmux.servers.down]\nsocket_name = '{absent}'\n",
        running.socket
    ))
    .expect("config");
    let gateway = spawn_gateway(config).await;
    let (status, body) = get(format!("{}/readyz", gateway.base)).await;
    assert_eq!(status, reqwest::StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(
        body,
        json!({"ready": false, "status": "not_ready", "servers_not_ready": 1}),
        "anyone can ask: no server names, no socket paths"
    );
}

#[tokio::test]
async fn readyz_tolerates_servers_allowed_to_be_absent() {
    let gateway = spawn_gateway(config_with_server("opt", &unique_socket_name(), true)).await;
    let (status, body) = get(format!("{}/readyz", gateway.base)).await;
    assert_eq!(status, reqwest::StatusCode::OK, "{body}");
    assert_eq!(body["ready"], true, "{body}");
}

#[tokio::test]
async fn readyz_gives_up_on_a_probe_that_does_not_answer() {
    // The handler alone, with a probe that never answers, on a real listener.
    let hanging: Arc<dyn ReadinessProbe> = Arc::new(std::future::pending::<Vec<ServerReadiness>>);
    let app = axum::Router::new()
        .route("/readyz", axum::routing::get(health::readyz))
        .with_state(hanging);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let started = std::time::Instant::now();
    let (status, body) = get(format!("{base}/readyz")).await;
    assert_eq!(status, reqwest::StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(body["ready"], false);
    assert!(body["error"].as_str().unwrap().contains("did not answer"));
    assert!(started.elapsed() < READINESS_TIMEOUT + Duration::from_secs(5));
}
