//! Links for humans (a secret entry form, a live view): where their browsers reach the gateway.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::auth::Principal;
use crate::config::HttpConfig;
use crate::config::allowlist::HostPattern;

use super::error::{ToolError, ToolErrorKind};

/// The base of a link: `http.public_url`, else the scheme and `Host` of the agent's request
/// (the Host/Origin guard has already checked it against `http.allowed_hosts`).
///
/// Where `allowed_hosts` has `*`, the Host is whatever the agent sent, so a link built from it
/// could send a human's browser, and the secret typed there, to a host of the agent's choosing:
/// such a gateway must name its `public_url`.
pub(crate) fn base(http: &HttpConfig, request: &http::request::Parts) -> Result<String, ToolError> {
    if let Some(public) = &http.public_url {
        return Ok(public.join(""));
    }
    if http.allowed_hosts.contains(&HostPattern::Any) {
        return Err(ToolError::new(
            ToolErrorKind::Unavailable,
            "this gateway accepts any Host header, so it cannot trust one to build a link from",
            "ask the operator to set http.public_url",
        ));
    }
    let scheme = if http.tls.is_some() { "https" } else { "http" };
    let base = request
        .headers
        .get(http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(|host| format!("{scheme}://{host}"))
        .filter(|base| url::Url::parse(base).is_ok_and(|u| u.path() == "/"));
    base.ok_or_else(|| {
        ToolError::new(
            ToolErrorKind::Unavailable,
            "the request has no usable Host header to build the link from",
            "set http.public_url in the gateway's config",
        )
    })
}

/// A link's lifetime, cut to end when the token of the client that asks for it does: a link
/// must not outlive the authority it was made with.
pub(crate) fn within_token(ttl: Duration, principal: &Principal) -> Result<Duration, ToolError> {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    let left = principal.expires_at.saturating_sub(now);
    if left == 0 {
        return Err(ToolError::new(
            ToolErrorKind::Unavailable,
            "your token has expired; no link was made",
            "get a new token and call again",
        ));
    }
    Ok(ttl.min(Duration::from_secs(left)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn request(host: &str) -> http::request::Parts {
        http::Request::get("/mcp")
            .header(http::header::HOST, host)
            .body(())
            .unwrap()
            .into_parts()
            .0
    }

    #[test]
    fn a_link_is_built_from_a_host_only_when_hosts_are_checked() {
        let mut http = Config::embedded_default().http;
        assert_eq!(
            base(&http, &request("127.0.0.1:8767")).unwrap(),
            "http://127.0.0.1:8767"
        );
        http.allowed_hosts.push(HostPattern::Any);
        let refused = base(&http, &request("attacker.example")).unwrap_err();
        assert!(
            refused.suggestion.contains("http.public_url"),
            "{refused:?}"
        );
        http.public_url = Some("https://gw.example/muxgate/".to_owned().try_into().unwrap());
        assert_eq!(
            base(&http, &request("attacker.example")).unwrap(),
            "https://gw.example/muxgate"
        );
    }

    #[test]
    fn a_link_ends_with_the_token_it_was_made_with() {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let mut principal = Principal::new("agent", ["mux:read"]);
        let hour = Duration::from_secs(3600);
        assert_eq!(within_token(hour, &principal).unwrap(), hour);
        principal.expires_at = now + 60;
        let cut = within_token(hour, &principal).unwrap();
        assert!((Duration::from_secs(58)..=Duration::from_secs(60)).contains(&cut));
        principal.expires_at = now.saturating_sub(1);
        assert!(within_token(hour, &principal).is_err());
    }
}
