//! A response body that holds something while it is being sent: an in-flight slot, a session
//! kept busy. What it holds is released once the body has been sent in full, or when the body
//! is dropped (the client left), whichever comes first.

use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http_body::{Frame, SizeHint};

/// `inner`, holding `held` until it ends or is dropped.
pub(crate) struct HeldBody<G> {
    inner: Body,
    held: Option<G>,
}

impl<G: Send + Unpin + 'static> HeldBody<G> {
    /// `response` with its body holding `held`.
    pub(crate) fn wrap(response: Response, held: G) -> Response {
        response.map(|inner| {
            Body::new(HeldBody {
                inner,
                held: Some(held),
            })
        })
    }
}

impl<G: Unpin> http_body::Body for HeldBody<G> {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if let Poll::Ready(None) = polled {
            self.held = None;
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
