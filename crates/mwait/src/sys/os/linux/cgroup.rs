//! How many CPUs this *process* may use: the number the process-wide defaults (spin or
//! not, the run-queue gate) are derived from.
//!
//! On Linux it is the online CPUs (`/sys/devices/system/cpu/online`) within the
//! process's cpuset, further limited by its CPU quota:
//!
//! - the cpuset is `cpuset.cpus.effective` of the process's cgroup v2 (or, on a host
//!   that still mounts the v1 `cpuset` controller, `cpuset.effective_cpus` of that
//!   hierarchy); without one there is no limit. The kernel keeps an effective list
//!   within the active CPUs (it takes a CPU going offline out of every cpuset's
//!   effective list), so with one the online list is not read: it is read without a
//!   cpuset, or where an old v1 hierarchy has only its configured `cpuset.cpus`,
//!   which may name offline CPUs;
//! - the quota is `cpu.max` (`QUOTA PERIOD` or `max PERIOD`) of the cgroup v2 and each
//!   of its ancestors up to the mount point (or v1's `cpu.cfs_quota_us` and
//!   `cpu.cfs_period_us`), the tightest one counting as `ceil(QUOTA / PERIOD)` CPUs.
//!
//! The process's cgroup in each hierarchy comes from `/proc/self/cgroup`, and where
//! the hierarchy is mounted from the conventional mount points (`/sys/fs/cgroup`,
//! `/sys/fs/cgroup/unified`, `/sys/fs/cgroup/CONTROLLERS`) when the process's own
//! cgroup directory is found there, as `std::thread::available_parallelism` does
//! for cgroup v2; otherwise from `/proc/self/mountinfo`, whose text the kernel
//! generates mount by mount for each reading (`conventional_mounts`).
//!
//! It is never the calling thread's affinity mask (`sched_getaffinity(0)`, which
//! `std::thread::available_parallelism` reads on Linux): the first thread to wait may
//! have pinned itself to one CPU, as latency-sensitive programs do, and the defaults
//! are settled once per process. Where the threads actually run is a per-wait fact
//! that the ladder reads itself (`current_cpu`).
//!
//! Every file is read once, when the count is first needed (`detect::process_cpus`,
//! which a fresh process's first wait does not call). A file that is missing, unreadable
//! or malformed imposes no limit (the parsers return `None`, never panic), and when
//! not even the online list can be read the count comes from
//! `sysconf(_SC_NPROCESSORS_ONLN)`. Other targets use
//! `std::thread::available_parallelism` (or 1), which is what they offer.

/// The kernel's list of online CPUs.
const ONLINE_LIST_PATH: &str = "/sys/devices/system/cpu/online";
/// Where the kernel lists the process's mounts (for the cgroup mount points).
const MOUNTINFO_PATH: &str = "/proc/self/mountinfo";
/// Where the kernel lists the process's cgroup in each hierarchy.
const PROC_CGROUP_PATH: &str = "/proc/self/cgroup";

/// The most cgroup levels walked up in search of a tighter quota: real hierarchies
/// are a handful deep; this bounds the reads on a pathological path.
const MAX_CGROUP_DEPTH: usize = 32;

mod parse;

use parse::{
    parse_cfs_quota, parse_cpu_max, parse_mountinfo, parse_proc_cgroup, CgroupEntry, CpuList,
    Mount,
};

/// How many CPUs this process may use (at least 1; see the module docs), over a
/// file reader (`None`: the file cannot be read), so that the whole resolution runs
/// in tests on fixture trees. `fallback` gives the online count when the online list
/// is unreadable.
pub(crate) fn process_cpus_from(
    read: &dyn Fn(&str) -> Option<String>,
    fallback: fn() -> usize,
) -> usize {
    let seen = std::cell::RefCell::new(Vec::new());
    let read = |path: &str| read_once(&seen, read, path);
    let groups = read(PROC_CGROUP_PATH)
        .map(|s| parse_proc_cgroup(&s))
        .unwrap_or_default();
    let mounts = conventional_mounts(&groups, &read).unwrap_or_else(|| {
        read(MOUNTINFO_PATH)
            .map(|s| parse_mountinfo(&s))
            .unwrap_or_default()
    });
    let (cpuset, quota) = limits(&read, &mounts, &groups);
    let cpus = match cpuset {
        Some(Cpuset {
            cpus,
            effective: true,
        }) => cpus.len(),
        cpuset => {
            let online = read(ONLINE_LIST_PATH).and_then(|s| CpuList::parse(&s));
            within_online(online.as_ref(), cpuset.as_ref().map(|c| &c.cpus), fallback)
        }
    };
    quota.map_or(cpus, |q| cpus.min(q)).max(1)
}

/// A cpuset read from the process's cgroup.
struct Cpuset {
    cpus: CpuList,
    /// Whether it is the kernel's effective list (`cpuset.cpus.effective`,
    /// `cpuset.effective_cpus`), which holds active CPUs only, rather than an old v1
    /// hierarchy's configured `cpuset.cpus`.
    effective: bool,
}

/// `read(path)`, each path read once: `seen` keeps the answers, since the
/// conventional mount points are recognised by the files read next.
fn read_once(
    seen: &std::cell::RefCell<Vec<(String, Option<String>)>>,
    read: &dyn Fn(&str) -> Option<String>,
    path: &str,
) -> Option<String> {
    if let Some((_, text)) = seen.borrow().iter().find(|(p, _)| p == path) {
        return text.clone();
    }
    let text = read(path);
    seen.borrow_mut().push((path.to_string(), text.clone()));
    text
}

/// The process's cpuset and its tightest CPU quota, from its cgroups in `mounts`
/// (v2, else v1 for the cpuset; both for the quota, the tighter counting).
fn limits(
    read: &dyn Fn(&str) -> Option<String>,
    mounts: &[Mount],
    groups: &[CgroupEntry],
) -> (Option<Cpuset>, Option<usize>) {
    let v2 = Hierarchy::V2
        .counts(groups)
        .then(|| cgroup_dir(mounts, groups, Hierarchy::V2))
        .flatten();
    // A v2 controller's files exist in a cgroup only where `cgroup.controllers` names
    // it (on a hybrid host it names none of those bound to v1): the files of one it
    // does not name are not looked up.
    let listed = v2
        .as_ref()
        .and_then(|d| read(&format!("{d}/cgroup.controllers")));
    let v2_has = |c: &str| {
        listed
            .as_ref()
            .map_or(true, |l| l.split_whitespace().any(|x| x == c))
    };
    let list = |path: String, effective: bool| {
        let cpus = CpuList::parse(&read(&path)?)?;
        Some(Cpuset { cpus, effective })
    };
    let cpuset = v2
        .as_ref()
        .filter(|_| v2_has("cpuset"))
        .and_then(|d| list(format!("{d}/cpuset.cpus.effective"), true))
        .or_else(|| {
            let d = cgroup_dir(mounts, groups, Hierarchy::V1("cpuset"))?;
            list(format!("{d}/cpuset.effective_cpus"), true)
                .or_else(|| list(format!("{d}/cpuset.cpus"), false))
        });
    let quota_v2 = v2.as_ref().and_then(|d| {
        tightest_quota(d, mounts, Hierarchy::V2, |dir| {
            // Above the process's cgroup the controller may be enabled where it is
            // not in its own: those levels are read.
            if dir == d.as_str() && !v2_has("cpu") {
                return None;
            }
            parse_cpu_max(&read(&format!("{dir}/cpu.max"))?)
        })
    });
    let quota_v1 = cgroup_dir(mounts, groups, Hierarchy::V1("cpu")).and_then(|d| {
        tightest_quota(&d, mounts, Hierarchy::V1("cpu"), |dir| {
            // A quota of -1 (no limit, the default) needs no period.
            let quota = read(&format!("{dir}/cpu.cfs_quota_us"))?;
            if quota.trim().starts_with('-') {
                return None;
            }
            parse_cfs_quota(&quota, &read(&format!("{dir}/cpu.cfs_period_us"))?)
        })
    });
    let quota = match (quota_v2, quota_v1) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    (cpuset, quota)
}

/// The online CPUs within a cpuset that is not an effective list (an empty
/// intersection, which a running process cannot have, counts as no cpuset).
fn within_online(
    online: Option<&CpuList>,
    cpuset: Option<&CpuList>,
    fallback: fn() -> usize,
) -> usize {
    match (online, cpuset) {
        (Some(o), Some(c)) => match o.intersection_len(c) {
            0 => o.len(),
            n => n,
        },
        (Some(o), None) => o.len(),
        (None, Some(c)) => c.len().min(fallback()),
        (None, None) => fallback(),
    }
}

/// Which cgroup hierarchy to look in.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Hierarchy {
    /// The unified (v2) hierarchy.
    V2,
    /// The v1 hierarchy that carries this controller.
    V1(&'static str),
}

impl Hierarchy {
    fn mount(self, mounts: &[Mount]) -> Option<&Mount> {
        mounts.iter().find(|m| match self {
            Hierarchy::V2 => m.fstype == "cgroup2",
            Hierarchy::V1(c) => m.fstype == "cgroup" && m.super_options.split(',').any(|o| o == c),
        })
    }

    /// Whether the count reads this hierarchy: every v1 one it looks up, and v2
    /// unless v1 hierarchies carry both `cpuset` and `cpu`. A controller is bound to
    /// one hierarchy at a time, so v2 then has neither (a hybrid host such as the
    /// 2-vCPU guest, whose v2 hierarchy holds `hugetlb` alone), and its files,
    /// looked for at two places, would cost the count's reading two opens.
    fn counts(self, groups: &[CgroupEntry]) -> bool {
        let in_v1 = |c: &'static str| Hierarchy::V1(c).entry(groups).is_some();
        self != Hierarchy::V2 || !(in_v1("cpuset") && in_v1("cpu"))
    }

    fn entry(self, groups: &[CgroupEntry]) -> Option<&CgroupEntry> {
        groups.iter().find(|g| match self {
            Hierarchy::V2 => g.id == 0 && g.controllers.is_empty(),
            Hierarchy::V1(c) => g.controllers.iter().any(|x| x == c),
        })
    }
}

/// The directory of the process's cgroup in `h`: the mount point joined with the
/// cgroup's path below the mount's root. `None` when the hierarchy is not mounted or
/// the process's cgroup lies outside what is mounted (a path such as `/../..` seen
/// from another cgroup namespace).
fn cgroup_dir(mounts: &[Mount], groups: &[CgroupEntry], h: Hierarchy) -> Option<String> {
    let m = h.mount(mounts)?;
    let path = &h.entry(groups)?.path;
    if path.split('/').any(|c| c == "..") {
        return None;
    }
    let below = if m.root == "/" {
        path.as_str()
    } else {
        let rest = path.strip_prefix(m.root.as_str())?;
        if !(rest.is_empty() || rest.starts_with('/')) {
            return None;
        }
        rest
    };
    Some(format!(
        "{}{}",
        m.mount_point.trim_end_matches('/'),
        below.trim_end_matches('/')
    ))
}

/// The hierarchies the count reads, with the file that every cgroup directory of
/// that hierarchy has and that the count reads first there.
const READ_HIERARCHIES: [(Hierarchy, &str); 3] = [
    (Hierarchy::V2, "cgroup.controllers"),
    (Hierarchy::V1("cpuset"), "cpuset.effective_cpus"),
    (Hierarchy::V1("cpu"), "cpu.cfs_quota_us"),
];

/// The mounts of the hierarchies the process belongs to (of those the count reads),
/// each at its conventional mount point: for v2 `/sys/fs/cgroup` (a v2-only host) or
/// `/sys/fs/cgroup/unified` (a hybrid one), for a v1 controller
/// `/sys/fs/cgroup/CONTROLLERS` as `/proc/self/cgroup` lists them (`cpu,cpuacct`), or
/// `/sys/fs/cgroup/CONTROLLER`.
///
/// A mount point is taken only where the process's own cgroup directory below it
/// holds the hierarchy's file (`READ_HIERARCHIES`): a file that only that
/// hierarchy's filesystem has, at a path only the process's cgroup has, so the
/// mount's root is the hierarchy's root as this cgroup namespace sees it. Where the
/// mount shows a subtree of the hierarchy instead (a container without a cgroup
/// namespace, whose `/proc/self/cgroup` paths start above what it mounts), or the
/// hierarchy is mounted elsewhere, the directory is not found and the answer is
/// `None`: the caller reads `/proc/self/mountinfo`, whose text the kernel generates
/// mount by mount at each reading.
fn conventional_mounts(
    groups: &[CgroupEntry],
    read: &dyn Fn(&str) -> Option<String>,
) -> Option<Vec<Mount>> {
    const ROOT: &str = "/sys/fs/cgroup";
    let mut mounts = Vec::new();
    for (h, file) in READ_HIERARCHIES {
        let Some(entry) = h.entry(groups).filter(|_| h.counts(groups)) else {
            continue;
        };
        if entry.path.split('/').any(|c| c == "..") {
            return None;
        }
        let candidates = match h {
            Hierarchy::V2 => [ROOT.to_string(), format!("{ROOT}/unified")],
            Hierarchy::V1(c) => [
                format!("{ROOT}/{}", entry.controllers.join(",")),
                format!("{ROOT}/{c}"),
            ],
        };
        let below = entry.path.trim_end_matches('/');
        let mount_point = candidates
            .into_iter()
            .find(|m| read(&format!("{m}{below}/{file}")).is_some())?;
        mounts.push(Mount {
            root: "/".to_string(),
            mount_point,
            fstype: match h {
                Hierarchy::V2 => "cgroup2",
                Hierarchy::V1(_) => "cgroup",
            }
            .to_string(),
            super_options: entry.controllers.join(","),
        });
    }
    Some(mounts)
}

/// The tightest quota (in CPUs) on the way from `dir` up to the mount point of `h`,
/// reading each level with `quota_at` (`None`: no limit there).
fn tightest_quota(
    dir: &str,
    mounts: &[Mount],
    h: Hierarchy,
    quota_at: impl Fn(&str) -> Option<usize>,
) -> Option<usize> {
    let top = h
        .mount(mounts)?
        .mount_point
        .trim_end_matches('/')
        .to_string();
    let mut dir = dir.to_string();
    let mut best: Option<usize> = None;
    for _ in 0..MAX_CGROUP_DEPTH {
        if let Some(q) = quota_at(&dir) {
            best = Some(best.map_or(q, |b| b.min(q)));
        }
        if dir.len() <= top.len() {
            break;
        }
        match dir.rfind('/') {
            Some(i) if i >= top.len() => dir.truncate(i),
            _ => break,
        }
    }
    best
}

#[cfg(test)]
mod tests;
