//! The kernel: contracts, registry, event bus, extension loader and reload, prompt assembly,
//! settings. Everything a user might change lives in Lua extensions on top of it.

pub mod agent;
pub mod calls;
pub mod contracts;
pub mod convert;
pub mod error;
pub mod events;
pub mod loader;
pub mod log;
pub mod prompt;
pub mod registry;
pub mod sessions;
pub mod settings;
pub mod state;
pub mod suggest;
pub mod tools;
pub mod trust;
pub mod ui;

pub use error::KernelError;
pub use state::{ExtensionRecord, ReloadReport, Status};

/// An extension record as JSON (`fen list extensions --json`, `api.kernel.extensions()`).
pub fn extension_json(r: &ExtensionRecord) -> serde_json::Value {
    serde_json::json!({
        "name": r.name,
        "status": r.status.as_str(),
        "message": r.message,
        "description": r.description,
        "root_kind": r.root_kind.as_str(),
        "root": r.root,
        "path": r.path(),
        "first_party": r.first_party,
        "shadowed_by": r.shadowed_by,
        "requires": {"bin": r.requires_bin},
    })
}
