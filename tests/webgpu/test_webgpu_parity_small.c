/* test_webgpu_parity_small.c — test_webgpu_parity.c on the small preset
 * (3 layers, d 96, ctx 64, batch 16), fewer steps: lavapipe is slow. */
#define PARITY_PRESET "small"
#define PARITY_STEPS 10
#define PARITY_ACCUM_STEPS 2
#define PARITY_TRAINER_STEPS 6
#include "test_webgpu_parity.c"
