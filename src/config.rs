//! Typed configuration: embedded default, TOML file, `MUXGATE_*` environment overrides.
