//! Measurements for BENCHMARKS.md ("Hosts over SSH"), not checks: run with
//! `cargo test --test measure_hosts -- --ignored --nocapture` (as root: it makes test hosts).
//! Prints
//! - what a call costs on a host whose link has an added delay (10 ms and 30 ms each way,
//!   through a delaying proxy of its own), against the same call on a local server, side by
//!   side in one run: the difference in round trips of the link;
//! - calls to a healthy host while another host's link is cut and restored every second,
//!   against the same calls while it is steady (p50 and p99).

mod common;

use std::time::{Duration, Instant};

use common::calls::{Client, legacy, ok};
use common::ssh_host::{self, SshHost};
use common::tmux::TestTmux;
use common::{relaxed, spawn_gateway};
use muxgate::config::Config;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Delays added to each direction of the slow hosts' links: one shorter and one longer than
/// the 40 ms a receiver may hold back an acknowledgement.
const ONE_WAY: [Duration; 2] = [Duration::from_millis(10), Duration::from_millis(30)];

/// Rounds of the side-by-side comparison (each op once per round on each server).
const ROUNDS: usize = 40;

/// Forwards every connection to `target`, each chunk `one_way` later than it came, in order
/// and pipelined (a chunk never waits for the one before it to be delivered, only to be
/// due): a link with a longer round trip and the same bandwidth.
async fn delaying_proxy(target: String, one_way: Duration) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("address").port();
    tokio::spawn(async move {
        while let Ok((inbound, _)) = listener.accept().await {
            let target = target.clone();
            tokio::spawn(async move {
                let Ok(outbound) = TcpStream::connect(&target).await else {
                    return;
                };
                let (in_read, in_write) = inbound.into_split();
                let (out_read, out_write) = outbound.into_split();
                tokio::spawn(delayed_copy(in_read, out_write, one_way));
                delayed_copy(out_read, in_write, one_way).await;
            });
        }
    });
    port
}

async fn delayed_copy(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    one_way: Duration,
) {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(tokio::time::Instant, Vec<u8>)>();
    let writer = tokio::spawn(async move {
        while let Some((due, bytes)) = rx.recv().await {
            tokio::time::sleep_until(due).await;
            if to.write_all(&bytes).await.is_err() {
                return;
            }
        }
    });
    let mut buffer = vec![0u8; 64 * 1024];
    while let Ok(n) = from.read(&mut buffer).await {
        let due = tokio::time::Instant::now() + one_way;
        if n == 0 || tx.send((due, buffer[..n].to_vec())).is_err() {
            break;
        }
    }
    drop(tx);
    let _ = writer.await;
}

/// The `[hosts.<name>]` table reaching `host` through a delaying proxy.
async fn slow_table(name: &str, host: &SshHost, one_way: Duration) -> String {
    let port = delaying_proxy(format!("{}:22", host.addr), one_way).await;
    let known = host.dir().join("proxy_known_hosts");
    let key = std::fs::read_to_string(host.known_hosts()).expect("known_hosts");
    let key = key.split_once(' ').expect("a key line").1;
    std::fs::write(&known, format!("[127.0.0.1]:{port} {key}")).expect("known_hosts");
    format!(
        "[hosts.{name}]\nssh = 'root@127.0.0.1:{port}'\nidentity_file = '{}'\nknown_hosts = '{}'\n",
        host.identity_file().display(),
        known.display()
    )
}

fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort();
    let index = ((samples.len() as f64 - 1.0) * p).round() as usize;
    samples[index]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

async fn timed(client: &Client, tool: &str, args: &Value) -> Duration {
    let started = Instant::now();
    ok(client, tool, args.clone()).await;
    started.elapsed()
}

/// The first pane of `session` on `server`.
async fn pane(client: &Client, server: &str, session: &str) -> String {
    let panes = ok(
        client,
        "list_panes",
        json!({"server": server, "target": session}),
    )
    .await;
    panes["panes"][0]["id"].as_str().expect("a pane").to_owned()
}

async fn link_up(client: &Client, server: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let servers = ok(client, "list_servers", json!({})).await;
        let up = servers["servers"]
            .as_array()
            .expect("servers")
            .iter()
            .any(|s| s["name"] == server && s["host"]["link"] == "up");
        if up {
            return;
        }
        assert!(Instant::now() < deadline, "{server} never came up");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: cargo test --test measure_hosts -- --ignored --nocapture"]
async fn measure_hosts() {
    assert!(
        ssh_host::available("the hosts measurement"),
        "needs root, ip, sshd"
    );
    let local = TestTmux::start();
    let slow_hosts = [SshHost::start(), SshHost::start()];
    let (steady, flappy) = (SshHost::start(), SshHost::start());
    let mut text = format!("[tmux.servers.local]\nsocket_name = '{}'\n", local.socket);
    for (i, host) in slow_hosts.iter().enumerate() {
        text.push_str(&slow_table(&format!("slow{i}"), host, ONE_WAY[i]).await);
    }
    text.push_str(&steady.config_table("steady", &["default"]));
    text.push_str(&flappy.config_table("flappy", &["default"]));
    let gateway = spawn_gateway(relaxed(Config::from_toml_str(&text).expect("config"))).await;
    let client = legacy(&gateway, &gateway.token).await;
    for server in ["slow0", "slow1", "steady", "flappy"] {
        link_up(&client, server).await;
    }
    for server in ["local", "slow0", "slow1", "steady"] {
        ok(
            &client,
            "create_session",
            json!({"server": server, "name": "m"}),
        )
        .await;
    }

    // 1. The same calls on the local server and on each slow host, interleaved round by round.
    let ops = |server: &str, pane: &str| {
        vec![
            ("capture_pane", json!({"server": server, "target": pane})),
            (
                "send_keys",
                json!({"server": server, "target": pane, "keys": ["C-l"]}),
            ),
            ("list_panes", json!({"server": server})),
            ("get_pane_state", json!({"server": server, "target": pane})),
        ]
    };
    let local_ops = ops("local", &pane(&client, "local", "m").await);
    for (i, one_way) in ONE_WAY.iter().enumerate() {
        let server = format!("slow{i}");
        let slow_ops = ops(&server, &pane(&client, &server, "m").await);
        let mut samples = vec![(Vec::new(), Vec::new()); local_ops.len()];
        for round in 0..ROUNDS + 3 {
            for (n, ((tool, here), (_, there))) in local_ops.iter().zip(&slow_ops).enumerate() {
                let local_took = timed(&client, tool, here).await;
                let remote_took = timed(&client, tool, there).await;
                // The first rounds warm both up (connections, output streams).
                if round >= 3 {
                    samples[n].0.push(local_took);
                    samples[n].1.push(remote_took);
                }
            }
        }
        let rtt = ms(*one_way * 2);
        println!("\nAdded link round trip {rtt:.0} ms; {ROUNDS} rounds, p50:");
        println!("| call | local | host | difference | in round trips of the link |");
        println!("|---|---|---|---|---|");
        for ((tool, _), (mut here, mut there)) in local_ops.iter().zip(samples) {
            let (l, r) = (percentile(&mut here, 0.5), percentile(&mut there, 0.5));
            let extra = ms(r.saturating_sub(l));
            println!(
                "| {tool} | {:.2} ms | {:.2} ms | {extra:.2} ms | {:.2} |",
                ms(l),
                ms(r),
                extra / rtt
            );
        }
    }

    // 2. Calls to the steady host, while the flappy host is steady and while it flaps.
    let probe = json!({"server": "steady"});
    let calls = |n: usize| {
        let client = &client;
        let probe = probe.clone();
        async move {
            let mut taken = Vec::with_capacity(n);
            for _ in 0..n {
                taken.push(timed(client, "list_sessions", &probe).await);
            }
            taken
        }
    };
    let mut calm = calls(2000).await;
    let flapping = async {
        let stop = Instant::now() + Duration::from_secs(30);
        let mut up = true;
        while Instant::now() < stop {
            tokio::time::sleep(Duration::from_secs(1)).await;
            up = !up;
            flappy.set_link(up);
        }
        flappy.set_link(true);
    };
    let (mut during, ()) = tokio::join!(
        async {
            let mut taken = Vec::new();
            let stop = Instant::now() + Duration::from_secs(25);
            while Instant::now() < stop {
                taken.extend(calls(50).await);
            }
            taken
        },
        flapping
    );
    println!("\n| list_sessions on a healthy host | calls | p50 | p99 |");
    println!("|---|---|---|---|");
    for (label, samples) in [
        ("another host steady", &mut calm),
        (
            "another host's link cut and restored every 1 s",
            &mut during,
        ),
    ] {
        println!(
            "| {label} | {} | {:.2} ms | {:.2} ms |",
            samples.len(),
            ms(percentile(samples, 0.5)),
            ms(percentile(samples, 0.99))
        );
    }
}
