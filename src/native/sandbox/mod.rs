//! OS sandbox for the shell commands fen runs (Linux): a policy (writable roots, network,
//! secrets), tier detection (bubblewrap, else Landlock + seccomp, else none), the per-command
//! launch preparation used by `native::process`, and the classifier that tells a sandbox
//! denial from an ordinary failure. Pure Rust, no Lua.
//!
//! Flow: build a [`SandboxPolicy`] from settings and the environment (the caller reads both),
//! pick a tier ([`detect`]), put a [`Sandbox`] in `ProcessSpec::sandbox`; `process::run` calls
//! [`prepare`] off the async thread and wraps or restricts the shell; after a failure,
//! [`classify`] says whether the sandbox caused it.

mod bwrap;
pub mod classify;
pub mod git;
pub mod launcher;
#[cfg(target_os = "linux")]
mod lsm;
pub mod plan;
pub mod policy;
pub mod stamp;
mod tier;

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use bwrap::{args as bwrap_args, BwrapArgs, Prepared as BwrapPrepared};
pub use classify::{classify, Blocked, Boundary};
pub use plan::{
    plan, plan_is_slow, Child, Inputs as PlanInputs, Plan, SandboxSettings, Unsandboxed,
    PARENT_SANDBOX_ENV,
};
pub use policy::{PolicyInputs, RootKind, SandboxPolicy, WritableRoot};
pub use tier::{
    available, detect, detect_without_trial, detected, find_on_path, landlock_abi, probe, Tier,
    TierInfo,
};

/// Why a sandboxed command cannot be launched.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SandboxError {
    /// The requested tier is not available (or none is and the sandbox is required).
    #[error("sandbox required but unavailable: {0}; install bubblewrap (apt-get install bubblewrap) or use a kernel with Landlock (5.13+), or set sandbox.required = false to run unsandboxed")]
    Unavailable(String),
    /// The Landlock ruleset could not be built.
    #[error("cannot build the Landlock sandbox: {0}")]
    Landlock(String),
    /// The seccomp filter could not be built.
    #[error("cannot build the seccomp network filter: {0}")]
    Seccomp(String),
}

/// The sandbox a command runs in.
#[derive(Debug, Clone)]
pub struct Sandbox {
    /// What the command may do.
    pub policy: Arc<SandboxPolicy>,
    /// The mechanism; `Tier::None` runs unsandboxed unless `required`.
    pub tier: Tier,
    /// Refuse to run when `tier` is `None` (never fail open).
    pub required: bool,
}

impl Sandbox {
    /// `policy` in the best tier of this machine ([`detect`]): the detected tier when detection
    /// has run, else [`Tier::Auto`], resolved by the first [`prepare`] (off the async thread).
    pub fn detected(policy: SandboxPolicy, required: bool) -> Self {
        Self {
            policy: Arc::new(policy),
            tier: tier::detected().map_or(Tier::Auto, |i| i.tier),
            required,
        }
    }
}

/// Reads the environment-dependent inputs (kept out of the pure [`SandboxPolicy::build`]):
/// `HOME`, `TMPDIR`, and fen's configuration directory (`$XDG_CONFIG_HOME/fen`, else
/// `~/.config/fen`, matching `extensions/lib/models.lua`). Settings fields stay empty.
pub fn inputs_from_env(workspace: PathBuf) -> PolicyInputs {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let home = var("HOME");
    let config_dir = var("XDG_CONFIG_HOME")
        .map(|c| c.join("fen"))
        .or_else(|| home.as_ref().map(|h| h.join(".config/fen")));
    PolicyInputs {
        workspace,
        home,
        tmpdir: var("TMPDIR"),
        config_dir,
        ..Default::default()
    }
}

/// How `process::run` must start the shell.
#[derive(Debug, Clone)]
pub enum Launch {
    /// Run the command in the persistent sandbox of these arguments (a launcher, see
    /// [`launcher`]), else as `bwrap <args> --chdir <cwd> -- <shell> -c <command>`.
    Bubblewrap {
        /// The `bwrap` executable.
        bwrap: PathBuf,
        /// The sandbox arguments (no `--chdir`, no `--`), cached per policy.
        prepared: Arc<bwrap::Prepared>,
    },
    /// Apply the prepared ruleset and filter in the child (`pre_exec`).
    #[cfg(target_os = "linux")]
    Landlock(Arc<lsm::Prepared>),
    /// No sandbox (tier `None`, not required).
    Unsandboxed,
}

/// Prepares one launch: the bwrap arguments (bubblewrap) or the ruleset and filter (Landlock),
/// each built once per policy and reused while the paths it looked at keep their stamps.
/// Blocking file system work (a few `lstat`s when cached); run it off the async thread.
pub fn prepare(sandbox: &Sandbox, cwd: Option<&Path>) -> Result<Launch, SandboxError> {
    // The bubblewrap trial, when nothing recorded its outcome yet, runs here: the first time a
    // command must run sandboxed.
    let tier = match sandbox.tier {
        Tier::Auto => detect().tier,
        t => t,
    };
    match tier {
        Tier::None | Tier::Auto if sandbox.required => {
            Err(SandboxError::Unavailable(unavailable_reason()))
        }
        Tier::None | Tier::Auto => Ok(Launch::Unsandboxed),
        Tier::Bubblewrap => {
            let Some(bwrap) = detect().bwrap.clone().or_else(|| find_on_path("bwrap")) else {
                return Err(SandboxError::Unavailable("bwrap not found on PATH".into()));
            };
            Ok(Launch::Bubblewrap {
                bwrap,
                prepared: bwrap::cached(&sandbox.policy, cwd),
            })
        }
        #[cfg(target_os = "linux")]
        Tier::Landlock => {
            if landlock_abi() < 1 {
                return Err(SandboxError::Unavailable(
                    "the kernel has no Landlock".into(),
                ));
            }
            Ok(Launch::Landlock(lsm::cached(&sandbox.policy)?))
        }
        #[cfg(not(target_os = "linux"))]
        Tier::Landlock => Err(SandboxError::Unavailable(
            "Landlock exists only on Linux".into(),
        )),
    }
}

fn unavailable_reason() -> String {
    let info = detect();
    if info.tier != Tier::None {
        return format!(
            "no sandbox tier was selected (this machine has {})",
            info.tier.name()
        );
    }
    let bwrap = info
        .bwrap_problem
        .clone()
        .unwrap_or_else(|| "bubblewrap unusable".into());
    format!("{bwrap}, and the kernel has no Landlock")
}

/// Starts the persistent sandbox of `sandbox` on a thread of its own when the machine's tier is
/// known without the bubblewrap trial (recorded for this machine, see [`tier::probe_file`]):
/// for sessions whose commands run sandboxed without asking (auto mode), so the first command
/// does not wait for bwrap. Without a recorded trial nothing starts here; the first command
/// runs the trial.
pub fn prestart(sandbox: &Sandbox, cwd: &Path) {
    let (sb, cwd) = (sandbox.clone(), cwd.to_path_buf());
    let _ = std::thread::Builder::new()
        .name("fen-sandbox-prestart".into())
        .spawn(move || {
            if launcher::program().is_none()
                || detect_without_trial().is_none_or(|i| i.tier == Tier::None)
            {
                return;
            }
            if let Ok(launch) = prepare(&sb, Some(&cwd)) {
                let _ = launch.warm(&sb.policy);
            }
        });
}

impl Launch {
    /// Starts the persistent sandbox of this launch if none runs yet ([`prestart`]). Blocking.
    pub fn warm(&self, policy: &SandboxPolicy) -> std::io::Result<()> {
        match self {
            Launch::Bubblewrap { bwrap, prepared } => {
                launcher::warm(policy, bwrap, &prepared.args, &prepared.binds)
            }
            #[cfg(target_os = "linux")]
            Launch::Landlock(prepared) => launcher::warm_landlock(policy, prepared),
            Launch::Unsandboxed => Ok(()),
        }
    }

    /// Starts `req` in the persistent sandbox of this launch (a launcher per configuration, see
    /// [`launcher`]); an error for `Unsandboxed` or when no launcher can serve it. Blocking.
    pub fn start_persistent(
        &self,
        policy: &SandboxPolicy,
        req: &launcher::Request,
        out: &std::os::fd::OwnedFd,
    ) -> std::io::Result<(std::os::fd::OwnedFd, i32, Arc<launcher::Launcher>)> {
        match self {
            Launch::Bubblewrap { bwrap, prepared } => {
                launcher::start(policy, bwrap, &prepared.args, &prepared.binds, req, out)
            }
            #[cfg(target_os = "linux")]
            Launch::Landlock(prepared) => launcher::start_landlock(policy, prepared, req, out),
            Launch::Unsandboxed => Err(std::io::Error::other("not sandboxed")),
        }
    }

    /// The full `bwrap` argument list for one command started on its own (no launcher):
    /// the sandbox arguments, `--chdir cwd`, `--`.
    pub fn bwrap_command_args(
        prepared: &bwrap::Prepared,
        cwd: Option<&Path>,
    ) -> Vec<std::ffi::OsString> {
        let mut a = prepared.args.clone();
        if let Some(c) = cwd {
            a.push("--chdir".into());
            a.push(c.as_os_str().to_os_string());
        }
        a.push("--".into());
        a
    }
}
