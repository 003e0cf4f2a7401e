/* Physical quantities written with units (docs/scenario-format.md), for the scenario loader and for
 * CLI flags such as `--min-bytes 8GiB`.
 *
 * A quantity is a decimal number (optional sign, digits, optional fraction, optional exponent
 * `e±N`), optional spaces, and a case-sensitive unit. Decimal prefixes are powers of ten, binary
 * ones powers of two, and bits are an eighth of a byte:
 *
 *   size        B KB MB GB TB KiB MiB GiB TiB                         (base: byte)
 *   bandwidth   b/s Kb/s Mb/s Gb/s Tb/s                               (bits per second)
 *               B/s KB/s MB/s GB/s TB/s KiB/s MiB/s GiB/s TiB/s       (base: byte per second)
 *   time        ps ns us ms s                                         (base: second)
 *   FLOP count  FLOP KFLOP MFLOP GFLOP TFLOP PFLOP                    (base: FLOP)
 *   FLOP rate   FLOP/s KFLOP/s MFLOP/s GFLOP/s TFLOP/s PFLOP/s        (base: FLOP/s)
 *
 * Decimal prefixes are applied by shifting the decimal exponent of the number before it is
 * converted to binary, so "1 us" is the double nearest to 1e-6 and "3.35 TB/s" the double
 * nearest to 3.35e12 (no extra rounding from a multiplication). */
#ifndef SIM_INPUT_UNITS_H
#define SIM_INPUT_UNITS_H

#include <stdint.h>

#include "core/time.h"

typedef enum input_unit_kind {
    INPUT_UNIT_BYTES,     /* B */
    INPUT_UNIT_BANDWIDTH, /* B/s */
    INPUT_UNIT_TIME,      /* s */
    INPUT_UNIT_FLOPS,     /* FLOP */
    INPUT_UNIT_FLOP_RATE, /* FLOP/s */
    INPUT_UNIT_KIND_COUNT
} input_unit_kind;

/* Limits of what a scenario may give, whatever the key (docs/scenario-format.md, "Limits"):
 * a non-zero bandwidth or FLOP rate below these (a denormal, 1e-300 GB/s) would make a
 * single transfer or kernel outlast the simulated-time horizon, and no hardware stepsim
 * models comes within orders of magnitude of them (the slowest link shipped, a PCIe 3.0 x1
 * lane, moves about 1 GB/s; a CPU core does tens of GFLOP/s). A latency, overhead or
 * per-step time beyond one second is not a hardware latency. */
#define INPUT_BANDWIDTH_MIN_BPS 1e6   /* 1 MB/s */
#define INPUT_FLOP_RATE_MIN 1e9       /* 1 GFLOP/s */
#define INPUT_TIME_MAX_PS SIM_PS_PER_S /* 1 s */

/* "size", "bandwidth", "time", "FLOP count", "FLOP rate". Static strings; cannot fail. */
const char *input_unit_kind_name(input_unit_kind kind);
/* An example quantity of the kind, e.g. "450 GB/s". Static string; cannot fail. */
const char *input_unit_kind_example(input_unit_kind kind);

/* Why a quantity was rejected: one message line (without location) and one hint line (may
 * be empty), ready for sim_diag_error / sim_diag_hint. */
typedef struct input_unit_error {
    char msg[256];
    char hint[256];
} input_unit_error;

/* Flags of the detailed parsers below. */
#define INPUT_UNIT_ALLOW_BARE 1u /* a number without a unit is taken in the base unit (CLI flags) */

/* Parses `text` as a quantity of `kind` and stores it in the SI base unit in *out. The sign is
 * kept: range checks (positive, non-negative) belong to the caller, which knows the key.
 * Returns 0, or SIM_EINVAL with `err` filled (err may be NULL) when the text is not a number
 * with a unit of that kind: no unit (unless INPUT_UNIT_ALLOW_BARE), an unknown unit (with a
 * did-you-mean), a unit of another kind, or a value out of the double range. */
int input_quantity_parse(const char *text, input_unit_kind kind, unsigned flags, double *out,
                      input_unit_error *err);

/* Parses a size to a whole number of bytes, rounded to the nearest byte ("79.1 GiB" is
 * 84932978278.4 B -> 84932978278). Same errors as input_quantity_parse, plus out of the int64
 * range. The sign is kept. */
int input_bytes_parse(const char *text, unsigned flags, int64_t *out, input_unit_error *err);

/* Parses a time to picoseconds, rounded up to the next picosecond (core/time.h's rule); the
 * decimal exponent is shifted to picoseconds before conversion, so "1 us" is exactly 1000000.
 * Same errors as input_quantity_parse, plus beyond the sim_time range. The sign is kept. */
int input_time_parse_ps(const char *text, unsigned flags, sim_time *out, input_unit_error *err);

/* CLI-style conveniences: a size ("8GiB", "8 GiB", or a plain integer number of bytes) and a
 * quantity of `kind` with a unit (SI base units: B, B/s, s, FLOP, FLOP/s). Negative values are
 * rejected. Return 0 or SIM_EINVAL; *out is untouched on error. */
int input_parse_bytes(const char *text, int64_t *out);
int input_parse_quantity(const char *text, input_unit_kind kind, double *out);

#endif
