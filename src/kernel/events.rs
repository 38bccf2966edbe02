//! The event bus's subscriber table: `api.on(type, fn)` subscriptions, tagged with their owner,
//! with a per-type cache of who to call so that emitting (100,000 stream deltas a turn) does
//! not rebuild the list each time. Delivery and validation live in `state::emit`.

use super::contracts::{contracts, Contract};
use mlua::Function;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::OnceLock;

/// An `api.on` subscription.
#[derive(Clone, Debug)]
pub struct Handler {
    pub owner: String,
    /// Event type, or `"*"` for every event.
    pub event: String,
    pub func: Function,
}

/// The handlers of one event type, in subscription order (`"*"` ones included).
pub type Subscribers = Rc<Vec<Handler>>;

#[derive(Default)]
pub struct Bus {
    handlers: Vec<Handler>,
    cache: HashMap<String, Subscribers>,
}

impl Bus {
    pub fn add(&mut self, h: Handler) {
        self.handlers.push(h);
        self.cache.clear();
    }

    /// Replaces every subscription of `owner` with `new` (reload commits through this).
    pub fn replace_owner(&mut self, owner: &str, new: Vec<Handler>) {
        self.handlers.retain(|h| h.owner != owner);
        self.handlers.extend(new);
        self.cache.clear();
    }

    /// Who receives an event of type `ty`.
    pub fn subscribers(&mut self, ty: &str) -> Subscribers {
        if let Some(s) = self.cache.get(ty) {
            return s.clone();
        }
        let list: Subscribers = Rc::new(
            self.handlers
                .iter()
                .filter(|h| h.event == ty || h.event == "*")
                .cloned()
                .collect(),
        );
        self.cache.insert(ty.to_string(), list.clone());
        list
    }
}

/// The contract of an event type, by name (indexed once).
pub fn event_contract(ty: &str) -> Option<&'static Contract> {
    static INDEX: OnceLock<HashMap<&'static str, &'static Contract>> = OnceLock::new();
    INDEX
        .get_or_init(|| {
            contracts()
                .events()
                .entries
                .iter()
                .map(|c| (c.name.as_str(), c))
                .collect()
        })
        .get(ty)
        .copied()
}
