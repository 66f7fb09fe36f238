use super::parse::unescape_octal;
use super::*;
use std::collections::HashMap;

fn list(s: &str) -> CpuList {
    CpuList::parse(s).unwrap()
}

#[test]
fn cpu_lists_parse_merge_and_count() {
    assert_eq!(list("0-3,5\n").len(), 5);
    assert_eq!(list("0").len(), 1);
    assert_eq!(list("8-11, 0-3").0, vec![(0, 3), (8, 11)]);
    // Overlapping and adjacent ranges merge, so nothing counts twice.
    assert_eq!(list("0-3,2-5,6").0, vec![(0, 6)]);
    assert_eq!(list("0-3,2-5,6").len(), 7);
    assert_eq!(list("0-63").intersection_len(&list("2,4-5,70")), 3);
    assert_eq!(list("0-1").intersection_len(&list("2-3")), 0);
}

#[test]
fn malformed_cpu_lists_are_refused() {
    for bad in [
        "",
        "\n",
        "a",
        "3-1",
        "0-",
        "-1",
        "0,,1",
        "0-3;5",
        "1-99999999",
        "0 1",
    ] {
        assert_eq!(CpuList::parse(bad), None, "{bad:?}");
    }
}

#[test]
fn cpu_max_is_rounded_up_to_whole_cpus() {
    assert_eq!(parse_cpu_max("max 100000\n"), None);
    assert_eq!(parse_cpu_max("max"), None);
    assert_eq!(parse_cpu_max("200000 100000\n"), Some(2));
    assert_eq!(parse_cpu_max("150000 100000"), Some(2));
    assert_eq!(parse_cpu_max("50000 100000"), Some(1));
    // A quota without a period uses the kernel's default period, 100 ms.
    assert_eq!(parse_cpu_max("300000"), Some(3));
    for bad in ["", "x 100000", "100000 0", "100000 y", "-5 100000"] {
        assert_eq!(parse_cpu_max(bad), None, "{bad:?}");
    }
    assert_eq!(parse_cfs_quota("-1\n", "100000\n"), None);
    assert_eq!(parse_cfs_quota("250000\n", "100000\n"), Some(3));
    assert_eq!(parse_cfs_quota("1000", "100000"), Some(1));
    assert_eq!(parse_cfs_quota("", "100000"), None);
}

const MOUNTINFO_V2: &str = "\
22 1 0:21 / /proc rw,nosuid - proc proc rw
30 24 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate
";

const MOUNTINFO_HYBRID: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

#[test]
fn mountinfo_lines_give_root_mount_point_and_type() {
    let m = parse_mountinfo(MOUNTINFO_V2);
    assert_eq!(m.len(), 2);
    assert_eq!(m[1].mount_point, "/sys/fs/cgroup");
    assert_eq!(m[1].fstype, "cgroup2");
    assert_eq!(m[1].root, "/");
    // Escaped spaces, a malformed line, an empty input.
    let m = parse_mountinfo("1 2 0:3 /a\\040b /mnt/x\\040y rw - cgroup2 none rw\ngarbage\n");
    assert_eq!(m.len(), 1);
    assert_eq!(m[0].root, "/a b");
    assert_eq!(m[0].mount_point, "/mnt/x y");
    assert!(parse_mountinfo("").is_empty());
    assert_eq!(unescape_octal("a\\9b\\"), "a\\9b\\");
}

#[test]
fn proc_cgroup_lines_give_hierarchies() {
    let g = parse_proc_cgroup("0::/user.slice/app.scope\n");
    assert_eq!(g.len(), 1);
    assert_eq!(g[0].id, 0);
    assert!(g[0].controllers.is_empty());
    assert_eq!(g[0].path, "/user.slice/app.scope");
    let g = parse_proc_cgroup("4:cpu,cpuacct:/docker/ab\n3:cpuset:/\nbad\n9:x\n");
    assert_eq!(g.len(), 2);
    assert_eq!(g[0].controllers, vec!["cpu", "cpuacct"]);
    // A path with a colon in it stays whole.
    assert_eq!(parse_proc_cgroup("0::/a:b")[0].path, "/a:b");
}

#[test]
fn cgroup_dirs_join_the_mount_point_and_the_path_below_its_root() {
    let mounts = parse_mountinfo(MOUNTINFO_V2);
    let at = |cg: &str| cgroup_dir(&mounts, &parse_proc_cgroup(cg), Hierarchy::V2);
    assert_eq!(at("0::/"), Some("/sys/fs/cgroup".into()));
    assert_eq!(at("0::/a/b\n"), Some("/sys/fs/cgroup/a/b".into()));
    assert_eq!(at("0::/../../x"), None, "outside this namespace");
    assert_eq!(at("3:cpuset:/"), None, "no v2 entry");
    // A container that mounts only its own subtree.
    let bind = parse_mountinfo("1 2 0:3 /docker/c1 /sys/fs/cgroup rw - cgroup2 none rw\n");
    let at = |cg: &str| cgroup_dir(&bind, &parse_proc_cgroup(cg), Hierarchy::V2);
    assert_eq!(at("0::/docker/c1/app"), Some("/sys/fs/cgroup/app".into()));
    assert_eq!(at("0::/docker/c1"), Some("/sys/fs/cgroup".into()));
    assert_eq!(at("0::/docker/c10"), None);
    assert_eq!(at("0::/other"), None);
}

/// `process_cpus_from` over a fixture tree.
fn cpus(files: &[(&str, &str)], fallback: fn() -> usize) -> usize {
    cpus_and_reads_with(files, fallback).0
}

fn sixteen() -> usize {
    16
}

#[test]
fn the_count_is_the_online_cpus_within_the_cpuset_and_quota() {
    let online = (ONLINE_LIST_PATH, "0-7\n");
    let mi = (MOUNTINFO_PATH, MOUNTINFO_V2);
    let cg = (PROC_CGROUP_PATH, "0::/app/worker\n");
    // No cgroup files: every online CPU.
    assert_eq!(cpus(&[online], sixteen), 8);
    assert_eq!(cpus(&[online, mi, cg], sixteen), 8);
    // The cpuset limits. An effective list holds active CPUs only: it counts as it
    // is, and the online list is not read.
    let set = (
        "/sys/fs/cgroup/app/worker/cpuset.cpus.effective",
        "2-3,6-7\n",
    );
    assert_eq!(cpus(&[online, mi, cg, set], sixteen), 4);
    let (_, reads) = cpus_and_reads(&[online, mi, cg, set]);
    assert!(!reads.iter().any(|p| p == ONLINE_LIST_PATH), "{reads:?}");
    // The tightest quota on the way up counts, rounded up.
    let q_leaf = ("/sys/fs/cgroup/app/worker/cpu.max", "max 100000\n");
    let q_mid = ("/sys/fs/cgroup/app/cpu.max", "250000 100000\n");
    assert_eq!(cpus(&[online, mi, cg, q_leaf, q_mid], sixteen), 3);
    assert_eq!(cpus(&[online, mi, cg, set, q_leaf, q_mid], sixteen), 3);
    let q_one = ("/sys/fs/cgroup/app/worker/cpu.max", "50000 100000\n");
    assert_eq!(cpus(&[online, mi, cg, set, q_one, q_mid], sixteen), 1);
    // Malformed files impose nothing.
    let junk = ("/sys/fs/cgroup/app/worker/cpuset.cpus.effective", "junk");
    let junk_q = ("/sys/fs/cgroup/app/cpu.max", "1 0");
    assert_eq!(cpus(&[online, mi, cg, junk, junk_q], sixteen), 8);
    // No online list and no cpuset: the fallback.
    assert_eq!(cpus(&[], sixteen), 16);
    assert_eq!(cpus(&[(ONLINE_LIST_PATH, "garbage")], || 0), 1);
}

/// An old v1 hierarchy's configured `cpuset.cpus` (read where it has no
/// `cpuset.effective_cpus`) may name offline CPUs: it counts within the online list.
#[test]
fn a_configured_cpuset_counts_within_the_online_cpus() {
    let online = (ONLINE_LIST_PATH, "0-7\n");
    let mi = (MOUNTINFO_PATH, MOUNTINFO_HYBRID);
    let cg = (PROC_CGROUP_PATH, "3:cpuset:/job\n0::/\n");
    let set = |list| ("/sys/fs/cgroup/cpuset/job/cpuset.cpus", list);
    // An offline CPU in it does not count.
    assert_eq!(cpus(&[online, mi, cg, set("2-3,6-9\n")], sixteen), 4);
    // One that shares no CPU with the online list is not believed.
    assert_eq!(cpus(&[online, mi, cg, set("100-101")], sixteen), 8);
    // No online list: the fallback, still limited by the cpuset.
    assert_eq!(cpus(&[mi, cg, set("2-7")], sixteen), 6);
    assert_eq!(cpus(&[mi, cg, set("0-31")], sixteen), 16);
    // The effective list, where there is one, is the one read.
    let effective = ("/sys/fs/cgroup/cpuset/job/cpuset.effective_cpus", "5\n");
    let (n, reads) = cpus_and_reads(&[online, mi, cg, set("2-7"), effective]);
    assert_eq!(n, 1);
    assert!(!reads.iter().any(|p| p.ends_with("cpuset.cpus")), "{reads:?}");
}

#[test]
fn a_v1_hierarchy_counts_where_v2_has_no_controllers() {
    let files = [
        (ONLINE_LIST_PATH, "0-1\n"),
        (MOUNTINFO_PATH, MOUNTINFO_HYBRID),
        (PROC_CGROUP_PATH, "4:cpu:/job\n3:cpuset:/job\n0::/\n"),
    ];
    assert_eq!(cpus(&files, sixteen), 2);
    let mut more = files.to_vec();
    more.push(("/sys/fs/cgroup/cpuset/job/cpuset.effective_cpus", "1\n"));
    assert_eq!(cpus(&more, sixteen), 1);
    let mut quota = files.to_vec();
    quota.push(("/sys/fs/cgroup/cpu/job/cpu.cfs_quota_us", "50000\n"));
    quota.push(("/sys/fs/cgroup/cpu/job/cpu.cfs_period_us", "100000\n"));
    assert_eq!(cpus(&quota, sixteen), 1);
}

#[test]
#[cfg_attr(miri, ignore = "Miri's isolation hides the host's files and CPUs")]
fn this_process_counts_at_least_one_cpu_whatever_the_thread_is_pinned_to() {
    let before = crate::sys::usable_cpus().unwrap_or(1);
    assert!(before >= 1);
    // A thread pinned to the CPU it runs on still counts the process's CPUs.
    std::thread::spawn(move || {
        let here = crate::sys::current_cpu() as usize;
        for c in (0..1024).filter(|&c| c != here) {
            if let Some(mask) = crate::sys::ThreadCpus::of_this_thread() {
                let _ = mask.move_off(c);
            }
        }
        let mask = crate::sys::ThreadCpus::of_this_thread().map_or(1, |m| m.count());
        assert!(mask <= 1 || before == 1 || cfg!(not(target_os = "linux")));
        assert_eq!(crate::sys::usable_cpus().unwrap_or(1), before);
    })
    .join()
    .unwrap();
}

/// `process_cpus_from` over a fixture tree (`sixteen` online CPUs where the list
/// is unreadable), and the paths it read.
fn cpus_and_reads(files: &[(&str, &str)]) -> (usize, Vec<String>) {
    cpus_and_reads_with(files, sixteen)
}

/// `process_cpus_from` over a fixture tree with `fallback`, and the paths it read.
fn cpus_and_reads_with(files: &[(&str, &str)], fallback: fn() -> usize) -> (usize, Vec<String>) {
    let map: HashMap<String, String> = files
        .iter()
        .map(|(p, c)| (p.to_string(), c.to_string()))
        .collect();
    let reads = std::cell::RefCell::new(Vec::new());
    let n = process_cpus_from(
        &|p: &str| {
            reads.borrow_mut().push(p.to_string());
            map.get(p).cloned()
        },
        fallback,
    );
    (n, reads.into_inner())
}

#[test]
fn a_v2_hierarchy_at_its_conventional_place_is_found_without_mountinfo() {
    let files = [
        (ONLINE_LIST_PATH, "0-7\n"),
        (PROC_CGROUP_PATH, "0::/app/worker\n"),
        ("/sys/fs/cgroup/app/worker/cgroup.controllers", "cpuset cpu io\n"),
        ("/sys/fs/cgroup/app/worker/cpuset.cpus.effective", "0-5\n"),
        ("/sys/fs/cgroup/app/cpu.max", "250000 100000\n"),
        // What mountinfo would say, were it read: a mount that does not match.
        (MOUNTINFO_PATH, "30 24 0:26 / /elsewhere rw - cgroup2 cgroup2 rw\n"),
    ];
    let (n, reads) = cpus_and_reads(&files);
    assert_eq!(n, 3);
    assert!(!reads.iter().any(|p| p == MOUNTINFO_PATH), "{reads:?}");
    let once = |p: &str| reads.iter().filter(|r| *r == p).count() <= 1;
    assert!(reads.iter().all(|p| once(p)), "each file once: {reads:?}");
}

#[test]
fn a_hybrid_host_is_found_at_its_conventional_places_without_mountinfo() {
    let files = [
        (ONLINE_LIST_PATH, "0-3\n"),
        (PROC_CGROUP_PATH, "4:cpu,cpuacct:/job\n3:cpuset:/job\n0::/job\n"),
        ("/sys/fs/cgroup/unified/job/cgroup.controllers", "\n"),
        ("/sys/fs/cgroup/cpuset/job/cpuset.effective_cpus", "1-3\n"),
        ("/sys/fs/cgroup/cpu,cpuacct/job/cpu.cfs_quota_us", "150000\n"),
        ("/sys/fs/cgroup/cpu,cpuacct/job/cpu.cfs_period_us", "100000\n"),
    ];
    let (n, reads) = cpus_and_reads(&files);
    assert_eq!(n, 2);
    assert!(!reads.iter().any(|p| p == MOUNTINFO_PATH), "{reads:?}");
    // The controller's own name, a link to the joined one on such hosts, serves too.
    let files = [
        (ONLINE_LIST_PATH, "0-3\n"),
        (PROC_CGROUP_PATH, "4:cpu,cpuacct:/job\n0::/\n"),
        ("/sys/fs/cgroup/unified/cgroup.controllers", "\n"),
        ("/sys/fs/cgroup/cpu/job/cpu.cfs_quota_us", "50000\n"),
        ("/sys/fs/cgroup/cpu/job/cpu.cfs_period_us", "100000\n"),
    ];
    assert_eq!(cpus_and_reads(&files).0, 1);
}

/// A container without a cgroup namespace mounts its own subtree at
/// `/sys/fs/cgroup` while `/proc/self/cgroup` names the path from the host's root:
/// the conventional place does not hold that path, and mountinfo says where it is.
#[test]
fn a_subtree_mounted_at_the_conventional_place_is_resolved_through_mountinfo() {
    let files = [
        (ONLINE_LIST_PATH, "0-7\n"),
        (PROC_CGROUP_PATH, "0::/docker/c1/app\n"),
        (
            MOUNTINFO_PATH,
            "30 24 0:26 /docker/c1 /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
        ),
        ("/sys/fs/cgroup/app/cgroup.controllers", "cpu\n"),
        ("/sys/fs/cgroup/app/cpu.max", "200000 100000\n"),
    ];
    let (n, reads) = cpus_and_reads(&files);
    assert_eq!(n, 2);
    // The mount's root, the container's own cgroup, limits it too.
    let mut root_limited = files.to_vec();
    root_limited.push(("/sys/fs/cgroup/cpu.max", "100000 100000\n"));
    assert_eq!(cpus_and_reads(&root_limited).0, 1);
    assert!(reads.iter().any(|p| p == MOUNTINFO_PATH), "{reads:?}");
    // A path from outside this namespace is never joined to a conventional place.
    let files = [
        (ONLINE_LIST_PATH, "0-7\n"),
        (PROC_CGROUP_PATH, "0::/../../x\n"),
        ("/sys/fs/cgroup/../../x/cgroup.controllers", "cpu\n"),
        ("/sys/fs/cgroup/../../x/cpu.max", "100000 100000\n"),
    ];
    assert_eq!(cpus_and_reads(&files).0, 8);
}

/// A v2 controller's files are looked up only where the cgroup's
/// `cgroup.controllers` names it; above the process's cgroup every level is read,
/// since a parent may have the controller that the process's cgroup lacks.
#[test]
fn v2_files_of_a_controller_the_cgroup_lacks_are_not_looked_up() {
    let files = [
        (ONLINE_LIST_PATH, "0-7\n"),
        (PROC_CGROUP_PATH, "0::/app/worker\n"),
        ("/sys/fs/cgroup/app/worker/cgroup.controllers", "io memory\n"),
        ("/sys/fs/cgroup/app/cpu.max", "300000 100000\n"),
    ];
    let (n, reads) = cpus_and_reads(&files);
    assert_eq!(n, 3, "the parent's quota still counts");
    for skipped in ["cpuset.cpus.effective", "worker/cpu.max"] {
        assert!(!reads.iter().any(|p| p.ends_with(skipped)), "{reads:?}");
    }
    assert!(reads.iter().any(|p| p == "/sys/fs/cgroup/app/cpu.max"), "{reads:?}");
    // Named, they are read.
    let mut named = files.to_vec();
    named[2] = ("/sys/fs/cgroup/app/worker/cgroup.controllers", "cpuset cpu\n");
    named.push(("/sys/fs/cgroup/app/worker/cpuset.cpus.effective", "0-1\n"));
    named.push(("/sys/fs/cgroup/app/worker/cpu.max", "max 100000\n"));
    let (n, reads) = cpus_and_reads(&named);
    assert_eq!(n, 2);
    assert!(reads.iter().any(|p| p.ends_with("worker/cpu.max")), "{reads:?}");
}

/// On a hybrid host whose v1 hierarchies carry both `cpuset` and `cpu`, the v2
/// hierarchy is not looked up, a v1 quota of -1 is read without its period, and the
/// effective cpuset is read without the online list.
#[test]
fn a_hybrid_host_reads_only_the_files_that_can_limit() {
    let files = [
        (ONLINE_LIST_PATH, "0-3\n"),
        (
            PROC_CGROUP_PATH,
            "5:cpuset:/\n4:cpu,cpuacct:/\n2:hugetlb:/\n0::/\n",
        ),
        ("/sys/fs/cgroup/unified/cgroup.controllers", "hugetlb\n"),
        ("/sys/fs/cgroup/cpuset/cpuset.effective_cpus", "0-3\n"),
        ("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n"),
        ("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n"),
    ];
    let (n, reads) = cpus_and_reads(&files);
    assert_eq!(n, 4);
    for skipped in ["cgroup.controllers", "cpu.cfs_period_us", "online"] {
        assert!(!reads.iter().any(|p| p.ends_with(skipped)), "{reads:?}");
    }
    assert_eq!(reads.len(), 3, "{reads:?}");
    // A quota set: its period is read.
    let mut quota = files.to_vec();
    quota[4] = ("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "150000\n");
    let (n, reads) = cpus_and_reads(&quota);
    assert_eq!(n, 2);
    assert!(reads.iter().any(|p| p.ends_with("cpu.cfs_period_us")), "{reads:?}");
    // With `cpu` on v2 (`cgroup_no_v1=cpu`), v2 is looked up for it.
    let files = [
        (ONLINE_LIST_PATH, "0-3\n"),
        (PROC_CGROUP_PATH, "5:cpuset:/\n0::/job\n"),
        ("/sys/fs/cgroup/cpuset/cpuset.effective_cpus", "0-3\n"),
        ("/sys/fs/cgroup/unified/job/cgroup.controllers", "cpu\n"),
        ("/sys/fs/cgroup/unified/job/cpu.max", "100000 100000\n"),
    ];
    assert_eq!(cpus_and_reads(&files).0, 1);
}
