//! Sessions and discovery against real headless Zellij sessions.

mod zellij_common;

use muxgate_zellij::backend::CreateSessionOptions;
use muxgate_zellij::error::ZellijError;
use muxgate_zellij::ids::{PaneId, SessionName, TabId};
use zellij_common::Harness;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_list_and_kill_sessions() {
    let Some(h) = Harness::new().await else {
        return;
    };
    assert!(h.backend.version().starts_with("0."));
    let a = h.session().await;
    let b = h.session().await;
    let names: Vec<SessionName> = h
        .backend
        .list_sessions()
        .await
        .unwrap()
        .into_iter()
        .filter(|s| !s.exited)
        .map(|s| s.name)
        .collect();
    assert!(names.contains(&a) && names.contains(&b), "{names:?}");

    let err = h
        .backend
        .create_session(&a, CreateSessionOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(err, ZellijError::SessionExists { .. }), "{err}");

    h.backend.kill_session(&b).await.unwrap();
    let live: Vec<SessionName> = h
        .backend
        .list_sessions()
        .await
        .unwrap()
        .into_iter()
        .filter(|s| !s.exited)
        .map(|s| s.name)
        .collect();
    assert!(!live.contains(&b), "{live:?}");
    let err = h.backend.list_tabs(&b).await.unwrap_err();
    assert_eq!(err.to_string(), format!("no session {b}"));
    let err = h.backend.kill_session(&b).await.unwrap_err();
    assert!(matches!(err, ZellijError::NoSuchSession { .. }), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_session_is_headless_and_sized() {
    let Some(h) = Harness::new().await else {
        return;
    };
    let s = h.session().await;
    // Headless: no client stays. Zellij may still list the command that created it for a
    // moment (seen once in about a hundred runs), so it is given a few seconds to leave.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let clients = h.backend.list_clients(&s).await.unwrap();
        if clients.is_empty() {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{clients:?}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }

    let tabs = h.backend.list_tabs(&s).await.unwrap();
    assert_eq!(tabs.len(), 1);
    assert_eq!(tabs[0].id, TabId(0));
    // The sizing client gave the session the headless size instead of Zellij's 50×50.
    assert_eq!(tabs[0].viewport_columns, 160, "{:?}", tabs[0]);
    assert_eq!(tabs[0].viewport_rows, 48);

    let panes = h.backend.list_panes(&s).await.unwrap();
    let terminals: Vec<_> = panes.iter().filter(|p| p.is_user_terminal()).collect();
    assert_eq!(terminals.len(), 1, "{panes:?}");
    assert_eq!(terminals[0].id, PaneId::Terminal(0));
    assert_eq!(terminals[0].tab_id, TabId(0));
    // No setup wizard or other plugin took a visible place.
    assert!(
        panes
            .iter()
            .filter(|p| !p.id.is_terminal())
            .all(|p| p.is_suppressed),
        "{panes:?}"
    );

    let layout = h.backend.dump_layout(&s).await.unwrap();
    assert!(layout.contains("layout"), "{layout}");
    assert!(layout.contains("tab"), "{layout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_targets_get_clear_errors() {
    let Some(h) = Harness::new().await else {
        return;
    };
    let s = h.session().await;
    let err = h.backend.pane(&s, PaneId::Terminal(99)).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("no pane terminal_99 in session {s}")
    );
    let err = h.backend.rename_tab(&s, TabId(42), "x").await.unwrap_err();
    assert_eq!(err.to_string(), format!("no tab 42 in session {s}"));
    let err = h
        .backend
        .write_chars(&s, PaneId::Terminal(7), "echo hi\n")
        .await
        .unwrap_err();
    assert!(matches!(err, ZellijError::NoSuchPane { .. }), "{err}");
    let missing = h.name();
    let err = h.backend.list_panes(&missing).await.unwrap_err();
    assert!(matches!(err, ZellijError::NoSuchSession { .. }), "{err}");
    // Nothing changed.
    assert_eq!(h.backend.list_tabs(&s).await.unwrap().len(), 1);
}
