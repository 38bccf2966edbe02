//! Fuzzy matching for the input's menus (slash commands, `@` file paths): a case-insensitive
//! subsequence match scored by where the letters fall. A contiguous match beats a scattered
//! one; matches at the start of the name, of a path component or of a word (after `/`, `_`,
//! `-`, `.`, a space or a lower-to-upper case change) score more; shorter candidates win ties.
//!
//! Built for a keystroke over 20,000 paths: ASCII (nearly every path) is scored on bytes
//! through a lowercase table with no allocation, a candidate that does not hold the query's
//! letters in order is rejected in one pass, the best `limit` are kept in a bounded heap
//! instead of sorting every match, and [`Narrowing`] scores only the previous keystroke's
//! matches when the query grew by a letter. Other text goes the long way, on `char`s, in
//! buffers the [`Matcher`] reuses.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// ASCII lowercase of every byte (others unchanged).
static LOWER: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = (i as u8).to_ascii_lowercase();
        i += 1;
    }
    t
};

#[inline]
fn low(b: u8) -> u8 {
    LOWER[b as usize]
}

/// The score of `candidate` for `query` (higher is better), or None when the query's
/// characters are not all in it, in order. An empty query matches everything with 0.
pub fn score(query: &str, candidate: &str) -> Option<i64> {
    Matcher::new(query).score(candidate)
}

/// One query, scored against many candidates with its buffers reused.
pub struct Matcher {
    empty: bool,
    /// The query lowercased, as bytes when it is ASCII.
    ascii: Option<Vec<u8>>,
    /// The query lowercased, as chars (the long way).
    chars: Vec<char>,
    cand: Vec<char>,
    lower: Vec<char>,
}

impl Matcher {
    pub fn new(query: &str) -> Matcher {
        Matcher {
            empty: query.is_empty(),
            ascii: query.is_ascii().then(|| query.bytes().map(low).collect()),
            chars: query.chars().flat_map(char::to_lowercase).collect(),
            cand: Vec::new(),
            lower: Vec::new(),
        }
    }

    /// See [`score`].
    pub fn score(&mut self, candidate: &str) -> Option<i64> {
        if self.empty {
            return Some(0);
        }
        if let Some(q) = &self.ascii {
            // Most candidates do not hold the query's letters in order: one pass rejects them.
            if !subsequence(q, candidate.as_bytes()) {
                return None;
            }
            if candidate.is_ascii() {
                return Some(score_ascii(q, candidate.as_bytes()));
            }
        }
        self.cand.clear();
        self.cand.extend(candidate.chars());
        self.lower.clear();
        self.lower.extend(
            self.cand
                .iter()
                .map(|ch| ch.to_lowercase().next().unwrap_or(*ch)),
        );
        score_chars(&self.chars, &self.cand, &self.lower)
    }
}

/// Whether the (lowercased) query bytes appear in `c` in order, ASCII case folded.
#[inline]
fn subsequence(q: &[u8], c: &[u8]) -> bool {
    let mut qi = 0;
    for &b in c {
        if low(b) == q[qi] {
            qi += 1;
            if qi == q.len() {
                return true;
            }
        }
    }
    false
}

/// The scoring below, on ASCII bytes (indices are character indices).
fn score_ascii(q: &[u8], c: &[u8]) -> i64 {
    let boundary = |i: usize| -> bool {
        if i == 0 {
            return true;
        }
        let prev = c[i - 1];
        matches!(prev, b'/' | b'_' | b'-' | b'.' | b' ' | b':')
            || (prev.is_ascii_lowercase() && c[i].is_ascii_uppercase())
    };
    let n = c.len();
    let base_start = c.iter().rposition(|&b| b == b'/').map_or(0, |p| p + 1);
    let len_penalty = n as i64;

    let mut best: Option<i64> = None;
    if q.len() <= n {
        for start in 0..=n - q.len() {
            if low(c[start]) != q[0]
                || !q[1..]
                    .iter()
                    .zip(&c[start + 1..])
                    .all(|(&a, &b)| low(b) == a)
            {
                continue;
            }
            let s = contiguous(start, base_start, boundary(start), len_penalty);
            best = Some(best.map_or(s, |b: i64| b.max(s)));
        }
    }
    if let Some(b) = best {
        return b;
    }
    let fits = |from: usize, rest: &[u8]| -> bool {
        rest.is_empty() || (from < n && subsequence(rest, &c[from..]))
    };
    let mut s: i64 = 0;
    let mut i = 0;
    let mut last: Option<usize> = None;
    for (k, &qc) in q.iter().enumerate() {
        // The caller checked the whole query is a subsequence.
        let Some(found) = (i..n).find(|&j| low(c[j]) == qc) else {
            break;
        };
        let at = (found..n)
            .find(|&j| low(c[j]) == qc && boundary(j))
            .filter(|&j| j - found < 8 && fits(j + 1, &q[k + 1..]))
            .unwrap_or(found);
        s += step(at, last, base_start, boundary(at));
        last = Some(at);
        i = at + 1;
    }
    s - len_penalty
}

/// A contiguous occurrence at `start`.
#[inline]
fn contiguous(start: usize, base_start: usize, boundary: bool, len_penalty: i64) -> i64 {
    let mut s = 1000 - len_penalty;
    if boundary {
        s += 200;
    }
    if start == base_start {
        s += 300;
    }
    if start == 0 {
        s += 100;
    }
    if start >= base_start {
        s += 100;
    }
    s - start as i64
}

/// One letter of a scattered match landing at `at`, the previous one at `last`.
#[inline]
fn step(at: usize, last: Option<usize>, base_start: usize, boundary: bool) -> i64 {
    let mut s = 0;
    if boundary {
        s += 30;
    }
    if at >= base_start {
        s += 10;
    }
    if last.is_some_and(|l| l + 1 == at) {
        s += 20;
    } else if let Some(l) = last {
        s -= (at - l) as i64;
    }
    s
}

/// The scoring on chars: `q` the lowercased query, `c` the candidate, `lower` its lowercase.
fn score_chars(q: &[char], c: &[char], lower: &[char]) -> Option<i64> {
    let boundary = |i: usize| -> bool {
        if i == 0 {
            return true;
        }
        let prev = c[i - 1];
        matches!(prev, '/' | '_' | '-' | '.' | ' ' | ':')
            || (prev.is_lowercase() && c[i].is_uppercase())
    };
    // The file name of a path: matches inside it count more.
    let base_start = c.iter().rposition(|&ch| ch == '/').map_or(0, |p| p + 1);
    let len_penalty = c.len() as i64;

    // A contiguous occurrence: the best-placed one.
    let mut best: Option<i64> = None;
    if q.len() <= lower.len() {
        for start in 0..=lower.len() - q.len() {
            if lower[start..start + q.len()] == q[..] {
                let s = contiguous(start, base_start, boundary(start), len_penalty);
                best = Some(best.map_or(s, |b: i64| b.max(s)));
            }
        }
    }
    if best.is_some() {
        return best;
    }
    // A subsequence, taken greedily from the left, each letter preferring a word start
    // within reach.
    let mut s: i64 = 0;
    let mut i = 0;
    let mut last: Option<usize> = None;
    // Whether `rest` is a subsequence of `lower[from..]`.
    let fits = |from: usize, rest: &[char]| -> bool {
        let mut it = lower[from.min(lower.len())..].iter();
        rest.iter().all(|qc| it.any(|c| c == qc))
    };
    for (k, &qc) in q.iter().enumerate() {
        let found = (i..lower.len()).find(|&j| lower[j] == qc)?;
        // A later word-start holding the same letter is worth the jump, if the rest of the
        // query still fits after it.
        let at = (found..lower.len())
            .find(|&j| lower[j] == qc && boundary(j))
            .filter(|&j| j - found < 8 && fits(j + 1, &q[k + 1..]))
            .unwrap_or(found);
        s += step(at, last, base_start, boundary(at));
        last = Some(at);
        i = at + 1;
    }
    Some(s - len_penalty)
}

/// The best `limit` (score, index) pairs seen, in a heap whose top is the worst kept: higher
/// scores win, equal scores keep the earlier index.
struct Top {
    limit: usize,
    heap: BinaryHeap<(Reverse<i64>, usize)>,
}

impl Top {
    fn new(limit: usize) -> Top {
        Top {
            limit,
            heap: BinaryHeap::with_capacity(limit.min(1024) + 1),
        }
    }

    /// Indices arrive in increasing order, so an equal score never displaces a kept one.
    #[inline]
    fn push(&mut self, score: i64, index: usize) {
        if self.heap.len() < self.limit {
            self.heap.push((Reverse(score), index));
        } else if let Some(mut worst) = self.heap.peek_mut() {
            if score > worst.0 .0 {
                *worst = (Reverse(score), index);
            }
        }
    }

    fn best_first(self) -> Vec<usize> {
        self.heap
            .into_sorted_vec()
            .into_iter()
            .map(|(_, i)| i)
            .collect()
    }
}

/// The indices of the `limit` best candidates for `query`, best first; equal scores keep the
/// candidates' order (callers pass files most recently changed first).
pub fn rank<'a>(
    query: &str,
    candidates: impl IntoIterator<Item = &'a str>,
    limit: usize,
) -> Vec<usize> {
    if query.is_empty() {
        return candidates
            .into_iter()
            .take(limit)
            .enumerate()
            .map(|(i, _)| i)
            .collect();
    }
    let mut m = Matcher::new(query);
    let mut top = Top::new(limit);
    for (i, c) in candidates.into_iter().enumerate() {
        if let Some(s) = m.score(c) {
            top.push(s, i);
        }
    }
    top.best_first()
}

/// Ranking one list as a query is typed: every match of the last query is kept, so a query
/// that extends it (a letter typed) scores only those (a subsequence of the longer query is
/// one of the shorter).
#[derive(Default)]
pub struct Narrowing {
    last: Option<(String, Vec<u32>)>,
    spare: Vec<u32>,
}

impl Narrowing {
    /// As [`rank`] over `list`.
    pub fn rank<S: AsRef<str>>(&mut self, list: &[S], query: &str, limit: usize) -> Vec<usize> {
        if query.is_empty() {
            self.last = None;
            return (0..list.len().min(limit)).collect();
        }
        let mut m = Matcher::new(query);
        let mut top = Top::new(limit);
        let mut matches = std::mem::take(&mut self.spare);
        matches.clear();
        let mut take = |i: usize, m: &mut Matcher| {
            if let Some(s) = list.get(i).and_then(|c| m.score(c.as_ref())) {
                top.push(s, i);
                matches.push(i as u32);
            }
        };
        match self.last.take() {
            Some((prev, mut prev_matches)) if query.starts_with(prev.as_str()) => {
                for &i in &prev_matches {
                    take(i as usize, &mut m);
                }
                prev_matches.clear();
                self.spare = prev_matches;
            }
            other => {
                if let Some((_, v)) = other {
                    self.spare = v;
                }
                for i in 0..list.len() {
                    take(i, &mut m);
                }
            }
        }
        self.last = Some((query.to_string(), matches));
        top.best_first()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn top(q: &str, items: &[&str]) -> Vec<String> {
        rank(q, items.iter().copied(), 10)
            .into_iter()
            .map(|i| items[i].to_string())
            .collect()
    }

    #[test]
    fn contiguous_and_file_name_matches_come_first() {
        let files = [
            "docs/tui.md",
            "src/native/term/render.rs",
            "extensions/adapters/presenters/tui/init.lua",
            "tests/tui.rs",
            "src/host/native/term.rs",
        ];
        let r = top("tui", &files);
        assert_eq!(r[0], "docs/tui.md");
        assert_eq!(r[1], "tests/tui.rs");
        assert!(r.contains(&"extensions/adapters/presenters/tui/init.lua".to_string()));
        assert!(!r.contains(&"src/native/term/render.rs".to_string()));
        // Scattered letters: term/render.rs has t-r-r in order.
        assert!(score("mtarg", "src/menu_target.rs").is_some());
        let r = top("trr", &files);
        assert!(
            r.contains(&"src/native/term/render.rs".to_string()),
            "{r:?}"
        );
    }

    #[test]
    fn case_is_ignored_and_non_matches_dropped() {
        assert!(score("README", "readme.md").is_some());
        assert!(score("rdm", "README.md").is_some());
        assert_eq!(score("xyz", "README.md"), None);
        assert_eq!(score("", "anything"), Some(0));
        assert_eq!(score("é", "café.txt").map(|s| s > 0), Some(true));
    }

    #[test]
    fn commands_rank_by_prefix() {
        let cmds = ["compact", "context", "copy", "cost", "expand", "help"];
        assert_eq!(
            top("co", &cmds)[..4],
            ["copy", "cost", "compact", "context"]
        );
        assert_eq!(top("cst", &cmds)[0], "cost");
        assert_eq!(top("ex", &cmds)[0], "expand");
        assert_eq!(top("", &cmds).len(), 6);
    }

    #[test]
    fn ties_keep_the_input_order() {
        let files = ["b/x.rs", "a/x.rs"];
        assert_eq!(top("x.rs", &files), ["b/x.rs", "a/x.rs"]);
    }

    #[test]
    fn the_byte_path_scores_as_the_char_path() {
        let cands = [
            "src/native/term/render.rs",
            "extensions/adapters/presenters/tui/init.lua",
            "pkg001/src/module_1/file_002_gamma.rs",
            "docs/MenuTarget.md",
            "a-b_c.d e:f/GammaRay",
            "gg/g/gam/ma",
        ];
        for q in [
            "g", "gam", "gamma", "tui", "mt", "trr", "ab", "src", "GR", "zz", "ggm",
        ] {
            let lq: Vec<char> = q.chars().flat_map(char::to_lowercase).collect();
            for c in cands {
                let cc: Vec<char> = c.chars().collect();
                let lower: Vec<char> = cc
                    .iter()
                    .map(|ch| ch.to_lowercase().next().unwrap_or(*ch))
                    .collect();
                assert_eq!(score(q, c), score_chars(&lq, &cc, &lower), "{q} in {c}");
            }
        }
    }

    #[test]
    fn narrowing_ranks_as_a_fresh_ranking() {
        let list: Vec<String> = (0..500)
            .map(|i| {
                format!(
                    "pkg{}/src/mod_{i}/file_{}.rs",
                    i % 7,
                    ["alpha", "gamma", "beta"][i % 3]
                )
            })
            .collect();
        let mut n = Narrowing::default();
        for q in [
            "g", "ga", "gam", "gamm", "gamma", "gam", "", "b", "be", "Be", "beta.rs", "x",
        ] {
            let fresh = rank(q, list.iter().map(String::as_str), 20);
            assert_eq!(n.rank(&list, q, 20), fresh, "{q}");
        }
        // The limit keeps the best, ties in input order.
        assert_eq!(rank("file", list.iter().map(String::as_str), 3).len(), 3);
        assert!(rank("file", list.iter().map(String::as_str), 0).is_empty());
    }
}
