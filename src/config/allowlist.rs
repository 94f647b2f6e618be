//! Which `Host` and `Origin` header values the gateway accepts on `/mcp`.
//!
//! These checks defend a locally bound gateway against DNS rebinding and cross-site requests
//! from browsers. The patterns are parsed once from the config; matching is pure so it can be
//! tested exhaustively. The tower layer that applies them is [`crate::http::guard`].
//!
//! Semantics:
//! - host pattern: `*` (any), `name`, `name:port`, `[v6]`, `[v6]:port`; without a port any
//!   port matches; names compare case-insensitively.
//! - origin pattern: `*` (any), `null`, `scheme://host`, `scheme://host:port`,
//!   `scheme://host:*`; without a port the scheme's default port is meant (RFC 6454).

use std::fmt;

use http::Uri;
use http::uri::Authority;
use serde::{Deserialize, Deserializer};

/// An accepted `Host` header value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostPattern {
    /// `*`: any host (Host checking disabled).
    Any,
    /// A host name or IP address, optionally with one port.
    Exact {
        /// The name or address, lowercased; an IPv6 address without brackets.
        host: String,
        /// The one port accepted; `None`: any port.
        port: Option<u16>,
    },
}

/// An accepted `Origin` header value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OriginPattern {
    /// `*`: any origin (Origin checking disabled).
    Any,
    /// The opaque origin `null` (sandboxed frames, `file:` pages).
    Null,
    /// A scheme, host and port (or any port).
    Tuple {
        /// The scheme, lowercased.
        scheme: String,
        /// The name or address, lowercased; an IPv6 address without brackets.
        host: String,
        /// The port: as written, `:*` for any, or without one the scheme's default.
        port: PortPattern,
    },
}

/// The port part of an origin pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PortPattern {
    /// `:*`: any port.
    Any,
    /// This port only.
    Exact(u16),
}

/// A request's `Origin` value, normalized for comparison.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestOrigin {
    /// `null`: an opaque origin.
    Null,
    /// A scheme, host and port.
    Tuple {
        /// The scheme, lowercased.
        scheme: String,
        /// The name or address, lowercased; an IPv6 address without brackets.
        host: String,
        /// The port as sent, else the scheme's default (80 for `http`, 443 for `https`).
        port: u16,
    },
}

/// A malformed pattern or header value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct AllowlistError(String);

impl HostPattern {
    /// Parses one `http.allowed_hosts` entry: `*`, `name`, `name:port`, `[v6]` or `[v6]:port`
    /// (a bare IPv6 address, `::1`, is taken as `[::1]`).
    pub fn parse(text: &str) -> Result<Self, AllowlistError> {
        if text == "*" {
            return Ok(Self::Any);
        }
        let (host, port) = parse_authority(text)
            .map_err(|why| AllowlistError(format!("invalid host pattern `{text}`: {why}")))?;
        Ok(Self::Exact { host, port })
    }

    /// Whether a request to `host` (normalized, see [`parse_host_header`]) is accepted.
    pub fn matches(&self, host: &str, port: Option<u16>) -> bool {
        match self {
            Self::Any => true,
            Self::Exact {
                host: allowed,
                port: allowed_port,
            } => allowed == host && allowed_port.is_none_or(|p| Some(p) == port),
        }
    }
}

impl OriginPattern {
    /// Parses one `http.allowed_origins` entry: `*`, `null`, `scheme://host`,
    /// `scheme://host:port` or `scheme://host:*` (a scheme other than http or https needs a port).
    pub fn parse(text: &str) -> Result<Self, AllowlistError> {
        let invalid = |why: &str| AllowlistError(format!("invalid origin pattern `{text}`: {why}"));
        match text {
            "*" => return Ok(Self::Any),
            "null" => return Ok(Self::Null),
            _ => {}
        }
        let (base, any_port) = match text.strip_suffix(":*") {
            Some(base) => (base, true),
            None => (text, false),
        };
        let (scheme, host, port) = parse_origin_parts(base).map_err(|why| invalid(&why))?;
        let port = match (any_port, port) {
            (true, None) => PortPattern::Any,
            (true, Some(_)) => return Err(invalid("both a port and `:*`")),
            (false, Some(port)) => PortPattern::Exact(port),
            (false, None) => PortPattern::Exact(
                default_port(&scheme)
                    .ok_or_else(|| invalid("a scheme other than http/https needs a port"))?,
            ),
        };
        Ok(Self::Tuple { scheme, host, port })
    }

    /// Whether a request with `origin` (normalized, see [`parse_origin_header`]) is accepted.
    pub fn matches(&self, origin: &RequestOrigin) -> bool {
        match (self, origin) {
            (Self::Any, _) => true,
            (Self::Null, RequestOrigin::Null) => true,
            (
                Self::Tuple {
                    scheme,
                    host,
                    port: port_pattern,
                },
                RequestOrigin::Tuple {
                    scheme: req_scheme,
                    host: req_host,
                    port,
                },
            ) => {
                scheme == req_scheme
                    && host == req_host
                    && match port_pattern {
                        PortPattern::Any => true,
                        PortPattern::Exact(allowed) => allowed == port,
                    }
            }
            _ => false,
        }
    }
}

impl fmt::Display for HostPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Any => f.write_str("*"),
            Self::Exact { host, port } => {
                write_host(f, host)?;
                match port {
                    Some(port) => write!(f, ":{port}"),
                    None => Ok(()),
                }
            }
        }
    }
}

impl fmt::Display for OriginPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Any => f.write_str("*"),
            Self::Null => f.write_str("null"),
            Self::Tuple { scheme, host, port } => {
                write!(f, "{scheme}://")?;
                write_host(f, host)?;
                match port {
                    PortPattern::Any => f.write_str(":*"),
                    PortPattern::Exact(port) => write!(f, ":{port}"),
                }
            }
        }
    }
}

fn write_host(f: &mut fmt::Formatter<'_>, host: &str) -> fmt::Result {
    if host.contains(':') {
        write!(f, "[{host}]")
    } else {
        f.write_str(host)
    }
}

impl<'de> Deserialize<'de> for HostPattern {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

impl<'de> Deserialize<'de> for OriginPattern {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// Normalizes a `Host` header value into (host, port).
pub fn parse_host_header(value: &str) -> Result<(String, Option<u16>), AllowlistError> {
    parse_authority(value).map_err(|why| AllowlistError(format!("invalid Host header: {why}")))
}

/// Normalizes an `Origin` header value.
pub fn parse_origin_header(value: &str) -> Result<RequestOrigin, AllowlistError> {
    if value == "null" {
        return Ok(RequestOrigin::Null);
    }
    let (scheme, host, port) = parse_origin_parts(value)
        .map_err(|why| AllowlistError(format!("invalid Origin header: {why}")))?;
    let port = port
        .or_else(|| default_port(&scheme))
        .ok_or_else(|| AllowlistError("invalid Origin header: no port for its scheme".into()))?;
    Ok(RequestOrigin::Tuple { scheme, host, port })
}

fn parse_authority(text: &str) -> Result<(String, Option<u16>), String> {
    if text.is_empty() {
        return Err("empty".into());
    }
    // A bare IPv6 address (`::1`) is not an authority; accept it as a host without a port.
    if let Ok(v6) = text.parse::<std::net::Ipv6Addr>() {
        return Ok((v6.to_string(), None));
    }
    if text.contains('@') {
        return Err("user information is not allowed".into());
    }
    let authority = Authority::try_from(text).map_err(|e| e.to_string())?;
    if authority.as_str().contains(':') && authority.port_u16().is_none() && !is_v6(&authority) {
        return Err("invalid port".into());
    }
    Ok((normalize_host(authority.host()), authority.port_u16()))
}

fn is_v6(authority: &Authority) -> bool {
    authority.host().starts_with('[') && authority.as_str().ends_with(']')
}

fn parse_origin_parts(text: &str) -> Result<(String, String, Option<u16>), String> {
    let uri = Uri::try_from(text).map_err(|e| e.to_string())?;
    let scheme = uri
        .scheme_str()
        .ok_or("missing scheme (e.g. http://)")?
        .to_ascii_lowercase();
    let authority = uri.authority().ok_or("missing host")?;
    if authority.as_str().contains('@') {
        return Err("user information is not allowed".into());
    }
    if !matches!(uri.path(), "" | "/") || uri.query().is_some() {
        return Err("an origin has no path or query".into());
    }
    Ok((
        scheme,
        normalize_host(authority.host()),
        authority.port_u16(),
    ))
}

fn normalize_host(host: &str) -> String {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase()
}

fn default_port(scheme: &str) -> Option<u16> {
    match scheme {
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(text: &str) -> HostPattern {
        HostPattern::parse(text).unwrap()
    }

    fn origin(text: &str) -> OriginPattern {
        OriginPattern::parse(text).unwrap()
    }

    fn req_origin(text: &str) -> RequestOrigin {
        parse_origin_header(text).unwrap()
    }

    fn host_allows(pattern: &str, header: &str) -> bool {
        let (h, p) = parse_host_header(header).unwrap();
        host(pattern).matches(&h, p)
    }

    #[test]
    fn host_patterns_match_name_and_optional_port() {
        assert!(host_allows("localhost", "localhost:8767"));
        assert!(host_allows("localhost", "LOCALHOST"));
        assert!(host_allows("localhost:8767", "localhost:8767"));
        assert!(!host_allows("localhost:8767", "localhost:9000"));
        assert!(!host_allows("localhost:8767", "localhost"));
        assert!(!host_allows("localhost", "evil.example"));
        assert!(!host_allows("localhost", "localhost.evil.example"));
        assert!(host_allows("*", "anything.example:1"));
    }

    #[test]
    fn host_patterns_handle_ipv6() {
        assert!(host_allows("::1", "[::1]:8767"));
        assert!(host_allows("[::1]", "[::1]"));
        assert!(host_allows("[::1]:80", "[::1]:80"));
        assert!(!host_allows("::1", "[::2]:8767"));
        assert_eq!(host("::1").to_string(), "[::1]");
    }

    #[test]
    fn malformed_host_patterns_are_rejected() {
        for bad in [
            "",
            "a b",
            "user@host",
            "host:notaport",
            "host:99999",
            "http://x",
        ] {
            assert!(HostPattern::parse(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn origin_patterns_compare_scheme_host_and_port() {
        let loopback_any = origin("http://localhost:*");
        assert!(loopback_any.matches(&req_origin("http://localhost:3000")));
        assert!(loopback_any.matches(&req_origin("http://localhost")));
        assert!(!loopback_any.matches(&req_origin("https://localhost:3000")));
        assert!(!loopback_any.matches(&req_origin("http://evil.example:3000")));

        let exact = origin("https://app.example");
        assert!(exact.matches(&req_origin("https://app.example")));
        assert!(exact.matches(&req_origin("https://app.example:443")));
        assert!(!exact.matches(&req_origin("https://app.example:8443")));

        assert!(origin("null").matches(&RequestOrigin::Null));
        assert!(!origin("http://localhost:*").matches(&RequestOrigin::Null));
        assert!(origin("*").matches(&req_origin("https://anything.example")));
        assert!(origin("http://[::1]:*").matches(&req_origin("http://[::1]:5173")));
    }

    #[test]
    fn malformed_origin_patterns_are_rejected() {
        for bad in [
            "localhost",
            "http://",
            "http://x/path",
            "http://x?q=1",
            "ftp://x",
            "http://x:80:*",
            "http://u@x",
        ] {
            assert!(OriginPattern::parse(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn patterns_display_as_they_parse() {
        for text in [
            "*",
            "null",
            "http://localhost:*",
            "https://app.example:443",
            "http://[::1]:*",
        ] {
            assert_eq!(origin(text).to_string(), text);
        }
        for text in ["*", "localhost", "localhost:1", "[::1]:2"] {
            assert_eq!(host(text).to_string(), text);
        }
    }
}
