/* fuzz.h — shared bits of the libFuzzer targets in tests/fuzz/ (docs/testing.md).
 *
 * Each fuzz_NAME.c defines LLVMFuzzerTestOneInput for one parser of outside
 * input; `make fuzz` builds them with clang -fsanitize=fuzzer,address,undefined
 * and runs each for FUZZ_SECONDS on its seed corpus in tests/fuzz/corpus/NAME/. */
#ifndef JOBSCOPE_FUZZ_H
#define JOBSCOPE_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A NUL-terminated copy of the input (parsers that take C strings). */
static inline char *fuzz_cstr(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s) abort();
    memcpy(s, data, size);
    s[size] = 0;
    return s;
}

#endif
