//! Native modules: pure Rust cores (no Lua) that the Lua extensions call through the bindings
//! in `crate::lua::native`.

pub mod edit;
pub mod filetype;
pub mod fs;
pub mod http;
pub mod jsonl;
pub mod plain_deltas;
pub mod policy;
pub mod process;
pub mod read;
pub mod sanitize;
pub mod search;
pub mod sse;
pub mod truncate;
