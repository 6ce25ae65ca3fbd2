// The Swift runtime's global-executor hooks, set by linking against them. NIO looks the hook up
// with dlsym, which finds nothing when the runtime is linked in statically (--static-swift-stdlib
// leaves its symbols out of the dynamic table), and then every task runs on libdispatch's pool,
// whose monitor thread wakes the process once a second for as long as it lives.
#ifndef LINKCOND_GLOBAL_EXECUTOR_HOOKS_H
#define LINKCOND_GLOBAL_EXECUTOR_HOOKS_H

#include <stdbool.h>

/// Receives every job the runtime would give its global executor: `job` is the runtime's job
/// (an `UnownedJob`), due in `delay_nanoseconds` (0: now).
typedef void (*linkcond_global_job_sink)(void *job, unsigned long long delay_nanoseconds);

/// Routes the runtime's plain, delayed and deadline enqueues to `sink`. (`Task.sleep` takes none
/// of these paths in Swift 6.3: it schedules on the default executor, libdispatch.) Returns
/// false, and sets none of them, if any of the hooks is already set. Call it once, before the
/// first task.
bool linkcond_global_executor_hooks_install(linkcond_global_job_sink sink);

#endif
