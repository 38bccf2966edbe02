//! Fuzzy matching for the input's menus (slash commands, `@` file paths): a case-insensitive
//! subsequence match scored by where the letters fall. A contiguous match beats a scattered
//! one; matches at the start of the name, of a path component or of a word (after `/`, `_`,
//! `-`, `.`, a space or a lower-to-upper case change) score more; shorter candidates win ties.
//! Pure and allocation-light, so ranking 20,000 paths takes about a millisecond.

/// The score of `candidate` for `query` (higher is better), or None when the query's
/// characters are not all in it, in order. An empty query matches everything with 0.
pub fn score(query: &str, candidate: &str) -> Option<i64> {
    if query.is_empty() {
        return Some(0);
    }
    // Most candidates do not hold the query's letters in order: reject those without
    // allocating (ASCII case folded; other characters compared as they are, and any
    // non-ASCII query goes the long way).
    if query.is_ascii() {
        let mut it = candidate.bytes().map(|b| b.to_ascii_lowercase());
        if !query
            .bytes()
            .map(|b| b.to_ascii_lowercase())
            .all(|qb| it.any(|cb| cb == qb))
        {
            return None;
        }
    }
    let q: Vec<char> = query.chars().flat_map(char::to_lowercase).collect();
    let c: Vec<char> = candidate.chars().collect();
    let lower: Vec<char> = c
        .iter()
        .map(|ch| ch.to_lowercase().next().unwrap_or(*ch))
        .collect();
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
                let mut s = 1000 - len_penalty;
                if boundary(start) {
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
                s -= start as i64;
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
        if boundary(at) {
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
        last = Some(at);
        i = at + 1;
    }
    Some(s - len_penalty)
}

/// The indices of the `limit` best candidates for `query`, best first; equal scores keep the
/// candidates' order (callers pass files most recently changed first).
pub fn rank<'a>(
    query: &str,
    candidates: impl IntoIterator<Item = &'a str>,
    limit: usize,
) -> Vec<usize> {
    let mut scored: Vec<(i64, usize)> = candidates
        .into_iter()
        .enumerate()
        .filter_map(|(i, c)| score(query, c).map(|s| (s, i)))
        .collect();
    // Stable: ties stay in input order.
    scored.sort_by_key(|s| std::cmp::Reverse(s.0));
    scored.truncate(limit);
    scored.into_iter().map(|(_, i)| i).collect()
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
}
