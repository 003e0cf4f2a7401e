/* The fuzz harnesses (test/fuzz/README in CONTRIBUTING.md's "Fuzzing"): each takes an input's
 * bytes, writes them to a temporary file and calls one real entry point on it. The input may
 * be accepted or refused; a refusal must come with its one diagnostic. Anything else (an error
 * code without a diagnostic, an unknown code) aborts: that is a finding, as is any crash or
 * sanitizer report on the way. Built without libFuzzer too, for the replay driver
 * (replay.c) that the default test suite runs on the regression and seed corpora. */
#ifndef STEPSIM_TEST_FUZZ_HARNESS_H
#define STEPSIM_TEST_FUZZ_HARNESS_H

#include <stddef.h>
#include <stdint.h>

/* Each returns 0 (libFuzzer's convention); a finding aborts. */
int fuzz_scenario(const uint8_t *data, size_t size); /* load, plan, replay one step */
int fuzz_topology(const uint8_t *data, size_t size); /* input_topology_load */
int fuzz_sweep(const uint8_t *data, size_t size);    /* input_sweep_load */
int fuzz_trace(const uint8_t *data, size_t size);    /* results_trace_read */
int fuzz_results(const uint8_t *data, size_t size);  /* results_h5r_*, as report and export */

typedef int (*fuzz_fn)(const uint8_t *data, size_t size);

/* The harness named `target` ("scenario", "topology", "sweep", "trace", "results"), or NULL. */
fuzz_fn fuzz_target(const char *target);

#endif
