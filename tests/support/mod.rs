//! Shared support code for integration tests.
pub mod fake_llm;
