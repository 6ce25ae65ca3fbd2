// glibc's allocator statistics and trimming (mallinfo2: glibc 2.33; malloc_trim), which its
// Swift module does not include: the daemon gives freed memory back after large replies. And
// the process's transparent huge pages, through prctl, which Swift cannot call (variadic).
#ifndef LINKCOND_CMALLOC_SHIM_H
#define LINKCOND_CMALLOC_SHIM_H

#include <malloc.h>
#include <sys/prctl.h>

static inline int linkcond_disable_transparent_huge_pages(void) {
    return prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
}

#endif
