use super::*;

fn everything() -> Probe {
    Probe {
        kernel: "6.18.0".into(),
        uid: 1000,
        namespaces: Namespaces {
            user: Answer::Yes,
            mount: Answer::Yes,
            pid: Answer::Yes,
            net: Answer::Yes,
            max_user_namespaces: Some(15000),
            unprivileged_userns_clone: None,
            apparmor_restrict_unprivileged_userns: None,
        },
        landlock: Landlock {
            abi: Some(7),
            error: None,
        },
        seccomp: Seccomp {
            user_notification: Answer::Yes,
            wait_killable_recv: Answer::Yes,
            listener: Answer::Yes,
            continue_flag: Answer::Yes,
            addfd_send: Answer::Yes,
            mode: Some(0),
            filters: Some(0),
        },
        process: Process {
            pidfd_open: Answer::Yes,
            pidfd_getfd: Answer::Yes,
            pidfd_thread: Answer::Yes,
            process_vm_readv: Answer::Yes,
            proc_pid_mem: Answer::Yes,
        },
        mounts: Mounts {
            openat2: Answer::Yes,
            fsopen: Answer::Yes,
            overlayfs: true,
            detached_tree_accepts_mounts: Answer::Yes,
        },
        cgroups: Cgroups {
            v2: true,
            v1_controllers: Vec::new(),
            own: Some("/sys/fs/cgroup/user.slice".into()),
            controllers: vec!["memory".into(), "pids".into()],
            subtree_control: vec!["memory".into(), "pids".into()],
            may_create_child: Answer::Yes,
            warden_uses: Some("cgroup-v2".into()),
        },
    }
}

#[test]
fn a_full_host_needs_no_advice_and_runs_every_mode() {
    let p = everything();
    assert!(p.advice().is_empty(), "{:?}", p.advice());
    assert!(p.modes().iter().all(|m| m.available));
    assert!(p.modes()[0]
        .enforces
        .iter()
        .any(|l| l.contains("cgroup-v2")));
}

#[test]
fn max_user_namespaces_zero_names_the_sysctl() {
    let mut p = everything();
    p.namespaces.user = Answer::No(libc::ENOSPC);
    let advice = p.advice().join("\n");
    assert!(advice.contains("user.max_user_namespaces"), "{advice}");
    let modes = p.modes();
    assert!(!modes[0].available && !modes[1].available && modes[2].available);
}

#[test]
fn a_seccomp_profile_names_docker() {
    let mut p = everything();
    p.namespaces.user = Answer::No(libc::EPERM);
    assert!(p.advice().join("\n").contains("--security-opt seccomp="));
}

#[test]
fn apparmor_restriction_names_the_profile() {
    let mut p = everything();
    p.namespaces.mount = Answer::No(libc::EPERM);
    p.namespaces.apparmor_restrict_unprivileged_userns = Some(1);
    let advice = p.advice().join("\n");
    assert!(advice.contains("apparmor_parser"), "{advice}");
    assert!(!p.has_view());
}

#[test]
fn a_listener_above_is_named() {
    let mut p = everything();
    p.seccomp.listener = Answer::No(libc::EBUSY);
    p.seccomp.wait_killable_recv = Answer::No(libc::EBUSY);
    assert!(!p.has_agent());
    assert!(p.advice().join("\n").contains("listener"));
    assert!(p.modes().iter().all(|m| !m.available));
}

#[test]
fn the_memory_route_and_its_absence() {
    let mut p = everything();
    p.process.process_vm_readv = Answer::No(libc::EPERM);
    assert!(p.reads_arguments());
    assert!(p.advice().join("\n").contains("/proc/PID/mem"));
    p.process.proc_pid_mem = Answer::No(libc::EACCES);
    assert!(!p.reads_arguments());
    assert!(p.modes()[0].enforces.iter().any(|l| l.contains("refused")));
}

#[test]
fn an_undelegated_cgroup_names_delegate() {
    let mut p = everything();
    p.cgroups.may_create_child = Answer::No(libc::EACCES);
    p.cgroups.warden_uses = None;
    assert!(p.advice().join("\n").contains("Delegate=yes"));
    assert!(p.modes()[0].enforces.iter().any(|l| l.contains("rlimits")));
}

#[test]
fn landlock_not_enabled_names_lsm() {
    let mut p = everything();
    p.landlock = Landlock {
        abi: None,
        error: Some(Answer::No(libc::EOPNOTSUPP)),
    };
    assert!(p.advice().join("\n").contains("lsm="));
}

#[test]
fn answers_serialize_as_errno_names() {
    let json = serde_json::to_value(Answer::No(libc::EBUSY)).unwrap();
    assert_eq!(json, "EBUSY");
    assert_eq!(serde_json::to_value(Answer::Yes).unwrap(), "yes");
}

#[test]
fn the_probe_runs_here() {
    // Whatever the host, the probe answers and its Landlock ABI is the syscall's.
    let p = Probe::run();
    assert_eq!(p.landlock.abi, crate::sys::probe::landlock_abi().ok());
    assert!(p.process.pidfd_open.yes());
}

#[test]
fn pidfd_getfd_and_wait_killable_say_what_warden_does_instead() {
    let mut p = everything();
    p.process.pidfd_getfd = Answer::No(libc::EPERM);
    let advice = p.advice().join("\n");
    assert!(advice.contains("/proc/PID/fd"), "{advice}");
    assert!(advice.contains("SYS_PTRACE"), "{advice}");
    assert!(!advice.contains("WAIT_KILLABLE_RECV"), "{advice}");
    let mut p = everything();
    p.seccomp.wait_killable_recv = Answer::No(libc::EINVAL);
    let advice = p.advice().join("\n");
    assert!(advice.contains("WAIT_KILLABLE_RECV"), "{advice}");
    assert!(advice.contains("one at a time"), "{advice}");
}
