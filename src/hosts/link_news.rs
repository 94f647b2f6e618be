//! A host's link going down, and coming back, told to `[notify]` (`host_down`, `host_up`).
//!
//! A link that is lost and made again within [`GRACE`] (sshd restarted, a blip on the network)
//! is no news; one still not up after it is told once, with its last error, however often the
//! attempts fail after that, and its return is told once.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::link::{HostLink, LinkPhase};
use crate::notify::{Event, Notifier};

/// How long a link may be down before anyone is told.
const GRACE: Duration = Duration::from_secs(5);

/// Follows `link`'s edges until `stop` fires, telling `notifier`.
pub(crate) async fn tell(link: Arc<HostLink>, notifier: Notifier, stop: CancellationToken) {
    let mut phases = link.phases();
    let mut told_down = false;
    // Since when it has been down (or failing to connect after being down), not yet told.
    let mut down_since: Option<Instant> = None;
    loop {
        let tell_at = down_since.filter(|_| !told_down).map(|since| since + GRACE);
        tokio::select! {
            () = stop.cancelled() => return,
            changed = phases.changed() => {
                if changed.is_err() {
                    return;
                }
            }
            () = sleep_until(tell_at), if tell_at.is_some() => {
                let reason = link.report().last_error.unwrap_or_default();
                notifier.send(Event::host_link(link.name(), Some(&reason)));
                told_down = true;
                continue;
            }
        }
        match current(&mut phases) {
            LinkPhase::Up => {
                if told_down {
                    notifier.send(Event::host_link(link.name(), None));
                }
                told_down = false;
                down_since = None;
            }
            LinkPhase::Down => {
                down_since.get_or_insert_with(Instant::now);
            }
            // An attempt after a failure: still down as far as anyone can tell.
            LinkPhase::Connecting => {}
        }
    }
}

fn current(phases: &mut watch::Receiver<LinkPhase>) -> LinkPhase {
    *phases.borrow_and_update()
}

async fn sleep_until(at: Option<Instant>) {
    if let Some(at) = at {
        tokio::time::sleep_until(at).await;
    }
}
