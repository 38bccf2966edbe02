//! fen: a coding-agent CLI. A small Rust kernel embeds Lua 5.4; providers, presenters, tools,
//! commands, hooks and session storage are Lua extensions; speed- and safety-critical parts are
//! native Rust modules exposed to Lua as `require("fen.native")`.

//!
//! Layers, each pointing only down: `cmd` (the CLI) → `host` (the Lua host) → `kernel`
//! (registry, events, agent loop, sessions) → `native` (pure cores). See docs/architecture.md.

pub mod cmd;
pub mod host;
pub mod kernel;
pub mod native;
