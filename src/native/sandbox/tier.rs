//! Which sandbox this machine can give: bubblewrap when `bwrap` is on PATH and a trial run
//! works (user namespaces allowed), else Landlock when the kernel has it, else none. Detected
//! once per process; the trial costs a few milliseconds, so callers on the Lua thread should
//! run the first `detect()` off it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// A sandbox mechanism.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    /// bubblewrap: mount and pid namespaces, optional network namespace.
    Bubblewrap,
    /// Landlock ruleset + seccomp network filter + `PR_SET_NO_NEW_PRIVS`, in fen's spawn path.
    Landlock,
    /// No sandbox available.
    None,
    /// The best tier of this machine ([`detect`]), decided when the first command is prepared
    /// (off the async thread), so a session that runs nothing sandboxed never tries bubblewrap.
    Auto,
}

impl Tier {
    /// Short name for settings and status: `bubblewrap`, `landlock`, `none`.
    pub fn name(self) -> &'static str {
        match self {
            Tier::Bubblewrap => "bubblewrap",
            Tier::Landlock => "landlock",
            Tier::None => "none",
            Tier::Auto => "auto",
        }
    }
}

/// What detection found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TierInfo {
    /// The best tier available.
    pub tier: Tier,
    /// `bwrap` found on PATH, if any.
    pub bwrap: Option<PathBuf>,
    /// Why bubblewrap is not used, when it is not.
    pub bwrap_problem: Option<String>,
    /// Landlock ABI version of the kernel; 0 when unsupported.
    pub landlock_abi: i32,
}

impl TierInfo {
    /// One paragraph for `/permissions`: the tier, what it enforces, and what it does not.
    pub fn description(&self) -> String {
        match self.tier {
            Tier::Bubblewrap => format!(
                "sandbox: bubblewrap ({}). Writes only in the writable roots; .git/config, \
                 .git/hooks and .git pointer files of every repository under the workspace, of \
                 the workspace's own and its worktree's main repository are read-only; ~/.ssh, ~/.aws, ~/.gnupg and fen's credential files are hidden; \
                 network off unless sandbox.network = true; processes end with the command.",
                self.bwrap
                    .as_deref()
                    .map_or_else(|| "bwrap".into(), |p| p.display().to_string())
            ),
            Tier::Landlock => format!(
                "sandbox: Landlock ABI {}{} + seccomp network filter. Writes only in the \
                 writable roots; ~/.ssh, ~/.aws, ~/.gnupg and fen's credential files are \
                 unreadable; network off unless sandbox.network = true; processes end with the \
                 command. Landlock cannot make \
                 part of a writable root read-only: .git/config, .git/hooks and secrets inside \
                 the workspace rest on the permission analyser.",
                self.landlock_abi,
                self.bwrap_problem
                    .as_deref()
                    .map_or_else(String::new, |p| format!(" (bubblewrap unusable: {p})")),
            ),
            Tier::Auto => "sandbox: the best of this machine, chosen at the first command that \
                 runs in it."
                .into(),
            Tier::None => format!(
                "sandbox: none ({}; kernel has no Landlock). Shell commands run with your full \
                 permissions; sandbox.required = true makes them refuse to run. Install \
                 bubblewrap (apt-get install bubblewrap) to get one.",
                self.bwrap_problem.as_deref().unwrap_or("bwrap not found")
            ),
        }
    }

    /// A few words for the status row: `sandbox: bwrap`, `sandbox: landlock`, `no sandbox!`.
    pub fn status(&self) -> &'static str {
        match self.tier {
            Tier::Bubblewrap => "sandbox: bwrap",
            Tier::Landlock => "sandbox: landlock",
            Tier::None => "no sandbox!",
            Tier::Auto => "sandbox: auto",
        }
    }
}

/// The tier info of this machine, detected on first use; the bubblewrap trial's outcome is
/// reused from [`probe_file`] while the machine's key still matches.
pub fn detect() -> &'static TierInfo {
    INFO.get_or_init(|| probe_with(probe_file().as_deref()))
}

static INFO: OnceLock<TierInfo> = OnceLock::new();

/// The tier info when [`detect`] has run already, without running it.
pub fn detected() -> Option<&'static TierInfo> {
    INFO.get()
}

/// The tier info when it is known without the bubblewrap trial: detection done already, no
/// `bwrap` on PATH, or the trial's outcome recorded for this machine's key ([`probe_file`]).
/// `None` when only the trial can tell. Reads a few small files: not on the async thread.
pub fn detect_without_trial() -> Option<&'static TierInfo> {
    if let Some(info) = INFO.get() {
        return Some(info);
    }
    let known = match find_on_path("bwrap") {
        None => true,
        Some(b) => match (probe_file(), machine_key(&b)) {
            (Some(file), Some(key)) => read_probe(&file, &key).is_some(),
            _ => false,
        },
    };
    known.then(detect)
}

/// Whether this machine has a sandbox tier, running the bubblewrap trial only when the answer
/// depends on it: with Landlock in the kernel there is a sandbox whatever the trial says, so
/// the trial waits for the first command that runs in it. Not on the async thread.
pub fn available() -> bool {
    match detect_without_trial() {
        Some(info) => info.tier != Tier::None,
        None => landlock_abi() >= 1 || detect().tier != Tier::None,
    }
}

/// Detection without any cache (tests, `/permissions` after installing bubblewrap).
pub fn probe() -> TierInfo {
    probe_with(None)
}

/// Where the outcome of the bubblewrap trial is kept per machine:
/// `$XDG_STATE_HOME/fen/sandbox-probe` (default `~/.local/state/fen`). Not under `~/.cache`,
/// which can be a writable root of the sandbox: a command must not be able to record a
/// failure and so downgrade the next session to a weaker tier.
pub fn probe_file() -> Option<PathBuf> {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let state = var("XDG_STATE_HOME").or_else(|| var("HOME").map(|h| h.join(".local/state")))?;
    Some(state.join("fen/sandbox-probe"))
}

/// A failed trial is retried after this long even when the key matches (a transient failure
/// must not cost the strong tier for good).
const FAILURE_TTL: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// Detection reusing the trial's outcome recorded in `cache` for this machine's key: the
/// bwrap binary's identity, the kernel's release and version, the user, and the settings
/// that allow user namespaces. Any change runs the trial again.
pub fn probe_with(cache: Option<&Path>) -> TierInfo {
    let bwrap = find_on_path("bwrap");
    let bwrap_problem = match &bwrap {
        None => Some("bwrap not found on PATH".to_string()),
        Some(b) => match (cache, machine_key(b)) {
            (Some(file), Some(key)) => match read_probe(file, &key) {
                Some(outcome) => outcome,
                None => {
                    let outcome = trial_bwrap(b).err();
                    write_probe(file, &key, &outcome);
                    outcome
                }
            },
            _ => trial_bwrap(b).err(),
        },
    };
    let landlock_abi = landlock_abi();
    let tier = if bwrap.is_some() && bwrap_problem.is_none() {
        Tier::Bubblewrap
    } else if landlock_abi >= 1 {
        Tier::Landlock
    } else {
        Tier::None
    };
    TierInfo {
        tier,
        bwrap,
        bwrap_problem,
        landlock_abi,
    }
}

/// Runs `bwrap` with the namespaces fen uses; an error says why it failed.
fn trial_bwrap(bwrap: &Path) -> Result<(), String> {
    let out = Command::new(bwrap)
        .args([
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            "--unshare-pid",
            "--unshare-net",
            "--die-with-parent",
            "--",
            "true",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", bwrap.display()))?;
    if out.status.success() {
        return Ok(());
    }
    let err = String::from_utf8_lossy(&out.stderr);
    let first = err.lines().next().unwrap_or("").trim();
    Err(format!(
        "trial `bwrap --ro-bind / / true` failed ({}){}",
        out.status,
        if first.is_empty() {
            String::new()
        } else {
            format!(": {first}")
        }
    ))
}

/// What the bubblewrap trial's outcome depends on, as one string.
fn machine_key(bwrap: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(bwrap).ok()?;
    // SAFETY: uname fills the struct it is given; an all-zero utsname is a valid value.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a valid, writable utsname.
    if unsafe { libc::uname(&mut u) } != 0 {
        return None;
    }
    let field = |f: &[libc::c_char]| {
        let bytes: Vec<u8> = f
            .iter()
            .take_while(|c| **c != 0)
            .map(|c| *c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    let sysctl = |p: &str| {
        std::fs::read_to_string(p)
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "-".into())
    };
    Some(format!(
        "fen-sandbox-probe 1\nbwrap {} {}:{}:{}:{}\nkernel {} {}\nuid {}\nuserns {} {} {}\n",
        bwrap.display(),
        m.dev(),
        m.ino(),
        m.size(),
        m.mtime(),
        field(&u.release),
        field(&u.version),
        // SAFETY: getuid cannot fail.
        unsafe { libc::getuid() },
        sysctl("/proc/sys/user/max_user_namespaces"),
        sysctl("/proc/sys/kernel/unprivileged_userns_clone"),
        sysctl("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"),
    ))
}

/// The recorded outcome for `key`: `Some(None)` the trial passed, `Some(Some(why))` it failed
/// (less than [`FAILURE_TTL`] ago); `None` when nothing matching is recorded.
fn read_probe(file: &Path, key: &str) -> Option<Option<String>> {
    let text = std::fs::read_to_string(file).ok()?;
    let rest = text.strip_prefix(key)?;
    if rest.trim_end() == "ok" {
        return Some(None);
    }
    let why = rest.strip_prefix("failed: ")?.trim_end().to_string();
    let age = std::fs::metadata(file)
        .ok()?
        .modified()
        .ok()?
        .elapsed()
        .ok()?;
    (age < FAILURE_TTL).then_some(Some(why))
}

/// Records `outcome` for `key` (best effort; written to a temporary file, then renamed).
fn write_probe(file: &Path, key: &str, outcome: &Option<String>) {
    let Some(dir) = file.parent() else { return };
    if std::fs::create_dir_all(dir).is_err() {
        return;
    }
    let body = match outcome {
        None => format!("{key}ok\n"),
        Some(why) => format!("{key}failed: {}\n", why.replace('\n', " ")),
    };
    let tmp = dir.join(format!(".sandbox-probe.{}", std::process::id()));
    if std::fs::write(&tmp, body).is_ok() && std::fs::rename(&tmp, file).is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
}

/// The kernel's Landlock ABI version, 0 when it has none.
pub fn landlock_abi() -> i32 {
    #[cfg(target_os = "linux")]
    {
        // landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION) returns the ABI.
        // SAFETY: the version query reads no memory.
        let v = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                std::ptr::null::<u8>(),
                0usize,
                1u32,
            )
        };
        if v > 0 {
            return v as i32;
        }
    }
    0
}

/// First executable `name` on PATH.
pub fn find_on_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|c| {
            std::fs::metadata(c).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptions_name_the_limits() {
        let mut i = TierInfo {
            tier: Tier::Landlock,
            bwrap: None,
            bwrap_problem: Some("bwrap not found on PATH".into()),
            landlock_abi: 6,
        };
        let d = i.description();
        assert!(d.contains("Landlock ABI 6"), "{d}");
        assert!(d.contains("rest on the permission analyser"), "{d}");
        i.tier = Tier::None;
        assert!(i.description().contains("sandbox.required = true"));
        assert_eq!(i.status(), "no sandbox!");
    }

    #[test]
    fn the_trial_outcome_is_recorded_per_machine_key() {
        let Some(bwrap) = find_on_path("bwrap") else {
            eprintln!("NOTICE: bwrap not found; probe record not tested");
            return;
        };
        let t = tempfile::tempdir().unwrap();
        let file = t.path().join("fen/sandbox-probe");
        let first = probe_with(Some(&file));
        let key = machine_key(&bwrap).unwrap();
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.starts_with(&key), "{text}");
        assert_eq!(
            first.bwrap_problem.is_none(),
            text.ends_with("ok\n"),
            "{text}"
        );
        // A recorded outcome is used as it is (no trial): record a failure for this key.
        std::fs::write(&file, format!("{key}failed: recorded\n")).unwrap();
        let second = probe_with(Some(&file));
        assert_eq!(second.bwrap_problem.as_deref(), Some("recorded"));
        assert_ne!(second.tier, Tier::Bubblewrap);
        // Another key (another kernel, bwrap, user): the trial runs again and is recorded.
        std::fs::write(
            &file,
            "fen-sandbox-probe 1\nbwrap /other 1:2:3:4\nfailed: old\n",
        )
        .unwrap();
        let third = probe_with(Some(&file));
        assert_eq!(third.bwrap_problem, first.bwrap_problem);
        assert!(std::fs::read_to_string(&file).unwrap().starts_with(&key));
    }

    #[test]
    fn detection_is_cached() {
        assert!(std::ptr::eq(detect(), detect()));
    }
}
