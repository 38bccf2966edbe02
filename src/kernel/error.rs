//! The kernel's errors. Each says what went wrong and what to do; `Display` is the text users
//! and extensions see.

/// An error of the kernel's own operations (commands, queues, sessions).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum KernelError {
    /// Extension code raised or a Lua value had the wrong shape.
    #[error("{0}")]
    Lua(String),
    #[error("unknown command: /{name}{hint}")]
    UnknownCommand { name: String, hint: String },
    #[error("/{0} is disabled while the agent is running")]
    CommandWhileBusy(String),
    #[error("/{name} failed: {message}")]
    CommandFailed { name: String, message: String },
    #[error("unknown queue {0:?}: use \"steering\" or \"follow-up\"")]
    UnknownQueue(String),
    #[error("the agent is running; wait for the turn to end or cancel it")]
    AgentBusy,
    #[error("no session backend named '{name}' is loaded (loaded: {loaded}); choose one with --session-backend, or use --no-session")]
    NoSessionBackend { name: String, loaded: String },
    #[error("no session matches '{0}' here; `fen session list` shows them")]
    NoSessionMatches(String),
    #[error("'{query}' matches {count} sessions; give more of the id")]
    AmbiguousSession { query: String, count: usize },
}

impl From<mlua::Error> for KernelError {
    fn from(e: mlua::Error) -> Self {
        KernelError::Lua(super::convert::error_parts(&e).0)
    }
}
