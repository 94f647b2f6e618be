//! Links for humans (a secret entry form, a live view): where their browsers reach the gateway.

use crate::config::HttpConfig;

use super::error::{ToolError, ToolErrorKind};

/// The base of a link: `http.public_url`, else the scheme and `Host` of the agent's request (the
/// Host/Origin guard has already checked it against `http.allowed_hosts`).
pub fn base(http: &HttpConfig, request: &http::request::Parts) -> Result<String, ToolError> {
    if let Some(public) = &http.public_url {
        return Ok(public.join(""));
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
