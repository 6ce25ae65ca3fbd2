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
#include <time.h>
#include <unistd.h>

/// How long one request (a whole dump, or one destroy) may take before the kernel is taken for
/// silent, and the most one datagram of a dump holds (the kernel fills a page or two).
enum { ANSWER_WAIT_MILLISECONDS = 5000, DUMP_BUFFER_BYTES = 32768 };

struct diag_request {
    struct nlmsghdr header;
    struct inet_diag_req_v2 request;
};

/// A request of `type` with `flags` for sockets of `family` and `protocol`, its body otherwise
/// zero, with a sequence number no earlier request of this process had (a late answer to an
/// earlier one is told apart).
static void prepare(struct diag_request *message, uint16_t type, uint16_t flags, uint8_t family, uint8_t protocol) {
    static uint32_t last_sequence;
    memset(message, 0, sizeof *message);
    message->header.nlmsg_len = sizeof *message;
    message->header.nlmsg_type = type;
    message->header.nlmsg_flags = flags;
    message->header.nlmsg_seq = __atomic_add_fetch(&last_sequence, 1, __ATOMIC_RELAXED);
    message->request.sdiag_family = family;
    message->request.sdiag_protocol = protocol;
}

int linkcond_sock_diag_connect(int descriptor) {
    struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
    return connect(descriptor, (const struct sockaddr *)&kernel, sizeof kernel) == 0 ? 0 : -errno;
}

int linkcond_sock_diag_open(void) {
    int descriptor = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    if (descriptor < 0) return -errno;
    int failed = linkcond_sock_diag_connect(descriptor);
    if (failed != 0) {
        close(descriptor);
        return failed;
    }
    return descriptor;
}

static int send_request(int descriptor, struct diag_request *message) {
    ssize_t sent;
    do {
        sent = send(descriptor, message, sizeof *message, 0);
    } while (sent < 0 && errno == EINTR);
    return sent < 0 ? -errno : 0;
}

static int64_t now_milliseconds(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

/// Receives one datagram of the kernel's (and only the kernel's) answer into `buffer`, waiting
/// until `deadline` at the latest; its length, or -errno: -EAGAIN past the deadline, -EMSGSIZE
/// for a datagram larger than `size`.
static ssize_t receive_answer(int descriptor, void *buffer, size_t size, int64_t deadline) {
    for (;;) {
        int64_t left = deadline - now_milliseconds();
        if (left <= 0) return -EAGAIN;
        struct pollfd waiting = { .fd = descriptor, .events = POLLIN };
        int ready = poll(&waiting, 1, (int)left);
        if (ready < 0 && errno == EINTR) continue;
        if (ready < 0) return -errno;
        if (ready == 0) return -EAGAIN;
        struct sockaddr_nl from;
        socklen_t length = sizeof from;
        ssize_t got = recvfrom(descriptor, buffer, size, MSG_DONTWAIT | MSG_TRUNC, (struct sockaddr *)&from, &length);
        if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (got < 0) return -errno;
        // A connected netlink socket takes only the kernel's datagrams; a sender is checked all the same.
        if (length < sizeof from || from.nl_family != AF_NETLINK || from.nl_pid != 0) continue;
        if ((size_t)got > size) return -EMSGSIZE;
        return got;
    }
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
    prepare(&message, SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST | NLM_F_DUMP, family, protocol);
    message.request.idiag_states = states;
    int failed = send_request(descriptor, &message);
    if (failed != 0) return failed;

    int64_t deadline = now_milliseconds() + ANSWER_WAIT_MILLISECONDS;
    uint32_t aligned[DUMP_BUFFER_BYTES / sizeof(uint32_t)];
    for (;;) {
        ssize_t length = receive_answer(descriptor, aligned, sizeof aligned, deadline);
        if (length < 0) return (int)length;
        // Signed: NLMSG_NEXT takes a message's aligned length off, which may be more than is left.
        int left = (int)length;
        for (struct nlmsghdr *header = (struct nlmsghdr *)aligned; NLMSG_OK(header, left); header = NLMSG_NEXT(header, left)) {
            if (header->nlmsg_seq != message.header.nlmsg_seq) continue;
            if (header->nlmsg_type == NLMSG_DONE) {
                // The dump's own error, when it stopped short.
                if (header->nlmsg_len >= NLMSG_LENGTH(sizeof(int))) {
                    int error;
                    memcpy(&error, NLMSG_DATA(header), sizeof error);
                    if (error < 0) return error;
                }
                return 0;
            }
            if (header->nlmsg_type == NLMSG_ERROR) {
                if (header->nlmsg_len < NLMSG_LENGTH(sizeof(struct nlmsgerr))) return -EBADMSG;
                const struct nlmsgerr *error = NLMSG_DATA(header);
                return error->error < 0 ? error->error : -EBADMSG;
            }
            if (header->nlmsg_type != SOCK_DIAG_BY_FAMILY || header->nlmsg_len < NLMSG_LENGTH(sizeof(struct inet_diag_msg))) {
                return -EBADMSG;
            }
            const struct inet_diag_msg *diag = NLMSG_DATA(header);
            // Only what was asked for: a state in the mask, and a cookie that names one socket.
            if (diag->idiag_state >= 32 || !(states & (1U << diag->idiag_state))) continue;
            if (diag->id.idiag_cookie[0] == INET_DIAG_NOCOOKIE && diag->id.idiag_cookie[1] == INET_DIAG_NOCOOKIE) continue;
            if (*found < capacity) {
                keep(diag, protocol, &sockets[*found]);
            }
            *found += 1;
        }
    }
}

int linkcond_sock_diag_destroy(int descriptor, const struct linkcond_diag_socket *socket) {
    struct diag_request message;
    prepare(&message, SOCK_DESTROY, NLM_F_REQUEST | NLM_F_ACK, socket->family, socket->protocol);
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

    int64_t deadline = now_milliseconds() + ANSWER_WAIT_MILLISECONDS;
    uint32_t aligned[1024];
    for (;;) {
        ssize_t length = receive_answer(descriptor, aligned, sizeof aligned, deadline);
        if (length < 0) return (int)length;
        int left = (int)length;
        for (struct nlmsghdr *header = (struct nlmsghdr *)aligned; NLMSG_OK(header, left); header = NLMSG_NEXT(header, left)) {
            if (header->nlmsg_seq != message.header.nlmsg_seq || header->nlmsg_type != NLMSG_ERROR) continue;
            if (header->nlmsg_len < NLMSG_LENGTH(sizeof(struct nlmsgerr))) return -EBADMSG;
            const struct nlmsgerr *error = NLMSG_DATA(header);
            return error->error;
        }
    }
}
