#include <stdint.h>

/* CRC-8 with polynomial x^8 + x^2 + x + 1 (0x07), initial value 0, no reflection,
 * no final XOR; one byte of message per call, the running CRC carried by the caller. */
uint8_t crc8_update(uint8_t crc, uint8_t byte)
{
    crc ^= byte;
    for (int i = 0; i < 8; i++) {
        if (crc & 0x80)
            crc = (uint8_t)((crc << 1) ^ 0x07);
        else
            crc = (uint8_t)(crc << 1);
    }
    return crc;
}
