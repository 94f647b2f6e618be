//! The public API of the Zellij backend: one [`ZellijBackend`] per configured Zellij server.
//!
//! Every method targets sessions, tabs and panes by id and never moves a client's focus unless
//! its name says it is a focus operation ([`ZellijBackend::go_to_tab`],
//! [`ZellijBackend::focus_pane`]) or the caller asked for it (`focus: true`). Zellij reports many
//! bad targets with exit code 0 and does nothing, so each operation first checks that its target
//! exists and returns [`ZellijError::NoSuchPane`] / [`ZellijError::NoSuchTab`] /
//! [`ZellijError::NoSuchSession`] otherwise.
//!
//! All steps of one operation run as one job on the session's queue ([`SessionQueue`]), so
//! concurrent callers never interleave actions on a session. Waiting for output
//! ([`ZellijBackend::wait_for_text`], the completion of [`ZellijBackend::run_in_pane`] and
//! [`ZellijBackend::run_command`]) happens outside the queue.

use std::collections::HashMap;
use std::ffi::OsString;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use regex::Regex;
use serde::Serialize;
use tokio::time::Instant;

use super::attach::{PtyClient, TermSize};
use super::cli::{CliOutput, ZellijCli, ZellijEnv, describe_status, first_lines};
use super::error::{Result, ZellijError};
use super::ids::{PaneId, SessionName, TabId};
use super::keys::Key;
use super::listing::{
    Client, Pane, SessionEntry, Tab, parse_clients, parse_new_pane_id, parse_new_tab_id,
    parse_panes, parse_sessions, parse_tabs,
};
use super::marker::{MarkedRun, ShellKind};
use super::queue::SessionQueue;
use super::watch::{FallbackPolling, PaneWatch, WatchRegistry, normalize};

/// The oldest Zellij release with the CLI surface this backend uses (`--pane-id`, `--tab-id`,
/// `list-panes --json`, `subscribe`).
const MIN_VERSION: (u32, u32) = (0, 44);

/// Longest tab or pane name accepted.
const MAX_NAME_LEN: usize = 256;

/// Longest layout string accepted for a new tab.
const MAX_LAYOUT_LEN: usize = 64 << 10;

/// How muxgate drives one Zellij server (socket dir + environment).
#[derive(Debug, Clone)]
pub struct ZellijServerSpec {
    pub env: ZellijEnv,
    /// Timeout of one `zellij` CLI call.
    pub call_timeout: Duration,
    /// Timeout of one queued operation (several calls).
    pub op_timeout: Duration,
    /// Operations that may wait per session before callers get [`ZellijError::Busy`].
    pub queue_capacity: usize,
    /// Longest wait of an operation for its turn on the session queue.
    pub queue_wait: Duration,
    /// Terminal size given to sessions and tabs created while no client is attached.
    pub headless_size: TermSize,
    /// Viewport read interval for waits while a client is attached (see `watch`).
    pub poll_interval: Duration,
    /// How often a wait checks whether a client attached.
    pub client_check_interval: Duration,
}

impl ZellijServerSpec {
    /// Defaults for a server reached with `env`.
    pub fn new(env: ZellijEnv) -> Self {
        Self {
            env,
            call_timeout: Duration::from_secs(5),
            op_timeout: Duration::from_secs(15),
            queue_capacity: 64,
            queue_wait: Duration::from_secs(30),
            headless_size: TermSize {
                rows: 48,
                cols: 160,
            },
            poll_interval: Duration::from_millis(100),
            client_check_interval: Duration::from_secs(1),
        }
    }
}

/// Options of [`ZellijBackend::create_session`].
#[derive(Debug, Clone, Default)]
pub struct CreateSessionOptions {
    /// Working directory of the first pane (default: the configured session cwd).
    pub cwd: Option<PathBuf>,
}

/// Options of [`ZellijBackend::new_tab`].
#[derive(Debug, Clone, Default)]
pub struct NewTabOptions {
    pub name: Option<String>,
    /// Absolute working directory of the tab's panes.
    pub cwd: Option<PathBuf>,
    /// A KDL layout for the tab (`layout { pane split_direction="vertical" { pane; pane; } }`).
    pub layout: Option<String>,
    /// A command (argv) to run in the tab's pane instead of a shell.
    pub command: Vec<String>,
    /// Switch clients to the new tab. Default: no client's focus changes.
    pub focus: bool,
}

/// Where a tiled pane opens relative to the pane it splits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SplitDirection {
    Right,
    Down,
}

/// Options of [`ZellijBackend::new_pane`].
#[derive(Debug, Clone, Default)]
pub struct NewPaneOptions {
    /// The tab to open the pane in (default: the first tab).
    pub tab: Option<TabId>,
    pub name: Option<String>,
    pub cwd: Option<PathBuf>,
    /// A command (argv) to run instead of a shell; the pane is then a command pane.
    pub command: Vec<String>,
    pub floating: bool,
    /// Split direction for a tiled pane (default: where Zellij finds room).
    pub direction: Option<SplitDirection>,
    /// Close the pane when its command exits (command panes only).
    pub close_on_exit: bool,
    /// Focus the new pane. Default: no client's focus changes.
    pub focus: bool,
}

/// Options of [`ZellijBackend::edit_file`].
#[derive(Debug, Clone, Default)]
pub struct EditOptions {
    pub tab: Option<TabId>,
    pub line: Option<usize>,
    pub floating: bool,
    pub cwd: Option<PathBuf>,
    /// Focus the editor pane. Default: no client's focus changes.
    pub focus: bool,
}

/// Grow or shrink.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResizeMode {
    Increase,
    Decrease,
}

/// A side of a pane.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    Left,
    Right,
    Up,
    Down,
}

/// Visible part only, or the scrollback too.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReadScope {
    Viewport,
    Full,
}

/// Text of a pane, as `dump-screen` gives it: lines wrapped by the terminal are joined.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PaneText {
    pub pane: PaneId,
    pub scope: ReadScope,
    pub lines: Vec<String>,
}

/// The result of [`ZellijBackend::focus_pane`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FocusedPane {
    pub pane: Pane,
    /// Clients attached to the session.
    pub clients: usize,
    /// Clients that now have the pane focused.
    pub clients_focused: usize,
}

/// The result of closing a pane.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClosedPane {
    pub pane: PaneId,
    pub tab: TabId,
    /// The pane was the last one of its tab, so the tab closed too.
    pub tab_closed: bool,
}

/// Options of [`ZellijBackend::run_command`].
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Tab that hosts the command pane (default: the first tab).
    pub tab: Option<TabId>,
    pub cwd: Option<PathBuf>,
    /// Pane title (default `muxgate-run-<id>`).
    pub name: Option<String>,
    /// Hidden floating pane (default) or a tiled pane, which shows in the tab's layout.
    pub floating: bool,
    /// Keep the pane after the command exited (default: closed).
    pub keep_pane: bool,
    pub timeout: Duration,
}

impl Default for RunOptions {
    fn default() -> Self {
        Self {
            tab: None,
            cwd: None,
            name: None,
            floating: true,
            keep_pane: false,
            timeout: Duration::from_secs(60),
        }
    }
}

/// Options of [`ZellijBackend::run_in_pane`].
#[derive(Debug, Clone)]
pub struct RunInPaneOptions {
    /// The pane's shell; detected from the pane's running command when not given.
    pub shell: Option<ShellKind>,
    pub timeout: Duration,
}

impl Default for RunInPaneOptions {
    fn default() -> Self {
        Self {
            shell: None,
            timeout: Duration::from_secs(60),
        }
    }
}

/// A finished command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CommandResult {
    /// The pane it ran in (closed afterwards for [`ZellijBackend::run_command`] unless kept).
    pub pane: PaneId,
    pub exit_status: i32,
    /// The command's output only, as the terminal shows it.
    pub output: String,
    /// The start of the output had left the scrollback; `output` is its tail.
    pub truncated: bool,
    pub pane_closed: bool,
    #[serde(serialize_with = "as_millis")]
    pub elapsed: Duration,
}

/// What [`ZellijBackend::wait_for_text`] looks for, line by line.
#[derive(Debug, Clone)]
pub enum TextPattern {
    Literal(String),
    Regex(Regex),
}

impl TextPattern {
    /// A literal substring.
    pub fn literal(text: impl Into<String>) -> Result<Self> {
        let text = text.into();
        if text.is_empty() {
            return Err(invalid("pattern", "the text to wait for is empty"));
        }
        Ok(Self::Literal(text))
    }

    /// A regular expression (Rust `regex` syntax), size-limited.
    pub fn regex(pattern: &str) -> Result<Self> {
        regex::RegexBuilder::new(pattern)
            .size_limit(1 << 20)
            .build()
            .map(Self::Regex)
            .map_err(|e| invalid("pattern", e.to_string()))
    }

    fn find(&self, lines: &[String]) -> Option<usize> {
        lines.iter().position(|line| match self {
            Self::Literal(text) => line.contains(text.as_str()),
            Self::Regex(re) => re.is_match(line),
        })
    }
}

/// A satisfied [`ZellijBackend::wait_for_text`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TextMatch {
    pub pane: PaneId,
    /// The first matching line and its index in `viewport`.
    pub line: String,
    pub line_index: usize,
    /// The viewport in which the text was found.
    pub viewport: Vec<String>,
    #[serde(serialize_with = "as_millis")]
    pub waited: Duration,
    /// Screen snapshots that went by unexamined because the waiter fell behind; text shown
    /// only in those was not seen.
    pub missed_snapshots: u64,
}

fn as_millis<S: serde::Serializer>(d: &Duration, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

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
            match PtyClient::attach(
                &inner.cli,
                &s,
                inner.spec.headless_size,
                inner.spec.call_timeout,
            )
            .await
            {
                Ok(sizing) => sizing.detach().await,
                Err(e) => {
                    tracing::warn!(session = %s, error = %e, "could not size the new session")
                }
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
    pub async fn dump_layout(&self, session: &SessionName) -> Result<String> {
        self.queued(session, "dump_layout", |inner, s| async move {
            inner
                .act(&s, "action dump-layout", args(["dump-layout"]))
                .await
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
            let out = inner.act(&s, "action new-pane", argv).await?;
            let id = parse_new_pane_id("action new-pane", &out)?;
            inner.pane(&s, id).await
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
            let out = inner.act(&s, "action edit", argv).await?;
            let id = parse_new_pane_id("action edit", &out)?;
            inner.pane(&s, id).await
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

    /// Grows or shrinks a pane on one side (or where Zellij finds room); focus does not change.
    pub async fn resize_pane(
        &self,
        session: &SessionName,
        pane: PaneId,
        mode: ResizeMode,
        side: Option<Side>,
    ) -> Result<Pane> {
        self.queued(session, "resize_pane", move |inner, s| async move {
            inner.pane(&s, pane).await?;
            let id = pane.to_string();
            let mut argv = args([
                "resize",
                "--pane-id",
                &id,
                match mode {
                    ResizeMode::Increase => "increase",
                    ResizeMode::Decrease => "decrease",
                },
            ]);
            if let Some(side) = side {
                argv.push(
                    match side {
                        Side::Left => "left",
                        Side::Right => "right",
                        Side::Up => "up",
                        Side::Down => "down",
                    }
                    .into(),
                );
            }
            inner.act(&s, "action resize", argv).await?;
            inner.pane(&s, pane).await
        })
        .await
    }

    /// Toggles fullscreen of a pane within its tab (what a client viewing that tab sees).
    /// Zellij also focuses a pane it makes fullscreen, for every client on that tab.
    pub async fn toggle_fullscreen(&self, session: &SessionName, pane: PaneId) -> Result<Pane> {
        self.queued(session, "toggle_fullscreen", move |inner, s| async move {
            inner.pane(&s, pane).await?;
            let id = pane.to_string();
            inner
                .act(
                    &s,
                    "action toggle-fullscreen",
                    args(["toggle-fullscreen", "--pane-id", &id]),
                )
                .await?;
            let panes = inner.panes_with_fullscreen(&s).await?;
            panes
                .into_iter()
                .find(|p| p.id == pane)
                .ok_or(ZellijError::NoSuchPane { session: s, pane })
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
                let id = pane.to_string();
                // Off (if another pane is fullscreen), then on (focuses) and off again.
                let toggles = if tab.is_fullscreen_active { 3 } else { 2 };
                for _ in 0..toggles {
                    inner
                        .act(
                            &s,
                            "action toggle-fullscreen",
                            args(["toggle-fullscreen", "--pane-id", &id]),
                        )
                        .await?;
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
        let text = text.to_owned();
        self.queued(session, "write_chars", move |inner, s| async move {
            inner.require_terminal(&s, pane).await?;
            let id = pane.to_string();
            inner
                .act(
                    &s,
                    "action write-chars",
                    args(["write-chars", "--pane-id", &id, "--", &text]),
                )
                .await
                .map(drop)
        })
        .await
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
        let text = text.to_owned();
        self.queued(session, "paste", move |inner, s| async move {
            inner.require_terminal(&s, pane).await?;
            let id = pane.to_string();
            inner
                .act(
                    &s,
                    "action paste",
                    args(["paste", "--pane-id", &id, "--", &text]),
                )
                .await
                .map(drop)
        })
        .await
    }

    /// Sends keys such as `Ctrl c`, `Enter`, `Alt Shift b` to a terminal pane, in order.
    pub async fn send_keys(&self, session: &SessionName, pane: PaneId, keys: &[Key]) -> Result<()> {
        if keys.is_empty() {
            return Err(invalid("keys", "no keys given"));
        }
        let keys: Vec<String> = keys.iter().map(|k| k.as_str().to_owned()).collect();
        self.queued(session, "send_keys", move |inner, s| async move {
            inner.require_terminal(&s, pane).await?;
            let id = pane.to_string();
            let mut argv = args(["send-keys", "--pane-id", &id, "--"]);
            argv.extend(keys.into_iter().map(OsString::from));
            inner.act(&s, "action send-keys", argv).await.map(drop)
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
        pattern: &TextPattern,
        timeout: Duration,
    ) -> Result<TextMatch> {
        let started = Instant::now();
        let deadline = started + timeout;
        self.pane(session, pane).await?;
        let (watch, _) = self.ready_watch(session, pane, deadline).await?;
        let found = watch
            .wait_for(0, deadline, "the text", |lines| pattern.find(lines))
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

    /// Types `command` into the interactive shell of a pane and returns its exit status and
    /// output (only that command's). The pane keeps its shell; focus does not change.
    ///
    /// The typed line prints per-call markers (see `marker`); completion is seen on the pane's
    /// events and the output is cut from the scrollback between the markers.
    pub async fn run_in_pane(
        &self,
        session: &SessionName,
        pane: PaneId,
        command: &str,
        opts: RunInPaneOptions,
    ) -> Result<CommandResult> {
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
            .unwrap_or_else(|| ShellKind::detect(target.running_command.as_deref()));
        let run = MarkedRun::random();
        let line = run
            .typed_line(command, shell)
            .map_err(|e| invalid("command", e.to_string()))?;

        let (watch, first) = self.ready_watch(session, pane, deadline).await?;
        self.write_chars(session, pane, &line).await?;
        let done = watch
            .wait_for(first.seq, deadline, "the command to finish", |lines| {
                run.find_end(lines)
            })
            .await
            .map_err(|e| match e {
                ZellijError::Timeout { .. } => ZellijError::Timeout {
                    what: format!(
                        "command in pane {pane} of session {session} (still running; read it with zellij_read_pane or interrupt it with zellij_send_keys \"Ctrl c\")"
                    ),
                    after: opts.timeout,
                },
                other => other,
            })?;
        let full = self.read_pane(session, pane, ReadScope::Full).await?;
        let result = run
            .extract(&full.lines, true)
            .or_else(|| run.extract(&done.view.lines, true))
            .ok_or_else(|| ZellijError::NoEffect {
                session: session.clone(),
                what: "show the command's end marker",
                detail: "the screen was cleared after the command finished".to_owned(),
            })?;
        Ok(CommandResult {
            pane,
            exit_status: result.exit_status,
            output: result.output,
            truncated: result.truncated,
            pane_closed: false,
            elapsed: started.elapsed(),
        })
    }

    /// Runs `command` (a `/bin/sh` command line) in a new command pane, by default a hidden
    /// floating pane of the first tab, and returns its exit status and output. No client's
    /// focus or view changes. The pane is closed afterwards unless `opts.keep_pane`.
    ///
    /// Completion comes from `zellij run --block-until-exit`, which returns when the command
    /// exits, whatever clients are attached; the output is read from the held pane. On timeout
    /// the command keeps running in its pane, whose id the error names; a cancelled caller
    /// leaves the pane too.
    pub async fn run_command(
        &self,
        session: &SessionName,
        command: &str,
        opts: RunOptions,
    ) -> Result<CommandResult> {
        let started = Instant::now();
        let run = MarkedRun::random();
        let argv = run
            .pane_argv(command)
            .map_err(|e| invalid("command", e.to_string()))?;
        let title = match &opts.name {
            Some(name) => {
                check_name("pane name", name)?;
                name.clone()
            }
            None => format!("muxgate-run-{}", run.id()),
        };
        if let Some(cwd) = &opts.cwd {
            check_dir("cwd", cwd)?;
        }
        let tab = opts.tab;
        let tab = self
            .queued(session, "run_command", move |inner, s| async move {
                inner.tab_or_first(&s, tab).await.map(|t| t.id)
            })
            .await?;

        let mut cli_args: Vec<OsString> = args([
            "--session",
            session.as_str(),
            "run",
            "--block-until-exit",
            "--no-focus",
        ]);
        cli_args.push(format!("--tab-id={tab}").into());
        cli_args.push(format!("--name={title}").into());
        if opts.floating {
            cli_args.push("--floating".into());
        }
        if let Some(cwd) = &opts.cwd {
            cli_args.push(opt_path("--cwd=", cwd));
        }
        cli_args.push("--".into());
        cli_args.extend(argv.into_iter().map(OsString::from));

        // The blocking client lives as long as the command, so it runs outside the queue.
        let blocking = self
            .inner
            .cli
            .run("run --block-until-exit", cli_args, opts.timeout);
        let waited = blocking.await;
        let run_for_lookup = run.clone();
        let title_for_lookup = title.clone();
        let keep = opts.keep_pane;
        let finished = waited.is_ok();
        let collected = self
            .queued(session, "run_command", move |inner, s| async move {
                let panes = inner.panes(&s).await?;
                let Some(pane) = panes
                    .into_iter()
                    .find(|p| is_run_pane(p, &run_for_lookup, &title_for_lookup))
                else {
                    return Ok(Collected::Missing);
                };
                if !finished {
                    return Ok(Collected::Running(pane));
                }
                let lines = inner.dump(&s, pane.id, ReadScope::Full).await?;
                if !keep {
                    let id = pane.id.to_string();
                    inner
                        .act(
                            &s,
                            "action close-pane",
                            args(["close-pane", "--pane-id", &id]),
                        )
                        .await?;
                }
                Ok(Collected::Done {
                    pane,
                    lines,
                    closed: !keep,
                })
            })
            .await?;
        match (collected, waited) {
            (
                Collected::Done {
                    pane,
                    lines,
                    closed,
                },
                Ok(out),
            ) => {
                let extracted = run.extract(&lines, false);
                let exit_status = extracted
                    .as_ref()
                    .map(|r| r.exit_status)
                    .or(pane.exit_status)
                    .or(out.status.code())
                    .unwrap_or(-1);
                let output = match extracted {
                    Some(r) => r.output,
                    None => lines.join("\n"),
                };
                Ok(CommandResult {
                    pane: pane.id,
                    exit_status,
                    output,
                    truncated: false,
                    pane_closed: closed,
                    elapsed: started.elapsed(),
                })
            }
            (Collected::Running(pane), Err(ZellijError::Timeout { .. })) => {
                Err(ZellijError::Timeout {
                    what: format!(
                        "command in pane {} of session {session} (still running; read it with zellij_read_pane or close it with zellij_close_pane)",
                        pane.id
                    ),
                    after: opts.timeout,
                })
            }
            (Collected::Missing, waited) => Err(ZellijError::NoEffect {
                session: session.clone(),
                what: "start the command pane",
                detail: match waited {
                    Ok(out) => first_lines(&out.stderr),
                    Err(e) => e.to_string(),
                },
            }),
            (_, Err(e)) => Err(e),
            // Not reached: `Running` is only collected when the blocking call failed.
            (Collected::Running(_), Ok(out)) => Err(ZellijError::CommandFailed {
                command: "run --block-until-exit".to_owned(),
                status: describe_status(out.status),
                stderr: first_lines(&out.stderr),
            }),
        }
    }

    /// The shared watch of a pane, with its first snapshot received.
    async fn ready_watch(
        &self,
        session: &SessionName,
        pane: PaneId,
        deadline: Instant,
    ) -> Result<(PaneWatch, super::watch::PaneView)> {
        let watch = self.watch(session, pane)?;
        match watch
            .ready(deadline.saturating_duration_since(Instant::now()))
            .await
        {
            Ok(first) => Ok((watch, first)),
            Err(ZellijError::WatchEnded { reason, .. })
                if reason.contains("Pane") && reason.contains("not found") =>
            {
                Err(ZellijError::NoSuchPane {
                    session: session.clone(),
                    pane,
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

/// What `run_command` found after the blocking call returned.
enum Collected {
    /// No pane carries the run's marker: it never started.
    Missing,
    /// The command is still running (the blocking call timed out).
    Running(Pane),
    /// The command exited; its scrollback, and whether the pane was closed.
    Done {
        pane: Pane,
        lines: Vec<String>,
        closed: bool,
    },
}

/// The pane `run_command` started: by the marker id in its command line, else by title.
fn is_run_pane(pane: &Pane, run: &MarkedRun, title: &str) -> bool {
    let by_command = pane
        .terminal_command
        .as_deref()
        .is_some_and(|c| c.contains(&format!(" muxgate-run {} ", run.id())));
    by_command || (pane.title == title && pane.terminal_command.is_some())
}

/// Rewrites the duration of a watch timeout to the caller's full timeout.
fn with_timeout(e: ZellijError, timeout: Duration) -> ZellijError {
    match e {
        ZellijError::Timeout { what, .. } => ZellijError::Timeout {
            what,
            after: timeout,
        },
        other => other,
    }
}

impl Inner {
    fn queue(&self, session: &SessionName) -> SessionQueue {
        // A poisoned lock only means a panic elsewhere while holding it; the map is still valid.
        let mut queues = self.queues.lock().unwrap_or_else(|e| e.into_inner());
        queues
            .entry(session.clone())
            .or_insert_with(|| {
                SessionQueue::start(
                    session.clone(),
                    self.spec.queue_capacity,
                    self.spec.queue_wait,
                )
            })
            .clone()
    }

    /// Runs `new-tab`, with a sizing client attached when no client is (see `new_tab`).
    /// `None` when Zellij made no usable tab (no id printed, or a 0×0 tab, which is removed).
    async fn create_tab(&self, session: &SessionName, argv: Vec<OsString>) -> Result<Option<Tab>> {
        let sizing = if self.clients(session).await?.is_empty() {
            Some(self.attach_sizing_client(session).await?)
        } else {
            None
        };
        let created = self.act(session, "action new-tab", argv).await;
        if let Some(client) = sizing {
            client.detach().await;
        }
        let created = created?;
        if created.trim().is_empty() {
            return Ok(None);
        }
        let id = parse_new_tab_id(&created)?;
        let Some(tab) = self.tabs(session).await?.into_iter().find(|t| t.id == id) else {
            return Ok(None);
        };
        if tab.viewport_rows == 0 || tab.viewport_columns == 0 {
            let tab_id = id.to_string();
            self.act(
                session,
                "action close-tab",
                args(["close-tab", "--tab-id", &tab_id]),
            )
            .await?;
            return Ok(None);
        }
        Ok(Some(tab))
    }

    /// A client of the headless size attached through a pty (see `new_tab`).
    async fn attach_sizing_client(&self, session: &SessionName) -> Result<PtyClient> {
        PtyClient::attach(
            &self.cli,
            session,
            self.spec.headless_size,
            self.spec.call_timeout,
        )
        .await
    }

    fn forget(&self, session: &SessionName) {
        let mut queues = self.queues.lock().unwrap_or_else(|e| e.into_inner());
        queues.remove(session);
    }

    /// Runs an action and returns its stdout, mapping failures to specific errors.
    async fn act(&self, session: &SessionName, label: &str, argv: Vec<OsString>) -> Result<String> {
        let out = self
            .cli
            .action(session, label, argv, self.spec.call_timeout)
            .await?;
        if out.status.success() {
            return Ok(out.stdout);
        }
        Err(self.failure(session, label, out).await)
    }

    async fn failure(&self, session: &SessionName, label: &str, out: CliOutput) -> ZellijError {
        if !self.session_is_live(session).await.unwrap_or(true) {
            return ZellijError::NoSuchSession {
                session: session.clone(),
            };
        }
        ZellijError::CommandFailed {
            command: label.to_owned(),
            status: describe_status(out.status),
            stderr: first_lines(&out.stderr),
        }
    }

    async fn sessions(&self) -> Result<Vec<SessionEntry>> {
        let out = self
            .cli
            .run(
                "list-sessions",
                ["list-sessions", "--no-formatting"],
                self.spec.call_timeout,
            )
            .await?;
        if !out.status.success() {
            if out.stderr.contains("No active zellij sessions")
                || out.stdout.contains("No active zellij sessions")
            {
                return Ok(Vec::new());
            }
            return Err(ZellijError::CommandFailed {
                command: "list-sessions".to_owned(),
                status: describe_status(out.status),
                stderr: first_lines(&out.stderr),
            });
        }
        Ok(parse_sessions(&out.stdout))
    }

    /// Whether `session` is listed as live. A miss is confirmed by a second listing: Zellij's
    /// per-session socket probe occasionally fails under load (see `ZellijCli::action`).
    async fn session_is_live(&self, session: &SessionName) -> Result<bool> {
        for _ in 0..2 {
            if self
                .sessions()
                .await?
                .iter()
                .any(|e| &e.name == session && !e.exited)
            {
                return Ok(true);
            }
        }
        Ok(false)
    }

    async fn require_live_session(&self, session: &SessionName) -> Result<()> {
        if self.session_is_live(session).await? {
            Ok(())
        } else {
            Err(ZellijError::NoSuchSession {
                session: session.clone(),
            })
        }
    }

    /// A JSON listing; an empty reply (seen once under load) is retried once.
    async fn listing(&self, session: &SessionName, label: &str, argv: [&str; 3]) -> Result<String> {
        for _ in 0..2 {
            let out = self.act(session, label, args(argv)).await?;
            if !out.trim().is_empty() {
                return Ok(out);
            }
        }
        Ok(String::new())
    }

    async fn panes(&self, session: &SessionName) -> Result<Vec<Pane>> {
        let json = self
            .listing(
                session,
                "action list-panes",
                ["list-panes", "--json", "--all"],
            )
            .await?;
        Ok(parse_panes(&json)?)
    }

    /// Panes with `is_fullscreen` derived from the tabs (see [`mark_fullscreen`]).
    async fn panes_with_fullscreen(&self, session: &SessionName) -> Result<Vec<Pane>> {
        let mut panes = self.panes(session).await?;
        let tabs = self.tabs(session).await?;
        mark_fullscreen(&mut panes, &tabs);
        Ok(panes)
    }

    async fn tabs(&self, session: &SessionName) -> Result<Vec<Tab>> {
        let json = self
            .listing(
                session,
                "action list-tabs",
                ["list-tabs", "--json", "--all"],
            )
            .await?;
        Ok(parse_tabs(&json)?)
    }

    /// Attached clients; an empty reply (no header, see `parse_clients`) is asked once more.
    async fn clients(&self, session: &SessionName) -> Result<Vec<Client>> {
        let mut out = self
            .act(session, "action list-clients", args(["list-clients"]))
            .await?;
        if out.trim().is_empty() {
            out = self
                .act(session, "action list-clients", args(["list-clients"]))
                .await?;
        }
        Ok(parse_clients(&out)?)
    }

    async fn pane(&self, session: &SessionName, pane: PaneId) -> Result<Pane> {
        self.panes(session)
            .await?
            .into_iter()
            .find(|p| p.id == pane)
            .ok_or_else(|| ZellijError::NoSuchPane {
                session: session.clone(),
                pane,
            })
    }

    async fn require_terminal(&self, session: &SessionName, pane: PaneId) -> Result<Pane> {
        let found = self.pane(session, pane).await?;
        if !pane.is_terminal() {
            return Err(ZellijError::WrongPaneKind {
                session: session.clone(),
                pane,
                reason: "is a plugin pane; text input goes to terminal panes",
            });
        }
        Ok(found)
    }

    async fn tab(&self, session: &SessionName, tab: TabId) -> Result<Tab> {
        self.tabs(session)
            .await?
            .into_iter()
            .find(|t| t.id == tab)
            .ok_or_else(|| ZellijError::NoSuchTab {
                session: session.clone(),
                tab,
            })
    }

    async fn tab_or_first(&self, session: &SessionName, tab: Option<TabId>) -> Result<Tab> {
        match tab {
            Some(tab) => self.tab(session, tab).await,
            None => self.tabs(session).await?.into_iter().next().ok_or_else(|| {
                ZellijError::NoSuchSession {
                    session: session.clone(),
                }
            }),
        }
    }

    async fn set_floating(&self, session: &SessionName, tab: TabId, visible: bool) -> Result<()> {
        let verb = if visible {
            "show-floating-panes"
        } else {
            "hide-floating-panes"
        };
        let id = tab.to_string();
        let out = self
            .cli
            .action(
                session,
                verb,
                args([verb, "--tab-id", &id]),
                self.spec.call_timeout,
            )
            .await?;
        // Exit 2 means "already in that state".
        match out.status.code() {
            Some(0) | Some(2) => Ok(()),
            _ => Err(self.failure(session, verb, out).await),
        }
    }

    /// `dump-screen` to stdout. An empty reply is read once more: a pane is rarely blank, and
    /// Zellij occasionally answers a CLI call caught in its client-id race with nothing.
    async fn dump(
        &self,
        session: &SessionName,
        pane: PaneId,
        scope: ReadScope,
    ) -> Result<Vec<String>> {
        let id = pane.to_string();
        let mut argv = args(["dump-screen", "--pane-id", &id]);
        if scope == ReadScope::Full {
            argv.push("--full".into());
        }
        let mut out = self
            .act(session, "action dump-screen", argv.clone())
            .await?;
        if out.trim().is_empty() {
            out = self.act(session, "action dump-screen", argv).await?;
        }
        Ok(normalize(out.lines().map(str::to_owned).collect()))
    }
}

/// Sets `is_fullscreen` on the pane that fills a tab whose fullscreen is active.
///
/// Zellij's own flag for tiled panes is "fullscreen is active and this pane is focused", and
/// focus is per client: with no client attached it names the wrong pane. The fullscreen pane is
/// the tiled pane that covers the tab's whole viewport.
fn mark_fullscreen(panes: &mut [Pane], tabs: &[Tab]) {
    for pane in panes.iter_mut().filter(|p| !p.is_floating) {
        pane.is_fullscreen = tabs.iter().any(|t| {
            t.id == pane.tab_id
                && t.is_fullscreen_active
                && pane.is_user_terminal()
                && pane.geometry.rows == t.viewport_rows
                && pane.geometry.columns == t.viewport_columns
        });
    }
}

/// `["a", "b"]` as argv.
fn args<'a>(items: impl IntoIterator<Item = &'a str>) -> Vec<OsString> {
    items.into_iter().map(OsString::from).collect()
}

/// `--opt=<path>` without going through UTF-8.
fn opt_path(prefix: &str, path: &Path) -> OsString {
    let mut arg = OsString::from(prefix);
    arg.push(path.as_os_str());
    arg
}

fn invalid(what: &'static str, reason: impl Into<String>) -> ZellijError {
    ZellijError::InvalidArgument {
        what,
        reason: reason.into(),
    }
}

fn check_name(what: &'static str, name: &str) -> Result<()> {
    if name.trim().is_empty() {
        return Err(invalid(what, "the name is empty"));
    }
    if name.len() > MAX_NAME_LEN {
        return Err(invalid(what, format!("longer than {MAX_NAME_LEN} bytes")));
    }
    if name.chars().any(char::is_control) {
        return Err(invalid(what, "control characters are not allowed"));
    }
    Ok(())
}

fn check_dir(what: &'static str, dir: &Path) -> Result<()> {
    if !dir.is_absolute() {
        return Err(invalid(
            what,
            format!("{} is not an absolute path", dir.display()),
        ));
    }
    Ok(())
}

/// Appends `-- argv…` for a pane command.
fn push_command(argv: &mut Vec<OsString>, command: &[String]) -> Result<()> {
    let Some(program) = command.first() else {
        return Ok(());
    };
    if program.trim().is_empty() {
        return Err(invalid("command", "the program name is empty"));
    }
    if command.iter().any(|a| a.contains('\0')) {
        return Err(invalid("command", "arguments must not contain NUL"));
    }
    argv.push("--".into());
    argv.extend(command.iter().map(OsString::from));
    Ok(())
}

/// `"zellij 0.45.1\n"` → `"0.45.1"` if at least [`MIN_VERSION`].
fn parse_version(stdout: &str) -> Option<String> {
    let version = stdout.trim().strip_prefix("zellij ")?.trim();
    let mut parts = version.split('.');
    let major: u32 = parts.next()?.parse().ok()?;
    let minor: u32 = parts.next()?.parse().ok()?;
    ((major, minor) >= MIN_VERSION).then(|| version.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions() {
        assert_eq!(parse_version("zellij 0.45.1\n").as_deref(), Some("0.45.1"));
        assert_eq!(parse_version("zellij 0.44.0").as_deref(), Some("0.44.0"));
        assert_eq!(parse_version("zellij 1.0.0").as_deref(), Some("1.0.0"));
        assert_eq!(parse_version("zellij 0.43.1"), None);
        assert_eq!(parse_version("tmux 3.4"), None);
    }

    #[test]
    fn names_and_dirs() {
        assert!(check_name("tab name", "build & test").is_ok());
        assert!(check_name("tab name", "-starts-with-dash").is_ok());
        assert!(check_name("tab name", " ").is_err());
        assert!(check_name("tab name", "a\nb").is_err());
        assert!(check_name("tab name", &"x".repeat(257)).is_err());
        assert!(check_dir("cwd", Path::new("/srv")).is_ok());
        let err = check_dir("cwd", Path::new("srv")).unwrap_err();
        assert_eq!(err.to_string(), "invalid cwd: srv is not an absolute path");
    }

    #[test]
    fn pane_commands_go_after_a_double_dash() {
        let mut argv = args(["new-pane"]);
        push_command(&mut argv, &["--help".to_owned(), "x".to_owned()]).unwrap();
        assert_eq!(argv, args(["new-pane", "--", "--help", "x"]));
        let mut none = args(["new-pane"]);
        push_command(&mut none, &[]).unwrap();
        assert_eq!(none, args(["new-pane"]));
        assert!(push_command(&mut none, &[" ".to_owned()]).is_err());
    }

    #[test]
    fn patterns() {
        let lines = vec!["a".to_owned(), "build ok in 3s".to_owned()];
        assert_eq!(TextPattern::literal("ok").unwrap().find(&lines), Some(1));
        assert_eq!(
            TextPattern::regex(r"in \d+s$").unwrap().find(&lines),
            Some(1)
        );
        assert_eq!(TextPattern::literal("zzz").unwrap().find(&lines), None);
        assert!(TextPattern::literal("").is_err());
        assert!(TextPattern::regex("(").is_err());
    }

    #[test]
    fn fullscreen_is_the_pane_covering_the_viewport() {
        let panes_json = r#"[
            {"id":0,"is_plugin":false,"is_fullscreen":true,"tab_id":0,"pane_rows":40,"pane_columns":60},
            {"id":2,"is_plugin":false,"is_fullscreen":false,"tab_id":0,"pane_rows":40,"pane_columns":120},
            {"id":3,"is_plugin":false,"is_fullscreen":false,"tab_id":1,"pane_rows":40,"pane_columns":120}]"#;
        let tabs_json = r#"[
            {"tab_id":0,"position":0,"name":"a","is_fullscreen_active":true,"viewport_rows":40,"viewport_columns":120},
            {"tab_id":1,"position":1,"name":"b","is_fullscreen_active":false,"viewport_rows":40,"viewport_columns":120}]"#;
        let mut panes = parse_panes(panes_json).unwrap();
        mark_fullscreen(&mut panes, &parse_tabs(tabs_json).unwrap());
        let flags: Vec<bool> = panes.iter().map(|p| p.is_fullscreen).collect();
        assert_eq!(flags, [false, true, false]);
    }

    #[test]
    fn run_pane_lookup() {
        let run = MarkedRun::with_id(0xab);
        let json = format!(
            r#"[{{"id":3,"is_plugin":false,"title":"x","tab_id":0,"terminal_command":"/bin/sh -c eval \"$2\" muxgate-run {} echo hi"}},
                {{"id":4,"is_plugin":false,"title":"muxgate-run-000000ab","tab_id":0}}]"#,
            run.id()
        );
        let panes = parse_panes(&json).unwrap();
        assert!(is_run_pane(&panes[0], &run, "muxgate-run-000000ab"));
        // A plain shell pane with the same title is not the command pane.
        assert!(!is_run_pane(&panes[1], &run, "muxgate-run-000000ab"));
    }
}
