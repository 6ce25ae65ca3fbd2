#define _GNU_SOURCE
#include "child_process.h"

#include <pthread.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <signal.h>
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
        struct kernel_sigaction default_action = { SIG_DFL, 0, NULL, 0 };
        for (int signal_number = 1; signal_number <= 64; signal_number++) {
            if (signal_number == SIGKILL || signal_number == SIGSTOP) continue;
            syscall(SYS_rt_sigaction, signal_number, &default_action, NULL, sizeof(unsigned long));
        }
        unsigned long none = 0;
        syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, NULL, sizeof(unsigned long));
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
