//! The pty harness the TUI benchmarks share (benches/tui.rs, benches/highlight.rs): `fen` (or
//! any program) in a real pty, every chunk it writes logged with its arrival time and fed to a
//! vt100 screen, plus the small statistics both print.
#![allow(dead_code)] // each bench uses part of it

use portable_pty::{native_pty_system, Child, CommandBuilder, MasterPty, PtySize};
use std::io::{Read, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The end of a synchronized-output frame: the painter's last byte of a paint.
pub const SYNC_END: &[u8] = b"\x1b[?2026l";

/// Every chunk read from the pty, with the time it arrived.
pub type Log = Arc<Mutex<Vec<(Instant, Vec<u8>)>>>;

pub struct Pty {
    pub child: Box<dyn Child + Send + Sync>,
    _master: Box<dyn MasterPty + Send>,
    writer: Box<dyn Write + Send>,
    pub log: Log,
    /// The screen as a terminal shows it (the painter writes only changed cells, so text is
    /// not contiguous in the byte stream).
    pub screen: Arc<Mutex<vt100::Parser>>,
    pub started: Instant,
}

impl Pty {
    pub fn spawn(program: &str, args: &[&str], home: &Path) -> Pty {
        let pair = native_pty_system()
            .openpty(PtySize {
                rows: 30,
                cols: 100,
                pixel_width: 0,
                pixel_height: 0,
            })
            .expect("pty");
        let mut cmd = CommandBuilder::new(program);
        cmd.args(args);
        cmd.cwd(home.join("work"));
        cmd.env("TERM", "xterm-256color");
        cmd.env("HOME", home);
        cmd.env("XDG_CONFIG_HOME", home.join("config"));
        cmd.env("XDG_STATE_HOME", home.join("state"));
        let started = Instant::now();
        let child = pair.slave.spawn_command(cmd).expect("spawn");
        drop(pair.slave);
        let mut reader = pair.master.try_clone_reader().expect("reader");
        let writer = pair.master.take_writer().expect("writer");
        let log: Log = Arc::new(Mutex::new(Vec::new()));
        let screen = Arc::new(Mutex::new(vt100::Parser::new(
            std::num::NonZeroU16::new(30).unwrap(),
            std::num::NonZeroU16::new(100).unwrap(),
            0,
        )));
        let (l, sc) = (log.clone(), screen.clone());
        std::thread::spawn(move || {
            let mut buf = [0u8; 65536];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                l.lock().unwrap().push((Instant::now(), buf[..n].to_vec()));
                sc.lock().unwrap().process(&buf[..n]);
            }
        });
        Pty {
            child,
            _master: pair.master,
            writer,
            log,
            screen,
            started,
        }
    }

    pub fn frame_end_after(&self, from: Instant, timeout: Duration) -> Option<Instant> {
        let deadline = Instant::now() + timeout;
        loop {
            {
                let log = self.log.lock().unwrap();
                if let Some((t, _)) = log
                    .iter()
                    .filter(|(t, _)| *t >= from)
                    .find(|(_, b)| b.windows(SYNC_END.len()).any(|w| w == SYNC_END))
                {
                    return Some(*t);
                }
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    pub fn wait_text(&self, needle: &str) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if self
                .screen
                .lock()
                .unwrap()
                .screen()
                .contents()
                .contains(needle)
            {
                return;
            }
            assert!(Instant::now() < deadline, "no {needle:?} on the screen");
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Bytes written so far.
    pub fn bytes(&self) -> usize {
        self.log.lock().unwrap().iter().map(|(_, b)| b.len()).sum()
    }

    pub fn pid(&self) -> u32 {
        self.child.process_id().expect("pid")
    }

    pub fn send(&mut self, s: &[u8]) {
        self.writer.write_all(s).expect("write");
        self.writer.flush().ok();
    }

    /// Keystroke to the end of the frame that shows it, `n` keys (typing and erasing) `gap`
    /// apart; the p95. Keep `gap` above the 60 fps frame spacing (16.7 ms), or the figure is
    /// the frame limiter's spacing of a burst, not the latency of a key.
    pub fn keystroke_p95(&mut self, n: usize, gap: Duration) -> Duration {
        let mut samples = Vec::with_capacity(n);
        for i in 0..n {
            let key: &[u8] = if i % 2 == 0 { b"x" } else { b"\x7f" };
            let t0 = Instant::now();
            self.send(key);
            let end = self
                .frame_end_after(t0, Duration::from_secs(5))
                .expect("a frame after the key");
            samples.push(end - t0);
            std::thread::sleep(gap);
        }
        p95(samples)
    }
}

impl Drop for Pty {
    fn drop(&mut self) {
        let _ = self.child.kill();
    }
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

pub fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

pub fn p95(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[(v.len() * 95 / 100).min(v.len() - 1)]
}

/// A temporary HOME with `work/` (the cwd) and `config/fen/`.
pub fn home() -> tempfile::TempDir {
    let d = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir_all(d.path().join("work")).unwrap();
    std::fs::create_dir_all(d.path().join("config/fen")).unwrap();
    d
}
