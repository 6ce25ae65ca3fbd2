// The kernel's sock_diag, for finding a network namespace's TCP connections and destroying them
// (SOCK_DESTROY, what `ss -K` sends): the local socket fails with ECONNABORTED and the far end
// gets a reset. Needs CONFIG_INET_DIAG_DESTROY; without it a destroy answers -EOPNOTSUPP.
#ifndef LINKCOND_SOCKET_DIAG_H
#define LINKCOND_SOCKET_DIAG_H

#include <stddef.h>
#include <stdint.h>
#include <linux/netlink.h>

/// One socket as a dump reports it: enough to destroy exactly that one (its cookie included),
/// and to choose it (its addresses, ports and state). Addresses are network order, IPv4 in the
/// first four bytes; ports are host order.
struct linkcond_diag_socket {
    uint8_t family;
    uint8_t protocol;
    uint8_t state;
    uint8_t source[16];
    uint8_t destination[16];
    uint16_t source_port;
    uint16_t destination_port;
    uint32_t interface;
    uint32_t cookie[2];
    uint32_t uid;
};

/// Opens a sock_diag netlink socket in the caller's network namespace (a socket stays in the
/// namespace it was made in), connected to the kernel. Returns the descriptor, or -errno.
int linkcond_sock_diag_open(void);

/// Connects a sock_diag socket made elsewhere (in another namespace) to the kernel, so that no
/// other process can send it datagrams that pass for answers. Returns 0, or -errno.
int linkcond_sock_diag_connect(int descriptor);

/// Lists the sockets of `protocol` (IPPROTO_TCP) and `family` (AF_INET, AF_INET6) whose state is
/// in the mask `states` (bit 1 << TCP state), in the namespace of `descriptor`. Stores at most
/// `capacity` in `sockets` and the number found in `*found` (more than `capacity` when they did
/// not fit: the rest are counted, not kept). An entry in another state, or without a cookie, is
/// left out. Returns 0, or -errno: -EBADMSG for an answer that is not a dump's, -EAGAIN when the
/// kernel did not finish within a few seconds, -EMSGSIZE for a datagram too large to be its, or
/// the error the dump stopped with.
int linkcond_sock_diag_list(int descriptor, uint8_t family, uint8_t protocol, uint32_t states,
                            struct linkcond_diag_socket *sockets, size_t capacity, size_t *found);

/// Destroys the one socket `socket` names (its cookie must still match). Returns 0, or -errno:
/// -ENOENT when it is gone already, -ESTALE when its addresses now lead to another socket (its
/// cookie differs: a listener on the same port, say), -EOPNOTSUPP when the kernel cannot destroy
/// sockets, -EPERM without CAP_NET_ADMIN.
int linkcond_sock_diag_destroy(int descriptor, const struct linkcond_diag_socket *socket);

#endif
