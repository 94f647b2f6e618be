//! Finding control clients left behind by a muxgate process that is gone.
//!
//! muxgate's control clients carry `TERM=muxgate-<owner pid>` (see [`super::spawn`]). A client is
//! stale when its process is no longer a child of that owner: the owner died and the client was
//! re-parented. Such a client keeps its session's panes throttled and can wedge `kill-server`,
//! so the engine kills it at start and `muxgate doctor` reports it.
//!
//! Deciding is pure ([`stale_clients`] takes the parent lookup as a function); reading `/proc`
//! and sending the signal are the two small I/O helpers at the bottom.

use super::spawn::TERM_MARKER_PREFIX;

/// The `list-clients -F` format [`parse_clients`] reads.
pub const CLIENT_FORMAT: &str = "#{client_pid} #{client_termname}";

/// One attached client as tmux lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientInfo {
    pub pid: u32,
    pub term: String,
}

impl ClientInfo {
    /// The muxgate process that spawned this client, if it is a muxgate client.
    pub fn owner(&self) -> Option<u32> {
        self.term.strip_prefix(TERM_MARKER_PREFIX)?.parse().ok()
    }
}

/// Parses `list-clients -F CLIENT_FORMAT` output; malformed lines are skipped.
pub fn parse_clients(lines: &[Vec<u8>]) -> Vec<ClientInfo> {
    lines
        .iter()
        .filter_map(|line| {
            let text = String::from_utf8_lossy(line);
            let (pid, term) = text.split_once(' ')?;
            Some(ClientInfo {
                pid: pid.parse().ok()?,
                term: term.to_string(),
            })
        })
        .collect()
}

/// The muxgate clients whose owner is no longer their parent, decided with `parent_of`
/// (`None` = the process does not exist, so it cannot be killed either).
pub fn stale_clients_with(
    clients: &[ClientInfo],
    parent_of: impl Fn(u32) -> Option<u32>,
) -> Vec<ClientInfo> {
    clients
        .iter()
        .filter(|c| match (c.owner(), parent_of(c.pid)) {
            (Some(owner), Some(parent)) => parent != owner,
            _ => false,
        })
        .cloned()
        .collect()
}

/// [`stale_clients_with`] using `/proc` for the parent lookup.
pub fn stale_clients(clients: &[ClientInfo]) -> Vec<ClientInfo> {
    stale_clients_with(clients, parent_pid)
}

/// The parent pid of a tmux process, from `/proc/<pid>/stat`; `None` when the process is gone
/// or is not tmux (a pid reused by something else must never be killed).
pub fn parent_pid(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Format: `pid (comm) state ppid …`; comm may contain spaces and parentheses.
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    if !stat.get(open + 1..close)?.starts_with("tmux") {
        return None;
    }
    let mut fields = stat.get(close + 1..)?.split_whitespace();
    let _state = fields.next()?;
    fields.next()?.parse().ok()
}

/// Sends SIGKILL to a stale client.
pub fn kill(pid: u32) {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return;
    };
    // SAFETY: kill(2) has no memory-safety preconditions.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_only_orphaned_muxgate_clients() {
        let clients = parse_clients(&[
            b"100 muxgate-42".to_vec(),
            b"101 muxgate-42".to_vec(),
            b"102 xterm-256color".to_vec(),
            b"103 muxgate-notapid".to_vec(),
            b"104 muxgate-77".to_vec(),
            b"garbage".to_vec(),
        ]);
        assert_eq!(clients.len(), 5);
        let parents = |pid| match pid {
            100 => Some(42), // still owned by its live muxgate
            101 => Some(1),  // re-parented: the owner died
            102 => Some(1),  // a human's client
            103 => Some(1),
            _ => None, // gone
        };
        let stale = stale_clients_with(&clients, parents);
        assert_eq!(
            stale,
            vec![ClientInfo {
                pid: 101,
                term: "muxgate-42".into()
            }]
        );
    }

    #[test]
    fn reads_parent_of_a_real_process_only_if_tmux() {
        // This test process is not tmux, so it must never be reported as killable.
        assert_eq!(parent_pid(std::process::id()), None);
    }
}
