//! What runs in the foreground of a pane's terminal, and whether it waits for input, read from
//! Linux's `/proc`.
//!
//! A pane's program (`pane_pid`, usually a shell) owns the terminal; the job it runs in the
//! foreground is the terminal's foreground process group, `tpgid` in `/proc/<pane_pid>/stat`.
//! Its leader is the foreground process. It waits for input when it is blocked in `read(2)` on
//! the pane's terminal: `/proc/<pid>/syscall` names the system call and its first argument
//! (the descriptor), and `/proc/<pid>/fd/<n>` says that descriptor is the pane's tty. That is
//! the strongest evidence for "waiting". The other: a shell that is its own foreground job (no
//! command running) and blocked in `poll`/`select` is reading its next command line (bash's
//! readline waits in `pselect`). Any other process blocked in `poll`/`select`/`epoll` (most
//! full-screen programs and agent CLIs) may be waiting for the terminal or for anything else,
//! so it is reported as unknown, never as waiting.
//!
//! A wrapper that does not `exec` its program (`sh -c 'agent --flag'` under dash, a launcher
//! script) leads the foreground group while it waits for the program; the process described is
//! then the one the wrapper waits for, its only child in the same group (followed down a few
//! levels through `/proc/<pid>/task/<pid>/children`).
//!
//! The decision ([`Blocked::classify`], [`parse_stat`], [`parse_syscall`]) is pure; [`read`]
//! does the file reads. Reading `syscall` needs the right to trace the process (same user and no
//! Yama restriction, or root); without it the answer is unknown.

use std::io::Read;
use std::path::Path;

use crate::shell::Shell;

/// The foreground process of a pane's terminal. Serializable: a host on another machine reads
/// it there and sends it over its link.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Foreground {
    /// The terminal's foreground process group: the pane's program's own (`pane_pid`) while
    /// no job of its runs in the foreground, even while it waits for a child of its group.
    pub group: u32,
    /// The process's id.
    pub pid: u32,
    /// It is the pane's program itself (no other job in the foreground).
    pub is_pane_program: bool,
    /// The pane's program's name (`bash`), from its `stat`.
    pub pane_program: String,
    /// Its command line, arguments joined with spaces.
    pub command_line: String,
    /// Whether it waits for input, and how.
    pub blocked: Blocked,
}

impl Foreground {
    /// `Some(true)` with evidence, `Some(false)` when it is plainly doing something else,
    /// `None` when it cannot be told.
    pub fn waiting_for_input(&self) -> Option<bool> {
        let idle_shell = self.is_pane_program && Shell::detect(&self.pane_program).is_some();
        match self.blocked {
            Blocked::ReadingTerminal => Some(true),
            Blocked::Polling if idle_shell => Some(true),
            Blocked::Running | Blocked::Sleeping | Blocked::WaitingForChild | Blocked::Reading => {
                Some(false)
            }
            Blocked::Polling | Blocked::Unknown => None,
        }
    }
}

/// Where a process is, as its `syscall` file tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Blocked {
    /// On a CPU, or runnable.
    Running,
    /// In `read` on the pane's terminal.
    ReadingTerminal,
    /// In `read` on something else (a pipe, a socket, a file).
    Reading,
    /// In `poll`, `select` or `epoll_wait`: on the terminal or not, it does not say.
    Polling,
    /// In a sleep.
    Sleeping,
    /// Waiting for a child process (a shell running a command).
    WaitingForChild,
    /// Anything else, or not readable.
    Unknown,
}

/// The system calls the decision needs, by number, for this architecture.
#[cfg(target_arch = "x86_64")]
mod nr {
    pub(super) const READ: &[i64] = &[0, 19]; // read, readv
    pub(super) const POLL: &[i64] = &[7, 23, 232, 270, 271, 281, 441]; // poll, select, epoll_wait, pselect6, ppoll, epoll_pwait, epoll_pwait2
    pub(super) const SLEEP: &[i64] = &[34, 35, 130, 230]; // pause, nanosleep, rt_sigsuspend, clock_nanosleep
    pub(super) const WAIT: &[i64] = &[61, 247]; // wait4, waitid
}
#[cfg(target_arch = "aarch64")]
mod nr {
    pub const READ: &[i64] = &[63, 65]; // read, readv
    pub const POLL: &[i64] = &[22, 72, 73, 441]; // epoll_pwait, pselect6, ppoll, epoll_pwait2
    pub const SLEEP: &[i64] = &[101, 115, 133]; // nanosleep, clock_nanosleep, rt_sigsuspend
    pub const WAIT: &[i64] = &[95, 260]; // waitid, wait4
}
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
mod nr {
    pub const READ: &[i64] = &[];
    pub const POLL: &[i64] = &[];
    pub const SLEEP: &[i64] = &[];
    pub const WAIT: &[i64] = &[];
}

/// A process's place as `/proc/<pid>/syscall` prints it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syscall {
    /// Running or runnable, in no system call.
    Running,
    /// Blocked in system call `nr` with first argument `arg0`.
    In {
        /// The system call's number.
        nr: i64,
        /// Its first argument (the file descriptor of a `read`).
        arg0: u64,
    },
    /// Blocked, not in a system call.
    Elsewhere,
}

/// Parses `/proc/<pid>/syscall`: `running`, `-1 <sp> <pc>`, or `<nr> <arg0> … <sp> <pc>`.
pub fn parse_syscall(text: &str) -> Option<Syscall> {
    let mut words = text.split_whitespace();
    let first = words.next()?;
    if first == "running" {
        return Some(Syscall::Running);
    }
    let nr: i64 = first.parse().ok()?;
    if nr < 0 {
        return Some(Syscall::Elsewhere);
    }
    let arg0 = words.next()?.strip_prefix("0x")?;
    Some(Syscall::In {
        nr,
        arg0: u64::from_str_radix(arg0, 16).ok()?,
    })
}

impl Blocked {
    /// Classifies `syscall`; `is_terminal(fd)` says whether the descriptor is the pane's tty.
    pub fn classify(syscall: Option<Syscall>, is_terminal: impl FnOnce(u64) -> bool) -> Self {
        match syscall {
            Some(Syscall::Running) => Self::Running,
            Some(Syscall::In { nr, arg0 }) if nr::READ.contains(&nr) => {
                if is_terminal(arg0) {
                    Self::ReadingTerminal
                } else {
                    Self::Reading
                }
            }
            Some(Syscall::In { nr, .. }) if nr::POLL.contains(&nr) => Self::Polling,
            Some(Syscall::In { nr, .. }) if nr::SLEEP.contains(&nr) => Self::Sleeping,
            Some(Syscall::In { nr, .. }) if nr::WAIT.contains(&nr) => Self::WaitingForChild,
            _ => Self::Unknown,
        }
    }
}

/// The fields of `/proc/<pid>/stat` used here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stat {
    /// The process's name (`comm`).
    pub name: String,
    /// Its parent's pid.
    pub ppid: u32,
    /// The process group.
    pub pgrp: u32,
    /// The foreground process group of its terminal.
    pub tpgid: u32,
}

/// Parses `/proc/<pid>/stat`. The name is in parentheses and may hold any bytes, so it ends at
/// the last `)`.
pub fn parse_stat(text: &str) -> Option<Stat> {
    let close = text.rfind(')')?;
    let name = text[..close].split_once('(')?.1.to_owned();
    let rest = &text[close + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state(0) ppid(1) pgrp(2) session(3) tty_nr(4) tpgid(5).
    let tpgid: i64 = fields.get(5)?.parse().ok()?;
    Some(Stat {
        name,
        ppid: fields.get(1)?.parse().ok()?,
        pgrp: fields.get(2)?.parse().ok()?,
        tpgid: u32::try_from(tpgid).ok()?,
    })
}

/// How many wrappers deep the foreground program is looked for.
const MAX_WRAPPERS: usize = 4;

/// How many of a process's children are looked at: a pane's program may have any number, and
/// each costs a read of `/proc`.
const MAX_CHILDREN_READ: usize = 64;

/// Most bytes of a `children` file read: [`MAX_CHILDREN_READ`] pids of up to 10 digits, each
/// with its space.
const MAX_CHILDREN_BYTES: u64 = MAX_CHILDREN_READ as u64 * 11;

/// Most bytes of a `/proc/<pid>/cmdline` read: a program makes its arguments as long as it
/// likes, and an answer shows one line of them.
const MAX_COMMAND_LINE_BYTES: u64 = 64 * 1024;

/// A `/proc/<pid>/cmdline` as one line: arguments joined with spaces, invalid UTF-8 replaced.
pub fn command_line(raw: &[u8]) -> String {
    raw.split(|&b| b == 0)
        .filter(|arg| !arg.is_empty())
        .map(String::from_utf8_lossy)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Reads the foreground process of the terminal whose session leader is `pane_pid`, a child of
/// the tmux server `server_pid`, on tty `tty`. `None` when `/proc` does not show that pane as
/// expected (another pid namespace, the pane's program gone): then nothing is said about it.
pub fn read(proc_root: &Path, server_pid: u32, pane_pid: u32, tty: &str) -> Option<Foreground> {
    let file = |pid: u32, name: &str| proc_root.join(pid.to_string()).join(name);
    let stat = parse_stat(&std::fs::read_to_string(file(pane_pid, "stat")).ok()?)?;
    // The pane's program is the tmux server's child: if /proc says otherwise, these pids are
    // not ours to read (another pid namespace), and reading on would describe another process.
    if stat.ppid != server_pid || stat.tpgid == 0 {
        return None;
    }
    let pane_program = stat.name;
    let group = stat.tpgid;
    // The group's leader may have exited (gone, or a zombie: no command line) while the rest
    // of its job runs on (`printf x | sleep 9`): a live member of the group tells what holds
    // the terminal. None at all means the job just ended and the shell has not taken its
    // terminal back yet: nothing is said.
    let leader = if group == pane_pid || is_live(proc_root, group) {
        group
    } else {
        child_in_group(proc_root, pane_pid, group)?
    };
    let blocked_of = |pid: u32| {
        let syscall = std::fs::read_to_string(file(pid, "syscall"))
            .ok()
            .and_then(|text| parse_syscall(&text));
        Blocked::classify(syscall, |fd| {
            std::fs::read_link(file(pid, "fd").join(fd.to_string()))
                .is_ok_and(|target| target == Path::new(tty))
        })
    };
    let mut pid = leader;
    let mut blocked = blocked_of(pid);
    for _ in 0..MAX_WRAPPERS {
        if blocked != Blocked::WaitingForChild {
            break;
        }
        let Some(child) = only_child_in_group(proc_root, pid, group) else {
            break;
        };
        pid = child;
        blocked = blocked_of(pid);
    }
    let command_line = read_head(&file(pid, "cmdline"), MAX_COMMAND_LINE_BYTES)
        .map(|raw| command_line(&raw))
        .unwrap_or_default();
    Some(Foreground {
        group,
        pid,
        is_pane_program: pid == pane_pid,
        pane_program,
        command_line,
        blocked,
    })
}

/// At most `limit` bytes from the start of `path`.
fn read_head(path: &Path, limit: u64) -> Option<Vec<u8>> {
    let mut head = Vec::new();
    std::fs::File::open(path)
        .ok()?
        .take(limit)
        .read_to_end(&mut head)
        .ok()?;
    Some(head)
}

/// The first [`MAX_CHILDREN_READ`] children of `pid`, from its main thread's `children` file.
fn children(proc_root: &Path, pid: u32) -> Option<Vec<u32>> {
    let path = proc_root
        .join(pid.to_string())
        .join("task")
        .join(pid.to_string())
        .join("children");
    let raw = read_head(&path, MAX_CHILDREN_BYTES)?;
    let mut pids: Vec<&str> = std::str::from_utf8(&raw).ok()?.split_whitespace().collect();
    if raw.len() as u64 == MAX_CHILDREN_BYTES {
        pids.pop(); // May be cut off mid-number.
    }
    Some(pids.iter().filter_map(|pid| pid.parse().ok()).collect())
}

/// Whether `pid` belongs to process group `group`.
fn in_group(proc_root: &Path, pid: u32, group: u32) -> bool {
    std::fs::read_to_string(proc_root.join(pid.to_string()).join("stat"))
        .ok()
        .and_then(|stat| parse_stat(&stat))
        .is_some_and(|stat| stat.pgrp == group)
}

/// Whether `pid` runs: it exists and has a command line (a zombie has none).
fn is_live(proc_root: &Path, pid: u32) -> bool {
    read_head(&proc_root.join(pid.to_string()).join("cmdline"), 1).is_some_and(|b| !b.is_empty())
}

/// A live child of `pid` in process group `group`.
fn child_in_group(proc_root: &Path, pid: u32, group: u32) -> Option<u32> {
    children(proc_root, pid)?
        .into_iter()
        .find(|&child| in_group(proc_root, child, group) && is_live(proc_root, child))
}

/// The only child of `pid`, if it belongs to process group `group`.
fn only_child_in_group(proc_root: &Path, pid: u32, group: u32) -> Option<u32> {
    let [child] = children(proc_root, pid)?[..] else {
        return None;
    };
    in_group(proc_root, child, group).then_some(child)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_syscall_lines() {
        assert_eq!(parse_syscall("running\n"), Some(Syscall::Running));
        assert_eq!(
            parse_syscall("0 0x0 0x7ffd 0x1 0x0 0x0 0x0 0x7ffc 0x7f12\n"),
            Some(Syscall::In { nr: 0, arg0: 0 })
        );
        assert_eq!(
            parse_syscall("61 0xffffffffffffffff 0x7ffd 0x2 0x0 0x0 0x0 0x7ffc 0x7f12"),
            Some(Syscall::In {
                nr: 61,
                arg0: u64::MAX
            })
        );
        assert_eq!(parse_syscall("-1 0x7ffc 0x7f12"), Some(Syscall::Elsewhere));
        assert_eq!(parse_syscall(""), None);
        assert_eq!(parse_syscall("x 0x0"), None);
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn only_a_read_on_the_terminal_is_waiting() {
        let read = |fd| Some(Syscall::In { nr: 0, arg0: fd });
        let reading = Blocked::classify(read(0), |fd| fd == 0);
        assert_eq!(reading, Blocked::ReadingTerminal);
        assert_eq!(Blocked::classify(read(3), |fd| fd == 0), Blocked::Reading);
        let polling = Blocked::classify(Some(Syscall::In { nr: 232, arg0: 4 }), |_| true);
        assert_eq!(polling, Blocked::Polling);
        let sleeping = Blocked::classify(Some(Syscall::In { nr: 230, arg0: 0 }), |_| true);
        assert_eq!(sleeping, Blocked::Sleeping);
        let child = Blocked::classify(Some(Syscall::In { nr: 61, arg0: 0 }), |_| true);
        assert_eq!(child, Blocked::WaitingForChild);
        assert_eq!(Blocked::classify(None, |_| true), Blocked::Unknown);
        let fg = |blocked, is_pane_program, program: &str| Foreground {
            group: 1,
            pid: 1,
            is_pane_program,
            pane_program: program.into(),
            command_line: String::new(),
            blocked,
        };
        let reading = fg(Blocked::ReadingTerminal, false, "bash");
        assert_eq!(reading.waiting_for_input(), Some(true));
        let child = fg(Blocked::WaitingForChild, true, "bash");
        assert_eq!(child.waiting_for_input(), Some(false));
        // Polling: waiting only for a shell with no job in the foreground.
        assert_eq!(
            fg(Blocked::Polling, false, "bash").waiting_for_input(),
            None
        );
        assert_eq!(fg(Blocked::Polling, true, "node").waiting_for_input(), None);
        assert_eq!(
            fg(Blocked::Polling, true, "bash").waiting_for_input(),
            Some(true)
        );
    }

    #[test]
    fn stat_names_may_hold_anything() {
        let stat = "4242 (a) b (c)) S 17 4241 4242 34816 4300 4194560 0 0";
        assert_eq!(
            parse_stat(stat),
            Some(Stat {
                name: "a) b (c)".into(),
                ppid: 17,
                pgrp: 4241,
                tpgid: 4300
            })
        );
        assert_eq!(parse_stat("1 (x) S"), None);
        assert_eq!(parse_stat("1 (x) S 0 1 1 0 -1 0"), None);
    }

    #[test]
    fn command_lines_are_joined() {
        assert_eq!(
            command_line(b"python3\0-c\0input()\0"),
            "python3 -c input()"
        );
        assert_eq!(command_line(b""), "");
    }

    /// A `/proc` with a tmux server (pid 10), its pane's shell (20, on /dev/pts/7) and the
    /// shell's foreground job (30), blocked as `syscall` says.
    fn fake_proc(syscall: &str, fd0: &str) -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        let dir = |pid: u32| {
            let dir = root.path().join(pid.to_string());
            std::fs::create_dir_all(dir.join("fd")).unwrap();
            dir
        };
        std::fs::write(dir(20).join("stat"), "20 (bash) S 10 20 20 34823 30 0").unwrap();
        let job = dir(30);
        std::fs::write(job.join("cmdline"), b"python3\0-q\0").unwrap();
        std::fs::write(job.join("syscall"), syscall).unwrap();
        std::os::unix::fs::symlink(fd0, job.join("fd").join("0")).unwrap();
        root
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn reads_the_foreground_job_and_its_wait() {
        let root = fake_proc("0 0x0 0x55 0x1 0x0 0x0 0x0 0x7ffc 0x7f12\n", "/dev/pts/7");
        let fg = read(root.path(), 10, 20, "/dev/pts/7").unwrap();
        assert_eq!(fg.pid, 30);
        assert_eq!(fg.command_line, "python3 -q");
        assert!(!fg.is_pane_program);
        assert_eq!(fg.pane_program, "bash");
        assert_eq!(fg.waiting_for_input(), Some(true));
        // The same read on another terminal is not waiting for this pane.
        let other = fake_proc("0 0x0 0x55 0x1 0x0 0x0 0x0 0x7ffc 0x7f12\n", "/dev/pts/8");
        let fg = read(other.path(), 10, 20, "/dev/pts/7").unwrap();
        assert_eq!(fg.blocked, Blocked::Reading);
        assert_eq!(fg.waiting_for_input(), Some(false));
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn a_wrapper_waiting_for_its_program_is_looked_through() {
        // Job 30 is `sh -c 'python3 -q'`, waiting for its only child 31 in its group.
        let root = fake_proc(
            "61 0xffffffffffffffff 0x7ffd 0x2 0x0 0x0 0x0 0x7ffc\n",
            "/dev/pts/7",
        );
        let at = |pid: u32| root.path().join(pid.to_string());
        let task = at(30).join("task").join("30");
        std::fs::create_dir_all(&task).unwrap();
        std::fs::write(task.join("children"), "31 ").unwrap();
        std::fs::create_dir_all(at(31).join("fd")).unwrap();
        std::fs::write(at(31).join("stat"), "31 (python3) S 30 30 20 34823 30 0").unwrap();
        std::fs::write(at(31).join("cmdline"), b"python3\0-q\0").unwrap();
        std::fs::write(
            at(31).join("syscall"),
            "0 0x0 0x55 0x1 0x0 0x0 0x0 0x7ffc\n",
        )
        .unwrap();
        std::os::unix::fs::symlink("/dev/pts/7", at(31).join("fd").join("0")).unwrap();
        let fg = read(root.path(), 10, 20, "/dev/pts/7").unwrap();
        assert_eq!((fg.pid, fg.blocked), (31, Blocked::ReadingTerminal));
        assert_eq!(fg.waiting_for_input(), Some(true));
        // A child in a group of its own (a background job) is not the foreground program.
        std::fs::write(at(31).join("stat"), "31 (python3) S 30 31 20 34823 30 0").unwrap();
        let fg = read(root.path(), 10, 20, "/dev/pts/7").unwrap();
        assert_eq!((fg.pid, fg.blocked), (30, Blocked::WaitingForChild));
        // Two children: which one reads is not known.
        std::fs::write(at(31).join("stat"), "31 (python3) S 30 30 20 34823 30 0").unwrap();
        std::fs::write(task.join("children"), "31 32").unwrap();
        let fg = read(root.path(), 10, 20, "/dev/pts/7").unwrap();
        assert_eq!(fg.pid, 30);
    }

    #[test]
    fn what_a_process_writes_is_read_only_as_far_as_it_is_needed() {
        let root = tempfile::tempdir().unwrap();
        let task = root.path().join("20").join("task").join("20");
        std::fs::create_dir_all(&task).unwrap();
        // A thousand children: only whole pids among the first bytes are read.
        let many: Vec<String> = (1_000_000_000u32..1_000_001_000)
            .map(|p| p.to_string())
            .collect();
        std::fs::write(task.join("children"), many.join(" ")).unwrap();
        let read = children(root.path(), 20).unwrap();
        assert_eq!(read.len(), MAX_CHILDREN_READ - 1);
        assert_eq!(read[0], 1_000_000_000);
        assert_eq!(read.last(), Some(&1_000_000_062));
        // A command line of megabytes is read up to the bound.
        let long = root.path().join("cmdline");
        std::fs::write(&long, vec![b'x'; 3 << 20]).unwrap();
        let head = read_head(&long, MAX_COMMAND_LINE_BYTES).unwrap();
        assert_eq!(head.len() as u64, MAX_COMMAND_LINE_BYTES);
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn a_job_whose_leader_exited_is_told_by_a_live_member_or_not_at_all() {
        let root = fake_proc("0 0x0 0x55 0x1 0x0 0x0 0x0 0x7ffc 0x7f12\n", "/dev/pts/7");
        let at = |pid: u32| root.path().join(pid.to_string());
        // `printf x | python3 -q`: the leader 30 has exited, 31 of its group runs on.
        std::fs::rename(at(30), at(31)).unwrap();
        std::fs::write(at(31).join("stat"), "31 (python3) S 20 30 20 34823 30 0").unwrap();
        let task = at(20).join("task").join("20");
        std::fs::create_dir_all(&task).unwrap();
        std::fs::write(task.join("children"), "31").unwrap();
        let fg = read(root.path(), 10, 20, "/dev/pts/7").unwrap();
        assert_eq!((fg.group, fg.pid), (30, 31));
        assert_eq!(fg.command_line, "python3 -q");
        assert_eq!(fg.waiting_for_input(), Some(true));
        // The whole job has ended, and the shell has not taken its terminal back yet.
        std::fs::write(task.join("children"), "").unwrap();
        assert_eq!(read(root.path(), 10, 20, "/dev/pts/7"), None);
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn a_shell_running_its_startup_file_still_holds_its_terminal() {
        // Before job control, a shell's startup file runs its commands in the shell's own
        // group: the terminal's group is the shell's (20) while the shell waits for its child
        // 21 (`pyenv rehash`), which is then the process described.
        let root = fake_proc("running\n", "/dev/pts/7");
        let at = |pid: u32| root.path().join(pid.to_string());
        std::fs::write(at(20).join("stat"), "20 (bash) S 10 20 20 34823 20 0").unwrap();
        std::fs::create_dir_all(at(20).join("fd")).unwrap();
        std::fs::write(
            at(20).join("syscall"),
            "61 0xffffffffffffffff 0x7ffd 0x2 0x0 0x0 0x0 0x7ffc\n",
        )
        .unwrap();
        let task = at(20).join("task").join("20");
        std::fs::create_dir_all(&task).unwrap();
        std::fs::write(task.join("children"), "21").unwrap();
        std::fs::create_dir_all(at(21).join("fd")).unwrap();
        std::fs::write(at(21).join("stat"), "21 (bash) S 20 20 20 34823 20 0").unwrap();
        std::fs::write(at(21).join("cmdline"), b"bash\0pyenv-rehash\0").unwrap();
        std::fs::write(at(21).join("syscall"), "running\n").unwrap();
        let fg = read(root.path(), 10, 20, "/dev/pts/7").unwrap();
        assert_eq!((fg.group, fg.pid), (20, 21));
        assert!(!fg.is_pane_program, "the job described is the child");
        assert_eq!(fg.command_line, "bash pyenv-rehash");
    }

    #[test]
    fn a_pane_whose_parent_is_not_the_server_is_not_read() {
        let root = fake_proc("running\n", "/dev/pts/7");
        // Another namespace's pid 20 is some other process: its parent is not our server.
        assert_eq!(read(root.path(), 11, 20, "/dev/pts/7"), None);
        assert_eq!(read(root.path(), 10, 21, "/dev/pts/7"), None);
        let fg = read(root.path(), 10, 20, "/dev/pts/7").unwrap();
        assert_eq!(fg.blocked, Blocked::Running);
        assert_eq!(fg.waiting_for_input(), Some(false));
    }
}
