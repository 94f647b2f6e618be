//! `muxgate check-config`: the summary printed for a valid configuration.

use std::fmt::Write as _;

use crate::config::LoadedConfig;

/// `OK`, where the config came from, and the values an operator most often gets wrong.
pub fn summary(loaded: &LoadedConfig) -> String {
    let config = &loaded.config;
    let mut out = String::new();
    let source = match &loaded.file {
        Some(path) => format!("{} (merged over the embedded default)", path.display()),
        None => "embedded default".to_owned(),
    };
    // Writing to a String cannot fail.
    let _ = writeln!(out, "OK: {source}");
    if !loaded.env_overrides.is_empty() {
        let _ = writeln!(
            out,
            "  environment overrides: {}",
            loaded.env_overrides.join(", ")
        );
    }
    let http = &config.http;
    let _ = writeln!(out, "  http.bind             {}", http.bind);
    let _ = writeln!(
        out,
        "  http.allowed_hosts    {}",
        join(http.allowed_hosts.iter())
    );
    let _ = writeln!(
        out,
        "  http.allowed_origins  {}",
        join(http.allowed_origins.iter())
    );
    let _ = writeln!(out, "  http.max_body_bytes   {}", http.max_body_bytes);
    for (name, server) in &config.tmux.servers {
        let absent = if server.allow_absent {
            ", allowed absent"
        } else {
            ""
        };
        let _ = writeln!(out, "  tmux server {name}: {}{absent}", server.socket);
    }
    for (name, server) in &config.zellij.servers {
        let session = server.session.as_ref().map_or_else(
            || "no default session".to_owned(),
            |s| format!("session {s}"),
        );
        let socket_dir = server.socket_dir.as_ref().map_or_else(
            || "default socket dir".to_owned(),
            |d| format!("socket dir {}", d.display()),
        );
        let _ = writeln!(out, "  zellij server {name}: {session}, {socket_dir}");
    }
    let engine = &config.engine;
    let _ = writeln!(
        out,
        "  engine: command timeout {} ms, queue {} (per client {}), pipeline depth {}",
        engine.command_timeout_ms,
        engine.queue_capacity,
        config.limits.worker_queue_share,
        engine.pipeline_depth
    );
    out
}

fn join<T: std::fmt::Display>(items: impl Iterator<Item = T>) -> String {
    items
        .map(|item| item.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    #[test]
    fn summary_names_source_overrides_and_servers() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("gw.toml");
        std::fs::write(
            &file,
            "[tmux.servers.build]\nsocket_name = 'build'\nallow_absent = true\n\
             [zellij.servers.desk]\nsession = 'work'\n",
        )
        .unwrap();
        let env = vec![("MUXGATE_HTTP__BIND".to_string(), "0.0.0.0:9".to_string())];
        let loaded = Config::load(Some(&file), env).unwrap();
        let text = summary(&loaded);
        assert!(
            text.starts_with(&format!("OK: {}", file.display())),
            "{text}"
        );
        assert!(
            text.contains("environment overrides: MUXGATE_HTTP__BIND"),
            "{text}"
        );
        assert!(text.contains("http.bind             0.0.0.0:9"), "{text}");
        assert!(
            text.contains("tmux server build: socket name \"build\", allowed absent"),
            "{text}"
        );
        assert!(!text.contains("tmux server default"), "{text}");
        assert!(
            text.contains("zellij server desk: session work, default socket dir"),
            "{text}"
        );
    }
}
