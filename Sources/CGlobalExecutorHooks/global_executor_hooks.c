#include "global_executor_hooks.h"

#include <stddef.h>
#include <time.h>

#define SWIFTCALL __attribute__((swiftcall))

// The runtime's declarations (include/swift/Runtime/ConcurrencyHooks.def): each hook receives
// the hooked call's arguments and the runtime's own implementation, which these never call.
typedef void (SWIFTCALL *enqueue_original)(void *job);
typedef void (SWIFTCALL *enqueue_with_delay_original)(unsigned long long delay, void *job);
typedef void (SWIFTCALL *enqueue_with_deadline_original)(long long sec, long long nsec, long long tolerance_sec,
                                                         long long tolerance_nsec, int clock, void *job);

extern void *swift_task_enqueueGlobal_hook;
extern void *swift_task_enqueueGlobalWithDelay_hook;
extern void *swift_task_enqueueGlobalWithDeadline_hook;

static linkcond_global_job_sink installed_sink;

static SWIFTCALL void enqueue(void *job, enqueue_original original) {
    (void)original;
    installed_sink(job, 0);
}

static SWIFTCALL void enqueue_with_delay(unsigned long long delay, void *job, enqueue_with_delay_original original) {
    (void)original;
    installed_sink(job, delay);
}

// The runtime's clock ids (swift_clock_id) and the clocks it reads for them on Linux.
enum { continuous_clock = 1, suspending_clock = 2 };

static SWIFTCALL void enqueue_with_deadline(long long sec, long long nsec, long long tolerance_sec,
                                           long long tolerance_nsec, int clock, void *job,
                                           enqueue_with_deadline_original original) {
    (void)tolerance_sec, (void)tolerance_nsec, (void)original;
    struct timespec now;
    clock_gettime(clock == continuous_clock ? CLOCK_BOOTTIME : CLOCK_MONOTONIC, &now);
    long long remaining = (sec - (long long)now.tv_sec) * 1000000000LL + (nsec - (long long)now.tv_nsec);
    installed_sink(job, remaining > 0 ? (unsigned long long)remaining : 0);
}

bool linkcond_global_executor_hooks_install(linkcond_global_job_sink sink) {
    if (sink == NULL || installed_sink != NULL) {
        return false;
    }
    // Set before the hooks: a job may arrive as soon as the first is claimed.
    installed_sink = sink;
    struct { void **hook; void *ours; } hooks[] = {
        {&swift_task_enqueueGlobalWithDeadline_hook, (void *)enqueue_with_deadline},
        {&swift_task_enqueueGlobalWithDelay_hook, (void *)enqueue_with_delay},
        {&swift_task_enqueueGlobal_hook, (void *)enqueue},
    };
    size_t count = sizeof hooks / sizeof hooks[0];
    for (size_t claimed = 0; claimed < count; claimed++) {
        void *expected = NULL;
        if (!__atomic_compare_exchange_n(hooks[claimed].hook, &expected, hooks[claimed].ours, false,
                                         __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
            while (claimed > 0) {
                claimed--;
                __atomic_store_n(hooks[claimed].hook, NULL, __ATOMIC_SEQ_CST);
            }
            installed_sink = NULL;
            return false;
        }
    }
    return true;
}
