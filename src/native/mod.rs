//! Native modules: pure Rust cores (no Lua) that the Lua extensions call through the bindings
//! in `crate::host::native`.

pub mod edit;
pub mod filetype;
pub mod frontmatter;
pub mod fs;
pub mod html;
pub mod http;
pub mod image;
pub mod jobs;
pub mod jsonl;
pub mod line;
pub mod mcp;
pub mod plain_deltas;
pub mod policy;
pub mod prices;
pub mod process;
pub mod read;
pub mod registry;
pub mod sandbox;
pub mod sanitize;
pub mod search;
pub mod sse;
pub mod subagent;
pub mod term;
pub mod truncate;
pub mod webfetch;
