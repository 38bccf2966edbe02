//! The TUI's terminal layer: a pure Rust core with no Lua and no kernel imports.
//!
//! - [`setup`]: terminal modes (raw, alternate screen, bracketed paste, keyboard enhancement,
//!   alternate scroll) and their restore on every exit path (drop, panic, signals, suspend).
//! - [`inline`]: inline mode's writer (finished rows into the terminal's scrollback, a
//!   redrawn bottom band).
//! - [`input`]: decoding crossterm events into normalised key names and paste/resize events.
//! - [`style`]: the serialisable styles and styled spans/lines the layout speaks.
//! - [`palette`]: the styles native draws markdown and code with, by semantic name (themable).
//! - [`width`]: display width and wrapping by grapheme clusters.
//! - [`markdown`]: markdown to styled lines, with an incremental form for streaming text.
//! - [`highlight`]: syntax highlighting of fenced code, loaded lazily, on a worker thread.
//! - [`diff`]: unified and side-by-side diff rows with word-level highlights.
//! - [`notify`]: desktop notifications (OSC 9 / 777 / 99, the bell; through tmux and screen)
//!   and focus tracking.
//! - [`shell`]: shell command highlighting for `bash` tool rows.
//! - [`transcript`]: the block store with per-width render caches; painting walks only what
//!   is visible.
//! - [`layout`]: the description Lua hands over once per change.
//! - [`render`]: composes a layout and the transcript into a cell buffer.
//! - [`writer`]: diffs cell buffers and emits the bytes inside synchronized output.
//! - [`schedule`]: the frame scheduler (coalesced, ≤60 fps, no timer while idle) and spinner.
//! - [`screen`]: ties them together: one object the binding drives.

pub mod diff;
pub mod highlight;
pub mod inline;
pub mod input;
pub mod layout;
pub mod markdown;
pub mod notify;
pub mod palette;
pub mod render;
pub mod schedule;
pub mod screen;
pub mod setup;
pub mod shell;
pub mod style;
pub mod transcript;
pub mod width;
pub mod writer;

/// Errors of the terminal layer.
#[derive(Debug, thiserror::Error)]
pub enum TermError {
    #[error("terminal I/O failed: {0}")]
    Io(#[from] std::io::Error),
    #[error("no block with id {0}")]
    NoBlock(u64),
}

/// A terminal emulator of `rows` x `cols` for tests of the bytes written.
#[cfg(test)]
pub(crate) fn vt(rows: u16, cols: u16) -> vt100::Parser {
    vt100::Parser::new(nz(rows), nz(cols), 0)
}

#[cfg(test)]
pub(crate) fn nz(n: u16) -> std::num::NonZeroU16 {
    std::num::NonZeroU16::new(n.max(1)).unwrap_or(std::num::NonZeroU16::MIN)
}
