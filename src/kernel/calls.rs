//! Calls into extension code, each with its own cancellation and time budget.
//!
//! Every call the kernel makes into Lua runs in a *scope*: a cancellation token (the turn's, a
//! tool call's child token, a command's) and an optional deadline. An async call runs in a
//! coroutine of its own, and its scope is attached to that coroutine, so a native that waits
//! (`sleep`, a process, an HTTP request) finds the token of the call that is waiting through
//! [`current_cancel`]; nothing is global, so a cancelled turn never leaks into a later command
//! and one of two parallel tool calls finishing does not blind the other.
//!
//! An instruction-count hook ([`install_hook`]) checks, every [`HOOK_EVERY`] instructions, the
//! running scope: a cancelled token, a passed deadline or a user interrupt ([`interrupt`], safe
//! from any thread or a signal handler) raises inside the running Lua code, so a runaway loop
//! in an extension can never wedge fen.

use mlua::{FromLuaMulti, Function, IntoLuaMulti, Lua, Thread};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// How often (in VM instructions) the hook looks at the running scope. At this rate the check
/// costs well under 1 % (see `cargo bench --bench kernel`), and a tight loop is seen within
/// microseconds.
pub const HOOK_EVERY: u32 = 20_000;

/// The default budget of a synchronous call (event handlers, panels, status items) and of an
/// extension's entry at load time.
pub const DEFAULT_BUDGET: Duration = Duration::from_secs(2);

/// User interrupts (Ctrl-C) so far. Bumped from a signal handler or an input thread, read by
/// the hook: a scope interrupted after it began stops.
static INTERRUPTS: AtomicU64 = AtomicU64::new(0);

/// Asks whatever Lua code is running now to stop (Ctrl-C). Async-signal-safe.
pub fn interrupt() {
    INTERRUPTS.fetch_add(1, Ordering::SeqCst);
}

fn interrupts() -> u64 {
    INTERRUPTS.load(Ordering::SeqCst)
}

/// What a call into Lua may use: its cancellation and, optionally, a deadline.
#[derive(Clone, Debug)]
pub struct Scope {
    pub cancel: CancellationToken,
    pub deadline: Option<Instant>,
    /// What runs, for the error raised when the budget is spent ("handler for tool-call of x").
    pub label: Rc<str>,
    /// What a user interrupt cancels: the whole turn for a tool call or a hook (Ctrl-C means
    /// "stop the turn"), else this scope's own token.
    pub on_interrupt: Option<CancellationToken>,
    /// The budget as given (for the message when it is spent).
    budget: Option<Duration>,
    interrupts_at_start: u64,
}

impl Scope {
    pub fn new(cancel: CancellationToken, budget: Option<Duration>, label: &str) -> Scope {
        Scope {
            cancel,
            deadline: budget.map(|b| Instant::now() + b),
            label: Rc::from(label),
            on_interrupt: None,
            budget,
            interrupts_at_start: interrupts(),
        }
    }

    /// [`Scope::new`] with a label already shared (no allocation).
    fn new_shared(cancel: CancellationToken, budget: Option<Duration>, label: Rc<str>) -> Scope {
        Scope {
            cancel,
            deadline: budget.map(|b| Instant::now() + b),
            label,
            on_interrupt: None,
            budget,
            interrupts_at_start: interrupts(),
        }
    }

    /// A user interrupt inside this scope cancels `token` (the turn) too.
    pub fn interrupting(mut self, token: &CancellationToken) -> Scope {
        self.on_interrupt = Some(token.clone());
        self
    }

    /// Moves the deadline later by `by` (time spent waiting for a person does not count).
    pub fn extend(&mut self, by: Duration) {
        if let Some(d) = self.deadline.as_mut() {
            *d += by;
        }
    }

    /// Why this scope must stop now, if it must.
    fn stop_reason(&self) -> Option<String> {
        if interrupts() > self.interrupts_at_start {
            self.on_interrupt.as_ref().unwrap_or(&self.cancel).cancel();
            self.cancel.cancel();
            return Some(format!("{} was interrupted", self.label));
        }
        if self.cancel.is_cancelled() {
            return Some("cancelled".to_string());
        }
        match self.deadline {
            Some(d) if Instant::now() >= d => Some(format!(
                "{} did not finish within {} (infinite loop?)",
                self.label,
                human(self.budget.unwrap_or_default())
            )),
            _ => None,
        }
    }
}

/// "2 s", "500 ms".
fn human(d: Duration) -> String {
    if d.as_millis().is_multiple_of(1000) {
        format!("{} s", d.as_secs())
    } else {
        format!("{} ms", d.as_millis())
    }
}

/// The scopes of the Lua state: per coroutine for async calls, a stack for synchronous ones
/// (a synchronous call runs to its end on whichever coroutine made it, so the innermost one is
/// the one running).
#[derive(Default)]
struct Scopes {
    by_thread: RefCell<HashMap<usize, Scope>>,
    sync_stack: RefCell<Vec<Scope>>,
}

fn scopes(lua: &Lua) -> mlua::AppDataRef<'_, Scopes> {
    if lua.app_data_ref::<Scopes>().is_none() {
        lua.set_app_data(Scopes::default());
    }
    lua.app_data_ref::<Scopes>()
        .expect("the scopes app data was just set")
}

fn thread_key(thread: &Thread) -> usize {
    thread.to_pointer() as usize
}

/// The scope of the code running now: the innermost synchronous call, else the coroutine's.
pub fn current_scope(lua: &Lua) -> Option<Scope> {
    let s = scopes(lua);
    if let Some(top) = s.sync_stack.borrow().last() {
        return Some(top.clone());
    }
    let key = thread_key(&lua.current_thread());
    let found = s.by_thread.borrow().get(&key).cloned();
    found
}

/// The cancellation token of the code running now; a token nobody cancels outside any scope.
pub fn current_cancel(lua: &Lua) -> CancellationToken {
    current_scope(lua).map(|s| s.cancel).unwrap_or_default()
}

/// Changes the running coroutine's scope in place (e.g. [`Scope::extend`] after a wait).
pub fn with_current_scope(lua: &Lua, f: impl FnOnce(&mut Scope)) {
    let s = scopes(lua);
    if let Some(top) = s.sync_stack.borrow_mut().last_mut() {
        f(top);
        return;
    }
    let key = thread_key(&lua.current_thread());
    let mut map = s.by_thread.borrow_mut();
    if let Some(scope) = map.get_mut(&key) {
        f(scope);
    }
}

/// Installs the instruction-count hook on the state (new coroutines inherit it).
pub fn install_hook(lua: &Lua) -> mlua::Result<()> {
    lua.set_global_hook(
        mlua::HookTriggers::new().every_nth_instruction(HOOK_EVERY),
        |lua, _debug| {
            if let Some(reason) = current_scope(lua).and_then(|s| s.stop_reason()) {
                return Err(mlua::Error::runtime(reason));
            }
            Ok(mlua::VmState::Continue)
        },
    )
}

/// Unregisters a coroutine's scope when its call ends or is dropped (cancelled).
struct Registered {
    lua: Lua,
    key: usize,
}

impl Drop for Registered {
    fn drop(&mut self) {
        scopes(&self.lua).by_thread.borrow_mut().remove(&self.key);
    }
}

/// Calls `f` as a coroutine of its own in `scope` and awaits it. Natives awaited inside see
/// the scope's token; the hook stops the coroutine when the scope is cancelled or out of time.
pub async fn call_async<R: FromLuaMulti>(
    lua: &Lua,
    f: &Function,
    args: impl IntoLuaMulti,
    scope: Scope,
) -> mlua::Result<R> {
    let thread = lua.create_thread(f.clone())?;
    let key = thread_key(&thread);
    scopes(lua).by_thread.borrow_mut().insert(key, scope);
    let _registered = Registered {
        lua: lua.clone(),
        key,
    };
    thread.into_async::<R>(args)?.await
}

/// [`call_async`] that also gives up when the scope is cancelled while the call waits
/// (a provider stream, a hook waiting for an answer): `Err` "cancelled" then.
pub async fn call_async_cancellable<R: FromLuaMulti>(
    lua: &Lua,
    f: &Function,
    args: impl IntoLuaMulti,
    scope: Scope,
) -> mlua::Result<R> {
    let cancel = scope.cancel.clone();
    tokio::select! {
        r = call_async(lua, f, args, scope) => r,
        _ = cancel.cancelled() => Err(mlua::Error::runtime("cancelled")),
    }
}

/// Pops the synchronous scope when the call returns or unwinds.
struct Pushed<'a> {
    lua: &'a Lua,
}

impl Drop for Pushed<'_> {
    fn drop(&mut self) {
        scopes(self.lua).sync_stack.borrow_mut().pop();
    }
}

/// The label a synchronous scope carries until its call fails: the real one is only worded
/// then (event delivery runs several handlers per stream read; formatting a label for each
/// would be wasted work).
const SYNC_LABEL: &str = "this call";

/// Calls `f` synchronously within `budget`: event handlers, panels, status items, an
/// extension's entry. The hook raises inside it once the budget is spent or on interrupt;
/// the error then names the call with `label()`.
pub fn call_sync<R: FromLuaMulti>(
    lua: &Lua,
    f: &Function,
    args: impl IntoLuaMulti,
    budget: Duration,
    label: impl FnOnce() -> String,
) -> mlua::Result<R> {
    // Inherit the surrounding cancellation: a handler run inside a cancelled turn stops too.
    // Outside every async call there is nothing to inherit (and no coroutine to look up).
    let cancel = {
        let s = scopes(lua);
        let top = s.sync_stack.borrow().last().map(|t| t.cancel.clone());
        match top {
            Some(t) => t,
            None if s.by_thread.borrow().is_empty() => CancellationToken::new(),
            None => {
                drop(s);
                current_cancel(lua)
            }
        }
    };
    SYNC_LABEL_RC.with(|l| {
        scopes(lua)
            .sync_stack
            .borrow_mut()
            .push(Scope::new_shared(cancel, Some(budget), l.clone()))
    });
    let _pushed = Pushed { lua };
    f.call::<R>(args).map_err(|e| {
        if is_stop_error(&e) {
            let text = crate::kernel::convert::error_parts(&e).0;
            mlua::Error::runtime(text.replacen(SYNC_LABEL, &label(), 1))
        } else {
            e
        }
    })
}

thread_local! {
    static SYNC_LABEL_RC: Rc<str> = Rc::from(SYNC_LABEL);
}

/// The error Lua code sees when it was stopped by a scope (cancelled, interrupted, budget).
pub fn is_stop_error(err: &mlua::Error) -> bool {
    let text = err.to_string();
    text.contains("cancelled")
        || text.contains("was interrupted")
        || text.contains("(infinite loop?)")
}

/// A value that keeps the state's registry free of stale scopes in tests.
#[cfg(test)]
fn live_scopes(lua: &Lua) -> usize {
    scopes(lua).by_thread.borrow().len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use mlua::Value;

    fn state() -> Lua {
        let lua = Lua::new();
        install_hook(&lua).unwrap();
        lua
    }

    #[test]
    fn a_runaway_synchronous_call_is_stopped_by_its_budget() {
        let lua = state();
        let f: Function = lua
            .load("return function() while true do end end")
            .eval()
            .unwrap();
        let t0 = Instant::now();
        let err = call_sync::<()>(&lua, &f, (), Duration::from_millis(50), || {
            "handler for x".into()
        })
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("handler for x did not finish within 50 ms (infinite loop?)"),
            "{err}"
        );
        assert!(t0.elapsed() < Duration::from_secs(5));
        // The stack is unwound: a later call outside any scope is not stopped.
        let ok: Function = lua.load("return function() return 1 end").eval().unwrap();
        assert_eq!(ok.call::<i64>(()).unwrap(), 1);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn each_coroutine_sees_its_own_token() {
        let lua = state();
        let a = CancellationToken::new();
        let b = CancellationToken::new();
        let probe = lua
            .create_async_function(|lua, ()| async move {
                tokio::task::yield_now().await;
                Ok(current_cancel(&lua).is_cancelled())
            })
            .unwrap();
        lua.globals().set("probe", probe).unwrap();
        let f: Function = lua
            .load("return function() return probe() end")
            .eval()
            .unwrap();
        b.cancel();
        let (ra, rb) = tokio::join!(
            call_async::<bool>(&lua, &f, (), Scope::new(a.clone(), None, "a")),
            call_async::<bool>(&lua, &f, (), Scope::new(b.clone(), None, "b")),
        );
        assert!(!ra.unwrap());
        assert!(rb.unwrap());
        assert_eq!(live_scopes(&lua), 0, "scopes are removed when calls end");
        // Outside any scope nothing is cancelled.
        assert!(!current_cancel(&lua).is_cancelled());
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_cancelled_scope_stops_a_busy_loop() {
        let lua = state();
        let token = CancellationToken::new();
        let f: Function = lua
            .load("return function() local n = 0 while true do n = n + 1 end end")
            .eval()
            .unwrap();
        token.cancel();
        let err = call_async::<Value>(&lua, &f, (), Scope::new(token, None, "tool x"))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("cancelled"), "{err}");
    }
}
