//! Latency report of the Zellij backend against a real headless session. Not a pass/fail
//! speed target: it checks each operation's result and prints p50/p95/max per operation.
//!
//! `cargo test --release --test zellij_latency -- --ignored --nocapture`

mod zellij_common;

use std::time::{Duration, Instant};

use muxgate_mux::text_match::Pattern;
use muxgate_zellij::backend::{NewTabOptions, ReadScope, RunInPaneOptions, RunOptions};
use muxgate_zellij::ids::{PaneId, SessionName};
use zellij_common::Harness;

const SHELL: PaneId = PaneId::Terminal(0);

struct Samples(Vec<Duration>);

impl Samples {
    fn report(mut self, name: &str) {
        self.0.sort();
        let at = |q: f64| self.0[((self.0.len() - 1) as f64 * q).round() as usize];
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        println!(
            "{name:<34} n={:<3} p50={:>7.1} ms  p95={:>7.1} ms  max={:>7.1} ms",
            self.0.len(),
            ms(at(0.5)),
            ms(at(0.95)),
            ms(at(1.0))
        );
    }
}

async fn time<F, Fut, T>(n: usize, mut op: F) -> Samples
where
    F: FnMut(usize) -> Fut,
    Fut: std::future::Future<Output = T>,
{
    let mut samples = Vec::with_capacity(n);
    for i in 0..n {
        let started = Instant::now();
        op(i).await;
        samples.push(started.elapsed());
    }
    Samples(samples)
}

/// Time from the start of a `write_chars` that prints `WAKE_<i>` to the waiter's wake-up.
async fn wake_latency(h: &Harness, s: &SessionName, pane: PaneId, n: usize) -> Samples {
    let mut samples = Vec::new();
    for i in 0..n {
        let pattern = Pattern::regex(&format!("^WAKE_{}$", i + 1000)).unwrap();
        let backend = h.backend.clone();
        let (s2, ready_tx) = (s.clone(), tokio::sync::oneshot::channel::<()>());
        let (ready_tx, ready_rx) = ready_tx;
        let waiter = tokio::spawn(async move {
            let _ = ready_tx.send(());
            let r = backend
                .wait_for_text(&s2, pane, &pattern, Duration::from_secs(10))
                .await;
            (r, Instant::now())
        });
        ready_rx.await.unwrap();
        // Let the waiter reach its watch before the output exists.
        while h.backend.active_watches() == 0 {
            tokio::task::yield_now().await;
        }
        let started = Instant::now();
        h.backend
            .write_chars(s, pane, &format!("echo WAKE_$(({i}+1000))\n"))
            .await
            .unwrap();
        let (found, woke) = waiter.await.unwrap();
        found.unwrap();
        samples.push(woke - started);
    }
    Samples(samples)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "latency report; run with --ignored --nocapture"]
async fn latency_report() {
    let Some(h) = Harness::new().await else {
        return;
    };
    let n = 30;
    let created = time(5, |_| async {
        h.session().await;
    })
    .await;
    created.report("create_session (+sizing client)");
    let s = h.session().await;
    h.backend
        .wait_for_text(
            &s,
            SHELL,
            &Pattern::regex(r"[$#]$").unwrap(),
            Duration::from_secs(10),
        )
        .await
        .unwrap();
    let b = &h.backend;
    let s = &s;

    time(n, |_| async {
        assert!(!b.list_panes(s).await.unwrap().is_empty())
    })
    .await
    .report("list_panes");
    time(n, |_| async {
        assert_eq!(b.list_tabs(s).await.unwrap().len(), 1)
    })
    .await
    .report("list_tabs");
    time(n, |_| async {
        b.read_pane(s, SHELL, ReadScope::Viewport).await.unwrap()
    })
    .await
    .report("read_pane viewport");
    time(n, |_| async {
        b.read_pane(s, SHELL, ReadScope::Full).await.unwrap()
    })
    .await
    .report("read_pane full");
    time(n, |_| async {
        b.write_chars(s, SHELL, ":\n").await.unwrap()
    })
    .await
    .report("write_chars");
    time(10, |_| async {
        let tab = b.new_tab(s, NewTabOptions::default()).await.unwrap();
        b.close_tab(s, tab.id).await.unwrap();
    })
    .await
    .report("new_tab+close_tab, headless");
    time(n, |i| async move {
        let r = b
            .run_in_pane(s, SHELL, &format!("echo r{i}"), RunInPaneOptions::default())
            .await
            .unwrap();
        assert_eq!(r.output, format!("r{i}\n"));
    })
    .await
    .report("run_in_pane echo");
    time(n, |i| async move {
        let r = b
            .run_command(s, &format!("echo c{i}"), RunOptions::default())
            .await
            .unwrap();
        assert_eq!(r.output, format!("c{i}\n"));
    })
    .await
    .report("run_command echo (pane+close)");
    wake_latency(&h, s, SHELL, n)
        .await
        .report("wait_for_text wake, headless");

    let bg = b.new_tab(s, NewTabOptions::default()).await.unwrap();
    let bg_pane = b
        .list_panes(s)
        .await
        .unwrap()
        .into_iter()
        .find(|p| p.tab_id == bg.id && p.is_user_terminal())
        .unwrap()
        .id;
    let client = h.attach_client(s).await;
    wake_latency(&h, s, SHELL, n)
        .await
        .report("wait wake, client, visible pane");
    wake_latency(&h, s, bg_pane, n)
        .await
        .report("wait wake, client, background pane");
    time(10, |_| async {
        let tab = b.new_tab(s, NewTabOptions::default()).await.unwrap();
        b.close_tab(s, tab.id).await.unwrap();
    })
    .await
    .report("new_tab+close_tab, client attached");
    client.detach().await;
}
