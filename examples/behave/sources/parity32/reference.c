#include <stdint.h>

/* Even parity over a 32-bit word by folding halves: 1 when the number of ones is odd. */
unsigned parity32(uint32_t x)
{
    x ^= x >> 16;
    x ^= x >> 8;
    x ^= x >> 4;
    x ^= x >> 2;
    x ^= x >> 1;
    return x & 1u;
}
