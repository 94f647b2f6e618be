//! The gateway's record of each agent it spawned: its kind, where it runs, its worktree and
//! who spawned it, by server scope and agent id. Saved (when the gateway has a state
//! directory) after every change, so that `list_agents`, `stop_agent` and a later resume know
//! a restart's agents too.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::worktree::Worktree;
use crate::auth::owners::OwnerScope;

/// Most agents one server (or workspace) holds records of.
pub(crate) const MAX_AGENTS_PER_SCOPE: usize = 256;

/// One spawned agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct AgentRecord {
    /// Its id: the name of its session.
    pub(crate) id: String,
    /// Its `[agents.<kind>]`.
    pub(crate) kind: String,
    /// The `sub` that spawned it.
    pub(crate) owner: String,
    /// Its session (`$N`) and the session's creation time, which together name it across a
    /// server's restarts.
    pub(crate) session: String,
    pub(crate) session_created: u64,
    /// Its pane (`%N`).
    pub(crate) pane: String,
    /// The tmux server process its pane is in (the instance's epoch, the server's pid): pane
    /// ids start again in a restarted server.
    #[serde(default)]
    pub(crate) server_process: Option<(u64, u32)>,
    pub(crate) title: Option<String>,
    pub(crate) worktree: Option<Worktree>,
    /// The CLI's own session (conversation) id, as its hook last reported it: a resume takes
    /// that conversation up (`resume_session_args`).
    #[serde(default)]
    pub(crate) cli_session: Option<String>,
    /// Unix ms.
    pub(crate) started_ms: u64,
}

/// Why an agent could not be recorded.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum RecordError {
    #[error("an agent named {0:?} exists already")]
    Taken(String),
    #[error("this server already has {MAX_AGENTS_PER_SCOPE} agents")]
    Full,
}

type Table = BTreeMap<String, BTreeMap<String, AgentRecord>>;

/// A state, and when it was first read.
type StateSince = (&'static str, Instant);

/// Every spawned agent, by scope and id.
#[derive(Debug, Default)]
pub(crate) struct Fleet {
    file: Option<PathBuf>,
    table: Mutex<Table>,
    /// Each agent's state when last read, and since when it has read so (not saved).
    states: Mutex<BTreeMap<(String, String), StateSince>>,
}

impl Fleet {
    /// The fleet saved in `file` (read now if it exists).
    pub(crate) fn open(file: &Path) -> io::Result<Self> {
        let table: Table = crate::state::read_json_or_default(file)?;
        Ok(Self {
            file: Some(file.to_owned()),
            table: Mutex::new(table),
            states: Mutex::default(),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Records `agent` in `scope`, unless its id is taken there or the scope is full.
    pub(crate) fn insert(&self, scope: &OwnerScope, agent: AgentRecord) -> Result<(), RecordError> {
        let mut table = self.lock();
        let agents = table.entry(scope.as_str().to_owned()).or_default();
        if agents.contains_key(&agent.id) {
            return Err(RecordError::Taken(agent.id));
        }
        if agents.len() >= MAX_AGENTS_PER_SCOPE {
            return Err(RecordError::Full);
        }
        agents.insert(agent.id.clone(), agent);
        self.save(&table);
        Ok(())
    }

    /// Whether `id` is taken in `scope`.
    pub(crate) fn contains(&self, scope: &OwnerScope, id: &str) -> bool {
        self.get(scope, id).is_some()
    }

    /// The agent `id` of `scope`.
    pub(crate) fn get(&self, scope: &OwnerScope, id: &str) -> Option<AgentRecord> {
        self.lock().get(scope.as_str())?.get(id).cloned()
    }

    /// The kind of the agent spawned in `pane` of server process `process` in `scope`, if
    /// one was.
    pub(crate) fn kind_in(
        &self,
        scope: &OwnerScope,
        pane: &str,
        process: (u64, u32),
    ) -> Option<String> {
        let table = self.lock();
        let agents = table.get(scope.as_str())?;
        agents
            .values()
            .find(|agent| agent.pane == pane && agent.server_process == Some(process))
            .map(|agent| agent.kind.clone())
    }

    /// Notes `session`, the CLI's own session id, on the agent spawned in `pane` of server
    /// process `process` in `scope`; whether one was.
    pub(crate) fn note_cli_session(
        &self,
        scope: &OwnerScope,
        pane: &str,
        process: (u64, u32),
        session: &str,
    ) -> bool {
        let mut table = self.lock();
        let Some(agent) = table.get_mut(scope.as_str()).and_then(|agents| {
            agents
                .values_mut()
                .find(|agent| agent.pane == pane && agent.server_process == Some(process))
        }) else {
            return false;
        };
        if agent.cli_session.as_deref() != Some(session) {
            agent.cli_session = Some(session.to_owned());
            self.save(&table);
        }
        true
    }

    /// Every agent, with its scope's text.
    pub(crate) fn all(&self) -> Vec<(String, AgentRecord)> {
        self.lock()
            .iter()
            .flat_map(|(scope, agents)| {
                agents
                    .values()
                    .map(move |agent| (scope.clone(), agent.clone()))
            })
            .collect()
    }

    /// Every agent of `scope`, by id.
    pub(crate) fn of_scope(&self, scope: &OwnerScope) -> Vec<AgentRecord> {
        self.lock()
            .get(scope.as_str())
            .map(|agents| agents.values().cloned().collect())
            .unwrap_or_default()
    }

    /// Notes that agent `id` of `scope` reads `state` now; how long it has read so (since the
    /// first read that found it so).
    pub(crate) fn state_for(&self, scope: &OwnerScope, id: &str, state: &'static str) -> Duration {
        let mut states = self.states.lock().unwrap_or_else(|p| p.into_inner());
        let key = (scope.as_str().to_owned(), id.to_owned());
        let now = Instant::now();
        let entry = states.entry(key).or_insert((state, now));
        if entry.0 != state {
            *entry = (state, now);
        }
        now.duration_since(entry.1)
    }

    /// Forgets agent `id` of `scope`.
    pub(crate) fn remove(&self, scope: &OwnerScope, id: &str) -> Option<AgentRecord> {
        self.states
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&(scope.as_str().to_owned(), id.to_owned()));
        let mut table = self.lock();
        let agents = table.get_mut(scope.as_str())?;
        let removed = agents.remove(id);
        if agents.is_empty() {
            table.remove(scope.as_str());
        }
        if removed.is_some() {
            self.save(&table);
        }
        removed
    }

    fn save(&self, table: &Table) {
        let Some(file) = &self.file else { return };
        let saved = serde_json::to_vec(table)
            .map_err(io::Error::other)
            .and_then(|bytes| crate::state::write_private(file, &bytes));
        if let Err(error) = saved {
            tracing::error!(%error, file = %file.display(), "saving the agents' records failed");
        }
    }
}

/// Checks an agent's id: it names its session, its branch (`agent/<id>`) and its worktree's
/// directory, so it is kept to what is plain in all three.
pub(crate) fn check_agent_id(id: &str) -> Result<(), &'static str> {
    let plain = id
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if id.is_empty() || id.len() > 64 {
        Err("must be 1 to 64 characters")
    } else if !plain {
        Err("may hold only letters, digits and - _ .")
    } else if !id.starts_with(|c: char| c.is_ascii_alphanumeric()) || id.ends_with('.') {
        Err("must start with a letter or digit and not end with .")
    } else if id.contains("..") || id.ends_with(".lock") {
        Err("must not hold .. or end in .lock")
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(id: &str) -> AgentRecord {
        AgentRecord {
            id: id.to_owned(),
            kind: "claude-code".to_owned(),
            owner: "coordinator".to_owned(),
            session: "$1".to_owned(),
            session_created: 1,
            pane: "%1".to_owned(),
            server_process: Some((0, 100)),
            title: None,
            worktree: None,
            cli_session: None,
            started_ms: 0,
        }
    }

    #[test]
    fn a_reported_session_is_kept_with_the_agent_of_that_pane_and_process_only() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("agents.json");
        let fleet = Fleet::open(&file).unwrap();
        let scope = OwnerScope::configured("dev");
        fleet.insert(&scope, agent("a")).unwrap();
        assert!(
            !fleet.note_cli_session(&scope, "%1", (0, 999), "s-1"),
            "another process"
        );
        assert!(
            !fleet.note_cli_session(&scope, "%2", (0, 100), "s-1"),
            "another pane"
        );
        assert!(fleet.note_cli_session(&scope, "%1", (0, 100), "s-1"));
        assert_eq!(
            fleet.get(&scope, "a").unwrap().cli_session.as_deref(),
            Some("s-1")
        );
        let again = Fleet::open(&file).unwrap();
        assert_eq!(
            again.get(&scope, "a").unwrap().cli_session.as_deref(),
            Some("s-1")
        );
    }

    #[test]
    fn an_id_is_plain_in_a_session_a_branch_and_a_path() {
        for good in ["fix-login", "a1", "claude-code-3", "x_y.z"] {
            assert_eq!(check_agent_id(good), Ok(()), "{good}");
        }
        for bad in [
            "", ".x", "-x", "a/b", "a b", "a..b", "x.lock", "x.", "é", "a:b",
        ] {
            assert!(check_agent_id(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn records_are_kept_per_scope_saved_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("agents.json");
        let fleet = Fleet::open(&file).unwrap();
        let here = OwnerScope::configured("main");
        let there = OwnerScope::workspace("team-b");
        fleet.insert(&here, agent("a")).unwrap();
        fleet.insert(&there, agent("a")).unwrap();
        assert_eq!(
            fleet.insert(&here, agent("a")),
            Err(RecordError::Taken("a".to_owned()))
        );
        assert_eq!(
            fleet.kind_in(&here, "%1", (0, 100)).as_deref(),
            Some("claude-code")
        );
        assert_eq!(fleet.kind_in(&here, "%2", (0, 100)), None);
        // The same pane id in a restarted server is another pane.
        assert_eq!(fleet.kind_in(&here, "%1", (0, 101)), None);
        let reopened = Fleet::open(&file).unwrap();
        assert_eq!(reopened.get(&here, "a"), Some(agent("a")));
        assert!(reopened.remove(&there, "a").is_some());
        assert!(Fleet::open(&file).unwrap().of_scope(&there).is_empty());
    }

    #[test]
    fn a_scope_holds_a_bounded_number_of_agents() {
        let fleet = Fleet::default();
        let scope = OwnerScope::configured("main");
        for n in 0..MAX_AGENTS_PER_SCOPE {
            fleet.insert(&scope, agent(&format!("a{n}"))).unwrap();
        }
        assert_eq!(
            fleet.insert(&scope, agent("one-more")),
            Err(RecordError::Full)
        );
    }
}
