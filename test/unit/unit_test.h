/*
 * unit_test.h - minimal checking for libgpuic unit tests (no MPI).
 * CHECK records a failure and goes on; the test's main returns unit_test_result().
 */
#ifndef GPUIC_UNIT_TEST_H
#define GPUIC_UNIT_TEST_H

#include <stdio.h>

static int unit_test_failures;

#define CHECK(cond)                                                                   \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            unit_test_failures++;                                                     \
        }                                                                             \
    } while (0)

static inline int unit_test_result(const char *name)
{
    printf("%s: %s (%d failed checks)\n", name, unit_test_failures ? "FAIL" : "PASS",
           unit_test_failures);
    return unit_test_failures ? 1 : 0;
}

#endif
