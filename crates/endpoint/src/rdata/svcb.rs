//! SVCB and HTTPS record data (RFC 9460): one form for both types.

use std::fmt;
use std::str::FromStr;

use super::presentation::fields;
use super::{RdataProblem, SvcParams, decimal};
use crate::TargetKind;

/// An SVCB or HTTPS target: `<priority> <target name> [key=value ...]`.
///
/// Priority 0 is alias mode and takes no SvcParams. The target name is absolute: written with or without its
/// trailing dot, it is kept lower-case with the dot (`.` alone is the owner name in service mode, "no
/// service" in alias mode), as servers print it. The canonical text puts the SvcParams in key order.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Svcb {
    /// SvcPriority: 0 for alias mode, else the preference (lower first).
    pub priority: u16,
    /// TargetName, lower-case, ending with a dot (`.` for the root).
    pub target: String,
    /// SvcParams (empty in alias mode).
    pub params: SvcParams,
}

impl Svcb {
    /// Whether the record is in alias mode (priority 0).
    pub fn is_alias(&self) -> bool {
        self.priority == 0
    }

    /// The target name without its trailing dot (empty for the root), as DNS name parsers take it.
    pub fn target_name(&self) -> &str {
        self.target.strip_suffix('.').unwrap_or(&self.target)
    }
}

impl FromStr for Svcb {
    type Err = RdataProblem;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let fields = fields(s).map_err(|(param, why)| RdataProblem::Syntax {
            param: param.to_string(),
            why,
        })?;
        let [priority, target, params @ ..] = fields.as_slice() else {
            return Err(RdataProblem::FieldCount {
                want: "at least 2 fields: priority target-name [key=value ...]",
                got: fields.len(),
            });
        };
        let priority = decimal(priority, 65535)
            .and_then(|p| u16::try_from(p).ok())
            .ok_or_else(|| RdataProblem::Number {
                field: "priority",
                value: (*priority).to_string(),
                max: 65535,
            })?;
        let target = target_name(target)?;
        if priority == 0
            && let Some(first) = params.first()
        {
            return Err(RdataProblem::ParamsInAliasMode {
                key: first.split('=').next().unwrap_or(first).to_string(),
            });
        }
        let params = SvcParams::parse(params.iter().copied())?;
        Ok(Svcb {
            priority,
            target,
            params,
        })
    }
}

/// The target name, lower-case and absolute.
fn target_name(text: &str) -> Result<String, RdataProblem> {
    if text == "." {
        return Ok(".".to_string());
    }
    let name = text.strip_suffix('.').unwrap_or(text);
    // A service name may have any label the hostname rule allows; a name ending in a label of digits is
    // refused there, which keeps a mistyped address from passing for a name.
    if name.starts_with('*') || TargetKind::of(name) != TargetKind::Hostname {
        return Err(RdataProblem::TargetName {
            value: text.to_string(),
        });
    }
    Ok(format!("{}.", name.to_ascii_lowercase()))
}

impl fmt::Display for Svcb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = format!("{} {}", self.priority, self.target);
        self.params.write(&mut s);
        f.write_str(&s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canonical(s: &str) -> Result<String, RdataProblem> {
        s.parse::<Svcb>().map(|r| r.to_string())
    }

    #[test]
    fn the_target_name_is_lower_case_and_absolute() {
        assert_eq!(canonical("1 Svc.Example.COM"), Ok("1 svc.example.com.".to_string()));
        assert_eq!(canonical("1 svc.example.com."), Ok("1 svc.example.com.".to_string()));
        assert_eq!(canonical("0 ."), Ok("0 .".to_string()));
        for bad in ["1 a..b", "1 1.2.3.4", "1 *.example.com", "1 bücher.example"] {
            assert!(matches!(canonical(bad), Err(RdataProblem::TargetName { .. })), "{bad}");
        }
    }

    #[test]
    fn alias_mode_takes_no_params() {
        assert_eq!(
            canonical("0 pool.example.com. alpn=h2"),
            Err(RdataProblem::ParamsInAliasMode {
                key: "alpn".to_string()
            })
        );
        assert_eq!(canonical("0 pool.example.com."), Ok("0 pool.example.com.".to_string()));
    }

    #[test]
    fn the_canonical_form_reads_back_to_itself() {
        let once = canonical(r#"16 . port=8443 alpn="h2,h3" ech="AEj+DQBE" key65000="x y""#).unwrap_or_default();
        assert_eq!(once, r#"16 . alpn=h2,h3 port=8443 ech="AEj+DQBE" key65000="x y""#);
        assert_eq!(canonical(&once), Ok(once.clone()));
    }

    #[test]
    fn priority_and_field_count_are_checked() {
        assert!(matches!(
            canonical("65536 ."),
            Err(RdataProblem::Number { field: "priority", .. })
        ));
        assert!(matches!(canonical("1"), Err(RdataProblem::FieldCount { got: 1, .. })));
        assert!(matches!(canonical(r#"1 . alpn="h2"#), Err(RdataProblem::Syntax { .. })));
    }
}
