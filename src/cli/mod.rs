//! The `muxgate` command line: argument parsing and the glue that runs each command.
//!
//! Each command is a thin function over library modules: `serve` ([`serve`]) assembles config,
//! MCP handler and router; `check-config` loads and summarizes a file; `doctor` runs
//! [`crate::doctor`]; `tools` prints [`crate::mcp::catalog`]; `skill` prints the SKILL.md of
//! [`crate::mcp::skill`]; `token` mints with
//! [`crate::auth::TokenMinter`]; `audit verify` ([`audit`]) checks [`crate::audit`] files; `healthcheck`
//! ([`healthcheck`]) asks a running gateway's `/healthz` (the container's HEALTHCHECK);
//! `approvals` ([`approvals`]) lists the calls held for approval and decides them. The last two
//! talk to the gateway with [`http_client`]. `recordings` ([`recordings`]) lists the recorded
//! panes' casts and exports a time range of one, from the directory alone. Errors here are `anyhow` with context; the library
//! modules below keep typed errors.

mod approvals;
mod audit;
mod check_config;
mod healthcheck;
mod host;
mod http_client;
mod recordings;
mod serve;
mod workspace;

use std::ffi::OsString;
use std::io::IsTerminal as _;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, Parser, Subcommand};
use tracing_subscriber::EnvFilter;

use crate::auth::config::SecretString;
use crate::auth::{MintRequest, TokenMinter, local_secret, parse_ttl};
use crate::config::{self, Config};
use crate::mcp::catalog;
pub use check_config::summary as config_summary;
pub use serve::{ReadyBanner, client_snippet};

/// The `muxgate` command line (its `--help` summary is the package description).
#[derive(Debug, Parser)]
#[command(name = "muxgate", version, about)]
pub struct Cli {
    /// The command to run.
    #[command(subcommand)]
    pub command: Command,
}

/// The commands of `muxgate`.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve MCP over HTTP at /mcp (plus /healthz and /readyz).
    Serve(ServeArgs),
    /// Load a config file (with MUXGATE_* overrides), print OK and a summary, or the error.
    CheckConfig {
        /// The TOML file to check.
        file: PathBuf,
    },
    /// Check tmux, the configured servers and stale muxgate control clients.
    Doctor(ConfigArg),
    /// Print the tool catalog (name, tier, annotations, summary) as Markdown.
    Tools,
    /// Print the skill that teaches an agent the gateway (a SKILL.md, as the gateway serves it
    /// at skill://muxgate/SKILL.md); save it as muxgate/SKILL.md in an agent's skills folder.
    Skill,
    /// Mint a bearer token signed with the configured key.
    Token(TokenArgs),
    /// Audit log tools.
    #[command(subcommand)]
    Audit(AuditCommand),
    /// Workspaces in the state directory: list them, stop one (its programs end, its files
    /// stay), delete one (stopped, then its files removed).
    Workspace(WorkspaceArgs),
    /// Ask a running gateway's /healthz; exit 0 when it answers 200 (for container probes).
    Healthcheck(HealthcheckArgs),
    /// Calls held at a running gateway until a person approves them: list them, approve or
    /// deny one; and secret entry requests waiting for a person: list them, take one's link
    /// (with a token of scope mux:approve, best given in MUXGATE_APPROVER_TOKEN).
    #[command(subcommand)]
    Approvals(ApprovalsCommand),
    /// Recorded panes (asciinema v2 casts): list the files, export a time range of one.
    #[command(subcommand)]
    Recordings(RecordingsCommand),
    /// Print a signed link to a read-only live view of a pane (README: Live view), signed with
    /// the key the gateway keeps in its state directory.
    ViewLink(ViewLinkArgs),
    /// On a host the gateway reaches over SSH: the forced command of the gateway's key
    /// (`restrict,command="muxgate host-gate"` in authorized_keys). Runs the request sshd
    /// passes in SSH_ORIGINAL_COMMAND only when it is tmux or the host probe as the gateway
    /// starts them.
    HostGate(HostGateArgs),
    /// On a host the gateway reaches over SSH: answer the gateway's questions about this
    /// machine's panes (their foreground processes, their terminals' modes), one line each on
    /// standard input, until it ends. The gateway starts it; it reads and changes nothing else.
    HostProbe,
    /// On a host that runs a gateway's workspaces: start one, or run a tmux client of one in
    /// its jail. The gateway runs it over its link.
    HostWorkspace(HostWorkspaceArgs),
    /// Hosts that dial in: `connect` on the host, `token` on the gateway.
    #[command(subcommand)]
    Host(host::HostCommand),
    /// The link of a host that dials in: joins standard input and output to the gateway's
    /// relay socket SOCKET (its ssh ProxyCommand; the gateway runs it).
    HostRelay {
        /// The relay socket.
        socket: PathBuf,
    },
}

/// `muxgate recordings`: list the recorded casts, or export a time range of one.
#[derive(Debug, Subcommand)]
pub enum RecordingsCommand {
    /// The recordings: file name and size in bytes, by name (server, pane, start time).
    List {
        /// The configuration, for the default recordings directory.
        #[command(flatten)]
        config: ConfigArg,
        /// The recordings directory; default: recordings.dir, else recordings in the state
        /// directory.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// Write the events from --from to --to seconds of a cast as a cast of their own (times
    /// counted from --from; the header's timestamp moved with them).
    Export {
        /// The configuration, for the default recordings directory.
        #[command(flatten)]
        config: ConfigArg,
        /// The recordings directory, where a bare FILE name is looked up.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
        /// The cast: a path, or a name as `list` shows it.
        file: PathBuf,
        /// Seconds into the file where the range starts (an audit record's `at_secs`).
        #[arg(long, value_name = "SECS", default_value_t = 0.0)]
        from: f64,
        /// Seconds into the file where the range ends; default: the end.
        #[arg(long, value_name = "SECS")]
        to: Option<f64>,
        /// Where to write it (0600); default: standard output.
        #[arg(long, short, value_name = "FILE")]
        output: Option<PathBuf>,
    },
}

/// `muxgate view-link`: the pane, the link's lifetime and its base URL.
#[derive(Debug, Args)]
pub struct ViewLinkArgs {
    /// The configuration: the tmux servers, `[view]`, `http.bind` for the default base URL, and
    /// the state directory holding the view key.
    #[command(flatten)]
    pub config: ConfigArg,
    /// The configured tmux server's name.
    #[arg(long)]
    pub server: String,
    /// The pane's id, `%N` (`tmux list-panes -a -F '#{pane_id} #{session_name}'` lists them).
    #[arg(long)]
    pub target: String,
    /// Minutes the link lives; default view.default_link_minutes, at most view.max_link_minutes.
    #[arg(long)]
    pub minutes: Option<u64>,
    /// The gateway's address the link starts with; default: the configured http.bind port over
    /// loopback.
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
}

/// `muxgate approvals`: the calls and secret entry requests held at a running gateway.
#[derive(Debug, Subcommand)]
pub enum ApprovalsCommand {
    /// The calls waiting: id, client, tool, rule, time waited, time left, summary.
    List {
        /// The gateway to ask and the approver's token.
        #[command(flatten)]
        gateway: ApproverArgs,
        /// Print the gateway's JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Let a waiting call run.
    Approve {
        /// The call's id, as `list` shows it.
        id: String,
        /// The gateway to ask and the approver's token.
        #[command(flatten)]
        gateway: ApproverArgs,
    },
    /// Refuse a waiting call.
    Deny {
        /// The call's id, as `list` shows it.
        id: String,
        /// Why; sent with the decision.
        #[arg(long, value_name = "TEXT")]
        reason: Option<String>,
        /// The gateway to ask and the approver's token.
        #[command(flatten)]
        gateway: ApproverArgs,
    },
    /// The secret entry requests waiting for an approver (their client could not show the
    /// link to its user): id, client, where the secret goes, time left, label.
    Secrets {
        /// The gateway to ask and the approver's token.
        #[command(flatten)]
        gateway: ApproverArgs,
        /// Print the gateway's JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Print a fresh one-time link to a waiting secret entry request, to open in a browser and
    /// type the secret at (not for a request made under the token's own identity).
    SecretLink {
        /// The request's id, as `secrets` shows it.
        id: String,
        /// The gateway to ask and the approver's token.
        #[command(flatten)]
        gateway: ApproverArgs,
    },
    /// Print a one-time link that signs the token's approver in to the inbox (`/inbox`): the
    /// page, made for a phone, where held calls, blocked agents and secret requests are
    /// settled. Open it on the phone (send it to yourself, or show it as a QR code).
    Link {
        /// The gateway to ask and the approver's token.
        #[command(flatten)]
        gateway: ApproverArgs,
    },
}

/// Where the approvals API is and how to be let in.
#[derive(Debug, Args)]
pub struct ApproverArgs {
    /// The configuration, for the default URL (its `http.bind` port and `[http.tls]`).
    #[command(flatten)]
    pub config: ConfigArg,
    /// The approvals URL; default: /approvals on the configured http.bind port, over loopback
    /// (https when [http.tls] is set).
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// A bearer token with scope mux:approve. Prefer the environment variable: other users can
    /// read a command line in the process list.
    #[arg(
        long,
        value_name = "TOKEN",
        env = "MUXGATE_APPROVER_TOKEN",
        hide_env_values = true,
        value_parser = secret
    )]
    pub token: Option<SecretString>,
    /// The PEM certificate of the gateway, or of the CA that issued it; required for https,
    /// where the certificate is always verified (the URL's host must be a name it lists).
    #[arg(long, value_name = "PEM")]
    pub ca_file: Option<PathBuf>,
    /// Seconds to wait for the answer.
    #[arg(long, default_value_t = 10)]
    pub timeout: u64,
}

/// Keeps a secret argument out of `Debug` output.
fn secret(text: &str) -> Result<SecretString, std::convert::Infallible> {
    Ok(SecretString::new(text))
}

/// `muxgate host-gate`: which tmux the key may run.
#[derive(Debug, Args)]
pub struct HostGateArgs {
    /// tmux as the gateway names it (`[hosts.<name>] tmux`).
    #[arg(long, default_value = "tmux")]
    pub tmux: String,
    /// This host runs the gateway's workspaces, set up by this muxgate configuration (its
    /// `[workspaces]` and `[state]`): the key then runs workspace requests and the probe only,
    /// never tmux itself.
    #[arg(long, value_name = "FILE")]
    pub workspaces_config: Option<PathBuf>,
}

/// `muxgate host-workspace`: one request of the gateway's for a workspace it placed here.
#[derive(Debug, Args)]
pub struct HostWorkspaceArgs {
    /// This machine's muxgate configuration: its `[workspaces]` and `[state]`.
    #[arg(long, value_name = "FILE")]
    pub config: PathBuf,
    /// What the gateway asks.
    #[command(subcommand)]
    pub request: HostWorkspaceRequest,
}

/// What the gateway asks of a workspace on this host.
#[derive(Debug, Clone, Subcommand)]
pub enum HostWorkspaceRequest {
    /// Start the workspace's sandbox unless it runs; returns once its tmux server answers.
    Start {
        /// The workspace.
        name: String,
    },
    /// Run a tmux client of the workspace in its jail, as its user.
    Client {
        /// The workspace.
        name: String,
        /// tmux's arguments.
        #[arg(last = true)]
        args: Vec<OsString>,
    },
}

/// `muxgate healthcheck`: where to ask and how long to wait.
#[derive(Debug, Args)]
pub struct HealthcheckArgs {
    /// The configuration, for the default URL (its `http.bind` port and `[http.tls]`).
    #[command(flatten)]
    pub config: ConfigArg,
    /// The URL to ask; default: /healthz on the configured http.bind port, over loopback
    /// (https when [http.tls] is set; the certificate is not verified, nothing secret is sent).
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// Seconds to wait for the answer.
    #[arg(long, default_value_t = 3)]
    pub timeout: u64,
}

/// `muxgate token`: the claims and lifetime of the token to mint.
#[derive(Debug, Args)]
pub struct TokenArgs {
    /// The configuration holding the signing key (`[auth]`; without a secret there, the local
    /// secret in the state directory).
    #[command(flatten)]
    pub config: ConfigArg,
    /// The client's identity (`sub`), also the key of its `[clients.<sub>]` policy.
    #[arg(long)]
    pub sub: String,
    /// Space-separated scopes: mux:read, mux:write, mux:admin (tools), or mux:approve alone (an
    /// approver deciding held calls).
    #[arg(long, default_value = "mux:read mux:write")]
    pub scope: String,
    /// Lifetime, e.g. 30m, 24h, 7d.
    #[arg(long, default_value = "24h")]
    pub ttl: String,
    /// Comma-separated server-name patterns the token is limited to. They narrow what the
    /// configuration grants (`[clients.<sub>] servers`, else `[clients_default]`) and never
    /// widen it; only for a sub that neither configures do they alone decide. In workspace mode
    /// they grant no configured server: only the configuration does.
    #[arg(long)]
    pub servers: Option<String>,
    /// Comma-separated session-name patterns the token is limited to.
    #[arg(long)]
    pub sessions: Option<String>,
    /// Limit the client to the sessions it creates.
    #[arg(long)]
    pub own_sessions: bool,
    /// Comma-separated toolsets the client is shown (inspect, run, manage, layout, config,
    /// buffers, channels, destroy, zellij, humans; or all, default).
    #[arg(long)]
    pub toolsets: Option<String>,
}

/// The commands of `muxgate audit`.
#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// Check an audit file's keyed chain (and its end against the head file) and list the
    /// records the gateway lost; exits non-zero on a broken or missing link, a cut end, any lost
    /// record, or without the key.
    Verify(VerifyArgs),
}

/// `muxgate audit verify`: the files to check, and the key and head file to check them with.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The configuration, for the default log, key and head file (`[audit]`, `[state]`).
    #[command(flatten)]
    pub config: ConfigArg,
    /// The audit files (JSON lines), in the order they were written, or a directory holding a
    /// log's files; default: the configured log and the files rotated out of it.
    pub files: Vec<PathBuf>,
    /// The audit key; default: audit.key_file, else audit.key in the state directory.
    #[arg(long, value_name = "FILE")]
    pub key: Option<PathBuf>,
    /// The head file; default: audit.head_file, else the log's own in the state directory
    /// (when it is absent, records cut off the end cannot be detected).
    #[arg(long, value_name = "FILE")]
    pub head: Option<PathBuf>,
}

/// `muxgate workspace`: the configuration and what to do.
#[derive(Debug, Args)]
pub struct WorkspaceArgs {
    /// The configuration: `[workspaces]` and the state directory.
    #[command(flatten)]
    pub config: ConfigArg,
    /// What to do.
    #[command(subcommand)]
    pub command: WorkspaceCommand,
}

/// The commands of `muxgate workspace`.
#[derive(Debug, Subcommand)]
pub enum WorkspaceCommand {
    /// Every workspace: name, running or stopped, its uid, when it was created.
    List,
    /// Stop a workspace's sandbox: every program in it ends; its files stay.
    Stop {
        /// The workspace's name (as `list` shows it).
        name: String,
    },
    /// Stop a workspace and delete its files (home, temporary files, record).
    Delete {
        /// The workspace's name (as `list` shows it).
        name: String,
    },
}

/// `--config FILE` (or `MUXGATE_CONFIG`): the configuration a command loads.
#[derive(Debug, Args)]
pub struct ConfigArg {
    /// TOML config file merged over the embedded default.
    #[arg(long, value_name = "FILE", env = "MUXGATE_CONFIG")]
    pub config: Option<PathBuf>,
}

/// `muxgate serve`: the configuration and listen address.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The configuration to serve.
    #[command(flatten)]
    pub config: ConfigArg,
    /// Listen address; overrides http.bind.
    #[arg(long, value_name = "ADDR")]
    pub bind: Option<SocketAddr>,
    /// TEST ONLY: serve the MCP conformance suite — authentication OFF, its fixtures added,
    /// loopback addresses only.
    #[cfg(feature = "conformance")]
    #[arg(long)]
    pub conformance: bool,
}

/// Runs the parsed command; the exit code tells success from failed checks.
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Serve(args) => {
            serve::run(args)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Healthcheck(args) => healthcheck::run(&args),
        Command::CheckConfig { file } => {
            let loaded = Config::load(Some(&file), config::process_env()?)?;
            print!("{}", check_config::summary(&loaded));
            Ok(ExitCode::SUCCESS)
        }
        Command::Doctor(ConfigArg { config: file }) => {
            init_logging("warn");
            let loaded = Config::load(file.as_deref(), config::process_env()?)?;
            let report = runtime()?.block_on(crate::doctor::run(&loaded.config));
            print!("{}", report.render());
            Ok(if report.failed() {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            })
        }
        Command::Tools => {
            print!("{}", catalog::render_markdown(&catalog::tools()));
            Ok(ExitCode::SUCCESS)
        }
        Command::Skill => {
            print!("{}", crate::mcp::skill::SKILL_MD);
            Ok(ExitCode::SUCCESS)
        }
        Command::Token(args) => {
            let mut loaded = Config::load(args.config.config.as_deref(), config::process_env()?)?;
            use_local_secret(&mut loaded.config)?;
            println!("{}", mint_token(&loaded.config, &args)?);
            Ok(ExitCode::SUCCESS)
        }
        Command::Workspace(args) => {
            let loaded = Config::load(args.config.config.as_deref(), config::process_env()?)?;
            runtime()?.block_on(workspace::run(&loaded.config, &args.command))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Audit(AuditCommand::Verify(args)) => audit::run(&args),
        Command::Approvals(command) => {
            approvals::run(&command)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Recordings(command) => {
            recordings::run(&command)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::ViewLink(args) => {
            println!("{}", view_link(&args)?);
            Ok(ExitCode::SUCCESS)
        }
        Command::HostGate(args) => Ok(host_gate(&args)),
        Command::HostProbe => Ok(host_probe()),
        Command::Host(command) => host::run(&command),
        Command::HostRelay { socket } => host::relay(&socket),
        Command::HostWorkspace(args) => host_workspace(
            &args.config,
            &args.request,
            std::env::var("TERM").ok().as_deref(),
        ),
    }
}

/// Runs the request sshd passed when the gate allows it (replacing this process), else says
/// why not and fails.
fn host_gate(args: &HostGateArgs) -> ExitCode {
    use crate::hosts::gate::Allowed;
    use std::os::unix::process::CommandExt;
    let request = std::env::var("SSH_ORIGINAL_COMMAND").ok();
    let policy = crate::hosts::gate::Policy {
        tmux: &args.tmux,
        workspaces: args.workspaces_config.is_some(),
    };
    let allowed = match crate::hosts::gate::check(request.as_deref(), policy) {
        Ok(allowed) => allowed,
        Err(refusal) => {
            eprintln!("muxgate host-gate: refused: {refusal}");
            return ExitCode::FAILURE;
        }
    };
    let workspace = |request, term: Option<String>| match &args.workspaces_config {
        Some(config) => host_workspace(config, &request, term.as_deref()).unwrap_or_else(|error| {
            eprintln!("muxgate host-gate: {error:#}");
            ExitCode::FAILURE
        }),
        None => ExitCode::FAILURE,
    };
    match allowed {
        Allowed::Probe => host_probe(),
        Allowed::WorkspaceStart { name } => workspace(HostWorkspaceRequest::Start { name }, None),
        Allowed::WorkspaceClient { term, name, args } => workspace(
            HostWorkspaceRequest::Client {
                name,
                args: args.into_iter().map(OsString::from).collect(),
            },
            term,
        ),
        Allowed::Tmux {
            term,
            args: tmux_args,
        } => {
            let mut command = std::process::Command::new(&args.tmux);
            command.args(&tmux_args);
            // What sshd set, less what the request and the connection would pass on to every
            // pane of a server this starts (SSH_ORIGINAL_COMMAND, SSH_CONNECTION, SSH_CLIENT).
            for (name, _) in std::env::vars_os() {
                if name.to_string_lossy().starts_with("SSH_") {
                    command.env_remove(name);
                }
            }
            if let Some(term) = &term {
                command.env("TERM", term);
            }
            let error = command.exec();
            eprintln!("muxgate host-gate: cannot run {}: {error}", args.tmux);
            ExitCode::FAILURE
        }
    }
}

/// Runs one request of the gateway's for a workspace it placed on this host, with this host's
/// configuration `config`; a client request replaces this process.
fn host_workspace(
    config: &Path,
    request: &HostWorkspaceRequest,
    term: Option<&str>,
) -> anyhow::Result<ExitCode> {
    // The file alone: nothing of the login's environment decides how tenants are sandboxed.
    let loaded = Config::load(Some(config), std::iter::empty())?;
    let runtime = runtime()?;
    match request {
        HostWorkspaceRequest::Start { name } => {
            // Its warnings (a bound this host cannot set up) reach the gateway's log.
            init_logging("warn");
            let start_time = runtime
                .block_on(crate::workspace::on_host::start(&loaded.config, name))
                .map_err(anyhow::Error::msg)?;
            println!("{start_time}");
            Ok(ExitCode::SUCCESS)
        }
        HostWorkspaceRequest::Client { name, args } => {
            let why = runtime.block_on(crate::workspace::on_host::exec_client(
                &loaded.config,
                name,
                term,
                args,
            ));
            anyhow::bail!(why)
        }
    }
}

/// Answers the gateway's probe questions on standard input until it ends.
fn host_probe() -> ExitCode {
    let (input, output) = (std::io::stdin().lock(), std::io::stdout().lock());
    match crate::hosts::probe::serve::serve(input, output) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("muxgate host-probe: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Without a configured secret, `token` signs with the secret `serve` keeps for the embedded
/// default; without that either, it says what to configure.
fn use_local_secret(config: &mut Config) -> anyhow::Result<()> {
    if !serve::needs_local_secret(&config.auth) {
        return Ok(());
    }
    let state = config.state.resolve(|var| std::env::var_os(var));
    let kept = match &state {
        Ok(dir) => local_secret::load(dir)
            .with_context(|| format!("cannot read {}", local_secret::path(dir).display()))?,
        Err(_) => None,
    };
    let Some(secret) = kept else {
        let place = state.map_or_else(
            |_| "the state directory".to_owned(),
            |dir| local_secret::path(&dir).display().to_string(),
        );
        anyhow::bail!(
            "no signing secret: set MUXGATE_AUTH__SECRET (at least 32 random bytes, e.g. \
             `openssl rand -base64 48`) or auth.secret_file in a config passed with --config, the \
             same the gateway uses; or start `muxgate serve` once without a config, which keeps \
             its secret in {place} for this command to use"
        );
    };
    config.auth.secret = Some(SecretString::new(secret));
    Ok(())
}

fn mint_token(config: &Config, args: &TokenArgs) -> anyhow::Result<String> {
    let list = |text: &Option<String>| {
        text.as_ref().map(|t| {
            t.split(',')
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .map(str::to_owned)
                .collect()
        })
    };
    let request = MintRequest {
        sub: args.sub.clone(),
        scopes: args.scope.split_whitespace().map(str::to_owned).collect(),
        ttl: parse_ttl(&args.ttl)?,
        servers: list(&args.servers),
        sessions: list(&args.sessions),
        own_sessions: args.own_sessions,
        workspace: None,
        toolsets: list(&args.toolsets),
    };
    Ok(TokenMinter::from_config(&config.auth)?.mint(&request)?)
}

/// `muxgate view-link`: the link, signed with the state directory's view key.
fn view_link(args: &ViewLinkArgs) -> anyhow::Result<String> {
    let loaded = Config::load(args.config.config.as_deref(), config::process_env()?)?;
    let config = &loaded.config;
    anyhow::ensure!(
        config.view.enabled,
        "the live view is off in this configuration (view.enabled)"
    );
    let server = config
        .tmux
        .servers
        .get(args.server.as_str())
        .with_context(|| {
            format!(
                "no tmux server named {:?} in the configuration",
                args.server
            )
        })?;
    let pane: muxgate_tmux::PaneId = args.target.parse()?;
    let ttl = config
        .view
        .link_ttl(args.minutes)
        .map_err(|why| anyhow::anyhow!("--minutes: {why}"))?;
    // The link names the server's process too, so it ends when that server does (pane
    // numbers start again with the next one). `display-message` falls back to another pane
    // when the target is missing, so the answer names the pane it describes.
    let pane_target = pane.to_string();
    let answer = runtime()?
        .block_on(crate::tmux_cli::run(
            &server.socket,
            &[
                "display-message",
                "-p",
                "-t",
                &pane_target,
                "#{pane_id} #{pid}",
            ],
            crate::tmux_cli::PROBE_TIMEOUT,
        ))
        .with_context(|| format!("cannot reach tmux server {:?}", args.server))?;
    let server_pid: u32 = answer
        .trim()
        .strip_prefix(&format!("{pane_target} "))
        .and_then(|pid| pid.parse().ok())
        .with_context(|| format!("cannot find pane {pane} on tmux server {:?}", args.server))?;
    let state = config
        .state
        .resolve(|var| std::env::var_os(var))
        .map_err(|why| anyhow::anyhow!("{why}"))?;
    let key = crate::view::key::load(&state)
        .with_context(|| format!("cannot read {}", crate::view::key::path(&state).display()))?
        .with_context(|| {
            format!(
                "no view key in {}: start `muxgate serve` with this configuration once, which \
                 writes it",
                crate::view::key::path(&state).display()
            )
        })?;
    let grant = crate::view::link::ViewGrant::new(
        &args.server,
        pane,
        server_pid,
        std::time::SystemTime::now(),
        ttl,
    );
    let path = format!("/view?t={}", crate::view::link::sign(&key, &grant));
    Ok(match &args.base_url {
        Some(base) => format!("{}{path}", base.trim_end_matches('/')),
        None => local_url(config.http.bind, config.http.tls.is_some(), &path),
    })
}

/// `url` when given; else `path` on the configured `http.bind` port (https when `[http.tls]`
/// is set), as [`local_url`] reaches it.
fn url_or_configured(url: Option<&str>, config: &ConfigArg, path: &str) -> anyhow::Result<String> {
    if let Some(url) = url {
        return Ok(url.to_owned());
    }
    let loaded = Config::load(config.config.as_deref(), config::process_env()?)?;
    let http = &loaded.config.http;
    Ok(local_url(http.bind, http.tls.is_some(), path))
}

/// The URL a local client uses for `path` on a gateway listening on `addr`: an unspecified
/// address is reached over loopback.
fn local_url(addr: SocketAddr, tls: bool, path: &str) -> String {
    let ip = match addr.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    let scheme = if tls { "https" } else { "http" };
    format!("{scheme}://{}{path}", SocketAddr::new(ip, addr.port()))
}

/// A duration read at a glance: seconds up to two minutes, then minutes, hours, days.
fn human(duration: std::time::Duration) -> String {
    let secs = duration.as_secs();
    match secs {
        0..120 => format!("{secs}s"),
        120..7200 => format!("{}m", secs / 60),
        7200..172_800 => format!("{}h", secs / 3600),
        _ => format!("{}d", secs / 86_400),
    }
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// Logs to stderr, filtered by `MUXGATE_LOG` (tracing's `EnvFilter` syntax).
fn init_logging(default_filter: &str) {
    let filter =
        EnvFilter::try_from_env("MUXGATE_LOG").unwrap_or_else(|_| EnvFilter::new(default_filter));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
}

/// The text of an error and its causes, as one line: `outer: cause: cause`, leaving out a cause
/// the line already ends with (an error that names its cause at the end of its own message, as
/// `workspaces: {0}` does, would otherwise print it twice).
pub fn error_text(error: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in error.chain() {
        let part = cause.to_string();
        if text.ends_with(&part) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&part);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_that_names_its_cause_prints_it_once() {
        #[derive(Debug, thiserror::Error)]
        #[error("workspaces: {0}")]
        struct Outer(#[from] std::io::Error);
        let inner = std::io::Error::other("cannot pass through /srv");
        let error = anyhow::Error::new(Outer(inner)).context("serve");
        assert_eq!(
            error_text(&error),
            "serve: workspaces: cannot pass through /srv"
        );
        let plain = anyhow::anyhow!("root cause").context("reading the config");
        assert_eq!(error_text(&plain), "reading the config: root cause");
        // A cause whose words happen to stand earlier in the line is still its own part.
        let earlier = anyhow::anyhow!("denied").context("denied.toml cannot be read");
        assert_eq!(error_text(&earlier), "denied.toml cannot be read: denied");
    }

    #[test]
    fn unspecified_addresses_make_loopback_urls() {
        assert_eq!(
            local_url("0.0.0.0:8767".parse().unwrap(), false, "/mcp"),
            "http://127.0.0.1:8767/mcp"
        );
        assert_eq!(
            local_url("[::]:1".parse().unwrap(), false, "/healthz"),
            "http://[::1]:1/healthz"
        );
        assert_eq!(
            local_url("192.0.2.5:443".parse().unwrap(), true, "/mcp"),
            "https://192.0.2.5:443/mcp"
        );
    }

    #[test]
    fn a_given_url_wins_over_the_configured_one() {
        let config = ConfigArg { config: None };
        assert_eq!(
            url_or_configured(Some("http://h:1/x"), &config, "/y").unwrap(),
            "http://h:1/x"
        );
    }
}
