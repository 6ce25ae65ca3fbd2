// The user who owns a TCP socket of this host, as the kernel's sock_diag reports it (the uid
// `ss -e` shows): TCP carries no credentials, and the metrics listener counts each connection
// against the user at its other end.
#ifndef LINKCOND_SOCKET_OWNER_H
#define LINKCOND_SOCKET_OWNER_H

#include <stdint.h>
#include <sys/socket.h>

/// Finds the TCP socket of the caller's network namespace whose own address is `source` and
/// whose peer is `destination` (both `struct sockaddr_in`, or both `struct sockaddr_in6`), and
/// stores the uid that owns it in `*uid`. Returns 0, or -errno: -ENOENT when there is no such
/// socket (its end is on another host or in another namespace, or already gone), -ESRCH when no
/// process holds it any more (closed, lingering in TIME_WAIT), -EAGAIN when the kernel did not
/// answer, -EBADMSG when the answer is not about that socket, -EAFNOSUPPORT for other address
/// families, or the error of a system call. One request on a netlink socket of its own, opened
/// and closed within the call: safe to call from any thread.
int linkcond_tcp_socket_owner(const struct sockaddr *source, const struct sockaddr *destination, uint32_t *uid);

#endif
