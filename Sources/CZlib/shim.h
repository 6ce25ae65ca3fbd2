// zlib (Debian zlib1g-dev), for reading the kernel's configuration from /proc/config.gz.
#ifndef LINKCOND_CZLIB_SHIM_H
#define LINKCOND_CZLIB_SHIM_H

#include <zlib.h>

#endif
