//! Import circles between the modules of one crate. The graph: module A uses module B when A's code names
//! B by a path (`use crate::b::…`, `use super::b::…`, `crate::b::f()`, `use b::…` for a child `b`); `mod`
//! declarations give the tree of modules. An edge is counted between the two modules where the paths part
//! (a use of `crate::a::x` from `b::y` is `b` using `a`), and a module using its parent or its child is
//! not an edge: the crate root's error type and a parent's shared items are used from below everywhere, and
//! a parent puts its children together. Test code (`#[cfg(test)]`) is left out.

use std::collections::{BTreeMap, BTreeSet};

use super::code::{Code, Token};

/// A module by its path from the crate root (`[]` is the root).
pub type ModulePath = Vec<String>;

/// One module's file as read: where it is, its module path and its reduced code.
pub struct ModuleFile {
    pub file: String,
    pub path: ModulePath,
    pub code: Code,
}

/// Where a module names another: the file and line, for the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Use {
    pub file: String,
    pub line: usize,
}

/// The modules a file declares (`mod name;` in it, at any inline nesting), as paths.
pub fn declared(file: &ModuleFile) -> Vec<ModulePath> {
    let mut out = Vec::new();
    walk(file, |scope, t, i| {
        if t[i].is("mod")
            && t.get(i + 2).is_some_and(|x| x.is(";"))
            && let Some(name) = t.get(i + 1)
        {
            out.push([scope, std::slice::from_ref(&name.text)].concat());
        }
    });
    out
}

/// Visits each token with the module it stands in (the file's module, or an inline `mod name { … }` in it).
fn walk(file: &ModuleFile, mut visit: impl FnMut(&[String], &[Token], usize)) {
    let t = &file.code.tokens;
    let mut scopes: Vec<(ModulePath, usize)> = vec![(file.path.clone(), usize::MAX)];
    let mut depth = 0usize;
    let mut i = 0;
    while i < t.len() {
        match t[i].text.as_str() {
            "{" => depth += 1,
            "}" => {
                depth = depth.saturating_sub(1);
                if scopes.last().is_some_and(|(_, d)| *d == depth) {
                    scopes.pop();
                }
            }
            "mod" if t.get(i + 2).is_some_and(|x| x.is("{")) => {
                if let Some((scope, _)) = scopes.last() {
                    let inner = [scope.as_slice(), &[t[i + 1].text.clone()]].concat();
                    scopes.push((inner, depth));
                }
                depth += 1;
                i += 3;
                continue;
            }
            _ => {}
        }
        if let Some((scope, _)) = scopes.last() {
            visit(scope, t, i);
        }
        i += 1;
    }
}

/// Every module path named in a file: `(from, to, where)`, `to` being the longest known module the path
/// names.
pub fn uses(file: &ModuleFile, modules: &BTreeSet<ModulePath>) -> Vec<(ModulePath, ModulePath, Use)> {
    let mut out = Vec::new();
    walk(file, |scope, t, i| {
        let starts_path = matches!(t[i].text.as_str(), "crate" | "super" | "self")
            && t.get(i + 1).is_some_and(|x| x.is("::"))
            && !(i > 0 && t[i - 1].is("::"));
        let paths = if t[i].is("use") {
            use_paths(t, i + 1)
        } else if starts_path && !in_use(t, i) {
            vec![path_at(t, i)]
        } else {
            Vec::new()
        };
        for path in paths {
            if let Some(target) = resolve(scope, &path, modules) {
                let at = Use {
                    file: file.file.clone(),
                    line: file.code.line_of(t[i].offset),
                };
                out.push((scope.to_vec(), target, at));
            }
        }
    });
    out
}

/// Whether token `i` stands in a `use` declaration (its paths are read from the `use`).
fn in_use(t: &[Token], i: usize) -> bool {
    t[..i].iter().rev().take_while(|x| !x.is(";")).any(|x| x.is("use"))
}

/// `a::b::c` from `i`: the identifiers joined by `::`.
fn path_at(t: &[Token], mut i: usize) -> Vec<String> {
    let mut path = Vec::new();
    while let Some(x) = t.get(i) {
        if !x.is_ident() {
            break;
        }
        path.push(x.text.clone());
        if !t.get(i + 1).is_some_and(|x| x.is("::")) {
            break;
        }
        i += 2;
    }
    path
}

/// The paths of a use tree starting at `i` (`a::{b, c::d}` is `a::b` and `a::c::d`), up to its `;`.
fn use_paths(t: &[Token], i: usize) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    tree(t, i, &mut Vec::new(), &mut out);
    out
}

/// Reads one use tree at `i` under `prefix` into `out`; returns the index after it.
fn tree(t: &[Token], mut i: usize, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) -> usize {
    let base = prefix.len();
    while let Some(x) = t.get(i) {
        if x.is("{") {
            i += 1;
            while t.get(i).is_some_and(|x| !x.is("}")) {
                i = tree(t, i, prefix, out);
                if t.get(i).is_some_and(|x| x.is(",")) {
                    i += 1;
                }
            }
            prefix.truncate(base);
            return i + 1;
        }
        if x.is_ident() && x.text != "as" {
            prefix.push(x.text.clone());
            i += 1;
            if t.get(i).is_some_and(|x| x.is("::")) {
                i += 1;
                continue;
            }
        } else if x.is("*") {
            i += 1;
        }
        // The end of this path: `as name`, `,`, `}` or `;`.
        while t.get(i).is_some_and(|x| !matches!(x.text.as_str(), "," | "}" | ";")) {
            i += 1;
        }
        out.push(prefix.clone());
        prefix.truncate(base);
        return i;
    }
    i
}

/// The module a path names from module `scope`: its longest prefix that is a module, or `None` for a path
/// into another crate or one naming no module.
fn resolve(scope: &[String], path: &[String], modules: &BTreeSet<ModulePath>) -> Option<ModulePath> {
    let mut segments = path.iter().peekable();
    let mut base: ModulePath = match segments.peek().map(|s| s.as_str()) {
        Some("crate") => {
            segments.next();
            Vec::new()
        }
        Some("self" | "super") => scope.to_vec(),
        Some(first) if modules.contains(&[scope, &[first.to_string()]].concat()) => scope.to_vec(),
        _ => return None,
    };
    while let Some(s) = segments.peek() {
        match s.as_str() {
            "self" => {}
            "super" => {
                base.pop()?;
            }
            _ => break,
        }
        segments.next();
    }
    for s in segments {
        let next = [base.as_slice(), std::slice::from_ref(s)].concat();
        if !modules.contains(&next) {
            break;
        }
        base = next;
    }
    Some(base)
}

/// The edge a use makes: between the two modules where the paths part, or none between a module and its
/// ancestor or descendant.
pub fn edge(from: &[String], to: &[String]) -> Option<(ModulePath, ModulePath)> {
    let common = from.iter().zip(to).take_while(|(a, b)| a == b).count();
    if common == from.len() || common == to.len() {
        return None;
    }
    Some((from[..=common].to_vec(), to[..=common].to_vec()))
}

/// The circles among the edges: one per strongly connected set of modules, as the modules in order (the
/// first repeated at the end) with where each names the next.
pub fn circles(edges: &BTreeMap<(ModulePath, ModulePath), Use>) -> Vec<Vec<(ModulePath, Use)>> {
    let mut next: BTreeMap<&ModulePath, Vec<&ModulePath>> = BTreeMap::new();
    for (from, to) in edges.keys() {
        next.entry(from).or_default().push(to);
    }
    let mut seen: BTreeSet<&ModulePath> = BTreeSet::new();
    let mut found = Vec::new();
    for start in next.keys() {
        if seen.contains(start) {
            continue;
        }
        // The shortest way back to `start`, breadth first.
        let mut back: BTreeMap<&ModulePath, &ModulePath> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([*start]);
        let mut closed = None;
        while let Some(m) = queue.pop_front() {
            for n in next.get(m).into_iter().flatten() {
                if *n == *start {
                    closed = Some(m);
                    break;
                }
                if !back.contains_key(n) {
                    back.insert(n, m);
                    queue.push_back(n);
                }
            }
            if closed.is_some() {
                break;
            }
        }
        let Some(mut last) = closed else {
            continue;
        };
        let mut ring = vec![*start];
        let mut tail = vec![last];
        while last != *start {
            match back.get(last) {
                Some(prev) if *prev != *start => {
                    tail.push(prev);
                    last = prev;
                }
                _ => break,
            }
        }
        tail.reverse();
        if tail.first() == Some(start) {
            tail.remove(0);
        }
        ring.extend(tail);
        ring.push(start);
        let circle: Vec<(ModulePath, Use)> = ring
            .windows(2)
            .filter_map(|w| {
                let at = edges.get(&(w[0].clone(), w[1].clone()))?;
                Some((w[0].clone(), at.clone()))
            })
            .collect();
        seen.extend(ring.iter().copied());
        found.push(circle);
    }
    found
}

/// `a::b`, or `crate root`.
pub fn show(path: &[String]) -> String {
    if path.is_empty() {
        "crate root".to_string()
    } else {
        path.join("::")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &[&str], source: &str) -> ModuleFile {
        ModuleFile {
            file: format!("src/{}.rs", path.join("/")),
            path: path.iter().map(|s| s.to_string()).collect(),
            code: Code::new(source),
        }
    }

    fn graph(files: &[ModuleFile]) -> BTreeMap<(ModulePath, ModulePath), Use> {
        let mut modules: BTreeSet<ModulePath> = files.iter().map(|f| f.path.clone()).collect();
        modules.extend(files.iter().flat_map(declared));
        let mut edges = BTreeMap::new();
        for f in files {
            for (from, to, at) in uses(f, &modules) {
                if let Some(e) = edge(&from, &to) {
                    edges.entry(e).or_insert(at);
                }
            }
        }
        edges
    }

    fn named(circle: &[(ModulePath, Use)]) -> Vec<String> {
        circle
            .iter()
            .map(|(m, at)| format!("{} {}:{}", show(m), at.file, at.line))
            .collect()
    }

    #[test]
    fn a_circle_between_two_modules_is_found_with_its_lines() {
        let files = [
            file(&[], "mod config;\nmod credentials;\npub use config::Config;"),
            file(&["config"], "use std::x;\nuse crate::credentials::Source;"),
            file(&["credentials"], "\n\nfn f() { let s = super::config::SCOPE; }"),
        ];
        let found = circles(&graph(&files));
        assert_eq!(found.len(), 1);
        assert_eq!(
            named(&found[0]),
            ["config src/config.rs:2", "credentials src/credentials.rs:3"]
        );
    }

    #[test]
    fn a_longer_circle_through_nested_modules_is_found() {
        let files = [
            file(&[], "mod a;\nmod b;\nmod c;"),
            file(&["a"], "mod inner;"),
            file(&["a", "inner"], "use crate::b::{x, y::z};"),
            file(&["b"], "use super::c as other;"),
            file(&["c"], "fn f() { crate::a::g() }"),
        ];
        let found = circles(&graph(&files));
        assert_eq!(found.len(), 1);
        let ring: Vec<String> = found[0].iter().map(|(m, _)| show(m)).collect();
        assert_eq!(ring, ["a", "b", "c"]);
    }

    #[test]
    fn parents_children_and_one_way_uses_are_no_circle() {
        let files = [
            file(&[], "mod a;\nmod b;\npub use a::A;\nfn f() -> crate::b::B {}"),
            file(&["a"], "use crate::Error;\nuse super::*;\nuse crate::b::B;"),
            file(
                &["b"],
                "use crate::{Error, Result};\nmod nested { use super::super::Error; }",
            ),
        ];
        assert!(circles(&graph(&files)).is_empty());
    }

    #[test]
    fn test_modules_make_no_edges() {
        let files = [
            file(&[], "mod a;\nmod b;"),
            file(&["a"], "use crate::b::B;"),
            file(&["b"], "#[cfg(test)]\nmod tests {\n use crate::a::A;\n}"),
        ];
        assert!(circles(&graph(&files)).is_empty());
    }
}
