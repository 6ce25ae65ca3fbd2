#define _GNU_SOURCE
#include "child_process.h"

#include <pthread.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <signal.h>
#include <sched.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stddef.h>

static const int forwarded[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };
static const size_t forwarded_count = sizeof(forwarded) / sizeof(forwarded[0]);
static volatile sig_atomic_t child_pid = 0;
static volatile sig_atomic_t pending_signal = 0;

/// The kernel's sigaction, which also reaches the signals glibc keeps for itself (32 and 33):
/// posix_spawn leaves those ignored in the child, and exec passes "ignored" on.
struct kernel_sigaction {
    void (*handler)(int);
    unsigned long flags;
    void (*restorer)(void);
    unsigned long mask;
};

/// In a child between fork and exec: every signal back to its default, none blocked.
static void reset_signals(void) {
    struct kernel_sigaction default_action = { SIG_DFL, 0, NULL, 0 };
    for (int signal_number = 1; signal_number <= 64; signal_number++) {
        if (signal_number == SIGKILL || signal_number == SIGSTOP) continue;
        syscall(SYS_rt_sigaction, signal_number, &default_action, NULL, sizeof(unsigned long));
    }
    unsigned long none = 0;
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, NULL, sizeof(unsigned long));
}

int linkcond_spawn(pid_t *pid, const char *path, char *const argv[], char *const envp[]) {
    int report[2];
    if (pipe2(report, O_CLOEXEC) != 0) return errno;
    // Blocked across fork, so that no handler of ours runs in the child before exec.
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    pid_t child = fork();
    if (child == 0) {
        // Only async-signal-safe calls from here to exec.
        close(report[0]);
        reset_signals();
        execve(path, argv, envp);
        int error = errno;
        ssize_t written = write(report[1], &error, sizeof(error));
        (void)written;
        _exit(127);
    }
    int fork_error = child < 0 ? errno : 0;
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
    close(report[1]);
    if (fork_error != 0) {
        close(report[0]);
        return fork_error;
    }
    int exec_error = 0;
    ssize_t got;
    do {
        got = read(report[0], &exec_error, sizeof(exec_error));
    } while (got < 0 && errno == EINTR);
    close(report[0]);
    if (got == (ssize_t)sizeof(exec_error) && exec_error != 0) {
        int status;
        while (waitpid(child, &status, 0) < 0 && errno == EINTR) {}
        return exec_error;
    }
    *pid = child;
    return 0;
}

/// What a sandboxed child tells its parent: the step that failed (NONE: ready) and its errno.
struct isolation_report {
    int step;
    int error;
};

static void send_report(int fd, int step, int error) {
    struct isolation_report message = { step, error };
    ssize_t written = write(fd, &message, sizeof(message));
    (void)written;
}

/// Writes `text` to the file `path`, in one write; 0 or an errno. Async-signal-safe.
static int write_file(const char *path, const char *text) {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return errno;
    size_t length = strlen(text);
    ssize_t written = write(fd, text, length);
    int error = written == (ssize_t)length ? 0 : (written < 0 ? errno : EIO);
    close(fd);
    return error;
}

/// "ID ID 1\n" into `buffer`, without printf (not async-signal-safe).
static void identity_map(char *buffer, unsigned int id) {
    char digits[16];
    int count = 0;
    do {
        digits[count++] = (char)('0' + id % 10);
        id /= 10;
    } while (id != 0);
    char *out = buffer;
    for (int copy = 0; copy < 2; copy++) {
        for (int i = count - 1; i >= 0; i--) *out++ = digits[i];
        *out++ = ' ';
    }
    *out++ = '1';
    *out++ = '\n';
    *out = '\0';
}

/// The sandboxed child's side, from fork to exec; never returns.
static void become_isolated(int gate, int report, const char *path, char *const argv[], char *const envp[], const char *resolv_conf) {
    reset_signals();
    uid_t uid = getuid();
    gid_t gid = getgid();
    int as_root = geteuid() == 0;
    int flags = CLONE_NEWNET | (as_root ? 0 : CLONE_NEWUSER) | (resolv_conf != NULL ? CLONE_NEWNS : 0);
    if (unshare(flags) != 0) {
        send_report(report, LINKCOND_STEP_UNSHARE, errno);
        _exit(125);
    }
    if (!as_root) {
        char map[48];
        int error = write_file("/proc/self/setgroups", "deny");
        if (error == 0) {
            identity_map(map, uid);
            error = write_file("/proc/self/uid_map", map);
        }
        if (error == 0) {
            identity_map(map, gid);
            error = write_file("/proc/self/gid_map", map);
        }
        if (error != 0) {
            send_report(report, LINKCOND_STEP_ID_MAP, error);
            _exit(125);
        }
    }
    if (resolv_conf != NULL) {
        // Private below /, so that the binding stays in this namespace.
        if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) != 0 || mount(resolv_conf, "/etc/resolv.conf", NULL, MS_BIND, NULL) != 0) {
            send_report(report, LINKCOND_STEP_MOUNT, errno);
            _exit(125);
        }
    }
    send_report(report, LINKCOND_STEP_NONE, 0);
    char go;
    ssize_t got;
    do {
        got = read(gate, &go, 1);
    } while (got < 0 && errno == EINTR);
    if (got != 1) _exit(125);
    close(gate);
    execve(path, argv, envp);
    send_report(report, LINKCOND_STEP_EXEC, errno);
    _exit(127);
}

/// Reads one report; 1 when one came, 0 at end of file.
static int read_report(int fd, struct isolation_report *message) {
    ssize_t got;
    do {
        got = read(fd, message, sizeof(*message));
    } while (got < 0 && errno == EINTR);
    return got == (ssize_t)sizeof(*message);
}

int linkcond_spawn_isolated(
    pid_t *pid, int *gate, int *report, int *failed_step, const char *path, char *const argv[], char *const envp[],
    const char *resolv_conf) {
    int gate_pipe[2], report_pipe[2];
    *failed_step = LINKCOND_STEP_FORK;
    if (pipe2(gate_pipe, O_CLOEXEC) != 0) return errno;
    if (pipe2(report_pipe, O_CLOEXEC) != 0) {
        int error = errno;
        close(gate_pipe[0]);
        close(gate_pipe[1]);
        return error;
    }
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    pid_t child = fork();
    if (child == 0) {
        close(gate_pipe[1]);
        close(report_pipe[0]);
        become_isolated(gate_pipe[0], report_pipe[1], path, argv, envp, resolv_conf);
    }
    int fork_error = child < 0 ? errno : 0;
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
    close(gate_pipe[0]);
    close(report_pipe[1]);
    if (fork_error != 0) {
        close(gate_pipe[1]);
        close(report_pipe[0]);
        return fork_error;
    }
    struct isolation_report message = { LINKCOND_STEP_UNSHARE, EIO };
    if (!read_report(report_pipe[0], &message) || message.step != LINKCOND_STEP_NONE) {
        close(gate_pipe[1]);
        close(report_pipe[0]);
        int status;
        while (waitpid(child, &status, 0) < 0 && errno == EINTR) {}
        *failed_step = message.step;
        return message.error;
    }
    *failed_step = LINKCOND_STEP_NONE;
    *pid = child;
    *gate = gate_pipe[1];
    *report = report_pipe[0];
    return 0;
}

int linkcond_release_isolated(pid_t pid, int gate, int report) {
    char go = 1;
    ssize_t written = write(gate, &go, 1);
    (void)written;
    close(gate);
    struct isolation_report message;
    int failed = read_report(report, &message);
    close(report);
    if (failed && message.step == LINKCOND_STEP_EXEC && message.error != 0) {
        int status;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
        return message.error;
    }
    return 0;
}

static void forward(int signal_number, siginfo_t *info, void *context) {
    (void)context;
    // SI_USER, SI_QUEUE, SI_TKILL and the like are <= 0: sent by a process, to us alone.
    // Kernel-generated ones (SI_KERNEL) went to the whole foreground group, the child included.
    if (info == NULL || info->si_code > 0) return;
    pid_t pid = (pid_t)child_pid;
    if (pid > 0) {
        int saved = errno;
        kill(pid, signal_number);
        errno = saved;
    } else {
        pending_signal = signal_number;
    }
}

void linkcond_catch_forwarded_signals(void) {
    child_pid = 0;
    pending_signal = 0;
    struct sigaction action = {0};
    action.sa_sigaction = forward;
    action.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&action.sa_mask);
    for (size_t i = 0; i < forwarded_count; i++) {
        sigaction(forwarded[i], &action, NULL);
    }
}

void linkcond_forward_to(pid_t child) {
    child_pid = child;
    int pending = pending_signal;
    if (pending != 0) {
        pending_signal = 0;
        kill(child, pending);
    }
}

/// Descriptors open when the process started, sorted; few (0, 1, 2, and what a shell gave).
static int inherited[256];
static size_t inherited_count = 0;

/// Calls `each` with every open descriptor but the directory's own.
static void for_each_descriptor(void (*each)(int)) {
    DIR *directory = opendir("/proc/self/fd");
    if (directory == NULL) return;
    int own = dirfd(directory);
    struct dirent *entry;
    while ((entry = readdir(directory)) != NULL) {
        if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
        int fd = atoi(entry->d_name);
        if (fd != own) each(fd);
    }
    closedir(directory);
}

static void note(int fd) {
    if (inherited_count < sizeof(inherited) / sizeof(inherited[0])) inherited[inherited_count++] = fd;
}

void linkcond_note_inherited_descriptors(void) {
    inherited_count = 0;
    for_each_descriptor(note);
}

static void close_on_exec_unless_inherited(int fd) {
    for (size_t i = 0; i < inherited_count; i++) {
        if (inherited[i] == fd) return;
    }
    int flags = fcntl(fd, F_GETFD);
    if (flags >= 0 && !(flags & FD_CLOEXEC)) fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
}

void linkcond_close_own_descriptors_on_exec(void) {
    for_each_descriptor(close_on_exec_unless_inherited);
}

void linkcond_stop_forwarding(void) {
    struct sigaction action = {0};
    action.sa_handler = SIG_DFL;
    sigemptyset(&action.sa_mask);
    for (size_t i = 0; i < forwarded_count; i++) {
        sigaction(forwarded[i], &action, NULL);
    }
    child_pid = 0;
}
