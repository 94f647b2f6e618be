//! The command ledger: a pane's commands as records, built from the shell-integration marks in
//! its output stream ([`marks`]).
//!
//! A shell that prints OSC 133 marks tells where each prompt, typed command and output begins
//! and how each command ended. The [`Ledger`] turns those marks, in stream order, into
//! [`CommandRecord`]s: the command line, the working directory (OSC 7), when it started and
//! ended, its exit status, and the stream offsets of its output (so its output can be read
//! back exactly while the stream still holds it). It also knows whether the shell sits at its
//! prompt.
//!
//! `run_command`'s own markers (`133;C;muxgate=<id>` … `133;D;<status>;muxgate=<id>`) make
//! records too, so commands run through the gateway are listed in shells without integration;
//! in an integrated shell the run refines the record the shell opened (its output starts after
//! the run's own marker, its command line is the one the caller asked for). A run typed into
//! an integrated shell at its prompt carries no markers: it names the next record instead
//! ([`Ledger::name_next`]) and reads its end and status from the shell's own marks.
//!
//! Rules for imperfect streams: when the first mark of a stream starts a command, the stream
//! began at its prompt and what came before is the command line's echo; a command still open when the next prompt or command starts is
//! closed there without a status (a shell that sends no `D`); a `D` with no open command is
//! ignored (the shell's own `D` after a run already closed by its marker). The ledger keeps the
//! last records, as many as [`Ledger::new`] was given.
//!
//! Pure: no I/O, no clock (callers pass the time of the output).

pub mod marks;

use std::collections::VecDeque;
use std::ops::Range;
use std::time::SystemTime;

use marks::{Mark, MarkKind};

/// How many run ids waiting for their command line are remembered.
const MAX_NAMED_RUNS: usize = 16;

/// One command the shell ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandRecord {
    /// Number of the record in its pane, from 1.
    pub id: u64,
    /// The command line: as the shell or `run_command` sent it, else as echoed when typed.
    pub command: Option<String>,
    /// The shell's working directory when the command started (from OSC 7).
    pub cwd: Option<String>,
    /// When it started (its `133;C` mark).
    pub started: SystemTime,
    /// When it ended (its `133;D` mark), once it has.
    pub ended: Option<SystemTime>,
    /// Its exit status, when the shell reported one.
    pub exit_status: Option<i32>,
    /// Stream offset of its first output byte.
    pub output_from: u64,
    /// Stream offset just past its last output byte, once it ended.
    pub output_to: Option<u64>,
    /// The `run_command` run that typed it.
    pub run: Option<String>,
}

impl CommandRecord {
    /// Whether the command has ended.
    pub fn finished(&self) -> bool {
        self.ended.is_some()
    }
}

/// Where the shell is, as far as its marks tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ShellPhase {
    /// No mark seen yet, or a command ended and no prompt followed yet.
    Unknown,
    /// Printing its prompt (`A` seen).
    Prompt,
    /// Waiting for a command line (`B` seen): typed input starts at this offset.
    Input { from: u64 },
    /// A command runs.
    Running,
}

/// A pane's command records. See the module docs.
#[derive(Debug, Clone)]
pub struct Ledger {
    records: VecDeque<CommandRecord>,
    capacity: usize,
    next_id: u64,
    phase: ShellPhase,
    cwd: Option<String>,
    /// Command lines of `run_command` runs, by run id, until their start marker arrives.
    named_runs: VecDeque<(String, String)>,
    /// A prompt mark (`A` or `B`) or a command mark of the shell's own was seen: the shell
    /// itself is integrated.
    integrated: bool,
    /// The id the next record will get, and the command line it will carry.
    next_name: Option<(u64, String)>,
}

impl Ledger {
    /// A ledger keeping the last `capacity` records (at least 1).
    pub fn new(capacity: usize) -> Self {
        Self {
            records: VecDeque::new(),
            capacity: capacity.max(1),
            next_id: 1,
            phase: ShellPhase::Unknown,
            cwd: None,
            named_runs: VecDeque::new(),
            integrated: false,
            next_name: None,
        }
    }

    /// The output from stream offset `at` (at time `now`) was never seen: the connection that
    /// carried it was lost. The records stay; one still open is closed there without a status
    /// (whatever ended it went unseen, and the next end seen may be another command's), where
    /// the shell is is forgotten, and so is a name given to the next command.
    pub fn lost_sight(&mut self, at: u64, now: SystemTime) {
        self.close_open(at, now, None);
        self.phase = ShellPhase::Unknown;
        self.next_name = None;
    }

    /// The records kept, oldest first.
    pub fn records(&self) -> impl DoubleEndedIterator<Item = &CommandRecord> {
        self.records.iter()
    }

    /// The record with `id`, if the ledger still keeps it.
    pub fn record(&self, id: u64) -> Option<&CommandRecord> {
        self.records.iter().find(|r| r.id == id)
    }

    /// Whether the shell waits at its prompt (its prompt was printed and no command started).
    pub fn at_prompt(&self) -> bool {
        matches!(self.phase, ShellPhase::Prompt | ShellPhase::Input { .. })
    }

    /// The last working directory the shell reported.
    pub fn cwd(&self) -> Option<&str> {
        self.cwd.as_deref()
    }

    /// Whether the shell marks its prompts or commands (OSC 133 `A`/`B`, or a `C` without a
    /// run id): then every command it runs is recorded, not only `run_command`'s.
    pub fn shell_integrated(&self) -> bool {
        self.integrated
    }

    /// Remembers the command line of a `run_command` run about to be typed, for its record.
    pub fn name_run(&mut self, run: &str, command: &str) {
        if self.named_runs.len() == MAX_NAMED_RUNS {
            self.named_runs.pop_front();
        }
        self.named_runs
            .push_back((run.to_owned(), command.to_owned()));
    }

    /// Names the next record the shell opens `command` (a run about to be typed without
    /// markers) and returns the id it will have. The name is dropped when a record with another
    /// id opens first, or by [`Self::forget_name`].
    pub fn name_next(&mut self, command: &str) -> u64 {
        self.next_name = Some((self.next_id, command.to_owned()));
        self.next_id
    }

    /// Drops the name [`Self::name_next`] gave `id`, if no record took it (a run that never
    /// started must not name a later command).
    pub fn forget_name(&mut self, id: u64) {
        if self
            .next_name
            .as_ref()
            .is_some_and(|(named, _)| *named == id)
        {
            self.next_name = None;
        }
    }

    /// Applies one mark seen at time `now`. `typed` returns the visible text of a stream range
    /// (the echo of a typed command line), if the stream still holds it.
    pub fn apply(
        &mut self,
        mark: Mark,
        now: SystemTime,
        typed: impl FnOnce(Range<u64>) -> Option<String>,
    ) {
        match mark.kind {
            MarkKind::PromptStart => {
                self.integrated = true;
                self.close_open(mark.start, now, None);
                self.phase = ShellPhase::Prompt;
            }
            MarkKind::InputStart => {
                self.integrated = true;
                self.close_open(mark.start, now, None);
                self.phase = ShellPhase::Input { from: mark.end };
            }
            MarkKind::OutputStart { command, run } => {
                self.output_start(mark.start..mark.end, command, run, now, typed)
            }
            MarkKind::CommandEnd { status, run } => {
                let Some(open) = self.open_mut() else { return };
                if run.is_some() && open.run.is_some() && open.run != run {
                    // Another run's marker (one typed inside this one): not this command's end.
                    return;
                }
                self.close_open(mark.start, now, status);
                self.phase = ShellPhase::Unknown;
            }
            MarkKind::Cwd(path) => self.cwd = Some(path),
        }
    }

    /// A command starts running; `mark` is where its `C` sequence is in the stream.
    fn output_start(
        &mut self,
        mark: Range<u64>,
        command: Option<String>,
        run: Option<String>,
        now: SystemTime,
        typed: impl FnOnce(Range<u64>) -> Option<String>,
    ) {
        let named = run.as_deref().and_then(|id| self.take_named(id));
        if let Some(open) = self.open_mut() {
            if run.is_some() && open.run.is_none() {
                // A run typed into an integrated shell: the shell's record is this run.
                open.run = run;
                open.output_from = mark.end;
                if named.is_some() {
                    open.command = named;
                }
                return;
            }
            self.close_open(mark.start, now, None);
        }
        // The first mark of a stream being a `C` means recording began at the prompt: what
        // came before it is the echo of this command line.
        let phase = match self.phase {
            ShellPhase::Unknown if self.next_id == 1 && !self.integrated => {
                ShellPhase::Input { from: 0 }
            }
            phase => phase,
        };
        let next_name = self
            .next_name
            .take()
            .filter(|(id, _)| *id == self.next_id)
            .map(|(_, command)| command);
        let command = next_name.or(command).or(named).or_else(|| match phase {
            ShellPhase::Input { from } if from <= mark.start => typed(from..mark.start)
                .map(|text| text.trim().to_owned())
                .filter(|text| !text.is_empty()),
            _ => None,
        });
        // A `C` of the shell's own (no run id) shows it marks its commands, as much as an `A`
        // does: recording may have begun after the prompt was drawn.
        self.integrated |= run.is_none();
        if self.records.len() == self.capacity {
            self.records.pop_front();
        }
        self.records.push_back(CommandRecord {
            id: self.next_id,
            command,
            cwd: self.cwd.clone(),
            started: now,
            ended: None,
            exit_status: None,
            output_from: mark.end,
            output_to: None,
            run,
        });
        self.next_id += 1;
        self.phase = ShellPhase::Running;
    }

    fn take_named(&mut self, run: &str) -> Option<String> {
        let at = self.named_runs.iter().position(|(id, _)| id == run)?;
        self.named_runs.remove(at).map(|(_, command)| command)
    }

    fn open_mut(&mut self) -> Option<&mut CommandRecord> {
        self.records.back_mut().filter(|r| !r.finished())
    }

    fn close_open(&mut self, at: u64, now: SystemTime, status: Option<i32>) {
        if let Some(open) = self.open_mut() {
            open.ended = Some(now);
            open.output_to = Some(at.max(open.output_from));
            open.exit_status = status;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::marks::MarkScanner;
    use super::*;

    /// Feeds `chunks` (one second apart) through a scanner into a ledger; typed text is the
    /// stream's bytes in the range, as text.
    fn ledger_of(chunks: &[&[u8]]) -> (Ledger, Vec<u8>) {
        let mut ledger = Ledger::new(3);
        let mut scanner = MarkScanner::new();
        let mut stream = Vec::new();
        for (second, chunk) in chunks.iter().enumerate() {
            let base = stream.len() as u64;
            stream.extend_from_slice(chunk);
            let mut marks = Vec::new();
            scanner.feed(chunk, base, &mut marks);
            let now = SystemTime::UNIX_EPOCH + Duration::from_secs(second as u64);
            for mark in marks {
                ledger.apply(mark, now, |range| {
                    let bytes = &stream[range.start as usize..range.end as usize];
                    Some(String::from_utf8_lossy(bytes).into_owned())
                });
            }
        }
        (ledger, stream)
    }

    #[test]
    fn a_command_open_when_sight_was_lost_ends_there_without_a_status() {
        let (mut ledger, stream) =
            ledger_of(&[b"\x1b]133;A\x07$ \x1b]133;B\x07make\r\n\x1b]133;C\x07building"]);
        ledger.name_next("ls");
        let at = stream.len() as u64;
        ledger.lost_sight(at, SystemTime::UNIX_EPOCH + Duration::from_secs(9));
        let record = ledger.records().next_back().expect("make's record");
        assert_eq!(record.command.as_deref(), Some("make"));
        assert_eq!((record.exit_status, record.output_to), (None, Some(at)));
        assert!(
            record.finished(),
            "the next end seen may be another command's"
        );
        assert!(!ledger.at_prompt());
        assert!(ledger.next_name.is_none());
    }

    fn output(stream: &[u8], record: &CommandRecord) -> String {
        let to = record.output_to.unwrap_or(stream.len() as u64);
        String::from_utf8_lossy(&stream[record.output_from as usize..to as usize]).into_owned()
    }

    #[test]
    fn an_integrated_shell_makes_one_record_per_command() {
        let (ledger, stream) = ledger_of(&[
            b"\x1b]7;file://h/home/u\x07\x1b]133;A\x07$ \x1b]133;B\x07",
            b"false\r\n\x1b]133;C\x07",
            b"out\r\n\x1b]133;D;1\x07\x1b]133;A\x07$ \x1b]133;B\x07",
        ]);
        let records: Vec<_> = ledger.records().collect();
        assert_eq!(records.len(), 1);
        let r = records[0];
        assert_eq!(r.command.as_deref(), Some("false"));
        assert_eq!(r.cwd.as_deref(), Some("/home/u"));
        assert_eq!(r.exit_status, Some(1));
        assert_eq!(r.started, SystemTime::UNIX_EPOCH + Duration::from_secs(1));
        assert_eq!(
            r.ended,
            Some(SystemTime::UNIX_EPOCH + Duration::from_secs(2))
        );
        assert_eq!(output(&stream, r), "out\r\n");
        assert!(ledger.at_prompt());
        assert!(ledger.shell_integrated());
    }

    #[test]
    fn a_stream_begun_at_the_prompt_reads_the_first_command_from_its_start() {
        let (ledger, _) = ledger_of(&[b"ls -l\r\n\x1b]133;C\x07x\r\n\x1b]133;D;0\x07"]);
        let first = ledger.records().next().and_then(|r| r.command.clone());
        assert_eq!(first.as_deref(), Some("ls -l"));
    }

    #[test]
    fn a_run_inside_an_integrated_shell_refines_its_record() {
        let mut ledger = Ledger::new(3);
        ledger.name_run("00ab", "echo hi");
        let mut scanner = MarkScanner::new();
        let data: &[u8] = b"\x1b]133;B\x07 (wrapper)\r\n\x1b]133;C\x07\x1b]133;C;muxgate=00ab\x07hi\r\n\x1b]133;D;0;muxgate=00ab\x07\x1b]133;D;0\x07\x1b]133;A\x07";
        let mut marks = Vec::new();
        scanner.feed(data, 0, &mut marks);
        for mark in marks {
            ledger.apply(mark, SystemTime::UNIX_EPOCH, |_| Some("(wrapper)".into()));
        }
        let records: Vec<_> = ledger.records().collect();
        assert_eq!(records.len(), 1, "{records:?}");
        assert_eq!(records[0].command.as_deref(), Some("echo hi"));
        assert_eq!(records[0].run.as_deref(), Some("00ab"));
        assert_eq!(records[0].exit_status, Some(0));
        assert_eq!(output(data, records[0]), "hi\r\n");
    }

    #[test]
    fn a_run_without_markers_names_the_next_record_only() {
        let mut ledger = Ledger::new(3);
        let apply = |ledger: &mut Ledger, data: &[u8]| {
            let mut marks = Vec::new();
            MarkScanner::new().feed(data, 0, &mut marks);
            for mark in marks {
                ledger.apply(mark, SystemTime::UNIX_EPOCH, |_| Some("(eval x)".into()));
            }
        };
        let id = ledger.name_next("make all");
        apply(
            &mut ledger,
            b"\x1b]133;B\x07(eval x)\r\n\x1b]133;C\x07\x1b]133;D;2\x07",
        );
        let first = ledger.record(id).cloned();
        assert_eq!(
            first.as_ref().and_then(|r| r.command.as_deref()),
            Some("make all")
        );
        assert_eq!(first.and_then(|r| r.exit_status), Some(2));
        // Used once: the next command is read as typed.
        apply(&mut ledger, b"\x1b]133;B\x07(eval x)\r\n\x1b]133;C\x07");
        assert_eq!(
            ledger.record(id + 1).and_then(|r| r.command.as_deref()),
            Some("(eval x)")
        );

        // A name forgotten (its run never started) names nothing.
        let mut ledger = Ledger::new(3);
        let id = ledger.name_next("never ran");
        ledger.forget_name(id);
        apply(&mut ledger, b"\x1b]133;C;cmdline_url=ls\x07");
        assert_eq!(
            ledger.record(id).and_then(|r| r.command.as_deref()),
            Some("ls")
        );
    }

    #[test]
    fn a_shell_marked_command_seen_before_any_prompt_shows_integration() {
        let (ledger, _) = ledger_of(&[b"true\r\n\x1b]133;C\x07", b"\x1b]133;D;0\x07"]);
        let r = ledger.records().next().cloned();
        assert_eq!(r.as_ref().and_then(|r| r.command.as_deref()), Some("true"));
        assert_eq!(r.and_then(|r| r.exit_status), Some(0));
        assert!(ledger.shell_integrated());
        assert!(!ledger.at_prompt());
    }

    #[test]
    fn runs_make_records_without_integration() {
        let mut ledger = Ledger::new(3);
        ledger.name_run("0001", "make");
        let mut marks = Vec::new();
        MarkScanner::new().feed(
            b"\x1b]133;C;muxgate=0001\x07x\x1b]133;D;2;muxgate=0001\x07",
            0,
            &mut marks,
        );
        for mark in marks {
            ledger.apply(mark, SystemTime::UNIX_EPOCH, |_| None);
        }
        let r = ledger.records().next().cloned();
        assert_eq!(r.as_ref().and_then(|r| r.command.as_deref()), Some("make"));
        assert_eq!(r.and_then(|r| r.exit_status), Some(2));
        assert!(!ledger.at_prompt());
        assert!(!ledger.shell_integrated());
    }

    #[test]
    fn a_shell_without_d_closes_commands_at_the_next_prompt_and_old_records_go() {
        let (ledger, _) = ledger_of(&[
            b"\x1b]133;B\x07a\r\n\x1b]133;C\x07",
            b"\x1b]133;A\x07\x1b]133;B\x07b\r\n\x1b]133;C\x07",
            b"\x1b]133;B\x07c\r\n\x1b]133;C\x07\x1b]133;D;0\x07",
            b"\x1b]133;B\x07d\r\n\x1b]133;C\x07\x1b]133;D;0\x07\x1b]133;D;9\x07",
        ]);
        let records: Vec<_> = ledger.records().collect();
        let ids: Vec<u64> = records.iter().map(|r| r.id).collect();
        assert_eq!(ids, [2, 3, 4]);
        assert_eq!(records[0].command.as_deref(), Some("b"));
        assert_eq!(records[0].exit_status, None);
        assert!(records[0].finished());
        // The stray D after d's own is ignored.
        assert_eq!(records[2].exit_status, Some(0));
        assert!(ledger.record(1).is_none());
    }
}
