// glibc's process descriptors (pidfd_open, pidfd_send_signal: glibc 2.36, Linux 5.3), which its
// Swift module does not include: the daemon pins a process while it reads /proc/PID.
#ifndef LINKCOND_CPIDFD_SHIM_H
#define LINKCOND_CPIDFD_SHIM_H

#include <sys/pidfd.h>

#endif
