// glibc's allocator statistics and trimming (mallinfo2: glibc 2.33; malloc_trim), which its
// Swift module does not include: the daemon gives freed memory back after large replies.
#ifndef LINKCOND_CMALLOC_SHIM_H
#define LINKCOND_CMALLOC_SHIM_H

#include <malloc.h>

#endif
