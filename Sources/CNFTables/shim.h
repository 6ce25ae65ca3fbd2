// libnftables: the NAT rules of `linkcond run --isolated` sandboxes, in nft's own language,
// handed to the library rather than to an `nft` process.
#ifndef LINKCOND_CNFTABLES_SHIM_H
#define LINKCOND_CNFTABLES_SHIM_H

#include <stdbool.h>
#include <stdint.h>
#include <nftables/libnftables.h>

#endif
