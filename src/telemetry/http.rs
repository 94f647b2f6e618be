//! Counting HTTP requests by route and status, as an axum middleware on the whole router.
//!
//! Routes are a fixed list (anything else is `other`), so a client probing random paths cannot
//! create new series.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;

use super::Metrics;

/// The middleware: counts each response once its head is ready.
pub(crate) async fn count_requests(
    State(metrics): State<Arc<Metrics>>,
    request: Request,
    next: Next,
) -> Response {
    let route = route_of(request.uri().path());
    let response = next.run(request).await;
    metrics.record_http(route, response.status().as_u16());
    response
}

/// The `route` label of a request path.
pub(crate) fn route_of(path: &str) -> &'static str {
    const PROTECTED_RESOURCE: &str = "/.well-known/oauth-protected-resource";
    match path {
        "/mcp" => "/mcp",
        "/healthz" => "/healthz",
        "/readyz" => "/readyz",
        "/metrics" => "/metrics",
        "/approvals" => "/approvals",
        path if path.starts_with("/approvals/") => "/approvals/{id}",
        "/secret" => "/secret",
        "/view" => "/view",
        "/view/events" => "/view/events",
        path if path.starts_with(PROTECTED_RESOURCE) => PROTECTED_RESOURCE,
        _ => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_are_a_closed_set() {
        assert_eq!(route_of("/mcp"), "/mcp");
        assert_eq!(route_of("/metrics"), "/metrics");
        assert_eq!(
            route_of("/.well-known/oauth-protected-resource/mcp"),
            "/.well-known/oauth-protected-resource"
        );
        assert_eq!(route_of("/approvals/a-7"), "/approvals/{id}");
        assert_eq!(route_of("/secret"), "/secret");
        assert_eq!(route_of("/view/events"), "/view/events");
        assert_eq!(route_of("/mcp/extra"), "other");
        assert_eq!(route_of("/random-probe-1234"), "other");
    }
}
