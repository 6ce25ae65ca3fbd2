// Starting a command the way a shell would, and passing it the signals meant for it: the two
// things `linkcond run` needs that Swift cannot do safely (a signal handler must be C).
#ifndef LINKCOND_CHILD_PROCESS_H
#define LINKCOND_CHILD_PROCESS_H

#include <sys/types.h>

/// Starts `path` with `argv` and `envp` in the caller's process group and session, with every
/// signal at its default disposition and none blocked, whatever the caller ignores or blocks
/// (a Swift process ignores SIGPIPE, for one). Returns 0 and sets `pid`, or the errno of the
/// fork or of the exec (ENOENT, EACCES, ...).
int linkcond_spawn(pid_t *pid, const char *path, char *const argv[], char *const envp[]);

/// Where starting a sandboxed child failed, for `linkcond_spawn_isolated`'s `failed_step`.
enum linkcond_isolation_step {
    LINKCOND_STEP_NONE = 0,
    LINKCOND_STEP_FORK,
    LINKCOND_STEP_UNSHARE,
    LINKCOND_STEP_ID_MAP,
    LINKCOND_STEP_MOUNT,
    LINKCOND_STEP_EXEC,
};

/// Starts a child as `linkcond_spawn` does, but in a network namespace of its own (inside a
/// user namespace that maps only the caller's uid and gid when the caller is not root), and,
/// with `resolv_conf`, a mount namespace of its own where that file is bound over
/// /etc/resolv.conf. The child then waits before exec: `linkcond_release_isolated` lets it run
/// `path`; closing `*gate` instead makes it exit 125 unstarted. Returns 0 and sets `pid`,
/// `gate` and `report`, or an errno with `*failed_step` saying which step it came from.
int linkcond_spawn_isolated(
    pid_t *pid, int *gate, int *report, int *failed_step, const char *path, char *const argv[], char *const envp[],
    const char *resolv_conf);

/// Lets the child of `linkcond_spawn_isolated` exec. Returns 0 once it has, or the errno of
/// its exec (the child is then reaped).
int linkcond_release_isolated(pid_t pid, int gate, int report);

/// From now on this process does not die of SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 or
/// SIGUSR2; the ones another process sends it (kill(2), `timeout`, a CI runner) are passed on
/// to the child named by `linkcond_forward_to`, or kept for it until then. Ones the kernel
/// sends to the whole foreground process group (Ctrl-C, Ctrl-\, a terminal hang-up) reach the
/// child by themselves and are not sent twice.
void linkcond_catch_forwarded_signals(void);

/// Names the child to pass signals on to, and passes on the last one that came before.
void linkcond_forward_to(pid_t child);

/// Back to the default dispositions, after the child has ended.
void linkcond_stop_forwarding(void);

/// Notes the descriptors this process was started with. Call first thing in main: those are the
/// ones a wrapped command is meant to get too (`linkcond run -- cmd 3<file`).
void linkcond_note_inherited_descriptors(void);

/// Marks close-on-exec every descriptor this process opened itself since (its sockets, the
/// lease connection among them), so that the command does not hold them open: a lease must
/// end when linkcond dies, not when the command does.
void linkcond_close_own_descriptors_on_exec(void);

#endif
