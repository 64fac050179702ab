#include <stdint.h>

/* Reverses the bit order of a 16-bit word: bit 0 becomes bit 15 and so on. */
uint16_t bit_reverse16(uint16_t x)
{
    uint16_t r = 0;
    for (int i = 0; i < 16; i++) {
        r = (uint16_t)((r << 1) | (x & 1u));
        x >>= 1;
    }
    return r;
}
