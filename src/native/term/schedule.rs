//! The frame scheduler: a state machine the binding's paint task asks "paint now, or when?".
//! Requests coalesce into one frame; frames are at least 1/60 s apart; while nothing asks and
//! no spinner runs there is no deadline at all (the task sleeps on its wake-up alone). The
//! spinner wants a tick at most every 100 ms and only while busy.

use std::time::{Duration, Instant};

pub const FRAME: Duration = Duration::from_micros(16_667);
pub const SPIN: Duration = Duration::from_millis(100);

#[derive(Debug, Default)]
pub struct Scheduler {
    pending: bool,
    last_frame: Option<Instant>,
    spinning_since: Option<Instant>,
    last_tick: Option<Instant>,
}

/// What the paint task should do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Paint a full frame now.
    Frame,
    /// Repaint only the spinner's cells now.
    Tick,
    /// Sleep until this instant (or until a request).
    At(Instant),
    /// Sleep until a request: no timer.
    Idle,
}

impl Scheduler {
    /// Something changed: a frame is due.
    pub fn request(&mut self) {
        self.pending = true;
    }

    pub fn pending(&self) -> bool {
        self.pending
    }

    /// Starts or stops the spinner clock.
    pub fn set_spinning(&mut self, on: bool, now: Instant) {
        match (on, self.spinning_since) {
            (true, None) => {
                self.spinning_since = Some(now);
                self.last_tick = Some(now);
            }
            (false, Some(_)) => {
                self.spinning_since = None;
                self.last_tick = None;
            }
            _ => {}
        }
    }

    pub fn spinning_since(&self) -> Option<Instant> {
        self.spinning_since
    }

    pub fn next(&self, now: Instant) -> Next {
        let mut deadline: Option<Instant> = None;
        if self.pending {
            match self.last_frame {
                Some(t) if now < t + FRAME => deadline = Some(t + FRAME),
                _ => return Next::Frame,
            }
        }
        if let Some(t) = self.last_tick {
            let due = t + SPIN;
            if now >= due && deadline.is_none() {
                return Next::Tick;
            }
            deadline = Some(deadline.map_or(due, |d| d.min(due)));
        }
        match deadline {
            Some(d) if d <= now => Next::Frame,
            Some(d) => Next::At(d),
            None => Next::Idle,
        }
    }

    /// A full frame was painted (it also drew the spinner).
    pub fn painted(&mut self, now: Instant) {
        self.pending = false;
        self.last_frame = Some(now);
        if self.last_tick.is_some() {
            self.last_tick = Some(now);
        }
    }

    /// The spinner was repainted.
    pub fn ticked(&mut self, now: Instant) {
        if self.last_tick.is_some() {
            self.last_tick = Some(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_has_no_timer_and_requests_coalesce() {
        let t0 = Instant::now();
        let mut s = Scheduler::default();
        assert_eq!(s.next(t0), Next::Idle);
        s.request();
        s.request();
        assert_eq!(s.next(t0), Next::Frame);
        s.painted(t0);
        assert_eq!(s.next(t0), Next::Idle);
        // A burst right after a frame waits for the 60 fps slot, once.
        let t1 = t0 + Duration::from_millis(3);
        s.request();
        s.request();
        assert_eq!(s.next(t1), Next::At(t0 + FRAME));
        assert_eq!(s.next(t0 + FRAME), Next::Frame);
        s.painted(t0 + FRAME);
        assert_eq!(s.next(t0 + FRAME), Next::Idle);
    }

    #[test]
    fn spinner_ticks_at_10_hz_only_while_busy() {
        let t0 = Instant::now();
        let mut s = Scheduler::default();
        s.set_spinning(true, t0);
        assert_eq!(s.next(t0), Next::At(t0 + SPIN));
        assert_eq!(s.next(t0 + SPIN), Next::Tick);
        s.ticked(t0 + SPIN);
        assert_eq!(s.next(t0 + SPIN), Next::At(t0 + SPIN * 2));
        // A frame in between also draws the spinner and resets its clock.
        let t = t0 + SPIN + Duration::from_millis(50);
        s.request();
        assert_eq!(s.next(t), Next::Frame);
        s.painted(t);
        assert_eq!(s.next(t), Next::At(t + SPIN));
        s.set_spinning(false, t);
        assert_eq!(s.next(t + SPIN), Next::Idle);
    }
}
