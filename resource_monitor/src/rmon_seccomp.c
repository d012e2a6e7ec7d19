/* rmon_seccomp.c: the seccomp profiles of tasks and daemons (see rmon_seccomp.h and
 * doc/seccomp.md). Each profile is a table of refused calls turned into BPF by libseccomp once
 * per process and installed with the raw seccomp(2) call on a spawner thread (the tasks it
 * clones inherit it) or, for a daemon, on every thread; rmon_seccomp_watch.c serves the
 * listener. */
#include "rmon_seccomp.h"
#include "rmon_seccomp_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "debug.h"
#include "htc_error.h"
#include "vec.h"
#include "xalloc.h"
#include "banned.h"

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

/* What a rule looks at besides the call's number. */
enum cond {
	ANY,      /* every call */
	NS_FLAGS, /* arg 0 has a namespace flag (clone, unshare) */
	PT_OTHER, /* arg 0 is PTRACE_ATTACH or PTRACE_SEIZE (ptrace of another process) */
	NET_SOCK, /* arg 0 is AF_INET, AF_INET6 or AF_PACKET (socket) */
};

#define P_DEF    (1 << RMON_SECCOMP_DEFAULT)
#define P_STRICT (1 << RMON_SECCOMP_STRICT)
#define P_NONET  (1 << RMON_SECCOMP_NONET)
#define P_ALL    (P_DEF | P_STRICT | P_NONET)

/* The refused calls of each profile; doc/seccomp.md gives the reason of each line. A name the
 * kernel headers of libseccomp do not know on this architecture is skipped. */
static const struct rule {
	const char *name;
	int profiles;
	enum cond cond;
} rules[] = {
    {"init_module", P_ALL, ANY},
    {"finit_module", P_ALL, ANY},
    {"delete_module", P_ALL, ANY},
    {"kexec_load", P_ALL, ANY},
    {"kexec_file_load", P_ALL, ANY},
    {"mount", P_ALL, ANY},
    {"umount2", P_ALL, ANY},
    {"pivot_root", P_ALL, ANY},
    {"move_mount", P_ALL, ANY},
    {"open_tree", P_ALL, ANY},
    {"fsopen", P_ALL, ANY},
    {"fsconfig", P_ALL, ANY},
    {"fsmount", P_ALL, ANY},
    {"fspick", P_ALL, ANY},
    {"mount_setattr", P_ALL, ANY},
    {"setns", P_ALL, ANY},
    {"unshare", P_DEF | P_NONET, NS_FLAGS},
    {"unshare", P_STRICT, ANY},
    {"clone", P_ALL, NS_FLAGS},
    {"ptrace", P_DEF | P_NONET, PT_OTHER},
    {"ptrace", P_STRICT, ANY},
    {"bpf", P_ALL, ANY},
    {"perf_event_open", P_ALL, ANY},
    {"keyctl", P_ALL, ANY},
    {"add_key", P_ALL, ANY},
    {"request_key", P_ALL, ANY},
    {"reboot", P_ALL, ANY},
    {"swapon", P_ALL, ANY},
    {"swapoff", P_ALL, ANY},
    {"settimeofday", P_ALL, ANY},
    {"clock_settime", P_ALL, ANY},
    {"clock_adjtime", P_ALL, ANY},
    {"adjtimex", P_ALL, ANY},
    {"acct", P_ALL, ANY},
    {"quotactl", P_ALL, ANY},
    {"quotactl_fd", P_ALL, ANY},
    {"syslog", P_ALL, ANY},
    {"userfaultfd", P_ALL, ANY},
    {"open_by_handle_at", P_ALL, ANY},
    {"iopl", P_ALL, ANY},
    {"ioperm", P_ALL, ANY},
    {"fanotify_init", P_ALL, ANY},
    {"lookup_dcookie", P_ALL, ANY},
    {"vhangup", P_ALL, ANY},
    {"process_vm_writev", P_STRICT, ANY},
    {"process_vm_readv", P_STRICT, ANY},
    {"chroot", P_STRICT, ANY},
    {"personality", P_STRICT, ANY},
    {"io_uring_setup", P_STRICT, ANY},
    {"io_uring_enter", P_STRICT, ANY},
    {"io_uring_register", P_STRICT, ANY},
    {"mknod", P_STRICT, ANY},
    {"mknodat", P_STRICT, ANY},
    {"kcmp", P_STRICT, ANY},
    {"name_to_handle_at", P_STRICT, ANY},
    {"socket", P_NONET, NET_SOCK},
};

static const char *const profile_names[] = {
    [RMON_SECCOMP_OFF] = "off",
    [RMON_SECCOMP_DEFAULT] = "default",
    [RMON_SECCOMP_STRICT] = "strict",
    [RMON_SECCOMP_NONET] = "nonet",
};

int rmon_seccomp_parse(const char *name, enum rmon_seccomp_profile *out)
{
	for (int p = 0; p < (int)(sizeof profile_names / sizeof *profile_names); p++)
		if (name && strcmp(name, profile_names[p]) == 0) {
			*out = (enum rmon_seccomp_profile)p;
			return 0;
		}
	return HTC_EPARSE;
}

const char *rmon_seccomp_name(enum rmon_seccomp_profile p)
{
	if ((int)p < 0 || (int)p >= (int)(sizeof profile_names / sizeof *profile_names))
		return "off";
	return profile_names[p];
}

/* Adds one rule of R with ACTION (every condition as its own rule: libseccomp ANDs the
 * comparisons of one rule, and "any of these bits" is an OR). */
static int add_rule(scmp_filter_ctx ctx, uint32_t action, const struct rule *r)
{
	int nr = seccomp_syscall_resolve_name(r->name);
	if (nr == __NR_SCMP_ERROR)
		return 0;
	int e = 0;
	switch (r->cond) {
	case ANY: e = seccomp_rule_add(ctx, action, nr, 0); break;
	case NS_FLAGS: {
		static const uint64_t bits[] = {CLONE_NEWNS,     CLONE_NEWUSER, CLONE_NEWPID,
		                                CLONE_NEWNET,    CLONE_NEWUTS,  CLONE_NEWIPC,
		                                CLONE_NEWCGROUP, CLONE_NEWTIME};
		for (size_t i = 0; i < sizeof bits / sizeof *bits && !e; i++)
			e = seccomp_rule_add(ctx, action, nr, 1,
			                     SCMP_A0(SCMP_CMP_MASKED_EQ, bits[i], bits[i]));
		break;
	}
	case PT_OTHER:
		e = seccomp_rule_add(ctx, action, nr, 1, SCMP_A0(SCMP_CMP_EQ, PTRACE_ATTACH));
		if (!e)
			e = seccomp_rule_add(ctx, action, nr, 1,
			                     SCMP_A0(SCMP_CMP_EQ, PTRACE_SEIZE));
		break;
	case NET_SOCK: {
		static const uint64_t fams[] = {AF_INET, AF_INET6, AF_PACKET};
		for (size_t i = 0; i < sizeof fams / sizeof *fams && !e; i++)
			e = seccomp_rule_add(ctx, action, nr, 1, SCMP_A0(SCMP_CMP_EQ, fams[i]));
		break;
	}
	}
	if (e < 0)
		debug(D_RMON, "seccomp: cannot add a rule for %s: %s", r->name, strerror(-e));
	return e;
}

/* The BPF of CTX, copied out through a memory file (libseccomp 2.5 exports to a descriptor). */
static int export_prog(scmp_filter_ctx ctx, struct sock_fprog *out)
{
	int fd = memfd_create("htc-seccomp", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	int e = seccomp_export_bpf(ctx, fd);
	struct stat st;
	if (e == 0 && fstat(fd, &st) < 0)
		e = -errno;
	if (e == 0 && (st.st_size <= 0 || st.st_size % sizeof(struct sock_filter) != 0 ||
	               st.st_size / sizeof(struct sock_filter) > BPF_MAXINSNS))
		e = -E2BIG;
	if (e == 0) {
		struct sock_filter *insns = xmalloc((size_t)st.st_size);
		if (pread(fd, insns, (size_t)st.st_size, 0) != st.st_size) {
			e = -EIO;
			free(insns);
		} else {
			out->filter = insns;
			out->len = (unsigned short)(st.st_size / sizeof(struct sock_filter));
		}
	}
	close(fd);
	return e;
}

/* Builds the filter of PROFILE (-1 = the daemons' list). */
static struct rmon_seccomp_prog *build(int profile, uint32_t deny, int no_exec, int *err)
{
	*err = 0;
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx) {
		*err = -ENOMEM;
		return NULL;
	}
	struct rmon_seccomp_prog *p = NULL;
	int e = 0;
	/* 32-bit programs on a 64-bit kernel are filtered too (without these, libseccomp's
	 * filter kills them for their architecture). */
	if (seccomp_arch_native() == SCMP_ARCH_X86_64) {
		if ((e = seccomp_arch_add(ctx, SCMP_ARCH_X86)) < 0 && e != -EEXIST)
			goto out;
		if ((e = seccomp_arch_add(ctx, SCMP_ARCH_X32)) < 0 && e != -EEXIST)
			goto out;
	}
	/* The multiplexed socketcall of 32-bit x86 carries its arguments in memory. */
	seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
	int mask = profile < 0 ? P_DEF : (1 << profile);
	for (size_t i = 0; i < sizeof rules / sizeof *rules; i++)
		if ((rules[i].profiles & mask) && (e = add_rule(ctx, deny, &rules[i])) < 0)
			goto out;
	/* clone3 keeps its flags in memory, which a filter cannot read: it is answered with
	 * ENOSYS, so that the C library falls back to clone, whose flags are checked. */
	int c3 = seccomp_syscall_resolve_name("clone3");
	if (c3 != __NR_SCMP_ERROR && (e = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), c3, 0)) < 0)
		goto out;
	if (no_exec) {
		const char *ex[] = {"execve", "execveat"};
		for (int i = 0; i < 2; i++) {
			struct rule r = {ex[i], P_ALL, ANY};
			if ((e = add_rule(ctx, deny, &r)) < 0)
				goto out;
		}
	}
	p = xcalloc(1, sizeof *p);
	p->notify = deny == SCMP_ACT_NOTIFY;
	if ((e = export_prog(ctx, &p->fprog)) < 0) {
		free(p);
		p = NULL;
	}
out:
	seccomp_release(ctx);
	*err = e;
	return p;
}

/* Built once per profile, never freed: children of every thread use them. */
static pthread_mutex_t progs_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rmon_seccomp_prog *progs[RMON_SECCOMP_NONET + 1];

const struct rmon_seccomp_prog *rmon_seccomp_prog_get(enum rmon_seccomp_profile p, int *err)
{
	*err = 0;
	if (p <= RMON_SECCOMP_OFF || p > RMON_SECCOMP_NONET)
		return NULL;
	pthread_mutex_lock(&progs_lock);
	if (!progs[p]) {
		/* User notification needs kernel 5.0 and libseccomp's API level 5. */
		uint32_t deny = seccomp_api_get() >= 5 ? SCMP_ACT_NOTIFY : SCMP_ACT_ERRNO(EPERM);
		if (deny != SCMP_ACT_NOTIFY)
			warn("seccomp: no user notification here; refused calls are not reported");
		progs[p] = build((int)p, deny, 0, err);
	}
	const struct rmon_seccomp_prog *r = progs[p];
	pthread_mutex_unlock(&progs_lock);
	return r;
}

void rmon_seccomp_forget_hubs(void)
{
	pthread_mutex_init(&progs_lock, NULL);
	for (size_t i = 0; i < sizeof progs / sizeof *progs; i++)
		if (progs[i])
			progs[i]->hub = NULL;
}

int rmon_seccomp_prog_notifies(const struct rmon_seccomp_prog *prog)
{
	return prog && prog->notify;
}

static long install(const struct sock_fprog *f, unsigned flags)
{
	long r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, f);
	if (r < 0 && errno == EACCES) { /* no CAP_SYS_ADMIN: needs no_new_privs */
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
			return -1;
		r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, f);
	}
	return r;
}

int rmon_seccomp_install_thread(const struct rmon_seccomp_prog *prog)
{
	long fd = install(&prog->fprog, prog->notify ? SECCOMP_FILTER_FLAG_NEW_LISTENER : 0);
	if (fd < 0)
		return -errno;
	if (!prog->notify)
		return 0;
	int e = rmon_seccomp_serve(prog, (int)fd);
	if (e < 0)
		close((int)fd);
	return e;
}

int rmon_seccomp_lockdown(int no_exec, int trace_action)
{
	int err;
	struct rmon_seccomp_prog *p =
	    build(-1, trace_action ? SCMP_ACT_TRACE(0) : SCMP_ACT_ERRNO(EPERM), no_exec, &err);
	if (!p)
		return err ? err : -ENOMEM;
	/* Every thread of the process, also those started before (a thread pool). */
	long r = install(&p->fprog, SECCOMP_FILTER_FLAG_TSYNC);
	int e = r < 0 ? -errno : r > 0 ? -EBUSY : 0; /* > 0: a thread that cannot take it */
	free(p->fprog.filter);
	free(p);
	return e;
}
