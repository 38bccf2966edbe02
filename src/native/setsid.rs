//! Starting a child in a session of its own: a leaf module, so both the process supervisor
//! and the sandbox launcher use it without importing each other.

/// Makes the child lead its own session and process group, with no controlling terminal: a
/// terminal's Ctrl-C reaches only fen (which decides what to cancel), nothing the child
/// writes to a tty reaches the user's screen, and fen can end the whole group as one.
pub fn own_session(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: setsid is async-signal-safe and touches no memory of the parent.
    unsafe {
        cmd.pre_exec(|| {
            nix::unistd::setsid()
                .map(|_| ())
                .map_err(std::io::Error::from)
        });
    }
}
