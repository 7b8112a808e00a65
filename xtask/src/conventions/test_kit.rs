//! The source crates' tests build their fixtures with one kit, `extdns_source::pipeline::testing` (in
//! crates/source): it was copied into every source crate once, folded back, and a new source crate starts by
//! copying its neighbour's tests. A test of a source crate (`crates/source-*`) that defines its own free
//! function of a name the kit exports (its `pub use` lines) is such a copy: it should import the kit's.
//! Methods (a first parameter `self`) and library code are not tests' fixtures and are left alone.

use std::collections::BTreeSet;

use super::code::{Code, Token, strip_comments_and_literals, tokenize};

/// Where the kit is, from the workspace root; its `pub use` lines name what it exports.
pub const KIT: &str = "crates/source/src/pipeline/testing/mod.rs";

/// The function names the kit exports: the lower-case names of its `pub use` lines (types are not copied
/// under their name often enough to matter, and a source may well have a `Flags` of its own to wrap).
pub fn names(kit: &str) -> BTreeSet<String> {
    let tokens = tokenize(&strip_comments_and_literals(kit));
    let mut out = BTreeSet::new();
    let mut i = 0;
    while i + 1 < tokens.len() {
        if tokens[i].is("pub") && tokens[i + 1].is("use") {
            let mut j = i + 2;
            while j < tokens.len() && !tokens[j].is(";") {
                let t = &tokens[j];
                let next = tokens.get(j + 1);
                let is_leaf = t.is_ident() && !next.is_some_and(|n| n.is("::"));
                if is_leaf && t.text.starts_with(|c: char| c.is_ascii_lowercase()) && !t.is("self") {
                    out.insert(t.text.clone());
                }
                j += 1;
            }
            i = j;
        }
        i += 1;
    }
    out
}

/// The free functions of test code in `source` named as the kit's: each one's byte offset and name. In a
/// library file (`library`), only the items under `#[cfg(test)]` are test code; any other file of a source
/// crate's tests is test code whole.
pub fn copies(source: &str, library: bool, names: &BTreeSet<String>) -> Vec<(usize, String)> {
    let reduced = strip_comments_and_literals(source);
    let tokens = tokenize(&reduced);
    let kept: BTreeSet<usize> = if library {
        Code::new(source).tokens.iter().map(|t| t.offset).collect()
    } else {
        BTreeSet::new()
    };
    let mut out = Vec::new();
    for (i, t) in tokens.iter().enumerate() {
        if !t.is("fn") || kept.contains(&t.offset) {
            continue;
        }
        let Some(name) = tokens.get(i + 1).filter(|n| names.contains(&n.text)) else {
            continue;
        };
        if !is_method(&tokens[i + 2..]) {
            out.push((t.offset, name.text.clone()));
        }
    }
    out
}

/// Whether the parameter list starting here (after generics, if any) opens with `self`.
fn is_method(rest: &[Token]) -> bool {
    let Some(open) = rest.iter().position(|t| t.is("(")) else {
        return false;
    };
    rest[open + 1..]
        .iter()
        .take_while(|t| !t.is(",") && !t.is(")"))
        .any(|t| t.is("self"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kit() -> BTreeSet<String> {
        names(
            "//! The kit.\nmod render;\npub use checks::{check_affected, Flags};\npub use render::{lines, render};\n\
             pub use store::load;\nuse std::sync::Arc;\n",
        )
    }

    #[test]
    fn the_kit_names_are_the_lower_case_names_it_exports() {
        let expected: BTreeSet<String> = ["check_affected", "lines", "load", "render"]
            .into_iter()
            .map(String::from)
            .collect();
        assert_eq!(kit(), expected);
    }

    #[test]
    fn a_test_file_defining_a_kit_function_is_a_copy() {
        let tests = "use super::*;\n\n/// Renders.\nfn render(e: &Endpoint) -> String {\n    String::new()\n}\n\
                     fn run() {}\npub(crate) fn load<'a>(x: &'a str) {}\n";
        let found: Vec<String> = copies(tests, false, &kit()).into_iter().map(|(_, n)| n).collect();
        assert_eq!(found, ["render", "load"]);
    }

    #[test]
    fn methods_comments_strings_and_library_code_are_not_copies() {
        let library = "fn lines(v: &[&str]) -> usize { 0 }\n// fn render(x: u8) {}\nconst S: &str = \"fn load(x)\";\n\
                       impl World {\n    fn load(&self) -> Store { todo() }\n    fn render(mut self, x: u8) {}\n}\n\
                       #[cfg(test)]\nmod tests {\n    fn render(e: &Endpoint) -> String { String::new() }\n}\n";
        let found: Vec<String> = copies(library, true, &kit()).into_iter().map(|(_, n)| n).collect();
        assert_eq!(found, ["render"], "only the function of the test module");
        assert_eq!(
            copies(library, false, &kit()).len(),
            2,
            "lines and the test module's render, read as tests"
        );
    }
}
