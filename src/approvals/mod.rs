//! Approvals held at the gateway: calls an operator's policy marks as risky wait until a human
//! with the `mux:approve` scope approves or denies them.
//!
//! - [`policy`]: the `[approvals]` rules and which call they hold (pure);
//! - [`desk`]: the calls waiting and the decisions that release them;
//! - [`shown`]: a held call's arguments as an approver reads them (pure).
//!
//! Where they are used: the MCP layer holds a call after its scope and rate checks
//! ([`crate::mcp::approval`]); approvers decide over HTTP (`/approvals`, [`crate::http::approvals`])
//! or with `muxgate approvals`. An MCP elicitation is not used for this: its answer comes from
//! the client, which may be the agent itself.

pub(crate) mod desk;
pub(crate) mod policy;
pub(crate) mod shown;

pub use desk::{ApprovalDesk, DecideError, Decision, HeldCall, PendingApproval, Ticket, Verdict};
pub use policy::{ApprovalPolicy, ApprovalsConfig, CallFacts};
