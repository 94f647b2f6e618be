//! The pages a human sees at a secret link, and the check of what they typed (pure).
//!
//! Every text on a page that came from a client (the label, the client's name) is escaped:
//! an agent writes the label, and the page must not run what it wrote. The pages load nothing
//! and run no script; their headers ([`HEADERS`]) forbid framing, caching and referrers.

use std::time::{SystemTime, UNIX_EPOCH};

/// Longest secret, in bytes.
pub(crate) const MAX_SECRET_BYTES: usize = 4096;

/// Response headers of every page: no script, no framing, no caching, no referrer to other
/// sites (the link is in the page's address), and the form may post only to the gateway itself.
/// `same-origin`, not `no-referrer`: under `no-referrer` browsers send `Origin: null` with the
/// form's post, which the Host/Origin guard refuses; the page loads nothing from elsewhere.
pub(crate) const HEADERS: [(&str, &str); 5] = [
    (
        "content-security-policy",
        "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; \
         frame-ancestors 'none'; base-uri 'none'",
    ),
    ("cache-control", "no-store"),
    ("referrer-policy", "same-origin"),
    ("x-frame-options", "DENY"),
    ("x-content-type-options", "nosniff"),
];

/// Why a typed secret is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SecretError {
    #[error("nothing was typed")]
    Empty,
    #[error("the secret is {0} bytes; at most {MAX_SECRET_BYTES} are accepted")]
    TooLong(usize),
    /// A control character would act as a key (a newline as Enter, C-c as an interrupt).
    #[error("the secret holds a control character (at character {0}); type it without one")]
    Control(usize),
}

/// Checks what the human typed: it is typed into the pane as it is.
pub(crate) fn check_secret(secret: &str) -> Result<(), SecretError> {
    if secret.is_empty() {
        return Err(SecretError::Empty);
    }
    if secret.len() > MAX_SECRET_BYTES {
        return Err(SecretError::TooLong(secret.len()));
    }
    match secret.chars().position(char::is_control) {
        Some(at) => Err(SecretError::Control(at + 1)),
        None => Ok(()),
    }
}

/// What the form shows about the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FormFacts<'a> {
    pub label: &'a str,
    pub client: &'a str,
    pub place: &'a str,
    pub expires_at: SystemTime,
    /// Whether Enter is pressed after the secret.
    pub enter: bool,
    /// Who would receive it now.
    pub receiver: Receiving<'a>,
}

/// Who would receive a secret typed now, as the form says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Receiving<'a> {
    /// This command line.
    Program(&'a str),
    /// A program the gateway cannot see (a workspace's pane).
    Unseen,
    /// Not said: the page reports why typing was refused instead.
    Unsaid,
}

/// The form: the request, a password field, and the token in a hidden field (the form posts
/// to `secret`, relative, so the page works behind a proxy's path prefix).
pub(crate) fn form(facts: &FormFacts<'_>, token: &str, problem: Option<&str>) -> String {
    let expires = facts
        .expires_at
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let problem = problem
        .map(|p| format!("<p class=\"problem\">{}</p>", escape(p)))
        .unwrap_or_default();
    let enter = if facts.enter {
        "Enter is pressed after it."
    } else {
        "Enter is not pressed after it."
    };
    page(
        "Type a secret",
        &format!(
            "<h1>{label}</h1>\
             <p>Asked by <b>{client}</b> for pane <code>{place}</code>. What you type here is \
             typed into that pane, where the program reading it receives it; it is not typed \
             where the screen would show it. {enter}</p>\
             {receiver}\
             {problem}\
             <form method=\"post\" action=\"secret\" autocomplete=\"off\">\
             <input type=\"hidden\" name=\"t\" value=\"{token}\">\
             <input type=\"password\" name=\"secret\" autofocus required \
             maxlength=\"{MAX_SECRET_BYTES}\" aria-label=\"secret\">\
             <button type=\"submit\">Type it into the pane</button></form>\
             <p class=\"small\">This link works once and expires at {expires} \
             (seconds since 1970, UTC).</p>",
            label = escape(facts.label),
            client = escape(facts.client),
            place = escape(facts.place),
            receiver = match facts.receiver {
                Receiving::Program(p) => format!(
                    "<p>Received by <code>{}</code>: type the secret only if that is what asks \
                     for it.</p>",
                    escape(p)
                ),
                Receiving::Unseen => {
                    "<p>Received by the program in the pane (the gateway cannot see which).</p>"
                        .to_owned()
                }
                Receiving::Unsaid => String::new(),
            },
            token = escape(token),
        ),
    )
}

/// The page after the secret was typed.
pub(crate) fn delivered() -> String {
    page(
        "Secret typed",
        "<h1>Typed into the pane</h1><p>The link is spent. You can close this page.</p>",
    )
}

/// A page saying why nothing was typed.
pub(crate) fn refused(title: &str, why: &str) -> String {
    page(
        title,
        &format!(
            "<h1>{}</h1><p>{}</p><p>Nothing was typed.</p>",
            escape(title),
            escape(why)
        ),
    )
}

fn page(title: &str, body: &str) -> String {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width\"><title>muxgate: {}</title>\
         <style>body{{font:16px system-ui,sans-serif;max-width:38em;margin:3em auto;padding:0 1em}}\
         input[type=password]{{width:100%;font-size:1.2em;margin:.5em 0}}\
         .problem{{color:#a00;font-weight:bold}}.small{{color:#666;font-size:.85em}}</style>\
         </head><body>{body}</body></html>",
        escape(title)
    )
}

/// Text made safe to put in HTML text and attribute values.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(label: &str) -> FormFacts<'_> {
        FormFacts {
            label,
            client: "agent-1",
            place: "work:%3",
            expires_at: UNIX_EPOCH,
            enter: true,
            receiver: Receiving::Program("sudo <apt> update"),
        }
    }

    #[test]
    fn what_an_agent_wrote_is_shown_never_run() {
        let html = form(
            &facts("<script>alert(1)</script>\" onload=\"x"),
            "tok",
            None,
        );
        assert!(!html.contains("<script>"), "{html}");
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;&quot; onload=&quot;x"));
        let html = refused("<b>", "<img src=x>");
        assert!(!html.contains("<img") && !html.contains("<b>"), "{html}");
    }

    #[test]
    fn the_form_posts_the_token_and_a_password_field_only() {
        let html = form(&facts("sudo password"), "abc_-123", Some("typed nothing"));
        assert!(html.contains("<input type=\"hidden\" name=\"t\" value=\"abc_-123\">"));
        assert!(html.contains("type=\"password\" name=\"secret\""));
        assert!(html.contains("action=\"secret\""));
        assert!(html.contains("typed nothing"));
        assert!(
            html.contains("<code>sudo &lt;apt&gt; update</code>"),
            "{html}"
        );
        assert!(!html.contains("<script"));
    }

    #[test]
    fn secrets_are_typed_as_they_are_or_refused_with_the_reason() {
        assert_eq!(check_secret("hunter2 with spaces ü"), Ok(()));
        assert_eq!(check_secret(""), Err(SecretError::Empty));
        assert_eq!(
            check_secret(&"x".repeat(MAX_SECRET_BYTES + 1)),
            Err(SecretError::TooLong(MAX_SECRET_BYTES + 1))
        );
        assert_eq!(check_secret("ab\ncd"), Err(SecretError::Control(3)));
        assert_eq!(check_secret("\u{1b}[A"), Err(SecretError::Control(1)));
        assert_eq!(check_secret("a\u{85}"), Err(SecretError::Control(2)));
    }
}
