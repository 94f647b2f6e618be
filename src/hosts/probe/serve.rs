//! `muxgate host-probe`: the host's end of the probe channel. It answers each question line
//! (see [`super::wire`]) from this machine's `/proc` and terminals, in order, until its input
//! ends: the gateway keeps one running per host, as a channel of the host's SSH connection.
//! It reads and changes nothing else.

use std::io::{self, BufRead, Read, Write};
use std::path::Path;

use muxgate_mux::{foreground, tty_modes};

use super::wire::{self, Question};

/// Answers every question on `input` to `output` until `input` ends. A line longer than any
/// question is an error: nothing the gateway sends.
pub(crate) fn serve(mut input: impl BufRead, mut output: impl Write) -> io::Result<()> {
    let mut line = Vec::with_capacity(wire::QUESTION_BYTES);
    loop {
        line.clear();
        let limit = u64::try_from(wire::QUESTION_BYTES).unwrap_or(u64::MAX);
        if (&mut input).take(limit).read_until(b'\n', &mut line)? == 0 {
            return Ok(());
        }
        let Some(question) = line.strip_suffix(b"\n") else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "a question longer than any the gateway asks",
            ));
        };
        let answer = match std::str::from_utf8(question).ok().and_then(Question::parse) {
            Some(Question::Foreground {
                server_pid,
                pane_pid,
                tty,
            }) => wire::foreground_answer(foreground::read(
                Path::new("/proc"),
                server_pid,
                pane_pid,
                &tty,
            )),
            Some(Question::Modes { tty }) => wire::modes_answer(tty_modes::modes(Path::new(&tty))),
            None => "null".to_owned(),
        };
        writeln!(output, "{answer}")?;
        output.flush()?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use muxgate_mux::tty_modes::TermModes;

    /// The answers `serve` gives to `questions`, one per line.
    fn answers(questions: &str) -> Vec<String> {
        let mut output = Vec::new();
        serve(questions.as_bytes(), &mut output).expect("served");
        String::from_utf8(output)
            .expect("UTF-8")
            .lines()
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn a_terminal_is_described_and_anything_else_is_unknown() {
        // SAFETY: plain libc calls on a descriptor this test owns; `ptsname` returns a
        // NUL-terminated path in a static buffer, copied at once.
        let (leader, tty) = unsafe {
            let leader = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY);
            assert!(leader >= 0, "posix_openpt");
            assert_eq!(libc::grantpt(leader), 0);
            assert_eq!(libc::unlockpt(leader), 0);
            let name = std::ffi::CStr::from_ptr(libc::ptsname(leader));
            (leader, name.to_string_lossy().into_owned())
        };
        let said = answers(&format!(
            "modes {tty}\nmodes /dev/null\nforeground 1 {} {tty}\nrm -rf /\n",
            u32::MAX
        ));
        // SAFETY: the descriptor opened above, closed once.
        unsafe { libc::close(leader) };
        let modes: TermModes = wire::read_answer(said[0].as_bytes()).expect("modes");
        assert!(modes.echo && modes.canonical, "a fresh terminal: {modes:?}");
        assert_eq!(&said[1..], ["null", "null", "null"]);
    }

    #[test]
    fn a_line_longer_than_a_question_ends_the_probe() {
        let long = format!("modes /dev/{}\n", "x".repeat(wire::QUESTION_BYTES));
        let mut output = Vec::new();
        let error = serve(long.as_bytes(), &mut output).expect_err("refused");
        assert_eq!(error.kind(), io::ErrorKind::InvalidData);
        assert!(output.is_empty());
    }
}
