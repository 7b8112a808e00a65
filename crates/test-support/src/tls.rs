//! Certificates for the TLS tests, made with the `openssl` command (tests check [`crate::Server::OpenSsl`]
//! first): a CA and the leaves it signs. kube-apiserver, etcd, BIND, kubectl, rustls and Go's TLS all
//! accept them.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

/// A P-256 key, unencrypted.
const EC: [&str; 5] = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"];

/// `openssl ARGS` in `dir`, failing with what it printed.
pub fn openssl(dir: &Path, args: &[&str]) -> Result<()> {
    let out = Command::new(crate::need("openssl"))
        .args(args)
        .current_dir(dir)
        .output()
        .context("running openssl")?;
    if !out.status.success() {
        bail!("openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(())
}

/// A CA in a directory (`ca.key`, `ca.crt`); the leaves it signs go beside it.
#[derive(Debug, Clone)]
pub struct Ca {
    dir: PathBuf,
}

impl Ca {
    /// A new CA with `subject` (such as `/CN=test-ca`) in `dir`, made if missing.
    pub fn create(dir: &Path, subject: &str) -> Result<Ca> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        openssl(
            dir,
            &[
                &["req", "-x509"][..],
                &EC,
                &["-days", "3", "-subj", subject, "-keyout", "ca.key", "-out", "ca.crt"],
                &["-addext", "basicConstraints=critical,CA:TRUE"],
                &["-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature"],
            ]
            .concat(),
        )?;
        Ok(Ca { dir: dir.to_path_buf() })
    }

    /// A file of the directory (`ca.crt`, `<leaf>.key`, ...).
    pub fn path(&self, file: &str) -> PathBuf {
        self.dir.join(file)
    }

    /// A key and a certificate signed by the CA (`<name>.key`, `<name>.crt`); `extensions` are openssl
    /// extension lines beyond the constraints every leaf has, e.g. `subjectAltName=IP:127.0.0.1`.
    pub fn leaf(&self, name: &str, subject: &str, extensions: &str) -> Result<()> {
        let (key, csr, crt, ext) = (
            format!("{name}.key"),
            format!("{name}.csr"),
            format!("{name}.crt"),
            format!("{name}.ext"),
        );
        let dir = &self.dir;
        openssl(
            dir,
            &[
                &["req", "-new"][..],
                &EC,
                &["-subj", subject, "-keyout", &key, "-out", &csr],
            ]
            .concat(),
        )?;
        std::fs::write(
            dir.join(&ext),
            format!("basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n{extensions}\n"),
        )?;
        openssl(
            dir,
            &[
                "x509",
                "-req",
                "-in",
                &csr,
                "-CA",
                "ca.crt",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-days",
                "3",
                "-extfile",
                &ext,
                "-out",
                &crt,
            ],
        )
    }

    /// A CA and a serving certificate for 127.0.0.1 (`server.key`, `server.crt`) in `dir`.
    pub fn for_localhost(dir: &Path) -> Result<Ca> {
        let ca = Ca::create(dir, "/CN=extdns test CA")?;
        ca.leaf(
            "server",
            "/CN=127.0.0.1",
            "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth",
        )?;
        Ok(ca)
    }
}
