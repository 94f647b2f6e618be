//! `muxgate approvals list|approve ID|deny ID [--reason TEXT]|secrets|secret-link ID|link`:
//! the person's side of calls held at the gateway, of secret entry requests whose client could
//! not show their link, and a sign-in link to the inbox for a phone.
//!
//! A call matching an approval rule waits at the gateway until someone whose token has scope
//! `mux:approve` decides it. This command asks the gateway's `/approvals` API with
//! [`super::http_client`] and prints the answer for a person: a table of the waiting calls, or
//! `approved ID (by NAME)`; a refusal exits non-zero with the gateway's message and what to do.
//!
//! Every request carries the token, so over https the server's certificate is always verified
//! (against `--ca-file`; https without it is refused) and the token is never printed. Part of
//! what the gateway returns was written by agents (a call's arguments), so
//! control and bidirectional-formatting characters are printed escaped: arguments cannot move
//! the cursor or reorder the line to show another command than the one waiting.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use muxgate_mux::lines::excerpt;
use rustls::ClientConfig;
use serde::Deserialize;

use super::http_client::{Request, Response, Target, parse_url, send, verifying_tls};
use super::{ApprovalsCommand, ApproverArgs};

const USER_AGENT: &str = "muxgate-approvals";

pub(super) fn run(command: &ApprovalsCommand) -> anyhow::Result<()> {
    match command {
        ApprovalsCommand::List { gateway, json } => {
            let api = Api::new(gateway)?;
            let body = api.call("GET", &api.target.path, None, Action::List)?;
            if *json {
                serde_json::from_slice::<serde_json::Value>(&body)
                    .context("the gateway's answer is not JSON")?;
                println!("{}", String::from_utf8_lossy(&body).trim_end());
            } else {
                let listing: Listing = serde_json::from_slice(&body)
                    .context("the gateway's answer is not a list of waiting calls")?;
                print!("{}", render(&listing.pending));
            }
        }
        ApprovalsCommand::Approve { id, gateway } => {
            decide(gateway, id, serde_json::json!({ "decision": "approve" }))?;
        }
        ApprovalsCommand::Deny {
            id,
            reason,
            gateway,
        } => {
            let mut body = serde_json::json!({ "decision": "deny" });
            if let Some(reason) = reason {
                body["reason"] = reason.as_str().into();
            }
            decide(gateway, id, body)?;
        }
        ApprovalsCommand::Secrets { gateway, json } => {
            let api = Api::new(gateway)?;
            let path = format!("{}/secrets", api.target.path.trim_end_matches('/'));
            let body = api.call("GET", &path, None, Action::List)?;
            if *json {
                serde_json::from_slice::<serde_json::Value>(&body)
                    .context("the gateway's answer is not JSON")?;
                println!("{}", String::from_utf8_lossy(&body).trim_end());
            } else {
                let listing: SecretListing = serde_json::from_slice(&body)
                    .context("the gateway's answer is not a list of secret requests")?;
                print!("{}", render_secrets(&listing.pending));
            }
        }
        ApprovalsCommand::SecretLink { id, gateway } => {
            check_id(id)?;
            let api = Api::new(gateway)?;
            let path = format!("{}/secrets/{id}", api.target.path.trim_end_matches('/'));
            let body = api.call("POST", &path, Some(b"{}"), Action::SecretLink)?;
            let issued: Issued = serde_json::from_slice(&body)
                .context("the gateway's answer is not a link (id, url, expires_in_seconds)")?;
            println!(
                "{}\n(one-time link to secret request {}; expires in {})",
                printable(&issued.url),
                printable(&issued.id),
                super::human(Duration::from_secs(issued.expires_in_seconds))
            );
        }
        ApprovalsCommand::Link { gateway } => {
            let api = Api::new(gateway)?;
            let path = format!("{}/link", api.target.path.trim_end_matches('/'));
            let body = api.call("POST", &path, Some(b"{}"), Action::List)?;
            let link: SignInLink = serde_json::from_slice(&body)
                .context("the gateway's answer is not a link (url, expires_in_seconds)")?;
            println!(
                "{}\n(signs you in to the inbox once; expires in {})",
                printable(&link.url),
                super::human(Duration::from_secs(link.expires_in_seconds))
            );
        }
    }
    Ok(())
}

fn decide(gateway: &ApproverArgs, id: &str, decision: serde_json::Value) -> anyhow::Result<()> {
    check_id(id)?;
    let api = Api::new(gateway)?;
    let path = format!("{}/{id}", api.target.path.trim_end_matches('/'));
    let body = api.call(
        "POST",
        &path,
        Some(decision.to_string().as_bytes()),
        Action::Decide,
    )?;
    let decided: Decided = serde_json::from_slice(&body)
        .context("the gateway's answer is not a decision (id, decision, by)")?;
    println!(
        "{} {} (by {})",
        printable(&decided.decision),
        printable(&decided.id),
        printable(&decided.by)
    );
    Ok(())
}

/// Ids are sent in the path, so only the characters the gateway makes them of get through,
/// and nothing that would need percent-encoding.
fn check_id(id: &str) -> anyhow::Result<()> {
    let valid = (1..=64).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if !valid {
        bail!(
            "{:?} is not an approval id (1 to 64 letters, digits, _ or -, as `muxgate approvals \
             list` shows them)",
            excerpt(id)
        );
    }
    Ok(())
}

/// The approvals API of one gateway, with the token to present.
struct Api {
    target: Target,
    tls: Option<Arc<ClientConfig>>,
    /// The `Authorization` header's value.
    authorization: String,
    timeout: Duration,
}

/// What a request was for, which decides the hint given with a refusal.
#[derive(Debug, Clone, Copy)]
enum Action {
    List,
    Decide,
    SecretLink,
}

impl Api {
    fn new(args: &ApproverArgs) -> anyhow::Result<Self> {
        let token = args
            .token
            .as_ref()
            .map(|token| token.expose().trim())
            .filter(|token| !token.is_empty())
            .context(
                "no token: set MUXGATE_APPROVER_TOKEN (or pass --token) to a bearer token with \
                 scope mux:approve",
            )?;
        if !token.bytes().all(|b| b.is_ascii_graphic()) {
            bail!("the token has spaces or control characters, which a bearer token never has");
        }
        let url = super::url_or_configured(args.url.as_deref(), &args.config, "/approvals")?;
        let target = parse_url(&url).with_context(|| format!("bad URL {url:?}"))?;
        let tls = match (&args.ca_file, target.tls) {
            (_, false) => None,
            (Some(ca_file), true) => Some(verifying_tls(ca_file)?),
            (None, true) => bail!(
                "{url} is https: pass --ca-file PEM with the gateway's certificate or the CA that \
                 issued it (the token is only sent to a server whose certificate is verified)"
            ),
        };
        Ok(Self {
            target,
            tls,
            authorization: format!("Bearer {token}"),
            timeout: Duration::from_secs(args.timeout.max(1)),
        })
    }

    /// Sends a request and returns the body of a 2xx answer; any other is an error carrying
    /// the gateway's message and a hint.
    fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<&[u8]>,
        action: Action,
    ) -> anyhow::Result<Vec<u8>> {
        let mut headers = vec![
            ("Authorization", self.authorization.as_str()),
            ("Accept", "application/json"),
            ("User-Agent", USER_AGENT),
        ];
        if body.is_some() {
            headers.push(("Content-Type", "application/json"));
        }
        let request = Request {
            method,
            path,
            headers: &headers,
            body,
        };
        let Response { status, body, .. } =
            send(&self.target, self.tls.clone(), &request, self.timeout).with_context(|| {
                format!(
                    "{method} {path} on {}:{}",
                    self.target.host, self.target.port
                )
            })?;
        if (200..300).contains(&status) {
            Ok(body)
        } else {
            bail!("{}", refusal(status, &body, action))
        }
    }
}

/// The error body the gateway sends with a refusal.
#[derive(Debug, Deserialize)]
struct ApiError {
    error: String,
    message: String,
}

/// A refusal as the person reads it: the status, the gateway's error and message (or the start
/// of whatever else answered), and what to do about it.
fn refusal(status: u16, body: &[u8], action: Action) -> String {
    let detail = match serde_json::from_slice::<ApiError>(body) {
        Ok(error) => format!("{}: {}", printable(&error.error), printable(&error.message)),
        Err(_) if body.is_empty() => "no message".to_owned(),
        Err(_) => printable(&excerpt(&String::from_utf8_lossy(body))),
    };
    let hint = match (status, action) {
        (401, _) => Some(
            "check the token (MUXGATE_APPROVER_TOKEN or --token): it may be missing, expired or \
             signed with another key",
        ),
        (403, Action::List) => Some("the token needs scope mux:approve"),
        (403, Action::Decide) => Some(
            "the token needs scope mux:approve, and cannot decide calls made under its own \
             identity",
        ),
        (403, Action::SecretLink) => Some(
            "the token needs scope mux:approve, and cannot take a secret request made under its \
             own identity",
        ),
        (404, Action::List) => Some("check --url: no approvals API answered there"),
        (404, Action::SecretLink) => Some(
            "list again with `muxgate approvals secrets`: the secret may have been typed already \
             or the request expired",
        ),
        (404, Action::Decide) => Some(
            "list again with `muxgate approvals list`: the call may have been decided already or \
             expired",
        ),
        _ => None,
    };
    match hint {
        Some(hint) => format!("the gateway answered {status} ({detail}); {hint}"),
        None => format!("the gateway answered {status} ({detail})"),
    }
}

#[derive(Debug, Deserialize)]
struct Listing {
    pending: Vec<Pending>,
}

/// A call waiting for a decision, as `GET /approvals` describes it.
#[derive(Debug, Deserialize)]
struct Pending {
    id: String,
    /// The client (token subject) that made the call.
    sub: String,
    tool: String,
    /// The name of the rule that held it.
    rule: String,
    /// The arguments the call will run with (past 8 KiB, their beginning as text).
    args: serde_json::Value,
    waiting_ms: u64,
    expires_in_ms: u64,
}

#[derive(Debug, Deserialize)]
struct SecretListing {
    pending: Vec<HeldSecret>,
}

/// A secret entry request waiting for an approver, as `GET /approvals/secrets` describes it.
#[derive(Debug, Deserialize)]
struct HeldSecret {
    id: String,
    /// The client (token subject) that asked.
    sub: String,
    /// What the human is asked for, in the agent's words.
    label: String,
    /// Where the secret goes (`server:%3`).
    place: String,
    expires_in_secs: u64,
}

/// A sign-in link to the inbox.
#[derive(Debug, Deserialize)]
struct SignInLink {
    url: String,
    expires_in_seconds: u64,
}

/// A link to a secret entry request.
#[derive(Debug, Deserialize)]
struct Issued {
    id: String,
    url: String,
    expires_in_seconds: u64,
}

/// The waiting secret requests as aligned text, the label last.
fn render_secrets(pending: &[HeldSecret]) -> String {
    if pending.is_empty() {
        return "no secret requests are waiting\n".into();
    }
    let header = ["id", "client", "pane", "expires in", "label"].map(String::from);
    let rows = pending.iter().map(|request| {
        [
            printable(&request.id),
            printable(&request.sub),
            printable(&request.place),
            super::human(Duration::from_secs(request.expires_in_secs)),
            printable(&request.label),
        ]
    });
    let table: Vec<[String; 5]> = std::iter::once(header).chain(rows).collect();
    aligned(&table)
}

/// The answer to a decision.
#[derive(Debug, Deserialize)]
struct Decided {
    id: String,
    decision: String,
    by: String,
}

/// The waiting calls as aligned text, the arguments last and whole (the person decides on
/// them).
fn render(pending: &[Pending]) -> String {
    if pending.is_empty() {
        return "no calls are waiting for approval\n".into();
    }
    let header = [
        "id",
        "client",
        "tool",
        "rule",
        "waited",
        "expires in",
        "arguments",
    ]
    .map(String::from);
    let rows = pending.iter().map(|call| {
        [
            printable(&call.id),
            printable(&call.sub),
            printable(&call.tool),
            printable(&call.rule),
            super::human(Duration::from_millis(call.waiting_ms)),
            super::human(Duration::from_millis(call.expires_in_ms)),
            printable(&call.args.to_string()),
        ]
    });
    let table: Vec<[String; 7]> = std::iter::once(header).chain(rows).collect();
    aligned(&table)
}

/// Rows as columns padded to their widest cell.
fn aligned<const N: usize>(table: &[[String; N]]) -> String {
    let mut widths = [0; N];
    for row in table {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in table {
        let mut line = String::new();
        for (cell, width) in row.iter().zip(widths) {
            line.push_str(&format!("{cell:width$}  "));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// Text from the gateway made safe to print on a terminal: control characters (escape
/// sequences, line breaks) and bidirectional-formatting characters are shown as `\u{…}`.
fn printable(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        let bidi = matches!(
            c,
            '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'
        );
        if c.is_control() || bidi {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_ids_are_sent() {
        for id in ["7f3a", "A-b_9", &"x".repeat(64)] {
            assert!(check_id(id).is_ok(), "{id}");
        }
        for id in ["", &"x".repeat(65), "a/b", "..", "a b", "a%2F", "é", "a?b"] {
            assert!(check_id(id).is_err(), "{id}");
        }
    }

    #[test]
    fn the_list_renders_as_a_table() {
        let listing: Listing = serde_json::from_str(
            r#"{"pending":[
                {"id":"7f3a","sub":"agent-1","tool":"run_command","server":"default",
                 "rule":"dangerous","args":{"target":"%3","command":"rm -rf /tmp/x"},
                 "waiting_ms":1234,"expires_in_ms":58000},
                {"id":"b2","sub":"a","tool":"send_keys","server":"default","rule":"keys",
                 "args":{"keys":"\u001b[2K\nok\u202e"},"waiting_ms":150000,
                 "expires_in_ms":900}
            ]}"#,
        )
        .unwrap();
        assert_eq!(
            render(&listing.pending),
            "id    client   tool         rule       waited  expires in  arguments\n\
             7f3a  agent-1  run_command  dangerous  1s      58s         {\"target\":\"%3\",\"command\":\"rm -rf /tmp/x\"}\n\
             b2    a        send_keys    keys       2m      0s          {\"keys\":\"\\u001b[2K\\nok\\u{202e}\"}\n"
        );
        assert_eq!(render(&[]), "no calls are waiting for approval\n");
    }

    #[test]
    fn the_secret_requests_render_as_a_table() {
        let listing: SecretListing = serde_json::from_str(
            r#"{"pending":[{"id":"s-3","sub":"agent-1","label":"sudo on \u001b[2Kbuild",
                "place":"work:%3","expires_in_secs":290}]}"#,
        )
        .unwrap();
        assert_eq!(
            render_secrets(&listing.pending),
            "id   client   pane     expires in  label\n\
             s-3  agent-1  work:%3  4m          sudo on \\u{1b}[2Kbuild\n"
        );
        assert_eq!(render_secrets(&[]), "no secret requests are waiting\n");
    }

    #[test]
    fn refusals_carry_the_message_and_a_hint() {
        let body = br#"{"error":"not_found","message":"no pending approval 7f3a"}"#;
        assert_eq!(
            refusal(404, body, Action::Decide),
            "the gateway answered 404 (not_found: no pending approval 7f3a); list again with \
             `muxgate approvals list`: the call may have been decided already or expired"
        );
        let forbidden = refusal(
            403,
            br#"{"error":"forbidden","message":"m"}"#,
            Action::Decide,
        );
        assert!(forbidden.contains("scope mux:approve"), "{forbidden}");
        assert!(forbidden.contains("its own"), "{forbidden}");
        assert!(refusal(401, b"", Action::List).contains("check the token"));
        assert_eq!(
            refusal(502, b"<html>Bad Gateway</html>", Action::List),
            "the gateway answered 502 (<html>Bad Gateway</html>)"
        );
    }

    #[test]
    fn https_without_a_ca_file_is_refused_before_sending() {
        let args = ApproverArgs {
            config: super::super::ConfigArg { config: None },
            url: Some("https://gateway.example/approvals".into()),
            token: Some(crate::auth::config::SecretString::new("t")),
            ca_file: None,
            timeout: 1,
        };
        let error = Api::new(&args).err().unwrap().to_string();
        assert!(error.contains("--ca-file"), "{error}");
        let no_token = ApproverArgs {
            token: Some(crate::auth::config::SecretString::new("  ")),
            ..args
        };
        let error = Api::new(&no_token).err().unwrap().to_string();
        assert!(error.contains("MUXGATE_APPROVER_TOKEN"), "{error}");
    }
}
