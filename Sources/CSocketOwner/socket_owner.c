#define _GNU_SOURCE
#include "socket_owner.h"

#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <string.h>
#include <unistd.h>

/// The request's socket id: `source` as the socket's own end, `destination` as its peer.
static int socket_id(const struct sockaddr *source, const struct sockaddr *destination, struct inet_diag_req_v2 *request) {
    if (source->sa_family != destination->sa_family) {
        return -EAFNOSUPPORT;
    }
    struct inet_diag_sockid *id = &request->id;
    switch (source->sa_family) {
    case AF_INET: {
        const struct sockaddr_in *from = (const struct sockaddr_in *)source;
        const struct sockaddr_in *to = (const struct sockaddr_in *)destination;
        memcpy(id->idiag_src, &from->sin_addr, sizeof from->sin_addr);
        memcpy(id->idiag_dst, &to->sin_addr, sizeof to->sin_addr);
        id->idiag_sport = from->sin_port;
        id->idiag_dport = to->sin_port;
        break;
    }
    case AF_INET6: {
        const struct sockaddr_in6 *from = (const struct sockaddr_in6 *)source;
        const struct sockaddr_in6 *to = (const struct sockaddr_in6 *)destination;
        memcpy(id->idiag_src, &from->sin6_addr, sizeof from->sin6_addr);
        memcpy(id->idiag_dst, &to->sin6_addr, sizeof to->sin6_addr);
        id->idiag_sport = from->sin6_port;
        id->idiag_dport = to->sin6_port;
        break;
    }
    default:
        return -EAFNOSUPPORT;
    }
    request->sdiag_family = (uint8_t)source->sa_family;
    request->sdiag_protocol = IPPROTO_TCP;
    request->idiag_ext = 0;
    request->idiag_states = ~0U;
    // An exact lookup: the socket with this id, whatever its cookie.
    id->idiag_if = 0;
    id->idiag_cookie[0] = INET_DIAG_NOCOOKIE;
    id->idiag_cookie[1] = INET_DIAG_NOCOOKIE;
    return 0;
}

int linkcond_tcp_socket_owner(const struct sockaddr *source, const struct sockaddr *destination, uint32_t *uid) {
    struct {
        struct nlmsghdr header;
        struct inet_diag_req_v2 request;
    } message;
    memset(&message, 0, sizeof message);
    int invalid = socket_id(source, destination, &message.request);
    if (invalid != 0) {
        return invalid;
    }
    message.header.nlmsg_len = sizeof message;
    message.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
    // Not NLM_F_DUMP: one socket, found by its id, not a walk over every socket of the host.
    message.header.nlmsg_flags = NLM_F_REQUEST;
    message.header.nlmsg_seq = 1;

    int descriptor = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    if (descriptor < 0) {
        return -errno;
    }
    struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
    if (sendto(descriptor, &message, sizeof message, 0, (const struct sockaddr *)&kernel, sizeof kernel) < 0) {
        int failure = errno;
        close(descriptor);
        return -failure;
    }
    // The kernel handles the request within sendto and queues its answer (the socket, or an
    // error) before sendto returns: a receive that would wait means no answer is coming, and
    // must not hold up the caller's event loop.
    union {
        struct nlmsghdr header;
        char bytes[8192];
    } answer;
    ssize_t received = recv(descriptor, &answer, sizeof answer, MSG_DONTWAIT);
    int failure = errno;
    close(descriptor);
    if (received < 0) {
        return -failure;
    }
    const struct nlmsghdr *header = &answer.header;
    if (!NLMSG_OK(header, (size_t)received) || header->nlmsg_seq != message.header.nlmsg_seq) {
        return -EBADMSG;
    }
    if (header->nlmsg_type == NLMSG_ERROR) {
        if (header->nlmsg_len < NLMSG_LENGTH(sizeof(struct nlmsgerr))) {
            return -EBADMSG;
        }
        const struct nlmsgerr *error = NLMSG_DATA(header);
        return error->error < 0 ? error->error : -EBADMSG;
    }
    if (header->nlmsg_type != SOCK_DIAG_BY_FAMILY || header->nlmsg_len < NLMSG_LENGTH(sizeof(struct inet_diag_msg))) {
        return -EBADMSG;
    }
    const struct inet_diag_msg *found = NLMSG_DATA(header);
    const struct inet_diag_sockid *asked = &message.request.id;
    if (found->id.idiag_sport != asked->idiag_sport || found->id.idiag_dport != asked->idiag_dport) {
        return -EBADMSG;
    }
    // A socket no open file holds (a TIME_WAIT or SYN_RECV minisocket, an orphan on its way
    // out) has no owner to count: the kernel reports uid 0 for the minisockets, which would
    // make a closed connection count as root's.
    if (found->idiag_inode == 0) {
        return -ESRCH;
    }
    *uid = found->idiag_uid;
    return 0;
}
