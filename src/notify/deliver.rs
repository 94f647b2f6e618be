//! The queue events wait in and the task that posts them.
//!
//! A call hands its event to [`Notifier::send`], which never waits: the queue is bounded
//! (`notify.queue`), and an event that finds it full is dropped and counted. One task takes
//! events off the queue, forgets one it has seen in the last [`SEEN_FOR`] (same kind and key),
//! and posts it to every target that takes it, at most [`IN_FLIGHT`] posts at a time. A post
//! that fails with a network error, a timeout or a status other than 4xx is tried again after
//! 1, 2 and 4 s; then it counts as failed. Shutdown ends the task and its retries. A target
//! with `inbox_for` gets, with each event a person settles in the inbox, a one-time sign-in
//! link made for its post (the same link on every retry).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use tokio::sync::{Semaphore, mpsc};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::config::{NotifyConfig, NotifyFormat, NotifyTarget};
use super::event::{Event, EventKind};
use super::{payload, post};
use crate::auth::pattern::NamePattern;

/// An event seen again within this is not sent again.
const SEEN_FOR: Duration = Duration::from_secs(600);
/// Most events remembered as seen.
const SEEN_MAX: usize = 4096;
/// Most posts under way at once.
const IN_FLIGHT: usize = 8;
/// How long one post may take.
const POST_TIMEOUT: Duration = Duration::from_secs(10);
/// Waits before the second, third and fourth attempt.
const BACKOFF: [Duration; 3] = [
    Duration::from_secs(1),
    Duration::from_secs(2),
    Duration::from_secs(4),
];
/// Most bytes of a key file read.
const KEY_FILE_BYTES: u64 = 4096;

/// Where calls hand their events; cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct Notifier {
    queue: Option<mpsc::Sender<Event>>,
    counts: Arc<Counts>,
}

/// What became of events, for metrics.
#[derive(Debug, Default)]
pub(crate) struct Counts {
    /// Dropped because the queue was full.
    pub(crate) dropped: AtomicU64,
    /// Not sent again: seen already.
    pub(crate) repeated: AtomicU64,
    /// Per target, in the configuration's order.
    pub(crate) targets: Vec<(String, TargetCounts)>,
}

/// What became of one target's posts.
#[derive(Debug, Default)]
pub(crate) struct TargetCounts {
    pub(crate) delivered: AtomicU64,
    pub(crate) retried: AtomicU64,
    pub(crate) failed: AtomicU64,
}

/// One target, ready to post to.
#[derive(Debug)]
struct Target {
    name: String,
    format: NotifyFormat,
    url: url::Url,
    key: Vec<u8>,
    events: Option<Vec<EventKind>>,
    clients: Option<Vec<NamePattern>>,
    workspaces: Option<Vec<NamePattern>>,
    inbox_for: Option<String>,
}

/// Where sign-in links to the inbox are made, and the address they start with.
#[derive(Debug, Clone)]
pub(crate) struct InboxLinks {
    pub(crate) sign_ins: Arc<crate::inbox::signin::SignIns>,
    /// `http.public_url`, without a trailing `/`.
    pub(crate) base: String,
}

impl InboxLinks {
    /// A link for the target's approver, when it has one and `event` is settled in the inbox.
    fn for_post(links: Option<&Self>, target: &Target, event: &Event) -> Option<String> {
        let approver = target.inbox_for.as_deref()?;
        let settled = matches!(
            event.kind,
            EventKind::ApprovalPending | EventKind::AgentBlocked | EventKind::SecretRequested
        );
        let links = links.filter(|_| settled)?;
        let token = links.sign_ins.issue_link(approver, None).token;
        Some(format!("{}/inbox/signin?t={token}", links.base))
    }
}

impl Target {
    fn open(name: &str, config: &NotifyTarget) -> Result<Self, String> {
        let at = |what: String| format!("notify.targets.{name}.{what}");
        if let Some(problem) = config.problem() {
            return Err(at(problem));
        }
        let key = match &config.secret_file {
            Some(file) => read_key(file).map_err(|e| at(format!("secret_file: {e}")))?,
            None => Vec::new(),
        };
        let patterns = |patterns: &Option<Vec<String>>| {
            patterns.as_ref().map(|patterns| {
                patterns
                    .iter()
                    .filter_map(|p| NamePattern::new(p).ok())
                    .collect()
            })
        };
        Ok(Self {
            name: name.to_owned(),
            format: config.format,
            url: config.url.clone(),
            key,
            events: config.events.clone(),
            clients: patterns(&config.clients),
            workspaces: patterns(&config.workspaces),
            inbox_for: config.inbox_for.clone(),
        })
    }

    /// Whether this target takes `event`.
    fn takes(&self, event: &Event) -> bool {
        self.events
            .as_ref()
            .is_none_or(|kinds| kinds.contains(&event.kind))
            && self
                .clients
                .as_ref()
                .is_none_or(|patterns| patterns.iter().any(|p| p.matches(&event.client)))
            && self.workspaces.as_ref().is_none_or(|patterns| {
                event
                    .workspace
                    .as_ref()
                    .is_some_and(|w| patterns.iter().any(|p| p.matches(w)))
            })
    }
}

/// The key in `file`: its bytes, without a trailing newline; refused when empty or large.
fn read_key(file: &Path) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let mut key = Vec::new();
    std::fs::File::open(file)
        .and_then(|f| f.take(KEY_FILE_BYTES + 1).read_to_end(&mut key))
        .map_err(|e| format!("{}: {e}", file.display()))?;
    while key.last().is_some_and(|b| b.is_ascii_whitespace()) {
        key.pop();
    }
    match key.len() {
        0 => Err(format!("{} is empty", file.display())),
        n if n as u64 > KEY_FILE_BYTES => Err(format!(
            "{} is longer than {KEY_FILE_BYTES} bytes",
            file.display()
        )),
        _ => Ok(key),
    }
}

impl Notifier {
    /// Starts posting to `config`'s targets until `shutdown`, with inbox sign-in links made by
    /// `inbox`; with no target, a notifier that drops nothing and sends nothing.
    pub(crate) fn start(
        config: &NotifyConfig,
        inbox: Option<InboxLinks>,
        shutdown: CancellationToken,
    ) -> Result<Self, String> {
        let targets = config
            .targets
            .iter()
            .map(|(name, target)| Target::open(name, target))
            .collect::<Result<Vec<_>, _>>()?;
        let counts = Arc::new(Counts {
            targets: targets
                .iter()
                .map(|t| (t.name.clone(), TargetCounts::default()))
                .collect(),
            ..Counts::default()
        });
        if targets.is_empty() {
            return Ok(Self {
                queue: None,
                counts,
            });
        }
        let client = crate::tls_client::client_config(None).map_err(|e| format!("notify: {e}"))?;
        let (queue, events) = mpsc::channel(config.queue.max(1));
        let posting = Posting {
            targets: targets.into(),
            client,
            counts: counts.clone(),
            inbox,
        };
        tokio::spawn(run(events, posting, shutdown));
        Ok(Self {
            queue: Some(queue),
            counts,
        })
    }

    /// Hands `event` over without waiting: dropped (and counted) when the queue is full.
    pub(crate) fn send(&self, event: Event) {
        let Some(queue) = &self.queue else { return };
        if queue.try_send(event).is_err() {
            self.counts.dropped.fetch_add(1, Ordering::Relaxed);
            tracing::warn!("notification queue full: an event was dropped (notify.queue)");
        }
    }

    /// What became of events so far.
    pub(crate) fn counts(&self) -> &Counts {
        &self.counts
    }
}

/// What the task posts with.
struct Posting {
    targets: Arc<[Target]>,
    client: Arc<rustls::ClientConfig>,
    counts: Arc<Counts>,
    inbox: Option<InboxLinks>,
}

/// The task: takes events off the queue and posts them.
async fn run(mut events: mpsc::Receiver<Event>, posting: Posting, shutdown: CancellationToken) {
    let Posting {
        targets,
        client,
        counts,
        inbox,
    } = posting;
    let in_flight = Arc::new(Semaphore::new(IN_FLIGHT));
    let mut seen: HashMap<(EventKind, String), Instant> = HashMap::new();
    loop {
        let event = tokio::select! {
            () = shutdown.cancelled() => return,
            event = events.recv() => match event {
                Some(event) => event,
                None => return,
            },
        };
        if !first_time(&mut seen, &event) {
            counts.repeated.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        let event = Arc::new(event);
        for (index, target) in targets.iter().enumerate() {
            if !target.takes(&event) {
                continue;
            }
            let permit = tokio::select! {
                () = shutdown.cancelled() => return,
                permit = in_flight.clone().acquire_owned() => match permit {
                    Ok(permit) => permit,
                    Err(_) => return,
                },
            };
            let post = Post {
                targets: targets.clone(),
                index,
                link: InboxLinks::for_post(inbox.as_ref(), target, &event),
                event: event.clone(),
                client: client.clone(),
                counts: counts.clone(),
            };
            let shutdown = shutdown.clone();
            tokio::spawn(async move {
                tokio::select! {
                    () = shutdown.cancelled() => {}
                    () = post.deliver() => {}
                }
                drop(permit);
            });
        }
    }
}

/// Whether `event` was not seen in the last [`SEEN_FOR`]; remembers it.
fn first_time(seen: &mut HashMap<(EventKind, String), Instant>, event: &Event) -> bool {
    let now = Instant::now();
    seen.retain(|_, at| now.duration_since(*at) < SEEN_FOR);
    let key = (event.kind, event.key.clone());
    if seen.contains_key(&key) {
        return false;
    }
    if seen.len() >= SEEN_MAX
        && let Some(oldest) = seen
            .iter()
            .min_by_key(|(_, at)| **at)
            .map(|(k, _)| k.clone())
    {
        seen.remove(&oldest);
    }
    seen.insert(key, now);
    true
}

/// One event for one target.
struct Post {
    targets: Arc<[Target]>,
    index: usize,
    /// The inbox sign-in link this post carries.
    link: Option<String>,
    event: Arc<Event>,
    client: Arc<rustls::ClientConfig>,
    counts: Arc<Counts>,
}

impl Post {
    async fn deliver(self) {
        let target = &self.targets[self.index];
        let counts = &self.counts.targets[self.index].1;
        let mut waits = BACKOFF.iter();
        loop {
            match self.attempt(target).await {
                Ok(()) => {
                    counts.delivered.fetch_add(1, Ordering::Relaxed);
                    return;
                }
                Err((why, again)) => match waits.next() {
                    Some(wait) if again => {
                        counts.retried.fetch_add(1, Ordering::Relaxed);
                        tokio::time::sleep(*wait).await;
                    }
                    _ => {
                        counts.failed.fetch_add(1, Ordering::Relaxed);
                        tracing::warn!(target = target.name, event = self.event.kind.as_str(), %why, "notification not delivered");
                        return;
                    }
                },
            }
        }
    }

    /// One post; on failure why, and whether to try again.
    async fn attempt(&self, target: &Target) -> Result<(), (String, bool)> {
        let request = payload::request(
            target.format,
            &self.event,
            &target.key,
            self.link.as_deref(),
            SystemTime::now(),
        );
        let posted = tokio::time::timeout(
            POST_TIMEOUT,
            post::post(&self.client, &target.url, &request.headers, request.body),
        )
        .await;
        match posted {
            Ok(Ok(status)) if (200..300).contains(&status) => Ok(()),
            // A refusal is final, unless it says to come back.
            Ok(Ok(status)) => Err((
                format!("HTTP {status}"),
                !(400..500).contains(&status) || status == 408 || status == 429,
            )),
            Ok(Err(why)) => Err((why, true)),
            Err(_) => Err((format!("no answer within {POST_TIMEOUT:?}"), true)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(events: Option<Vec<EventKind>>, clients: Option<Vec<&str>>) -> Target {
        Target {
            name: "t".into(),
            format: NotifyFormat::Slack,
            url: "http://127.0.0.1:9/".parse().expect("a url"),
            key: Vec::new(),
            events,
            clients: clients.map(|c| {
                c.iter()
                    .map(|p| NamePattern::new(p).expect("a pattern"))
                    .collect()
            }),
            workspaces: None,
            inbox_for: None,
        }
    }

    fn approval(client: &str, id: &str) -> Event {
        Event::approval_pending(id, client, "send_keys", None, "push")
    }

    #[test]
    fn a_target_takes_its_events_of_its_clients() {
        let everything = target(None, None);
        assert!(everything.takes(&approval("alice", "1")));
        let team = target(Some(vec![EventKind::ApprovalPending]), Some(vec!["team-*"]));
        assert!(team.takes(&approval("team-a", "1")));
        assert!(!team.takes(&approval("alice", "1")));
        let secrets = target(Some(vec![EventKind::SecretRequested]), None);
        assert!(!secrets.takes(&approval("team-a", "1")));
        assert!(secrets.takes(&Event::secret_requested("s-1", "x", "db", "s:%1")));
    }

    #[test]
    fn a_team_target_takes_its_teams_events_only_and_links_only_what_the_inbox_settles() {
        let mut team = target(None, None);
        team.workspaces = Some(vec![NamePattern::new("team-a").expect("a pattern")]);
        assert!(team.takes(&approval("bob", "1").in_workspace("team-a")));
        assert!(!team.takes(&approval("bob", "1").in_workspace("team-b")));
        assert!(!team.takes(&Event::host_link("build-1", Some("refused"))));
        assert!(target(None, None).takes(&Event::host_link("build-1", None)));

        team.inbox_for = Some("alice".into());
        let links = InboxLinks {
            sign_ins: Arc::new(crate::inbox::signin::SignIns::new(&Default::default())),
            base: "https://gw.example".to_owned(),
        };
        let link = InboxLinks::for_post(Some(&links), &team, &approval("bob", "1"))
            .expect("a link for an approval");
        let token = link
            .strip_prefix("https://gw.example/inbox/signin?t=")
            .expect("the inbox's sign-in address");
        assert_eq!(links.sign_ins.link_holder(token).as_deref(), Some("alice"));
        let host = Event::host_link("build-1", None);
        assert_eq!(InboxLinks::for_post(Some(&links), &team, &host), None);
        let plain = target(None, None);
        assert_eq!(
            InboxLinks::for_post(Some(&links), &plain, &approval("bob", "2")),
            None
        );
    }

    #[test]
    fn an_event_is_sent_once() {
        let mut seen = HashMap::new();
        assert!(first_time(&mut seen, &approval("a", "1")));
        assert!(!first_time(&mut seen, &approval("b", "1")));
        assert!(first_time(&mut seen, &approval("a", "2")));
        assert!(first_time(
            &mut seen,
            &Event::secret_requested("1", "a", "l", "p")
        ));
    }

    #[test]
    fn a_key_file_is_read_trimmed_and_bounded() {
        let dir = tempfile::tempdir().expect("a directory");
        let file = dir.path().join("key");
        std::fs::write(&file, "s3cret\n").expect("write");
        assert_eq!(read_key(&file).expect("a key"), b"s3cret");
        std::fs::write(&file, "\n").expect("write");
        assert!(read_key(&file).unwrap_err().contains("empty"));
        std::fs::write(&file, vec![b'k'; 5000]).expect("write");
        assert!(read_key(&file).unwrap_err().contains("longer"));
        assert!(read_key(&dir.path().join("none")).is_err());
    }
}
