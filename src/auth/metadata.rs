//! OAuth 2.0 Protected Resource Metadata (RFC 9728) for the MCP endpoint.
//!
//! For a resource `https://gw.example.com/mcp` the document is served at
//! `/.well-known/oauth-protected-resource/mcp` (the RFC's path-specific form, which the 401
//! challenge points to) and at `/.well-known/oauth-protected-resource` (where clients look
//! when they were given no URL).

use std::sync::Arc;

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use serde::Serialize;

use super::config::{AuthConfig, AuthConfigError};
use super::principal::KNOWN_SCOPES;

/// Well-known path prefix of the metadata document.
pub(crate) const WELL_KNOWN_PATH: &str = "/.well-known/oauth-protected-resource";

/// The protected resource (the MCP endpoint) as advertised to clients.
#[derive(Debug, Clone)]
pub struct ProtectedResource {
    resource: String,
    metadata_path: String,
    metadata_url: String,
    authorization_servers: Vec<String>,
}

/// The RFC 9728 document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ResourceMetadata {
    /// The resource identifier (the MCP endpoint URL).
    pub resource: String,
    /// Authorization servers that issue tokens for it (omitted when none is configured).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub authorization_servers: Vec<String>,
    /// The scopes the gateway understands.
    pub scopes_supported: Vec<&'static str>,
    /// Only the `Authorization` header carries tokens.
    pub bearer_methods_supported: Vec<&'static str>,
    /// Human-readable name.
    pub resource_name: &'static str,
}

/// Splits an absolute http(s) URL into origin (`scheme://authority`) and path, refusing
/// anything that could not be quoted safely in a `WWW-Authenticate` header.
fn split_url(url: &str) -> Option<(&str, &str)> {
    if url
        .chars()
        .any(|c| !c.is_ascii_graphic() || matches!(c, '"' | '\\' | '?' | '#'))
    {
        return None;
    }
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))?;
    let authority_len = rest.find('/').unwrap_or(rest.len());
    if authority_len == 0 {
        return None;
    }
    let split = url.len() - rest.len() + authority_len;
    Some((&url[..split], &url[split..]))
}

impl ProtectedResource {
    /// Builds the resource description from `[auth]`; `default_resource` (the MCP URL derived
    /// from the listen address) is used when `auth.resource` is unset.
    pub fn new(cfg: &AuthConfig, default_resource: &str) -> Result<Self, AuthConfigError> {
        let resource = cfg.resource.as_deref().unwrap_or(default_resource);
        let invalid = |field: &str, reason: &str| AuthConfigError::Invalid {
            field: field.into(),
            reason: reason.into(),
        };
        let (origin, path) = split_url(resource).ok_or_else(|| {
            invalid(
                "auth.resource",
                "must be an absolute http(s) URL without query, fragment, spaces or quotes",
            )
        })?;
        for server in &cfg.authorization_servers {
            if split_url(server).is_none() {
                return Err(invalid(
                    "auth.authorization_servers",
                    "each entry must be an absolute http(s) URL without query, fragment, spaces or quotes",
                ));
            }
        }
        let path = path.trim_end_matches('/');
        let metadata_path = format!("{WELL_KNOWN_PATH}{path}");
        Ok(Self {
            resource: resource.to_owned(),
            metadata_url: format!("{origin}{metadata_path}"),
            metadata_path,
            authorization_servers: cfg.authorization_servers.clone(),
        })
    }

    /// The resource identifier.
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// Absolute URL of the metadata document (for `WWW-Authenticate`).
    pub fn metadata_url(&self) -> &str {
        &self.metadata_url
    }

    /// The document.
    pub fn metadata(&self) -> ResourceMetadata {
        ResourceMetadata {
            resource: self.resource.clone(),
            authorization_servers: self.authorization_servers.clone(),
            scopes_supported: KNOWN_SCOPES.to_vec(),
            bearer_methods_supported: vec!["header"],
            resource_name: "muxgate",
        }
    }

    /// Routes serving the document (no authentication: it is public by design).
    pub fn router<S: Clone + Send + Sync + 'static>(self: &Arc<Self>) -> Router<S> {
        let mut router = Router::new().route(WELL_KNOWN_PATH, get(protected_resource_metadata));
        if self.metadata_path != WELL_KNOWN_PATH {
            router = router.route(&self.metadata_path, get(protected_resource_metadata));
        }
        router.with_state(Arc::clone(self))
    }
}

/// Handler answering the metadata document.
pub(crate) async fn protected_resource_metadata(
    State(resource): State<Arc<ProtectedResource>>,
) -> Json<ResourceMetadata> {
    Json(resource.metadata())
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use http::{Request, StatusCode};
    use tower::ServiceExt;

    fn resource(url: &str, servers: &[&str]) -> Result<ProtectedResource, AuthConfigError> {
        let cfg = AuthConfig {
            resource: Some(url.into()),
            authorization_servers: servers.iter().map(|s| s.to_string()).collect(),
            ..AuthConfig::default()
        };
        ProtectedResource::new(&cfg, "http://127.0.0.1:1/unused")
    }

    #[test]
    fn metadata_url_follows_rfc_9728_path_insertion() {
        let r = resource("https://gw.example.com/mcp", &[]).unwrap();
        assert_eq!(
            r.metadata_url(),
            "https://gw.example.com/.well-known/oauth-protected-resource/mcp"
        );
        let r = resource("http://127.0.0.1:8080", &[]).unwrap();
        assert_eq!(
            r.metadata_url(),
            "http://127.0.0.1:8080/.well-known/oauth-protected-resource"
        );
        let r = resource("https://gw/", &[]).unwrap();
        assert_eq!(
            r.metadata_url(),
            "https://gw/.well-known/oauth-protected-resource"
        );
    }

    #[test]
    fn default_resource_applies_when_unset() {
        let r = ProtectedResource::new(&AuthConfig::default(), "http://127.0.0.1:9/mcp").unwrap();
        assert_eq!(r.resource(), "http://127.0.0.1:9/mcp");
    }

    #[test]
    fn unsafe_urls_are_refused() {
        for bad in [
            "gw/mcp",
            "ftp://gw/mcp",
            "https:///mcp",
            "https://gw/mcp?x=1",
            "https://gw/mcp#f",
            "https://gw/m cp",
            "https://gw/\"mcp",
        ] {
            assert!(resource(bad, &[]).is_err(), "{bad}");
        }
        assert!(resource("https://gw/mcp", &["not a url"]).is_err());
    }

    #[tokio::test]
    async fn document_is_served_at_both_paths() {
        let r =
            Arc::new(resource("https://gw.example.com/mcp", &["https://idp.example.com"]).unwrap());
        let app: Router = r.router();
        for path in [
            "/.well-known/oauth-protected-resource/mcp",
            "/.well-known/oauth-protected-resource",
        ] {
            let resp = app
                .clone()
                .oneshot(Request::get(path).body(Body::empty()).unwrap())
                .await
                .unwrap();
            assert_eq!(resp.status(), StatusCode::OK, "{path}");
            let body = axum::body::to_bytes(resp.into_body(), 1 << 16)
                .await
                .unwrap();
            let doc: serde_json::Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(
                doc,
                serde_json::json!({
                    "resource": "https://gw.example.com/mcp",
                    "authorization_servers": ["https://idp.example.com"],
                    "scopes_supported": ["mux:read", "mux:write", "mux:admin", "mux:approve"],
                    "bearer_methods_supported": ["header"],
                    "resource_name": "muxgate",
                })
            );
        }
    }

    #[test]
    fn authorization_servers_are_omitted_when_none() {
        let doc =
            serde_json::to_value(resource("https://gw/mcp", &[]).unwrap().metadata()).unwrap();
        assert!(doc.get("authorization_servers").is_none());
    }
}
