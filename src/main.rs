//! The `muxgate` command line; everything it runs lives in the library (`muxgate::cli`).

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    match muxgate::cli::run(muxgate::cli::Cli::parse()) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("muxgate: {}", muxgate::cli::error_text(&err));
            ExitCode::FAILURE
        }
    }
}
