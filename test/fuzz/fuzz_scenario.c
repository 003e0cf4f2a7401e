/* libFuzzer entry point of the scenario harness (harness.h); built only with -Dfuzz=true. */
#include <stddef.h>
#include <stdint.h>

#include "fuzz/harness.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_scenario(data, size);
}
