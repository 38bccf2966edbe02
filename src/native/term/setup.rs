//! Terminal modes and their restore. [`enter`] turns on raw mode, the alternate screen (not in
//! inline mode, [`set_inline`]), mouse reporting when asked ([`set_mouse`]),
//! bracketed paste, focus reporting (`?1004h`: notifications go out only when the terminal is
//! not focused), alternate scroll (`?1007h`: the wheel scrolls as arrow keys without
//! capturing the mouse, so native selection keeps working) and the kitty keyboard protocol's
//! "disambiguate" flag (terminals without it ignore the sequence; no query, so no startup
//! wait). [`restore`] undoes all of it and is safe to call any number of times from any exit
//! path: the [`Guard`]'s drop, the panic hook, a signal handler, or before suspending.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Once;

static ACTIVE: AtomicBool = AtomicBool::new(false);
static INLINE: AtomicBool = AtomicBool::new(false);
static MOUSE: AtomicBool = AtomicBool::new(false);
static HOOK: Once = Once::new();

pub const ENTER: &[u8] = b"\x1b[?1049h\x1b[?2004h\x1b[?1007h\x1b[?1004h\x1b[>1u\x1b[H\x1b[2J";
pub const LEAVE: &[u8] = b"\x1b[<1u\x1b[?1004l\x1b[?1007l\x1b[?2004l\x1b[0m\x1b[?25h\x1b[?1049l";
/// Inline mode: the main screen stays (its scrollback is the transcript's); no clear.
pub const ENTER_INLINE: &[u8] = b"\x1b[?2004h\x1b[?1004h\x1b[>1u";
pub const LEAVE_INLINE: &[u8] = b"\x1b[<1u\x1b[?1004l\x1b[?2004l\x1b[0m\x1b[?25h";
/// Mouse reporting (button presses, drags, the wheel) in SGR encoding.
pub const MOUSE_ON: &[u8] = b"\x1b[?1002h\x1b[?1006h";
pub const MOUSE_OFF: &[u8] = b"\x1b[?1006l\x1b[?1002l";

/// Chooses inline mode (no alternate screen) for the next [`enter`].
pub fn set_inline(on: bool) {
    INLINE.store(on, Ordering::SeqCst);
}

pub fn inline() -> bool {
    INLINE.load(Ordering::SeqCst)
}

/// Turns mouse reporting on or off now (and on every later [`enter`]); [`restore`] turns it
/// off.
pub fn set_mouse(on: bool) -> std::io::Result<()> {
    MOUSE.store(on, Ordering::SeqCst);
    if active() {
        let mut out = std::io::stdout().lock();
        out.write_all(if on { MOUSE_ON } else { MOUSE_OFF })?;
        out.flush()?;
    }
    Ok(())
}

pub fn mouse() -> bool {
    MOUSE.load(Ordering::SeqCst)
}

/// Whether the terminal is in fen's modes now.
pub fn active() -> bool {
    ACTIVE.load(Ordering::SeqCst)
}

/// Enters the full-screen modes (raw mode on the controlling terminal of stdin).
pub fn enter() -> std::io::Result<()> {
    crossterm::terminal::enable_raw_mode()?;
    let mut out = std::io::stdout().lock();
    out.write_all(if inline() { ENTER_INLINE } else { ENTER })?;
    if mouse() {
        out.write_all(MOUSE_ON)?;
    }
    out.flush()?;
    ACTIVE.store(true, Ordering::SeqCst);
    Ok(())
}

/// Leaves the modes; does nothing when they are not on.
pub fn restore() {
    if !ACTIVE.swap(false, Ordering::SeqCst) {
        return;
    }
    // Best effort: the terminal may be gone (SIGHUP).
    let mut out = std::io::stdout();
    if mouse() {
        let _ = out.write_all(MOUSE_OFF);
    }
    let _ = out.write_all(if inline() { LEAVE_INLINE } else { LEAVE });
    let _ = out.flush();
    let _ = crossterm::terminal::disable_raw_mode();
}

/// Restores the terminal before the default panic message prints, so it is readable.
pub fn install_panic_hook() {
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
    });
}

/// Suspends the process like Ctrl-Z in a cooked terminal: restores the modes, stops with
/// SIGTSTP, and re-enters the modes once continued (SIGCONT). The caller repaints in full.
pub fn suspend() -> std::io::Result<()> {
    restore();
    nix::sys::signal::raise(nix::sys::signal::Signal::SIGTSTP).map_err(std::io::Error::from)?;
    // Here after `fg`.
    enter()
}

/// The terminal size (columns, rows).
pub fn size() -> std::io::Result<(u16, u16)> {
    crossterm::terminal::size()
}

/// Restores the terminal when dropped (normal return and error paths).
#[derive(Debug)]
pub struct Guard(());

impl Guard {
    pub fn enter() -> std::io::Result<Guard> {
        install_panic_hook();
        enter()?;
        Ok(Guard(()))
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        restore();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leave_undoes_enter_on_an_emulator() {
        let mut p = crate::native::term::vt(5, 20);
        p.process(b"shell prompt$ ");
        p.process(ENTER);
        assert!(p.screen().alternate_screen());
        assert!(p.screen().bracketed_paste());
        p.process(b"full screen");
        p.process(LEAVE);
        assert!(!p.screen().alternate_screen());
        assert!(!p.screen().bracketed_paste());
        assert!(!p.screen().hide_cursor());
        assert_eq!(p.screen().contents().trim_end(), "shell prompt$");
    }

    #[test]
    fn the_panic_hook_restores_before_the_message() {
        install_panic_hook();
        // As if the modes were on (no terminal here: raw mode's restore fails quietly).
        ACTIVE.store(true, Ordering::SeqCst);
        let r = std::panic::catch_unwind(|| panic!("boom"));
        assert!(r.is_err());
        assert!(!active());
        // Restoring again (drop after a panic, a signal) does nothing.
        restore();
        assert!(!active());
    }
}
