//! What the gateway sets up in the forked child of a program it starts, before exec: none of
//! the gateway's inherited descriptors (every program), and the default disposition of every
//! signal (Zellij's, whose server passes its own on to its panes).
//!
//! Both close holes the gateway's own start can open. A descriptor inherited without
//! close-on-exec (from a service manager, a container runtime, a test harness) would reach
//! every program started, and through a multiplexer server every tenant. A signal ignored by
//! whoever started the gateway (`nohup` ignores `SIGHUP`; a non-interactive shell's `cmd &`
//! ignores `SIGINT` and `SIGQUIT`) stays ignored across exec: a Zellij server started so
//! hands it to every pane, and Ctrl-C then interrupts nothing. (tmux resets its panes' signals
//! itself.) Those functions are for `pre_exec` closures: only async-signal-safe calls, no
//! allocation.
//!
//! A child's output is read within a bound ([`read_tail`], [`bounded_output`]): the program may
//! run another tenant's code or on another machine, and nothing it writes is kept beyond the
//! last bytes that say how it ended.

/// Marks every descriptor above standard error close-on-exec, so that a child gets only its
/// standard streams: a descriptor the gateway inherited without the flag (from a service
/// manager, a container runtime, a test harness) would otherwise reach every program it
/// starts, and through a workspace's tmux server every tenant. For `pre_exec` closures: only
/// async-signal-safe calls, no allocation.
pub fn mark_inherited_fds_cloexec() -> std::io::Result<()> {
    // SAFETY: close_range(2) with the CLOEXEC flag closes nothing and touches no memory.
    let marked = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            3u32,
            u32::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        )
    };
    if marked == 0 {
        return Ok(());
    }
    // Kernels before 5.11: one descriptor at a time, up to the open-files limit.
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit(2) writes into the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let top = libc::c_int::try_from(limit.rlim_cur.min(1 << 20)).unwrap_or(1 << 20);
    for fd in 3..top {
        // SAFETY: fcntl(2) on a descriptor number; an unused one fails with EBADF, ignored.
        unsafe {
            libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
        }
    }
    Ok(())
}

/// Has the kernel kill the child with `SIGKILL` when `parent` (the gateway, as `getpid` told
/// it before the fork) dies, so no child outlives the gateway. The signal follows the *thread*
/// that forked: children are started from long-lived runtime threads, never from
/// `spawn_blocking`. Call it after any change of credentials, which clears it.
pub fn die_with_parent(parent: libc::pid_t) -> std::io::Result<()> {
    // SAFETY: prctl(2) and getppid(2) on integers; async-signal-safe, no memory touched.
    unsafe {
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // The parent may have died between fork and prctl; then no signal would ever come.
        if libc::getppid() != parent {
            return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
        }
    }
    Ok(())
}

/// Sets every catchable signal's disposition to the default, so an ignored one is not
/// inherited across exec (the signal mask is reset by the standard library's spawn).
pub fn restore_default_signals() -> std::io::Result<()> {
    for signal in 1..libc::SIGRTMAX() {
        if signal == libc::SIGKILL || signal == libc::SIGSTOP {
            continue;
        }
        // SAFETY: signal(2) with SIG_DFL is async-signal-safe and touches no memory; numbers
        // the kernel does not accept (glibc's reserved real-time ones) fail, ignored.
        unsafe {
            libc::signal(signal, libc::SIG_DFL);
        }
    }
    Ok(())
}

/// The last `limit` bytes `pipe` gave before it closed.
pub async fn read_tail(mut pipe: impl tokio::io::AsyncRead + Unpin, limit: usize) -> Vec<u8> {
    use tokio::io::AsyncReadExt;
    let mut kept = Vec::new();
    let mut chunk = [0u8; 4096];
    while let Ok(n) = pipe.read(&mut chunk).await {
        if n == 0 {
            break;
        }
        kept.extend_from_slice(&chunk[..n]);
        if kept.len() > limit {
            kept.drain(..kept.len() - limit);
        }
    }
    kept
}

/// How `child` ended, and the last `limit` bytes of its standard output and error (what
/// `Command::output` gives, bounded). Its standard input is left as it is: a child that reads
/// it keeps it open until this returns.
pub async fn bounded_output(
    mut child: tokio::process::Child,
    limit: usize,
) -> std::io::Result<(std::process::ExitStatus, Vec<u8>, Vec<u8>)> {
    let (out, err, status) = tokio::join!(
        maybe_tail(child.stdout.take(), limit),
        maybe_tail(child.stderr.take(), limit),
        child.wait()
    );
    Ok((status?, out, err))
}

async fn maybe_tail(pipe: Option<impl tokio::io::AsyncRead + Unpin>, limit: usize) -> Vec<u8> {
    match pipe {
        Some(pipe) => read_tail(pipe, limit).await,
        None => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::CommandExt as _;

    use super::*;

    /// The ignored signals of a child, from its `/proc/self/status` (`SigIgn`, hex mask).
    fn ignored_in_child(setup: bool) -> u64 {
        let mut command = std::process::Command::new("sh");
        command.args(["-c", "grep SigIgn /proc/self/status"]);
        // SAFETY: signal(2) calls only, as in the gateway's own pre_exec closures.
        unsafe {
            command.pre_exec(move || {
                libc::signal(libc::SIGINT, libc::SIG_IGN);
                libc::signal(libc::SIGQUIT, libc::SIG_IGN);
                if setup {
                    restore_default_signals()?;
                }
                Ok(())
            });
        }
        let output = command.output().expect("run sh");
        let text = String::from_utf8_lossy(&output.stdout);
        let hex = text.trim().trim_start_matches("SigIgn:").trim();
        u64::from_str_radix(hex, 16).expect("a hex mask")
    }

    #[test]
    fn signals_ignored_by_whoever_started_the_gateway_are_not_passed_on() {
        let bit = |signal: libc::c_int| 1u64 << (signal - 1);
        let both = bit(libc::SIGINT) | bit(libc::SIGQUIT);
        assert_eq!(
            ignored_in_child(false) & both,
            both,
            "the check sees an ignore"
        );
        assert_eq!(ignored_in_child(true) & both, 0);
    }
}
