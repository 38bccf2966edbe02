//! The run context: what one run of fen shares, owned in one place. Created at boot
//! ([`install`]) and kept as the Lua state's one app-data entry of the host; every binding reads
//! it through [`run`]. It holds fen's directories (resolved once), the working directory and
//! the project root (searched for once), the settings (loaded once, again on `/reload`), the
//! environment variables children must not see, the OS sandbox of tool shell commands with
//! the rules that send commands outside it and the settings it was made from (with those a
//! parent `fen` handed down), the read ledger and the MCP servers an ACP client added.
//! [`RunContext::plan`] asks [`sandbox::plan`] where a child runs and with what environment.
//!
//! It also owns fen's one buffered stdin reader, shared by `term.read_line` and `line.read`.
//! The HTTP client (`http.rs`) and the state private to one binding (the line editor, the
//! TUI's screen and its waiters in `term.rs`) stay with their bindings, made on first use.

use crate::kernel::settings::{Paths, Settings};
use crate::native::ledger::ReadLedger;
use crate::native::mcp::config::ServerConfig;
use crate::native::policy::Workspace;
use crate::native::sandbox::{
    self, Child, Plan, PlanInputs, Sandbox, SandboxSettings, Unsandboxed,
};
use mlua::Lua;
use std::cell::RefCell;
use std::path::PathBuf;
use std::rc::Rc;

/// What one run shares (see the module documentation).
#[derive(Debug)]
pub struct RunContext {
    /// fen's directories.
    pub paths: Paths,
    /// The working directory of the session.
    pub cwd: PathBuf,
    /// The project folder of `cwd`: its repository root, else `cwd` (see `kernel::trust`).
    pub project_root: PathBuf,
    trusted: bool,
    settings: RefCell<Rc<Settings>>,
    hidden_env: RefCell<Vec<String>>,
    sandbox: RefCell<Option<Sandbox>>,
    unsandboxed: RefCell<Option<Unsandboxed>>,
    sandbox_settings: RefCell<Option<SandboxSettings>>,
    parent_sandbox: Option<SandboxSettings>,
    /// What the session has read (stale-read protection of `edit` and `write`).
    pub ledger: RefCell<ReadLedger>,
    /// MCP servers an ACP client added (`mcp.add`), kept across `mcp.configure` calls.
    pub mcp_added: RefCell<Vec<ServerConfig>>,
    stdin: std::cell::OnceCell<SharedStdin>,
}

/// fen's buffered stdin: one per run, since a second reader would lose what the first
/// buffered (`term.read_line` and `line.read` share it).
pub type SharedStdin = Rc<tokio::sync::Mutex<tokio::io::BufReader<tokio::io::Stdin>>>;

impl RunContext {
    /// A context for `cwd` with `paths`, its project folder trusted or not; the settings are
    /// read from the files here.
    pub fn new(paths: Paths, cwd: PathBuf, trusted: bool) -> RunContext {
        let project_root = crate::kernel::trust::project_root(&cwd);
        RunContext::with_root(paths, cwd, project_root, trusted)
    }

    /// A context for `cwd` whose trust is what trusted.json says, or `force_trust` (`--trust`).
    pub fn for_cwd(paths: Paths, cwd: PathBuf, force_trust: bool) -> RunContext {
        let project_root = crate::kernel::trust::project_root(&cwd);
        let trusted =
            force_trust || crate::kernel::trust::is_trusted_root(&paths.state_dir, &project_root);
        RunContext::with_root(paths, cwd, project_root, trusted)
    }

    fn with_root(paths: Paths, cwd: PathBuf, project_root: PathBuf, trusted: bool) -> RunContext {
        let settings = Settings::load(&paths.config_dir, &project_root, trusted);
        RunContext {
            paths,
            cwd,
            project_root,
            trusted,
            settings: RefCell::new(Rc::new(settings)),
            hidden_env: RefCell::default(),
            sandbox: RefCell::default(),
            unsandboxed: RefCell::default(),
            sandbox_settings: RefCell::default(),
            parent_sandbox: parent_sandbox(),
            ledger: RefCell::default(),
            mcp_added: RefCell::default(),
            stdin: std::cell::OnceCell::new(),
        }
    }

    /// From the environment: a state made without a boot (unit tests of bindings).
    fn from_env() -> RunContext {
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        RunContext::new(Paths::from_env(), cwd, false)
    }

    /// Whether the project folder was trusted when the run started (the kernel's
    /// `project_trusted` follows a later answer).
    pub fn trusted(&self) -> bool {
        self.trusted
    }

    /// The settings of this run.
    pub fn settings(&self) -> Rc<Settings> {
        self.settings.borrow().clone()
    }

    /// Replaces the settings (boot, `/reload`, a trust answer).
    pub fn set_settings(&self, settings: Settings) {
        *self.settings.borrow_mut() = Rc::new(settings);
    }

    /// The buffered stdin (made at first use).
    pub fn stdin(&self) -> SharedStdin {
        self.stdin
            .get_or_init(|| {
                Rc::new(tokio::sync::Mutex::new(tokio::io::BufReader::new(
                    tokio::io::stdin(),
                )))
            })
            .clone()
    }

    /// Environment variables tool children (bash, jobs, servers, subagents) must not see.
    pub fn hidden_env(&self) -> Vec<String> {
        self.hidden_env.borrow().clone()
    }

    pub fn set_hidden_env(&self, names: Vec<String>) {
        *self.hidden_env.borrow_mut() = names;
    }

    /// The sandbox tool shell commands run in (`policy.use_sandbox` chooses it); `None`: off.
    pub fn tool_sandbox(&self) -> Option<Sandbox> {
        self.sandbox.borrow().clone()
    }

    pub fn set_tool_sandbox(&self, sandbox: Option<Sandbox>) {
        *self.sandbox.borrow_mut() = sandbox;
    }

    /// The rules whose commands run outside the sandbox (none until `policy.use_sandbox` or an
    /// "always" answer sets some).
    pub fn unsandboxed(&self) -> Unsandboxed {
        self.unsandboxed
            .borrow_mut()
            .get_or_insert_with(|| Unsandboxed::new(self.session_workspace()))
            .clone()
    }

    pub fn set_unsandboxed(&self, rules: Unsandboxed) {
        *self.unsandboxed.borrow_mut() = Some(rules);
    }

    /// The session's workspace as the permission analyser sees it (the working directory).
    pub fn session_workspace(&self) -> Workspace {
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/"));
        Workspace::new(&self.cwd, &[], &home, &self.paths.config_dir)
            .with_state_dir(&self.paths.state_dir)
    }

    /// The sandbox settings `policy.use_sandbox` was given (with a parent's merged in).
    pub fn sandbox_settings(&self) -> Option<SandboxSettings> {
        self.sandbox_settings.borrow().clone()
    }

    pub fn set_sandbox_settings(&self, settings: SandboxSettings) {
        *self.sandbox_settings.borrow_mut() = Some(settings);
    }

    /// The sandbox settings of the `fen` that started this one as its subagent, if one did
    /// (see [`sandbox::PARENT_SANDBOX_ENV`]).
    pub fn parent_sandbox(&self) -> Option<&SandboxSettings> {
        self.parent_sandbox.as_ref()
    }

    /// What [`sandbox::plan`] decides from, as this run has it now.
    pub fn plan_inputs(&self) -> PlanInputs {
        PlanInputs {
            sandbox: self.tool_sandbox(),
            rules: Some(self.unsandboxed()),
            hidden_env: self.hidden_env(),
            settings: self.sandbox_settings(),
        }
    }

    /// Where `child` runs and with what environment ([`sandbox::plan`]). A long shell command
    /// is analysed off the Lua thread.
    pub async fn plan(&self, child: Child<'_>) -> mlua::Result<Plan> {
        let inputs = self.plan_inputs();
        match child {
            Child::Shell { command, requested } if sandbox::plan_is_slow(&child, &inputs) => {
                let command = command.to_string();
                super::native::blocking(move || {
                    sandbox::plan(
                        &Child::Shell {
                            command: &command,
                            requested,
                        },
                        &inputs,
                    )
                })
                .await
            }
            _ => Ok(sandbox::plan(&child, &inputs)),
        }
    }
}

/// The sandbox settings a parent `fen` handed down, when this `fen` is its subagent; a value
/// that does not parse counts as none (the child's own settings apply).
fn parent_sandbox() -> Option<SandboxSettings> {
    let raw = std::env::var(sandbox::PARENT_SANDBOX_ENV).ok()?;
    serde_json::from_str(&raw).ok()
}

/// Makes `ctx` the run context of `lua`.
pub fn install(lua: &Lua, ctx: RunContext) -> Rc<RunContext> {
    let ctx = Rc::new(ctx);
    lua.set_app_data(ctx.clone());
    ctx
}

/// The run context of `lua` (one from the environment when no boot made one).
pub fn run(lua: &Lua) -> Rc<RunContext> {
    if let Some(ctx) = lua.app_data_ref::<Rc<RunContext>>() {
        return ctx.clone();
    }
    install(lua, RunContext::from_env())
}
