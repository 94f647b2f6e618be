//! Per-session primitives the operations are built from: one CLI action with its failure
//! mapped, listings, lookups that turn a missing target into a specific error, screen dumps,
//! and tab creation with a sizing client.

use std::ffi::OsString;
use std::time::Duration;

use tokio::time::Instant;

use super::Inner;
use super::checks::{Created, args, created, mark_fullscreen};
use super::resize::{Axis, SizeSteps};
use super::types::ReadScope;
use crate::attach::PtyClient;
use crate::cli::{CliOutput, describe_status, first_lines};
use crate::error::{Result, ZellijError};
use crate::ids::{PaneId, SessionName, TabId};
use crate::listing::{
    Client, Pane, SessionEntry, Tab, parse_clients, parse_new_pane_id, parse_new_tab_id,
    parse_panes, parse_sessions, parse_tabs,
};
use crate::queue::SessionQueue;
use crate::watch::normalize;

/// How many times a listing that is empty or malformed is asked again (see [`Inner::listing`]).
const LISTING_RETRIES: u32 = 3;

/// A JSON listing starts as an array.
fn json_array(out: &str) -> bool {
    out.starts_with('[')
}

/// `list-clients` starts with its header, even with no client attached.
fn client_table(out: &str) -> bool {
    out.starts_with("CLIENT_ID")
}

impl Inner {
    pub(super) fn queue(&self, session: &SessionName) -> SessionQueue {
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
    pub(super) async fn create_tab(
        &self,
        session: &SessionName,
        argv: Vec<OsString>,
    ) -> Result<Option<Tab>> {
        let sizing = if self.clients(session).await?.is_empty() {
            Some(self.attach_sizing_client(session).await?)
        } else {
            None
        };
        let before: Vec<TabId> = self.tabs(session).await?.iter().map(|t| t.id).collect();
        let printed = self.act(session, "action new-tab", argv).await;
        if let Some(client) = sizing {
            client.detach().await;
        }
        let printed = printed?;
        let tabs = self.tabs(session).await?;
        // Zellij sometimes prints nothing (or another action's output) for a tab it did create:
        // then the one tab that was not there before is it, and creating another would make
        // two. No new tab at all is a creation that did not happen (retried by the caller).
        let tab = match parse_new_tab_id(&printed) {
            Ok(id) => tabs.into_iter().find(|t| t.id == id),
            Err(error) => match created(&before, tabs, |t: &Tab| t.id) {
                Created::One(tab) => Some(tab),
                Created::Nothing => None,
                Created::Several => return Err(error.into()),
            },
        };
        let Some(tab) = tab else {
            return Ok(None);
        };
        if tab.viewport_rows == 0 || tab.viewport_columns == 0 {
            let tab_id = tab.id.to_string();
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

    /// Runs an action that opens one pane (`new-pane`, `edit`) and returns that pane.
    ///
    /// Zellij now and then prints nothing for a pane it did open, as it does for tabs (see
    /// `create_tab`). Running the action again would open a second pane; instead the one
    /// terminal pane that was not listed before is it. None new means nothing was opened, and
    /// two or more (a human opened one meanwhile) cannot be told apart: both are errors.
    pub(super) async fn create_pane(
        &self,
        session: &SessionName,
        label: &'static str,
        argv: Vec<OsString>,
    ) -> Result<Pane> {
        let before: Vec<PaneId> = self.panes(session).await?.iter().map(|p| p.id).collect();
        let out = self.act(session, label, argv).await?;
        let unparsed = match parse_new_pane_id(label, &out) {
            Ok(id) => return self.pane(session, id).await,
            Err(error) => error,
        };
        let terminals = self.panes(session).await?.into_iter();
        match created(&before, terminals.filter(|p| p.id.is_terminal()), |p| p.id) {
            Created::One(pane) => Ok(pane),
            Created::Nothing | Created::Several => Err(unparsed.into()),
        }
    }

    /// A client of the headless size attached through a pty (see `new_tab`).
    pub(super) async fn attach_sizing_client(&self, session: &SessionName) -> Result<PtyClient> {
        PtyClient::attach(
            &self.cli,
            session,
            self.spec.headless_size,
            self.spec.call_timeout,
        )
        .await
    }

    /// Gives every tab of `session` the headless size, through a sizing client kept attached
    /// until the tabs report that size.
    ///
    /// The server lists a client before it resizes the session's tabs to it: detaching in
    /// between leaves the session at Zellij's 50×50. The resize ends in a render to the
    /// client, so the tabs are looked at after each render, not on a timer.
    pub(super) async fn size_session(&self, session: &SessionName) -> Result<()> {
        let size = self.spec.headless_size;
        let client = self.attach_sizing_client(session).await?;
        let deadline = Instant::now() + self.spec.call_timeout;
        let sized = |tab: &Tab| {
            tab.display_area_columns == usize::from(size.cols)
                && tab.display_area_rows == usize::from(size.rows)
        };
        let result = loop {
            match self.tabs(session).await {
                Ok(tabs) if tabs.iter().all(sized) => break Ok(()),
                Ok(_) => {}
                Err(e) => break Err(e),
            }
            if !client.next_render(deadline).await {
                break Err(ZellijError::Timeout {
                    what: format!("sizing session {session} to {}×{}", size.cols, size.rows),
                    after: self.spec.call_timeout,
                });
            }
        };
        client.detach().await;
        result
    }

    pub(super) fn forget(&self, session: &SessionName) {
        let mut queues = self.queues.lock().unwrap_or_else(|e| e.into_inner());
        queues.remove(session);
    }

    /// Runs an action and returns its stdout, mapping failures to specific errors.
    pub(super) async fn act(
        &self,
        session: &SessionName,
        label: &str,
        argv: Vec<OsString>,
    ) -> Result<String> {
        let out = self
            .cli
            .action(session, label, argv, self.spec.call_timeout)
            .await?;
        if out.status.success() {
            return Ok(out.stdout);
        }
        Err(self.failure(session, label, out).await)
    }

    pub(super) async fn failure(
        &self,
        session: &SessionName,
        label: &str,
        out: CliOutput,
    ) -> ZellijError {
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

    pub(super) async fn sessions(&self) -> Result<Vec<SessionEntry>> {
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
    pub(super) async fn session_is_live(&self, session: &SessionName) -> Result<bool> {
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

    pub(super) async fn require_live_session(&self, session: &SessionName) -> Result<()> {
        if self.session_is_live(session).await? {
            Ok(())
        } else {
            Err(ZellijError::NoSuchSession {
                session: session.clone(),
            })
        }
    }

    /// A listing. Zellij sometimes answers a listing with nothing while it applies a change
    /// (seen under load right after closing a tab, twice in a row, and for `list-clients` right
    /// after a session started), and once `list-clients` with another action's output (`2`, a
    /// tab id) instead of its table; so a reply that does not start as `looks_right` says is
    /// asked again, after 25, 50 and 100 ms: at most 175 ms more before the last reply goes to
    /// its parser, which says what is wrong with it. A listing that fails without a word is
    /// asked again the same way: seen under load as `list-panes` exiting with the status of a
    /// command another client was running (`run --block-until-exit`), the same mix-up of
    /// clients. A listing changes nothing, so asking again is safe.
    pub(super) async fn listing<const N: usize>(
        &self,
        session: &SessionName,
        label: &str,
        argv: [&str; N],
        looks_right: fn(&str) -> bool,
    ) -> Result<String> {
        let mut pause = Duration::from_millis(25);
        let mut out = String::new();
        for retry in 0..=LISTING_RETRIES {
            let reply = self
                .cli
                .action(session, label, args(argv), self.spec.call_timeout)
                .await?;
            let ask_again = reply.stderr.trim().is_empty() && retry < LISTING_RETRIES;
            if !reply.status.success() && !ask_again {
                return Err(self.failure(session, label, reply).await);
            }
            out = reply.stdout;
            if reply.status.success() && looks_right(out.trim_start()) {
                return Ok(out);
            }
            if retry < LISTING_RETRIES {
                tokio::time::sleep(pause).await;
                pause *= 2;
            }
        }
        Ok(out)
    }

    pub(super) async fn panes(&self, session: &SessionName) -> Result<Vec<Pane>> {
        let json = self
            .listing(
                session,
                "action list-panes",
                ["list-panes", "--json", "--all"],
                json_array,
            )
            .await?;
        Ok(parse_panes(&json)?)
    }

    pub(super) async fn tabs(&self, session: &SessionName) -> Result<Vec<Tab>> {
        let json = self
            .listing(
                session,
                "action list-tabs",
                ["list-tabs", "--json", "--all"],
                json_array,
            )
            .await?;
        Ok(parse_tabs(&json)?)
    }

    /// Attached clients; an empty reply (no header, see `parse_clients`) is asked again as any
    /// [`Self::listing`] is.
    pub(super) async fn clients(&self, session: &SessionName) -> Result<Vec<Client>> {
        let out = self
            .listing(
                session,
                "action list-clients",
                ["list-clients"],
                client_table,
            )
            .await?;
        Ok(parse_clients(&out)?)
    }

    pub(super) async fn pane(&self, session: &SessionName, pane: PaneId) -> Result<Pane> {
        find_pane(self.panes(session).await?, session, pane)
    }

    pub(super) async fn require_terminal(
        &self,
        session: &SessionName,
        pane: PaneId,
    ) -> Result<Pane> {
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

    /// A pane, with its fullscreen state derived from the tabs (see [`mark_fullscreen`]), and
    /// its tab, from one listing of each.
    pub(super) async fn pane_and_tab(
        &self,
        session: &SessionName,
        pane: PaneId,
    ) -> Result<(Pane, Tab)> {
        let mut panes = self.panes(session).await?;
        let tabs = self.tabs(session).await?;
        mark_fullscreen(&mut panes, &tabs);
        let pane = find_pane(panes, session, pane)?;
        let tab = find_tab(tabs, session, pane.tab_id)?;
        Ok((pane, tab))
    }

    /// Flips a pane's fullscreen within its tab; a flip while another pane of the tab is
    /// fullscreen ends that one's.
    pub(super) async fn flip_fullscreen(&self, session: &SessionName, pane: PaneId) -> Result<()> {
        let id = pane.to_string();
        self.act(
            session,
            "action toggle-fullscreen",
            args(["toggle-fullscreen", "--pane-id", &id]),
        )
        .await?;
        Ok(())
    }

    /// Resizes one dimension of a pane step by step toward `target` cells, as
    /// [`SizeSteps`] chooses.
    pub(super) async fn step_toward(
        &self,
        session: &SessionName,
        pane: PaneId,
        axis: Axis,
        target: usize,
    ) -> Result<()> {
        let current = axis.of(&self.pane(session, pane).await?);
        let mut steps = SizeSteps::new(axis, current, target);
        while let Some((side, argv)) = steps.next(pane) {
            self.act(session, "action resize", argv).await?;
            steps.record(side, axis.of(&self.pane(session, pane).await?));
        }
        Ok(())
    }

    pub(super) async fn tab(&self, session: &SessionName, tab: TabId) -> Result<Tab> {
        find_tab(self.tabs(session).await?, session, tab)
    }

    pub(super) async fn tab_or_first(
        &self,
        session: &SessionName,
        tab: Option<TabId>,
    ) -> Result<Tab> {
        match tab {
            Some(tab) => self.tab(session, tab).await,
            None => self.tabs(session).await?.into_iter().next().ok_or_else(|| {
                ZellijError::NoSuchSession {
                    session: session.clone(),
                }
            }),
        }
    }

    pub(super) async fn set_floating(
        &self,
        session: &SessionName,
        tab: TabId,
        visible: bool,
    ) -> Result<()> {
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
    pub(super) async fn dump(
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

/// Pane `pane` of a listing of `session`, or the error that names it missing.
fn find_pane(panes: Vec<Pane>, session: &SessionName, pane: PaneId) -> Result<Pane> {
    panes
        .into_iter()
        .find(|p| p.id == pane)
        .ok_or_else(|| ZellijError::NoSuchPane {
            session: session.clone(),
            pane,
        })
}

/// Tab `tab` of a listing of `session`, or the error that names it missing.
fn find_tab(tabs: Vec<Tab>, session: &SessionName, tab: TabId) -> Result<Tab> {
    tabs.into_iter()
        .find(|t| t.id == tab)
        .ok_or_else(|| ZellijError::NoSuchTab {
            session: session.clone(),
            tab,
        })
}
