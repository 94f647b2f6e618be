//! The Host/Origin guard in front of `/mcp`.
//!
//! It runs before authentication so that a request from a rebinding or cross-site context is
//! refused with 403 whatever credentials it carries. rmcp has an equivalent check inside its
//! service; the gateway turns that one off and keeps this single matcher, whose patterns are
//! the ones in `[http]` (see [`crate::config::allowlist`]).

use std::sync::Arc;

use axum::Json;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, StatusCode, Uri, header};

use crate::config::allowlist::{
    HostPattern, OriginPattern, parse_host_header, parse_origin_header,
};

/// The accepted `Host` and `Origin` values.
#[derive(Debug, Clone)]
pub(crate) struct Allowlist {
    pub hosts: Vec<HostPattern>,
    pub origins: Vec<OriginPattern>,
}

/// Why a request was refused, as the HTTP answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rejection {
    pub status: StatusCode,
    pub message: String,
}

impl IntoResponse for Rejection {
    fn into_response(self) -> Response {
        let error = if self.status == StatusCode::FORBIDDEN {
            "forbidden"
        } else {
            "bad_request"
        };
        let body = serde_json::json!({ "error": error, "message": self.message });
        (self.status, Json(body)).into_response()
    }
}

impl Allowlist {
    /// Checks a request's `Host` (or HTTP/2 `:authority`) and, when present, its `Origin`.
    pub(crate) fn check(&self, headers: &HeaderMap, uri: &Uri) -> Result<(), Rejection> {
        let host_value = match headers.get(header::HOST) {
            Some(value) => value
                .to_str()
                .map_err(|_| bad_request("Host is not ASCII"))?,
            None => uri
                .authority()
                .map(|a| a.as_str())
                .ok_or_else(|| bad_request("missing Host header"))?,
        };
        let (host, port) =
            parse_host_header(host_value).map_err(|e| bad_request(&e.to_string()))?;
        if !self.hosts.iter().any(|p| p.matches(&host, port)) {
            return Err(forbidden(format!(
                "Host `{host_value}` is not allowed; the operator can add it to http.allowed_hosts"
            )));
        }

        let Some(origin_value) = headers.get(header::ORIGIN) else {
            return Ok(());
        };
        let origin_text = origin_value
            .to_str()
            .map_err(|_| forbidden("Origin is not ASCII".into()))?;
        let origin = parse_origin_header(origin_text).map_err(|e| forbidden(e.to_string()))?;
        if !self.origins.iter().any(|p| p.matches(&origin)) {
            return Err(forbidden(format!(
                "Origin `{origin_text}` is not allowed; the operator can add it to \
                 http.allowed_origins"
            )));
        }
        Ok(())
    }
}

fn forbidden(message: String) -> Rejection {
    Rejection {
        status: StatusCode::FORBIDDEN,
        message,
    }
}

fn bad_request(message: &str) -> Rejection {
    Rejection {
        status: StatusCode::BAD_REQUEST,
        message: message.to_owned(),
    }
}

/// axum middleware applying [`Allowlist::check`].
pub(crate) async fn enforce(
    State(allowlist): State<Arc<Allowlist>>,
    request: Request,
    next: Next,
) -> Response {
    match allowlist.check(request.headers(), request.uri()) {
        Ok(()) => next.run(request).await,
        Err(rejection) => {
            tracing::warn!(
                status = rejection.status.as_u16(),
                reason = %rejection.message,
                "request refused by Host/Origin guard"
            );
            rejection.into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;

    use super::*;

    fn loopback() -> Allowlist {
        Allowlist {
            hosts: ["localhost", "127.0.0.1", "::1"]
                .iter()
                .map(|h| HostPattern::parse(h).unwrap())
                .collect(),
            origins: vec![OriginPattern::parse("http://localhost:*").unwrap()],
        }
    }

    fn check(host: Option<&str>, origin: Option<&str>) -> Result<(), Rejection> {
        let mut headers = HeaderMap::new();
        if let Some(host) = host {
            headers.insert(header::HOST, HeaderValue::from_str(host).unwrap());
        }
        if let Some(origin) = origin {
            headers.insert(header::ORIGIN, HeaderValue::from_str(origin).unwrap());
        }
        loopback().check(&headers, &Uri::from_static("/mcp"))
    }

    #[test]
    fn loopback_hosts_pass_without_origin() {
        assert_eq!(check(Some("127.0.0.1:8767"), None), Ok(()));
        assert_eq!(check(Some("localhost"), None), Ok(()));
        assert_eq!(check(Some("[::1]:8767"), None), Ok(()));
    }

    #[test]
    fn other_hosts_are_forbidden() {
        let rejection = check(Some("evil.example:8767"), None).unwrap_err();
        assert_eq!(rejection.status, StatusCode::FORBIDDEN);
        assert!(rejection.message.contains("evil.example"));
    }

    #[test]
    fn missing_or_malformed_host_is_a_bad_request() {
        assert_eq!(
            check(None, None).unwrap_err().status,
            StatusCode::BAD_REQUEST
        );
        assert_eq!(
            check(Some("a b"), None).unwrap_err().status,
            StatusCode::BAD_REQUEST
        );
    }

    #[test]
    fn http2_authority_stands_in_for_host() {
        let uri = Uri::from_static("http://localhost:8767/mcp");
        assert_eq!(loopback().check(&HeaderMap::new(), &uri), Ok(()));
    }

    #[test]
    fn origins_must_match_when_present() {
        assert_eq!(
            check(Some("localhost"), Some("http://localhost:3000")),
            Ok(())
        );
        for origin in ["https://evil.example", "null", "garbage"] {
            let rejection = check(Some("localhost"), Some(origin)).unwrap_err();
            assert_eq!(rejection.status, StatusCode::FORBIDDEN, "{origin}");
        }
    }
}
