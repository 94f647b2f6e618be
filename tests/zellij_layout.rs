//! Tabs and panes against real Zellij sessions: created, renamed, resized, closed without
//! moving anyone's focus, and bad targets refused.

mod zellij_common;

use std::time::Duration;

use muxgate_mux::text_match::Pattern;
use muxgate_zellij::backend::{EditOptions, NewPaneOptions, NewTabOptions, SplitDirection};
use muxgate_zellij::error::ZellijError;
use muxgate_zellij::ids::{PaneId, SessionName, TabId};
use zellij_common::Harness;

/// The tab the (single) attached client looks at.
async fn client_tab(h: &Harness, s: &SessionName) -> TabId {
    let tabs = h.backend.list_tabs(s).await.unwrap();
    let active: Vec<_> = tabs.iter().filter(|t| t.active).collect();
    assert_eq!(active.len(), 1, "{tabs:?}");
    active[0].id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tabs_work_headless_and_persist() {
    let Some(h) = Harness::new().await else {
        return;
    };
    let s = h.session().await;
    assert!(h.backend.list_clients(&s).await.unwrap().is_empty());

    let tab = h
        .backend
        .new_tab(
            &s,
            NewTabOptions {
                name: Some("-build".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(tab.name, "-build");
    assert!(tab.viewport_rows > 0 && tab.viewport_columns > 0, "{tab:?}");
    // The tab has its shell and survives the sizing client's departure.
    let panes = h.backend.list_panes(&s).await.unwrap();
    assert!(
        panes
            .iter()
            .any(|p| p.tab_id == tab.id && p.is_user_terminal()),
        "{panes:?}"
    );
    let second = h
        .backend
        .new_tab(&s, NewTabOptions::default())
        .await
        .unwrap();
    let tabs = h.backend.list_tabs(&s).await.unwrap();
    assert_eq!(tabs.len(), 3, "{tabs:?}");
    assert!(h.backend.list_clients(&s).await.unwrap().is_empty());

    let renamed = h.backend.rename_tab(&s, second.id, "logs").await.unwrap();
    assert_eq!(renamed.name, "logs");
    h.backend.close_tab(&s, tab.id).await.unwrap();
    let tabs = h.backend.list_tabs(&s).await.unwrap();
    assert_eq!(
        tabs.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
        ["Tab #1", "logs"]
    );
    let err = h.backend.close_tab(&s, tab.id).await.unwrap_err();
    assert!(matches!(err, ZellijError::NoSuchTab { .. }), "{err}");

    h.backend.close_tab(&s, second.id).await.unwrap();
    let err = h.backend.close_tab(&s, TabId(0)).await.unwrap_err();
    assert!(matches!(err, ZellijError::WouldEndSession { .. }), "{err}");
    assert_eq!(h.backend.list_tabs(&s).await.unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tab_operations_keep_an_attached_clients_focus() {
    let Some(h) = Harness::new().await else {
        return;
    };
    let s = h.session().await;
    let client = h.attach_client(&s).await;
    assert_eq!(h.backend.list_clients(&s).await.unwrap().len(), 1);
    assert_eq!(client_tab(&h, &s).await, TabId(0));

    let bg = h
        .backend
        .new_tab(
            &s,
            NewTabOptions {
                name: Some("bg".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(client_tab(&h, &s).await, TabId(0), "new_tab moved focus");
    // The new tab has the attached client's size.
    assert_eq!((bg.viewport_columns, bg.viewport_rows), (120, 40), "{bg:?}");

    h.backend.rename_tab(&s, bg.id, "renamed").await.unwrap();
    assert_eq!(client_tab(&h, &s).await, TabId(0), "rename_tab moved focus");

    let pane = h
        .backend
        .new_pane(
            &s,
            NewPaneOptions {
                tab: Some(bg.id),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(pane.tab_id, bg.id);
    assert_eq!(client_tab(&h, &s).await, TabId(0), "new_pane moved focus");

    h.backend.close_tab(&s, bg.id).await.unwrap();
    assert_eq!(client_tab(&h, &s).await, TabId(0), "close_tab moved focus");

    // The check above can fail: asking for focus does move the client.
    let focused = h
        .backend
        .new_tab(
            &s,
            NewTabOptions {
                name: Some("front".into()),
                focus: true,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(client_tab(&h, &s).await, focused.id);
    h.backend.go_to_tab(&s, TabId(0)).await.unwrap();
    assert_eq!(client_tab(&h, &s).await, TabId(0));
    client.detach().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn panes_are_created_renamed_resized_and_closed() {
    let Some(h) = Harness::new().await else {
        return;
    };
    let s = h.session().await;
    let right = h
        .backend
        .new_pane(
            &s,
            NewPaneOptions {
                name: Some("side".into()),
                direction: Some(SplitDirection::Right),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(right.title, "side");
    assert!(!right.is_floating);
    let first = h.backend.pane(&s, PaneId::Terminal(0)).await.unwrap();
    assert!(
        first.geometry.columns < 160,
        "the first pane was split: {first:?}"
    );

    let renamed = h
        .backend
        .rename_pane(&s, right.id, "-renamed")
        .await
        .unwrap();
    assert_eq!(renamed.title, "-renamed");

    let before = h
        .backend
        .pane(&s, right.id)
        .await
        .unwrap()
        .geometry
        .content_columns;
    let grown = h
        .backend
        .resize_pane(&s, right.id, Some(before + 1), None)
        .await
        .unwrap();
    assert!(
        grown.geometry.content_columns > before,
        "{before} -> {:?}",
        grown.geometry
    );

    let full = h.backend.set_fullscreen(&s, right.id, true).await.unwrap();
    assert!(full.is_fullscreen);
    assert!(h.backend.list_tabs(&s).await.unwrap()[0].is_fullscreen_active);
    let first = h
        .backend
        .set_fullscreen(&s, PaneId::Terminal(0), true)
        .await
        .unwrap();
    assert!(first.is_fullscreen, "another pane's fullscreen ends first");
    let back = h
        .backend
        .set_fullscreen(&s, PaneId::Terminal(0), false)
        .await
        .unwrap();
    assert!(!back.is_fullscreen);
    assert!(!h.backend.list_tabs(&s).await.unwrap()[0].is_fullscreen_active);

    let floating = h
        .backend
        .new_pane(
            &s,
            NewPaneOptions {
                floating: true,
                command: vec!["sleep".into(), "600".into()],
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert!(floating.is_floating);
    assert!(
        floating
            .terminal_command
            .as_deref()
            .unwrap_or("")
            .contains("sleep 600")
    );
    let shown = h
        .backend
        .set_floating_panes_visible(&s, TabId(0), true)
        .await
        .unwrap();
    assert!(shown.are_floating_panes_visible);
    let hidden = h.backend.toggle_floating_panes(&s, TabId(0)).await.unwrap();
    assert!(!hidden.are_floating_panes_visible);
    let again = h.backend.toggle_floating_panes(&s, TabId(0)).await.unwrap();
    assert!(again.are_floating_panes_visible);

    let closed = h.backend.close_pane(&s, floating.id).await.unwrap();
    assert!(!closed.tab_closed);
    let closed = h.backend.close_pane(&s, right.id).await.unwrap();
    assert!(!closed.tab_closed);
    let panes = h.backend.list_panes(&s).await.unwrap();
    assert_eq!(
        panes
            .iter()
            .filter(|p| p.is_user_terminal())
            .map(|p| p.id)
            .collect::<Vec<_>>(),
        [PaneId::Terminal(0)]
    );
    let err = h.backend.close_pane(&s, right.id).await.unwrap_err();
    assert!(matches!(err, ZellijError::NoSuchPane { .. }), "{err}");
    let err = h
        .backend
        .close_pane(&s, PaneId::Terminal(0))
        .await
        .unwrap_err();
    assert!(matches!(err, ZellijError::WouldEndSession { .. }), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_the_last_pane_of_a_tab_closes_the_tab() {
    let Some(h) = Harness::new().await else {
        return;
    };
    let s = h.session().await;
    let tab = h
        .backend
        .new_tab(&s, NewTabOptions::default())
        .await
        .unwrap();
    let panes = h.backend.list_panes(&s).await.unwrap();
    let only = panes
        .iter()
        .find(|p| p.tab_id == tab.id && p.is_user_terminal())
        .unwrap();
    let closed = h.backend.close_pane(&s, only.id).await.unwrap();
    assert!(closed.tab_closed, "{closed:?}");
    assert_eq!(h.backend.list_tabs(&s).await.unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_arguments_change_nothing() {
    let Some(h) = Harness::new().await else {
        return;
    };
    let s = h.session().await;
    let err = h
        .backend
        .new_tab(
            &s,
            NewTabOptions {
                name: Some("a\u{1b}[2J".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap_err();
    assert!(matches!(err, ZellijError::InvalidArgument { .. }), "{err}");
    let err = h
        .backend
        .new_pane(
            &s,
            NewPaneOptions {
                cwd: Some("relative/dir".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap_err();
    assert!(matches!(err, ZellijError::InvalidArgument { .. }), "{err}");
    let err = h
        .backend
        .new_pane(
            &s,
            NewPaneOptions {
                tab: Some(TabId(9)),
                ..Default::default()
            },
        )
        .await
        .unwrap_err();
    assert!(matches!(err, ZellijError::NoSuchTab { .. }), "{err}");
    assert_eq!(h.backend.list_tabs(&s).await.unwrap().len(), 1);
    assert_eq!(
        h.backend
            .list_panes(&s)
            .await
            .unwrap()
            .iter()
            .filter(|p| p.is_user_terminal())
            .count(),
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edit_file_opens_the_editor_without_focus() {
    let Some(h) = Harness::new().await else {
        return;
    };
    let s = h.session().await;
    let file = h.env.home.as_ref().unwrap().join("notes.txt");
    std::fs::write(&file, "first line\nsecond line\n").unwrap();
    let client = h.attach_client(&s).await;
    let focused_before = h.backend.list_clients(&s).await.unwrap()[0].focused_pane;
    // The test config's editor is `tail -f`, which shows the file and keeps running.
    let pane = h
        .backend
        .edit_file(
            &s,
            &file,
            EditOptions {
                floating: true,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert!(pane.is_floating);
    let seen = h
        .backend
        .wait_for_text(
            &s,
            pane.id,
            &Pattern::literal("second line").unwrap(),
            Duration::from_secs(10),
        )
        .await
        .unwrap();
    assert_eq!(seen.line, "second line");
    assert_eq!(
        h.backend.list_clients(&s).await.unwrap()[0].focused_pane,
        focused_before
    );
    client.detach().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn focus_pane_moves_the_client_to_the_panes_tab() {
    let Some(h) = Harness::new().await else {
        return;
    };
    let s = h.session().await;
    let tab = h
        .backend
        .new_tab(&s, NewTabOptions::default())
        .await
        .unwrap();
    let target = h
        .backend
        .list_panes(&s)
        .await
        .unwrap()
        .into_iter()
        .find(|p| p.tab_id == tab.id && p.is_user_terminal())
        .unwrap();
    let split = h
        .backend
        .new_pane(
            &s,
            NewPaneOptions {
                tab: Some(tab.id),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let client = h.attach_client(&s).await;
    assert_eq!(client_tab(&h, &s).await, TabId(0));
    let focused = h.backend.focus_pane(&s, split.id).await.unwrap();
    assert_eq!((focused.clients, focused.clients_focused), (1, 1));
    assert_eq!(client_tab(&h, &s).await, tab.id);
    assert_eq!(
        h.backend.list_clients(&s).await.unwrap()[0].focused_pane,
        Some(split.id)
    );
    let focused = h.backend.focus_pane(&s, target.id).await.unwrap();
    assert_eq!(focused.clients_focused, 1);
    assert!(!focused.pane.is_fullscreen);
    assert!(!h.backend.list_tabs(&s).await.unwrap()[1].is_fullscreen_active);
    client.detach().await;
}
