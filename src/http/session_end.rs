//! `DELETE /mcp` (a client ending its MCP session) answered `204 No Content`.
//!
//! rmcp answers a successful DELETE with `202 Accepted`. The spec asks only for a success
//! status, but the official Python SDKs (1.x and 2.x) treat anything but 200/204 as a failed
//! termination and log a warning on every disconnect; 204 says the same thing and is accepted
//! everywhere.

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use http::{Method, StatusCode};

/// axum middleware for `/mcp`: a successful DELETE becomes 204.
pub(crate) async fn no_content_on_delete(req: Request, next: Next) -> Response {
    let delete = req.method() == Method::DELETE;
    let mut response = next.run(req).await;
    if delete && response.status() == StatusCode::ACCEPTED {
        *response.status_mut() = StatusCode::NO_CONTENT;
    }
    response
}
