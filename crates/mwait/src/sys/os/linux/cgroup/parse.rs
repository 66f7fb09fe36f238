//! The parsers of the files the CPU count reads: the kernel's CPU lists, the v2 and
//! v1 quota files, `/proc/self/mountinfo` and `/proc/self/cgroup`. Each takes the
//! file's text and returns `None` (or skips the line) on anything malformed; none
//! panics.

/// The largest CPU number accepted in a list: the kernel's `NR_CPUS` limit is 8192
/// on x86-64 (`CONFIG_MAXSMP`); anything far beyond it is a malformed file.
const MAX_CPU: u32 = 1 << 16;

/// A set of CPU numbers, as sorted, disjoint, non-adjacent inclusive ranges.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CpuList(pub(super) Vec<(u32, u32)>);

impl CpuList {
    /// Parses the kernel's list format (`0-3,5,8-11`; surrounding white space and a
    /// trailing newline allowed). `None` when malformed or empty.
    pub(crate) fn parse(s: &str) -> Option<CpuList> {
        let mut ranges = Vec::new();
        for item in s.trim().split(',') {
            let item = item.trim();
            let (lo, hi) = match item.split_once('-') {
                Some((a, b)) => (a.trim().parse::<u32>().ok()?, b.trim().parse::<u32>().ok()?),
                None => {
                    let c = item.parse::<u32>().ok()?;
                    (c, c)
                }
            };
            if lo > hi || hi > MAX_CPU {
                return None;
            }
            ranges.push((lo, hi));
        }
        ranges.sort_unstable();
        let mut merged: Vec<(u32, u32)> = Vec::with_capacity(ranges.len());
        for (lo, hi) in ranges {
            match merged.last_mut() {
                Some(last) if lo <= last.1.saturating_add(1) => last.1 = last.1.max(hi),
                _ => merged.push((lo, hi)),
            }
        }
        (!merged.is_empty()).then_some(CpuList(merged))
    }

    /// How many CPUs the list holds.
    pub(crate) fn len(&self) -> usize {
        self.0.iter().map(|&(lo, hi)| (hi - lo) as usize + 1).sum()
    }

    /// How many CPUs both lists hold.
    pub(crate) fn intersection_len(&self, other: &CpuList) -> usize {
        let mut n = 0;
        for &(a, b) in &self.0 {
            for &(c, d) in &other.0 {
                let (lo, hi) = (a.max(c), b.min(d));
                if lo <= hi {
                    n += (hi - lo) as usize + 1;
                }
            }
        }
        n
    }
}

/// `cpu.max` of cgroup v2 (`QUOTA PERIOD`, both in µs, or `max PERIOD`): the CPUs the
/// quota amounts to, rounded up (a quota of 1.5 CPUs lets two threads run at once for
/// part of each period). `None` for `max` or a malformed file.
pub(crate) fn parse_cpu_max(s: &str) -> Option<usize> {
    let mut it = s.split_whitespace();
    let quota = it.next()?;
    let period = it.next().map_or(Some(100_000), |p| p.parse::<u64>().ok())?;
    if quota == "max" {
        return None;
    }
    quota_cpus(quota.parse::<i64>().ok()?, period)
}

/// cgroup v1's `cpu.cfs_quota_us` (`-1`: no limit) and `cpu.cfs_period_us`, as for
/// [`parse_cpu_max`].
pub(crate) fn parse_cfs_quota(quota: &str, period: &str) -> Option<usize> {
    quota_cpus(quota.trim().parse().ok()?, period.trim().parse().ok()?)
}

/// `ceil(quota / period)` CPUs, at least 1; `None` for a negative quota (no limit) or
/// a zero period.
fn quota_cpus(quota: i64, period: u64) -> Option<usize> {
    let quota = u64::try_from(quota).ok()?;
    if period == 0 {
        return None;
    }
    usize::try_from(quota.div_ceil(period))
        .ok()
        .map(|n| n.max(1))
}

/// One line of `/proc/self/mountinfo`, the fields we use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Mount {
    /// The path within the filesystem that is mounted (for a cgroup mount: the cgroup
    /// that appears at the mount point).
    pub(crate) root: String,
    /// Where it is mounted.
    pub(crate) mount_point: String,
    /// The filesystem type (`cgroup2`, `cgroup`).
    pub(crate) fstype: String,
    /// The per-superblock options (for cgroup v1: the controllers, among others).
    pub(crate) super_options: String,
}

/// Parses `/proc/self/mountinfo`: `ID PARENT MAJ:MIN ROOT MOUNT_POINT OPTIONS
/// [OPTIONAL...] - FSTYPE SOURCE SUPER_OPTIONS` per line. Malformed lines are skipped.
pub(crate) fn parse_mountinfo(s: &str) -> Vec<Mount> {
    s.lines()
        .filter_map(|line| {
            let (head, tail) = line.split_once(" - ")?;
            let mut head = head.split_whitespace();
            let (_id, _parent, _dev) = (head.next()?, head.next()?, head.next()?);
            let root = unescape_octal(head.next()?);
            let mount_point = unescape_octal(head.next()?);
            let mut tail = tail.split_whitespace();
            let fstype = tail.next()?.to_string();
            let _source = tail.next();
            let super_options = tail.next().unwrap_or("").to_string();
            Some(Mount {
                root,
                mount_point,
                fstype,
                super_options,
            })
        })
        .collect()
}

/// Undoes mountinfo's escapes (`\040` for a space, `\011`, `\012`, `\134`); an
/// escape that is not three octal digits is kept as it is.
pub(super) fn unescape_octal(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let digits = b.get(i + 1..i + 4);
        let code = digits.filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match (b[i], code) {
            (b'\\', Some(d)) => {
                let v = d.iter().fold(0u32, |v, c| v * 8 + u32::from(c - b'0'));
                out.push(u8::try_from(v).unwrap_or(b'?'));
                i += 4;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// One line of `/proc/self/cgroup`: `ID:CONTROLLERS:PATH`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CgroupEntry {
    /// The hierarchy id: 0 for the cgroup v2 unified hierarchy.
    pub(crate) id: u32,
    /// The v1 controllers bound to this hierarchy (empty for v2).
    pub(crate) controllers: Vec<String>,
    /// The process's cgroup, relative to the root of the hierarchy as this cgroup
    /// namespace sees it.
    pub(crate) path: String,
}

/// Parses `/proc/self/cgroup`. Malformed lines are skipped.
pub(crate) fn parse_proc_cgroup(s: &str) -> Vec<CgroupEntry> {
    s.lines()
        .filter_map(|line| {
            let mut it = line.splitn(3, ':');
            let id = it.next()?.trim().parse().ok()?;
            let controllers = it
                .next()?
                .split(',')
                .filter(|c| !c.is_empty())
                .map(str::to_string)
                .collect();
            let path = it.next()?.trim_end().to_string();
            path.starts_with('/').then_some(CgroupEntry {
                id,
                controllers,
                path,
            })
        })
        .collect()
}
