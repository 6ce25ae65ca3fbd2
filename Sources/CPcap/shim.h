// libpcap: a condition's packets copied from the kernel's AF_PACKET ring, filtered there by a
// compiled BPF program, rather than by a `tcpdump` process.
#ifndef LINKCOND_CPCAP_SHIM_H
#define LINKCOND_CPCAP_SHIM_H

#include <pcap/pcap.h>

#endif
