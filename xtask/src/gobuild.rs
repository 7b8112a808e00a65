//! The Go programs the end-to-end tests run: etcd, kube-apiserver and kubectl (a real control plane), and
//! external-dns (the reference for the differential test). Each is built from its Go module with the `go`
//! tool and cached under `target/e2e-bin/<name>-<version>`, so a machine builds a version once; the Go module
//! and build caches (`~/go`, `~/.cache/go-build`) make a rebuild of another version cheap too.
//!
//! The recipes below were verified on the project's build machines.
//! - kube-apiserver and kubectl: `go install k8s.io/kubernetes/cmd/...@v` fails because k8s.io/kubernetes's
//!   go.mod maps its staging modules to `./staging/...`; a wrapper module replaces each with its published
//!   version and builds the command as a tool of the wrapper.
//! - etcd: a wrapper `main` calling `etcdmain.Main`, at the version k8s.io/kubernetes pins.
//! - amazon-ec2-metadata-mock: `go install` of its command at the version (a plain module, no replaces);
//!   the AWS provider's instance-profile credentials are tested against it.
//! - external-dns, two releases: [`EXTERNAL_DNS`] (v0.23.0, the reference every differential scenario runs)
//!   and [`EXTERNAL_DNS_PREVIOUS`] (v0.22.0, whose zones users upgrading from it hand over). Each is the
//!   unmodified module in its wrapper `xtask/go/external-dns/<version>/go.mod`, which replaces the modules the
//!   module proxy does not serve with the stubs of `xtask/go/external-dns/stubs` (only `--provider=exoscale`,
//!   and for v0.22.0 `--source=openshift-route`, are lost), for v0.23.0 the openshift modules with the newest
//!   matched pair the proxy serves (so its openshift-route source runs) and civogo v0.7.3 with v0.7.2. Each
//!   is cached under `external-dns-<version><revision>`: a new wrapper revision is a new name, so every
//!   machine builds it again. v0.23.0's module
//!   needs Go 1.27: its build alone runs with `GOTOOLCHAIN=go1.27.3`, which makes the go tool fetch that
//!   toolchain through the module proxy (once; it is cached like a module). The reference's Helm chart
//!   (`charts/external-dns` of its module) is copied out of the module cache to
//!   `target/e2e-bin/external-dns-chart-<version>`: the tests render it with the extdns image.
//! - helm: `helm.sh/helm/v3/cmd/helm`, built with `go install` from its own module (no replaces), for the
//!   chart tests (`helm lint`, `helm template`).
//! - helm-unittest: its go.mod has a `replace`, which `go install module@version` refuses, so its command is
//!   built with the module itself as the main module, in the module cache (`go build` writes nothing there).
//!   It runs external-dns's chart tests against our chart (src/chart_tests.rs); both releases' charts are
//!   copied out of their modules for their `tests/`.
//! - the Gateway API CRDs as released: `config/crd/standard` and `config/crd/experimental` of the module
//!   `sigs.k8s.io/gateway-api`, copied out of the module cache to `target/e2e-bin/gateway-api-crds-<version>`
//!   (nothing is built): the `gateway-versions` scenario installs each channel on a control plane of its own.
//! - the CRDs of the projects the extra sources read (Istio, Traefik, Contour, OpenShift, Emissary, F5), each
//!   copied out of its Go module ([`PROJECT_CRDS`]) to `target/e2e-bin/project-crds-<key>/<project>/`.
//! - CoreDNS, for `bench serve` only (not part of [`ensure`], so tests and CI never build it): `go install` of
//!   its module (no replaces); its default plugin set, which has the `file` plugin the benchmark serves with.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

/// k8s.io/kubernetes: the newest 1.36 patch whose go.mod the checksum database verifies (k8s-openapi 0.28
/// tops out at 1.36).
pub const KUBERNETES: &str = "v1.36.4";
/// helm.sh/helm/v3: the Helm the chart tests lint and render with.
pub const HELM: &str = "v3.22.0";
/// go.etcd.io/etcd/server/v3: the version KUBERNETES pins (checked against its go.mod when building).
pub const ETCD: &str = "v3.6.8";
/// sigs.k8s.io/external-dns: the release extdns is a drop-in for, the reference of the differential scenarios.
pub const EXTERNAL_DNS: Release = Release {
    version: "v0.23.0",
    toolchain: Some("go1.27.3"),
    // r2: the real openshift modules instead of stubs.
    revision: "-r2",
};
/// The release before it, whose zones users upgrading from it hand over to extdns (`takeover-previous`).
pub const EXTERNAL_DNS_PREVIOUS: Release = Release {
    version: "v0.22.0",
    toolchain: None,
    revision: "",
};
/// github.com/helm-unittest/helm-unittest: runs external-dns's chart test suites (helm-unittest's format).
pub const HELM_UNITTEST: &str = "v1.1.2";
/// sigs.k8s.io/gateway-api: the release whose CRDs (both channels) the `gateway-versions` scenario installs.
pub const GATEWAY_API: &str = "v1.6.1";
/// The CRDs of the projects whose objects the extra sources read, as each project publishes them in its Go
/// module (nothing is built): copied to `target/e2e-bin/project-crds-<versions>/<name>/`, one directory a
/// project (`EXTDNS_TEST_PROJECT_CRDS` names the parent), so each source's tests install the real schema.
/// The versions are those the task list serves; external-dns v0.23.0's go.mod pins istio.io/api v1.31.0 and
/// contour v1.33.7, whose CRDs of the kinds the sources read are the same.
pub const PROJECT_CRDS: [ProjectCrds; 6] = [
    ProjectCrds {
        name: "istio",
        module: "istio.io/api@v1.32.0",
        files: &["kubernetes/customresourcedefinitions.gen.yaml"],
    },
    ProjectCrds {
        name: "traefik",
        module: "github.com/traefik/traefik/v3@v3.7.13",
        files: &["docs/content/reference/dynamic-configuration/kubernetes-crd-definition-v1.yml"],
    },
    ProjectCrds {
        name: "contour",
        module: "github.com/projectcontour/contour@v1.33.8",
        files: &["examples/contour/01-crds.yaml"],
    },
    // The newest openshift/api the module proxy here serves (external-dns v0.23.0 pins a later pseudo-version
    // that it does not); the Route CRD as OpenShift installs it.
    ProjectCrds {
        name: "openshift",
        module: "github.com/openshift/api@v0.0.0-20260709102940-580f1c1ba691",
        files: &["route/v1/zz_generated.crd-manifests/routes.crd.yaml"],
    },
    // Emissary-ingress (the `ambassador-host` source's getambassador.io Host) at the version external-dns
    // v0.23.0 pins.
    ProjectCrds {
        name: "emissary",
        module: "github.com/emissary-ingress/emissary/v3@v3.10.0",
        files: &["pkg/api/getambassador.io/crds.yaml"],
    },
    // F5 BIG-IP Container Ingress Services (the `f5-virtualserver` and `f5-transportserver` sources' cis.f5.com
    // kinds) at the version external-dns v0.23.0 pins.
    ProjectCrds {
        name: "f5",
        module: "github.com/F5Networks/k8s-bigip-ctlr/v2@v2.20.2",
        files: &["docs/config_examples/customResourceDefinitions/customresourcedefinitions.yml"],
    },
];
/// github.com/aws/amazon-ec2-metadata-mock: IMDSv2 for the AWS credential chain's instance-profile test.
pub const EC2_METADATA_MOCK: &str = "v1.13.0";
/// github.com/coredns/coredns: the authoritative server `bench serve` measures extdns against (its `file` plugin).
pub const COREDNS: &str = "v1.15.0";
/// The oldest Go these builds accept: the highest `go` line among the wrapper modules built with the local
/// toolchain (external-dns v0.22.0's says 1.26.6; k8s.io/kubernetes's 1.26.0). Only a build whose release
/// names a toolchain ([`Release::toolchain`]) fetches another.
pub const GO_MIN: (u32, u32, u32) = (1, 26, 6);

/// An external-dns release: its module version and the Go toolchain its module needs when the local one is
/// too old for it (`GOTOOLCHAIN` for that build only).
#[derive(Debug, Clone, Copy)]
pub struct Release {
    pub version: &'static str,
    pub toolchain: Option<&'static str>,
    /// The wrapper module's revision, appended to the cached binary's name (`-r2`): a wrapper that builds
    /// something else must not be mistaken for the binary an older one built.
    pub revision: &'static str,
}

/// One project's published CRDs: where they are in its Go module.
#[derive(Debug, Clone, Copy)]
pub struct ProjectCrds {
    /// The directory under [`GoBinaries::project_crds`] the files are copied to.
    pub name: &'static str,
    /// `module@version`, as `go mod download` takes it.
    pub module: &'static str,
    /// The CRD files, relative to the module's root.
    pub files: &'static [&'static str],
}

/// Paths of the built programs.
#[derive(Debug, Clone)]
pub struct GoBinaries {
    pub etcd: PathBuf,
    pub kube_apiserver: PathBuf,
    pub kubectl: PathBuf,
    pub external_dns: PathBuf,
    /// external-dns [`EXTERNAL_DNS_PREVIOUS`], for the take-over from it.
    pub external_dns_previous: PathBuf,
    pub ec2_metadata_mock: PathBuf,
    pub helm: PathBuf,
    /// external-dns's Helm chart directory (not a program; it comes from the same Go module).
    pub external_dns_chart: PathBuf,
    /// The chart of [`EXTERNAL_DNS_PREVIOUS`], whose test suites our chart is held to as well.
    pub external_dns_previous_chart: PathBuf,
    pub helm_unittest: PathBuf,
    /// The Gateway API release's CRDs: `standard/` and `experimental/` (not programs either).
    pub gateway_api_crds: PathBuf,
    /// The [`PROJECT_CRDS`], one directory a project.
    pub project_crds: PathBuf,
}

impl GoBinaries {
    /// Tells a `cargo test` run where the binaries are: tests that drive etcd or external-dns directly
    /// (outside the Kubernetes scenarios) read `EXTDNS_TEST_ETCD` and `EXTDNS_TEST_EXTERNAL_DNS`; unset, they
    /// skip under plain `cargo test` and fail under xtask.
    pub fn export_to(&self, cmd: &mut std::process::Command) {
        cmd.envs([
            ("EXTDNS_TEST_ETCD", &self.etcd),
            ("EXTDNS_TEST_KUBE_APISERVER", &self.kube_apiserver),
            ("EXTDNS_TEST_EXTERNAL_DNS", &self.external_dns),
            ("EXTDNS_TEST_EXTERNAL_DNS_PREVIOUS", &self.external_dns_previous),
            ("EXTDNS_TEST_EC2_METADATA_MOCK", &self.ec2_metadata_mock),
            ("EXTDNS_TEST_KUBECTL", &self.kubectl),
            ("EXTDNS_TEST_HELM", &self.helm),
            ("EXTDNS_TEST_EXTERNAL_DNS_CHART", &self.external_dns_chart),
            ("EXTDNS_TEST_GATEWAY_API_CRDS", &self.gateway_api_crds),
            ("EXTDNS_TEST_PROJECT_CRDS", &self.project_crds),
        ]);
    }
}

/// The `go` command to build with.
#[derive(Debug, Clone)]
pub struct Go {
    pub path: PathBuf,
    /// `GOTOOLCHAIN` for this build only (a module that needs a newer Go than the local one).
    toolchain: Option<&'static str>,
}

impl Go {
    /// `go` from PATH (or its usual home, /usr/local/go/bin), at least [`GO_MIN`]; otherwise an error with
    /// the command that installs it.
    pub fn find() -> Result<Go> {
        let (major, minor, patch) = GO_MIN;
        let install = format!(
            "install Go {major}.{minor}.{patch} or newer: curl -fsSL https://go.dev/dl/go1.26.8.linux-amd64.tar.gz | \
             tar -C /usr/local -xz (Debian's golang-go is too old); it is found on PATH or in /usr/local/go/bin"
        );
        let path = crate::find_program("go")
            .or_else(|| Some(PathBuf::from("/usr/local/go/bin/go")).filter(|p| p.is_file()))
            .with_context(|| format!("the Go tool is missing: {install}"))?;
        let out = Command::new(&path)
            .arg("version")
            .output()
            .with_context(|| format!("cannot run {}", path.display()))?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        match go_version(&text) {
            Some(v) if v >= GO_MIN => Ok(Go { path, toolchain: None }),
            _ => bail!("{} reports {:?}, too old: {install}", path.display(), text.trim()),
        }
    }

    fn cmd(&self, dir: &Path) -> Command {
        let mut cmd = Command::new(&self.path);
        cmd.current_dir(dir)
            .env("CGO_ENABLED", "0")
            // The wrappers live inside this repository's target/: no VCS stamping from our git tree.
            .env("GOFLAGS", "-buildvcs=false");
        if let Some(toolchain) = self.toolchain {
            cmd.env("GOTOOLCHAIN", toolchain);
        }
        cmd
    }

    /// The same `go`, running every command with `GOTOOLCHAIN=toolchain` when one is named.
    fn with_toolchain(&self, toolchain: Option<&'static str>) -> Go {
        Go {
            path: self.path.clone(),
            toolchain,
        }
    }

    /// Runs a `go` command, showing its output only when it fails (`go get` lists every module it adds).
    fn run(&self, dir: &Path, args: &[&str]) -> Result<()> {
        self.output(dir, args).map(|_| ())
    }

    /// `go build`, whose output (errors only) goes straight to the terminal.
    fn build(&self, dir: &Path, args: &[&str]) -> Result<()> {
        let mut cmd = self.cmd(dir);
        cmd.args(args);
        crate::run(cmd)
    }

    fn output(&self, dir: &Path, args: &[&str]) -> Result<String> {
        let mut cmd = self.cmd(dir);
        cmd.args(args);
        crate::output(cmd)
    }
}

/// Builds what is not cached yet and returns the paths of all the programs (and external-dns's chart and the
/// Gateway API CRDs). `go` is only looked for when something must be built or copied.
pub fn ensure(target: &Path) -> Result<GoBinaries> {
    let bin = target.join("e2e-bin");
    let bins = GoBinaries {
        etcd: bin.join(format!("etcd-{ETCD}")),
        kube_apiserver: bin.join(format!("kube-apiserver-{KUBERNETES}")),
        kubectl: bin.join(format!("kubectl-{KUBERNETES}")),
        external_dns: bin.join(format!(
            "external-dns-{}{}",
            EXTERNAL_DNS.version, EXTERNAL_DNS.revision
        )),
        external_dns_previous: bin.join(format!(
            "external-dns-{}{}",
            EXTERNAL_DNS_PREVIOUS.version, EXTERNAL_DNS_PREVIOUS.revision
        )),
        ec2_metadata_mock: bin.join(format!("ec2-metadata-mock-{EC2_METADATA_MOCK}")),
        helm: bin.join(format!("helm-{HELM}")),
        external_dns_chart: bin.join(format!("external-dns-chart-{}", EXTERNAL_DNS.version)),
        external_dns_previous_chart: bin.join(format!("external-dns-chart-{}", EXTERNAL_DNS_PREVIOUS.version)),
        helm_unittest: bin.join(format!("helm-unittest-{HELM_UNITTEST}")),
        gateway_api_crds: bin.join(format!("gateway-api-crds-{GATEWAY_API}")),
        project_crds: bin.join(format!("project-crds-{}", project_crds_key())),
    };
    let all = [
        &bins.etcd,
        &bins.kube_apiserver,
        &bins.kubectl,
        &bins.external_dns,
        &bins.external_dns_previous,
        &bins.ec2_metadata_mock,
        &bins.helm,
        &bins.helm_unittest,
    ];
    let chart_copied = bins.external_dns_chart.join("Chart.yaml").is_file();
    let previous_chart_copied = bins.external_dns_previous_chart.join("Chart.yaml").is_file();
    let crds_copied =
        bins.gateway_api_crds.join("standard").is_dir() && bins.gateway_api_crds.join("experimental").is_dir();
    let projects_copied = PROJECT_CRDS.iter().all(|p| bins.project_crds.join(p.name).is_dir());
    if all.iter().all(|p| p.is_file()) && chart_copied && previous_chart_copied && crds_copied && projects_copied {
        return Ok(bins);
    }
    let go = Go::find()?;
    std::fs::create_dir_all(&bin).with_context(|| format!("creating {}", bin.display()))?;
    let work = target.join("e2e-go");
    if !bins.kube_apiserver.is_file() || !bins.kubectl.is_file() {
        let dir = kubernetes_wrapper(&go, &work.join(format!("kubernetes-{KUBERNETES}")))?;
        for (cmd, out) in [("kube-apiserver", &bins.kube_apiserver), ("kubectl", &bins.kubectl)] {
            if !out.is_file() {
                build_kubernetes(&go, &dir, cmd, out)?;
            }
        }
    }
    if !bins.etcd.is_file() {
        build_etcd(&go, &work.join(format!("etcd-{ETCD}")), &bins.etcd)?;
    }
    if !bins.ec2_metadata_mock.is_file() {
        build_ec2_metadata_mock(
            &go,
            &work.join(format!("ec2-metadata-mock-{EC2_METADATA_MOCK}")),
            &bins.ec2_metadata_mock,
        )?;
    }
    for (release, out) in [
        (EXTERNAL_DNS, &bins.external_dns),
        (EXTERNAL_DNS_PREVIOUS, &bins.external_dns_previous),
    ] {
        if !out.is_file() {
            build_external_dns(
                &go,
                release,
                &work.join(format!("external-dns-{}", release.version)),
                out,
            )?;
        }
    }
    if !bins.helm.is_file() {
        build_helm(&go, &work.join(format!("helm-{HELM}")), &bins.helm)?;
    }
    if !bins.helm_unittest.is_file() {
        build_helm_unittest(&go, &work, &bins.helm_unittest)?;
    }
    for (copied, release, out) in [
        (chart_copied, EXTERNAL_DNS, &bins.external_dns_chart),
        (
            previous_chart_copied,
            EXTERNAL_DNS_PREVIOUS,
            &bins.external_dns_previous_chart,
        ),
    ] {
        if !copied {
            copy_out_of_module(
                &go.with_toolchain(release.toolchain),
                &work,
                &format!("sigs.k8s.io/external-dns@{}", release.version),
                &["charts/external-dns"],
                out,
            )?;
        }
    }
    if !crds_copied {
        copy_out_of_module(
            &go,
            &work,
            &format!("sigs.k8s.io/gateway-api@{GATEWAY_API}"),
            &["config/crd/standard", "config/crd/experimental"],
            &bins.gateway_api_crds,
        )?;
    }
    if !projects_copied {
        copy_project_crds(&go, &work, &bins.project_crds)?;
    }
    Ok(bins)
}

/// The cache key of [`PROJECT_CRDS`]: a change of any module version copies them all again.
fn project_crds_key() -> String {
    let versions: Vec<&str> = PROJECT_CRDS
        .iter()
        .map(|p| p.module.rsplit('@').next().unwrap_or(p.module))
        .collect();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in versions.join(",").bytes() {
        hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
    }
    format!("{hash:016x}")
}

/// Copies each project's CRD files out of its module into `to/<name>/` (through `to.tmp`, so an interrupted
/// copy never looks complete).
fn copy_project_crds(go: &Go, work: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(work).with_context(|| format!("creating {}", work.display()))?;
    let tmp = to.with_extension("tmp");
    let _ = std::fs::remove_dir_all(&tmp);
    for project in PROJECT_CRDS {
        let info = go.output(work, &["mod", "download", "-json", project.module])?;
        let dir = json_string_field(&info, "Dir")
            .with_context(|| format!("`go mod download` gave no Dir for {}", project.module))?;
        let dest = tmp.join(project.name);
        std::fs::create_dir_all(&dest).with_context(|| format!("creating {}", dest.display()))?;
        for file in project.files {
            let from = Path::new(&dir).join(file);
            let name = from.file_name().context("a CRD path without a file name")?;
            std::fs::copy(&from, dest.join(name)).with_context(|| format!("copying {}", from.display()))?;
        }
    }
    let _ = std::fs::remove_dir_all(to);
    std::fs::rename(&tmp, to).with_context(|| format!("moving {} into place", to.display()))?;
    say(&format!("copied the projects' CRDs to {}", to.display()));
    Ok(())
}

fn say(what: &str) {
    eprintln!("xtask: {what}");
}

/// Builds into `out.tmp` and renames, so an interrupted build never leaves a cached binary behind.
fn build_into(go: &Go, dir: &Path, out: &Path, ldflags: &str, package: &str) -> Result<()> {
    let tmp = out.with_extension("tmp");
    let tmp_s = tmp.display().to_string();
    go.build(
        dir,
        &[
            "build",
            "-p",
            "2",
            "-trimpath",
            "-ldflags",
            ldflags,
            "-o",
            &tmp_s,
            package,
        ],
    )?;
    std::fs::rename(&tmp, out).with_context(|| format!("moving {} into place", tmp.display()))?;
    say(&format!("built {}", out.display()));
    Ok(())
}

/// The wrapper module for kube-apiserver and kubectl, created once per Kubernetes version.
fn kubernetes_wrapper(go: &Go, dir: &Path) -> Result<PathBuf> {
    let stamp = dir.join(".complete");
    if stamp.is_file() {
        return Ok(dir.to_path_buf());
    }
    say(&format!(
        "preparing the k8s.io/kubernetes {KUBERNETES} wrapper module in {}",
        dir.display()
    ));
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let info = go.output(
        dir,
        &["mod", "download", "-json", &format!("k8s.io/kubernetes@{KUBERNETES}")],
    )?;
    let gomod_path = json_string_field(&info, "GoMod")
        .with_context(|| format!("`go mod download` gave no GoMod for k8s.io/kubernetes@{KUBERNETES}"))?;
    let gomod = std::fs::read_to_string(&gomod_path).with_context(|| format!("reading {gomod_path}"))?;
    let module = parse_kubernetes_gomod(&gomod)?;
    if module.etcd.as_deref() != Some(ETCD) {
        bail!(
            "k8s.io/kubernetes {KUBERNETES} pins etcd {:?}, xtask expects {ETCD}: update gobuild::ETCD",
            module.etcd
        );
    }
    let staging_version = staging_version(KUBERNETES)?;
    std::fs::write(
        dir.join("go.mod"),
        format!("module local.test/k8sbuild\n\ngo {}\n", module.go_line),
    )?;
    let _ = std::fs::remove_file(dir.join("go.sum"));
    let mut edit = vec!["mod".to_string(), "edit".to_string()];
    for m in &module.staging {
        edit.push(format!("-replace={m}={m}@{staging_version}"));
    }
    let edit: Vec<&str> = edit.iter().map(String::as_str).collect();
    go.run(dir, &edit)?;
    go.run(
        dir,
        &[
            "get",
            "-tool",
            &format!("k8s.io/kubernetes/cmd/kube-apiserver@{KUBERNETES}"),
            &format!("k8s.io/kubernetes/cmd/kubectl@{KUBERNETES}"),
        ],
    )?;
    std::fs::write(&stamp, KUBERNETES)?;
    Ok(dir.to_path_buf())
}

fn build_kubernetes(go: &Go, dir: &Path, command: &str, out: &Path) -> Result<()> {
    say(&format!(
        "building {command} {KUBERNETES} (a cold build takes several minutes and ~2 GB of memory)"
    ));
    let minor = KUBERNETES.split('.').nth(1).unwrap_or("0");
    let ldflags = format!(
        "-s -w -X k8s.io/component-base/version.gitVersion={KUBERNETES} -X k8s.io/component-base/version.gitMajor=1 \
         -X k8s.io/component-base/version.gitMinor={minor} -X k8s.io/component-base/version.gitTreeState=clean \
         -X k8s.io/component-base/version.buildDate=1970-01-01T00:00:00Z"
    );
    build_into(go, dir, out, &ldflags, &format!("k8s.io/kubernetes/cmd/{command}"))
}

fn build_etcd(go: &Go, dir: &Path, out: &Path) -> Result<()> {
    say(&format!("building etcd {ETCD} (about a minute cold)"));
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    if !dir.join(".complete").is_file() {
        std::fs::write(dir.join("go.mod"), "module local.test/etcdbuild\n\ngo 1.26.0\n")?;
        let _ = std::fs::remove_file(dir.join("go.sum"));
        std::fs::write(
            dir.join("main.go"),
            "// etcd's own main, as a wrapper module so `go build` can resolve its dependencies.\npackage main\n\n\
             import (\n\t\"os\"\n\n\t\"go.etcd.io/etcd/server/v3/etcdmain\"\n)\n\nfunc main() { etcdmain.Main(os.Args) }\n",
        )?;
        go.run(dir, &["get", &format!("go.etcd.io/etcd/server/v3@{ETCD}")])?;
        go.run(dir, &["mod", "tidy"])?;
        std::fs::write(dir.join(".complete"), ETCD)?;
    }
    build_into(go, dir, out, "-s -w", ".")
}

/// external-dns `release` from its wrapper module `xtask/go/external-dns/<version>` (go.mod and go.sum), with
/// the stubs every wrapper shares (`xtask/go/external-dns/stubs`) copied beside it.
fn build_external_dns(go: &Go, release: Release, dir: &Path, out: &Path) -> Result<()> {
    let version = release.version;
    say(&format!(
        "building external-dns {version} (a cold build takes several minutes)"
    ));
    let source = crate::root().join("xtask/go/external-dns");
    let wrapper = source.join(version);
    let gomod = std::fs::read_to_string(wrapper.join("go.mod"))
        .with_context(|| format!("reading the wrapper module of external-dns {version}"))?;
    if !requires(&gomod, "sigs.k8s.io/external-dns", version) {
        bail!(
            "{} does not require sigs.k8s.io/external-dns {version}: keep it and gobuild's version in step",
            wrapper.display()
        );
    }
    copy_dir(&wrapper, dir)?;
    copy_dir(&source.join("stubs"), &dir.join("stubs"))?;
    let ldflags = format!("-s -w -X sigs.k8s.io/external-dns/pkg/apis/externaldns.Version={version}");
    build_into(
        &go.with_toolchain(release.toolchain),
        dir,
        out,
        &ldflags,
        "sigs.k8s.io/external-dns",
    )
}

/// Whether a go.mod requires `module` at `version` (a `require` block line or a one-line `require`).
fn requires(gomod: &str, module: &str, version: &str) -> bool {
    gomod.lines().any(|line| {
        matches!(line.split_whitespace().collect::<Vec<_>>().as_slice(),
            [m, v, ..] | ["require", m, v, ..] if *m == module && *v == version)
    })
}

/// amazon-ec2-metadata-mock from its own module (no replaces), the same way as helm.
fn build_ec2_metadata_mock(go: &Go, gobin: &Path, out: &Path) -> Result<()> {
    say(&format!("building amazon-ec2-metadata-mock {EC2_METADATA_MOCK}"));
    std::fs::create_dir_all(gobin).with_context(|| format!("creating {}", gobin.display()))?;
    let package = format!("github.com/aws/amazon-ec2-metadata-mock/cmd/ec2-metadata-mock@{EC2_METADATA_MOCK}");
    let mut cmd = go.cmd(gobin);
    cmd.env("GOBIN", gobin)
        .args(["install", "-p", "2", "-trimpath", "-ldflags", "-s -w", &package]);
    crate::run(cmd)?;
    std::fs::rename(gobin.join("ec2-metadata-mock"), out)
        .with_context(|| format!("moving the mock to {}", out.display()))?;
    say(&format!("built {}", out.display()));
    Ok(())
}

/// helm from its own module: `go install` (GOBIN a scratch directory) builds exactly the versions helm's go.mod
/// names, then the binary moves into place.
fn build_helm(go: &Go, gobin: &Path, out: &Path) -> Result<()> {
    say(&format!("building helm {HELM} (a cold build takes a few minutes)"));
    std::fs::create_dir_all(gobin).with_context(|| format!("creating {}", gobin.display()))?;
    let ldflags = format!(
        "-s -w -X helm.sh/helm/v3/internal/version.version={HELM} -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
    );
    let mut cmd = go.cmd(gobin);
    cmd.env("GOBIN", gobin).args([
        "install",
        "-p",
        "2",
        "-trimpath",
        "-ldflags",
        &ldflags,
        &format!("helm.sh/helm/v3/cmd/helm@{HELM}"),
    ]);
    crate::run(cmd)?;
    std::fs::rename(gobin.join("helm"), out).with_context(|| format!("moving helm to {}", out.display()))?;
    say(&format!("built {}", out.display()));
    Ok(())
}

/// CoreDNS [`COREDNS`] for `bench serve`, built when missing and cached as `target/e2e-bin/coredns-<version>`.
pub fn coredns(target: &Path) -> Result<PathBuf> {
    let out = target.join("e2e-bin").join(format!("coredns-{COREDNS}"));
    if out.is_file() {
        return Ok(out);
    }
    let go = Go::find()?;
    say(&format!(
        "building CoreDNS {COREDNS} (a cold build takes a few minutes)"
    ));
    let gobin = target.join("e2e-go").join(format!("coredns-{COREDNS}"));
    std::fs::create_dir_all(&gobin).with_context(|| format!("creating {}", gobin.display()))?;
    let mut cmd = go.cmd(&gobin);
    cmd.env("GOBIN", &gobin).args([
        "install",
        "-p",
        "2",
        "-trimpath",
        "-ldflags",
        "-s -w",
        &format!("github.com/coredns/coredns@{COREDNS}"),
    ]);
    crate::run(cmd)?;
    std::fs::rename(gobin.join("coredns"), &out).with_context(|| format!("moving CoreDNS to {}", out.display()))?;
    say(&format!("built {}", out.display()));
    Ok(out)
}

/// helm-unittest's command, built in its module's directory of the module cache: there its go.mod (with its
/// `replace`) is the main module's, and the build only reads.
fn build_helm_unittest(go: &Go, work: &Path, out: &Path) -> Result<()> {
    say(&format!("building helm-unittest {HELM_UNITTEST} (about a minute cold)"));
    std::fs::create_dir_all(work).with_context(|| format!("creating {}", work.display()))?;
    let module = format!("github.com/helm-unittest/helm-unittest@{HELM_UNITTEST}");
    let info = go.output(work, &["mod", "download", "-json", &module])?;
    let dir = json_string_field(&info, "Dir").with_context(|| format!("`go mod download` gave no Dir for {module}"))?;
    build_into(go, Path::new(&dir), out, "-s -w", "./cmd/helm-unittest")
}

/// Directories of a Go module (`module@version`), from the module cache (`go mod download`), into `to`: one
/// directory alone is copied as `to`, several each under its last path component. By way of a temporary
/// directory, so an interrupted copy is never taken for a complete one.
fn copy_out_of_module(go: &Go, work: &Path, module: &str, dirs: &[&str], to: &Path) -> Result<()> {
    std::fs::create_dir_all(work).with_context(|| format!("creating {}", work.display()))?;
    let info = go.output(work, &["mod", "download", "-json", module])?;
    let dir = json_string_field(&info, "Dir").with_context(|| format!("`go mod download` gave no Dir for {module}"))?;
    let tmp = to.with_extension("tmp");
    let _ = std::fs::remove_dir_all(&tmp);
    for &sub in dirs {
        let dest = match dirs {
            [_] => tmp.clone(),
            _ => tmp.join(
                Path::new(sub)
                    .file_name()
                    .context("a module directory without a name")?,
            ),
        };
        copy_dir(&Path::new(&dir).join(sub), &dest)?;
    }
    let _ = std::fs::remove_dir_all(to);
    std::fs::rename(&tmp, to).with_context(|| format!("moving {} into place", to.display()))?;
    say(&format!("copied {} of {module} to {}", dirs.join(", "), to.display()));
    Ok(())
}

fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    copy_dir_except(from, to, &[])
}

/// Copies the tree at `from` to `to`, but for the directories named in `skip` (at any depth).
pub(crate) fn copy_dir_except(from: &Path, to: &Path, skip: &[&str]) -> Result<()> {
    std::fs::create_dir_all(to).with_context(|| format!("creating {}", to.display()))?;
    for entry in std::fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let entry = entry?;
        let dest = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            if !skip.iter().any(|s| entry.file_name() == *s) {
                copy_dir_except(&entry.path(), &dest, skip)?;
            }
        } else {
            std::fs::copy(entry.path(), &dest).with_context(|| format!("copying to {}", dest.display()))?;
        }
    }
    Ok(())
}

/// What the wrapper needs from k8s.io/kubernetes's go.mod.
#[derive(Debug, PartialEq)]
struct KubernetesModule {
    go_line: String,
    staging: Vec<String>,
    etcd: Option<String>,
}

fn parse_kubernetes_gomod(gomod: &str) -> Result<KubernetesModule> {
    let mut go_line = None;
    let mut staging = Vec::new();
    let mut etcd = None;
    for line in gomod.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["go", v] => go_line = Some(v.to_string()),
            // A `require` block line, or a one-line `require M V`.
            ["go.etcd.io/etcd/server/v3", v, ..] | ["require", "go.etcd.io/etcd/server/v3", v, ..] => {
                etcd = Some(v.to_string())
            }
            [module, "=>", path, ..] | ["replace", module, "=>", path, ..] => {
                if path.starts_with("./staging/") {
                    staging.push(module.to_string());
                } else {
                    bail!("k8s.io/kubernetes's go.mod replaces {module} with {path}: the wrapper does not know that");
                }
            }
            _ => {}
        }
    }
    let go_line = go_line.context("k8s.io/kubernetes's go.mod has no go line")?;
    if staging.is_empty() {
        bail!("k8s.io/kubernetes's go.mod has no staging replaces: the wrapper recipe no longer applies");
    }
    Ok(KubernetesModule { go_line, staging, etcd })
}

/// k8s.io/kubernetes v1.X.Y publishes its staging modules as v0.X.Y.
fn staging_version(kubernetes: &str) -> Result<String> {
    kubernetes
        .strip_prefix("v1.")
        .map(|rest| format!("v0.{rest}"))
        .with_context(|| format!("{kubernetes} is not a v1.x.y version"))
}

/// The version in `go version` output (`go version go1.26.8 linux/amd64`); `go1.27` counts as 1.27.0, and a
/// pre-release (`go1.27rc1`) as its release.
fn go_version(text: &str) -> Option<(u32, u32, u32)> {
    let v = text.split_whitespace().find_map(|w| {
        w.strip_prefix("go")
            .filter(|r| r.starts_with(|c: char| c.is_ascii_digit()))
    })?;
    let mut parts = v.split('.').map(|p| {
        let digits: String = p.chars().take_while(char::is_ascii_digit).collect();
        digits.parse::<u32>().ok()
    });
    let major = parts.next()??;
    let minor = parts.next().flatten().unwrap_or(0);
    let patch = parts.next().flatten().unwrap_or(0);
    Some((major, minor, patch))
}

/// A string field of `go mod download -json` output (one field per line, as the go tool prints it).
fn json_string_field(json: &str, field: &str) -> Option<String> {
    let key = format!("\"{field}\":");
    json.lines().find_map(|l| {
        let rest = l.trim().strip_prefix(&key)?.trim().trim_end_matches(',');
        rest.strip_prefix('"')?.strip_suffix('"').map(str::to_string)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubernetes_gomod_gives_go_line_staging_modules_and_etcd() -> Result<()> {
        let gomod = "module k8s.io/kubernetes\n\ngo 1.26.0\n\nrequire (\n\tgo.etcd.io/etcd/server/v3 v3.6.8\n\
                     \tk8s.io/api v0.0.0\n)\n\nreplace (\n\tk8s.io/api => ./staging/src/k8s.io/api\n\
                     \tk8s.io/apiserver => ./staging/src/k8s.io/apiserver\n)\n";
        let m = parse_kubernetes_gomod(gomod)?;
        assert_eq!(m.go_line, "1.26.0");
        assert_eq!(m.staging, vec!["k8s.io/api", "k8s.io/apiserver"]);
        assert_eq!(m.etcd.as_deref(), Some("v3.6.8"));
        Ok(())
    }

    #[test]
    fn a_replace_outside_staging_is_refused() {
        let gomod = "go 1.26.0\nreplace k8s.io/api => ./staging/src/k8s.io/api\nreplace foo => bar v1.0.0\n";
        assert!(parse_kubernetes_gomod(gomod).is_err());
    }

    #[test]
    fn staging_modules_are_v0_of_the_same_minor_and_patch() -> Result<()> {
        assert_eq!(staging_version("v1.36.4")?, "v0.36.4");
        assert!(staging_version("v2.0.0").is_err());
        Ok(())
    }

    #[test]
    fn gomod_path_is_read_from_download_json() {
        let json = "{\n\t\"Path\": \"k8s.io/kubernetes\",\n\t\"GoMod\": \"/root/go/pkg/mod/cache/download/k8s.io/kubernetes/@v/v1.36.4.mod\",\n}";
        assert_eq!(
            json_string_field(json, "GoMod").as_deref(),
            Some("/root/go/pkg/mod/cache/download/k8s.io/kubernetes/@v/v1.36.4.mod")
        );
        assert_eq!(json_string_field(json, "Zip"), None);
    }

    #[test]
    fn go_versions_are_read_from_go_version_output() {
        assert_eq!(go_version("go version go1.26.8 linux/amd64"), Some((1, 26, 8)));
        assert_eq!(go_version("go version go1.27 linux/amd64"), Some((1, 27, 0)));
        assert_eq!(go_version("go version go1.27rc1 linux/amd64"), Some((1, 27, 0)));
        assert!(go_version("go version go1.26.5 linux/amd64").is_some_and(|v| v < GO_MIN));
        assert_eq!(go_version("garbage"), None);
    }

    #[test]
    fn each_external_dns_wrapper_requires_its_release() -> Result<()> {
        for release in [EXTERNAL_DNS, EXTERNAL_DNS_PREVIOUS] {
            let path = crate::root().join(format!("xtask/go/external-dns/{}/go.mod", release.version));
            let gomod = std::fs::read_to_string(&path)?;
            assert!(
                requires(&gomod, "sigs.k8s.io/external-dns", release.version),
                "{}",
                path.display()
            );
            assert!(!requires(&gomod, "sigs.k8s.io/external-dns", "v0.0.0"));
        }
        Ok(())
    }
}
