//! Telling someone: events that need a human (a call held for approval, a secret requested)
//! routed to the webhooks of `[notify.targets.<name>]`, without ever slowing a call.
//!
//! - [`config`]: the targets, each a format, a URL, the events it takes and whose (clients,
//!   workspaces), and the approver whose inbox sign-in links it carries.
//! - [`event`]: what happened, as a route, a deduplication key and a one-line summary.
//! - [`payload`]: one request per target format, pure: plain JSON signed with HMAC-SHA256, a
//!   Slack-compatible incoming webhook, ntfy.
//! - [`deliver`]: the queue a call hands its event to (bounded; a full queue drops the event
//!   and counts it), and the task that posts it to each target, retrying with back-off.
//! - [`post`]: one POST, HTTP/1.1 over a connection of its own (TLS for https).

pub(crate) mod config;
pub(crate) mod deliver;
pub(crate) mod event;
pub(crate) mod payload;
pub(crate) mod post;

pub use config::NotifyConfig;
pub(crate) use deliver::{InboxLinks, Notifier};
pub(crate) use event::{AgentEdge, Event};
