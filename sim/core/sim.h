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

/* Recover the enclosing struct from a pointer to an embedded member (intrusive containers). */
#define sim_container_of(ptr, type, member) \
    ((type *)(void *)((char *)(ptr) - offsetof(type, member)))

#endif
