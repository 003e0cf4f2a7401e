/* Common base of every stepsim source: the build configuration, fixed-width integers and
 * the small set of core headers everybody needs (time, errors, allocation, assertions).
 * Include it first in every .c file. */
#ifndef SIM_CORE_SIM_H
#define SIM_CORE_SIM_H

#include "sim_config.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/time.h"
#include "core/error.h"
#include "core/alloc.h"
#include "core/assert.h"

#define SIM_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define SIM_MIN(a, b) ((a) < (b) ? (a) : (b))
#define SIM_MAX(a, b) ((a) > (b) ? (a) : (b))

/* The greatest common divisor of two non-negative integers (gcd(a, 0) = a). */
static inline int sim_gcd(int a, int b)
{
    while (b != 0) {
        int t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* Hash constants, fixed forever: hashes pick among equal routes and index caches, so a new
 * constant would change which route a run takes. FNV-1a 64-bit (Fowler, Noll, Vo): offset
 * basis and prime, for hashing input files. MurmurHash3's fmix64 finalizer multipliers
 * (Appleby), which spread every input bit over the output. 2^64 / golden ratio, the additive
 * constant of boost::hash_combine's 64-bit form (and of SplitMix64). */
#define SIM_FNV64_OFFSET UINT64_C(0xcbf29ce484222325)
#define SIM_FNV64_PRIME UINT64_C(0x100000001b3)
#define SIM_FMIX64_C1 UINT64_C(0xff51afd7ed558ccd)
#define SIM_FMIX64_C2 UINT64_C(0xc4ceb9fe1a85ec53)
#define SIM_GOLDEN64 UINT64_C(0x9E3779B97F4A7C15)

/* FNV-1a 64 of `n` bytes at `data`, continuing from `h` (SIM_FNV64_OFFSET to start). */
static inline uint64_t sim_fnv1a64(uint64_t h, const void *data, size_t n)
{
    const unsigned char *b = data;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= SIM_FNV64_PRIME;
    }
    return h;
}

#endif
