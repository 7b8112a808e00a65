//! The control plane's certificates ([`crate::tls`]): one CA, a serving certificate for
//! 127.0.0.1, an admin client certificate (group system:masters) and the service-account signing key.
//! kube-apiserver, kubectl, rustls (extdns) and Go's TLS (external-dns) all accept them.

use std::path::{Path, PathBuf};

use crate::tls::{Ca, openssl};
use anyhow::Result;

/// Paths of the PEM files [`Pki::create`] wrote.
#[derive(Debug, Clone)]
pub struct Pki {
    /// The CA certificate every party trusts.
    pub ca_cert: PathBuf,
    /// kube-apiserver's serving certificate (for 127.0.0.1).
    pub server_cert: PathBuf,
    /// Its key.
    pub server_key: PathBuf,
    /// The admin client certificate (group system:masters).
    pub admin_cert: PathBuf,
    /// Its key.
    pub admin_key: PathBuf,
    /// The service-account token signing key.
    pub sa_key: PathBuf,
    /// Its public half, for verifying tokens.
    pub sa_pub: PathBuf,
}

impl Pki {
    /// Creates the CA and every certificate in `dir` with openssl.
    pub fn create(dir: &Path) -> Result<Pki> {
        let ca = Ca::create(dir, "/CN=extdns-e2e-ca")?;
        ca.leaf(
            "server",
            "/CN=kube-apiserver",
            "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth",
        )?;
        ca.leaf("admin", "/O=system:masters/CN=admin", "extendedKeyUsage=clientAuth")?;
        openssl(dir, &["genrsa", "-out", "sa.key", "2048"])?;
        openssl(dir, &["rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub"])?;
        Ok(Pki {
            ca_cert: ca.path("ca.crt"),
            server_cert: ca.path("server.crt"),
            server_key: ca.path("server.key"),
            admin_cert: ca.path("admin.crt"),
            admin_key: ca.path("admin.key"),
            sa_key: ca.path("sa.key"),
            sa_pub: ca.path("sa.pub"),
        })
    }
}
