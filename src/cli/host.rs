//! `muxgate host connect|token` and `muxgate host-relay`: a host that dials in. On the host,
//! `connect` keeps a WebSocket to the gateway for its link; on the gateway, `token` mints the
//! host's token and `host-relay` is its link's `ProxyCommand`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, Subcommand};

use super::{ConfigArg, init_logging, runtime, use_local_secret};
use crate::auth::{TokenMinter, parse_ttl};
use crate::config::{self, Config};
use crate::hosts::connect::Dial;

/// `muxgate host`: a host that dials in.
#[derive(Debug, Subcommand)]
pub enum HostCommand {
    /// On a host the gateway cannot reach (behind NAT): dial the gateway and carry its link
    /// to this machine's sshd, again after every connection, until the gateway refuses.
    Connect(ConnectArgs),
    /// On the gateway: mint the token of host NAME ([hosts.NAME] dial_in = true), which lets
    /// that host dial in and grants nothing else.
    Token(HostTokenArgs),
}

/// `muxgate host connect`.
#[derive(Debug, Args)]
pub struct ConnectArgs {
    /// The gateway's URL (`https://gateway.example:8080`).
    pub url: url::Url,
    /// The host's token (`muxgate host token NAME` on the gateway). Prefer --token-file or
    /// MUXGATE_HOST_TOKEN: a command line is visible to every user of this machine.
    #[arg(long, env = "MUXGATE_HOST_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// A file holding the host's token.
    #[arg(long, value_name = "FILE", conflicts_with = "token")]
    pub token_file: Option<PathBuf>,
    /// This machine's sshd.
    #[arg(long, default_value = "127.0.0.1:22")]
    pub sshd: String,
    /// PEM certificates that may sign the gateway's, besides the system's.
    #[arg(long, value_name = "FILE")]
    pub ca_file: Option<PathBuf>,
}

/// `muxgate host token`.
#[derive(Debug, Args)]
pub struct HostTokenArgs {
    /// The configuration holding the signing key.
    #[command(flatten)]
    pub config: ConfigArg,
    /// The host, as [hosts.NAME] names it.
    pub name: String,
    /// Lifetime, e.g. 30d.
    #[arg(long, default_value = "30d")]
    pub ttl: String,
}

/// Runs `muxgate host …`.
pub(super) fn run(command: &HostCommand) -> anyhow::Result<ExitCode> {
    match command {
        HostCommand::Connect(args) => {
            init_logging("info");
            let token = match (&args.token, &args.token_file) {
                (Some(token), _) => token.trim().to_owned(),
                (None, Some(file)) => std::fs::read_to_string(file)
                    .with_context(|| format!("cannot read {}", file.display()))?
                    .trim()
                    .to_owned(),
                (None, None) => anyhow::bail!(
                    "the host's token is needed: --token-file FILE (or MUXGATE_HOST_TOKEN)"
                ),
            };
            let dial = Dial {
                url: Dial::url(args.url.clone())?,
                token,
                sshd: args.sshd.clone(),
                ca_file: args.ca_file.clone(),
            };
            runtime()?.block_on(dial.run())?;
            Ok(ExitCode::SUCCESS)
        }
        HostCommand::Token(args) => {
            let mut loaded = Config::load(args.config.config.as_deref(), config::process_env()?)?;
            use_local_secret(&mut loaded.config)?;
            let host = loaded
                .config
                .hosts
                .get(&args.name)
                .with_context(|| format!("no [hosts.{}] in the configuration", args.name))?;
            anyhow::ensure!(
                host.dial_in,
                "host {} does not dial in: set [hosts.{}] dial_in = true first",
                args.name,
                args.name
            );
            let token = TokenMinter::from_config(&loaded.config.auth)?
                .mint_host(&args.name, parse_ttl(&args.ttl)?)?;
            println!("{token}");
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `muxgate host-relay SOCKET`: the link's `ProxyCommand` for a host that dials in.
pub(super) fn relay(socket: &std::path::Path) -> anyhow::Result<ExitCode> {
    runtime()?
        .block_on(crate::hosts::dial_in::relay_stdio(socket))
        .with_context(|| format!("cannot relay through {}", socket.display()))?;
    Ok(ExitCode::SUCCESS)
}
