//! The Lua host: state setup and module search (`vm`), boot and reload of extensions (`boot`),
//! the `api` table (`api`) and the thin `fen.native` bindings (`native`). It sits between the
//! CLI (`crate::cmd`) above and the kernel and native cores below.

pub mod annotations;
pub mod api;
pub mod boot;
pub mod native;
pub mod options;
pub mod run;
pub mod vm;

pub use boot::{embedded_presenter, BootOptions, Kernel};
