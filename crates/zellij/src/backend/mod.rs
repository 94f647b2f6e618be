//! The public API of the Zellij backend: one [`ZellijBackend`] per configured Zellij server.
//!
//! Every method targets sessions, tabs and panes by id and never moves a client's focus unless
//! its name says it is a focus operation ([`ZellijBackend::go_to_tab`],
//! [`ZellijBackend::focus_pane`]) or the caller asked for it (`focus: true`). Zellij reports many
//! bad targets with exit code 0 and does nothing, so each operation first checks that its target
//! exists and returns [`ZellijError::NoSuchPane`] / [`ZellijError::NoSuchTab`] /
//! [`ZellijError::NoSuchSession`] otherwise.
//!
//! All steps of one operation run as one job on the session's queue (`SessionQueue`), so
//! concurrent callers never interleave actions on a session. Waiting for output
//! ([`ZellijBackend::wait_for_text`], the completion of [`ZellijBackend::run_in_pane`] and
//! [`ZellijBackend::run_command`]) happens outside the queue.
//!
//! Files: this one holds the operations; `types` what callers pass and get back; `inner` the
//! per-session primitives (one action, listings, lookups, dumps); `one_off_run` the command run
//! in a pane of its own; `checks` the pure helpers.

use std::collections::HashMap;
use std::ffi::OsString;
use std::future::Future;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use muxgate_mux::screen_mark::ScreenMark;
use muxgate_mux::shell_run::screen::{MarkedRun, shell_of};
use muxgate_mux::text_match::Pattern;
use tokio::time::Instant;

mod checks;
mod inner;
mod one_off_run;
mod resize;
mod types;

pub use types::{
    ClosedPane, CommandResult, CreateSessionOptions, EditOptions, FocusedPane, InputStep,
    NewLinesEnd, NewLinesWait, NewPaneOptions, NewTabOptions, PaneRun, PaneText, ReadScope,
    RunInPaneOptions, RunOptions, SplitDirection, TextMatch, ZellijServerSpec,
};

use super::cli::{ZellijCli, describe_status, first_lines};
use super::error::{PANE_CLOSED, Result, ZellijError};
use super::ids::{PaneId, SessionName, TabId};
use super::keys::Key;
use super::listing::{Client, Pane, SessionEntry, Tab};
use super::queue::SessionQueue;
use super::watch::{FallbackPolling, PaneView, PaneWatch, WatchRegistry};

use checks::{
    MAX_LAYOUT_LEN, args, check_dir, check_name, invalid, opt_path, parse_version, push_command,
    with_timeout,
};
use resize::{Axis, fullscreen_flips};

/// How many times an empty layout dump is asked for (see [`ZellijBackend::dump_layout`]).
const LAYOUT_ATTEMPTS: u32 = 3;
/// The pause before an empty layout dump is asked for again.
const LAYOUT_RETRY_PAUSE: Duration = Duration::from_millis(100);

/// A Zellij server muxgate drives. Cheap to clone; clones share queues and watches.
#[derive(Clone)]
pub struct ZellijBackend {
    inner: Arc<Inner>,
}

struct Inner {
    spec: ZellijServerSpec,
    cli: ZellijCli,
    version: String,
    queues: Mutex<HashMap<SessionName, SessionQueue>>,
    watches: WatchRegistry,
}

impl ZellijBackend {
    /// Checks the binary (`zellij --version`, 0.44 or newer) and returns the backend.
    pub async fn open(spec: ZellijServerSpec) -> Result<Self> {
        let cli = ZellijCli::new(spec.env.clone());
        let out = cli
            .run("--version", ["--version"], spec.call_timeout)
            .await?
            .success("--version")?;
        let version =
            parse_version(&out.stdout).ok_or_else(|| ZellijError::UnsupportedVersion {
                found: out.stdout.trim().to_owned(),
            })?;
        Ok(Self {
            inner: Arc::new(Inner {
                spec,
                cli,
                version,
                queues: Mutex::new(HashMap::new()),
                watches: WatchRegistry::default(),
            }),
        })
    }

    /// The Zellij version, e.g. `0.45.1`.
    pub fn version(&self) -> &str {
        &self.inner.version
    }

    /// Pane watches currently running (one `subscribe` child each).
    pub fn active_watches(&self) -> usize {
        self.inner.watches.active()
    }

    /// Runs `op` as one job on `session`'s queue.
    async fn queued<T, F, Fut>(&self, session: &SessionName, what: &str, op: F) -> Result<T>
    where
        F: FnOnce(Arc<Inner>, SessionName) -> Fut,
        Fut: Future<Output = Result<T>> + Send + 'static,
        T: Send + 'static,
    {
        let queue = self.inner.queue(session);
        let fut = op(self.inner.clone(), session.clone());
        queue.run(what, self.inner.spec.op_timeout, fut).await
    }

    // ----- sessions -----------------------------------------------------------------------

    /// Sessions in this server's socket dir, including exited ones kept for resurrection.
    pub async fn list_sessions(&self) -> Result<Vec<SessionEntry>> {
        self.inner.sessions().await
    }

    /// Starts a session with no client attached (`attach --create-background`), then gives it
    /// the configured headless size through a short-lived attached client, so that its panes
    /// are not 50 columns wide.
    pub async fn create_session(
        &self,
        session: &SessionName,
        opts: CreateSessionOptions,
    ) -> Result<()> {
        if let Some(cwd) = &opts.cwd {
            check_dir("cwd", cwd)?;
        }
        self.queued(session, "create_session", |inner, s| async move {
            if inner.sessions().await?.iter().any(|e| e.name == s) {
                return Err(ZellijError::SessionExists { session: s });
            }
            let mut cmd = inner.cli.command();
            cmd.args(["attach", "--create-background", s.as_str()]);
            if let Some(cwd) = &opts.cwd {
                cmd.current_dir(cwd);
            }
            let out = tokio::time::timeout(inner.spec.call_timeout, cmd.output())
                .await
                .map_err(|_| ZellijError::Timeout {
                    what: format!("creating session {s}"),
                    after: inner.spec.call_timeout,
                })?
                .map_err(|source| ZellijError::Io {
                    command: "attach --create-background".to_owned(),
                    source,
                })?;
            if !out.status.success() {
                return Err(ZellijError::CommandFailed {
                    command: "attach --create-background".to_owned(),
                    status: describe_status(out.status),
                    stderr: first_lines(&String::from_utf8_lossy(&out.stderr)),
                });
            }
            // Best effort: without it the session works, at Zellij's 50×50.
            if let Err(e) = inner.size_session(&s).await {
                tracing::warn!(session = %s, error = %e, "could not size the new session");
            }
            Ok(())
        })
        .await
    }

    /// Ends a session and its processes (`kill-session`). Resurrection data, if the user's
    /// config keeps any, stays (`zellij delete-session` removes it).
    pub async fn kill_session(&self, session: &SessionName) -> Result<()> {
        let result = self
            .queued(session, "kill_session", |inner, s| async move {
                inner.require_live_session(&s).await?;
                let out = inner
                    .cli
                    .run(
                        "kill-session",
                        ["kill-session", s.as_str()],
                        inner.spec.call_timeout,
                    )
                    .await?;
                out.success("kill-session").map(drop)
            })
            .await;
        self.inner.forget(session);
        result
    }

    // ----- discovery ----------------------------------------------------------------------

    /// Tabs of a session, by position.
    pub async fn list_tabs(&self, session: &SessionName) -> Result<Vec<Tab>> {
        self.queued(session, "list_tabs", |inner, s| async move {
            inner.tabs(&s).await
        })
        .await
    }

    /// Panes of a session, including plugin and suppressed panes (see
    /// [`Pane::is_user_terminal`]).
    pub async fn list_panes(&self, session: &SessionName) -> Result<Vec<Pane>> {
        self.queued(session, "list_panes", |inner, s| async move {
            inner.panes(&s).await
        })
        .await
    }

    /// One pane's current state.
    pub async fn pane(&self, session: &SessionName, pane: PaneId) -> Result<Pane> {
        self.queued(session, "pane_info", move |inner, s| async move {
            inner.pane(&s, pane).await
        })
        .await
    }

    /// Clients attached to a session (humans' terminals).
    pub async fn list_clients(&self, session: &SessionName) -> Result<Vec<Client>> {
        self.queued(session, "list_clients", |inner, s| async move {
            inner.clients(&s).await
        })
        .await
    }

    /// The live layout as KDL (`focus=true` marks each tab's focused pane).
    ///
    /// `action dump-layout` has been seen to succeed and print nothing for a session started
    /// a moment before on a loaded machine (zellij 0.45.1): an empty dump is asked again, and
    /// after three empty dumps it is an error, never an empty layout.
    pub async fn dump_layout(&self, session: &SessionName) -> Result<String> {
        self.queued(session, "dump_layout", |inner, s| async move {
            for attempt in 1..=LAYOUT_ATTEMPTS {
                let layout = inner
                    .act(&s, "action dump-layout", args(["dump-layout"]))
                    .await?;
                if !layout.trim().is_empty() {
                    return Ok(layout);
                }
                if attempt < LAYOUT_ATTEMPTS {
                    tokio::time::sleep(LAYOUT_RETRY_PAUSE).await;
                }
            }
            Err(ZellijError::NoEffect {
                session: s,
                what: "print its layout",
                detail: format!("`action dump-layout` printed nothing, {LAYOUT_ATTEMPTS} times"),
            })
        })
        .await
    }

    // ----- tabs ---------------------------------------------------------------------------

    /// Creates a tab; no client's focus changes unless `opts.focus`.
    ///
    /// Works with no client attached. Root cause of the failure seen there (zellij-server
    /// 0.45.1, `Screen::new_tab`): a new tab is sized by `size_for_client()`, which takes a
    /// connected client's size and otherwise falls back to `Size::default()`, 0×0. The 50×50 of
    /// `attach --create-background` belongs to the creating client and is dropped when it
    /// disconnects. So with no client attached the tab is 0×0, applying its layout fails ("Not
    /// enough room for panes" in the server log), `new-tab` still prints an id, and the next
    /// render closes the empty tab. Muxgate therefore attaches a short-lived client of the
    /// headless size through a pty for the duration of `new-tab` when `list-clients` is empty;
    /// the tab keeps that size after the client leaves.
    pub async fn new_tab(&self, session: &SessionName, opts: NewTabOptions) -> Result<Tab> {
        let mut argv: Vec<OsString> = args(["new-tab"]);
        if !opts.focus {
            argv.push("--no-focus".into());
        }
        if let Some(name) = &opts.name {
            check_name("tab name", name)?;
            argv.push(format!("--name={name}").into());
        }
        if let Some(cwd) = &opts.cwd {
            check_dir("cwd", cwd)?;
            argv.push(opt_path("--cwd=", cwd));
        }
        if let Some(layout) = &opts.layout {
            if layout.trim().is_empty() || layout.len() > MAX_LAYOUT_LEN || layout.contains('\0') {
                return Err(invalid(
                    "layout",
                    "expected a non-empty KDL layout under 64 KiB",
                ));
            }
            argv.push(format!("--layout-string={layout}").into());
        }
        push_command(&mut argv, &opts.command)?;
        self.queued(session, "new_tab", move |inner, s| async move {
            inner.require_live_session(&s).await?;
            // The sizing client can be dropped by Zellij's client-id race (see `attach`); a tab
            // created meanwhile is 0×0 or not created at all. Try once more.
            for _ in 0..2 {
                if let Some(tab) = inner.create_tab(&s, argv.clone()).await? {
                    return Ok(tab);
                }
            }
            Err(ZellijError::NoEffect {
                session: s,
                what: "create a usable tab",
                detail: "the tab had no room for panes (0×0); no client gave it a size".to_owned(),
            })
        })
        .await
    }

    /// Renames a tab by id; focus does not change.
    pub async fn rename_tab(&self, session: &SessionName, tab: TabId, name: &str) -> Result<Tab> {
        check_name("tab name", name)?;
        let name = name.to_owned();
        self.queued(session, "rename_tab", move |inner, s| async move {
            inner.tab(&s, tab).await?;
            let id = tab.to_string();
            inner
                .act(
                    &s,
                    "action rename-tab",
                    args(["rename-tab", "--tab-id", &id, "--", &name]),
                )
                .await?;
            inner.tab(&s, tab).await
        })
        .await
    }

    /// Closes a tab by id with all its panes and processes. Clients on that tab move to a
    /// neighbouring tab; other clients keep their focus. Refuses to close the last tab, which
    /// would end the session.
    pub async fn close_tab(&self, session: &SessionName, tab: TabId) -> Result<()> {
        self.queued(session, "close_tab", move |inner, s| async move {
            let tabs = inner.tabs(&s).await?;
            if !tabs.iter().any(|t| t.id == tab) {
                return Err(ZellijError::NoSuchTab { session: s, tab });
            }
            if tabs.len() == 1 {
                return Err(ZellijError::WouldEndSession {
                    session: s,
                    what: "tab",
                });
            }
            let id = tab.to_string();
            inner
                .act(&s, "action close-tab", args(["close-tab", "--tab-id", &id]))
                .await?;
            if inner.tabs(&s).await?.iter().any(|t| t.id == tab) {
                return Err(ZellijError::NoEffect {
                    session: s,
                    what: "close the tab",
                    detail: format!("tab {tab} is still listed"),
                });
            }
            Ok(())
        })
        .await
    }

    /// Focus operation: switches the session's clients to a tab (visible to every attached
    /// human).
    pub async fn go_to_tab(&self, session: &SessionName, tab: TabId) -> Result<Tab> {
        self.queued(session, "go_to_tab", move |inner, s| async move {
            inner.tab(&s, tab).await?;
            let id = tab.to_string();
            inner
                .act(&s, "action go-to-tab-by-id", args(["go-to-tab-by-id", &id]))
                .await?;
            inner.tab(&s, tab).await
        })
        .await
    }

    /// Shows or hides the floating panes of a tab. Unlike Zellij's own toggle it never opens
    /// a new floating pane when the tab has none.
    pub async fn set_floating_panes_visible(
        &self,
        session: &SessionName,
        tab: TabId,
        visible: bool,
    ) -> Result<Tab> {
        self.queued(
            session,
            "set_floating_panes_visible",
            move |inner, s| async move {
                inner.tab(&s, tab).await?;
                inner.set_floating(&s, tab, visible).await?;
                inner.tab(&s, tab).await
            },
        )
        .await
    }

    /// Flips the visibility of a tab's floating panes (see
    /// [`ZellijBackend::set_floating_panes_visible`]).
    pub async fn toggle_floating_panes(&self, session: &SessionName, tab: TabId) -> Result<Tab> {
        self.queued(
            session,
            "toggle_floating_panes",
            move |inner, s| async move {
                let before = inner.tab(&s, tab).await?;
                inner
                    .set_floating(&s, tab, !before.are_floating_panes_visible)
                    .await?;
                inner.tab(&s, tab).await
            },
        )
        .await
    }

    // ----- panes --------------------------------------------------------------------------

    /// Opens a pane (a shell, or `opts.command`); no client's focus changes unless
    /// `opts.focus`.
    pub async fn new_pane(&self, session: &SessionName, opts: NewPaneOptions) -> Result<Pane> {
        let mut argv: Vec<OsString> = args(["new-pane"]);
        if !opts.focus {
            argv.push("--no-focus".into());
        }
        if opts.floating {
            if opts.direction.is_some() {
                return Err(invalid(
                    "direction",
                    "a floating pane has no split direction",
                ));
            }
            argv.push("--floating".into());
        }
        if let Some(direction) = opts.direction {
            argv.push(
                match direction {
                    SplitDirection::Right => "--direction=right",
                    SplitDirection::Down => "--direction=down",
                }
                .into(),
            );
        }
        if let Some(name) = &opts.name {
            check_name("pane name", name)?;
            argv.push(format!("--name={name}").into());
        }
        if let Some(cwd) = &opts.cwd {
            check_dir("cwd", cwd)?;
            argv.push(opt_path("--cwd=", cwd));
        }
        if opts.close_on_exit {
            if opts.command.is_empty() {
                return Err(invalid("close_on_exit", "applies to command panes only"));
            }
            argv.push("--close-on-exit".into());
        }
        let command = opts.command.clone();
        self.queued(session, "new_pane", move |inner, s| async move {
            let tab = inner.tab_or_first(&s, opts.tab).await?;
            argv.push(format!("--tab-id={}", tab.id).into());
            push_command(&mut argv, &command)?;
            inner.create_pane(&s, "action new-pane", argv).await
        })
        .await
    }

    /// Opens a file in the user's `$EDITOR` in a new pane; focus as for
    /// [`ZellijBackend::new_pane`].
    pub async fn edit_file(
        &self,
        session: &SessionName,
        file: &Path,
        opts: EditOptions,
    ) -> Result<Pane> {
        if file.as_os_str().is_empty() {
            return Err(invalid("file", "the path is empty"));
        }
        let mut argv: Vec<OsString> = args(["edit"]);
        if !opts.focus {
            argv.push("--no-focus".into());
        }
        if opts.floating {
            argv.push("--floating".into());
        }
        if let Some(line) = opts.line {
            argv.push(format!("--line-number={line}").into());
        }
        if let Some(cwd) = &opts.cwd {
            check_dir("cwd", cwd)?;
            argv.push(opt_path("--cwd=", cwd));
        }
        let file = file.to_owned();
        self.queued(session, "edit_file", move |inner, s| async move {
            let tab = inner.tab_or_first(&s, opts.tab).await?;
            argv.push(format!("--tab-id={}", tab.id).into());
            argv.push("--".into());
            argv.push(file.into_os_string());
            inner.create_pane(&s, "action edit", argv).await
        })
        .await
    }

    /// Closes a pane and its process. If it was the last pane of its tab the tab closes too;
    /// refuses when that would close the session's last tab.
    pub async fn close_pane(&self, session: &SessionName, pane: PaneId) -> Result<ClosedPane> {
        self.queued(session, "close_pane", move |inner, s| async move {
            let panes = inner.panes(&s).await?;
            let Some(target) = panes.iter().find(|p| p.id == pane) else {
                return Err(ZellijError::NoSuchPane { session: s, pane });
            };
            let tab = target.tab_id;
            let last_in_tab = !panes
                .iter()
                .any(|p| p.tab_id == tab && p.id != pane && p.is_user_terminal());
            if last_in_tab && inner.tabs(&s).await?.len() == 1 {
                return Err(ZellijError::WouldEndSession {
                    session: s,
                    what: "pane",
                });
            }
            let id = pane.to_string();
            inner
                .act(
                    &s,
                    "action close-pane",
                    args(["close-pane", "--pane-id", &id]),
                )
                .await?;
            if last_in_tab && inner.tabs(&s).await?.iter().any(|t| t.id == tab) {
                // With no client attached Zellij leaves the empty tab listed (it closes empty
                // tabs while rendering to a client); close it so the state is the same either way.
                let tab_id = tab.to_string();
                inner
                    .act(
                        &s,
                        "action close-tab",
                        args(["close-tab", "--tab-id", &tab_id]),
                    )
                    .await?;
            }
            Ok(ClosedPane {
                pane,
                tab,
                tab_closed: last_in_tab,
            })
        })
        .await
    }

    /// Renames a pane by id; focus does not change.
    pub async fn rename_pane(
        &self,
        session: &SessionName,
        pane: PaneId,
        name: &str,
    ) -> Result<Pane> {
        check_name("pane name", name)?;
        let name = name.to_owned();
        self.queued(session, "rename_pane", move |inner, s| async move {
            inner.pane(&s, pane).await?;
            let id = pane.to_string();
            inner
                .act(
                    &s,
                    "action rename-pane",
                    args(["rename-pane", "--pane-id", &id, "--", &name]),
                )
                .await?;
            inner.pane(&s, pane).await
        })
        .await
    }

    /// Brings a pane toward `columns` × `rows` cells (either may be left as is); focus does not
    /// change. Zellij resizes in steps of its own, so each dimension stops at the first step
    /// that reaches or passes its size, or where neither of its borders can move (a pane
    /// cannot outgrow its tab). A fullscreen tab leaves fullscreen first, as the layout below
    /// is what changes.
    pub async fn resize_pane(
        &self,
        session: &SessionName,
        pane: PaneId,
        columns: Option<usize>,
        rows: Option<usize>,
    ) -> Result<Pane> {
        self.queued(session, "resize_pane", move |inner, s| async move {
            let (_, tab) = inner.pane_and_tab(&s, pane).await?;
            if tab.is_fullscreen_active {
                inner.flip_fullscreen(&s, pane).await?;
            }
            for (axis, target) in [(Axis::Columns, columns), (Axis::Rows, rows)] {
                if let Some(target) = target {
                    inner.step_toward(&s, pane, axis, target).await?;
                }
            }
            inner.pane_and_tab(&s, pane).await.map(|(pane, _)| pane)
        })
        .await
    }

    /// Makes a pane fullscreen within its tab, or tiled again (what a client viewing that tab
    /// sees); a pane already so is left alone. Zellij also focuses a pane it makes
    /// fullscreen, for every client on that tab.
    pub async fn set_fullscreen(
        &self,
        session: &SessionName,
        pane: PaneId,
        fullscreen: bool,
    ) -> Result<Pane> {
        self.queued(session, "set_fullscreen", move |inner, s| async move {
            let (found, tab) = inner.pane_and_tab(&s, pane).await?;
            let flips = fullscreen_flips(fullscreen, found.is_fullscreen, tab.is_fullscreen_active);
            for _ in 0..flips {
                inner.flip_fullscreen(&s, pane).await?;
            }
            inner.pane_and_tab(&s, pane).await.map(|(pane, _)| pane)
        })
        .await
    }

    /// Focus operation: switches the session's clients to the pane's tab and focuses the pane
    /// there (visible to every attached human).
    ///
    /// Zellij's `focus-pane-id` acts for the CLI client that sends it, never for an attached
    /// client (zellij-server 0.45.1 `Screen::focus_pane_with_id` receives the CLI's client id),
    /// so it cannot move a human's focus. Making a tiled pane fullscreen does focus it for
    /// every client of its tab, so muxgate toggles fullscreen on and off again; the tab ends
    /// out of fullscreen. For a floating pane the tab's floating panes are shown.
    pub async fn focus_pane(&self, session: &SessionName, pane: PaneId) -> Result<FocusedPane> {
        self.queued(session, "focus_pane", move |inner, s| async move {
            let target = inner.pane(&s, pane).await?;
            let tab = inner.tab(&s, target.tab_id).await?;
            let tab_id = tab.id.to_string();
            inner
                .act(
                    &s,
                    "action go-to-tab-by-id",
                    args(["go-to-tab-by-id", &tab_id]),
                )
                .await?;
            if target.is_floating {
                inner.set_floating(&s, tab.id, true).await?;
            } else {
                // Off (if another pane is fullscreen), then on (focuses) and off again.
                let toggles = if tab.is_fullscreen_active { 3 } else { 2 };
                for _ in 0..toggles {
                    inner.flip_fullscreen(&s, pane).await?;
                }
            }
            let clients = inner.clients(&s).await?;
            Ok(FocusedPane {
                pane: inner.pane(&s, pane).await?,
                clients: clients.len(),
                clients_focused: clients
                    .iter()
                    .filter(|c| c.focused_pane == Some(pane))
                    .count(),
            })
        })
        .await
    }

    // ----- input and output ---------------------------------------------------------------

    /// Types `text` into a terminal pane (`\n` presses Enter); focus does not change.
    pub async fn write_chars(&self, session: &SessionName, pane: PaneId, text: &str) -> Result<()> {
        if text.is_empty() {
            return Err(invalid("text", "nothing to write"));
        }
        let input = InputStep::Text(text.to_owned());
        self.pane_input(session, pane, "write_chars", input).await
    }

    /// Sends raw bytes to a terminal pane (e.g. `[3]` for Ctrl-C).
    pub async fn write_bytes(
        &self,
        session: &SessionName,
        pane: PaneId,
        bytes: &[u8],
    ) -> Result<()> {
        if bytes.is_empty() {
            return Err(invalid("bytes", "nothing to write"));
        }
        let decimal: Vec<String> = bytes.iter().map(u8::to_string).collect();
        self.queued(session, "write_bytes", move |inner, s| async move {
            inner.require_terminal(&s, pane).await?;
            let id = pane.to_string();
            let mut argv = args(["write", "--pane-id", &id, "--"]);
            argv.extend(decimal.into_iter().map(OsString::from));
            inner.act(&s, "action write", argv).await.map(drop)
        })
        .await
    }

    /// Pastes `text` with bracketed paste (programs see one paste, not typed keys).
    pub async fn paste(&self, session: &SessionName, pane: PaneId, text: &str) -> Result<()> {
        if text.is_empty() {
            return Err(invalid("text", "nothing to paste"));
        }
        let input = InputStep::Paste(text.to_owned());
        self.pane_input(session, pane, "paste", input).await
    }

    /// Sends keys such as `Ctrl c`, `Enter`, `Alt Shift b` to a terminal pane, in order.
    pub async fn send_keys(&self, session: &SessionName, pane: PaneId, keys: &[Key]) -> Result<()> {
        if keys.is_empty() {
            return Err(invalid("keys", "no keys given"));
        }
        let input = InputStep::Keys(keys.to_vec());
        self.pane_input(session, pane, "send_keys", input).await
    }

    /// One input for a terminal pane, as one job on the session's queue.
    async fn pane_input(
        &self,
        session: &SessionName,
        pane: PaneId,
        job: &'static str,
        input: InputStep,
    ) -> Result<()> {
        self.queued(session, job, move |inner, s| async move {
            inner.require_terminal(&s, pane).await?;
            let (label, argv) = input.action(pane);
            inner.act(&s, label, argv).await.map(drop)
        })
        .await
    }

    /// Delivers several inputs to one terminal pane as ONE job on the session's queue, so no
    /// other operation on the session comes between them. Stops at the first failing step
    /// ([`ZellijError::BatchStep`] says which; earlier steps were delivered).
    pub async fn input_batch(
        &self,
        session: &SessionName,
        pane: PaneId,
        steps: Vec<InputStep>,
    ) -> Result<()> {
        if steps.is_empty() {
            return Err(invalid("steps", "no steps given"));
        }
        for (i, step) in steps.iter().enumerate() {
            let empty = match step {
                InputStep::Text(t) | InputStep::Paste(t) => t.is_empty(),
                InputStep::Keys(k) => k.is_empty(),
            };
            if empty {
                return Err(invalid("steps", format!("step {i} is empty")));
            }
        }
        self.queued(session, "input_batch", move |inner, s| async move {
            inner.require_terminal(&s, pane).await?;
            for (step, input) in steps.into_iter().enumerate() {
                let (label, argv) = input.action(pane);
                inner
                    .act(&s, label, argv)
                    .await
                    .map_err(|source| ZellijError::BatchStep {
                        step,
                        source: Box::new(source),
                    })?;
            }
            Ok(())
        })
        .await
    }

    /// Reads a pane's text through stdout (no temp file): the viewport or the whole
    /// scrollback. Focus does not change.
    pub async fn read_pane(
        &self,
        session: &SessionName,
        pane: PaneId,
        scope: ReadScope,
    ) -> Result<PaneText> {
        self.queued(session, "read_pane", move |inner, s| async move {
            inner.pane(&s, pane).await?;
            let lines = inner.dump(&s, pane, scope).await?;
            Ok(PaneText { pane, scope, lines })
        })
        .await
    }

    /// Waits until a line of the pane's viewport matches `pattern` (text already on screen
    /// matches at once). Wakes on Zellij's pane events; see `watch` for panes Zellij does not
    /// push while a client is attached.
    pub async fn wait_for_text(
        &self,
        session: &SessionName,
        pane: PaneId,
        pattern: &Pattern,
        timeout: Duration,
    ) -> Result<TextMatch> {
        let started = Instant::now();
        let deadline = started + timeout;
        self.pane(session, pane).await?;
        let (watch, _) = self.ready_watch(session, pane, deadline).await?;
        let found = watch
            .wait_for(0, deadline, "the text", |lines| pattern.first_match(lines))
            .await
            .map_err(|e| with_timeout(e, timeout))?;
        let viewport: Vec<String> = found.view.lines.as_ref().clone();
        Ok(TextMatch {
            pane,
            line: viewport[found.value].clone(),
            line_index: found.value,
            viewport,
            waited: started.elapsed(),
            missed_snapshots: found.missed,
        })
    }

    /// Waits until `check` accepts the lines of the pane's screen that are new since `since`
    /// (a mark taken earlier, e.g. before typing) or, without it, since the wait started;
    /// each screen Zellij renders is examined. See [`ScreenMark`] for what counts as new.
    pub async fn wait_for_new_lines<T>(
        &self,
        session: &SessionName,
        pane: PaneId,
        since: Option<&ScreenMark>,
        deadline: Instant,
        mut check: impl FnMut(&[String]) -> Option<T>,
    ) -> Result<NewLinesWait<T>> {
        self.pane(session, pane).await?;
        let (watch, first) = self.ready_watch(session, pane, deadline).await?;
        let now = watch.latest().unwrap_or(first);
        // With a mark from before, the screen as it is now may already hold the output.
        let (mark, from_seq) = match since {
            Some(mark) => (mark.clone(), now.seq),
            None => (ScreenMark::of(&now.lines), now.seq + 1),
        };
        let mut lines = Vec::new();
        let found = watch
            .wait_for(from_seq, deadline, "new output", |screen| {
                lines = mark.new_lines(screen);
                check(&lines)
            })
            .await;
        let end = match found {
            Ok(found) => NewLinesEnd::Found(found.value),
            Err(ZellijError::Timeout { .. }) => NewLinesEnd::TimedOut,
            Err(e) if e.is_pane_closed() => NewLinesEnd::PaneClosed,
            Err(e) => return Err(e),
        };
        Ok(NewLinesWait { end, lines })
    }

    /// The mark of the pane's screen as it is now (see [`ScreenMark`]).
    pub async fn screen_mark(&self, session: &SessionName, pane: PaneId) -> Result<ScreenMark> {
        let text = self.read_pane(session, pane, ReadScope::Viewport).await?;
        Ok(ScreenMark::of(&text.lines))
    }

    /// Types `command` into the interactive shell of a pane and returns its exit status and
    /// output (only that command's). The pane keeps its shell; focus does not change.
    ///
    /// The typed line prints per-call markers (see `marker`); completion is seen on the pane's
    /// events and the output is cut from the scrollback between the markers. When the timeout
    /// passes first, the command keeps running and the answer has no exit status: it says
    /// whether the shell began the command, and what it printed so far.
    pub async fn run_in_pane(
        &self,
        session: &SessionName,
        pane: PaneId,
        command: &str,
        opts: RunInPaneOptions,
    ) -> Result<PaneRun> {
        let started = Instant::now();
        let deadline = started + opts.timeout;
        let target = self.pane(session, pane).await?;
        if !target.id.is_terminal() {
            return Err(ZellijError::WrongPaneKind {
                session: session.clone(),
                pane,
                reason: "is a plugin pane; commands run in terminal panes",
            });
        }
        if target.exited {
            return Err(ZellijError::WrongPaneKind {
                session: session.clone(),
                pane,
                reason: "is a command pane whose command exited; it has no shell to type into",
            });
        }
        let shell = opts
            .shell
            .unwrap_or_else(|| shell_of(target.running_command.as_deref()));
        let run = MarkedRun::random();
        let line = run
            .typed_line(command, shell)
            .map_err(|e| invalid("command", e.to_string()))?;

        let (watch, first) = self.ready_watch(session, pane, deadline).await?;
        self.write_chars(session, pane, &line).await?;
        let finished = watch
            .wait_for(first.seq, deadline, "the command to finish", |lines| {
                run.find_end(lines)
            })
            .await;
        let full = self.read_pane(session, pane, ReadScope::Full).await?;
        let mut answer = PaneRun {
            pane,
            shell,
            exit_status: None,
            started: false,
            output: String::new(),
            truncated: false,
            elapsed: Duration::ZERO,
        };
        match finished {
            Ok(done) => {
                let result = run
                    .extract(&full.lines, true)
                    .or_else(|| run.extract(&done.view.lines, true))
                    .ok_or_else(|| ZellijError::NoEffect {
                        session: session.clone(),
                        what: "show the command's end marker",
                        detail: "the screen was cleared after the command finished".to_owned(),
                    })?;
                answer.exit_status = Some(result.exit_status);
                answer.started = true;
                answer.output = result.output;
                answer.truncated = result.truncated;
            }
            Err(ZellijError::Timeout { .. }) => {
                if let Some(so_far) = run.output_so_far(&full.lines) {
                    answer.started = true;
                    answer.output = so_far;
                }
            }
            Err(other) => return Err(other),
        }
        answer.elapsed = started.elapsed();
        Ok(answer)
    }

    /// The shared watch of a pane, with its first snapshot received.
    async fn ready_watch(
        &self,
        session: &SessionName,
        pane: PaneId,
        deadline: Instant,
    ) -> Result<(PaneWatch, PaneView)> {
        let watch = self.watch(session, pane)?;
        match watch
            .ready(deadline.saturating_duration_since(Instant::now()))
            .await
        {
            Ok(first) => Ok((watch, first)),
            // Every caller saw the pane before subscribing, so "not found" here means it
            // closed in between: report it like a close seen on the subscription.
            Err(ZellijError::WatchEnded { reason, .. })
                if reason.contains("Pane") && reason.contains("not found") =>
            {
                Err(ZellijError::WatchEnded {
                    session: session.clone(),
                    pane,
                    reason: PANE_CLOSED.to_owned(),
                })
            }
            Err(e) => Err(e),
        }
    }

    /// The shared watch of a pane.
    fn watch(&self, session: &SessionName, pane: PaneId) -> Result<PaneWatch> {
        let spec = &self.inner.spec;
        let fallback = FallbackPolling {
            cli: self.inner.cli.clone(),
            poll_interval: spec.poll_interval,
            client_check_interval: spec.client_check_interval,
            call_timeout: spec.call_timeout,
        };
        self.inner
            .watches
            .get_or_start(&self.inner.cli, session, pane, Some(fallback))
    }
}
