//! The shared config and credentials files (`~/.aws/config`, `~/.aws/credentials`), as the SDKs read them:
//! INI sections, `[profile NAME]` (or `[default]`) in the config file, `[NAME]` in the credentials file,
//! whose keys win over the config file's for the same profile. Comments start with `#` or `;`; indented
//! lines continue a nested block (`s3 =` settings), which no key extdns reads lives in.

use std::collections::BTreeMap;
use std::path::PathBuf;

/// One profile's keys, lower-cased names.
pub(crate) type Profile = BTreeMap<String, String>;

/// Both files, merged by profile name.
#[derive(Debug, Default)]
pub(crate) struct ProfileFiles {
    pub profiles: BTreeMap<String, Profile>,
    /// The files read, for messages.
    pub paths: Vec<PathBuf>,
}

impl ProfileFiles {
    /// `AWS_CONFIG_FILE` and `AWS_SHARED_CREDENTIALS_FILE`, else the two files under `$HOME/.aws`. A file that
    /// does not exist is no profiles; one that cannot be read is an error naming it.
    pub fn load(var: &dyn Fn(&str) -> Option<String>) -> Result<ProfileFiles, (PathBuf, std::io::Error)> {
        let home = var("HOME").map(PathBuf::from);
        let path = |variable: &str, default: &str| {
            var(variable)
                .map(PathBuf::from)
                .or_else(|| home.as_ref().map(|h| h.join(".aws").join(default)))
        };
        let mut files = ProfileFiles::default();
        for (path, is_config) in [
            (path("AWS_CONFIG_FILE", "config"), true),
            (path("AWS_SHARED_CREDENTIALS_FILE", "credentials"), false),
        ] {
            let Some(path) = path else { continue };
            match std::fs::read_to_string(&path) {
                Ok(text) => {
                    files.merge(&text, is_config);
                    files.paths.push(path);
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err((path, e)),
            }
        }
        Ok(files)
    }

    /// The files' names for a message.
    pub fn describe(&self) -> String {
        if self.paths.is_empty() {
            return "no shared config or credentials file".to_string();
        }
        self.paths
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(" and ")
    }

    pub fn get(&self, name: &str) -> Option<&Profile> {
        self.profiles.get(name)
    }

    fn merge(&mut self, text: &str, is_config: bool) {
        let mut current: Option<String> = None;
        for line in text.lines() {
            if line.starts_with([' ', '\t']) {
                continue;
            }
            let line = strip_comment(line).trim();
            if line.is_empty() {
                continue;
            }
            if let Some(section) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                current = profile_name(section.trim(), is_config).map(str::to_string);
                if let Some(name) = &current {
                    self.profiles.entry(name.clone()).or_default();
                }
                continue;
            }
            let (Some(name), Some((key, value))) = (&current, line.split_once('=')) else {
                continue;
            };
            let value = value.trim();
            if let Some(profile) = self.profiles.get_mut(name) {
                profile.insert(key.trim().to_ascii_lowercase(), value.to_string());
            }
        }
    }
}

/// The profile a section names: in the config file `default` or `profile NAME` (other sections, `sso-session`
/// and `services`, are not profiles); in the credentials file the section's name.
fn profile_name(section: &str, is_config: bool) -> Option<&str> {
    if !is_config || section == "default" {
        return Some(section);
    }
    section
        .strip_prefix("profile")
        .filter(|rest| rest.starts_with([' ', '\t']))
        .map(str::trim)
}

/// A line without its comment: `#` or `;` at the start, or after whitespace in a value.
fn strip_comment(line: &str) -> &str {
    let trimmed = line.trim_start();
    if trimmed.starts_with(['#', ';']) {
        return "";
    }
    let bytes = line.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        if (*b == b'#' || *b == b';') && i > 0 && bytes[i - 1].is_ascii_whitespace() {
            return &line[..i];
        }
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_files_merge_and_the_credentials_file_wins() {
        let mut f = ProfileFiles::default();
        f.merge(
            "# comment\n[default]\nregion = eu-west-1\n[profile dev]\nrole_arn = arn:aws:iam::1:role/r ; why\n\
             source_profile = base\ns3 =\n  max_concurrent_requests = 2\n[sso-session x]\nsso_region = a\n\
             [services y]\nk = v\n",
            true,
        );
        f.merge(
            "[base]\naws_access_key_id = AKID\naws_secret_access_key = s#ecret\n[dev]\nexternal_id = e\n",
            false,
        );
        let dev = f.get("dev").expect("dev");
        assert_eq!(dev.get("role_arn").map(String::as_str), Some("arn:aws:iam::1:role/r"));
        assert_eq!(dev.get("external_id").map(String::as_str), Some("e"));
        assert!(!dev.contains_key("max_concurrent_requests"));
        let base = f.get("base").expect("base");
        assert_eq!(base.get("aws_secret_access_key").map(String::as_str), Some("s#ecret"));
        assert!(f.get("x").is_none() && f.get("y").is_none() && f.get("sso-session x").is_none());
        assert_eq!(
            f.get("default").and_then(|d| d.get("region")).map(String::as_str),
            Some("eu-west-1")
        );
    }

    #[test]
    fn files_come_from_the_variables_or_home() -> Result<(), Box<dyn std::error::Error>> {
        let dir = std::env::temp_dir().join(format!("extdns-profile-{}", std::process::id()));
        std::fs::create_dir_all(dir.join(".aws"))?;
        std::fs::write(dir.join(".aws/credentials"), "[default]\naws_access_key_id = A\n")?;
        let home = dir.display().to_string();
        let f = ProfileFiles::load(&|k| (k == "HOME").then(|| home.clone())).map_err(|(_, e)| e)?;
        assert_eq!(f.paths, [dir.join(".aws/credentials")]);
        assert!(f.get("default").is_some());
        let other = dir.join("elsewhere");
        std::fs::write(&other, "[profile p]\nregion = x\n")?;
        let other_text = other.display().to_string();
        let f = ProfileFiles::load(&|k| match k {
            "AWS_CONFIG_FILE" => Some(other_text.clone()),
            "HOME" => Some(home.clone()),
            _ => None,
        })
        .map_err(|(_, e)| e)?;
        assert!(f.get("p").is_some() && f.get("default").is_some(), "{f:?}");
        std::fs::remove_dir_all(&dir)?;
        Ok(())
    }
}
