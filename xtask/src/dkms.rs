//! `cargo xtask dkms`: builds and installs `kmod/` with DKMS, driven by
//! `kmod/dkms.conf`, against Debian's cloud kernel headers (the kernel that
//! `vm-test` boots), and checks what came out.
//!
//! Everything DKMS keeps lives under `target/dkms/`: `--sourcetree` (the copy of
//! `kmod/` as `mwait-<version>`, as a user would put it in `/usr/src`),
//! `--dkmstree` (DKMS's state and build area) and `--installtree` (where
//! `dkms install` puts the module, instead of `/lib/modules`; `--no-depmod`, so
//! the host's module index is untouched). DKMS signs every module it builds and
//! creates its signing key in `/var/lib/dkms` when there is none, a path it
//! takes from nowhere but `/etc/dkms/framework.conf`; a key made by this step
//! is removed again. The checks: `dkms status` says installed, the built and the
//! installed `.ko` exist, `modinfo` names the module and its vermagic is the
//! headers' `UTS_RELEASE`, the installed copy sits at `DEST_MODULE_LOCATION`,
//! both pass `kmod/tests/objdump-check.sh` (a VERW before every MWAIT), and
//! DKMS printed no "Deprecated" line about the dkms.conf.

use crate::util::{self, capture, cloud_kernel_release, ensure_apt, project_root, step, Res};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Debian packages the step needs.
const PACKAGES: &[&str] = &["dkms", "linux-headers-cloud-amd64", "gcc", "make"];

/// The most one `dkms` command may take (a build takes a few seconds).
const DKMS_LIMIT: Duration = Duration::from_secs(300);

/// The signing key and certificate DKMS creates when they are missing.
const MOK_FILES: [&str; 2] = ["/var/lib/dkms/mok.key", "/var/lib/dkms/mok.pub"];

/// The fields of a `dkms.conf` that this step checks the result against.
#[derive(Debug, PartialEq, Eq)]
pub struct DkmsConf {
    /// `PACKAGE_NAME`.
    pub name: String,
    /// `PACKAGE_VERSION`.
    pub version: String,
    /// `BUILT_MODULE_NAME[0]`.
    pub module: String,
    /// `DEST_MODULE_LOCATION[0]`.
    pub dest: String,
}

/// Reads the plain `KEY="value"` assignments of a `dkms.conf` (DKMS sources the
/// file as shell; ours uses no shell beyond quoted literals for these keys).
pub fn parse_dkms_conf(text: &str) -> Res<DkmsConf> {
    let get = |key: &str| -> Res<String> {
        text.lines()
            .filter_map(|l| l.trim().split_once('='))
            .find(|(k, _)| k.trim() == key)
            .map(|(_, v)| v.trim().trim_matches('"').to_string())
            .ok_or_else(|| format!("dkms.conf sets no {key}"))
    };
    Ok(DkmsConf {
        name: get("PACKAGE_NAME")?,
        version: get("PACKAGE_VERSION")?,
        module: get("BUILT_MODULE_NAME[0]")?,
        dest: get("DEST_MODULE_LOCATION[0]")?,
    })
}

/// The release string in a kernel headers tree's `utsrelease.h`
/// (`#define UTS_RELEASE "6.1.0-56-cloud-amd64"`): what a module built against
/// it must carry as the first word of its vermagic.
pub fn parse_uts_release(header: &str) -> Option<String> {
    header.lines().find_map(|l| {
        let rest = l.trim().strip_prefix("#define UTS_RELEASE")?;
        Some(rest.trim().trim_matches('"').to_string())
    })
}

/// `cargo xtask dkms`.
pub fn run(args: &[String]) -> Res {
    if let Some(a) = args.first() {
        return Err(format!("dkms takes no arguments, got `{a}`"));
    }
    let t0 = Instant::now();
    step("dkms: packages");
    ensure_apt(PACKAGES)?;
    let root = project_root();
    let conf = parse_dkms_conf(
        &std::fs::read_to_string(root.join("kmod/dkms.conf"))
            .map_err(|e| format!("kmod/dkms.conf: {e}"))?,
    )?;
    let kver = cloud_kernel_release()?;
    let headers = PathBuf::from(format!("/usr/src/linux-headers-{kver}"));
    let uts = std::fs::read_to_string(headers.join("include/generated/utsrelease.h"))
        .ok()
        .and_then(|h| parse_uts_release(&h))
        .ok_or_else(|| format!("no UTS_RELEASE in {}", headers.display()))?;

    let work = root.join("target/dkms");
    let _ = std::fs::remove_dir_all(&work);
    let src = work.join("src");
    let tree = work.join("tree");
    let inst = work.join("install");
    let pkg_dir = src.join(format!("{}-{}", conf.name, conf.version));
    for d in [&src, &tree, &inst.join(&kver)] {
        std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    util::run(
        Command::new("cp")
            .arg("-r")
            .arg(root.join("kmod"))
            .arg(&pkg_dir),
    )?;

    let keys_before: Vec<bool> = MOK_FILES.iter().map(|f| Path::new(f).exists()).collect();
    let result = build_and_check(&conf, &kver, &uts, &headers, &src, &tree, &inst);
    for (f, existed) in MOK_FILES.iter().zip(keys_before) {
        if !existed && Path::new(f).exists() {
            println!("removing {f}, which DKMS created for this build");
            let _ = std::fs::remove_file(f);
        }
    }
    result?;
    let _ = std::fs::remove_dir_all(&work);
    println!(
        "dkms: {}/{} built, installed into the private tree and checked for {kver} in {:.1} s",
        conf.name,
        conf.version,
        t0.elapsed().as_secs_f64()
    );
    Ok(())
}

/// `dkms add`, `build`, `install` and `status` on the private trees, then the checks.
fn build_and_check(
    conf: &DkmsConf,
    kver: &str,
    uts: &str,
    headers: &Path,
    src: &Path,
    tree: &Path,
    inst: &Path,
) -> Res {
    let spec = format!("{}/{}", conf.name, conf.version);
    let mut dkms = Dkms::new(src, tree, inst);
    let kernel = vec![
        spec.clone(),
        "-k".to_string(),
        kver.to_string(),
        format!("--kernelsourcedir={}", headers.display()),
    ];
    dkms.run("add", std::slice::from_ref(&spec))?;
    let built = dkms.run("build", &kernel);
    if built.is_err() {
        print_make_log(conf, tree);
    }
    built?;
    let mut install = kernel.clone();
    install.push("--no-depmod".to_string());
    dkms.run("install", &install)?;
    let status = dkms.run("status", std::slice::from_ref(&spec))?;

    step("dkms: checks");
    let mut checks = Checks::default();
    checks.check(
        status
            .lines()
            .any(|l| l.contains(kver) && l.contains("installed")),
        format!("dkms status says {spec} is installed for {kver}"),
    );
    let deprecated: Vec<&str> = dkms
        .log
        .lines()
        .filter(|l| l.contains("Deprecated"))
        .collect();
    checks.check(
        deprecated.is_empty(),
        format!("DKMS printed no deprecation about dkms.conf {deprecated:?}"),
    );
    for (what, path) in module_paths(conf, kver, tree, inst) {
        check_module(&mut checks, conf, uts, what, &path);
    }
    checks.into_result()
}

/// Where DKMS leaves the built module in its tree, and where `dkms install` puts
/// it in the install tree.
fn module_paths(
    conf: &DkmsConf,
    kver: &str,
    tree: &Path,
    inst: &Path,
) -> [(&'static str, PathBuf); 2] {
    let ko = format!("{}.ko", conf.module);
    let built_ko = tree
        .join(&conf.name)
        .join(&conf.version)
        .join(kver)
        .join(std::env::consts::ARCH)
        .join("module")
        .join(&ko);
    let installed_ko = inst
        .join(kver)
        .join(conf.dest.trim_start_matches('/'))
        .join(&ko);
    [("built", built_ko), ("installed", installed_ko)]
}

/// Runs `dkms` on the private trees and keeps everything it printed.
struct Dkms {
    /// `--dkmstree`, `--sourcetree` and `--installtree`, passed to every command.
    trees: [String; 3],
    /// The stdout and stderr of every command so far.
    log: String,
}

impl Dkms {
    fn new(src: &Path, tree: &Path, inst: &Path) -> Dkms {
        Dkms {
            trees: [
                format!("--dkmstree={}", tree.display()),
                format!("--sourcetree={}", src.display()),
                format!("--installtree={}", inst.display()),
            ],
            log: String::new(),
        }
    }

    /// `dkms <what> <extra> <trees>` under a step banner, printed with its output;
    /// its stdout, or an error when it fails.
    fn run(&mut self, what: &str, extra: &[String]) -> Res<String> {
        step(&format!("dkms {what}"));
        let mut cmd = Command::new("dkms");
        cmd.arg(what).args(extra).args(&self.trees);
        let c = capture(&mut cmd, DKMS_LIMIT);
        println!(
            "$ {}\n{}{}({} in {:.1} s)",
            c.command, c.stdout, c.stderr, c.status, c.secs
        );
        self.log.push_str(&c.stdout);
        self.log.push_str(&c.stderr);
        if c.ok {
            Ok(c.stdout)
        } else {
            Err(format!("`{}` failed: {}", c.command, c.status))
        }
    }
}

/// Prints the end of the module's `make.log` after a failed `dkms build`.
fn print_make_log(conf: &DkmsConf, tree: &Path) {
    let make_log = tree
        .join(&conf.name)
        .join(&conf.version)
        .join("build/make.log");
    if let Ok(l) = std::fs::read_to_string(&make_log) {
        println!("{}:\n{}", make_log.display(), util::tail(&l, 40));
    }
}

/// The checks' verdicts: each printed as it is made, the failed ones kept.
#[derive(Default)]
struct Checks(Vec<String>);

impl Checks {
    fn check(&mut self, ok: bool, what: String) {
        println!("{} {what}", if ok { "ok" } else { "not ok" });
        if !ok {
            self.0.push(what);
        }
    }

    fn into_result(self) -> Res {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(format!("DKMS checks failed: {:?}", self.0))
        }
    }
}

/// The `what` (built or installed) module exists at `path`, and `modinfo` gives
/// its name as the dkms.conf's and a vermagic that starts with `uts`.
fn check_module(checks: &mut Checks, conf: &DkmsConf, uts: &str, what: &str, path: &Path) {
    let exists = path.exists();
    checks.check(exists, format!("the {what} module is {}", path.display()));
    if !exists {
        return;
    }
    let field = |f: &str| {
        util::output(Command::new("modinfo").args(["-F", f]).arg(path))
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    };
    let name = field("name");
    checks.check(
        name == conf.module,
        format!("modinfo names the {what} module `{name}`"),
    );
    let vermagic = field("vermagic");
    checks.check(
        vermagic.split_whitespace().next() == Some(uts),
        format!(
            "the {what} module's vermagic `{vermagic}` starts with the headers' UTS_RELEASE {uts}"
        ),
    );
    // The CPU buffer clear before MWAIT is in the code DKMS built, too.
    let objdump = util::output(
        Command::new("sh")
            .arg(project_root().join("kmod/tests/objdump-check.sh"))
            .arg(path),
    )
    .unwrap_or_default();
    let verdict = objdump.lines().last().unwrap_or("no verdict").to_string();
    checks.check(
        verdict.starts_with("ok "),
        format!(
            "the {what} module passes kmod/tests/objdump-check.sh ({})",
            verdict
                .trim_start_matches("not ok ")
                .trim_start_matches("ok ")
        ),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_checked_in_dkms_conf_parses() {
        let text = std::fs::read_to_string(project_root().join("kmod/dkms.conf")).unwrap();
        let c = parse_dkms_conf(&text).unwrap();
        assert_eq!(c.name, "mwait");
        assert_eq!(c.module, "mwait");
        assert!(c.dest.starts_with('/'), "{}", c.dest);
        assert!(!c.version.is_empty());
    }

    #[test]
    fn dkms_conf_fields_are_read_exactly() {
        let c = parse_dkms_conf(
            "PACKAGE_NAME=\"x\"\nPACKAGE_VERSION=\"1.2\"\n\
             BUILT_MODULE_NAME[0]=\"y\"\nDEST_MODULE_LOCATION[0]=\"/extra\"\n",
        )
        .unwrap();
        assert_eq!(
            c,
            DkmsConf {
                name: "x".into(),
                version: "1.2".into(),
                module: "y".into(),
                dest: "/extra".into()
            }
        );
        let missing = parse_dkms_conf("PACKAGE_NAME=\"x\"\n").unwrap_err();
        assert!(missing.contains("PACKAGE_VERSION"), "{missing}");
    }

    #[test]
    fn uts_release_is_read_from_the_header() {
        let h = "/* generated */\n#define UTS_RELEASE \"6.1.0-56-cloud-amd64\"\n";
        assert_eq!(
            parse_uts_release(h).as_deref(),
            Some("6.1.0-56-cloud-amd64")
        );
        assert_eq!(parse_uts_release("#define UTS_VERSION \"x\"\n"), None);
    }
}
