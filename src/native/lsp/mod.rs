//! The language-server client core: JSON-RPC framing ([`rpc`]), server definitions and the
//! `lsp` settings ([`config`]), one connection per server process ([`client`]), the servers
//! and documents of this process ([`manager`]), diagnostics and their delta after an edit
//! ([`diag`]), navigation requests ([`nav`]), positions and URIs ([`position`]). No Lua, no
//! kernel: the binding is `crate::host::native::lsp`, the policy (the `lsp` tool, the
//! diagnostics appended to edit and write results, `/lsp`) is the `lsp` companion extension.

pub mod client;
pub mod config;
pub mod diag;
pub mod manager;
pub mod nav;
pub mod position;
pub mod rpc;

pub use manager::{global, shutdown_all, FileReport, Item, Manager, NavResult, ServerInfo};
