//! A process-wide table of things fen started and a model names by id: background jobs
//! (`bg1`, `bg2`, ...) and subagent runs (`sa1`, ...). Ids are never reused within a process,
//! entries stay (finished ones too) so a late `output` or `wait` still answers.

use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

/// The state of a child fen started: running, or how it ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChildStatus {
    Running,
    Exited(i32),
    Signaled(i32),
}

impl ChildStatus {
    /// How a wait for the child ended (an error waiting counts as exit -1).
    pub fn of(waited: std::io::Result<std::process::ExitStatus>) -> ChildStatus {
        match waited {
            Ok(st) => match (st.code(), st.signal()) {
                (Some(c), _) => ChildStatus::Exited(c),
                (None, Some(s)) => ChildStatus::Signaled(s),
                _ => ChildStatus::Exited(-1),
            },
            Err(_) => ChildStatus::Exited(-1),
        }
    }
}

impl std::fmt::Display for ChildStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ChildStatus::Running => write!(f, "running"),
            ChildStatus::Exited(n) => write!(f, "exited {n}"),
            ChildStatus::Signaled(n) => write!(f, "signal {n}"),
        }
    }
}

pub struct Registry<T> {
    prefix: &'static str,
    items: Mutex<BTreeMap<u32, T>>,
    next: AtomicU32,
}

impl<T: Clone> Registry<T> {
    /// An empty table whose ids are `prefix` and a number from 1.
    pub const fn new(prefix: &'static str) -> Self {
        Registry {
            prefix,
            items: Mutex::new(BTreeMap::new()),
            next: AtomicU32::new(1),
        }
    }

    /// Runs `f` on the table under its lock (a panic elsewhere never poisons it for good).
    pub fn with<R>(&self, f: impl FnOnce(&mut BTreeMap<u32, T>) -> R) -> R {
        f(&mut self.items.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// A fresh id: its number (the key to insert under) and its text.
    pub fn next_id(&self) -> (u32, String) {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        (n, format!("{}{n}", self.prefix))
    }

    /// The entry named `id` (`bg3`), if any.
    pub fn get(&self, id: &str) -> Option<T> {
        let n = id.strip_prefix(self.prefix)?.parse::<u32>().ok()?;
        self.with(|items| items.get(&n).cloned())
    }

    /// `f` of every entry, oldest first.
    pub fn map<R>(&self, f: impl FnMut(&T) -> R) -> Vec<R> {
        self.with(|items| items.values().map(f).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_carry_the_prefix_and_lookups_need_it() {
        let r: Registry<&str> = Registry::new("zz");
        let (n, id) = r.next_id();
        assert_eq!(id, format!("zz{n}"));
        r.with(|items| items.insert(n, "first"));
        assert_eq!(r.get(&id), Some("first"));
        assert_eq!(r.get(&n.to_string()), None);
        assert_eq!(r.get("zzx"), None);
        let (m, _) = r.next_id();
        assert!(m > n);
        assert_eq!(r.map(|s| s.len()), [5]);
    }
}
