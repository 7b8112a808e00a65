//! Errors made of strings in library code: `Result<_, String>` (or `&str`), and a `Box<dyn Error>` built from
//! a string (`Box::<dyn Error>::from(format!(…))`, `Err("…".into())`, `Err(format!(…).into())`,
//! `Err(x.to_string().into())`). A caller can neither match such an error nor find its cause: each crate has a
//! `thiserror` enum instead (DESIGN.md, "Errors").
//!
//! Read from the tokens of reduced code ([`super::code`]), so a type split over lines is found and text inside
//! comments and string literals is not. What it cannot see without types, it does not guess: a `String`
//! variable turned into an error by `.into()` far from an `Err(`.

use super::code::{Code, Token, matching};

/// What was found: the byte offset where it starts and what it is.
pub type Finding = (usize, String);

pub fn find(code: &Code) -> Vec<Finding> {
    let t = &code.tokens;
    let mut found = Vec::new();
    for i in 0..t.len() {
        if let Some(error) = string_error_type(t, i) {
            found.push((t[i].offset, format!("`Result<_, {error}>`: an error made of a string")));
        }
        if boxed_from_string(t, i) {
            found.push((t[i].offset, "a `Box<dyn Error>` built from a string".to_string()));
        }
        if err_into_from_string(t, i) {
            found.push((t[i].offset, "an error built from a string by `.into()`".to_string()));
        }
    }
    found
}

/// Error types that are strings.
const STRING_TYPES: [&str; 5] = [
    "String",
    "std::string::String",
    "alloc::string::String",
    "&str",
    "&'staticstr",
];

/// At `i`, `Result<T, E>` (or `Result::<T, E>`) with `E` a string type: `E` as written.
fn string_error_type(t: &[Token], i: usize) -> Option<String> {
    if !t[i].is("Result") {
        return None;
    }
    let mut open = i + 1;
    if t.get(open)?.is("::") {
        open += 1;
    }
    if !t.get(open)?.is("<") {
        return None;
    }
    let args = generic_args(t, open)?;
    match args.as_slice() {
        [_, error] => {
            let joined: String = error.iter().map(|t| t.text.as_str()).collect();
            STRING_TYPES.contains(&joined.as_str()).then_some(joined)
        }
        _ => None,
    }
}

/// The top-level arguments of the generic list opening at `open` (`<`), each as its tokens; `None` when the
/// list does not close before the end of a statement (a `<` that is a comparison).
fn generic_args(t: &[Token], open: usize) -> Option<Vec<&[Token]>> {
    let mut depth = 0usize;
    let mut args = Vec::new();
    let mut start = open + 1;
    for (i, token) in t.iter().enumerate().skip(open) {
        match token.text.as_str() {
            "<" | "(" | "[" => depth += 1,
            ">" | ")" | "]" => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    // `Result<T, E,>`: a trailing comma ends the list, it does not add an argument.
                    if i > start {
                        args.push(&t[start..i]);
                    }
                    return Some(args);
                }
            }
            "," if depth == 1 => {
                args.push(&t[start..i]);
                start = i + 1;
            }
            ";" | "{" | "}" => return None,
            _ => {}
        }
    }
    None
}

/// At `i`, `Box::<dyn …>::from(s)` or `<Box<dyn …>>::from(s)` with `s` a string.
fn boxed_from_string(t: &[Token], i: usize) -> bool {
    if !t[i].is("Box") {
        return false;
    }
    let mut open = i + 1;
    if t.get(open).is_some_and(|x| x.is("::")) {
        open += 1;
    }
    if !(t.get(open).is_some_and(|x| x.is("<")) && t.get(open + 1).is_some_and(|x| x.is("dyn"))) {
        return false;
    }
    let Some(args) = generic_args(t, open) else {
        return false;
    };
    let mut after = open + 1 + args.iter().map(|a| a.len()).sum::<usize>() + args.len();
    if t.get(after).is_some_and(|x| x.is(">")) {
        after += 1;
    }
    let from_call = t.get(after).is_some_and(|x| x.is("::"))
        && t.get(after + 1).is_some_and(|x| x.is("from"))
        && t.get(after + 2).is_some_and(|x| x.is("("));
    from_call && matching(t, after + 2).is_some_and(|close| is_string_expression(&t[after + 3..close]))
}

/// At `i`, `Err(s.into())` with `s` a string.
fn err_into_from_string(t: &[Token], i: usize) -> bool {
    if !(t[i].is("Err") && t.get(i + 1).is_some_and(|x| x.is("("))) {
        return false;
    }
    let Some(close) = matching(t, i + 1) else {
        return false;
    };
    let inner = &t[i + 2..close];
    let texts: Vec<&str> = inner.iter().map(|t| t.text.as_str()).collect();
    match texts.as_slice() {
        [.., ".", "into", "(", ")"] => is_string_expression(&inner[..inner.len() - 4]),
        _ => false,
    }
}

/// A string literal, a `format!(…)`, `String::from(…)`, or an expression ending in `.to_string()` or
/// `.to_owned()`.
fn is_string_expression(e: &[Token]) -> bool {
    let texts: Vec<&str> = e.iter().map(|t| t.text.as_str()).collect();
    let whole_call = |from: usize| {
        e.get(from)
            .is_some_and(|x| x.is("("))
            .then(|| matching(e, from))
            .flatten()
            == Some(e.len().saturating_sub(1))
    };
    match texts.as_slice() {
        [s] => e[0].is_string() && !s.is_empty(),
        ["format", "!", "(", ..] => whole_call(2),
        ["String", "::", "from", "(", ..] => whole_call(3),
        [_, .., ".", "to_string" | "to_owned", "(", ")"] => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(source: &str) -> Vec<usize> {
        let code = Code::new(source);
        find(&code)
            .into_iter()
            .map(|(offset, _)| code.line_of(offset))
            .collect()
    }

    /// Asserts that none of `sources` is flagged, naming the one that is.
    fn not_flagged(sources: &[&str]) {
        for source in sources {
            assert_eq!(lines(source), [] as [usize; 0], "flagged: {source}");
        }
    }

    #[test]
    fn a_result_with_a_string_error_is_found_across_lines() {
        assert_eq!(lines("fn a() {}\nfn f() -> Result<\n    (),\n    String,\n> {}"), [2]);
        assert_eq!(lines("fn f(x: Result<Vec<u8>, &'static str>) {}"), [1]);
        assert_eq!(lines("let r = Result::<(), std::string::String>::Ok(());"), [1]);
    }

    #[test]
    fn strings_inside_the_ok_type_or_other_errors_are_not_flagged() {
        not_flagged(&[
            "fn f() -> Result<Vec<String>, Error> {}",
            "fn f() -> Result<String> {}",
            "fn f() -> Result<HashMap<String, String>, Error> {}",
            "fn f() -> Result<Box<dyn Fn(&str) -> String>, Error> {}",
            "if a < b { Result }",
        ]);
    }

    #[test]
    fn comments_and_string_literals_are_not_flagged() {
        not_flagged(&[
            "// fn f() -> Result<(), String>\n/// Result<(), String>\nlet s = \"Result<(), String>\";",
            "let s = r#\"Err(\"x\".into())\"#;",
        ]);
    }

    #[test]
    fn test_modules_are_not_library_code() {
        not_flagged(&["#[cfg(test)]\nmod tests {\n fn f() -> Result<(), String> { Err(\"x\".into()) }\n}"]);
    }

    #[test]
    fn boxed_errors_from_strings_are_found() {
        assert_eq!(lines("let e = Box::<dyn Error>::from(format!(\"{x}\"));"), [1]);
        assert_eq!(lines("let e = <Box<dyn Error + Send>>::from(\"bad\");"), [1]);
        assert_eq!(
            lines("return Err(\"bad\".into());\nErr(format!(\"{x}\").into())\nErr(e.to_string().into())"),
            [1, 2, 3]
        );
    }

    #[test]
    fn errors_converted_from_errors_are_not_flagged() {
        not_flagged(&[
            "return Err(e.into());",
            "Err(Error::Parse(format!(\"{x}\")))",
            "let e = Box::<dyn Error>::from(io_error);",
            "Err(format!(\"{a}\").len().into())",
        ]);
    }
}
