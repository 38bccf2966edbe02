//! The integration tests, as one test binary (as ripgrep does): one link instead of one per
//! file, and shared helpers (`common`, `support`, `tools_support`) compiled once. Files that
//! change process-global state (environment variables, every live process group) stay
//! separate targets in Cargo.toml: native_http_proxy, native_sanitize, native_process_exit,
//! jsonl_kill, sandbox.

mod common;
mod support;
mod tools_support;

mod acp;
mod agent_loop;
mod agent_queues;
mod annotations;
mod checkpoints;
mod cli;
mod compaction;
mod companions;
mod fake_llm_selftest;
mod kernel_loader;
mod kernel_runtime;
mod kernel_soundness;
mod layering;
mod login;
mod lsp;
mod mcp;
mod native_edit;
mod native_filetype;
mod native_http;
mod native_jsonl;
mod native_process;
mod native_search;
mod native_sse;
mod native_truncate;
mod permissions;
mod policy_corpus;
mod providers;
mod recorded_streams;
mod rpc;
mod session_export;
mod sessions;
mod stdio_presenter;
mod subagents;
mod tools_bash;
mod tools_fs;
mod tools_search;
pub mod tui;
mod tui_code;
mod tui_comforts;
mod tui_inline;
mod tui_rewind;
mod workflow;
