// Thin C shim over libnl-3 / libnl-route-3.
//
// Everything here is either a header include or a small static inline helper for what Swift
// cannot express directly: reading the kernel's extended ack (extack) text, which libnl 3.7
// drops, and libnl's macros.
#ifndef LINKCOND_CNETLINK_SHIM_H
#define LINKCOND_CNETLINK_SHIM_H

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <net/if.h>
#include <linux/if_ether.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/pkt_sched.h>
#include <linux/pkt_cls.h>
#include <linux/tc_act/tc_mirred.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <unistd.h>

#include <netlink/netlink.h>
#include <netlink/errno.h>
#include <netlink/socket.h>
#include <netlink/msg.h>
#include <netlink/attr.h>
#include <netlink/cache.h>
#include <netlink/handlers.h>
#include <netlink/route/link.h>
#include <netlink/route/link/veth.h>
#include <netlink/route/link/inet.h>
#include <netlink/route/addr.h>
#include <netlink/route/route.h>
#include <netlink/route/nexthop.h>
#include <netlink/route/rule.h>
#include <linux/fib_rules.h>
#include <linux/ip.h>
#include <netlink/route/tc.h>
#include <netlink/route/qdisc.h>
#include <netlink/route/class.h>
#include <netlink/route/classifier.h>
#include <netlink/route/action.h>
#include <netlink/route/qdisc/htb.h>
#include <netlink/route/qdisc/netem.h>
#include <netlink/route/qdisc/fifo.h>
#include <netlink/route/cls/u32.h>
#include <netlink/route/act/mirred.h>

#ifndef SOL_NETLINK
#define SOL_NETLINK 270
#endif

/// The last kernel refusal seen on a socket: errno and the extack message, if the kernel sent one.
typedef struct linkcond_kernel_refusal {
    int error;          // positive errno, 0 when none
    char message[256];  // NUL-terminated extack text, empty when none
} linkcond_kernel_refusal;

static inline int linkcond_on_error(struct sockaddr_nl *peer, struct nlmsgerr *err, void *arg) {
    (void)peer;
    linkcond_kernel_refusal *refusal = (linkcond_kernel_refusal *)arg;
    refusal->error = err->error < 0 ? -err->error : err->error;
    refusal->message[0] = '\0';

    struct nlmsghdr *header = (struct nlmsghdr *)((char *)err - NLMSG_HDRLEN);
    if (!(header->nlmsg_flags & NLM_F_ACK_TLVS)) {
        return NL_STOP;
    }
    size_t offset = NLMSG_HDRLEN + sizeof(struct nlmsgerr);
    if (!(header->nlmsg_flags & NLM_F_CAPPED)) {
        offset += err->msg.nlmsg_len - NLMSG_HDRLEN;
    }
    while (offset + NLA_HDRLEN <= header->nlmsg_len) {
        struct nlattr *attribute = (struct nlattr *)((char *)header + offset);
        if (attribute->nla_len < NLA_HDRLEN || offset + attribute->nla_len > header->nlmsg_len) {
            break;
        }
        if ((attribute->nla_type & NLA_TYPE_MASK) == NLMSGERR_ATTR_MSG) {
            size_t length = attribute->nla_len - NLA_HDRLEN;
            if (length >= sizeof(refusal->message)) {
                length = sizeof(refusal->message) - 1;
            }
            memcpy(refusal->message, (char *)attribute + NLA_HDRLEN, length);
            refusal->message[length] = '\0';
            break;
        }
        offset += NLA_ALIGN(attribute->nla_len);
    }
    // Let libnl turn the errno into its usual negative NLE_* return value.
    return NL_STOP;
}

/// Asks the kernel for extended acks (with capped echo) and records every refusal in `refusal`.
static inline int linkcond_capture_refusals(struct nl_sock *socket, linkcond_kernel_refusal *refusal) {
    int on = 1;
    int fd = nl_socket_get_fd(socket);
    // Both options are best effort: older kernels still report the errno.
    (void)setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &on, sizeof(on));
    (void)setsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &on, sizeof(on));
    return nl_socket_modify_err_cb(socket, NL_CB_CUSTOM, linkcond_on_error, refusal);
}

/// Asks the kernel for the qdisc attached at `parent` (TC_H_ROOT, TC_H_INGRESS or a class) of one
/// device: RTM_GETQDISC without NLM_F_DUMP. libnl has no call for it, and a dump lists the
/// qdiscs of every device on the machine. The kernel answers a get as a notification, which
/// reaches the asker only with NLM_F_ECHO.
static inline int linkcond_request_qdisc(struct nl_sock *socket, int ifindex, uint32_t parent) {
    struct tcmsg request;
    memset(&request, 0, sizeof(request));
    request.tcm_family = AF_UNSPEC;
    request.tcm_ifindex = ifindex;
    request.tcm_parent = parent;
    return nl_send_simple(socket, RTM_GETQDISC, NLM_F_ECHO, &request, sizeof(request));
}

/// The netem attributes libnl 3.7 does not send, or sends only when they are non-zero: a
/// change in place must state every one, or the kernel keeps the previous qdisc's (its
/// correlations, reordering, corruption, distribution table and rate survive a change that
/// leaves them out).
typedef struct linkcond_netem_extras {
    uint32_t delay_correlation;
    uint32_t loss_correlation;
    uint32_t duplicate_correlation;
    uint32_t reorder_probability;
    uint32_t reorder_correlation;
    uint32_t corrupt_probability;
    uint32_t corrupt_correlation;
    /// The jitter's distribution table (NETEM_DIST_SCALE units); none when `distribution_size` is 0.
    const int16_t *distribution;
    size_t distribution_size;
    /// A Gilbert-Elliott loss model instead of independent loss.
    int gilbert_elliott;
    uint32_t ge_p, ge_r, ge_h, ge_k1;
    /// netem's own rate, bytes per second; 0: none.
    uint32_t rate_bytes_per_second;
} linkcond_netem_extras;

/// Adds or changes the netem qdisc `qdisc` (as `rtnl_qdisc_add` does, with `flags`), with
/// `extras` after the options struct libnl wrote. sch_netem reads its options as a struct
/// followed by attributes up to the end of TCA_OPTIONS, which libnl makes the message's last
/// attribute: the extras go after the struct, and TCA_OPTIONS is stretched over them.
static inline int linkcond_netem_send(struct nl_sock *socket, struct rtnl_qdisc *qdisc, int flags, const linkcond_netem_extras *extras) {
    struct nl_msg *message = NULL;
    int error = rtnl_qdisc_build_add_request(qdisc, flags, &message);
    if (error < 0) return error;
    size_t needed = nlmsg_hdr(message)->nlmsg_len + extras->distribution_size * sizeof(int16_t) + 512;
    if (needed > nlmsg_get_max_size(message) && (error = nlmsg_expand(message, needed)) < 0) goto failed;
    struct nlattr *options = nlmsg_find_attr(nlmsg_hdr(message), sizeof(struct tcmsg), TCA_OPTIONS);
    if (options == NULL || nla_len(options) < (int)sizeof(struct tc_netem_qopt)) { error = -NLE_MISSING_ATTR; goto failed; }
    size_t options_offset = (char *)options - (char *)nlmsg_hdr(message);
    // Everything after the struct is written here: libnl 3.7 counts the attributes it adds
    // after the struct twice in the message's length, which leaves a gap of zeros where the
    // kernel's parser stops. The message ends at the struct, and reordering's gap of 1 (which
    // libnl would set) is set in it.
    struct tc_netem_qopt *qopt = nla_data(options);
    qopt->gap = extras->reorder_probability != 0 ? 1 : 0;
    nlmsg_hdr(message)->nlmsg_len = (uint32_t)(options_offset + NLA_HDRLEN + NLA_ALIGN(sizeof(struct tc_netem_qopt)));

    struct tc_netem_corr correlation = {
        .delay_corr = extras->delay_correlation, .loss_corr = extras->loss_correlation, .dup_corr = extras->duplicate_correlation,
    };
    struct tc_netem_reorder reorder = { .probability = extras->reorder_probability, .correlation = extras->reorder_correlation };
    struct tc_netem_corrupt corrupt = { .probability = extras->corrupt_probability, .correlation = extras->corrupt_correlation };
    struct tc_netem_rate rate = { .rate = extras->rate_bytes_per_second };
    if ((error = nla_put(message, TCA_NETEM_CORR, sizeof(correlation), &correlation)) < 0) goto failed;
    if ((error = nla_put(message, TCA_NETEM_REORDER, sizeof(reorder), &reorder)) < 0) goto failed;
    if ((error = nla_put(message, TCA_NETEM_CORRUPT, sizeof(corrupt), &corrupt)) < 0) goto failed;
    if ((error = nla_put(message, TCA_NETEM_RATE, sizeof(rate), &rate)) < 0) goto failed;
    if (extras->distribution_size > 0 &&
        (error = nla_put(message, TCA_NETEM_DELAY_DIST, (int)(extras->distribution_size * sizeof(int16_t)), extras->distribution)) < 0) goto failed;
    if (extras->gilbert_elliott) {
        struct nlattr *loss = nla_nest_start(message, TCA_NETEM_LOSS);
        if (loss == NULL) { error = -NLE_NOMEM; goto failed; }
        struct tc_netem_gemodel model = { .p = extras->ge_p, .r = extras->ge_r, .h = extras->ge_h, .k1 = extras->ge_k1 };
        if ((error = nla_put(message, NETEM_LOSS_GE, sizeof(model), &model)) < 0) goto failed;
        nla_nest_end(message, loss);
    }
    struct nlmsghdr *header = nlmsg_hdr(message);
    options = (struct nlattr *)((char *)header + options_offset);
    options->nla_len = (uint16_t)(header->nlmsg_len - options_offset);
    // nl_send_sync frees the message, sent or not.
    return nl_send_sync(socket, message);
failed:
    nlmsg_free(message);
    return error;
}

/// `setns(2)`, declared here because <sched.h> declares it only under _GNU_SOURCE, which the
/// Glibc module was not built with.
extern int setns(int fd, int nstype);
#define LINKCOND_CLONE_NEWNET 0x40000000

/// Moves the calling thread into the network namespace `namespace_fd`; returns a descriptor of
/// the namespace it was in, for linkcond_leave_namespace, or -1 with `*system_errno` set.
static inline int linkcond_enter_namespace(int namespace_fd, int *system_errno) {
    int own = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    if (own < 0) {
        *system_errno = errno;
        return -1;
    }
    if (setns(namespace_fd, LINKCOND_CLONE_NEWNET) != 0) {
        *system_errno = errno;
        close(own);
        return -1;
    }
    return own;
}

/// Brings the calling thread back to the namespace `own` (linkcond_enter_namespace's result).
/// `*stranded` becomes 1 when it could not: the thread is then in the wrong namespace, and the
/// caller must not let it go on.
static inline void linkcond_leave_namespace(int own, int *stranded) {
    if (setns(own, LINKCOND_CLONE_NEWNET) != 0) {
        *stranded = 1;
    }
    close(own);
}

/// Connects `socket` as a route socket inside the network namespace `namespace_fd` (an open
/// nsfs file): a netlink socket stays in the namespace it was made in. The calling thread
/// enters the namespace only for the `socket(2)` call. Returns nl_connect's result, or
/// -NLE_FAILURE with `*system_errno` set when the namespace could not be entered; `*stranded`
/// as for linkcond_leave_namespace.
static inline int linkcond_connect_in_namespace(struct nl_sock *socket, int namespace_fd, int *system_errno, int *stranded) {
    *system_errno = 0;
    *stranded = 0;
    int own = linkcond_enter_namespace(namespace_fd, system_errno);
    if (own < 0) return -NLE_FAILURE;
    int connected = nl_connect(socket, NETLINK_ROUTE);
    linkcond_leave_namespace(own, stranded);
    return connected;
}

/// Opens a socket (socket(2)'s `domain`, `type`, `protocol`) inside the network namespace
/// `namespace_fd`, where it stays: the calling thread enters the namespace only for the call.
/// Returns the descriptor, or -1 with `*system_errno` set; `*stranded` as for
/// linkcond_leave_namespace.
static inline int linkcond_socket_in_namespace(int namespace_fd, int domain, int type, int protocol,
                                               int *system_errno, int *stranded) {
    *system_errno = 0;
    *stranded = 0;
    int own = linkcond_enter_namespace(namespace_fd, system_errno);
    if (own < 0) return -1;
    int descriptor = socket(domain, type, protocol);
    int socket_errno = errno;
    linkcond_leave_namespace(own, stranded);
    if (descriptor < 0) *system_errno = socket_errno;
    return descriptor;
}

/// Reads up to `size` bytes of the file at `path` (a /proc/thread-self/net file) as the network
/// namespace `namespace_fd` sees it: the calling thread enters the namespace to open the file,
/// which stays that namespace's view. Returns the bytes read, or -1 with `*system_errno` set;
/// `*stranded` as for linkcond_leave_namespace.
static inline ssize_t linkcond_read_in_namespace(int namespace_fd, const char *path, char *buffer, size_t size,
                                                 int *system_errno, int *stranded) {
    *system_errno = 0;
    *stranded = 0;
    int own = linkcond_enter_namespace(namespace_fd, system_errno);
    if (own < 0) return -1;
    int file = open(path, O_RDONLY | O_CLOEXEC);
    int open_errno = errno;
    linkcond_leave_namespace(own, stranded);
    if (file < 0) {
        *system_errno = open_errno;
        return -1;
    }
    size_t filled = 0;
    while (filled < size) {
        ssize_t got = read(file, buffer + filled, size - filled);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            *system_errno = errno;
            close(file);
            return -1;
        }
        if (got == 0) break;
        filled += (size_t)got;
    }
    close(file);
    return (ssize_t)filled;
}

#endif
