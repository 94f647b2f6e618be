//! The `muxgate` command line: argument parsing and the glue that runs each command.
//!
//! Each command is a thin function over library modules: `serve` ([`serve`]) assembles config,
//! MCP handler and router; `check-config` loads and summarizes a file; `doctor` runs
//! [`crate::doctor`]; `tools` prints [`crate::mcp::catalog`]. Errors here are `anyhow` with
//! context; the library modules below keep typed errors.

mod check_config;
mod serve;

use std::io::IsTerminal as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, Parser, Subcommand};
use tracing_subscriber::EnvFilter;

use crate::config::{self, Config};
use crate::mcp::catalog;
pub use check_config::summary as config_summary;
pub use serve::{ReadyBanner, client_snippet};

/// Streamable-HTTP MCP gateway that lets AI agents drive tmux.
#[derive(Debug, Parser)]
#[command(name = "muxgate", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

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
}

#[derive(Debug, Args)]
pub struct ConfigArg {
    /// TOML config file merged over the embedded default.
    #[arg(long, value_name = "FILE", env = "MUXGATE_CONFIG")]
    pub config: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub config: ConfigArg,
    /// Listen address; overrides http.bind.
    #[arg(long, value_name = "ADDR")]
    pub bind: Option<SocketAddr>,
}

/// Runs the parsed command; the exit code tells success from failed checks.
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Serve(args) => {
            init_logging("info");
            runtime()?.block_on(serve::run(args))?;
            Ok(ExitCode::SUCCESS)
        }
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
