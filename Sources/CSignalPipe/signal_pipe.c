#define _GNU_SOURCE
#include "signal_pipe.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t write_end = -1;

static void forward(int signal_number) {
    int saved_errno = errno;
    unsigned char number = (unsigned char)signal_number;
    ssize_t ignored = write(write_end, &number, 1);
    (void)ignored;
    errno = saved_errno;
}

int linkcond_signal_pipe_open(const int *signals, int count) {
    if (count < 0 || count > 64) {
        return -EINVAL;
    }
    int ends[2];
    if (pipe2(ends, O_CLOEXEC | O_NONBLOCK) != 0) {
        return -errno;
    }
    write_end = ends[1];
    struct sigaction handler;
    memset(&handler, 0, sizeof handler);
    handler.sa_handler = forward;
    sigemptyset(&handler.sa_mask);
    handler.sa_flags = SA_RESTART;
    struct sigaction previous[64];
    for (int i = 0; i < count; i++) {
        if (sigaction(signals[i], &handler, &previous[i]) != 0) {
            int failure = errno;
            while (i-- > 0) {
                sigaction(signals[i], &previous[i], NULL);
            }
            write_end = -1;
            close(ends[0]);
            close(ends[1]);
            return -failure;
        }
    }
    return ends[0];
}
