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

/// Cuts and restores `host`'s link every second for `how_long`, and leaves it up.
async fn flap(host: &SshHost, how_long: Duration) {
    let stop = Instant::now() + how_long;
    let mut up = true;
    while Instant::now() < stop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        up = !up;
        host.set_link(up);
    }
    host.set_link(true);
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
    let flapping = flap(&flappy, Duration::from_secs(30));
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

/// Resident memory of `pid` in KiB (`VmRSS`).
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
        .unwrap_or(0)
}

/// CPU time (user + system) of `pid` in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let Some(rest) = stat.rfind(')').map(|i| &stat[i + 2..]) else {
        return 0;
    };
    let fields: Vec<&str> = rest.split(' ').collect();
    fields
        .get(11)
        .and_then(|u| u.parse::<u64>().ok())
        .unwrap_or(0)
        + fields
            .get(12)
            .and_then(|s| s.parse::<u64>().ok())
            .unwrap_or(0)
}

/// Proportional memory of `pid` in KiB (`Pss`: shared pages divided among their users, so
/// that many `ssh` processes sharing one binary and its libraries are not counted many times).
fn pss_kib(pid: u32) -> u64 {
    let rollup = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).unwrap_or_default();
    rollup
        .lines()
        .find_map(|l| l.strip_prefix("Pss:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
        .unwrap_or(0)
}

/// The `ssh` processes `parent` started (the hosts' masters and channels), and their memory.
fn ssh_children(parent: u32) -> (usize, u64) {
    let mut count = 0;
    let mut kib = 0;
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let Some(close) = stat.rfind(')') else {
            continue;
        };
        let comm = stat
            .split_once('(')
            .map_or("", |(_, c)| &c[..c.len() - (stat.len() - close)]);
        let ppid = stat[close + 2..]
            .split(' ')
            .nth(1)
            .and_then(|p| p.parse::<u32>().ok());
        if comm == "ssh" && ppid == Some(parent) {
            count += 1;
            kib += pss_kib(pid);
        }
    }
    (count, kib)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: cargo test --test measure_hosts -- --ignored --nocapture"]
async fn measure_a_fleet_of_hosts() {
    const HOSTS: usize = 64;
    const AGENTS_PER_HOST: usize = 16;
    assert!(
        ssh_host::available("the fleet measurement"),
        "needs root, ip, sshd"
    );
    let dir = tempfile::tempdir().expect("a directory");
    let started = Instant::now();
    let hosts: Vec<SshHost> = (0..HOSTS).map(|_| SshHost::start()).collect();
    println!(
        "{HOSTS} test hosts up in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let mut text = format!(
        "[tmux.servers]\n[auth]\nsecret = '{}'\n[limits]\nrequests_per_second = 100000\n\
         request_burst = 100000\ntool_calls_per_second = 100000\ntool_call_burst = 100000\n",
        common::TEST_SECRET
    );
    for (i, host) in hosts.iter().enumerate() {
        text.push_str(&host.config_table(&format!("h{i:02}"), &["default"]));
    }
    let config_path = dir.path().join("muxgate.toml");
    std::fs::write(&config_path, &text).expect("config");
    let config = Config::from_toml_str(&text).expect("config");
    let gateway =
        common::serve::ServeProcess::start(&config_path, &dir.path().join("log"), &[]).await;
    let pid = u32::try_from(gateway.pid).expect("a pid");
    let mint = |sub: String| {
        common::mint_for(&config, &sub, &["mux:read", "mux:write", "mux:admin"], None)
    };
    let http = reqwest::Client::new();
    let call = |token: String, tool: &str, args: Value| {
        let http = http.clone();
        let url = gateway.mcp_url.clone();
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": tool, "arguments": args, "_meta": common::stateless_meta()}});
        let tool = tool.to_owned();
        async move {
            let response = http
                .post(&url)
                .bearer_auth(token)
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .header("mcp-protocol-version", common::STATELESS_VERSION)
                .header("mcp-method", "tools/call")
                .header("mcp-name", tool)
                .body(body.to_string())
                .send()
                .await
                .expect("POST");
            common::response_message(response).await
        }
    };
    let admin = mint("admin".into());
    // Every link up, a session with one pane on every host.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let listed = call(admin.clone(), "list_servers", json!({})).await;
        let servers = listed["result"]["structuredContent"]["servers"].clone();
        let up = servers.as_array().map_or(0, |s| {
            s.iter().filter(|s| s["host"]["link"] == "up").count()
        });
        if up == HOSTS {
            break;
        }
        assert!(Instant::now() < deadline, "{up} of {HOSTS} links up");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    println!(
        "{HOSTS} links up {:.1} s after making the hosts began",
        started.elapsed().as_secs_f64()
    );
    let mut panes = Vec::new();
    for i in 0..HOSTS {
        let server = format!("h{i:02}");
        call(
            admin.clone(),
            "create_session",
            json!({"server": server, "name": "w"}),
        )
        .await;
        let listed = call(
            admin.clone(),
            "list_panes",
            json!({"server": server, "target": "w"}),
        )
        .await;
        let pane = listed["result"]["structuredContent"]["panes"][0]["id"]
            .as_str()
            .expect("a pane")
            .to_owned();
        panes.push((server, pane));
    }
    let (ssh_before, ssh_kib_before) = ssh_children(pid);
    let rss_before = rss_kib(pid);

    // 16 agents per host, each waiting on its host's pane.
    let attaching = Instant::now();
    let mut waits = Vec::new();
    for (i, (server, pane)) in panes.iter().enumerate() {
        for a in 0..AGENTS_PER_HOST {
            let token = mint(format!("agent-{i}-{a}"));
            waits.push(tokio::spawn(call(
                token,
                "wait_for_text",
                json!({"server": server, "target": pane, "patterns": ["never-printed"], "timeout": 110}),
            )));
        }
    }
    // Attached: every wait's pane streams (one output client per host), checked through the
    // gateway's metrics of watched windows and waits.
    let metrics_url = format!("{}/metrics", gateway.base);
    let waiting = |text: &str| {
        text.lines()
            .filter(|l| l.starts_with("muxgate_waits_active"))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum::<f64>()
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let text = http
            .get(&metrics_url)
            .send()
            .await
            .expect("metrics")
            .text()
            .await
            .expect("text");
        if waiting(&text) as usize >= HOSTS * AGENTS_PER_HOST {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "waits attached: {}",
            waiting(&text)
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let attached = attaching.elapsed();
    let rss_waiting = rss_kib(pid);
    let (ssh_waiting, ssh_kib_waiting) = ssh_children(pid);
    let ticks_before = cpu_ticks(pid);
    tokio::time::sleep(Duration::from_secs(10)).await;
    let idle_ticks = cpu_ticks(pid) - ticks_before;
    println!("\n| {HOSTS} hosts × {AGENTS_PER_HOST} waiting agents | value |");
    println!("|---|---|");
    println!(
        "| all {} waits attached in | {:.1} s |",
        HOSTS * AGENTS_PER_HOST,
        attached.as_secs_f64()
    );
    println!(
        "| gateway RSS, links up, no wait | {:.1} MiB |",
        rss_before as f64 / 1024.0
    );
    println!(
        "| gateway RSS, every wait attached | {:.1} MiB |",
        rss_waiting as f64 / 1024.0
    );
    println!(
        "| per waiting agent | {:.1} KiB |",
        (rss_waiting.saturating_sub(rss_before)) as f64 / (HOSTS * AGENTS_PER_HOST) as f64
    );
    println!(
        "| ssh processes (masters and channels), before / waiting | {ssh_before} / {ssh_waiting} |"
    );
    println!(
        "| their memory (PSS), before / waiting | {:.1} / {:.1} MiB |",
        ssh_kib_before as f64 / 1024.0,
        ssh_kib_waiting as f64 / 1024.0
    );
    println!(
        "| gateway CPU over 10 s of waiting | {:.2} % of a core |",
        idle_ticks as f64 / 10.0
    );

    // Calls to healthy hosts while one host flaps, with every wait in place.
    let probe = |i: usize| {
        call(
            admin.clone(),
            "list_sessions",
            json!({"server": format!("h{:02}", 1 + i % (HOSTS - 1))}),
        )
    };
    let mut calm = Vec::new();
    for i in 0..300 {
        let t = Instant::now();
        probe(i).await;
        calm.push(t.elapsed());
    }
    let flapping = flap(&hosts[0], Duration::from_secs(15));
    let (mut during, ()) = tokio::join!(
        async {
            let mut taken = Vec::new();
            let stop = Instant::now() + Duration::from_secs(14);
            let mut i = 0;
            while Instant::now() < stop {
                let t = Instant::now();
                probe(i).await;
                taken.push(t.elapsed());
                i += 1;
            }
            taken
        },
        flapping
    );
    println!(
        "\n| list_sessions on the 63 healthy hosts, every wait attached | calls | p50 | p99 |"
    );
    println!("|---|---|---|---|");
    for (label, samples) in [
        ("h00 steady", &mut calm),
        ("h00's link cut and restored every 1 s", &mut during),
    ] {
        println!(
            "| {label} | {} | {:.2} ms | {:.2} ms |",
            samples.len(),
            ms(percentile(samples, 0.5)),
            ms(percentile(samples, 0.99))
        );
    }
    for wait in waits {
        wait.abort();
    }
}
