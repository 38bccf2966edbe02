//! Native modules: pure Rust cores (no Lua) that the Lua extensions call through the bindings
//! in `crate::lua::native`.
