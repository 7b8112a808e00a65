//! Zone-file escapes decoded by hand. `\DDD` (the byte of that decimal value) and `\X` (the character X)
//! were decoded in three places (SvcParam values, dns-wire's TXT strings and names), each with its own idea
//! of `\256` and a trailing backslash, until they were folded into `extdns_endpoint::escape::decode`. A
//! reader of names or character-strings starts by copying its neighbour, so the copy is named here.
//!
//! A copy is found by what every one of them had to write: the three digits after a backslash sliced as
//! `text.get(i + 1..i + 4)`, that is `X + 1..X + 4` over one index `X`, in library code (comments,
//! string literals and `#[cfg(test)]` items are not read). The home of the rule itself is exempt.

use super::code::{Code, Token};

/// The one place that decodes escapes, from the workspace root.
pub const HOME: &str = "crates/endpoint/src/escape.rs";

/// Where the rule is taken from, for the message.
pub const INSTEAD: &str = "extdns_endpoint::escape::decode";

/// The byte offsets in `code` where the three digits of an escape are sliced by hand (`X + 1..X + 4`).
pub fn find(code: &Code) -> Vec<usize> {
    let t = &code.tokens;
    (0..t.len())
        .filter(|&i| digits_sliced(t, i))
        .map(|i| t[i].offset)
        .collect()
}

/// At `i`: `X + 1 .. X + 4` with the same identifier `X` both times.
fn digits_sliced(t: &[Token], i: usize) -> bool {
    let Some(run) = t.get(i..i + 8) else {
        return false;
    };
    let shape = ["", "+", "1", ".", ".", "", "+", "4"];
    run[0].is_ident()
        && run[0].text == run[5].text
        && run
            .iter()
            .zip(shape)
            .all(|(token, want)| want.is_empty() || token.is(want))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_digits_sliced_after_a_backslash_are_a_copy() {
        let source = "fn f(b: &[u8], i: usize) {\n    let d = b.get(i + 1..i + 4).filter(|d| d.len() == 3);\n}\n";
        let code = Code::new(source);
        let found = find(&code);
        assert_eq!(found.len(), 1);
        assert_eq!(code.line_of(found[0]), 2);
    }

    #[test]
    fn other_ranges_comments_strings_and_tests_are_not() {
        let source = "fn f(b: &[u8], i: usize, j: usize) {\n    let a = b.get(i + 1..j + 4);\n    \
                      let c = b.get(i + 1..i + 3);\n    // b.get(i + 1..i + 4)\n    let s = \"i + 1..i + 4\";\n}\n\
                      #[cfg(test)]\nmod tests {\n    fn g(b: &[u8], i: usize) { b.get(i + 1..i + 4); }\n}\n";
        assert!(find(&Code::new(source)).is_empty());
    }
}
