#define _GNU_SOURCE
#include "socket_diag.h"

#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/// How long a dump's next part may take before the kernel is taken for silent, and the most
/// one datagram of a dump holds (the kernel fills a page or two).
enum { ANSWER_WAIT_MILLISECONDS = 2000, DUMP_BUFFER_BYTES = 32768 };

struct diag_request {
    struct nlmsghdr header;
    struct inet_diag_req_v2 request;
};

/// A request of `type` with `flags` for sockets of `family` and `protocol`, its body otherwise zero.
static void prepare(struct diag_request *message, uint16_t type, uint16_t flags, uint32_t sequence, uint8_t family, uint8_t protocol) {
    memset(message, 0, sizeof *message);
    message->header.nlmsg_len = sizeof *message;
    message->header.nlmsg_type = type;
    message->header.nlmsg_flags = flags;
    message->header.nlmsg_seq = sequence;
    message->request.sdiag_family = family;
    message->request.sdiag_protocol = protocol;
}

int linkcond_sock_diag_open(void) {
    int descriptor = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    return descriptor < 0 ? -errno : descriptor;
}

static int send_request(int descriptor, struct diag_request *message) {
    struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
    ssize_t sent;
    do {
        sent = sendto(descriptor, message, sizeof *message, 0, (const struct sockaddr *)&kernel, sizeof kernel);
    } while (sent < 0 && errno == EINTR);
    return sent < 0 ? -errno : 0;
}

/// Receives one datagram of the kernel's answer into `buffer`; its length, or -errno.
static ssize_t receive_answer(int descriptor, void *buffer, size_t size) {
    struct pollfd waiting = { .fd = descriptor, .events = POLLIN };
    int ready;
    do {
        ready = poll(&waiting, 1, ANSWER_WAIT_MILLISECONDS);
    } while (ready < 0 && errno == EINTR);
    if (ready < 0) return -errno;
    if (ready == 0) return -EAGAIN;
    ssize_t got;
    do {
        got = recv(descriptor, buffer, size, MSG_DONTWAIT);
    } while (got < 0 && errno == EINTR);
    return got < 0 ? -errno : got;
}

static void keep(const struct inet_diag_msg *message, uint8_t protocol, struct linkcond_diag_socket *socket) {
    memset(socket, 0, sizeof *socket);
    socket->family = message->idiag_family;
    socket->protocol = protocol;
    socket->state = message->idiag_state;
    memcpy(socket->source, message->id.idiag_src, sizeof socket->source);
    memcpy(socket->destination, message->id.idiag_dst, sizeof socket->destination);
    socket->source_port = ntohs(message->id.idiag_sport);
    socket->destination_port = ntohs(message->id.idiag_dport);
    socket->interface = message->id.idiag_if;
    socket->cookie[0] = message->id.idiag_cookie[0];
    socket->cookie[1] = message->id.idiag_cookie[1];
    socket->uid = message->idiag_uid;
}

int linkcond_sock_diag_list(int descriptor, uint8_t family, uint8_t protocol, uint32_t states,
                            struct linkcond_diag_socket *sockets, size_t capacity, size_t *found) {
    *found = 0;
    struct diag_request message;
    prepare(&message, SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST | NLM_F_DUMP, 1, family, protocol);
    message.request.idiag_states = states;
    int failed = send_request(descriptor, &message);
    if (failed != 0) return failed;

    uint32_t aligned[DUMP_BUFFER_BYTES / sizeof(uint32_t)];
    for (;;) {
        ssize_t length = receive_answer(descriptor, aligned, sizeof aligned);
        if (length < 0) return (int)length;
        size_t left = (size_t)length;
        for (struct nlmsghdr *header = (struct nlmsghdr *)aligned; NLMSG_OK(header, left); header = NLMSG_NEXT(header, left)) {
            if (header->nlmsg_seq != 1) continue;
            if (header->nlmsg_type == NLMSG_DONE) return 0;
            if (header->nlmsg_type == NLMSG_ERROR) {
                if (header->nlmsg_len < NLMSG_LENGTH(sizeof(struct nlmsgerr))) return -EBADMSG;
                const struct nlmsgerr *error = NLMSG_DATA(header);
                return error->error < 0 ? error->error : -EBADMSG;
            }
            if (header->nlmsg_type != SOCK_DIAG_BY_FAMILY || header->nlmsg_len < NLMSG_LENGTH(sizeof(struct inet_diag_msg))) {
                return -EBADMSG;
            }
            if (*found < capacity) {
                keep(NLMSG_DATA(header), protocol, &sockets[*found]);
            }
            *found += 1;
        }
    }
}

int linkcond_sock_diag_destroy(int descriptor, const struct linkcond_diag_socket *socket) {
    struct diag_request message;
    prepare(&message, SOCK_DESTROY, NLM_F_REQUEST | NLM_F_ACK, 2, socket->family, socket->protocol);
    message.request.idiag_states = ~0U;
    struct inet_diag_sockid *id = &message.request.id;
    memcpy(id->idiag_src, socket->source, sizeof id->idiag_src);
    memcpy(id->idiag_dst, socket->destination, sizeof id->idiag_dst);
    id->idiag_sport = htons(socket->source_port);
    id->idiag_dport = htons(socket->destination_port);
    id->idiag_if = socket->interface;
    id->idiag_cookie[0] = socket->cookie[0];
    id->idiag_cookie[1] = socket->cookie[1];
    int failed = send_request(descriptor, &message);
    if (failed != 0) return failed;

    uint32_t aligned[1024];
    for (;;) {
        ssize_t length = receive_answer(descriptor, aligned, sizeof aligned);
        if (length < 0) return (int)length;
        size_t left = (size_t)length;
        for (struct nlmsghdr *header = (struct nlmsghdr *)aligned; NLMSG_OK(header, left); header = NLMSG_NEXT(header, left)) {
            if (header->nlmsg_seq != 2 || header->nlmsg_type != NLMSG_ERROR) continue;
            if (header->nlmsg_len < NLMSG_LENGTH(sizeof(struct nlmsgerr))) return -EBADMSG;
            const struct nlmsgerr *error = NLMSG_DATA(header);
            return error->error;
        }
    }
}
