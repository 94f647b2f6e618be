//! Case 10: a fleet of agents as workers (muxgate alone). `n` stand-ins of an agent CLI
//! (`tests/programs/agent_screens.py`, Claude Code's screens) are spawned at once, each in a git
//! worktree of its own, each handed a task; each works for a random while, stops at a
//! permission dialog, and once answered works again and goes idle. A coordinator never polls:
//! it holds one `subscriptions/listen` on the fleet resource and, woken, reads the fleet and
//! answers every blocked agent it has not answered (`answer_agent`, bound to the screen it
//! read, with an idempotency key). A webhook receiver of the bench's own takes `[notify]`'s
//! `agent_blocked` and `agent_idle`.
//!
//! Counted: tasks and answers each agent read (its `--events` log: exactly its task, then
//! `1`), notifications per agent and kind (exactly one each). Timed, from the moment an
//! agent's dialog was drawn (its log): the webhook's receipt and the coordinator's wake-up
//! (p50, p99). Then the fleet sits idle, subscription and followers running: tmux commands
//! the gateway sends meanwhile (goal: none).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail, ensure};
use serde_json::{Value, json};

use crate::fixture::{BenchTmux, path_str};
use crate::servers::Muxgate;

const STAND_IN: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/programs/agent_screens.py"
);
/// The whole run's bound: spawns, work, answers.
const RUN_LIMIT: Duration = Duration::from_secs(300);
/// Spawns under way at once.
const SPAWN_LANES: usize = 4;
/// From the last agent idle to the idle window.
const SETTLED: Duration = Duration::from_secs(3);

/// What a fleet run measured.
pub(crate) struct FleetRun {
    pub agents: usize,
    /// Agents that read exactly their task and one answer.
    pub exactly_once: usize,
    /// Agents told exactly once as blocked and once as idle.
    pub notified_once: usize,
    /// From a dialog drawn to the webhook's receipt of `agent_blocked`, ms.
    pub to_webhook: Vec<f64>,
    /// From a dialog drawn to the coordinator's first wake-up after it, ms (an update names
    /// the resource, not the agent: the first one after the edge).
    pub to_coordinator: Vec<f64>,
    /// From a dialog drawn to the agent reading the coordinator's answer, ms: the whole loop.
    pub to_answer: Vec<f64>,
    /// Agents not told exactly once of each edge: the events they were told of.
    pub odd_notifications: Vec<String>,
    /// tmux commands over the idle window.
    pub idle_commands: f64,
    pub idle_secs: f64,
    /// From the first spawn to the last agent idle after its answer.
    pub total: Duration,
}

fn unix_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

/// Posts taken by the webhook receiver: when (unix ms) and what.
type Posts = Arc<Mutex<Vec<(f64, Value)>>>;

/// A webhook receiver on loopback; its URL.
async fn receiver(posts: Posts) -> Result<String> {
    async fn take(
        axum::extract::State(posts): axum::extract::State<Posts>,
        body: axum::body::Bytes,
    ) -> axum::http::StatusCode {
        if let Ok(event) = serde_json::from_slice::<Value>(&body) {
            posts
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push((unix_ms(), event));
        }
        axum::http::StatusCode::OK
    }
    let app = axum::Router::new()
        .route("/hook", axum::routing::post(take))
        .with_state(posts);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .context("bind the webhook receiver")?;
    let url = format!("http://{}/hook", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(url)
}

/// A git repository with one commit, the stand-in installed as `claude`, and the files the
/// run writes.
struct Place {
    dir: tempfile::TempDir,
}

impl Place {
    fn new() -> Result<Self> {
        let dir = tempfile::tempdir().context("a temporary directory")?;
        let repo = dir.path().join("app");
        std::fs::create_dir_all(&repo)?;
        for args in [
            &["init", "-q", "-b", "main"][..],
            &["commit", "-q", "--allow-empty", "-m", "first"][..],
        ] {
            let status = Command::new("git")
                .arg("-C")
                .arg(&repo)
                .args([
                    "-c",
                    "user.name=bench",
                    "-c",
                    "user.email=bench@example.invalid",
                ])
                .args(args)
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .status()
                .context("run git (is it installed?)")?;
            ensure!(status.success(), "git {args:?} failed");
        }
        std::fs::create_dir_all(dir.path().join("bin"))?;
        std::fs::copy(STAND_IN, dir.path().join("bin/claude")).context("the stand-in")?;
        std::fs::write(dir.path().join("notify.key"), "bench-key\n")?;
        Ok(Self { dir })
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn config(&self, hook: &str) -> Result<String> {
        Ok(format!(
            "[state]\ndir = '{state}'\n\
             [agents.claude-code]\ncommand = '{claude}'\n\
             args = ['--startup', '1', '--events', '{events}']\n\
             ready_timeout_secs = 120\n\
             [repositories.app]\npath = '{repo}'\nworktrees = '{worktrees}'\n\
             [notify.targets.lead]\nformat = 'json'\nurl = '{hook}'\nsecret_file = '{key}'\n\
             events = ['agent_blocked', 'agent_idle']\n",
            state = path_str(&self.path("state"))?,
            claude = path_str(&self.path("bin/claude"))?,
            events = path_str(&self.path("events.log"))?,
            repo = path_str(&self.path("app"))?,
            worktrees = path_str(&self.path("worktrees"))?,
            key = path_str(&self.path("notify.key"))?,
        ))
    }
}

/// Per agent, what its `--events` log says: when each dialog was drawn, and the lines read.
#[derive(Default)]
struct AgentLog {
    dialogs: Vec<f64>,
    /// When each line was read, and the line.
    reads: Vec<(f64, String)>,
}

fn read_events(file: &Path) -> Result<HashMap<String, AgentLog>> {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    let mut agents: HashMap<String, AgentLog> = HashMap::new();
    for line in text.lines() {
        let mut words = line.splitn(3, ' ');
        let (Some(at), Some(agent), Some(what)) = (words.next(), words.next(), words.next()) else {
            bail!("a bad events line: {line:?}");
        };
        let entry = agents.entry(agent.to_owned()).or_default();
        let at: f64 = at.parse().context("a time")?;
        if what == "dialog" {
            entry.dialogs.push(at);
        } else if let Some(read) = what.strip_prefix("read ") {
            entry.reads.push((at, read.to_owned()));
        }
    }
    Ok(agents)
}

/// The coordinator's subscription: a `subscriptions/listen` request whose answer streams,
/// read by a task of its own that notes when each update arrived (unix ms), however busy the
/// coordinator is.
struct Subscription {
    updates: tokio::sync::mpsc::UnboundedReceiver<f64>,
    /// Every update's arrival.
    arrivals: Arc<Mutex<Vec<f64>>>,
}

impl Subscription {
    async fn open(gateway: &Muxgate, token: &str) -> Result<Self> {
        let body = json!({
            "jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen",
            "params": {
                "notifications": {"resourceSubscriptions": ["tmux://bench/agents"]},
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientInfo": {"name": "coordinator", "version": "0"},
                    "io.modelcontextprotocol/clientCapabilities": {}
                }
            }
        });
        let mut response = reqwest::Client::new()
            .post(gateway.mcp_url())
            .bearer_auth(token)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "subscriptions/listen")
            .body(body.to_string())
            .send()
            .await
            .context("subscriptions/listen")?;
        ensure!(
            response.status().is_success(),
            "listen: {}",
            response.status()
        );
        let (sender, updates) = tokio::sync::mpsc::unbounded_channel();
        let arrivals: Arc<Mutex<Vec<f64>>> = Arc::default();
        let noted = arrivals.clone();
        tokio::spawn(async move {
            let mut text = String::new();
            let mut seen = 0;
            while let Ok(Some(chunk)) = response.chunk().await {
                let at = unix_ms();
                text.push_str(&String::from_utf8_lossy(&chunk));
                let updates = text.matches("notifications/resources/updated").count();
                for _ in seen..updates {
                    noted.lock().unwrap_or_else(|p| p.into_inner()).push(at);
                    let _ = sender.send(at);
                }
                seen = updates;
            }
        });
        Ok(Self { updates, arrivals })
    }

    /// Waits for the next update (and takes those that came with it).
    async fn next_update(&mut self, until: tokio::time::Instant) -> Result<bool> {
        match tokio::time::timeout_at(until, self.updates.recv()).await {
            Err(_) => Ok(false),
            Ok(None) => bail!("the subscription ended"),
            Ok(Some(_)) => {
                while self.updates.try_recv().is_ok() {}
                Ok(true)
            }
        }
    }
}

/// Spawns `n` agents, coordinates them until all are answered and idle, then measures the idle
/// fleet for `idle_secs`.
pub(crate) async fn fleet(n: usize, idle_secs: f64) -> Result<FleetRun> {
    let tmux = BenchTmux::start("fleet", None)?;
    let place = Place::new()?;
    let posts: Posts = Arc::default();
    let hook = receiver(posts.clone()).await?;
    let gateway = Muxgate::start_with(tmux.socket(), None, &place.config(&hook)?).await?;
    let coordinator = gateway.agent(0).await?;
    // Spawns wait (for each agent to be ready and take its task): a client has at most
    // `limits.max_concurrent_waits` (4) at once, so another client spawns, in 4 lanes.
    let spawner = Arc::new(gateway.agent(1).await?);
    let mut subscription = Subscription::open(&gateway, &gateway.token(0)?).await?;
    let started = Instant::now();
    let mut spawns = tokio::task::JoinSet::new();
    for lane in 0..SPAWN_LANES.min(n) {
        let spawner = spawner.clone();
        spawns.spawn(async move {
            for i in (lane..n).step_by(SPAWN_LANES) {
                // A different pace per agent: 0.5 to 3 s of work before its dialog and after.
                let pace = 0.5 + 2.5 * ((i * 7919) % n) as f64 / n as f64;
                spawner
                    .call_tool(
                        "spawn_agent",
                        json!({"kind": "claude-code", "id": format!("w{i}"),
                               "repository": "app", "prompt": format!("task {i}"),
                               "env": {"STAND_IN_BUSY": format!("{pace:.2}")}, "timeout": 120}),
                    )
                    .await?;
            }
            anyhow::Ok(())
        });
    }
    let deadline = tokio::time::Instant::now() + RUN_LIMIT;
    // A spawn that fails ends the run at once.
    let spawned = async {
        while let Some(lane) = spawns.join_next().await {
            lane.context("a spawn lane")??;
        }
        std::future::pending::<Result<()>>().await
    };
    tokio::select! {
        done = coordinate(&coordinator, &mut subscription, n, deadline) => done?,
        failed = spawned => return Err(failed.err().unwrap_or_else(|| anyhow::anyhow!("spawns"))),
    };
    let wakes = subscription
        .arrivals
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    let total = started.elapsed();
    let events = read_events(&place.path("events.log"))?;
    // The last agents' followers read once more when their output's last burst has aged
    // (the "moving" rule, 1.5 s): the idle window starts after that.
    tokio::time::sleep(SETTLED).await;
    // A scrape of /metrics asks tmux for its gauges: two back to back measure that, which is
    // taken off the idle window's count.
    let commands = || gateway.metric("muxgate_tmux_commands_total");
    let first = commands().await?;
    let before = commands().await?;
    tokio::time::sleep(Duration::from_secs_f64(idle_secs)).await;
    let idle_commands = (commands().await? - before) - (before - first);
    Ok(measure(
        n,
        &events,
        &posts,
        &wakes,
        idle_commands,
        idle_secs,
        total,
    ))
}

/// Answers every blocked agent the fleet resource shows, each once (those of one wake-up at
/// once), woken only by the subscription; returns when all `n` are answered and idle.
async fn coordinate(
    coordinator: &crate::servers::Agent,
    subscription: &mut Subscription,
    n: usize,
    deadline: tokio::time::Instant,
) -> Result<()> {
    let mut answered: HashMap<String, bool> = HashMap::new();
    loop {
        if !subscription.next_update(deadline).await? {
            bail!("the fleet did not finish within {RUN_LIMIT:?}: {answered:?}");
        }
        let fleet = coordinator.call_tool("list_agents", json!({})).await?;
        let agents = fleet["agents"].as_array().cloned().unwrap_or_default();
        let blocked: Vec<&Value> = agents
            .iter()
            .filter(|a| a["state"] == "blocked")
            .filter(|a| !answered.contains_key(a["agent_id"].as_str().unwrap_or_default()))
            .collect();
        let answers = blocked.iter().map(|agent| {
            let id = agent["agent_id"].as_str().unwrap_or_default();
            coordinator.call_tool(
                "answer_agent",
                json!({"target": agent["pane_id"], "screen_digest": agent["screen_digest"],
                       "keys": ["1", "Enter"], "idempotency_key": format!("{id}-1")}),
            )
        });
        let results = futures::future::join_all(answers).await;
        for (agent, answer) in blocked.iter().zip(results) {
            if answer?["outcome"] != "screen_changed" {
                let id = agent["agent_id"].as_str().unwrap_or_default();
                answered.insert(id.to_owned(), true);
            }
        }
        let idle = agents
            .iter()
            .filter(|a| {
                a["state"] == "idle"
                    && answered.contains_key(a["agent_id"].as_str().unwrap_or_default())
            })
            .count();
        if idle == n {
            return Ok(());
        }
    }
}

/// The run's counts and timings.
fn measure(
    n: usize,
    events: &HashMap<String, AgentLog>,
    posts: &Posts,
    wakes: &[f64],
    idle_commands: f64,
    idle_secs: f64,
    total: Duration,
) -> FleetRun {
    let posts = posts.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let mut to_webhook = Vec::new();
    let mut to_coordinator = Vec::new();
    let mut to_answer = Vec::new();
    let mut exactly_once = 0;
    let mut notified_once = 0;
    let mut odd_notifications = Vec::new();
    for i in 0..n {
        let id = format!("w{i}");
        let Some(log) = events.get(&id) else { continue };
        let lines: Vec<&str> = log.reads.iter().map(|(_, line)| line.as_str()).collect();
        if lines == [format!("task {i}").as_str(), "1"] {
            exactly_once += 1;
        }
        let mine: Vec<&(f64, Value)> = posts.iter().filter(|(_, e)| e["agent"] == id).collect();
        let count = |kind: &str| mine.iter().filter(|(_, e)| e["event"] == kind).count();
        if count("agent_blocked") == 1 && count("agent_idle") == 1 {
            notified_once += 1;
        } else {
            let told: Vec<&str> = mine
                .iter()
                .map(|(_, e)| e["event"].as_str().unwrap_or_default())
                .collect();
            odd_notifications.push(format!("{id}: {told:?}"));
        }
        if let Some(&drawn) = log.dialogs.first() {
            if let Some((at, _)) = mine.iter().find(|(_, e)| e["event"] == "agent_blocked") {
                to_webhook.push(at - drawn);
            }
            if let Some(woken) = wakes.iter().find(|&&w| w >= drawn) {
                to_coordinator.push(woken - drawn);
            }
            if let Some((read, _)) = log
                .reads
                .iter()
                .find(|(at, line)| line == "1" && *at >= drawn)
            {
                to_answer.push(read - drawn);
            }
        }
    }
    FleetRun {
        agents: n,
        exactly_once,
        notified_once,
        to_webhook,
        to_coordinator,
        to_answer,
        odd_notifications,
        idle_commands,
        idle_secs,
        total,
    }
}
