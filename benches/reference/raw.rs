//! The physical limit for the throughput case: a bare `tmux -C` client with every command
//! written at once by one thread while another reads the replies, on the same tmux server the
//! gateway drives. No control-mode client can send commands faster than this.

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::fixture::tmux_command;

/// Sends `ops` copies of `command` through a fresh control client, pipelined, and returns the
/// time from the first write to the last reply.
pub(crate) fn pipelined(socket: &str, command: &str, ops: usize) -> Result<Duration> {
    let mut child = tmux_command(socket)
        .args(["-C", "attach-session", "-f", "no-output"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .context("spawn tmux -C")?;
    let result = (|| {
        let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            bail!("tmux -C has no pipes");
        };
        let mut stdout = BufReader::new(stdout);
        let mut line = Vec::new();
        stdin
            .write_all(b"display-message -p ready\n")
            .context("write to tmux -C")?;
        read_replies(&mut stdout, &mut line, 1)?;

        let mut lines = Vec::with_capacity(ops * (command.len() + 1));
        for _ in 0..ops {
            lines.extend_from_slice(command.as_bytes());
            lines.push(b'\n');
        }
        let start = Instant::now();
        std::thread::scope(|scope| {
            let writer = scope.spawn(move || stdin.write_all(&lines));
            read_replies(&mut stdout, &mut line, ops)?;
            match writer.join() {
                Ok(written) => written.context("write to tmux -C"),
                Err(_) => bail!("the writer thread panicked"),
            }
        })?;
        Ok(start.elapsed())
    })();
    let _ = child.kill();
    let _ = child.wait();
    result
}

/// Reads until `count` replies to our commands (blocks with flags 1) have ended.
fn read_replies(stdout: &mut impl BufRead, line: &mut Vec<u8>, count: usize) -> Result<()> {
    let mut ended = 0;
    while ended < count {
        line.clear();
        if stdout
            .read_until(b'\n', line)
            .context("read from tmux -C")?
            == 0
        {
            bail!("tmux -C exited after {ended} of {count} replies");
        }
        let ours = line.ends_with(b" 1\n");
        if ours && line.starts_with(b"%end ") {
            ended += 1;
        } else if ours && line.starts_with(b"%error ") {
            bail!("tmux refused a command");
        }
    }
    Ok(())
}
