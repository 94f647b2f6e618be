//! Recognising muxgate's control clients, and the ones left behind by a gateway that is gone.
//!
//! muxgate's control clients carry `TERM=muxgate-<owner pid>` (see [`crate::client::spawn`]). A client
//! is stale when its process is no longer a child of that owner: the owner died and the client
//! was re-parented. Such a client keeps its session's panes throttled and can wedge
//! `kill-server`, so the engine kills it when it first connects and `muxgate doctor` reports it.
//!
//! Classifying is pure ([`muxgate_clients`] takes the parent lookup as a function); reading
//! `/proc` and sending the signal are the small I/O helpers at the bottom.

use crate::client::spawn::TERM_MARKER_PREFIX;

/// The `list-clients -F` format [`parse_clients`] reads.
pub const CLIENT_FORMAT: &str = "#{client_pid} #{client_termname}";

/// One attached client as tmux lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientInfo {
    /// The client's process id (`#{client_pid}`).
    pub pid: u32,
    /// Its terminal name (`#{client_termname}`); empty when it has none.
    pub term: String,
}

/// Parses `list-clients -F CLIENT_FORMAT` output lines; lines that do not fit are skipped.
pub fn parse_clients<L: AsRef<[u8]>>(lines: impl IntoIterator<Item = L>) -> Vec<ClientInfo> {
    lines
        .into_iter()
        .filter_map(|line| {
            let text = String::from_utf8_lossy(line.as_ref()).into_owned();
            let (pid, term) = text.split_once(' ').unwrap_or((&text, ""));
            Some(ClientInfo {
                pid: pid.parse().ok()?,
                term: term.to_owned(),
            })
        })
        .collect()
}

/// A muxgate control client attached to a tmux server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MuxgateClient {
    /// The client's process id.
    pub pid: u32,
    /// The gateway process that spawned it (from its terminal name).
    pub owner_pid: u32,
    /// Whether its owner still has it.
    pub state: ControlClientState,
}

/// Whether a muxgate control client still belongs to the gateway that spawned it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ControlClientState {
    /// Its owner is still its parent.
    Live,
    /// Its owner is gone: the parent is another process (typically 1 after reparenting).
    Stale {
        /// The process id of its parent now.
        parent: u32,
    },
    /// Its process is not visible here (another PID namespace), so its parent cannot be read.
    Unknown,
}

/// Picks the muxgate control clients out of `clients` and classifies them, reading a
/// process's parent with `parent_of` (in production [`parent_pid`]).
pub fn muxgate_clients(
    clients: &[ClientInfo],
    parent_of: impl Fn(u32) -> Option<u32>,
) -> Vec<MuxgateClient> {
    clients
        .iter()
        .filter_map(|client| {
            let owner_pid: u32 = client.term.strip_prefix(TERM_MARKER_PREFIX)?.parse().ok()?;
            let state = match parent_of(client.pid) {
                Some(parent) if parent == owner_pid => ControlClientState::Live,
                Some(parent) => ControlClientState::Stale { parent },
                None => ControlClientState::Unknown,
            };
            Some(MuxgateClient {
                pid: client.pid,
                owner_pid,
                state,
            })
        })
        .collect()
}

/// The parent of process `pid`, from `/proc/<pid>/stat`.
pub fn parent_pid(pid: u32) -> Option<u32> {
    read_stat(pid).map(|(_, parent)| parent)
}

/// `(command name, parent pid)` of process `pid`.
fn read_stat(pid: u32) -> Option<(String, u32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&stat)
}

/// The command name and parent pid of a `/proc/<pid>/stat` line. The command name in
/// parentheses may contain spaces and parentheses, so fields are counted after its last `)`.
pub fn parse_stat(stat: &str) -> Option<(String, u32)> {
    let open = stat.find('(')?;
    let (head, after_comm) = stat.rsplit_once(')')?;
    let comm = head.get(open + 1..)?.to_owned();
    let mut fields = after_comm.split_whitespace();
    let _state = fields.next()?;
    Some((comm, fields.next()?.parse().ok()?))
}

/// Sends SIGKILL to a stale client, after checking that the pid still names a tmux process
/// (a pid reused by something else must never be killed).
pub fn kill_stale(client: &MuxgateClient) {
    let Some((comm, _)) = read_stat(client.pid) else {
        return;
    };
    if !comm.starts_with("tmux") {
        return;
    }
    let Ok(pid) = libc::pid_t::try_from(client.pid) else {
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
    fn client_lines_parse_pid_and_termname() {
        let lines = parse_clients(
            "123 muxgate-77\n456 xterm-256color\n789 \nnot-a-pid x\n\n1011 screen 256".lines(),
        );
        let expected = [
            (123, "muxgate-77"),
            (456, "xterm-256color"),
            (789, ""),
            (1011, "screen 256"),
        ];
        assert_eq!(
            lines,
            expected.map(|(pid, term)| ClientInfo {
                pid,
                term: term.into()
            })
        );
    }

    #[test]
    fn muxgate_clients_are_live_stale_or_unknown() {
        let lines = parse_clients(
            "10 muxgate-100\n11 muxgate-100\n12 muxgate-200\n13 xterm\n14 muxgate-x\n15 muxgate-"
                .lines(),
        );
        let parents = |pid| match pid {
            10 => Some(100), // still owned by its live gateway
            11 => Some(1),   // re-parented: the gateway died
            _ => None,       // not visible here
        };
        assert_eq!(
            muxgate_clients(&lines, parents),
            [
                MuxgateClient {
                    pid: 10,
                    owner_pid: 100,
                    state: ControlClientState::Live
                },
                MuxgateClient {
                    pid: 11,
                    owner_pid: 100,
                    state: ControlClientState::Stale { parent: 1 }
                },
                MuxgateClient {
                    pid: 12,
                    owner_pid: 200,
                    state: ControlClientState::Unknown
                },
            ]
        );
    }

    #[test]
    fn stat_lines_survive_odd_command_names() {
        assert_eq!(
            parse_stat("4242 (tmux) S 4200 4242 4242 0 -1 4194560 ..."),
            Some(("tmux".into(), 4200))
        );
        assert_eq!(
            parse_stat("4242 (a) b (c) S 17 4242"),
            Some(("a) b (c".into(), 17))
        );
        assert_eq!(parse_stat("4242 (x y) R 1"), Some(("x y".into(), 1)));
        assert_eq!(parse_stat("garbage"), None);
        assert_eq!(parse_stat("1 (x) S notanumber"), None);
    }

    #[test]
    fn this_process_parent_is_readable() {
        let parent = parent_pid(std::process::id()).expect("own /proc entry");
        assert_eq!(parent, std::os::unix::process::parent_id());
    }
}
