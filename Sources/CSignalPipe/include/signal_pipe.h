// Signals as bytes in a pipe, for a daemon that receives them on its event loop: the handler
// must be C (Swift code is not async-signal-safe to enter).
#ifndef LINKCOND_SIGNAL_PIPE_H
#define LINKCOND_SIGNAL_PIPE_H

/// Makes the handler of each of `signals` write the signal's number (one byte) into a new pipe,
/// and returns the pipe's read end (non-blocking, close-on-exec), or -errno; on failure every
/// disposition is as it was. The handler is process-wide: call it once. A signal that comes
/// while the pipe is full (64 KiB of unread signals) is dropped, never waited for.
int linkcond_signal_pipe_open(const int *signals, int count);

#endif
