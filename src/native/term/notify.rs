//! Desktop notifications through the terminal, and whether the terminal has focus.
//!
//! - [`Method`]: OSC 9 (iTerm2, WezTerm, Windows Terminal, Ghostty), OSC 777 (rxvt, foot,
//!   Ghostty), OSC 99 (kitty), else the bell; [`auto`] picks one from the environment.
//! - [`sequence`] makes the bytes, [`wrap`] passes them through tmux (DCS passthrough, which
//!   needs tmux's `allow-passthrough on`) or GNU screen (DCS).
//! - [`Focus`]: focus reporting (`CSI ?1004h`: the terminal sends `CSI I` / `CSI O`); a
//!   terminal that never reported counts as unfocused once the person has been idle for
//!   [`IDLE_UNFOCUSED`].

use std::time::{Duration, Instant};

/// How a notification is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Osc9,
    Osc777,
    Osc99,
    Bell,
    Off,
}

impl Method {
    /// A settings value (`osc9`, `osc777`, `osc99`, `bell`, `off`); `auto` is not one.
    pub fn parse(s: &str) -> Option<Method> {
        Some(match s {
            "osc9" => Method::Osc9,
            "osc777" => Method::Osc777,
            "osc99" => Method::Osc99,
            "bell" => Method::Bell,
            "off" => Method::Off,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Method::Osc9 => "osc9",
            Method::Osc777 => "osc777",
            Method::Osc99 => "osc99",
            Method::Bell => "bell",
            Method::Off => "off",
        }
    }
}

/// What identifies the terminal: the variables [`auto`] reads.
#[derive(Debug, Clone, Default)]
pub struct TermEnv {
    pub term_program: Option<String>,
    /// Set by iTerm2 (`iTerm2`) and kept across ssh and tmux, unlike `TERM_PROGRAM`.
    pub lc_terminal: Option<String>,
    pub term: Option<String>,
    /// `KITTY_WINDOW_ID`, `WT_SESSION`, `GHOSTTY_RESOURCES_DIR`, `WEZTERM_PANE` are set.
    pub kitty: bool,
    pub windows_terminal: bool,
    pub ghostty: bool,
    pub wezterm: bool,
    /// Inside tmux (`TMUX`) or GNU screen (`STY`).
    pub tmux: bool,
    pub screen: bool,
}

impl TermEnv {
    pub fn from_env() -> TermEnv {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        TermEnv {
            term_program: var("TERM_PROGRAM"),
            lc_terminal: var("LC_TERMINAL"),
            term: var("TERM"),
            kitty: var("KITTY_WINDOW_ID").is_some(),
            windows_terminal: var("WT_SESSION").is_some(),
            ghostty: var("GHOSTTY_RESOURCES_DIR").is_some(),
            wezterm: var("WEZTERM_PANE").is_some(),
            tmux: var("TMUX").is_some(),
            screen: var("STY").is_some(),
        }
    }
}

/// The method `auto` means in this terminal.
pub fn auto(env: &TermEnv) -> Method {
    let program = env
        .term_program
        .as_deref()
        .unwrap_or("")
        .to_ascii_lowercase();
    let lc = env
        .lc_terminal
        .as_deref()
        .unwrap_or("")
        .to_ascii_lowercase();
    let term = env.term.as_deref().unwrap_or("").to_ascii_lowercase();
    if program == "iterm.app" || lc == "iterm2" || program == "wezterm" || env.wezterm {
        return Method::Osc9;
    }
    if program == "ghostty" || term == "xterm-ghostty" || env.ghostty {
        return Method::Osc9;
    }
    if env.windows_terminal {
        return Method::Osc9;
    }
    if term == "xterm-kitty" || program == "kitty" || env.kitty {
        return Method::Osc99;
    }
    if term.starts_with("rxvt") || term == "foot" || term.starts_with("foot-") {
        return Method::Osc777;
    }
    Method::Bell
}

/// Printable text only: control characters would end or corrupt the sequence; `;` ends an
/// OSC 777 field. At most `max` characters.
fn clean(s: &str, max: usize, no_semicolon: bool) -> String {
    s.chars()
        .map(|c| if c == '\n' || c == '\t' { ' ' } else { c })
        .filter(|c| !(c.is_control() || (no_semicolon && *c == ';')))
        .take(max)
        .collect()
}

/// The bytes of one notification (unwrapped). Sequences end with BEL, which every one of
/// these terminals takes, and which passes GNU screen's DCS where `ESC \` would end it.
pub fn sequence(method: Method, title: &str, body: &str) -> Vec<u8> {
    let title = clean(title, 100, false);
    let body = clean(body, 300, false);
    match method {
        Method::Osc9 => {
            // OSC 9 has one field; iTerm2 shows it as the body under the app's name.
            let text = if body.is_empty() {
                title
            } else {
                format!("{title}: {body}")
            };
            format!("\x1b]9;{text}\x07").into_bytes()
        }
        Method::Osc777 => format!(
            "\x1b]777;notify;{};{}\x07",
            clean(&title, 100, true),
            clean(&body, 300, true)
        )
        .into_bytes(),
        Method::Osc99 => {
            // kitty: the title, then the body of the same notification (i=), shown when done (d=1).
            format!("\x1b]99;i=fen:d=0:p=title;{title}\x07\x1b]99;i=fen:d=1:p=body;{body}\x07")
                .into_bytes()
        }
        Method::Bell => b"\x07".to_vec(),
        Method::Off => Vec::new(),
    }
}

/// The sequence wrapped so it reaches the outer terminal: tmux's DCS passthrough (every ESC
/// doubled) or screen's DCS. The bell needs no wrapping (both pass it on).
pub fn wrap(seq: &[u8], env: &TermEnv) -> Vec<u8> {
    if seq.is_empty() || seq == b"\x07" {
        return seq.to_vec();
    }
    let term = env.term.as_deref().unwrap_or("");
    if env.tmux || term.starts_with("tmux") {
        let mut out = b"\x1bPtmux;".to_vec();
        for &b in seq {
            if b == 0x1b {
                out.push(0x1b);
            }
            out.push(b);
        }
        out.extend_from_slice(b"\x1b\\");
        return out;
    }
    if env.screen || term.starts_with("screen") {
        let mut out = b"\x1bP".to_vec();
        out.extend_from_slice(seq);
        out.extend_from_slice(b"\x1b\\");
        return out;
    }
    seq.to_vec()
}

/// A terminal that never reported its focus counts as unfocused after this long without input.
pub const IDLE_UNFOCUSED: Duration = Duration::from_secs(5);

/// Whether the person is looking: the terminal's last focus report, else recent input.
#[derive(Debug, Clone)]
pub struct Focus {
    reported: Option<bool>,
    last_input: Instant,
}

impl Focus {
    pub fn new(now: Instant) -> Focus {
        Focus {
            reported: None,
            last_input: now,
        }
    }

    /// The terminal reported focus in (`CSI I`) or out (`CSI O`).
    pub fn report(&mut self, focused: bool) {
        self.reported = Some(focused);
    }

    /// A key, paste or click arrived (it also proves focus when the terminal does not report).
    pub fn input(&mut self, now: Instant) {
        self.last_input = now;
    }

    pub fn focused(&self, now: Instant) -> bool {
        match self.reported {
            Some(f) => f,
            None => now.saturating_duration_since(self.last_input) < IDLE_UNFOCUSED,
        }
    }
}

/// How long a notification command may run before it is killed.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(10);

/// Runs the user's notification command (`argv`, or `sh -c` of one string) with `input` (the
/// event as JSON) on stdin, without `env_remove` in its environment; it is killed (with its
/// process group) after [`COMMAND_TIMEOUT`] or when the future is dropped. Its output is
/// discarded. Ok(None) when it ran and exited 0, Ok(Some(message)) when it failed.
pub async fn run_command(
    argv: Vec<String>,
    input: String,
    env_remove: &[String],
) -> std::io::Result<Option<String>> {
    use tokio::io::AsyncWriteExt;
    let Some((program, args)) = argv.split_first() else {
        return Ok(Some("notifications.command is empty".into()));
    };
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .kill_on_drop(true);
    for k in env_remove {
        cmd.env_remove(k);
    }
    let mut child = cmd.spawn()?;
    let pid = child.id();
    let work = async {
        if let Some(mut stdin) = child.stdin.take() {
            // A command that does not read its stdin is fine.
            let _ = stdin.write_all(input.as_bytes()).await;
        }
        child.wait().await
    };
    let status = match tokio::time::timeout(COMMAND_TIMEOUT, work).await {
        Ok(status) => status?,
        Err(_) => {
            if let Some(pid) = pid {
                let _ = nix::sys::signal::killpg(
                    nix::unistd::Pid::from_raw(pid as i32),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            return Ok(Some(format!(
                "notifications.command {program} took longer than {}s and was stopped",
                COMMAND_TIMEOUT.as_secs()
            )));
        }
    };
    Ok((!status.success()).then(|| format!("notifications.command {program} failed ({status})")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(program: &str, term: &str) -> TermEnv {
        TermEnv {
            term_program: (!program.is_empty()).then(|| program.into()),
            term: (!term.is_empty()).then(|| term.into()),
            ..TermEnv::default()
        }
    }

    #[test]
    fn auto_picks_by_terminal() {
        assert_eq!(auto(&env("iTerm.app", "xterm-256color")), Method::Osc9);
        assert_eq!(auto(&env("WezTerm", "xterm-256color")), Method::Osc9);
        assert_eq!(auto(&env("ghostty", "xterm-ghostty")), Method::Osc9);
        assert_eq!(auto(&env("", "xterm-ghostty")), Method::Osc9);
        assert_eq!(auto(&env("", "xterm-kitty")), Method::Osc99);
        assert_eq!(auto(&env("", "foot")), Method::Osc777);
        assert_eq!(auto(&env("", "rxvt-unicode-256color")), Method::Osc777);
        assert_eq!(auto(&env("", "xterm-256color")), Method::Bell);
        assert_eq!(auto(&env("Apple_Terminal", "xterm-256color")), Method::Bell);
        let wt = TermEnv {
            windows_terminal: true,
            ..env("", "xterm-256color")
        };
        assert_eq!(auto(&wt), Method::Osc9);
        // In tmux TERM_PROGRAM says tmux; iTerm2's LC_TERMINAL and kitty's window id survive.
        let t = TermEnv {
            lc_terminal: Some("iTerm2".into()),
            tmux: true,
            ..env("tmux", "tmux-256color")
        };
        assert_eq!(auto(&t), Method::Osc9);
        let k = TermEnv {
            kitty: true,
            tmux: true,
            ..env("tmux", "tmux-256color")
        };
        assert_eq!(auto(&k), Method::Osc99);
    }

    #[test]
    fn sequences_and_control_characters() {
        assert_eq!(
            sequence(Method::Osc9, "fen", "turn done"),
            b"\x1b]9;fen: turn done\x07"
        );
        assert_eq!(
            sequence(Method::Osc777, "fe;n", "a;b\x1b]x\x07"),
            b"\x1b]777;notify;fen;ab]x\x07"
        );
        let k = String::from_utf8(sequence(Method::Osc99, "fen", "waits")).unwrap_or_default();
        assert!(k.starts_with("\x1b]99;i=fen:d=0:p=title;fen\x07"), "{k:?}");
        assert!(k.ends_with("\x1b]99;i=fen:d=1:p=body;waits\x07"), "{k:?}");
        assert_eq!(sequence(Method::Bell, "x", "y"), b"\x07");
        assert!(sequence(Method::Off, "x", "y").is_empty());
    }

    #[test]
    fn tmux_and_screen_wrap_but_not_the_bell() {
        let tmux = TermEnv {
            tmux: true,
            ..env("tmux", "tmux-256color")
        };
        let seq = sequence(Method::Osc9, "fen", "done");
        assert_eq!(
            wrap(&seq, &tmux),
            b"\x1bPtmux;\x1b\x1b]9;fen: done\x07\x1b\\"
        );
        let screen = TermEnv {
            screen: true,
            ..env("", "screen-256color")
        };
        assert_eq!(wrap(&seq, &screen), b"\x1bP\x1b]9;fen: done\x07\x1b\\");
        assert_eq!(wrap(b"\x07", &tmux), b"\x07");
        assert_eq!(wrap(&seq, &env("", "xterm")), seq);
    }

    #[tokio::test]
    async fn the_command_gets_the_event_on_stdin_without_hidden_variables() {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = dir.path().join("got");
        let script = format!(
            "cat > '{}'; printf '%s' \"${{FEN_TEST_SECRET:-none}}\" >> '{}'",
            out.display(),
            out.display()
        );
        std::env::set_var("FEN_TEST_SECRET", "s3cret");
        let r = run_command(
            vec!["sh".into(), "-c".into(), script],
            "{\"type\":\"turn_end\"}".into(),
            &["FEN_TEST_SECRET".into()],
        )
        .await
        .expect("runs");
        assert_eq!(r, None);
        let got = std::fs::read_to_string(&out).expect("written");
        assert_eq!(got, "{\"type\":\"turn_end\"}none");
        let r = run_command(vec!["false".into()], String::new(), &[])
            .await
            .expect("runs");
        assert!(r.is_some_and(|m| m.contains("failed")));
        assert!(
            run_command(vec!["/no/such/notifier".into()], String::new(), &[])
                .await
                .is_err()
        );
    }

    #[test]
    fn unknown_focus_is_unfocused_after_idle() {
        let t0 = Instant::now();
        let mut f = Focus::new(t0);
        assert!(f.focused(t0 + Duration::from_secs(4)));
        assert!(!f.focused(t0 + Duration::from_secs(6)));
        f.input(t0 + Duration::from_secs(6));
        assert!(f.focused(t0 + Duration::from_secs(7)));
        // A report wins over idleness, both ways.
        f.report(true);
        assert!(f.focused(t0 + Duration::from_secs(60)));
        f.report(false);
        assert!(!f.focused(t0 + Duration::from_secs(7)));
    }
}
