//! The extension registry: every contribution made through `api.register`, tagged with its owner
//! and the priority (rank) of the root its owner was found in. For kinds that are unique by name,
//! the contribution from the higher-priority root (lower rank) is active and the others are kept,
//! visible as shadowed. Removing by owner is the one way to undo (reload).

use mlua::Table;
use std::collections::BTreeMap;

/// One registered contribution.
#[derive(Clone, Debug)]
pub struct Contribution {
    pub kind: String,
    /// The name, for kinds that have one (`tool`, `command`, ...).
    pub name: Option<String>,
    pub owner: String,
    /// Priority of the owner's root: lower wins a name collision.
    pub rank: usize,
    /// Registration order, for stable listing and tie-breaking (earlier wins a tie).
    pub seq: u64,
    pub spec: Table,
}

/// A contribution as listed: active, or shadowed by another owner's contribution of the same name.
#[derive(Clone, Debug)]
pub struct Listed<'a> {
    pub contribution: &'a Contribution,
    pub shadowed_by: Option<&'a str>,
}

/// Listing order: by name, then rank (the winner of a name first), then registration. Unnamed
/// contributions sort before named ones, among themselves by registration only.
fn order_key(c: &Contribution) -> (Option<&str>, usize, u64) {
    match &c.name {
        Some(n) => (Some(n.as_str()), c.rank, c.seq),
        None => (None, 0, c.seq),
    }
}

#[derive(Default)]
pub struct Registry {
    by_kind: BTreeMap<String, Vec<Contribution>>,
    next_seq: u64,
}

impl Registry {
    /// Adds a contribution. A second contribution of the same kind and name from the same owner
    /// replaces the first (an extension re-registering updates itself).
    pub fn add(&mut self, mut c: Contribution) {
        self.next_seq += 1;
        c.seq = self.next_seq;
        let list = self.by_kind.entry(c.kind.clone()).or_default();
        if let Some(name) = &c.name {
            list.retain(|old| !(old.owner == c.owner && old.name.as_deref() == Some(name)));
        }
        // Kept in listing order, so lookups never sort: named ones by (name, rank, seq), the
        // winner of a name first; unnamed ones (hooks) by registration, their run order.
        let at = list.partition_point(|old| order_key(old) <= order_key(&c));
        list.insert(at, c);
    }

    /// Removes every contribution of `owner`; returns how many there were.
    pub fn remove_owner(&mut self, owner: &str) -> usize {
        let mut removed = 0;
        for list in self.by_kind.values_mut() {
            let before = list.len();
            list.retain(|c| c.owner != owner);
            removed += before - list.len();
        }
        removed
    }

    /// The contributions of one owner (used to keep them across a failed reload).
    pub fn owned_by(&self, owner: &str) -> Vec<Contribution> {
        self.by_kind
            .values()
            .flatten()
            .filter(|c| c.owner == owner)
            .cloned()
            .collect()
    }

    /// Every contribution of a kind, with `shadowed_by` set for the losers of a name collision.
    /// Order: active ones by name (then registration), shadowed ones after their winner.
    pub fn list(&self, kind: &str) -> Vec<Listed<'_>> {
        let Some(list) = self.by_kind.get(kind) else {
            return Vec::new();
        };
        let mut out = Vec::with_capacity(list.len());
        let mut winner: Option<&Contribution> = None;
        for c in list {
            let shadowed_by = match (winner, &c.name) {
                (Some(w), Some(name)) if w.name.as_deref() == Some(name.as_str()) => {
                    Some(w.owner.as_str())
                }
                _ => None,
            };
            if shadowed_by.is_none() {
                winner = Some(c);
            }
            out.push(Listed {
                contribution: c,
                shadowed_by,
            });
        }
        out
    }

    /// The active contributions of a kind (shadowed ones left out).
    pub fn active(&self, kind: &str) -> Vec<&Contribution> {
        self.list(kind)
            .into_iter()
            .filter(|l| l.shadowed_by.is_none())
            .map(|l| l.contribution)
            .collect()
    }

    /// The active hooks that have a function field `field`, with their owners, in
    /// registration order.
    pub fn hook_functions(&self, field: &str) -> Vec<(String, mlua::Function)> {
        self.active("hook")
            .iter()
            .filter_map(|c| {
                c.spec
                    .get::<Option<mlua::Function>>(field)
                    .ok()
                    .flatten()
                    .map(|f| (c.owner.clone(), f))
            })
            .collect()
    }

    /// The active contribution of a kind with this name.
    pub fn get(&self, kind: &str, name: &str) -> Option<&Contribution> {
        let list = self.by_kind.get(kind)?;
        // The first of a name in listing order is its winner.
        let at = list.partition_point(|c| c.name.as_deref() < Some(name));
        list.get(at).filter(|c| c.name.as_deref() == Some(name))
    }

    pub fn kinds(&self) -> impl Iterator<Item = &str> {
        self.by_kind.keys().map(String::as_str)
    }
}
