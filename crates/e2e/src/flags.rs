//! The benchmarks' options, as each subcommand reads them: `--flag value` or `--flag=value`.

use std::time::Duration;

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

/// Reads `args` into the options `o` of the benchmark `bench` that loads an API server: its load,
/// `--services N` and `--pods M`, into the two counts `load` points at (what every such benchmark takes
/// alike), every other flag by `other`, which answers `Ok(false)` for one it does not know (an error naming
/// `bench`).
pub fn read_loaded<O>(
    bench: &str,
    args: &[String],
    o: &mut O,
    load: fn(&mut O) -> [&mut usize; 2],
    mut other: impl FnMut(&mut O, &str, String) -> Result<bool>,
) -> Result<()> {
    for (flag, value) in pairs(args)? {
        let [services, pods] = load(o);
        match flag.as_str() {
            "--services" => *services = count(&flag, &value)?,
            "--pods" => *pods = count(&flag, &value)?,
            _ => {
                if !other(o, &flag, value)? {
                    anyhow::bail!("{bench}: unknown argument {flag}");
                }
            }
        }
    }
    Ok(())
}

/// `value` as a count, the error naming `flag` (`--services abc: not a number`).
pub fn count(flag: &str, value: &str) -> Result<usize> {
    value
        .parse::<usize>()
        .with_context(|| format!("{flag} {value}: not a number"))
}

/// `value` as whole seconds, the error naming `flag`.
pub fn seconds(flag: &str, value: &str) -> Result<Duration> {
    count(flag, value).map(|s| Duration::from_secs(s as u64))
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

    #[test]
    fn a_loaded_benchmark_reads_its_load_and_hands_the_rest_on() -> Result<()> {
        let mut o = (0usize, 0usize, 0usize);
        let read = |o: &mut (usize, usize, usize), a: &[&str]| {
            read_loaded(
                "b",
                &args(a),
                o,
                |o| [&mut o.0, &mut o.1],
                |o, flag, value| {
                    Ok(flag == "--changes" && {
                        o.2 = count(flag, &value)?;
                        true
                    })
                },
            )
        };
        read(&mut o, &["--services=3", "--pods", "4", "--changes", "5"])?;
        assert_eq!(o, (3, 4, 5));
        let unknown = read(&mut o, &["--nope", "1"]).err().map(|e| e.to_string());
        assert_eq!(unknown.as_deref(), Some("b: unknown argument --nope"));
        Ok(())
    }

    #[test]
    fn counts_and_seconds_name_the_flag_they_could_not_read() -> Result<()> {
        assert_eq!(count("--pods", "12")?, 12);
        assert_eq!(seconds("--idle", "3")?, Duration::from_secs(3));
        let bad = seconds("--idle", "3s").err().map(|e| e.to_string());
        assert_eq!(bad.as_deref(), Some("--idle 3s: not a number"));
        Ok(())
    }
}
