//! A muxgate killed with SIGKILL leaves no control client behind (PDEATHSIG), even while tmux
//! has output queued for it, and the tmux server stays healthy.

mod common;

use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use common::tmux::TestTmux;
use common::wait_until;
use muxgate_tmux::{Caller, EngineSettings, PaneId, TmuxServer, TmuxSocket};
use tokio_util::sync::CancellationToken;

const OWNER_SOCKET: &str = "MUXGATE_TEST_OWNER_SOCKET";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_clients_die_with_their_owner() {
    let tmux = TestTmux::start();
    // Keep output flowing so tmux has data queued for the control client when its owner dies.
    tmux.ok(&["respawn-pane", "-k", "-t", "main", "yes"]);
    let mut owner = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "owner_process",
            "--include-ignored",
            "--nocapture",
        ])
        .env(OWNER_SOCKET, &tmux.socket)
        .spawn()
        .unwrap();
    assert!(
        wait_until(Duration::from_secs(10), || tmux.muxgate_clients().len()
            == 2)
        .await,
        "the owner never attached its command and output connections: {:?}",
        tmux.muxgate_clients()
    );
    owner.kill().unwrap(); // SIGKILL: no destructor, no detach
    owner.wait().unwrap();
    assert!(
        wait_until(Duration::from_secs(5), || tmux.muxgate_clients().is_empty()).await,
        "control clients outlived their owner: {:?}",
        tmux.muxgate_clients()
    );
    // The server is not wedged: it can be killed and a new one started on the same socket.
    tmux.kill_server();
    tmux.start_again();
    assert_eq!(
        tmux.ok(&["display-message", "-p", "#{session_name}"])
            .trim(),
        "main"
    );
}

/// The process that gets killed; runs only when spawned by the test above.
#[test]
#[ignore = "child process of control_clients_die_with_their_owner"]
fn owner_process() {
    let Ok(socket) = std::env::var(OWNER_SOCKET) else {
        return;
    };
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let server = TmuxServer::start(
            "owner",
            TmuxSocket::Name(socket.clone()),
            Arc::new(EngineSettings::default()),
            CancellationToken::new(),
        );
        let pane: PaneId = {
            let out = Command::new("tmux")
                .args([
                    "-L",
                    &socket,
                    "display-message",
                    "-p",
                    "-t",
                    "main",
                    "#{pane_id}",
                ])
                .output()
                .unwrap();
            String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
        };
        // Subscribe but never read: output piles up in the stream and in tmux.
        let _sub = server
            .subscribe(&Caller::new("owner"), pane, common::subscribe_deadline())
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_secs(600)).await;
    });
}
