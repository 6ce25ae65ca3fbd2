// libFuzzer's entry point for programs with their own main (LLVM 13 and later). Only a build
// with `-sanitize=fuzzer` links it; see scripts/fuzz.
#ifndef LINKCOND_FUZZ_DRIVER_H
#define LINKCOND_FUZZ_DRIVER_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

#endif
