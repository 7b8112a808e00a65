//! Printing values the way Go's `fmt` does, for `{{.}}` output, `print`, `println` and `printf`.

use std::fmt::Write;

use crate::Value;

/// Go's `%v`.
pub(super) fn go_v(v: &Value) -> String {
    let mut s = String::new();
    write_v(&mut s, v);
    s
}

pub(super) fn write_v(out: &mut String, v: &Value) {
    match v {
        Value::Missing => out.push_str("<no value>"),
        Value::Nil => out.push_str("<nil>"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Value::Float(f) => out.push_str(&go_float_g(*f, None)),
        Value::Str(s) => out.push_str(s),
        Value::List(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                write_nested(out, item);
            }
            out.push(']');
        }
        Value::Map(m) => {
            out.push_str("map[");
            for (i, (k, item)) in m.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                out.push_str(k);
                out.push(':');
                write_nested(out, item);
            }
            out.push(']');
        }
        Value::Struct(_, fields) => {
            out.push('{');
            for (i, (_, item)) in fields.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                write_nested(out, item);
            }
            out.push('}');
        }
    }
}

/// Inside a container Go prints nil as `<nil>` and absent values cannot occur.
fn write_nested(out: &mut String, v: &Value) {
    match v {
        Value::Missing => out.push_str("<nil>"),
        other => write_v(out, other),
    }
}

/// Go's `%g`/`%v` for a float64: shortest representation, exponent form when the exponent is < -4 or
/// >= the precision (6 for the shortest form... as Go's strconv), exponent with at least two digits.
pub(super) fn go_float_g(f: f64, precision: Option<usize>) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf".into() } else { "-Inf".into() };
    }
    // Shortest (or `precision` significant digits) in scientific form: "d.ddde±x".
    let sci = match precision {
        Some(p) => format!("{:.*e}", p.max(1) - 1, f),
        None => format!("{f:e}"),
    };
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits = mantissa.trim_start_matches('-').replace('.', "");
    let digits = if precision.is_some() {
        digits.trim_end_matches('0').to_string()
    } else {
        digits
    };
    let digits = if digits.is_empty() { "0".to_string() } else { digits };
    let eprec = match precision {
        None => 6,
        Some(p) => {
            let p = p.max(1) as i32;
            if p > digits.len() as i32 && digits.len() as i32 > exp {
                digits.len() as i32
            } else {
                p
            }
        }
    };
    let neg = f.is_sign_negative();
    let sign = if neg { "-" } else { "" };
    if exp < -4 || exp >= eprec {
        let mut m = digits[..1].to_string();
        if digits.len() > 1 {
            m.push('.');
            m.push_str(&digits[1..]);
        }
        let esign = if exp < 0 { '-' } else { '+' };
        format!("{sign}{m}e{esign}{:02}", exp.abs())
    } else if exp < 0 {
        format!("{sign}0.{}{}", "0".repeat((-exp - 1) as usize), digits)
    } else {
        let int_len = (exp + 1) as usize;
        if digits.len() <= int_len {
            format!("{sign}{}{}", digits, "0".repeat(int_len - digits.len()))
        } else {
            format!("{sign}{}.{}", &digits[..int_len], &digits[int_len..])
        }
    }
}

/// Go's `%e` with a precision (default 6).
fn go_float_e(f: f64, precision: usize, upper: bool) -> String {
    if !f.is_finite() {
        return go_float_g(f, None);
    }
    let sci = format!("{:.*e}", precision, f);
    let (m, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let esign = if exp < 0 { '-' } else { '+' };
    let e = if upper { 'E' } else { 'e' };
    format!("{m}{e}{esign}{:02}", exp.abs())
}

/// Go's `fmt.Sprint`: operands printed with `%v`, a space between two operands when neither is a string.
pub(super) fn sprint(args: &[Value]) -> String {
    let mut out = String::new();
    for (i, a) in args.iter().enumerate() {
        if i > 0 && !matches!(a, Value::Str(_)) && !matches!(args[i - 1], Value::Str(_)) {
            out.push(' ');
        }
        write_nested(&mut out, a);
    }
    out
}

/// Go's `fmt.Sprintln`: spaces between all operands and a final newline.
pub(super) fn sprintln(args: &[Value]) -> String {
    let mut out = String::new();
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        write_nested(&mut out, a);
    }
    out.push('\n');
    out
}

/// Go's `strconv.Quote` (close enough: Rust's debug escapes differ only for rare control characters).
pub(super) fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{b}' => out.push_str("\\v"),
            c if c.is_control() => {
                let _ = if (c as u32) < 0x80 {
                    write!(out, "\\x{:02x}", c as u32)
                } else {
                    write!(out, "\\u{:04x}", c as u32)
                };
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[derive(Default)]
struct Spec {
    minus: bool,
    plus: bool,
    zero: bool,
    space: bool,
    sharp: bool,
    width: Option<usize>,
    precision: Option<usize>,
}

fn pad(s: String, spec: &Spec, numeric: bool) -> String {
    let Some(width) = spec.width else { return s };
    let len = s.chars().count();
    if len >= width {
        return s;
    }
    let fill = width - len;
    if spec.minus {
        format!("{s}{}", " ".repeat(fill))
    } else if spec.zero && numeric {
        let (sign, digits) = match s.strip_prefix(['-', '+']) {
            Some(rest) => (&s[..1], rest),
            None => ("", s.as_str()),
        };
        format!("{sign}{}{digits}", "0".repeat(fill))
    } else {
        format!("{}{s}", " ".repeat(fill))
    }
}

fn bad_verb(verb: char, v: &Value) -> String {
    match v {
        Value::Missing | Value::Nil => format!("%!{verb}(<nil>)"),
        other => format!("%!{verb}({}={})", other.type_name(), go_v(other)),
    }
}

fn signed(i: i64, body: String, spec: &Spec) -> String {
    if i < 0 {
        format!("-{body}")
    } else if spec.plus {
        format!("+{body}")
    } else if spec.space {
        format!(" {body}")
    } else {
        body
    }
}

fn format_one(verb: char, spec: &Spec, v: &Value) -> String {
    match (verb, v) {
        ('v', _) => pad(go_v_nested(v), spec, false),
        ('s', Value::Str(s)) => {
            let s = match spec.precision {
                Some(p) => s.chars().take(p).collect(),
                None => s.clone(),
            };
            pad(s, spec, false)
        }
        ('s', Value::List(_) | Value::Map(_) | Value::Struct(..)) => pad(go_v(v), spec, false),
        ('q', Value::Str(s)) => pad(go_quote(s), spec, false),
        ('q', Value::Int(i)) => pad(
            char::from_u32(u32::try_from(*i).unwrap_or(0xFFFD)).map_or("'\u{FFFD}'".into(), |c| format!("{c:?}")),
            spec,
            false,
        ),
        ('d', Value::Int(i)) => pad(signed(*i, i.unsigned_abs().to_string(), spec), spec, true),
        ('b', Value::Int(i)) => pad(signed(*i, format!("{:b}", i.unsigned_abs()), spec), spec, true),
        ('o', Value::Int(i)) => {
            let body = format!("{}{:o}", if spec.sharp { "0" } else { "" }, i.unsigned_abs());
            pad(signed(*i, body, spec), spec, true)
        }
        ('x' | 'X', Value::Int(i)) => {
            let mut body = format!("{:x}", i.unsigned_abs());
            if spec.sharp {
                body = format!("0x{body}");
            }
            if verb == 'X' {
                body = body.to_uppercase();
            }
            pad(signed(*i, body, spec), spec, true)
        }
        ('x' | 'X', Value::Str(s)) => {
            let mut body: String = s.bytes().map(|b| format!("{b:02x}")).collect();
            if verb == 'X' {
                body = body.to_uppercase();
            }
            pad(body, spec, false)
        }
        ('c', Value::Int(i)) => pad(
            char::from_u32(u32::try_from(*i).unwrap_or(0xFFFD))
                .unwrap_or('\u{FFFD}')
                .to_string(),
            spec,
            false,
        ),
        ('t', Value::Bool(b)) => pad(b.to_string(), spec, false),
        ('f' | 'F', Value::Float(f)) => {
            let body = format!("{:.*}", spec.precision.unwrap_or(6), f.abs());
            let body = if f.is_sign_negative() {
                format!("-{body}")
            } else {
                plus(body, spec)
            };
            pad(body, spec, true)
        }
        ('e' | 'E', Value::Float(f)) => pad(
            plus(go_float_e(*f, spec.precision.unwrap_or(6), verb == 'E'), spec),
            spec,
            true,
        ),
        ('g' | 'G', Value::Float(f)) => {
            let s = go_float_g(*f, spec.precision);
            pad(plus(if verb == 'G' { s.to_uppercase() } else { s }, spec), spec, true)
        }
        _ => bad_verb(verb, v),
    }
}

fn plus(body: String, spec: &Spec) -> String {
    if spec.plus && !body.starts_with('-') {
        format!("+{body}")
    } else {
        body
    }
}

fn go_v_nested(v: &Value) -> String {
    let mut s = String::new();
    write_nested(&mut s, v);
    s
}

/// Go's `fmt.Sprintf` for the verbs templates use: `%v %s %q %d %b %o %x %X %c %t %f %e %g %%`, with
/// flags, width and precision. Wrong types and missing or extra operands are reported inline as Go does.
pub(super) fn sprintf(format: &str, args: &[Value]) -> String {
    let mut out = String::new();
    let mut arg_i = 0;
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut spec = Spec::default();
        while let Some(&f) = chars.peek() {
            match f {
                '-' => spec.minus = true,
                '+' => spec.plus = true,
                '0' => spec.zero = true,
                ' ' => spec.space = true,
                '#' => spec.sharp = true,
                _ => break,
            }
            chars.next();
        }
        let num = |chars: &mut std::iter::Peekable<std::str::Chars<'_>>| {
            let mut n: Option<usize> = None;
            while let Some(d) = chars.peek().and_then(|c| c.to_digit(10)) {
                n = Some(n.unwrap_or(0).saturating_mul(10).saturating_add(d as usize).min(10_000));
                chars.next();
            }
            n
        };
        spec.width = num(&mut chars);
        if chars.peek() == Some(&'.') {
            chars.next();
            spec.precision = Some(num(&mut chars).unwrap_or(0));
        }
        let Some(verb) = chars.next() else {
            out.push_str("%!(NOVERB)");
            break;
        };
        if verb == '%' {
            out.push('%');
            continue;
        }
        match args.get(arg_i) {
            Some(v) => out.push_str(&format_one(verb, &spec, v)),
            None => {
                let _ = write!(out, "%!{verb}(MISSING)");
            }
        }
        arg_i += 1;
    }
    if arg_i < args.len() {
        out.push_str("%!(EXTRA ");
        for (i, a) in args[arg_i..].iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            let _ = write!(out, "{}={}", a.type_name(), go_v_nested(a));
        }
        out.push(')');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_like_go() {
        assert_eq!(go_float_g(8080.0, None), "8080");
        assert_eq!(go_float_g(1.5, None), "1.5");
        assert_eq!(go_float_g(1_000_000.0, None), "1e+06");
        assert_eq!(go_float_g(123_456.0, None), "123456");
        assert_eq!(go_float_g(0.0001, None), "0.0001");
        assert_eq!(go_float_g(0.00001, None), "1e-05");
        assert_eq!(go_float_g(-2.25, None), "-2.25");
        assert_eq!(go_float_g(0.0, None), "0");
    }

    #[test]
    fn sprintf_formats_common_verbs() {
        let args = [
            Value::Str("web".into()),
            Value::Int(42),
            Value::Float(1.5),
            Value::Bool(true),
        ];
        assert_eq!(sprintf("%s-%d-%v-%t", &args), "web-42-1.5-true");
        assert_eq!(sprintf("%q", &[Value::Str("a\"b".into())]), "\"a\\\"b\"");
        assert_eq!(
            sprintf(
                "%05d|%-4s|%x|%.2f",
                &[
                    Value::Int(42),
                    Value::Str("ab".into()),
                    Value::Int(255),
                    Value::Float(1.23456)
                ]
            ),
            "00042|ab  |ff|1.23"
        );
        assert_eq!(sprintf("100%%", &[]), "100%");
    }

    #[test]
    fn sprintf_reports_bad_and_missing_operands_inline() {
        assert_eq!(sprintf("%d", &[Value::Str("x".into())]), "%!d(string=x)");
        assert_eq!(sprintf("%s %s", &[Value::Str("x".into())]), "x %!s(MISSING)");
        assert_eq!(
            sprintf("%s", &[Value::Str("x".into()), Value::Int(1)]),
            "x%!(EXTRA int=1)"
        );
    }

    #[test]
    fn sprint_spaces_operands_that_are_not_strings() {
        assert_eq!(
            sprint(&[Value::Int(1), Value::Int(2), Value::Str("a".into()), Value::Int(3)]),
            "1 2a3"
        );
        assert_eq!(sprintln(&[Value::Str("a".into()), Value::Int(1)]), "a 1\n");
    }

    #[test]
    fn containers_print_like_go() {
        let m: std::collections::BTreeMap<String, Value> = [
            ("b".to_string(), Value::Int(2)),
            ("a".to_string(), Value::Str("x".into())),
        ]
        .into_iter()
        .collect();
        assert_eq!(go_v(&Value::Map(m)), "map[a:x b:2]");
        assert_eq!(go_v(&Value::List(vec![Value::Int(1), Value::Nil])), "[1 <nil>]");
        assert_eq!(
            go_v(&Value::Struct(
                "T",
                vec![("A", Value::Int(1)), ("B", Value::Str("b".into()))]
            )),
            "{1 b}"
        );
    }
}
