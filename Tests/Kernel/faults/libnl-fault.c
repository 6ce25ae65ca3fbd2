// A fault between linkcondd and the kernel, for proving that the kernel suite catches it.
//
// Preloaded into linkcondd (LD_PRELOAD), this wraps libnl's nl_send_sync, through which every
// change linkcondd makes to the kernel's qdiscs, classes, filters and links passes (libnl-route's
// rtnl_*_add call it, and so does linkcondd's own netem request). It rewrites the one message a
// fault is about and passes everything on: the kernel accepts it, linkcondd's status says what
// linkcondd asked for, and only measurement can tell. LC_FAULT names the fault:
//
//   downlink-delay+10ms    every netem on an IFB device (the downlink) 10 ms longer
//   small-delay+10ms       every netem whose delay is 20 ms or less, and not zero, 10 ms longer
//   ipv6-unshaped-netns    IPv6 filters of conditions in another network namespace than the
//                          daemon's (containers, named namespaces) match nothing: IPv6 passes
//                          there unshaped
//   ipv6-unshaped-peer     IPv6 filters that match one peer's address match nothing (u32's of
//                          protocol IPv6 made of no protocol; flower's address one bit off)
//   ipv6-unshaped-interface  the whole interface's IPv6 filters (classification and the
//                          ingress redirect) match nothing
//   loss-dropped           every netem's loss 0 (independent and Gilbert-Elliott alike)
//
// LC_FAULT_LOG=FILE appends one line per rewritten message. Built by scripts/kernel-fault-test.

#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <linux/if_ether.h>
#include <linux/netlink.h>
#include <linux/pkt_cls.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define NO_ETHERTYPE 0x88b5        // IEEE 802 local experimental: nothing linkcond sees carries it

static void fault_log(const char *format, ...) {
    const char *path = getenv("LC_FAULT_LOG");
    if (path == NULL) return;
    FILE *log = fopen(path, "a");
    if (log == NULL) return;
    va_list arguments;
    va_start(arguments, format);
    vfprintf(log, format, arguments);
    va_end(arguments);
    fputc('\n', log);
    fclose(log);
}

// 10 ms in netem's time unit, the kernel's psched tick: /proc/net/psched's second field is the
// nanoseconds in one (64 on current kernels).
static uint32_t ten_ms_in_ticks(void) {
    static uint32_t ticks;
    if (ticks == 0) {
        unsigned ns_per_microsecond = 0, ns_per_tick = 0;
        FILE *psched = fopen("/proc/net/psched", "r");
        if (psched == NULL || fscanf(psched, "%x %x", &ns_per_microsecond, &ns_per_tick) != 2 || ns_per_tick == 0) abort();
        fclose(psched);
        ticks = 10000000u / ns_per_tick;
    }
    return ticks;
}

static int fault_is(const char *name) {
    const char *fault = getenv("LC_FAULT");
    return fault != NULL && strcmp(fault, name) == 0;
}

// The inode of the network namespace a socket lives in, or of the calling process's own.
static ino_t socket_namespace(int fd) {
    int ns = ioctl(fd, SIOCGSKNS);
    if (ns < 0) return 0;
    struct stat st;
    ino_t inode = fstat(ns, &st) == 0 ? st.st_ino : 0;
    close(ns);
    return inode;
}

static ino_t own_namespace(void) {
    struct stat st;
    return stat("/proc/self/ns/net", &st) == 0 ? st.st_ino : 0;
}

// The name of IFINDEX in the namespace of the netlink socket FD (a namespaced condition's socket
// lives in the target's namespace): the calling thread enters it for one ioctl and comes back.
static int device_name(int fd, int ifindex, char name[IF_NAMESIZE]) {
    int target = ioctl(fd, SIOCGSKNS);
    int home = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    int found = 0;
    if (target >= 0 && home >= 0 && setns(target, CLONE_NEWNET) == 0) {
        found = if_indextoname((unsigned)ifindex, name) != NULL;
        if (setns(home, CLONE_NEWNET) != 0) abort();  // a daemon thread in the wrong namespace
    }
    if (target >= 0) close(target);
    if (home >= 0) close(home);
    return found;
}

static const char *attribute_string(struct nlmsghdr *header, int type) {
    struct nlattr *attribute = nlmsg_find_attr(header, sizeof(struct tcmsg), type);
    return attribute ? nla_get_string(attribute) : NULL;
}

static void rewrite_netem(struct nl_sock *socket, struct nlmsghdr *header) {
    struct tcmsg *tc = nlmsg_data(header);
    const char *kind = attribute_string(header, TCA_KIND);
    struct nlattr *options = nlmsg_find_attr(header, sizeof(struct tcmsg), TCA_OPTIONS);
    if (kind == NULL || strcmp(kind, "netem") != 0 || options == NULL || nla_len(options) < (int)sizeof(struct tc_netem_qopt))
        return;
    struct tc_netem_qopt *qopt = nla_data(options);
    char name[IF_NAMESIZE] = "?";
    device_name(nl_socket_get_fd(socket), tc->tcm_ifindex, name);
    uint32_t ten_ms = ten_ms_in_ticks();
    if ((fault_is("downlink-delay+10ms") && strncmp(name, "lc-", 3) == 0) ||
        (fault_is("small-delay+10ms") && qopt->latency > 0 && qopt->latency <= 2 * ten_ms)) {
        qopt->latency += ten_ms;
        fault_log("%s: netem %x: on %s, delay %u -> %u ticks", getenv("LC_FAULT"), tc->tcm_handle, name,
                  qopt->latency - ten_ms, qopt->latency);
    } else if (fault_is("loss-dropped")) {
        uint32_t loss = qopt->loss;
        qopt->loss = 0;
        // The attributes after the struct: a Gilbert-Elliott model becomes one the kernel skips.
        int remaining = nla_len(options) - NLA_ALIGN(sizeof(struct tc_netem_qopt));
        struct nlattr *attribute = (struct nlattr *)((char *)qopt + NLA_ALIGN(sizeof(struct tc_netem_qopt)));
        int model = 0;
        for (; nla_ok(attribute, remaining); attribute = nla_next(attribute, &remaining)) {
            if (nla_type(attribute) == TCA_NETEM_LOSS) {
                attribute->nla_type = TCA_NETEM_MAX + 20;
                model = 1;
            }
        }
        if (loss != 0 || model) fault_log("%s: netem %x: on %s, loss %u -> 0%s", getenv("LC_FAULT"), tc->tcm_handle, name,
                                         loss, model ? ", its loss model left out" : "");
    }
}

// Whether a u32 filter's selector matches an IPv6 address: a key at the header's source or
// destination address (offsets 8 to 39).
static int matches_ipv6_address(struct nlmsghdr *header) {
    struct nlattr *options = nlmsg_find_attr(header, sizeof(struct tcmsg), TCA_OPTIONS);
    if (options == NULL) return 0;
    struct nlattr *selector = nla_find(nla_data(options), nla_len(options), TCA_U32_SEL);
    if (selector != NULL && nla_len(selector) >= (int)sizeof(struct tc_u32_sel)) {
        struct tc_u32_sel *sel = nla_data(selector);
        int keys = (nla_len(selector) - (int)sizeof(struct tc_u32_sel)) / (int)sizeof(struct tc_u32_key);
        for (int i = 0; i < sel->nkeys && i < keys; i++)
            if (sel->keys[i].off >= 8 && sel->keys[i].off < 40 && sel->keys[i].mask != 0) return 1;
    }
    // flower: any IPv6 address key.
    return nla_find(nla_data(options), nla_len(options), TCA_FLOWER_KEY_IPV6_DST) != NULL ||
           nla_find(nla_data(options), nla_len(options), TCA_FLOWER_KEY_IPV6_SRC) != NULL;
}

// A flower filter attached for every protocol whose IP version key is IPv6: that key, or NULL.
static uint16_t *flower_ipv6_key(struct nlmsghdr *header) {
    const char *kind = attribute_string(header, TCA_KIND);
    struct nlattr *options = nlmsg_find_attr(header, sizeof(struct tcmsg), TCA_OPTIONS);
    if (kind == NULL || strcmp(kind, "flower") != 0 || options == NULL) return NULL;
    struct nlattr *type = nla_find(nla_data(options), nla_len(options), TCA_FLOWER_KEY_ETH_TYPE);
    if (type == NULL || nla_len(type) < 2) return NULL;
    uint16_t *value = nla_data(type);
    return *value == htons(ETH_P_IPV6) ? value : NULL;
}

static void rewrite_filter(struct nl_sock *socket, struct nlmsghdr *header) {
    struct tcmsg *tc = nlmsg_data(header);
    uint16_t *flower = TC_H_MIN(tc->tcm_info) == htons(ETH_P_ALL) ? flower_ipv6_key(header) : NULL;
    if (TC_H_MIN(tc->tcm_info) != htons(ETH_P_IPV6) && flower == NULL) return;
    int other_namespace = socket_namespace(nl_socket_get_fd(socket)) != own_namespace();
    int peer = matches_ipv6_address(header);
    // A flower filter of IPv6 without an address is an exemption (neighbour discovery, SSH):
    // made to match nothing, it would shape more, not leave IPv6 unshaped.
    if (flower != NULL && !peer) return;
    int rewrite = (fault_is("ipv6-unshaped-netns") && other_namespace) ||
                  (fault_is("ipv6-unshaped-peer") && peer) ||
                  (fault_is("ipv6-unshaped-interface") && !other_namespace && !peer);
    if (!rewrite) return;
    if (flower != NULL) {
        // Another address, one bit off (fd77:... -> fc77:...): no packet has it, and filters
        // that differed still differ, so the kernel accepts each as it would have.
        static const int keys[] = { TCA_FLOWER_KEY_IPV6_DST, TCA_FLOWER_KEY_IPV6_SRC };
        struct nlattr *options = nlmsg_find_attr(header, sizeof(struct tcmsg), TCA_OPTIONS);
        for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
            struct nlattr *address = nla_find(nla_data(options), nla_len(options), keys[i]);
            if (address != NULL && nla_len(address) >= 16) ((uint8_t *)nla_data(address))[0] ^= 0x01;
        }
    } else {
        tc->tcm_info = TC_H_MAKE(tc->tcm_info, htons(NO_ETHERTYPE));
    }
    char name[IF_NAMESIZE] = "?";
    device_name(nl_socket_get_fd(socket), tc->tcm_ifindex, name);
    fault_log("%s: filter prio %u parent %x on %s: %s", getenv("LC_FAULT"), TC_H_MAJ(tc->tcm_info) >> 16,
              tc->tcm_parent, name, flower != NULL ? "flower's IPv6 address one bit off" : "protocol ipv6 -> none");
}

int nl_send_sync(struct nl_sock *socket, struct nl_msg *message) {
    static int (*real)(struct nl_sock *, struct nl_msg *);
    if (real == NULL) real = (int (*)(struct nl_sock *, struct nl_msg *))dlsym(RTLD_NEXT, "nl_send_sync");
    struct nlmsghdr *header = nlmsg_hdr(message);
    if (header->nlmsg_len >= NLMSG_LENGTH(sizeof(struct tcmsg))) {
        if (header->nlmsg_type == RTM_NEWQDISC) rewrite_netem(socket, header);
        else if (header->nlmsg_type == RTM_NEWTFILTER) rewrite_filter(socket, header);
    }
    return real(socket, message);
}
