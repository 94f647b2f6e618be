//! One serialized operation queue per Zellij session.
//!
//! A Zellij server handles all clients on one event loop, and a multi-step operation (create a
//! tab, then look it up; check a pane exists, then type into it) must not interleave with another
//! caller's steps. Every mutating or multi-step operation on a session therefore runs as one job
//! on that session's worker task, in arrival order. The queue is bounded (a full queue is an
//! immediate, retryable [`ZellijError::Busy`]) and each job has a timeout.
//!
//! Waiting for output is not a queued operation: waiters watch pane events (see `watch`) and
//! do not hold the queue.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use super::error::{Result, ZellijError};
use super::ids::SessionName;

type Job = Box<dyn FnOnce() -> Pin<Box<dyn Future<Output = ()> + Send>> + Send>;

/// The serialized queue of one session. Cloning shares the queue.
#[derive(Clone)]
pub(crate) struct SessionQueue {
    session: SessionName,
    tx: mpsc::Sender<Job>,
    capacity: usize,
    queue_wait: Duration,
}

impl SessionQueue {
    /// Starts the worker task. It ends when the last clone of the queue is dropped.
    /// `queue_wait` bounds how long an operation may wait for its turn.
    pub(crate) fn start(session: SessionName, capacity: usize, queue_wait: Duration) -> Self {
        let capacity = capacity.max(1);
        let (tx, mut rx) = mpsc::channel::<Job>(capacity);
        tokio::spawn(async move {
            while let Some(job) = rx.recv().await {
                // A separate task contains a panicking job; the queue keeps serving.
                let _ = tokio::spawn(job()).await;
            }
        });
        Self {
            session,
            tx,
            capacity,
            queue_wait,
        }
    }

    /// Operations waiting to start (the running one is not counted).
    #[cfg(test)]
    pub(crate) fn depth(&self) -> usize {
        self.capacity - self.tx.capacity()
    }

    /// Runs `op` after the operations queued before it, within `timeout` once it starts; the
    /// caller waits at most the queue wait plus `timeout` in all.
    ///
    /// If the caller stops waiting (cancelled or out of time) before `op` starts, `op` is
    /// skipped. Once started it runs to the end or to its timeout, so an action is never cut
    /// off half-way by a caller going away.
    pub(crate) async fn run<T, F>(&self, what: &str, timeout: Duration, op: F) -> Result<T>
    where
        F: Future<Output = Result<T>> + Send + 'static,
        T: Send + 'static,
    {
        let (done_tx, done_rx) = oneshot::channel();
        let what_owned = what.to_owned();
        let job: Job = Box::new(move || {
            Box::pin(async move {
                if done_tx.is_closed() {
                    return;
                }
                let result = match tokio::time::timeout(timeout, op).await {
                    Ok(result) => result,
                    Err(_) => Err(ZellijError::Timeout {
                        what: what_owned,
                        after: timeout,
                    }),
                };
                let _ = done_tx.send(result);
            })
        });
        self.tx.try_send(job).map_err(|e| match e {
            mpsc::error::TrySendError::Full(_) => ZellijError::Busy {
                session: self.session.clone(),
                capacity: self.capacity,
            },
            // Invariant: the worker holds the receiver for as long as a sender exists.
            mpsc::error::TrySendError::Closed(_) => unreachable!("session worker outlives senders"),
        })?;
        match tokio::time::timeout(self.queue_wait + timeout, done_rx).await {
            Ok(Ok(result)) => result,
            // The job was dropped without an answer: it panicked.
            Ok(Err(_)) => Err(ZellijError::Io {
                command: what.to_owned(),
                source: std::io::Error::other("operation panicked"),
            }),
            Err(_) => Err(ZellijError::Timeout {
                what: format!(
                    "{what} (waiting behind other operations on session {})",
                    self.session
                ),
                after: self.queue_wait + timeout,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn queue(capacity: usize) -> SessionQueue {
        SessionQueue::start(
            SessionName::new("q").unwrap(),
            capacity,
            Duration::from_secs(5),
        )
    }

    #[tokio::test]
    async fn jobs_never_overlap_and_keep_order() {
        let q = queue(64);
        let running = Arc::new(AtomicUsize::new(0));
        let order = Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut handles = Vec::new();
        for i in 0..20 {
            let (q, running, order) = (q.clone(), running.clone(), order.clone());
            handles.push(tokio::spawn(async move {
                q.run("job", Duration::from_secs(5), async move {
                    assert_eq!(running.fetch_add(1, Ordering::SeqCst), 0, "overlap");
                    tokio::task::yield_now().await;
                    order.lock().unwrap().push(i);
                    running.fetch_sub(1, Ordering::SeqCst);
                    Ok(i)
                })
                .await
            }));
            // Let the task enqueue before the next one is spawned, so arrival order is i.
            tokio::task::yield_now().await;
        }
        for (i, h) in handles.into_iter().enumerate() {
            assert_eq!(h.await.unwrap().unwrap(), i);
        }
        assert_eq!(*order.lock().unwrap(), (0..20).collect::<Vec<_>>());
    }

    /// Occupies the worker until the returned sender fires; returns once the job is running.
    async fn occupy(
        q: &SessionQueue,
    ) -> (oneshot::Sender<()>, tokio::task::JoinHandle<Result<()>>) {
        let (release_tx, release_rx) = oneshot::channel::<()>();
        let (started_tx, started_rx) = oneshot::channel::<()>();
        let q = q.clone();
        let handle = tokio::spawn(async move {
            q.run("block", Duration::from_secs(5), async move {
                let _ = started_tx.send(());
                let _ = release_rx.await;
                Ok(())
            })
            .await
        });
        started_rx.await.unwrap();
        (release_tx, handle)
    }

    async fn wait_depth(q: &SessionQueue, depth: usize) {
        while q.depth() != depth {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test]
    async fn full_queue_is_busy_and_timeouts_apply() {
        let q = queue(1);
        let (release, blocker) = occupy(&q).await;
        let queued = tokio::spawn({
            let q = q.clone();
            async move {
                q.run("second", Duration::from_secs(5), async { Ok(2) })
                    .await
            }
        });
        wait_depth(&q, 1).await;
        let err = q
            .run("third", Duration::from_secs(5), async { Ok(3) })
            .await
            .unwrap_err();
        assert!(
            matches!(err, ZellijError::Busy { capacity: 1, .. }),
            "{err}"
        );
        release.send(()).unwrap();
        blocker.await.unwrap().unwrap();
        assert_eq!(queued.await.unwrap().unwrap(), 2);

        let err = q
            .run("slow", Duration::from_millis(20), async {
                tokio::time::sleep(Duration::from_secs(10)).await;
                Ok(())
            })
            .await
            .unwrap_err();
        assert_eq!(err.to_string(), "slow timed out after 20 ms");
    }

    #[tokio::test]
    async fn waiting_for_a_turn_is_bounded() {
        let q = SessionQueue::start(SessionName::new("q").unwrap(), 4, Duration::from_millis(30));
        let (release, blocker) = occupy(&q).await;
        let err = q
            .run("late", Duration::from_millis(20), async { Ok(()) })
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "late (waiting behind other operations on session q) timed out after 50 ms"
        );
        release.send(()).unwrap();
        blocker.await.unwrap().unwrap();
    }

    #[tokio::test]
    async fn a_panicking_job_does_not_kill_the_queue() {
        let q = queue(4);
        let err = q
            .run("boom", Duration::from_secs(5), async {
                if true {
                    panic!("job panics");
                }
                Ok(())
            })
            .await
            .unwrap_err();
        assert!(err.to_string().contains("panicked"));
        assert_eq!(
            q.run("after", Duration::from_secs(5), async { Ok(1) })
                .await
                .unwrap(),
            1
        );
    }

    #[tokio::test]
    async fn cancelled_callers_are_skipped() {
        let q = queue(8);
        let ran = Arc::new(AtomicUsize::new(0));
        let (release, blocker) = occupy(&q).await;
        let skipped = {
            let ran = ran.clone();
            let q = q.clone();
            tokio::spawn(async move {
                q.run("skipped", Duration::from_secs(5), async move {
                    ran.fetch_add(1, Ordering::SeqCst);
                    Ok(())
                })
                .await
            })
        };
        wait_depth(&q, 1).await;
        skipped.abort();
        let _ = skipped.await;
        release.send(()).unwrap();
        blocker.await.unwrap().unwrap();
        q.run("after", Duration::from_secs(5), async { Ok(()) })
            .await
            .unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), 0);
    }
}
