//! The MCP client core: configuration files ([`config`]), tool names ([`names`]), the
//! connections to servers through the official SDK, rmcp ([`manager`]), and rmcp's streamable
//! HTTP transport over fen's own HTTP client ([`http`]). No Lua, no kernel: the binding is
//! `crate::host::native::mcp`, the policy (registration, `/mcp`, `mcp_search`) is the `mcp`
//! companion extension.

pub mod config;
pub mod http;
pub mod manager;
pub mod names;

pub use manager::{
    global, terminate_all, CallError, CallOutcome, Manager, Part, ServerInfo, Status, ToolInfo,
};
