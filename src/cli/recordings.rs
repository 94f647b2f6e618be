//! `muxgate recordings list` and `muxgate recordings export FILE --from S --to S`: the
//! recordings directory ([`crate::recordings::store`]) read from the configuration alone, and a
//! time range of one cast cut into a cast of its own ([`crate::recordings::cast::Cast::cut`]).

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};

use super::RecordingsCommand;
use crate::config::{self, Config};
use crate::recordings::cast::Cast;
use crate::recordings::store;

pub(super) fn run(command: &RecordingsCommand) -> anyhow::Result<()> {
    match command {
        RecordingsCommand::List { config, dir } => {
            let dir = directory(config.config.as_deref(), dir.as_deref())?;
            for file in
                store::list(&dir).with_context(|| format!("cannot read {}", dir.display()))?
            {
                println!("{}\t{}", file.name, file.bytes);
            }
            Ok(())
        }
        RecordingsCommand::Export {
            config,
            dir,
            file,
            from,
            to,
            output,
        } => {
            let to = to.unwrap_or(f64::INFINITY);
            if !(from.is_finite() && *from >= 0.0 && !to.is_nan() && *from <= to) {
                bail!("--from and --to must be seconds with 0 <= from <= to");
            }
            let path = if file.components().count() == 1 && !file.exists() {
                directory(config.config.as_deref(), dir.as_deref())?.join(file)
            } else {
                file.clone()
            };
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            let cast = Cast::parse(&text)
                .with_context(|| format!("{} is not an asciinema v2 cast", path.display()))?;
            let cut = cast.cut(*from, to).to_text();
            match output {
                Some(out) => crate::state::write_private(out, cut.as_bytes())
                    .with_context(|| format!("cannot write {}", out.display()))?,
                None => std::io::stdout()
                    .write_all(cut.as_bytes())
                    .context("cannot write to standard output")?,
            }
            Ok(())
        }
    }
}

/// `--dir`, else the configuration's recordings directory.
fn directory(config_file: Option<&Path>, dir: Option<&Path>) -> anyhow::Result<PathBuf> {
    if let Some(dir) = dir {
        return Ok(dir.to_path_buf());
    }
    let loaded = Config::load(config_file, config::process_env()?)?;
    let state_dir = loaded
        .config
        .state
        .resolve(|var| std::env::var_os(var))
        .ok();
    loaded
        .config
        .recordings
        .dir_in(state_dir.as_deref())
        .context("no recordings directory: set recordings.dir or state.dir, or give --dir")
}
