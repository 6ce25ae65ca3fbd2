// Declarations only; this target exists to carry fuzz_driver.h.
