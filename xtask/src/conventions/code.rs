//! A Rust source file reduced to what the checks read: its code without comments, without the text of string
//! and character literals, and without the items `#[cfg(test)]` keeps out of the library, then cut into tokens.
//!
//! Every character keeps its line: what is removed becomes spaces (a literal keeps its quotes, `"   "`), so a
//! finding in the reduced text names the line of the file. Not a parser: the checks need paths, generics and
//! literals, and a tokenizer of a few dozen lines keeps xtask at std + anyhow + serde_json.

/// One token of reduced code: an identifier, a string literal (`"…"`, its text blanked), `::`, `->`, `=>`, or
/// one other punctuation character; `offset` is its byte offset in the reduced text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    pub text: String,
    pub offset: usize,
}

impl Token {
    pub fn is(&self, text: &str) -> bool {
        self.text == text
    }

    pub fn is_ident(&self) -> bool {
        self.text.starts_with(|c: char| c.is_alphabetic() || c == '_')
    }

    pub fn is_string(&self) -> bool {
        self.text.starts_with('"')
    }
}

/// A file's reduced code and what the reduction found.
pub struct Code {
    pub text: String,
    pub tokens: Vec<Token>,
    /// `#![cfg(test)]` at the top: the whole file is a test.
    pub test_only: bool,
}

impl Code {
    pub fn new(source: &str) -> Code {
        let mut text = strip_comments_and_literals(source);
        let tokens = tokenize(&text);
        let (test_ranges, test_only) = test_items(&tokens);
        for (start, end) in test_ranges {
            blank(&mut text, start, end);
        }
        let tokens = tokenize(&text);
        Code {
            text,
            tokens,
            test_only,
        }
    }

    /// The 1-based line of a byte offset in the reduced text (the same line as in the file).
    pub fn line_of(&self, offset: usize) -> usize {
        line_of(&self.text, offset)
    }
}

pub fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

/// Comments become spaces; a string, raw string or character literal keeps its quotes and loses its text.
pub fn strip_comments_and_literals(source: &str) -> String {
    let chars: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
        } else if let Some(hashes) = raw_string_start(&chars, i) {
            // r"…", r#"…"#, br"…": the prefix and hashes blanked, the quotes kept.
            let open = i + 1 + hashes + usize::from(c == 'b');
            for _ in i..open {
                out.push(' ');
            }
            out.push('"');
            i = open + 1;
            while i < chars.len() {
                let closes = chars[i] == '"' && (1..=hashes).all(|h| chars.get(i + h) == Some(&'#'));
                if closes {
                    out.push('"');
                    for _ in 0..hashes {
                        out.push(' ');
                    }
                    i += 1 + hashes;
                    break;
                }
                out.push(blank(chars[i]));
                i += 1;
            }
        } else if c == '"' {
            out.push('"');
            i += 1;
            while i < chars.len() {
                if chars[i] == '\\' {
                    out.push(' ');
                    if let Some(&escaped) = chars.get(i + 1) {
                        out.push(blank(escaped));
                    }
                    i += 2;
                } else if chars[i] == '"' {
                    out.push('"');
                    i += 1;
                    break;
                } else {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
        } else if c == '\'' && is_char_literal(&chars, i) {
            out.push('\'');
            i += 1;
            while i < chars.len() && chars[i] != '\'' {
                let step = if chars[i] == '\\' { 2 } else { 1 };
                for k in 0..step {
                    if let Some(&ch) = chars.get(i + k) {
                        out.push(blank(ch));
                    }
                }
                i += step;
            }
            if i < chars.len() {
                out.push('\'');
                i += 1;
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// At `i`, `r"`, `r#…#"`, `br"` or `br#…#"` starting a raw string (not the end of an identifier such as
/// `for`): the number of hashes.
fn raw_string_start(chars: &[char], i: usize) -> Option<usize> {
    let starts_word = i == 0 || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
    if !starts_word {
        return None;
    }
    let r = match (chars[i], chars.get(i + 1)) {
        ('r', _) => i,
        ('b', Some('r')) => i + 1,
        _ => return None,
    };
    let hashes = chars[r + 1..].iter().take_while(|c| **c == '#').count();
    (chars.get(r + 1 + hashes) == Some(&'"')).then_some(hashes)
}

/// A `'` opening a character literal (`'a'`, `'\n'`, `'\u{1F600}'`), not a lifetime or label (`'a`, `'static`).
fn is_char_literal(chars: &[char], i: usize) -> bool {
    match chars.get(i + 1) {
        Some('\\') => true,
        Some(_) => chars.get(i + 2) == Some(&'\''),
        None => false,
    }
}

fn blank(text: &mut String, start: usize, end: usize) {
    let end = end.min(text.len());
    let replaced: String = text[start..end]
        .chars()
        .map(|c| if c == '\n' { '\n' } else { ' ' })
        .collect();
    text.replace_range(start..end, &replaced);
}

pub fn tokenize(text: &str) -> Vec<Token> {
    let bytes = text.as_bytes();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        let start = i;
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80 {
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_' || bytes[i] >= 0x80) {
                i += 1;
            }
        } else if c == b'"' {
            i += 1;
            while i < bytes.len() && bytes[i] != b'"' {
                i += 1;
            }
            i = (i + 1).min(bytes.len());
        } else if matches!(&bytes[i..(i + 2).min(bytes.len())], b"::" | b"->" | b"=>") {
            i += 2;
        } else {
            // One character, whole (a stray non-ASCII byte cannot start one: handled with identifiers).
            i += 1;
        }
        tokens.push(Token {
            text: text[start..i].to_string(),
            offset: start,
        });
    }
    tokens
}

/// The byte ranges of items under a `cfg` attribute that names `test` (and not `not(...)`; a `mod name;`
/// among them, so its file is never read as library code), and whether the file opens with `#![cfg(test)]`.
fn test_items(tokens: &[Token]) -> (Vec<(usize, usize)>, bool) {
    let mut ranges = Vec::new();
    let mut test_only = false;
    let mut i = 0;
    while i < tokens.len() {
        let Some((inner, after)) = attribute(tokens, i) else {
            i += 1;
            continue;
        };
        if !is_test_cfg(&tokens[i..after]) {
            i = after;
            continue;
        }
        if inner {
            test_only = true;
            i = after;
            continue;
        }
        // Further attributes belong to the same item.
        let mut item = after;
        while let Some((false, next)) = attribute(tokens, item) {
            item = next;
        }
        let end = item_end(tokens, item);
        let last = tokens.get(end.saturating_sub(1).max(item));
        let stop = last.map_or(usize::MAX, |t| t.offset + t.text.len());
        ranges.push((tokens[i].offset, stop));
        i = end.max(i + 1);
    }
    (ranges, test_only)
}

/// `#[…]` or `#![…]` at `i`: whether it is inner, and the index after its `]`.
fn attribute(tokens: &[Token], i: usize) -> Option<(bool, usize)> {
    if !tokens.get(i)?.is("#") {
        return None;
    }
    let inner = tokens.get(i + 1)?.is("!");
    let open = i + 1 + usize::from(inner);
    if !tokens.get(open)?.is("[") {
        return None;
    }
    let close = matching(tokens, open)?;
    Some((inner, close + 1))
}

fn is_test_cfg(attribute: &[Token]) -> bool {
    let words: Vec<&str> = attribute.iter().map(|t| t.text.as_str()).collect();
    words.contains(&"cfg") && words.contains(&"test") && !words.contains(&"not")
}

/// The index after the item starting at `start`: after its `;` at depth 0, or after the `}` closing its body.
pub fn item_end(tokens: &[Token], start: usize) -> usize {
    let mut depth = 0usize;
    let mut i = start;
    while i < tokens.len() {
        match tokens[i].text.as_str() {
            "(" | "[" => depth += 1,
            ")" | "]" => depth = depth.saturating_sub(1),
            "{" => {
                if depth == 0 {
                    return matching(tokens, i).map_or(tokens.len(), |close| close + 1);
                }
                depth += 1;
            }
            "}" => depth = depth.saturating_sub(1),
            ";" if depth == 0 => return i + 1,
            _ => {}
        }
        i += 1;
    }
    tokens.len()
}

/// The index of the bracket closing the one at `open` (`(`, `[` or `{`), counting all three kinds.
pub fn matching(tokens: &[Token], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, t) in tokens.iter().enumerate().skip(open) {
        match t.text.as_str() {
            "(" | "[" | "{" => depth += 1,
            ")" | "]" | "}" => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(code: &Code) -> Vec<&str> {
        code.tokens.iter().map(|t| t.text.as_str()).collect()
    }

    #[test]
    fn comments_and_literal_text_are_blanked_on_their_lines() {
        let code = Code::new("let a = \"Result<(), String>\"; // Result<(), String>\nlet b = 'x'; /* a\n b */ c");
        let blanked = format!("\"{}\"", " ".repeat("Result<(), String>".len()));
        let expected = ["let", "a", "=", &blanked, ";", "let", "b", "=", "'", "'", ";", "c"];
        assert_eq!(words(&code), expected);
        let c = code.tokens.last().map(|t| t.offset).unwrap_or_default();
        assert_eq!(code.line_of(c), 3);
    }

    #[test]
    fn raw_strings_and_lifetimes_are_told_apart() {
        let code = Code::new("fn f<'a>(x: &'a str) -> &'static str { r#\"a \" b\"# }");
        let w = words(&code);
        assert!(w.contains(&"static"), "{w:?}");
        assert_eq!(w.iter().filter(|t| t.starts_with('"')).count(), 1, "{w:?}");
        assert!(!w.contains(&"b"), "{w:?}");
    }

    #[test]
    fn test_items_are_removed() {
        let code = Code::new(
            "mod a;\n#[cfg(test)]\nmod tests;\n#[cfg(test)]\n#[allow(x)]\nmod inline {\n use super::*;\n}\n#[cfg(not(test))]\nfn kept() {}\n",
        );
        assert_eq!(
            words(&code),
            [
                "mod", "a", ";", "#", "[", "cfg", "(", "not", "(", "test", ")", ")", "]", "fn", "kept", "(", ")", "{",
                "}"
            ]
        );
        assert!(!code.test_only);
        assert!(Code::new("#![cfg(test)]\nuse x;").test_only);
    }
}
