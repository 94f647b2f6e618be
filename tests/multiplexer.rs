//! The backend-neutral `Multiplexer` trait: one scenario, written once against the trait, run on a
//! real tmux server and on a real headless Zellij session.

mod common;
mod zellij_common;

use std::time::Duration;

use common::tmux::TestTmux;
use muxgate_mux::multiplexer::{Multiplexer, ScreenScope};
use muxgate_mux::text_match::Pattern;
use muxgate_tmux::typed::panes::TmuxPanes;
use muxgate_tmux::{Caller, EngineSettings, PaneId as TmuxPaneId, TmuxEngine, TmuxSocket};
use muxgate_zellij::ids::PaneId as ZellijPaneId;
use muxgate_zellij::panes::ZellijPanes;
use tokio_util::sync::CancellationToken;
use zellij_common::Harness;

/// Types a command, presses Enter, waits for its output, reads it back; checks the failures.
async fn scenario<B: Multiplexer>(io: &B, pane: B::PaneId, enter: &str) {
    let listed = io.list_panes().await.expect("list panes");
    let me = listed
        .iter()
        .find(|p| p.id.to_string() == pane.to_string())
        .unwrap_or_else(|| panic!("{}: {pane} not listed", io.backend()));
    assert!(me.rows > 0 && me.columns > 0 && !me.exited);

    let prompt = Pattern::regex(r"[$#] ?$").unwrap();
    io.wait_for_screen(&pane, &prompt, Duration::from_secs(15))
        .await
        .expect("prompt");
    io.send_text(&pane, "echo PANE_IO_$((6*7))")
        .await
        .expect("send text");
    io.send_keys(&pane, &[enter.to_owned()])
        .await
        .expect("send keys");
    let seen = io
        .wait_for_screen(
            &pane,
            &Pattern::regex("^PANE_IO_42$").unwrap(),
            Duration::from_secs(10),
        )
        .await
        .expect("output");
    assert_eq!(seen.line, "PANE_IO_42");
    assert_eq!(seen.screen[seen.line_index], "PANE_IO_42");

    let visible = io
        .read_screen(&pane, ScreenScope::Visible)
        .await
        .expect("read");
    assert!(visible.iter().any(|l| l == "PANE_IO_42"), "{visible:?}");
    assert!(visible.last().is_some_and(|l| !l.trim().is_empty()));
    let full = io
        .read_screen(&pane, ScreenScope::Full)
        .await
        .expect("read");
    assert!(full.len() >= visible.len());

    let missing = io
        .wait_for_screen(
            &pane,
            &Pattern::literal("NEVER_ON_SCREEN").unwrap(),
            Duration::from_millis(300),
        )
        .await;
    assert!(
        missing.is_err(),
        "{}: a wait without a match times out",
        io.backend()
    );
    let bad_key = io.send_keys(&pane, &["NoSuchKeyName".to_owned()]).await;
    assert!(
        bad_key.is_err(),
        "{}: key names are validated",
        io.backend()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tmux_panes_through_the_trait() {
    let tmux = TestTmux::start();
    let shutdown = CancellationToken::new();
    let engine = TmuxEngine::start(
        [("t".to_owned(), TmuxSocket::Name(tmux.socket.clone()).into())],
        EngineSettings::default(),
        &shutdown,
    );
    let io = TmuxPanes::new(engine.server("t").unwrap().clone(), Caller::new("test"));
    let pane: TmuxPaneId = tmux
        .ok(&["display-message", "-p", "-t", "main", "#{pane_id}"])
        .trim()
        .parse()
        .unwrap();
    scenario(&io, pane, "Enter").await;
    let missing = io.read_screen(&TmuxPaneId(999), ScreenScope::Visible).await;
    assert!(missing.is_err());
    shutdown.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zellij_panes_through_the_trait() {
    let Some(h) = Harness::new().await else {
        return;
    };
    let session = h.session().await;
    let io = ZellijPanes::new(h.backend.clone(), session);
    scenario(&io, ZellijPaneId::Terminal(0), "Enter").await;
    let missing = io
        .read_screen(&ZellijPaneId::Terminal(99), ScreenScope::Visible)
        .await;
    assert!(missing.is_err());
}
