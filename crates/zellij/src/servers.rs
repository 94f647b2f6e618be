//! The configured Zellij servers, by name, each opened on first use.
//!
//! A Zellij "server" here is what `[zellij.servers.<name>]` configures: the sessions of one
//! socket dir, reached with one environment, and the session a call acts on when it names none.
//! The backend of a server is opened ([`ZellijBackend::open`] checks the binary and its
//! version) on the first call that needs it, so a gateway starts even where `zellij` is not
//! installed; a failed open is tried again by the next call.
//!
//! Not here: access rules (which caller may use which server): the gateway's MCP layer.

use std::collections::BTreeMap;

use tokio::sync::OnceCell;

use super::backend::{ZellijBackend, ZellijServerSpec};
use super::error::Result;
use super::ids::SessionName;

/// Every configured Zellij server. Cheap to clone.
#[derive(Clone, Default)]
pub struct ZellijServers {
    servers: BTreeMap<String, std::sync::Arc<ZellijServer>>,
}

/// One configured Zellij server.
pub struct ZellijServer {
    name: String,
    default_session: Option<SessionName>,
    spec: ZellijServerSpec,
    backend: OnceCell<ZellijBackend>,
}

impl ZellijServers {
    /// The servers `(name, default session, spec)`; nothing runs until a call needs a backend.
    pub fn new(
        servers: impl IntoIterator<Item = (String, Option<SessionName>, ZellijServerSpec)>,
    ) -> Self {
        let servers = servers
            .into_iter()
            .map(|(name, default_session, spec)| {
                let server = ZellijServer {
                    name: name.clone(),
                    default_session,
                    spec,
                    backend: OnceCell::new(),
                };
                (name, std::sync::Arc::new(server))
            })
            .collect();
        Self { servers }
    }

    /// The server configured as `name`.
    pub fn get(&self, name: &str) -> Option<&ZellijServer> {
        self.servers.get(name).map(|s| &**s)
    }

    /// In name order.
    pub fn iter(&self) -> impl Iterator<Item = &ZellijServer> {
        self.servers.values().map(|s| &**s)
    }
}

impl ZellijServer {
    /// Its configured name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The session calls act on when they name none.
    pub fn default_session(&self) -> Option<&SessionName> {
        self.default_session.as_ref()
    }

    /// The backend, opened on first use.
    pub async fn backend(&self) -> Result<&ZellijBackend> {
        self.backend
            .get_or_try_init(|| ZellijBackend::open(self.spec.clone()))
            .await
    }
}
