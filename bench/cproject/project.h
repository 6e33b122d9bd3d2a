/* project.h: shared declarations of the benchmark C project. */
#ifndef PROJECT_H
#define PROJECT_H

#include "config.h"
#include <stddef.h>
#include <stdint.h>

/* modules.h, written with the sources by bench/harness.py, defines MODULES as X(00) X(01) ...,
 * one X(NN) per generated mod_NN.c. */
#include "modules.h"

#define X(n) uint64_t mod_##n##_run(uint32_t seed);
MODULES
#undef X

uint64_t project_mix(uint64_t h, uint64_t v);

#endif
