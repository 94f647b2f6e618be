//! The gateway's own end of a connection. Tests run the gateway in their own process, so the
//! socket it accepted is one of this process's file descriptors: found by its peer address
//! (the test's end) and asked for its options.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

/// Whether the gateway's end of the connection whose local end is `client` sends at once
/// (TCP_NODELAY). Waits up to 5 s for the gateway to accept it and set it.
pub(crate) async fn gateway_end_sends_at_once(client: SocketAddr) -> bool {
    // Accepting a connection and setting its option are two system calls: a look between them
    // sees the kernel's default, so the answer is the last one seen before the deadline.
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut seen = None;
    loop {
        seen = accepted_nodelay(client).or(seen);
        if seen == Some(true) || Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    seen.unwrap_or_else(|| panic!("the gateway never accepted {client}"))
}

/// TCP_NODELAY of this process's socket whose peer is `client`, if there is one.
fn accepted_nodelay(client: SocketAddr) -> Option<bool> {
    let fds = std::fs::read_dir("/proc/self/fd").expect("list /proc/self/fd");
    fds.flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<libc::c_int>().ok())
        .filter(|&fd| peer_of(fd) == Some(client))
        .find_map(nodelay_of)
}

fn peer_of(fd: libc::c_int) -> Option<SocketAddr> {
    // SAFETY: an all-zero sockaddr_in is valid; getpeername writes at most `len` bytes into it
    // and fails harmlessly on a descriptor that is not a socket.
    let mut address: libc::sockaddr_in = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    let pointer = (&raw mut address).cast::<libc::sockaddr>();
    if unsafe { libc::getpeername(fd, pointer, &mut len) } != 0
        || i32::from(address.sin_family) != libc::AF_INET
    {
        return None;
    }
    let ip = Ipv4Addr::from(u32::from_be(address.sin_addr.s_addr));
    Some(SocketAddr::from((ip, u16::from_be(address.sin_port))))
}

fn nodelay_of(fd: libc::c_int) -> Option<bool> {
    let mut value: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `value`.
    let status = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_NODELAY,
            (&raw mut value).cast::<libc::c_void>(),
            &mut len,
        )
    };
    (status == 0).then_some(value != 0)
}
