/* main.c: runs every module twice and prints "ok CHECKSUM" when both passes agree. */
#include "project.h"
#include <inttypes.h>
#include <stdio.h>

uint64_t project_mix(uint64_t h, uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h;
}

static uint64_t run_all(uint32_t seed) {
    uint64_t h = 0;
#define X(n) h = project_mix(h, mod_##n##_run(seed + 1##n));
    MODULES
#undef X
    return h;
}

int main(void) {
    uint64_t a = run_all(12345), b = run_all(12345);
    if (a != b) {
        printf("mismatch %016" PRIx64 " %016" PRIx64 "\n", a, b);
        return 1;
    }
    printf("ok %016" PRIx64 "\n", a);
    return 0;
}
