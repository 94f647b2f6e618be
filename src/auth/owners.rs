//! Which client created which session: gateway state that no pane can rewrite.
//!
//! Ownership decides what an `own_sessions` client sees, so it must not live where the code
//! running in a pane can reach it (a tmux user option can be changed by any `tmux set` in any
//! pane of that server). It is kept here, keyed by the server ([`OwnerScope`]) and the session's
//! id *and* creation time (ids restart at `$0` when a server restarts; a new `$0` created in
//! another second is another session), and saved to `owners.json` in the state directory
//! (`0600`, replaced atomically) whenever it changes, so that it survives a gateway restart.
//! A save that fails (a full disk) is logged once and tried again with the next change and,
//! through [`SessionOwners::retry_failed_saves`], every [`SAVE_RETRY`] until one works.
//!
//! A session being created is claimed by name first ([`SessionOwners::claim_name`]): until its id
//! is known, a session of that name in that scope counts as the creator's, so no listing ever
//! shows it unowned.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::state::write_private;

/// The server an ownership belongs to: a configured server's name, or a workspace.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OwnerScope(Arc<str>);

impl OwnerScope {
    /// The configured server `name`.
    pub fn configured(name: &str) -> Self {
        Self(format!("server:{name}").into())
    }

    /// The server of workspace `name`.
    pub fn workspace(name: &str) -> Self {
        Self(format!("workspace:{name}").into())
    }

    /// The scope as a key of gateway state (`server:<name>`, `workspace:<name>`).
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

/// A session as tmux identifies it for this purpose: its id and creation time.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SessionKey {
    /// `$N`.
    pub id: String,
    /// `#{session_created}`, seconds since the Unix epoch.
    pub created: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Table {
    /// Scope → `"<id> <created>"` → owner `sub`.
    scopes: BTreeMap<String, BTreeMap<String, String>>,
}

impl SessionKey {
    fn text(&self) -> String {
        format!("{} {}", self.id, self.created)
    }
}

/// How often a failed save is tried again while no change comes to try it.
pub(crate) const SAVE_RETRY: Duration = Duration::from_secs(1);

/// The ownership table.
#[derive(Debug)]
pub struct SessionOwners {
    /// Where it is saved; `None` keeps it in memory only.
    file: Option<PathBuf>,
    table: Mutex<Table>,
    /// Sessions being created: (scope, name) → owner.
    pending: Mutex<BTreeMap<(String, String), String>>,
    /// The last save failed: the file is older than the table.
    unsaved: AtomicBool,
    /// Wakes [`SessionOwners::retry_failed_saves`] when a save fails.
    failed: Notify,
}

impl SessionOwners {
    /// A table kept in memory only.
    pub fn in_memory() -> Self {
        Self {
            file: None,
            table: Mutex::new(Table::default()),
            pending: Mutex::new(BTreeMap::new()),
            unsaved: AtomicBool::new(false),
            failed: Notify::new(),
        }
    }

    /// The table saved in `file` (read now if it exists).
    pub fn open(file: &Path) -> io::Result<Self> {
        let table: Table = crate::state::read_json_or_default(file)?;
        Ok(Self {
            file: Some(file.to_owned()),
            table: Mutex::new(table),
            pending: Mutex::new(BTreeMap::new()),
            unsaved: AtomicBool::new(false),
            failed: Notify::new(),
        })
    }

    /// The `sub` that created `session` (named `name`) in `scope`, if it was created through
    /// the gateway.
    pub fn owner(&self, scope: &OwnerScope, session: &SessionKey, name: &str) -> Option<String> {
        let recorded = lock(&self.table)
            .scopes
            .get(scope.as_str())
            .and_then(|sessions| sessions.get(&session.text()))
            .cloned();
        recorded.or_else(|| {
            lock(&self.pending)
                .get(&(scope.as_str().to_owned(), name.to_owned()))
                .cloned()
        })
    }

    /// Claims a session name for `owner` while it is being created; the claim ends when the
    /// returned guard is dropped (after [`Self::record`], or when creation failed).
    pub fn claim_name<'a>(&'a self, scope: &OwnerScope, name: &str, owner: &str) -> NameClaim<'a> {
        let key = (scope.as_str().to_owned(), name.to_owned());
        lock(&self.pending).insert(key.clone(), owner.to_owned());
        NameClaim { owners: self, key }
    }

    /// Records that `owner` created `session` in `scope`.
    pub fn record(&self, scope: &OwnerScope, session: &SessionKey, owner: &str) {
        let mut table = lock(&self.table);
        table
            .scopes
            .entry(scope.as_str().to_owned())
            .or_default()
            .insert(session.text(), owner.to_owned());
        self.save(&table);
    }

    /// Forgets the sessions of `scope` that are not in `live` (every session the server has
    /// now), so that ids a restarted server reuses start unowned.
    pub fn retain(&self, scope: &OwnerScope, live: &[SessionKey]) {
        let mut table = lock(&self.table);
        let Some(sessions) = table.scopes.get_mut(scope.as_str()) else {
            return;
        };
        let live: Vec<String> = live.iter().map(SessionKey::text).collect();
        let before = sessions.len();
        sessions.retain(|key, _| live.contains(key));
        if sessions.len() != before {
            if sessions.is_empty() {
                table.scopes.remove(scope.as_str());
            }
            self.save(&table);
        }
    }

    fn save(&self, table: &Table) {
        let Some(file) = &self.file else { return };
        let saved = serde_json::to_vec(table)
            .map_err(io::Error::other)
            .and_then(|bytes| write_private(file, &bytes));
        match saved {
            Ok(()) => {
                if self.unsaved.swap(false, Ordering::Relaxed) {
                    tracing::info!(file = %file.display(), "session owners saved again");
                }
            }
            // Logged when saves start failing, not once per change.
            Err(error) => {
                if !self.unsaved.swap(true, Ordering::Relaxed) {
                    tracing::error!(
                        %error,
                        file = %file.display(),
                        "saving session owners failed; trying again with each change and every \
                         second until it works"
                    );
                    self.failed.notify_one();
                }
            }
        }
    }

    /// Saves the table again every [`SAVE_RETRY`] while the last save failed, until `stop`.
    pub async fn retry_failed_saves(self: Arc<Self>, stop: CancellationToken) {
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                () = self.failed.notified() => {}
            }
            while self.unsaved.load(Ordering::Relaxed) {
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(SAVE_RETRY) => {}
                }
                let table = lock(&self.table);
                if self.unsaved.load(Ordering::Relaxed) {
                    self.save(&table);
                }
            }
        }
    }
}

/// A name claimed while its session is created; see [`SessionOwners::claim_name`].
pub struct NameClaim<'a> {
    owners: &'a SessionOwners,
    key: (String, String),
}

impl Drop for NameClaim<'_> {
    fn drop(&mut self) {
        lock(&self.owners.pending).remove(&self.key);
    }
}

/// Locks a table whose every change is one call on a map, so a poisoned one is still
/// consistent (also the failure throttle's).
pub(super) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A save that fails is not forgotten: with no further change, the retry saves the table
    /// once saving works again.
    #[tokio::test]
    async fn a_failed_save_is_tried_again_until_it_works() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("owners.json");
        let owners = Arc::new(SessionOwners::open(&file).unwrap());
        let stop = CancellationToken::new();
        tokio::spawn(Arc::clone(&owners).retry_failed_saves(stop.clone()));
        // The save goes through `owners.tmp`; a directory there makes every save fail.
        let blocker = file.with_extension("tmp");
        std::fs::create_dir(&blocker).unwrap();
        let build = OwnerScope::configured("build");
        owners.record(&build, &key("$1", 7), "alice");
        assert!(!file.exists());
        std::fs::remove_dir(&blocker).unwrap();
        let deadline = std::time::Instant::now() + 10 * SAVE_RETRY;
        let saved = || {
            SessionOwners::open(&file)
                .ok()?
                .owner(&build, &key("$1", 7), "x")
        };
        while saved().is_none() {
            assert!(std::time::Instant::now() < deadline, "never saved again");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(saved().as_deref(), Some("alice"));
        stop.cancel();
    }

    fn key(id: &str, created: u64) -> SessionKey {
        SessionKey {
            id: id.into(),
            created,
        }
    }

    #[test]
    fn owners_are_per_scope_and_per_session_instance() {
        let owners = SessionOwners::in_memory();
        let build = OwnerScope::configured("build");
        owners.record(&build, &key("$0", 100), "alice");
        assert_eq!(
            owners.owner(&build, &key("$0", 100), "x").as_deref(),
            Some("alice")
        );
        assert_eq!(
            owners.owner(&build, &key("$0", 101), "x"),
            None,
            "a reused id"
        );
        assert_eq!(
            owners.owner(&OwnerScope::workspace("build"), &key("$0", 100), "x"),
            None
        );
    }

    #[test]
    fn a_claimed_name_is_owned_until_the_claim_ends() {
        let owners = SessionOwners::in_memory();
        let scope = OwnerScope::configured("s");
        {
            let _claim = owners.claim_name(&scope, "new", "bob");
            assert_eq!(
                owners.owner(&scope, &key("$3", 1), "new").as_deref(),
                Some("bob")
            );
            owners.record(&scope, &key("$3", 1), "bob");
        }
        assert_eq!(owners.owner(&scope, &key("$9", 2), "new"), None);
        assert_eq!(
            owners.owner(&scope, &key("$3", 1), "new").as_deref(),
            Some("bob")
        );
    }

    #[test]
    fn gone_sessions_are_forgotten_and_the_table_survives_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("owners.json");
        let scope = OwnerScope::configured("s");
        {
            let owners = SessionOwners::open(&file).unwrap();
            owners.record(&scope, &key("$0", 1), "a");
            owners.record(&scope, &key("$1", 1), "b");
            owners.retain(&scope, &[key("$1", 1)]);
        }
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let owners = SessionOwners::open(&file).unwrap();
        assert_eq!(owners.owner(&scope, &key("$0", 1), "x"), None);
        assert_eq!(
            owners.owner(&scope, &key("$1", 1), "x").as_deref(),
            Some("b")
        );
    }

    #[test]
    fn a_corrupt_file_is_an_error_not_an_empty_table() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("owners.json");
        std::fs::write(&file, "{not json").unwrap();
        assert!(SessionOwners::open(&file).is_err());
    }
}
