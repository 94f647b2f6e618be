//! The configuration as layered TOML trees, before it is typed.
//!
//! Three layers, later ones winning: the embedded default document, the operator's file (merged
//! key by key over the default), and `MUXGATE_*` environment overrides. Working on the
//! [`toml::Table`] tree keeps this generic: a section added to the typed config gets defaults,
//! file merging and env overrides without any code here.
//!
//! The layers also remember where each key came from, so that an error can name the file or
//! the environment variable the operator has to fix.
//!
//! This module knows nothing about the meaning of keys; typing and validation live in
//! [`super`].

use std::fmt;
use std::path::PathBuf;

use toml::{Table, Value};

/// Prefix of every environment variable muxgate reads.
pub(crate) const ENV_PREFIX: &str = "MUXGATE_";

/// Separator between key segments in an override variable (`MUXGATE_HTTP__BIND`).
pub(crate) const ENV_KEY_SEPARATOR: &str = "__";

/// `MUXGATE_*` variables that are read elsewhere and are not config overrides.
pub(crate) const NON_OVERRIDE_VARS: &[&str] =
    &["MUXGATE_CONFIG", "MUXGATE_LOG", "MUXGATE_APPROVER_TOKEN"];

/// Tables whose entries are a collection of named items rather than settings: a file that
/// defines such a table replaces the default's entries instead of merging into them (a file
/// listing tmux servers must not inherit the default server).
pub(crate) const REPLACED_TABLES: &[&str] = &["tmux.servers", "zellij.servers", "clients"];

/// Where a configuration value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// The default document compiled into the binary.
    Embedded,
    /// The operator's TOML file.
    File(PathBuf),
    /// An environment variable (its name).
    Env(String),
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Embedded => f.write_str("embedded default config"),
            Origin::File(path) => write!(f, "config file {}", path.display()),
            Origin::Env(var) => write!(f, "environment variable {var}"),
        }
    }
}

/// A dotted key path such as `tmux.servers.build.socket_name`.
pub(crate) type KeyPath = Vec<String>;

/// Renders a key path the way the operator writes it (`http.allowed_hosts[0]`).
pub(crate) fn display_path(path: &[String]) -> String {
    let mut text = String::new();
    for segment in path {
        if !text.is_empty() && !segment.starts_with('[') {
            text.push('.');
        }
        text.push_str(segment);
    }
    text
}

/// An override taken from one environment variable.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct EnvOverride {
    /// The variable's name, for error messages and the load report.
    pub var: String,
    /// Key segments, lowercased (matched case-insensitively against existing keys on apply).
    pub segments: Vec<String>,
    /// The value, parsed as a TOML value when it is one, else kept as a string.
    pub value: Value,
}

/// A `MUXGATE_` variable that cannot be read: neither an override nor a known variable, a key
/// with an empty segment, or a value that is not UTF-8.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{var}: {message}")]
pub struct EnvError {
    /// The variable's name.
    pub var: String,
    /// What is wrong with it.
    pub message: String,
}

/// Picks the override variables out of an environment.
///
/// A variable is an override when its name is `MUXGATE_` followed by key segments separated by
/// `__`. Other `MUXGATE_*` names are refused unless listed in [`NON_OVERRIDE_VARS`], so that a
/// typo such as `MUXGATE_HTTP_BIND` is reported instead of silently ignored.
pub(crate) fn env_overrides(
    vars: impl IntoIterator<Item = (String, String)>,
) -> Result<Vec<EnvOverride>, EnvError> {
    let mut overrides = Vec::new();
    for (var, raw) in vars {
        let Some(rest) = var.strip_prefix(ENV_PREFIX) else {
            continue;
        };
        if NON_OVERRIDE_VARS.contains(&var.as_str()) {
            continue;
        }
        if !rest.contains(ENV_KEY_SEPARATOR) {
            return Err(EnvError {
                message: format!(
                    "not a muxgate variable; config overrides separate section and key with \
                     `{ENV_KEY_SEPARATOR}`, e.g. MUXGATE_HTTP__BIND"
                ),
                var,
            });
        }
        let segments: Vec<String> = rest
            .split(ENV_KEY_SEPARATOR)
            .map(str::to_ascii_lowercase)
            .collect();
        if segments.iter().any(String::is_empty) {
            return Err(EnvError {
                message: "empty key segment (check for `___` or a trailing `__`)".into(),
                var,
            });
        }
        overrides.push(EnvOverride {
            value: parse_env_value(&raw),
            segments,
            var,
        });
    }
    overrides.sort_by(|a, b| a.var.cmp(&b.var));
    Ok(overrides)
}

/// Parses an environment value as a TOML value (`8080`, `true`, `["a", "b"]`, `"quoted"`),
/// falling back to the raw text as a string (`0.0.0.0:8080`, `/run/tmux.sock`).
pub(crate) fn parse_env_value(raw: &str) -> Value {
    // Parse as the right-hand side of a one-key document; anything that smuggles in more keys
    // or fails to parse is taken literally.
    match toml::from_str::<Table>(&format!("value = {raw}")) {
        Ok(mut table) if table.len() == 1 => table
            .remove("value")
            .unwrap_or_else(|| Value::String(raw.to_owned())),
        _ => Value::String(raw.to_owned()),
    }
}

/// The merged tree plus what is needed to say where a key came from.
#[derive(Debug, Clone)]
pub(crate) struct Layered {
    pub tree: Table,
    /// The operator's file, when one was given.
    pub file: Option<(PathBuf, Table)>,
    /// Applied overrides with the exact key path each one set.
    pub applied_env: Vec<(KeyPath, String)>,
}

impl Layered {
    /// Builds the tree: `default`, then `file` merged over it, then `overrides`.
    pub(crate) fn build(
        default: Table,
        file: Option<(PathBuf, Table)>,
        overrides: &[EnvOverride],
    ) -> Result<Self, EnvError> {
        let mut tree = default;
        if let Some((_, file_tree)) = &file {
            merge(&mut tree, file_tree.clone(), &mut Vec::new());
        }
        let mut applied_env = Vec::with_capacity(overrides.len());
        for env in overrides {
            let path = apply_override(&mut tree, env)?;
            applied_env.push((path, env.var.clone()));
        }
        Ok(Self {
            tree,
            file,
            applied_env,
        })
    }

    /// Where the value at `path` (or the table around it) came from.
    ///
    /// An override that set this key, a key inside it, or a table around it wins; otherwise
    /// the file if it defines the key; otherwise the embedded default.
    pub(crate) fn origin_of(&self, path: &[String]) -> Origin {
        let related = |set: &KeyPath| set.starts_with(path) || path.starts_with(set);
        if let Some((_, var)) = self.applied_env.iter().rev().find(|(set, _)| related(set)) {
            return Origin::Env(var.clone());
        }
        if let Some((file, file_tree)) = &self.file
            && !path.is_empty()
            && contains_path(file_tree, path)
        {
            return Origin::File(file.clone());
        }
        Origin::Embedded
    }
}

/// Merges `overlay` into `base`: tables recursively, everything else replaced. Tables listed in
/// [`REPLACED_TABLES`] are replaced whole.
fn merge(base: &mut Table, overlay: Table, path: &mut Vec<String>) {
    for (key, value) in overlay {
        path.push(key.clone());
        let replace_whole = REPLACED_TABLES.contains(&display_path(path).as_str());
        match (base.get_mut(&key), value) {
            (Some(Value::Table(base_table)), Value::Table(overlay_table)) if !replace_whole => {
                merge(base_table, overlay_table, path);
            }
            (_, value) => {
                base.insert(key, value);
            }
        }
        path.pop();
    }
}

/// Sets one override in the tree, creating tables on the way. Returns the key path it set,
/// spelled as the keys already in the tree are spelled.
fn apply_override(tree: &mut Table, env: &EnvOverride) -> Result<KeyPath, EnvError> {
    let mut table = tree;
    let mut path = KeyPath::with_capacity(env.segments.len());
    let (last, parents) = env.segments.split_last().ok_or_else(|| EnvError {
        var: env.var.clone(),
        message: "no key".into(),
    })?;
    for segment in parents {
        let key = existing_key(table, segment);
        path.push(key.clone());
        let entry = table
            .entry(key)
            .or_insert_with(|| Value::Table(Table::new()));
        table = match entry {
            Value::Table(inner) => inner,
            other => {
                return Err(EnvError {
                    var: env.var.clone(),
                    message: format!(
                        "cannot set a key inside {}: it is a {}, not a table",
                        display_path(&path),
                        other.type_str()
                    ),
                });
            }
        };
    }
    let key = existing_key(table, last);
    path.push(key.clone());
    table.insert(key, env.value.clone());
    Ok(path)
}

/// The key in `table` equal to `segment` ignoring ASCII case, or `segment` itself.
fn existing_key(table: &Table, segment: &str) -> String {
    table
        .keys()
        .find(|key| key.eq_ignore_ascii_case(segment))
        .cloned()
        .unwrap_or_else(|| segment.to_owned())
}

fn contains_path(table: &Table, path: &[String]) -> bool {
    let Some((first, rest)) = path.split_first() else {
        return true;
    };
    match (table.get(first), rest.is_empty()) {
        (Some(_), true) => true,
        (Some(Value::Table(inner)), false) => contains_path(inner, rest),
        // The file sets a non-table here: the whole subtree is the file's.
        (Some(_), false) => true,
        (None, _) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> Table {
        toml::from_str(text).unwrap()
    }

    fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn env_values_are_toml_scalars_with_string_fallback() {
        assert_eq!(parse_env_value("8080"), Value::Integer(8080));
        assert_eq!(parse_env_value("true"), Value::Boolean(true));
        assert_eq!(
            parse_env_value(r#"["a", "b"]"#),
            Value::Array(vec!["a".into(), "b".into()])
        );
        assert_eq!(parse_env_value(r#""123""#), Value::String("123".into()));
        assert_eq!(
            parse_env_value("0.0.0.0:8080"),
            Value::String("0.0.0.0:8080".into())
        );
        assert_eq!(parse_env_value(""), Value::String(String::new()));
        // A value that would add a second key is taken literally.
        assert_eq!(
            parse_env_value("1\nother = 2"),
            Value::String("1\nother = 2".into())
        );
    }

    #[test]
    fn override_names_map_to_lowercase_key_paths() {
        let found = env_overrides(vars(&[
            ("PATH", "/bin"),
            ("MUXGATE_HTTP__BIND", "0.0.0.0:1"),
            ("MUXGATE_ENGINE__QUEUE_CAPACITY", "7"),
            ("MUXGATE_CONFIG", "/etc/x.toml"),
            ("MUXGATE_LOG", "debug"),
            ("MUXGATE_APPROVER_TOKEN", "secret"),
        ]))
        .unwrap();
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].var, "MUXGATE_ENGINE__QUEUE_CAPACITY");
        assert_eq!(found[0].segments, ["engine", "queue_capacity"]);
        assert_eq!(found[0].value, Value::Integer(7));
        assert_eq!(found[1].segments, ["http", "bind"]);
    }

    #[test]
    fn a_namespaced_variable_without_separator_is_refused() {
        let err = env_overrides(vars(&[("MUXGATE_HTTP_BIND", "x")])).unwrap_err();
        assert_eq!(err.var, "MUXGATE_HTTP_BIND");
        assert!(err.message.contains("MUXGATE_HTTP__BIND"), "{err}");
    }

    #[test]
    fn empty_segments_are_refused() {
        for var in [
            "MUXGATE_HTTP____BIND",
            "MUXGATE_HTTP__",
            "MUXGATE___HTTP__BIND",
        ] {
            let err = env_overrides(vars(&[(var, "x")])).unwrap_err();
            assert!(err.message.contains("empty key segment"), "{var}: {err}");
        }
    }

    #[test]
    fn file_merges_over_default_but_replaces_named_collections() {
        let default =
            table("[http]\nbind = 'a'\nmax = 1\n[tmux.servers.default]\n[tmux.other]\nkeep = 1\n");
        let file = table("[http]\nbind = 'b'\n[tmux.servers.build]\nsocket_name = 'b'\n");
        let layered =
            Layered::build(default, Some(("f.toml".into(), file)), &[]).expect("no overrides");
        let expected = table(
            "[http]\nbind = 'b'\nmax = 1\n[tmux.servers.build]\nsocket_name = 'b'\n\
             [tmux.other]\nkeep = 1\n",
        );
        assert_eq!(layered.tree, expected);
    }

    #[test]
    fn overrides_match_existing_keys_case_insensitively_and_create_missing_ones() {
        let default = table("[tmux.servers.Build-1]\nsocket_name = 'x'\n");
        let overrides = env_overrides(vars(&[
            ("MUXGATE_TMUX__SERVERS__BUILD-1__ALLOW_ABSENT", "true"),
            ("MUXGATE_TMUX__SERVERS__CI__SOCKET_NAME", "ci"),
        ]))
        .unwrap();
        let layered = Layered::build(default, None, &overrides).unwrap();
        let expected = table(
            "[tmux.servers.Build-1]\nsocket_name = 'x'\nallow_absent = true\n\
             [tmux.servers.ci]\nsocket_name = 'ci'\n",
        );
        assert_eq!(layered.tree, expected);
        assert_eq!(
            layered.applied_env[0].0,
            ["tmux", "servers", "Build-1", "allow_absent"]
        );
    }

    #[test]
    fn an_override_through_a_scalar_is_refused() {
        let overrides = env_overrides(vars(&[("MUXGATE_HTTP__BIND__PORT", "1")])).unwrap();
        let err = Layered::build(table("[http]\nbind = 'a'\n"), None, &overrides).unwrap_err();
        assert_eq!(err.var, "MUXGATE_HTTP__BIND__PORT");
        assert!(err.message.contains("http.bind"), "{err}");
    }

    #[test]
    fn origin_names_env_then_file_then_default() {
        let overrides = env_overrides(vars(&[("MUXGATE_HTTP__BIND", "x")])).unwrap();
        let layered = Layered::build(
            table("[http]\nbind = 'a'\nmax = 1\n[engine]\nq = 1\n"),
            Some(("f.toml".into(), table("[engine]\nq = 2\n"))),
            &overrides,
        )
        .unwrap();
        let path = |p: &str| p.split('.').map(String::from).collect::<Vec<_>>();
        assert_eq!(
            layered.origin_of(&path("http.bind")),
            Origin::Env("MUXGATE_HTTP__BIND".into())
        );
        assert_eq!(
            layered.origin_of(&path("http")),
            Origin::Env("MUXGATE_HTTP__BIND".into())
        );
        assert_eq!(
            layered.origin_of(&path("engine.q")),
            Origin::File("f.toml".into())
        );
        assert_eq!(layered.origin_of(&path("http.max")), Origin::Embedded);
    }
}
