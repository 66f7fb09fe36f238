//! Package energy where the machine tells it: the powercap interface of Linux's RAPL
//! driver (`/sys/class/powercap/intel-rapl:N/energy_uj`, which AMD CPUs since family
//! 17h expose under the same name), summed over the packages and read around each
//! measured slice, so that a report can give energy per wait beside the time.
//!
//! The counters are package-wide: they hold everything the machine did during the
//! slice, the other threads and processes included. Only slices measured side by
//! side in one run (the benches' interleaved rounds) are compared with each other.

use std::fs;
use std::path::{Path, PathBuf};

/// Where the kernel puts the powercap zones.
pub const POWERCAP: &str = "/sys/class/powercap";

/// One package zone: its counter file and where the counter wraps.
#[derive(Clone, Debug)]
struct Zone {
    energy_uj: PathBuf,
    /// `max_energy_range_uj`: the counter counts from 0 up to this, then wraps to 0.
    range_uj: u64,
}

/// The package zones of a powercap tree.
#[derive(Clone, Debug)]
pub struct Meter {
    zones: Vec<Zone>,
}

/// The counters of every zone at one moment.
#[derive(Clone, Debug)]
pub struct Reading(Vec<u64>);

impl Meter {
    /// The package zones under [`POWERCAP`], or why there are none to read.
    pub fn system() -> Result<Meter, String> {
        Meter::open(Path::new(POWERCAP))
    }

    /// The package zones under `root` (a powercap tree: one folder per zone, named
    /// `intel-rapl:N`; sub-zones `intel-rapl:N:M` are parts of a package and are not
    /// added again), each readable now; or why there are none.
    pub fn open(root: &Path) -> Result<Meter, String> {
        let entries = fs::read_dir(root).map_err(|e| format!("{}: {e}", root.display()))?;
        let mut names: Vec<String> = entries
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| is_package_zone(n))
            .collect();
        names.sort();
        if names.is_empty() {
            return Err(format!("{}: no RAPL package zone", root.display()));
        }
        let mut zones = Vec::new();
        for n in names {
            let dir = root.join(&n);
            let range_uj = read_u64(&dir.join("max_energy_range_uj"))?;
            let energy_uj = dir.join("energy_uj");
            read_u64(&energy_uj)?;
            zones.push(Zone {
                energy_uj,
                range_uj,
            });
        }
        Ok(Meter { zones })
    }

    /// Every zone's counter now (`None` if one stopped being readable).
    pub fn read(&self) -> Option<Reading> {
        self.zones
            .iter()
            .map(|z| read_u64(&z.energy_uj).ok())
            .collect::<Option<Vec<u64>>>()
            .map(Reading)
    }

    /// The energy between `before` and `after` in µJ, summed over the zones, each
    /// counter allowed to have wrapped once (at its `max_energy_range_uj`, hours of
    /// full load on current parts: far longer than a bench slice).
    pub fn between(&self, before: &Reading, after: &Reading) -> u64 {
        self.zones
            .iter()
            .zip(before.0.iter().zip(&after.0))
            .map(|(z, (&b, &a))| {
                if a >= b {
                    a - b
                } else {
                    z.range_uj.saturating_sub(b).saturating_add(a)
                }
            })
            .sum()
    }
}

/// Whether a powercap entry is a package zone: `intel-rapl:N` (no sub-zone part).
fn is_package_zone(name: &str) -> bool {
    name.strip_prefix("intel-rapl:")
        .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
}

/// A file holding one decimal number.
fn read_u64(path: &Path) -> Result<u64, String> {
    let text = fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    text.trim()
        .parse()
        .map_err(|_| format!("{}: not a number: {:?}", path.display(), text.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A recorded powercap tree of a two-package machine (the layout of Linux 6.x:
    /// package zones, a core and a dram sub-zone, and the `intel-rapl` control type
    /// entry, which is not a zone), with `(energy_uj, max_energy_range_uj)` per zone.
    fn tree(zones: &[(&str, u64, u64)]) -> PathBuf {
        let root = std::env::temp_dir().join(format!(
            "mwait-powercap-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(root.join("intel-rapl")).unwrap();
        for (name, e, max) in zones {
            let d = root.join(name);
            fs::create_dir_all(&d).unwrap();
            fs::write(d.join("energy_uj"), format!("{e}\n")).unwrap();
            fs::write(d.join("max_energy_range_uj"), format!("{max}\n")).unwrap();
            fs::write(d.join("name"), "package-0\n").unwrap();
        }
        root
    }

    #[test]
    fn packages_are_summed_and_sub_zones_left_out() {
        let root = tree(&[
            ("intel-rapl:0", 1_000, 262_143_328_850),
            ("intel-rapl:0:0", 500, 262_143_328_850),
            ("intel-rapl:1", 2_000, 262_143_328_850),
        ]);
        let m = Meter::open(&root).unwrap();
        let before = m.read().unwrap();
        fs::write(root.join("intel-rapl:0/energy_uj"), "4000\n").unwrap();
        fs::write(root.join("intel-rapl:0:0/energy_uj"), "999999\n").unwrap();
        fs::write(root.join("intel-rapl:1/energy_uj"), "2500\n").unwrap();
        let after = m.read().unwrap();
        assert_eq!(m.between(&before, &after), 3_000 + 500);
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_counter_that_wrapped_counts_the_way_round() {
        let root = tree(&[("intel-rapl:0", 9_900, 10_000)]);
        let m = Meter::open(&root).unwrap();
        let before = m.read().unwrap();
        fs::write(root.join("intel-rapl:0/energy_uj"), "150\n").unwrap();
        let after = m.read().unwrap();
        assert_eq!(m.between(&before, &after), 100 + 150);
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_tree_without_packages_or_with_unreadable_counters_says_why() {
        let root = tree(&[]);
        let e = Meter::open(&root).unwrap_err();
        assert!(e.contains("no RAPL package zone"), "{e}");
        fs::remove_dir_all(&root).unwrap();
        let root = tree(&[("intel-rapl:0", 1, 10)]);
        fs::write(root.join("intel-rapl:0/energy_uj"), "n/a\n").unwrap();
        let e = Meter::open(&root).unwrap_err();
        assert!(e.contains("not a number"), "{e}");
        fs::remove_dir_all(&root).unwrap();
        assert!(Meter::open(Path::new("/nonexistent/powercap")).is_err());
    }
}
