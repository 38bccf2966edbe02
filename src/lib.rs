//! fen: a coding-agent CLI. A small Rust kernel embeds Lua 5.4; providers, presenters, tools,
//! commands, hooks and session storage are Lua extensions; speed- and safety-critical parts are
//! native Rust modules exposed to Lua as `require("fen.native")`.

pub mod cli;
pub mod kernel;
pub mod lua;
pub mod native;
pub mod runtime;
pub mod session;
pub mod session_cmd;
pub mod suggest;
