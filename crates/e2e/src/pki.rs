//! The control plane's certificates, made with the `openssl` command: one CA, a serving certificate for
//! 127.0.0.1, an admin client certificate (group system:masters) and the service-account signing key.
//! kube-apiserver, kubectl, rustls (extdns) and Go's TLS (external-dns) all accept them.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Result;

use crate::proc::output;

#[derive(Debug, Clone)]
pub struct Pki {
    pub ca_cert: PathBuf,
    pub server_cert: PathBuf,
    pub server_key: PathBuf,
    pub admin_cert: PathBuf,
    pub admin_key: PathBuf,
    pub sa_key: PathBuf,
    pub sa_pub: PathBuf,
}

fn openssl(dir: &Path, args: &[&str]) -> Result<()> {
    let mut cmd = Command::new("openssl");
    cmd.args(args).current_dir(dir);
    output(cmd).map(|_| ())
}

const EC: [&str; 5] = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"];

impl Pki {
    pub fn create(dir: &Path) -> Result<Pki> {
        std::fs::create_dir_all(dir)?;
        openssl(
            dir,
            &[
                &["req", "-x509"][..],
                &EC,
                &[
                    "-days",
                    "3",
                    "-subj",
                    "/CN=extdns-e2e-ca",
                    "-keyout",
                    "ca.key",
                    "-out",
                    "ca.crt",
                ],
                &["-addext", "basicConstraints=critical,CA:TRUE"],
                &["-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature"],
            ]
            .concat(),
        )?;
        Self::leaf(
            dir,
            "server",
            "/CN=kube-apiserver",
            "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n",
        )?;
        Self::leaf(
            dir,
            "admin",
            "/O=system:masters/CN=admin",
            "extendedKeyUsage=clientAuth\n",
        )?;
        openssl(dir, &["genrsa", "-out", "sa.key", "2048"])?;
        openssl(dir, &["rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub"])?;
        Ok(Pki {
            ca_cert: dir.join("ca.crt"),
            server_cert: dir.join("server.crt"),
            server_key: dir.join("server.key"),
            admin_cert: dir.join("admin.crt"),
            admin_key: dir.join("admin.key"),
            sa_key: dir.join("sa.key"),
            sa_pub: dir.join("sa.pub"),
        })
    }

    /// A key and a certificate signed by the CA (`<name>.key`, `<name>.crt`).
    fn leaf(dir: &Path, name: &str, subject: &str, extensions: &str) -> Result<()> {
        let (key, csr, crt, ext) = (
            format!("{name}.key"),
            format!("{name}.csr"),
            format!("{name}.crt"),
            format!("{name}.ext"),
        );
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
            format!("basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n{extensions}"),
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
}
