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
}

impl Tier {
    /// Short name for settings and status: `bubblewrap`, `landlock`, `none`.
    pub fn name(self) -> &'static str {
        match self {
            Tier::Bubblewrap => "bubblewrap",
            Tier::Landlock => "landlock",
            Tier::None => "none",
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
        }
    }
}

/// The tier info of this machine, detected on first use.
pub fn detect() -> &'static TierInfo {
    static INFO: OnceLock<TierInfo> = OnceLock::new();
    INFO.get_or_init(probe)
}

/// Detection without the cache (tests, `/permissions` after installing bubblewrap).
pub fn probe() -> TierInfo {
    let bwrap = find_on_path("bwrap");
    let bwrap_problem = match &bwrap {
        None => Some("bwrap not found on PATH".to_string()),
        Some(b) => trial_bwrap(b).err(),
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
    fn detection_is_cached() {
        assert!(std::ptr::eq(detect(), detect()));
    }
}
