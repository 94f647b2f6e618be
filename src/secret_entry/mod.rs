//! Secret entry: a human types a secret (a password, a token) into an agent's pane through a
//! one-time link, and the model never sees it.
//!
//! The `request_secret_input` tool ([`crate::mcp::tools::secret`]) opens a request on the
//! [`SecretDesk`] and offers its link to the client's user by URL elicitation, or, where the
//! client cannot show it, holds the request for the approvers (`/approvals/secrets`,
//! [`crate::http::approvals`]); never to the model. The human opens it (`GET /secret?t=…`, [`crate::http::secret`]), types
//! the secret, and the gateway types it into the pane. What was typed reaches no answer, log,
//! metric or audit record: the audit log gets its length.
//!
//! - [`desk`]: the open requests and their one-time tokens;
//! - [`page`]: the pages the human sees and the check of what they typed (pure);
//! - [`exposure`]: whether a secret typed now would show or go astray (pure);
//! - [`deliver`]: typing it, after that check.

pub(crate) mod deliver;
pub(crate) mod desk;
pub(crate) mod exposure;
pub(crate) mod page;

pub(crate) use deliver::{DeliverError, PaneDestination, Receiver};
pub(crate) use desk::{IssueError, NewRequest, OpenRequest, SecretDesk};
