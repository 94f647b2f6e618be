//! `GET /hosts/connect`: a host dialling in (`muxgate host connect`, see
//! [`crate::hosts::dial_in`]). Only a host's own token is accepted, and only for a host the
//! configuration says dials in; the WebSocket is then kept for that host's link. Any other
//! token is refused here, and a host's token is refused everywhere else.

use std::sync::Arc;

use axum::extract::State;
use axum::extract::ws::WebSocketUpgrade;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::auth::Authenticator;
use crate::hosts::dial_in::{DialIns, MAX_MESSAGE_BYTES};

/// What `/hosts/connect` needs.
#[derive(Clone)]
pub struct DialInApi {
    /// Verifies the host's token.
    pub authenticator: Arc<Authenticator>,
    /// The hosts that dial in.
    pub hosts: Arc<DialIns>,
}

/// Authenticates the host, then keeps its WebSocket for its link.
pub(crate) async fn connect(
    State(api): State<DialInApi>,
    headers: HeaderMap,
    upgrade: WebSocketUpgrade,
) -> Response {
    let host = match api.authenticator.authenticate_host(&headers) {
        Ok(host) => host,
        Err(reason) => return api.authenticator.reject(reason),
    };
    if !api.hosts.accepts(&host) {
        tracing::warn!(%host, "a host that does not dial in here tried to");
        return (
            StatusCode::FORBIDDEN,
            format!("host {host:?} does not dial in here: [hosts.{host}] dial_in is not set\n"),
        )
            .into_response();
    }
    upgrade
        .max_message_size(MAX_MESSAGE_BYTES)
        .max_frame_size(MAX_MESSAGE_BYTES)
        .on_upgrade(move |socket| async move { api.hosts.arrive(&host, socket) })
}
