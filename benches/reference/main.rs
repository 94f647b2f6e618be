//! Benchmark: muxgate against the Python reference server (PyPI `libtmux-mcp`), side by side
//! on the same machine in one run, plus muxgate alone at scale.
//!
//! Both servers are driven through rmcp's client: muxgate over Streamable HTTP (this build's
//! `muxgate serve`, release profile), the reference over stdio (one server process per agent,
//! as stdio clients start it). Each server drives its own private tmux server with the same
//! sessions (see [`fixture`]); the reference is installed into a virtualenv outside the
//! repository (see [`servers::default_venv`]).
//!
//! Cases (see [`cases`] and [`scale`]):
//! 1. per-call latency, one warm agent: send_keys, capture_pane, snapshot_pane, list_panes of
//!    20 panes, run_command `true`;
//! 2. 50 keystroke operations: one `send_keys_batch` against 50 single `send_keys`;
//! 3. `wait_for_text`: wake-up latency, and 10 agents idling 30 s in waits (tmux server CPU,
//!    tmux processes started, counted by a `tmux` wrapper on `PATH`);
//! 4. muxgate at scale: 64 busy agents for 60 s; 256 and 1,024 idle sessions with waits;
//! 5. muxgate's `send_keys` rate against a bare control client's pipelined rate;
//! 6. workspace mode: 64 tenants × 4 sessions with waits (see [`workspaces`]);
//! 7. the gateway's own cost per call against a `/healthz` round trip (see [`cost`]);
//! 8. agent awareness: `wait_for_state` wake-up and idle cost, `send_prompt` deliveries to an
//!    agent-CLI stand-in at random moments (see [`agents`]);
//! 9. sessions that recycle: one client opening 200 sessions in a row without `DELETE`, the
//!    gateway's RSS after 20, 100 and 200 (see [`recycle`]);
//! 10. a fleet of 32 agents as workers in worktrees, coordinated through the fleet resource's
//!     subscription: taken exactly once, told exactly once, edge-to-wake latency, idle cost
//!     (see [`fleet`]).
//!
//! ```text
//! cargo bench --bench reference                          # full run, about 10 minutes
//! cargo bench --bench reference -- --only latency,batch  # some groups
//! cargo bench --bench reference -- --only sessions --sessions 64,256
//! cargo bench --bench reference -- --only sessions --stateless   # waiting agents at 2026-07-28
//! cargo bench --bench reference -- --only sessions --stateless-through-rmcp   # the same, via rmcp
//! cargo bench --bench reference -- --only workspaces --workspaces 64   # needs bubblewrap
//! cargo bench --bench reference -- --only cost           # per-call cost vs /healthz
//! cargo bench --bench reference -- --only agents         # state waits and send_prompt
//! cargo bench --bench reference -- --only recycle        # 200 sessions never ended
//! cargo bench --bench reference -- --only recycle --recycle 2000   # or as many as asked
//! cargo bench --bench reference -- --only fleet          # 32 agents as workers
//! cargo bench --bench reference -- --quick               # smoke run
//! cargo test --bench reference                           # the same smoke run
//! ```
//!
//! Prints Markdown tables. This measures speed and cost only; behaviour is tested in `tests/`.

mod agents;
mod cases;
mod cost;
mod fixture;
mod fleet;
mod procfs;
mod raw;
mod recycle;
mod scale;
mod servers;
mod stats;
mod workspaces;
// The date, commit and load of a run, printed by both benchmarks.
#[path = "../shared/provenance.rs"]
mod provenance;

use std::collections::BTreeSet;

use anyhow::{Context, Result, bail};

use cases::{LATENCY_CASES, Paired};
use cost::Era;
use fixture::BenchTmux;
use provenance::{load_average, provenance};
use servers::{Flavor, Muxgate, REFERENCE_PACKAGE, REFERENCE_VERSION, Reference};
use stats::{cpu_ms, latency, median, mib, quantile, rate, ratio};

const GROUPS: [&str; 12] = [
    "latency",
    "batch",
    "wake",
    "idle",
    "busy",
    "sessions",
    "ceiling",
    "workspaces",
    "cost",
    "agents",
    "recycle",
    "fleet",
];

/// The groups that run the reference server (the others measure muxgate alone).
const REFERENCE_GROUPS: [&str; 5] = ["latency", "batch", "wake", "idle", "sessions"];

/// Command-line options (`cargo bench --bench reference -- <options>`).
struct Options {
    rounds: usize,
    calls: usize,
    wakes: usize,
    idle_secs: f64,
    busy_agents: usize,
    busy_secs: f64,
    sessions: Vec<usize>,
    /// How the waiting agents of the `sessions` group speak MCP.
    era: Era,
    ceiling_agents: usize,
    ceiling_secs: f64,
    ceiling_raw_ops: usize,
    workspaces: usize,
    workspace_sessions: usize,
    workspace_secs: f64,
    cost_calls: usize,
    state_wakes: usize,
    state_idle_secs: f64,
    prompts: usize,
    recycle_sessions: usize,
    fleet_agents: usize,
    fleet_idle_secs: f64,
    groups: BTreeSet<String>,
}

impl Options {
    fn parse(mut args: impl Iterator<Item = String>) -> Result<Self> {
        let mut options = Options {
            rounds: 7,
            calls: 20,
            wakes: 3,
            idle_secs: 30.0,
            busy_agents: 64,
            busy_secs: 60.0,
            sessions: vec![1024, 4096],
            era: Era::Session,
            ceiling_agents: 64,
            ceiling_secs: 5.0,
            ceiling_raw_ops: 50_000,
            workspaces: 64,
            workspace_sessions: 4,
            workspace_secs: 5.0,
            cost_calls: 1000,
            state_wakes: 20,
            state_idle_secs: 20.0,
            prompts: 200,
            recycle_sessions: 200,
            fleet_agents: 32,
            fleet_idle_secs: 10.0,
            groups: GROUPS.iter().map(|g| (*g).to_owned()).collect(),
        };
        let mut benchmarking = false;
        while let Some(arg) = args.next() {
            match arg.as_str() {
                // `cargo bench` passes `--bench`; `cargo test --bench reference` does not, and
                // then a smoke run shows that the benchmark still works.
                "--bench" => benchmarking = true,
                "--quick" => options.quick(),
                "--rounds" => options.rounds = positive(args.next(), "--rounds")?,
                "--workspaces" => {
                    options.workspaces = positive(args.next(), "--workspaces")?;
                }
                "--recycle" => {
                    options.recycle_sessions = positive(args.next(), "--recycle")?;
                }
                "--sessions" => {
                    let list = args
                        .next()
                        .context("--sessions needs counts, e.g. 256,1024")?;
                    options.sessions = list
                        .split(',')
                        .map(|n| positive(Some(n.to_owned()), "--sessions"))
                        .collect::<Result<_>>()?;
                }
                "--stateless" => options.era = Era::Stateless,
                "--stateless-through-rmcp" => options.era = Era::StatelessThroughRmcp,
                "--only" => {
                    let list = args.next().context("--only needs a list of groups")?;
                    options.groups.clear();
                    for group in list.split(',') {
                        if !GROUPS.contains(&group) {
                            bail!("unknown group {group:?} (known: {})", GROUPS.join(", "));
                        }
                        options.groups.insert(group.to_owned());
                    }
                }
                other => bail!(
                    "unknown option {other:?} (known: --rounds N, --only GROUP,GROUP…, --sessions N,N…, --stateless, --stateless-through-rmcp, --workspaces N, --recycle N, --quick)"
                ),
            }
        }
        if !benchmarking {
            options.quick();
        }
        Ok(options)
    }

    fn quick(&mut self) {
        self.rounds = 2;
        self.calls = 3;
        self.wakes = 1;
        self.idle_secs = 3.0;
        self.busy_agents = 4;
        self.busy_secs = 3.0;
        self.sessions = vec![8, 16];
        self.ceiling_agents = 4;
        self.ceiling_secs = 1.0;
        self.ceiling_raw_ops = 2_000;
        self.workspaces = 3;
        self.workspace_sessions = 2;
        self.workspace_secs = 1.0;
        self.cost_calls = 20;
        self.state_wakes = 3;
        self.state_idle_secs = 5.0;
        self.prompts = 8;
        self.recycle_sessions = 40;
        self.fleet_agents = 3;
        self.fleet_idle_secs = 3.0;
    }

    fn runs(&self, group: &str) -> bool {
        self.groups.contains(group)
    }
}

fn positive(value: Option<String>, option: &str) -> Result<usize> {
    value
        .and_then(|n| n.parse().ok())
        .filter(|&n| n > 0)
        .with_context(|| format!("{option} needs a positive number"))
}

fn main() -> Result<()> {
    let options = Options::parse(std::env::args().skip(1))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("start the tokio runtime")?;
    runtime.block_on(run(options))
}

async fn run(options: Options) -> Result<()> {
    if !REFERENCE_GROUPS.iter().any(|g| options.runs(g)) {
        println!(
            "# muxgate

{}; {}; load average at start: {}
",
            provenance(),
            tmux_version(),
            load_average()
        );
        return alone(&options).await;
    }
    let venv = servers::default_venv()?;
    eprintln!(
        "installing {REFERENCE_PACKAGE}=={REFERENCE_VERSION} into {}",
        venv.display()
    );
    let reference = Reference::install(&venv)?;
    println!(
        "# muxgate vs {REFERENCE_PACKAGE} {REFERENCE_VERSION}\n\n{}; {} rounds; {}; load average at start: {}\n",
        provenance(),
        options.rounds,
        tmux_version(),
        load_average()
    );

    if options.runs("latency") || options.runs("batch") || options.runs("wake") {
        side_by_side(&options, &reference).await?;
    }
    if options.runs("idle") {
        idle(&options, &reference).await?;
    }
    if options.runs("sessions") {
        sessions(&options, &reference).await?;
    }
    alone(&options).await
}

/// The groups that measure muxgate alone.
async fn alone(options: &Options) -> Result<()> {
    if options.runs("busy") {
        busy(options).await?;
    }
    if options.runs("ceiling") {
        ceiling(options).await?;
    }
    if options.runs("workspaces") {
        workspace_scale(options).await?;
    }
    if options.runs("cost") {
        per_call_cost(options).await?;
    }
    if options.runs("agents") {
        agent_awareness(options).await?;
    }
    if options.runs("recycle") {
        recycling(options).await?;
    }
    if options.runs("fleet") {
        fleet_of_workers(options).await?;
    }
    println!("load average at end: {}", load_average());
    Ok(())
}

/// Case 10: a fleet of agents as workers, coordinated through its subscription.
async fn fleet_of_workers(options: &Options) -> Result<()> {
    let n = options.fleet_agents;
    eprintln!("fleet: {n} agents");
    let r = fleet::fleet(n, options.fleet_idle_secs).await?;
    println!(
        "## muxgate: a fleet of agents as workers\n\n{n} stand-ins of Claude Code's screens (`tests/programs/agent_screens.py`, 1 s start-up, 0.5–3 s of work before and after a permission dialog) spawned in 4 lanes by one client (its waits are capped at 4), each in a git worktree of its own with its task; a coordinator holds one `subscriptions/listen` on `tmux://bench/agents` and, woken, reads `list_agents` and answers each blocked agent once (`answer_agent`, screen digest, idempotency key). A webhook receiver takes `agent_blocked` and `agent_idle`. {:.0} s from the first spawn to the last agent idle.\n",
        r.total.as_secs_f64()
    );
    let verdict = |ok: bool| if ok { "met" } else { "**missed**" };
    let pq = |v: &[f64]| format!("{:.0} ms, {:.0} ms", median(v), quantile(v, 0.99));
    println!("| What | Measured | Goal | Verdict |\n|---|--:|---|---|");
    println!(
        "| agents that read their task and one answer, each exactly once | {} of {} | all | {} |",
        r.exactly_once,
        r.agents,
        verdict(r.exactly_once == r.agents)
    );
    println!(
        "| agents told exactly once blocked and once idle (webhook) | {} of {} | all | {} |",
        r.notified_once,
        r.agents,
        verdict(r.notified_once == r.agents)
    );
    println!(
        "| dialog drawn → webhook received (p50, p99) | {} | — | — |",
        pq(&r.to_webhook)
    );
    println!(
        "| dialog drawn → coordinator's update arrived (p50, p99; the first after the edge) | {} | — | — |",
        pq(&r.to_coordinator)
    );
    println!(
        "| dialog drawn → its answer read by the agent (p50, p99) | {} | — | — |",
        pq(&r.to_answer)
    );
    println!(
        "| tmux commands while the fleet sits idle {:.0} s (subscription, followers running) | {:.0} | 0 | {} |",
        r.idle_secs,
        r.idle_commands,
        verdict(r.idle_commands == 0.0)
    );
    for odd in &r.odd_notifications {
        println!("\nNot told exactly once of each edge: {odd}");
    }
    Ok(())
}

/// RSS may grow by at most this share from the early point to the last session.
const RECYCLE_GROWTH_GOAL: f64 = 0.10;

/// Case 9: sessions that recycle.
async fn recycling(options: &Options) -> Result<()> {
    let (sessions, rounds) = (options.recycle_sessions, options.rounds);
    eprintln!("recycle: {sessions} sessions × {rounds} rounds");
    let results = recycle::recycle(sessions, rounds).await?;
    let early = recycle::EARLY;
    println!(
        "## muxgate: sessions that recycle\n\n{rounds} rounds, each on a fresh gateway with the default `http.max_sessions_per_client` (32): one client opens {sessions} sessions in a row (`initialize`, `notifications/initialized`, one `list_servers` call, each session on a connection of its own) and never ends one. RSS from `/proc` once the open-session gauge shows the evicted sessions closed; medians of the rounds.\n"
    );
    let all =
        |f: &dyn Fn(&recycle::RecycleRound) -> f64| -> Vec<f64> { results.iter().map(f).collect() };
    let ok = results.iter().filter(|r| r.initialized == sessions).count();
    let early_kib = median(&all(&|r| r.rss_early_kib as f64));
    let end_kib = median(&all(&|r| r.rss_end_kib as f64));
    // Against the halfway point, not the early one: past the cap both hold the same open
    // sessions, so what grows between them grows with the sessions seen (from the early point
    // the open sessions themselves grow, from 20 to the cap).
    let growth = median(&all(&|r| {
        (r.rss_end_kib as f64 - r.rss_half_kib as f64) / r.rss_half_kib.max(1) as f64
    }));
    let inits: Vec<f64> = results
        .iter()
        .flat_map(|r| r.initialize_us.clone())
        .collect();
    println!("| measure | value |\n|---|--:|");
    println!("| rounds in which every `initialize` was answered 200 | {ok} of {rounds} |");
    println!(
        "| sessions open at the end / evicted | {:.0} / {:.0} |",
        median(&all(&|r| r.open_at_end)),
        median(&all(&|r| r.evicted))
    );
    println!(
        "| gateway RSS after {early} sessions | {} |",
        mib(early_kib)
    );
    println!(
        "| gateway RSS after {} sessions | {} |",
        sessions / 2,
        mib(median(&all(&|r| r.rss_half_kib as f64)))
    );
    println!(
        "| gateway RSS after {sessions} sessions | {} |",
        mib(end_kib)
    );
    println!(
        "| `initialize` round trip, median / p90 | {} / {} |",
        latency(median(&inits)),
        latency(quantile(&inits, 0.9))
    );
    let met = ok == rounds && growth <= RECYCLE_GROWTH_GOAL;
    println!(
        "\nGoal: every `initialize` answered 200, and RSS after {sessions} sessions at most {:.0} % above RSS after {} (both past the cap of 32 open sessions: memory that does not grow with the sessions seen). Value: {ok} of {rounds} rounds all 200, RSS {:+.1} % (median of per-round growth). **{}**.\n",
        RECYCLE_GROWTH_GOAL * 100.0,
        sessions / 2,
        growth * 100.0,
        if met { "met" } else { "missed" }
    );
    if sessions / 2 <= 32 {
        println!(
            "(A smoke run: after {} sessions the cap is not reached yet, so the goal compares different numbers of open sessions.)\n",
            sessions / 2
        );
    }
    Ok(())
}

/// Case 8: state waits and prompt delivery.
async fn agent_awareness(options: &Options) -> Result<()> {
    eprintln!("agents: wake-up");
    let wake = agents::wake(options.state_wakes).await?;
    println!(
        "## muxgate: waiting on agents\n\nWake-up: from the pane printing the event (through a FIFO read by `cat`) to the call returning; {} of each, alternating on one pane.\n",
        options.state_wakes
    );
    println!("| wait | median | p90 |\n|---|--:|--:|");
    for (label, samples) in [
        (
            "wait_for_state command_finished (OSC 133 D printed)",
            &wake.state,
        ),
        ("wait_for_text (the line printed)", &wake.text),
    ] {
        println!(
            "| {label} | {} | {} |",
            latency(median(samples)),
            latency(quantile(samples, 0.9))
        );
    }
    eprintln!("agents: idle waits");
    let idle = agents::idle(options.state_idle_secs).await?;
    println!(
        "\n{} waits idling {} s on quiet panes (10 sessions × 10 panes, one agent each), per kind, each on a fresh tmux server and gateway; measured from {} s after the calls to 0.5 s before their timeout. tmux commands from the gateway's `muxgate_tmux_commands_total`, tmux processes by a `tmux` wrapper on `PATH`, CPU from `/proc` (10 ms ticks).\n",
        agents::IDLE_WAITS,
        options.state_idle_secs,
        3
    );
    println!(
        "| waits | window | tmux commands | tmux processes started | tmux server CPU | gateway CPU |\n|---|--:|--:|--:|--:|--:|"
    );
    for c in &idle {
        println!(
            "| {} | {:.1} s | {} | {} | {} | {} |",
            c.label,
            c.wall.as_secs_f64(),
            c.tmux_commands,
            c.tmux_spawned,
            cpu_ms(c.tmux_server_cpu),
            cpu_ms(c.gateway_cpu)
        );
    }
    eprintln!("agents: approvals");
    let a = agents::approvals(options.state_wakes).await?;
    println!(
        "\nApprovals: {} `send_keys` calls held by an `[approvals]` rule, each approved over `POST /approvals/{{id}}` by another client as soon as `GET /approvals` (polled every millisecond) lists it, alternating with the same call not held.\n",
        a.unheld.len()
    );
    println!("| | median | p90 |\n|---|--:|--:|");
    for (label, samples) in [
        ("approval sent → the agent's answer", &a.decided_to_answer),
        ("call → listed for the approver", &a.call_to_listed),
        ("the same call, not held", &a.unheld),
    ] {
        println!(
            "| {label} | {} | {} |",
            latency(median(samples)),
            latency(quantile(samples, 0.9))
        );
    }
    eprintln!("agents: send_prompt");
    let p = agents::prompts(options.prompts, 4).await?;
    println!(
        "\n`send_prompt`: {} prompts to 4 agent-CLI stand-ins (`tests/programs/agent_cli.py`: 1 s start-up that discards typeahead, 0.3–1.2 s thinking after each prompt, an Enter within 50 ms of a paste taken as a newline), each lane sending one after the other after a random pause of 0–1.5 s, one in six right after restarting the program; a third of the prompts span two lines. {:.0} s in all.\n",
        p.deliveries,
        p.wall.as_secs_f64()
    );
    println!(
        "| deliveries | taken exactly once, answered `submitted` | answered `submitted`, never taken | taken twice | taken inside another prompt | not taken, answered otherwise | taken, answered otherwise | submitted at the second Enter | sent during start-up | time to `submitted` (median, p90) |\n|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
    );
    println!(
        "| {} | **{}** ({:.1} %) | {} | {} | {} | {} | {} | {} | {} | {:.0} ms, {:.0} ms |",
        p.deliveries,
        p.exactly_once,
        100.0 * p.exactly_once as f64 / p.deliveries.max(1) as f64,
        p.lost,
        p.duplicated,
        p.merged,
        p.refused,
        p.unconfirmed,
        p.second_enter,
        p.while_starting,
        median(&p.submit_ms),
        quantile(&p.submit_ms, 0.9)
    );
    Ok(())
}

/// Case 7: the gateway's own cost per call.
async fn per_call_cost(options: &Options) -> Result<()> {
    eprintln!("cost per call");
    let costs = cost::per_call_cost(options.cost_calls).await?;
    println!(
        "## muxgate: cost per call against /healthz\n\nOne keep-alive HTTP/1.1 connection, raw JSON-RPC; {} calls alternating with `GET /healthz` (medians), then {} calls alone for the gateway's CPU. A `/healthz` alone costs the gateway {:.0} µs of CPU.\n",
        options.cost_calls,
        options.cost_calls * 3,
        costs.healthz_cpu_us
    );
    println!(
        "| call | protocol | call | /healthz | call ÷ /healthz (goal) | gateway CPU per call (goal) |\n|---|---|--:|--:|--:|--:|"
    );
    for c in &costs.calls {
        let ratio = c.call_us / c.healthz_us;
        let ratio_goal = match cost::ratio_goal(c.label) {
            Some(goal) => format!(" (≤ {goal}×, {})", met(ratio <= goal)),
            None => String::new(),
        };
        let cpu_goal = match cost::cpu_goal_us(c.label) {
            Some(goal) => format!(" (≤ {goal:.0} µs, {})", met(c.gateway_cpu_us <= goal)),
            None => String::new(),
        };
        println!(
            "| {} | {} | {} | {} | **{:.2}×**{ratio_goal} | {:.0} µs{cpu_goal} |",
            c.label,
            c.era.name(),
            latency(c.call_us),
            latency(c.healthz_us),
            ratio,
            c.gateway_cpu_us,
        );
    }
    println!();
    Ok(())
}

/// Case 6: workspace mode at scale.
async fn workspace_scale(options: &Options) -> Result<()> {
    let (count, per) = (options.workspaces, options.workspace_sessions);
    eprintln!("workspaces: {count} × {per} sessions");
    let w = workspaces::workspaces(count, per, options.workspace_secs).await?;
    let kib = |v: u64| mib(v as f64);
    println!(
        "## muxgate: workspaces

{count} tenants, each its own workspace (a sandboxed tmux server) with {per} sessions and a wait_for_text in flight on each; then capture_pane every 20 ms in one quiet workspace for {} s while all idle, and again while another workspace floods one pane (`yes`).
",
        options.workspace_secs
    );
    println!(
        "| measure | value |
|---|--:|"
    );
    println!(
        "| first call of a tenant (its workspace started, then create_session): p50 / p99 / max | {} / {} / {} |",
        latency(quantile(&w.first_calls, 0.5)),
        latency(quantile(&w.first_calls, 0.99)),
        latency(quantile(&w.first_calls, 1.0))
    );
    println!(
        "| create_session in a running workspace: p50 / p99 | {} / {} |",
        latency(quantile(&w.later_creates, 0.5)),
        latency(quantile(&w.later_creates, 0.99))
    );
    println!(
        "| every wait attached after the last one started | {:.1} s |",
        w.settled.as_secs_f64()
    );
    println!(
        "| gateway RSS: at start / with {} workspaces / per workspace | {} / {} / {} |",
        w.workspaces,
        kib(w.gateway_rss_baseline_kib),
        kib(w.gateway_rss_kib),
        kib(w.gateway_rss_kib.saturating_sub(w.gateway_rss_baseline_kib) / w.workspaces as u64)
    );
    println!(
        "| helpers (sandboxes, tmux servers, shells, jailed tmux clients): processes / PSS / per workspace | {} / {} / {} |",
        w.helper_processes,
        kib(w.helpers_pss_kib),
        kib(w.helpers_pss_kib / w.workspaces as u64)
    );
    println!(
        "| tmux servers' CPU while idle, all {} | {:.1} ms/s |",
        w.workspaces, w.tmux_cpu_ms_per_s
    );
    let (idle_p50, flood_p50) = (quantile(&w.quiet_idle, 0.5), quantile(&w.quiet_flood, 0.5));
    let (idle_p99, flood_p99) = (
        quantile(&w.quiet_idle, 0.99),
        quantile(&w.quiet_flood, 0.99),
    );
    println!(
        "| quiet workspace capture_pane, all idle: p50 / p99 | {} / {} |",
        latency(idle_p50),
        latency(idle_p99)
    );
    println!(
        "| quiet workspace capture_pane, another flooding: p50 / p99 (÷ idle) | {} / {} ({} / {}) |
",
        latency(flood_p50),
        latency(flood_p99),
        ratio(flood_p50 / idle_p50),
        ratio(flood_p99 / idle_p99)
    );
    Ok(())
}

/// Cases 1–3a: both servers up at once, the cases in rounds.
async fn side_by_side(options: &Options, reference: &Reference) -> Result<()> {
    let mux_tmux = BenchTmux::start("muxgate", None)?;
    let gateway = Muxgate::start(mux_tmux.socket(), None).await?;
    let mut muxgate = cases::start_side(Flavor::Muxgate, Some(&gateway), reference, mux_tmux)
        .await
        .context("muxgate side")?;
    let ref_tmux = BenchTmux::start("reference", None)?;
    let mut reference = cases::start_side(Flavor::Reference, None, reference, ref_tmux)
        .await
        .context("reference side")?;

    let mut latencies: Vec<Paired> = LATENCY_CASES.iter().map(|_| Paired::default()).collect();
    let mut batches = Vec::new();
    let mut wakes = Paired::default();
    for round in 0..options.rounds {
        eprintln!("side by side: round {} of {}", round + 1, options.rounds);
        if options.runs("latency") {
            cases::latency_round(&muxgate, &reference, options.calls, round, &mut latencies)
                .await?;
        }
        if options.runs("batch") {
            batches.push(cases::batch_round(&muxgate, &reference, round).await?);
        }
        if options.runs("wake") {
            cases::wake_round(
                &mut muxgate,
                &mut reference,
                options.wakes,
                round,
                &mut wakes,
            )
            .await?;
        }
    }

    if options.runs("latency") {
        println!(
            "## Per-call latency, one warm agent\n\nMedian over rounds of each round's median of {} calls; ratio: median of the per-round ratios.\n",
            options.calls
        );
        println!(
            "| call | muxgate | {REFERENCE_PACKAGE} | {REFERENCE_PACKAGE} ÷ muxgate (goal ≥ 10×) |"
        );
        println!("|---|--:|--:|--:|");
        for (name, paired) in LATENCY_CASES.iter().zip(&latencies) {
            print_paired(name, paired, 10.0);
        }
        println!();
    }
    if options.runs("batch") {
        let column = |f: &dyn Fn(&(cases::BatchTimes, cases::BatchTimes)) -> f64| -> f64 {
            median(&batches.iter().map(f).collect::<Vec<_>>())
        };
        println!(
            "## {} keystroke operations into one pane\n\nMedian over {} rounds (one of each per round).\n",
            cases::BATCH_OPS,
            batches.len()
        );
        println!("| how | muxgate | {REFERENCE_PACKAGE} | {REFERENCE_PACKAGE} ÷ muxgate |");
        println!("|---|--:|--:|--:|");
        let batch_ratio = column(&|(m, r)| r.batch / m.batch);
        println!(
            "| send_keys_batch (goal ≥ 50×) | {} | {} | **{}** ({}) |",
            latency(column(&|(m, _)| m.batch)),
            latency(column(&|(_, r)| r.batch)),
            ratio(batch_ratio),
            met(batch_ratio >= 50.0)
        );
        println!(
            "| {} single send_keys calls | {} | {} | {} |",
            cases::BATCH_OPS,
            latency(column(&|(m, _)| m.singles)),
            latency(column(&|(_, r)| r.singles)),
            ratio(column(&|(m, r)| r.singles / m.singles))
        );
        println!(
            "| singles ÷ batch, same server | {} | {} | |\n",
            ratio(column(&|(m, _)| m.singles / m.batch)),
            ratio(column(&|(_, r)| r.singles / r.batch)),
        );
    }
    if options.runs("wake") {
        println!(
            "## wait_for_text wake-up\n\nFrom the pane printing the awaited text to the call returning; waits per server per round: {}.\n",
            options.wakes
        );
        println!("| | muxgate | {REFERENCE_PACKAGE} | {REFERENCE_PACKAGE} ÷ muxgate |");
        println!("|---|--:|--:|--:|");
        println!(
            "| wake-up latency | {} | {} | {} |\n",
            latency(median(&wakes.muxgate)),
            latency(median(&wakes.reference)),
            ratio(median(&wakes.ratios))
        );
    }
    muxgate.agent.close().await;
    reference.agent.close().await;
    gateway.stop().await;
    Ok(())
}

fn print_paired(name: &str, paired: &Paired, goal: f64) {
    let r = median(&paired.ratios);
    println!(
        "| {name} | {} | {} | **{}** ({}) |",
        latency(median(&paired.muxgate)),
        latency(median(&paired.reference)),
        ratio(r),
        met(r >= goal)
    );
}

fn met(ok: bool) -> &'static str {
    if ok { "met" } else { "missed" }
}

/// Case 3b: idle waits, one server after the other.
async fn idle(options: &Options, reference: &Reference) -> Result<()> {
    eprintln!("idle waits: muxgate");
    let m = cases::idle_waits(Flavor::Muxgate, reference, options.idle_secs, "idle-mux").await?;
    eprintln!("idle waits: reference");
    let r = cases::idle_waits(Flavor::Reference, reference, options.idle_secs, "idle-ref").await?;
    println!(
        "## {} agents each waiting {} s on a quiet pane\n\nOne server after the other, each with a fresh tmux server; each agent its own MCP session (for {REFERENCE_PACKAGE}, its own stdio process) and its own tmux session. tmux processes started are counted by a `tmux` wrapper first on `PATH` (of the servers under test and of the tmux server's panes); CPU from `/proc/<pid>/stat` (10 ms ticks). Steady state: from {} s after the calls (every wait set up) to their return; whole: from the calls to their return.\n",
        cases::IDLE_AGENTS,
        options.idle_secs,
        cases::IDLE_SETTLE.as_secs()
    );
    println!("| | muxgate | {REFERENCE_PACKAGE} | {REFERENCE_PACKAGE} ÷ muxgate |");
    println!("|---|--:|--:|--:|");
    for (label, m, r) in [
        ("steady state", &m.steady, &r.steady),
        ("whole", &m.whole, &r.whole),
    ] {
        let goal = label == "steady state";
        let cpu_ratio = r.tmux_server_cpu.as_secs_f64() / m.tmux_server_cpu.as_secs_f64().max(1e-9);
        let cpu_ratio_text = if m.tmux_server_cpu.is_zero() {
            format!(
                "> {} (muxgate: 0 ticks)",
                ratio(r.tmux_server_cpu.as_secs_f64() / stats::tick_secs())
            )
        } else {
            ratio(cpu_ratio)
        };
        let cpu_goal = m.tmux_server_cpu.is_zero() || cpu_ratio >= 50.0;
        println!(
            "| {label}: wall time | {:.1} s | {:.1} s | |",
            m.wall.as_secs_f64(),
            r.wall.as_secs_f64()
        );
        println!(
            "| {label}: tmux server CPU{} | {} | {} | **{}**{} |",
            if goal { " (goal ≥ 50× less)" } else { "" },
            cpu_ms(m.tmux_server_cpu),
            cpu_ms(r.tmux_server_cpu),
            cpu_ratio_text,
            if goal {
                format!(" ({})", met(cpu_goal))
            } else {
                String::new()
            }
        );
        println!(
            "| {label}: tmux processes started{} | **{}**{} | {} | |",
            if goal { " (goal 0)" } else { "" },
            m.spawned(),
            if goal {
                format!(" ({})", met(m.spawned() == 0))
            } else {
                String::new()
            },
            r.spawned()
        );
        println!(
            "| {label}: CPU of the server under test and its helpers | {} | {} | {} |",
            cpu_ms(m.server_side_cpu),
            cpu_ms(r.server_side_cpu),
            ratio(r.server_side_cpu.as_secs_f64() / m.server_side_cpu.as_secs_f64().max(0.01))
        );
    }
    println!(
        "\ntmux processes started over the whole window, by command: muxgate {:?}; {REFERENCE_PACKAGE} {:?}\n",
        m.whole.spawns, r.whole.spawns
    );
    Ok(())
}

/// Case 4a: busy agents on muxgate.
async fn busy(options: &Options) -> Result<()> {
    eprintln!("busy agents: {}", options.busy_agents);
    let b = scale::busy_agents(options.busy_agents, options.busy_secs).await?;
    let wall = b.wall.as_secs_f64();
    println!(
        "## muxgate: {} concurrent agents for {:.0} s\n\nEach agent: its own MCP session (token) and tmux session (bash); in a loop: send_keys `sleep 0.3; echo done-N`, wait_for_text for it, capture_pane, snapshot_pane, list_panes, run_command `echo ok`.\n",
        b.agents, wall
    );
    println!("| measure | value |\n|---|--:|");
    println!(
        "| tool calls (all kinds) | {} ({}; {} failed) |",
        b.calls,
        rate(b.calls as f64 / wall),
        b.errors
    );
    println!(
        "| send_keys, capture_pane, snapshot_pane, list_panes: p50 / p99 | {} / {} |",
        latency(quantile(&b.quick, 0.5)),
        latency(quantile(&b.quick, 0.99))
    );
    println!(
        "| run_command `echo ok`: p50 / p99 | {} / {} |",
        latency(quantile(&b.run_command, 0.5)),
        latency(quantile(&b.run_command, 0.99))
    );
    println!(
        "| wait_for_text (incl. the shell's 0.3 s): p50 / p99; missed | {} / {}; {} |",
        latency(quantile(&b.waits, 0.5)),
        latency(quantile(&b.waits, 0.99)),
        b.waits_missed
    );
    println!(
        "| gateway RSS, peak | {} |",
        mib(b.gateway_rss_peak_kib as f64)
    );
    println!(
        "| gateway CPU | {} ({:.0} % of one core) |",
        cpu_ms(b.gateway_cpu),
        100.0 * b.gateway_cpu.as_secs_f64() / wall
    );
    println!(
        "| gateway's tmux control clients | {} ({} CPU) |",
        b.control_clients,
        cpu_ms(b.control_clients_cpu)
    );
    println!(
        "| tmux server CPU | {} ({:.0} % of one core) |",
        cpu_ms(b.tmux_server_cpu),
        100.0 * b.tmux_server_cpu.as_secs_f64() / wall
    );
    println!(
        "| the agents' own CPU (this benchmark process) | {} |\n",
        cpu_ms(b.bench_cpu)
    );
    Ok(())
}

/// Case 4b: idle sessions on muxgate, and one reference process for comparison.
async fn sessions(options: &Options, reference: &Reference) -> Result<()> {
    eprintln!("idle sessions: {:?}", options.sessions);
    let s = scale::idle_sessions(&options.sessions, options.era).await?;
    let ref_rss = scale::reference_process_rss(reference).await?;
    println!(
        "## muxgate: mostly idle sessions, each with a wait in flight\n\nEach waiting agent: its own token, MCP speaking {} (a session of its own, or none), and tmux session (a quiet pane), one wait_for_text in flight; then 5 s with everything idle (tmux server CPU), one capture_pane every 20 ms round robin for 5 s, and {} wake-ups of a wait on one more pane (from the line reaching the pane to the call returning). Step 0: the same before any wait. Gateway RSS at start (one call made): {}.\n",
        options.era.name(),
        scale::WAKES,
        mib(s.baseline_rss_kib as f64)
    );
    println!(
        "| sessions | gateway RSS | gateway + helpers PSS | control clients (attaches so far) | tmux server RSS | tmux server CPU, idle | all watched after (first / last wait) | CPU meanwhile: tmux server / gateway | tmux commands meanwhile, per wait | capture_pane p50 / p99 meanwhile | wake-up p50 / max |"
    );
    println!("|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|");
    for step in &s.steps {
        println!(
            "| {} | {} | {} | {} ({:.0}) | {} | {:.0} ms/s | {:.1} s / {:.1} s | {:.1} s / {:.1} s | {:.1} | {} / {} | {} / {} |",
            step.sessions,
            mib(step.gateway_rss_kib as f64),
            mib(step.gateway_and_helpers_pss_kib as f64),
            step.control_clients,
            step.attaches,
            mib(step.tmux_server_rss_kib as f64),
            step.tmux_server_idle_cpu_ms_per_s,
            step.settled_from_first.as_secs_f64(),
            step.settled_from_last.as_secs_f64(),
            step.settling.tmux_server_cpu.as_secs_f64(),
            step.settling.gateway_cpu.as_secs_f64(),
            step.settling.tmux_commands / step.sessions.max(1) as f64,
            latency(quantile(&step.trickle, 0.5)),
            latency(quantile(&step.trickle, 0.99)),
            latency(quantile(&step.wakes, 0.5)),
            latency(quantile(&step.wakes, 1.0)),
        );
    }
    println!(
        "\nFor comparison, one {REFERENCE_PACKAGE} process (stdio: one per agent) after a few calls: RSS {}.\n",
        mib(ref_rss as f64)
    );
    print_scale_goals(&s);
    Ok(())
}

/// The scale goals, judged at the largest step against step 0 (the same gateway before any
/// wait): goal, value, met or missed.
fn print_scale_goals(s: &scale::IdleSessions) {
    let (Some(before), Some(at)) = (s.steps.first(), s.steps.last()) else {
        return;
    };
    let p99 = |step: &scale::IdleStep| quantile(&step.trickle, 0.99);
    let p50_wake = |step: &scale::IdleStep| quantile(&step.wakes, 0.5);
    let capture_ratio = p99(at) / p99(before);
    let wake_ratio = p50_wake(at) / p50_wake(before);
    let pss_mb = at.gateway_and_helpers_pss_kib as f64 * 1024.0 / 1e6;
    let cpu = at.tmux_server_idle_cpu_ms_per_s;
    let attached = at.settled_from_last.as_secs_f64();
    let all_attached = at.settled_from_first.as_secs_f64();
    println!("Against the goals, at {} sessions:\n", at.sessions);
    println!("| goal | value | verdict |\n|---|---|---|");
    let rows = [
        (
            "tmux does not crash".to_owned(),
            format!(
                "{} sessions watched; tmux server RSS at the last step {}",
                at.sessions,
                mib(at.tmux_server_rss_kib as f64)
            ),
            at.tmux_server_rss_kib > 0,
        ),
        (
            "tmux server CPU while idle ≤ 50 ms/s (5 % of a core)".to_owned(),
            format!("{cpu:.0} ms/s"),
            cpu <= 50.0,
        ),
        (
            "capture_pane p99 ≤ 3× its p99 with nothing watched".to_owned(),
            format!(
                "{} ÷ {} = {capture_ratio:.1}×",
                latency(p99(at)),
                latency(p99(before))
            ),
            capture_ratio <= 3.0,
        ),
        (
            "wake-up p50 unchanged (≤ 1.5× with nothing watched)".to_owned(),
            format!(
                "{} against {} = {wake_ratio:.2}×",
                latency(p50_wake(at)),
                latency(p50_wake(before))
            ),
            wake_ratio <= 1.5,
        ),
        (
            "every wait watched within 10 s of its call".to_owned(),
            format!("{attached:.1} s after the last wait started"),
            attached <= 10.0,
        ),
        (
            "all waits attached within 40 s of the first".to_owned(),
            format!("{all_attached:.1} s"),
            all_attached <= 40.0,
        ),
        (
            "gateway and helpers ≤ 300 MB PSS".to_owned(),
            format!(
                "{pss_mb:.0} MB, {:.0} KiB per waiting agent",
                (at.gateway_and_helpers_pss_kib
                    .saturating_sub(before.gateway_and_helpers_pss_kib)) as f64
                    / at.sessions.max(1) as f64
            ),
            pss_mb <= 300.0,
        ),
    ];
    for (goal, value, ok) in rows {
        println!("| {goal} | {value} | **{}** |", met(ok));
    }
    println!();
}

/// Case 5: muxgate's send_keys rate against the bare control client's.
async fn ceiling(options: &Options) -> Result<()> {
    eprintln!("throughput ceiling");
    let rounds = scale::send_keys_ceiling(
        options.ceiling_agents,
        options.ceiling_secs,
        options.ceiling_raw_ops,
        options.rounds.min(5),
    )
    .await?;
    let column = |f: &dyn Fn(&scale::CeilingRound) -> f64| -> f64 {
        median(&rounds.iter().map(f).collect::<Vec<_>>())
    };
    let share = column(&|r| r.muxgate_rate / r.raw_rate);
    println!(
        "## Throughput ceiling: send-keys on one tmux server\n\nMedian of {} rounds; each round: {} `send-keys -l -- x` through a bare `tmux -C` client, all written at once, then {} agents calling send_keys (literal `x`, no Enter) for {} s.\n",
        rounds.len(),
        options.ceiling_raw_ops,
        options.ceiling_agents,
        options.ceiling_secs
    );
    println!("| measure | value |\n|---|--:|");
    println!(
        "| bare control client, pipelined | {} |",
        rate(column(&|r| r.raw_rate))
    );
    println!(
        "| muxgate send_keys calls, {} agents over HTTP | {} |",
        options.ceiling_agents,
        rate(column(&|r| r.muxgate_rate))
    );
    println!(
        "| muxgate ÷ bare (goal ≥ 50 %) | **{:.1} %** ({}) |",
        100.0 * share,
        met(share >= 0.5)
    );
    println!(
        "| gateway CPU per call | {:.0} µs |",
        column(&|r| r.gateway_cpu_per_call.as_secs_f64() * 1e6)
    );
    println!(
        "| agents' (rmcp client) CPU per call, same machine | {:.0} µs |\n",
        column(&|r| r.bench_cpu_per_call.as_secs_f64() * 1e6)
    );
    Ok(())
}

fn tmux_version() -> String {
    std::process::Command::new("tmux")
        .arg("-V")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_else(|_| "tmux (unknown version)".to_owned())
}
