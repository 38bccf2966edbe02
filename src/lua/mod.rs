//! The bridge between the kernel and Lua: state setup and module search (`vm`), the `api`
//! table (`api`), value conversion (`convert`) and the `fen.native` module (`native`).

pub mod api;
pub mod convert;
pub mod native;
pub mod vm;
