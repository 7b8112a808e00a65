//! The benchmarks' options, as each subcommand reads them: `--flag value` or `--flag=value`.

use anyhow::{Context, Result};

/// Each flag of `args` with its value, in order; a flag without one is an error naming it.
pub fn pairs(args: &[String]) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let pair = match flag.split_once('=') {
            Some((f, v)) => (f.to_string(), v.to_string()),
            None => (
                flag.clone(),
                it.next().with_context(|| format!("{flag} needs a value"))?.clone(),
            ),
        };
        out.push(pair);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_value_follows_its_flag_or_an_equals_sign() -> Result<()> {
        let got = pairs(&args(&["--records", "20", "--report=r.md"]))?;
        let want = [("--records", "20"), ("--report", "r.md")].map(|(f, v)| (f.to_string(), v.to_string()));
        assert_eq!(got, want);
        let missing = pairs(&args(&["--records"])).err().map(|e| e.to_string());
        assert_eq!(missing.as_deref(), Some("--records needs a value"));
        Ok(())
    }
}
