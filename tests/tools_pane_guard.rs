//! Self-protection of the pane tools: with the gateway "inside" a pane of a tmux server
//! (TMUX / TMUX_PANE pointing there), kill_pane and respawn_pane refuse that pane and still
//! act on others.
//!
//! Its own test binary: it sets TMUX and TMUX_PANE for the whole process before any thread
//! starts (the gateway reads them when it is built).

mod common;

use common::mcp_client::{connect, fails, ok};
use common::tmux::TestTmux;
use common::{config_with_server, spawn_gateway};
use serde_json::json;

#[test]
fn kill_and_respawn_refuse_the_gateways_own_pane() {
    let tmux = TestTmux::start();
    let own = tmux.pane_id("main").to_string();
    tmux.ok(&["split-window", "-d", "-t", "main"]);
    let other = tmux
        .ok(&["list-panes", "-t", "main", "-F", "#{pane_id}"])
        .lines()
        .find(|p| *p != own)
        .unwrap()
        .to_owned();
    // SAFETY: set before any other thread of this test binary exists.
    unsafe {
        std::env::set_var("TMUX", format!("{},1,0", tmux.socket_path.display()));
        std::env::set_var("TMUX_PANE", &own);
    }

    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
        let client = connect(&gateway).await;
        for tool in ["kill_pane", "respawn_pane"] {
            let err = fails(&client, tool, json!({"target": own}), "forbidden").await;
            assert!(
                err["message"]
                    .as_str()
                    .unwrap()
                    .contains("muxgate itself runs"),
                "{tool}: {err}"
            );
        }
        let pid = tmux.ok(&["display-message", "-p", "-t", &own, "#{pane_pid}"]);
        ok(&client, "respawn_pane", json!({"target": other})).await;
        ok(&client, "kill_pane", json!({"target": other})).await;
        let panes = tmux.ok(&["list-panes", "-a", "-F", "#{pane_id}"]);
        assert_eq!(panes.trim(), own, "only the gateway's own pane is left");
        assert_eq!(
            tmux.ok(&["display-message", "-p", "-t", &own, "#{pane_pid}"]),
            pid,
            "the gateway's pane was respawned"
        );
    });
}
